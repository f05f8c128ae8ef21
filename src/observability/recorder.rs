//! `SessionRecorder`: the `SessionObserver` of live sessions. Each report becomes a
//! fire-and-forget message to the `SessionRegistry` (so recording never holds up a call) and,
//! per turn, a charge to the `Metering` registry: caller turns as transcribed audio, agent
//! turns as synthesized characters and generated tokens. The session's end frees its slot.

use actix::Addr;
use switchboard_actors::session::{
    EndReason, EndpointSource, SessionObserver, SessionStatus, SessionSummary, Speaker, TurnRecord,
};

use crate::billing::Usage;
use crate::registry::metering::{ChargeSession, CloseSession, Metering};
use crate::registry::sessions::{EndSession, RecordTurn, SessionRegistry};
use crate::store::sessions::{SessionEnd, TurnRow, STATUS_COMPLETED, STATUS_FAILED};
use crate::time::now_ms;

pub struct SessionRecorder {
    registry: Addr<SessionRegistry>,
    metering: Addr<Metering>,
}

impl SessionRecorder {
    pub fn new(registry: Addr<SessionRegistry>, metering: Addr<Metering>) -> Self {
        Self { registry, metering }
    }

    fn charge(&self, session_id: &str, usage: Usage) {
        self.metering.do_send(ChargeSession {
            session_id: session_id.to_string(),
            usage,
        });
    }
}

/// Generated tokens of spoken agent text: sessions stream tokens without counting them, so
/// they are estimated at four characters a token.
fn estimated_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// A session's end reason as stored: `hangup`, `transport_closed`, `idle_timeout`, or the
/// fatal error's code and message.
pub fn end_reason(reason: &EndReason) -> String {
    match reason {
        EndReason::Hangup => "hangup".into(),
        EndReason::TransportClosed => "transport_closed".into(),
        EndReason::IdleTimeout => "idle_timeout".into(),
        EndReason::Fatal { code, message } => format!("{code}: {message}"),
    }
}

impl SessionObserver for SessionRecorder {
    fn turn_completed(&self, session_id: &str, turn: &TurnRecord) {
        match turn.speaker {
            Speaker::User if turn.endpoint != Some(EndpointSource::Text) => {
                let seconds = turn.end_ms.saturating_sub(turn.start_ms) as f64 / 1000.0;
                self.charge(session_id, Usage::Stt { seconds });
            }
            Speaker::Agent if !turn.text.is_empty() => {
                let characters = turn.text.chars().count() as u64;
                self.charge(session_id, Usage::Tts { characters });
                self.charge(
                    session_id,
                    Usage::Llm {
                        input_tokens: 0,
                        output_tokens: estimated_tokens(&turn.text),
                    },
                );
            }
            _ => {}
        }
        self.registry.do_send(RecordTurn(TurnRow {
            session_id: session_id.to_string(),
            turn_index: turn.index as i32,
            speaker: turn.speaker.as_str().to_string(),
            text: turn.text.clone(),
            start_ms: turn.start_ms as i64,
            end_ms: turn.end_ms as i64,
            stt_ms: turn.stt_ms as i64,
            llm_ms: turn.llm_ms as i64,
            tts_ms: turn.tts_ms as i64,
            latency_ms: turn.latency.map(|l| l.total_ms as i64),
            interrupted: turn.interrupted,
            error: turn.error.clone(),
        }));
    }

    fn session_ended(&self, session_id: &str, summary: &SessionSummary) {
        self.metering.do_send(CloseSession {
            session_id: session_id.to_string(),
        });
        self.registry.do_send(EndSession {
            session_id: session_id.to_string(),
            end: SessionEnd {
                status: match summary.status {
                    SessionStatus::Completed => STATUS_COMPLETED,
                    SessionStatus::Failed => STATUS_FAILED,
                }
                .to_string(),
                tool_executions: summary.tool_executions as i32,
                total_duration_ms: summary.total_duration_ms as i64,
                avg_turn_latency_ms: summary.avg_turn_latency_ms as i64,
                end_reason: Some(end_reason(&summary.reason)),
                ended_at: Some(now_ms()),
            },
        });
    }
}
