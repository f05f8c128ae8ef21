//! `SessionRecorder`: the `SessionObserver` of live sessions. Each report becomes a
//! fire-and-forget message to the `SessionRegistry`, so recording never holds up a call.

use actix::Addr;
use switchboard_actors::session::{
    EndReason, SessionObserver, SessionStatus, SessionSummary, TurnRecord,
};

use crate::registry::sessions::{EndSession, RecordTurn, SessionRegistry};
use crate::store::sessions::{SessionEnd, TurnRow, STATUS_COMPLETED, STATUS_FAILED};
use crate::time::now_ms;

pub struct SessionRecorder {
    registry: Addr<SessionRegistry>,
}

impl SessionRecorder {
    pub fn new(registry: Addr<SessionRegistry>) -> Self {
        Self { registry }
    }
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
