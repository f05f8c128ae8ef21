//! Observability of real-time sessions: the recorder that writes each session's turns and
//! summary to storage as the session reports them.

pub mod recorder;
