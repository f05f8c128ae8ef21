//! The integrator's webhooks about a live session: `call.started` when it starts,
//! `call.ended` once its record is complete (transcript, duration, cost in credits, end
//! reason, recording and the root-cause findings), and `transfer.completed` when a
//! transfer's outcome is settled. Each is handed to the `WebhookRegistry`, which stores one
//! delivery per subscribed endpoint and sends it; nothing here waits on an endpoint.
//!
//! A session's events come from its observer: [`Notifying`] wraps the recorder, so the
//! session's end has been queued for storage before `call.ended` is put together, and it
//! waits for that write (`Flush`) before reading the record back. The same record is what
//! the agent's post-call analysis reads ([`PostCall`]), after `call.ended` is sent.

use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_actors::session::{
    SessionObserver, SessionSummary, ToolOutcome, TurnRecord, UnrecognisedSpeech,
};

use super::post_call::PostCall;
use super::SessionRequest;
use crate::app::AppState;
use crate::ids::{AgentId, DeveloperId, InstanceId, SessionId};
use crate::observability::analysis::analyse;
use crate::registry::metering::{Metering, SessionCost};
use crate::registry::sessions::{Flush, GetSession, SessionLookup, SessionRegistry, SessionTrace};
use crate::registry::webhooks::{Emit, Subscribed, WebhookRegistry};
use crate::registry::Supervised;
use crate::store::sessions::SessionRow;
use crate::time::{iso, iso_opt, now_ms};
use crate::webhooks::EventType;

/// Who a session is, as its events describe it.
#[derive(Debug, Clone)]
struct Caller {
    session_id: SessionId,
    developer_id: DeveloperId,
    agent_id: AgentId,
    instance_id: Option<InstanceId>,
    call_sid: Option<String>,
    from: Option<String>,
    to: Option<String>,
    transport: &'static str,
    /// Where its recording will be served, when it is recorded.
    recording_url: Option<String>,
}

/// A session's observer that also tells the developer's webhooks when it starts and ends.
pub struct Notifying {
    inner: Arc<dyn SessionObserver>,
    caller: Caller,
    sessions: Supervised<SessionRegistry>,
    metering: Supervised<Metering>,
    webhooks: Supervised<WebhookRegistry>,
    post_call: Option<PostCall>,
}

impl Notifying {
    /// Wraps `inner`, the session's recorder; `recorded` says whether its audio is recorded,
    /// `post_call` the analysis to run once it has ended.
    pub fn wrap(
        state: &AppState,
        request: &SessionRequest,
        transport: &'static str,
        recorded: bool,
        post_call: Option<PostCall>,
        inner: Arc<dyn SessionObserver>,
    ) -> Arc<dyn SessionObserver> {
        let recording_url = recorded.then(|| {
            let configured = state
                .config()
                .server
                .public_url
                .trim()
                .trim_end_matches('/');
            let base = if configured.is_empty() {
                request.public_base.as_deref().unwrap_or_default()
            } else {
                configured
            };
            // Phone calls' recordings are found by call SID, direct sessions' by session id.
            let id = request
                .call_sid
                .as_deref()
                .unwrap_or(request.session_id.as_str());
            format!("{base}/v1/recordings/{id}")
        });
        Arc::new(Notifying {
            inner,
            caller: Caller {
                session_id: request.session_id.clone(),
                developer_id: request.developer_id.clone(),
                agent_id: request.agent_id.clone(),
                instance_id: request.instance_id.clone(),
                call_sid: request.call_sid.clone(),
                from: request.from.clone(),
                to: request.to.clone(),
                transport,
                recording_url,
            },
            sessions: state.sessions().clone(),
            metering: state.metering().clone(),
            webhooks: state.webhooks().clone(),
            post_call,
        })
    }
}

impl SessionObserver for Notifying {
    fn session_started(&self, session_id: &str) {
        self.inner.session_started(session_id);
        let c = &self.caller;
        self.webhooks.do_send(Emit {
            developer_id: c.developer_id.clone(),
            kind: EventType::CallStarted,
            data: json!({
                "sessionId": c.session_id,
                "agentId": c.agent_id,
                "instanceId": c.instance_id,
                "callSid": c.call_sid,
                "from": c.from,
                "to": c.to,
                "transport": c.transport,
                "startedAt": iso(now_ms()),
            }),
        });
    }

    fn turn_completed(&self, session_id: &str, turn: &TurnRecord) {
        self.inner.turn_completed(session_id, turn);
    }

    fn tool_executed(&self, session_id: &str, outcome: &ToolOutcome) {
        self.inner.tool_executed(session_id, outcome);
    }

    fn speech_unrecognised(&self, session_id: &str, speech: &UnrecognisedSpeech) {
        self.inner.speech_unrecognised(session_id, speech);
    }

    fn session_ended(&self, session_id: &str, summary: &SessionSummary) {
        // The recorder queues the session's end (and frees its metering slot) first.
        self.inner.session_ended(session_id, summary);
        let ended = CallEnded {
            caller: self.caller.clone(),
            sessions: self.sessions.clone(),
            metering: self.metering.clone(),
            webhooks: self.webhooks.clone(),
            post_call: self.post_call.clone(),
        };
        actix_web::rt::spawn(ended.send());
    }
}

/// What `call.ended` is put together from, once the session is over, and the analysis
/// that follows it.
struct CallEnded {
    caller: Caller,
    sessions: Supervised<SessionRegistry>,
    metering: Supervised<Metering>,
    webhooks: Supervised<WebhookRegistry>,
    post_call: Option<PostCall>,
}

impl CallEnded {
    async fn send(self) {
        let c = &self.caller;
        // Read even when nobody listens, so the metering forgets it.
        let cost = self
            .metering
            .send(SessionCost {
                session_id: c.session_id.clone(),
            })
            .await
            .unwrap_or(0.0);
        let subscribed = self
            .webhooks
            .send(Subscribed {
                developer_id: c.developer_id.clone(),
                kind: EventType::CallEnded,
            })
            .await;
        let subscribed = matches!(subscribed, Ok(Ok(true)));
        if !subscribed && self.post_call.is_none() {
            return;
        }
        if self.sessions.send(Flush).await.is_err() {
            tracing::warn!(session = %c.session_id, "call.ended: the session registry did not answer");
            return;
        }
        let trace = self
            .sessions
            .send(GetSession {
                developer_id: c.developer_id.clone(),
                lookup: SessionLookup::Id(c.session_id.clone()),
            })
            .await;
        let trace = match trace {
            Ok(Ok(trace)) => trace,
            Ok(Err(e)) => {
                tracing::warn!(session = %c.session_id, "call.ended: the session's record cannot be read: {e}");
                return;
            }
            Err(e) => {
                tracing::warn!(session = %c.session_id, "call.ended: the session registry did not answer: {e}");
                return;
            }
        };
        if subscribed {
            self.send_ended(&trace, cost);
        }
        if let Some(post_call) = self.post_call {
            post_call.run(&trace).await;
        }
    }

    /// `call.ended`, from the session's stored record.
    fn send_ended(&self, trace: &SessionTrace, cost: f64) {
        let c = &self.caller;
        let transcript: Vec<Value> = trace
            .turns
            .iter()
            .filter(|t| !t.text.trim().is_empty())
            .map(|t| {
                json!({
                    "speaker": t.speaker,
                    "text": t.text,
                    "startMs": t.start_ms,
                    "endMs": t.end_ms,
                    "interrupted": t.interrupted,
                })
            })
            .collect();
        let issues = analyse(trace);
        let data = ended_data(
            &trace.session,
            c,
            transcript,
            cost,
            json!({ "issues": issues }),
        );
        self.webhooks.do_send(Emit {
            developer_id: c.developer_id.clone(),
            kind: EventType::CallEnded,
            data,
        });
    }
}

/// `call.ended`'s data.
fn ended_data(
    row: &SessionRow,
    caller: &Caller,
    transcript: Vec<Value>,
    cost: f64,
    root_cause: Value,
) -> Value {
    json!({
        "sessionId": row.id,
        "agentId": row.agent_id,
        "instanceId": row.instance_id.clone().or_else(|| caller.instance_id.clone()),
        "callSid": row.call_sid,
        "from": row.from_number.clone().or_else(|| caller.from.clone()),
        "to": row.to_number.clone().or_else(|| caller.to.clone()),
        "transport": row.transport,
        "status": row.status,
        "startedAt": iso_opt(row.started_at),
        "endedAt": iso_opt(row.ended_at),
        "durationMs": row.total_duration_ms,
        "endReason": row.end_reason,
        "transcript": transcript,
        // Rounded to the precision usage is reported in.
        "costCredits": (cost * 10_000.0).round() / 10_000.0,
        "recordingUrl": caller.recording_url,
        "rootCause": root_cause,
    })
}

/// A transfer of `session`'s call settled as `detail` (`{name, number, mode, by, outcome,
/// durationSeconds?}`): `transfer.completed`.
pub fn transfer_completed(state: &AppState, session: &SessionRow, detail: &Value) {
    state.webhooks().do_send(Emit {
        developer_id: session.developer_id.clone(),
        kind: EventType::TransferCompleted,
        data: json!({
            "sessionId": session.id,
            "agentId": session.agent_id,
            "callSid": session.call_sid,
            "from": session.from_number,
            "to": session.to_number,
            "transfer": detail,
        }),
    });
}
