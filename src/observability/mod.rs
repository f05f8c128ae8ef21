//! Observability of real-time sessions: the recorder that writes each session's turns, tool
//! calls and events to storage as the session reports them (`recorder`), which provider
//! served each stage (`served`), root-cause analysis of a recorded trace (`analysis`),
//! aggregates of interruption quality (`interruptions`), the log writer that never fails
//! the code that logs (`log`) and the OpenTelemetry export of session traces (`otlp`). The
//! Prometheus metrics every layer counts into are `crate::metrics`.

pub mod analysis;
pub mod interruptions;
pub mod log;
pub mod otlp;
pub mod recorder;
pub mod served;
