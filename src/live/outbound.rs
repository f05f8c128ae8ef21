//! Placing an outbound call, for `POST /v1/sessions/twilio/outbound` and for campaigns: the
//! caller id proven the developer's, a concurrent-session slot held while the call rings
//! (402 without credits, 429 when the tier's lines are all in use), the call task recorded,
//! and the call asked of Twilio's REST API with the task's connect, status and
//! answering-machine URLs. When the call is answered, Twilio fetches the connect URL, which
//! connects it to the agent like an inbound session.

use std::time::Duration;

use super::voicemail::VoicemailPlan;
use crate::app::AppState;
use crate::error::ApiError;
use crate::ids::{AgentId, DeveloperId, InstanceId, KeyId, SessionId, TaskId};
use crate::registry::metering::{CloseSession, HoldSession};
use crate::registry::telephony::{CreateTask, RouteCall, UpdateTask};
use crate::store::telephony::{CallTaskRow, TaskChanges, TaskStatus};
use crate::telephony::rest::{NewCall, TwilioError};
use crate::time;

/// A call to place.
#[derive(Debug, Clone)]
pub struct OutboundCall {
    pub developer_id: DeveloperId,
    /// The API key that placed it: its revocation refuses the call's stream.
    pub key_id: Option<KeyId>,
    pub agent_id: AgentId,
    pub instance_id: Option<InstanceId>,
    pub to: String,
    pub from: String,
    /// Twilio records the call on its side too.
    pub record: bool,
    pub machine_plan: VoicemailPlan,
    /// The agent's variables for this call, a JSON object.
    pub variables: Option<String>,
    /// The base URL Twilio reaches this service at.
    pub public_base: String,
}

/// A call Twilio accepted.
#[derive(Debug, Clone)]
pub struct Placed {
    pub task_id: TaskId,
    pub call_sid: String,
    /// `queued` as a rule.
    pub status: TaskStatus,
}

/// Places `call` (see the module doc). A call Twilio refuses is a 400 (`Rejected`) or 502,
/// and its task ends `failed` with the reason.
pub async fn place(state: &AppState, call: OutboundCall) -> Result<Placed, ApiError> {
    can_call_from(state, &call.developer_id, &call.from).await?;
    // Gated like every metered session: 402 without credits, 429 when the tier's concurrent
    // sessions are all live. The ringing call holds a slot (under the task's id) until it is
    // answered, ends, or the answer timeout passes (the hold then lapses by itself).
    let task_id = TaskId::new();
    state
        .metering()
        .send(HoldSession {
            session_id: SessionId::from(task_id.as_str()),
            developer_id: call.developer_id.clone(),
            for_: Duration::from_secs(state.config().telephony.outbound.answer_timeout_seconds),
            check_credits: true,
        })
        .await??;
    let placed = place_task(state, task_id.clone(), call).await;
    if placed.is_err() {
        release_ringing(state, &task_id);
    }
    placed
}

/// Whether `developer_id` can place calls from `from`: Twilio is configured (503 otherwise)
/// and the number is one of the developer's own, proven when it was routed (400 on `from`).
pub async fn can_call_from(
    state: &AppState,
    developer_id: &DeveloperId,
    from: &str,
) -> Result<(), ApiError> {
    if state.twilio().is_none() {
        return Err(ApiError::Unavailable(
            "outbound calls are not configured: set [telephony.twilio] account_sid and auth_token"
                .into(),
        ));
    }
    let own = state
        .telephony()
        .send(RouteCall {
            number: from.to_string(),
        })
        .await??
        .is_some_and(|route| &route.developer_id == developer_id);
    if !own {
        return Err(ApiError::invalid(
            "from",
            "from must be one of your verified numbers (see /v1/phone-numbers)",
        ));
    }
    Ok(())
}

/// Frees the concurrent-session slot a placed call held while it rang.
pub fn release_ringing(state: &AppState, task_id: &TaskId) {
    state.metering().do_send(CloseSession {
        session_id: SessionId::from(task_id.as_str()),
    });
}

/// Records the task and asks Twilio to place the call.
async fn place_task(
    state: &AppState,
    task_id: TaskId,
    call: OutboundCall,
) -> Result<Placed, ApiError> {
    let twilio = state
        .twilio()
        .as_ref()
        .ok_or_else(|| ApiError::Unavailable("outbound calls are not configured".into()))?;
    let now = time::now_ms();
    let plan = call.machine_plan;
    let task = state
        .telephony()
        .send(CreateTask(CallTaskRow {
            seq: 0,
            id: task_id,
            developer_id: call.developer_id,
            agent_id: call.agent_id,
            instance_id: call.instance_id,
            to_number: call.to.clone(),
            from_number: call.from.clone(),
            status: TaskStatus::Queued,
            call_sid: None,
            session_id: None,
            record: call.record,
            last_sequence: -1,
            duration_seconds: None,
            error: None,
            created_at: now,
            updated_at: now,
            key_id: call.key_id,
            machine_detection: plan.mode.as_str().to_string(),
            voicemail_message: plan.message.clone(),
            answered_by: None,
            machine_action: None,
            variables: call.variables,
        }))
        .await??;
    let base = format!("{}/v1/sessions/twilio/task/{}", call.public_base, task.id);
    let placed = twilio
        .create_call(&NewCall {
            to: call.to,
            from: call.from,
            url: format!("{base}/connect"),
            status_callback: format!("{base}/status"),
            record: task.record,
            amd_callback: plan.detects().then(|| format!("{base}/amd")),
        })
        .await;
    match placed {
        Ok(placed) => {
            let status = task_status_of(&placed.status).unwrap_or(TaskStatus::Queued);
            state
                .telephony()
                .send(UpdateTask {
                    id: task.id.clone(),
                    changes: TaskChanges {
                        call_sid: Some(Some(placed.sid.clone())),
                        status: Some(status),
                        updated_at: time::now_ms(),
                        ..Default::default()
                    },
                })
                .await??;
            Ok(Placed {
                task_id: task.id,
                call_sid: placed.sid,
                status,
            })
        }
        Err(e) => {
            state
                .telephony()
                .send(UpdateTask {
                    id: task.id.clone(),
                    changes: TaskChanges {
                        status: Some(TaskStatus::Failed),
                        error: Some(Some(e.to_string())),
                        updated_at: time::now_ms(),
                        ..Default::default()
                    },
                })
                .await??;
            Err(match e {
                TwilioError::Rejected { .. } => ApiError::bad_request(e.to_string()),
                TwilioError::Failed(_) => ApiError::Upstream(e.to_string()),
            })
        }
    }
}

/// A task state for a Twilio call status (`initiated` and `queued` are both `queued`;
/// `answered` arrives as `in-progress`).
pub fn task_status_of(call_status: &str) -> Option<TaskStatus> {
    match call_status {
        "initiated" => Some(TaskStatus::Queued),
        "answered" => Some(TaskStatus::InProgress),
        other => TaskStatus::parse(other),
    }
}
