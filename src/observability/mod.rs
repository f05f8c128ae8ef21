//! Observability of real-time sessions: the recorder that writes each session's turns, tool
//! calls and events to storage as the session reports them (`recorder`), which provider
//! served each stage (`served`), root-cause analysis of a recorded trace (`analysis`),
//! aggregates of interruption quality (`interruptions`), and the Prometheus metrics
//! (`metrics`).

pub mod analysis;
pub mod interruptions;
pub mod metrics;
pub mod recorder;
pub mod served;
