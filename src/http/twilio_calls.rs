//! Outbound calls and Twilio's webhooks.
//!
//! - `POST /v1/sessions/twilio/outbound` places a call through Twilio's REST API and records
//!   it as a task; `GET /v1/sessions/twilio/tasks/{taskId}` reads the task.
//! - `POST /v1/sessions/twilio/task/{taskId}/connect` (Twilio fetches it when the call is
//!   answered) answers the same stream markup as inbound sessions; `.../status` receives the
//!   call's progress (initiated, ringing, answered, completed and the failures), applied in
//!   Twilio's sequence order; `.../amd` receives Twilio's answering-machine verdict on a
//!   call placed with `machineDetection` (see [`crate::live::voicemail`]).
//! - `POST /v1/sessions/twilio/inbound` is a voice webhook a Twilio number can point at
//!   directly: the called number is looked up in `/v1/phone-numbers` and the call connected
//!   to that agent.
//!
//! The webhooks carry no API key: each must carry a valid `X-Twilio-Signature` over the
//! URL Twilio requested and its form parameters (see [`crate::telephony::signature`]), else
//! it is refused with 403 and changes nothing.

use actix_web::{get, post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::{ApiJson, RawWebhook};
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::{InstanceId, SessionId, TaskId};
use crate::live::campaigns;
use crate::live::outbound::{self, release_ringing, task_status_of, OutboundCall};
use crate::live::voicemail::{self, MachineDetection, Verdict, VoicemailPlan};
use crate::live::{
    busy_markup, control, issue_stream, issue_stream_as, resolve_instance, warm_agent_voice,
    StreamFor,
};
use crate::registry::agents::GetAgent;
use crate::registry::telephony::{
    AdvanceTask, ClaimTaskConnect, EndUnconnectedSession, GetTask, RouteCall, UpdateTask,
};
use crate::store::telephony::{CallTaskRow, TaskChanges, TaskStatus};
use crate::telephony::{signature, twiml};
use crate::time::{self, iso};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(place_call).service(get_task).service(hang_up);
    methods::other_methods(
        cfg,
        &[
            "/sessions/twilio/outbound",
            "/sessions/twilio/tasks/{taskId}",
            "/sessions/twilio/{callSid}/hangup",
        ],
    );
}

/// Twilio's webhooks, which are proven by their signature instead of an API key.
pub fn webhooks(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/v1/sessions/twilio/task/{task_id}/connect")
            .route(web::post().to(task_connect))
            .to(methods::method_not_allowed),
    )
    .service(
        web::resource("/v1/sessions/twilio/task/{task_id}/status")
            .route(web::post().to(task_status))
            .to(methods::method_not_allowed),
    )
    .service(
        web::resource("/v1/sessions/twilio/task/{task_id}/amd")
            .route(web::post().to(task_amd))
            .to(methods::method_not_allowed),
    )
    .service(
        web::resource("/v1/sessions/twilio/inbound")
            .route(web::post().to(inbound_call))
            .to(methods::method_not_allowed),
    );
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutboundRequest {
    /// The agent that talks on the call.
    pub agent_id: Option<String>,
    /// The number to call, E.164; premium-rate and other costly destinations are refused
    /// (`telephony.outbound` prefix lists).
    pub to: Option<String>,
    /// The caller id, E.164: one of your verified numbers in `/v1/phone-numbers`.
    pub from: Option<String>,
    /// An instance of the agent; otherwise the instance whose phoneNumber is `to`, if any.
    pub instance_id: Option<String>,
    /// Also have Twilio record the call on its side (`Record=true`; default false). Our own
    /// two-channel recording is made either way (see `/v1/recordings/{callId}`).
    pub record: Option<bool>,
    /// What to do when an answering machine picks up (Twilio's asynchronous detection,
    /// reported to `/v1/sessions/twilio/task/{taskId}/amd`): `off` (the default: no
    /// detection, whoever answers talks to the agent), `hangup` (hang up on a machine or a
    /// fax), `message` (say `voicemailMessage` after the beep, then hang up; a fax is hung up
    /// on). A person, or no verdict, keeps talking to the agent.
    pub machine_detection: Option<MachineDetection>,
    /// The message left on a machine: required when `machineDetection` is `message`, refused
    /// otherwise; not blank, at most 1000 characters.
    #[schema(
        max_length = 1000,
        example = "Hi, this is Acme about your order. Please call us back."
    )]
    pub voicemail_message: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutboundBody {
    pub task_id: String,
    /// Twilio's call SID.
    pub call_sid: String,
    /// `queued` as a rule; see the task for later states.
    pub status: String,
}

/// An outbound call task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskBody {
    pub task_id: String,
    pub agent_id: String,
    pub instance_id: Option<String>,
    pub to: String,
    pub from: String,
    /// queued, ringing, in-progress, completed, busy, no-answer, failed or canceled.
    pub status: String,
    pub call_sid: Option<String>,
    /// The session the call connected to, once answered.
    pub session_id: Option<String>,
    /// Twilio's `CallDuration` once the call ended.
    pub duration_seconds: Option<i64>,
    /// Why the call could not be placed.
    pub error: Option<String>,
    /// `off`, `hangup` or `message`, as the call was placed.
    pub machine_detection: String,
    /// Twilio's answering-machine verdict (`human`, `machine_start`, `machine_end_beep`,
    /// `machine_end_silence`, `machine_end_other`, `fax`, `unknown`); null until known.
    pub answered_by: Option<String>,
    /// What was done about the verdict: `none` (the agent went on), `hung_up` or
    /// `left_message`; null until known.
    pub machine_action: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<CallTaskRow> for TaskBody {
    fn from(row: CallTaskRow) -> TaskBody {
        TaskBody {
            task_id: row.id.into(),
            agent_id: row.agent_id.into(),
            instance_id: row.instance_id.map(String::from),
            to: row.to_number,
            from: row.from_number,
            status: row.status.to_string(),
            call_sid: row.call_sid,
            session_id: row.session_id.map(String::from),
            duration_seconds: row.duration_seconds,
            error: row.error,
            machine_detection: row.machine_detection,
            answered_by: row.answered_by,
            machine_action: row.machine_action,
            created_at: iso(row.created_at),
            updated_at: iso(row.updated_at),
        }
    }
}

/// Places a call through Twilio's REST API. When it is answered, Twilio fetches the task's
/// connect URL, which connects the call to the agent like an inbound session.
#[utoipa::path(post, path = "/v1/sessions/twilio/outbound", tag = "sessions", request_body = OutboundRequest,
    responses((status = 201, body = OutboundBody), (status = 400, body = ErrorBody, description = "Invalid request; `to` a refused destination (premium-rate and other costly prefixes, telephony.outbound); `from` not one of your verified numbers; or Twilio refused the numbers"),
        (status = 401, body = ErrorBody), (status = 402, body = ErrorBody, description = "insufficient_credits: the credits are spent and the tier allows no overage"),
        (status = 404, body = ErrorBody, description = "No such agent"),
        (status = 429, body = ErrorBody, description = "rate_limited (the key's request rate), or session_limit_exceeded: the tier's concurrent sessions (live calls and ringing outbound calls) are all in use"),
        (status = 502, body = ErrorBody, description = "Twilio failed"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")),
    security(("bearer" = [])))]
#[post("/sessions/twilio/outbound")]
async fn place_call(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    body: ApiJson<OutboundRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    let agent_id = request
        .agent_id
        .ok_or_else(|| ApiError::invalid("agentId", "agentId is required"))?;
    let to = validate::e164("to", request.to.as_deref())?;
    let from = validate::e164("from", request.from.as_deref())?;
    let machine_plan = VoicemailPlan::from_request(
        request.machine_detection,
        request.voicemail_message.as_deref(),
    )?;
    if let Some(prefix) = state.config().telephony.outbound.refusal(&to) {
        return Err(ApiError::invalid(
            "to",
            format!(
                "calls to {to} are not allowed: premium-rate and other costly destinations \
                 are refused ({prefix}; see telephony.outbound)"
            ),
        ));
    }
    let developer_id = developer.id().clone();
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: agent_id.as_str().into(),
        })
        .await??;
    let instance = match &request.instance_id {
        Some(id) => {
            resolve_instance(
                &state,
                &developer_id,
                &agent.id,
                Some(&InstanceId::from(id.as_str())),
                &to,
            )
            .await?
        }
        None => None,
    };
    let placed = outbound::place(
        &state,
        OutboundCall {
            developer_id,
            key_id: developer.api_key_id().cloned(),
            agent_id: agent.id,
            instance_id: instance,
            to,
            from,
            record: request.record.unwrap_or(false),
            machine_plan,
            variables: None,
            public_base: state.public_base(&req),
        },
    )
    .await?;
    Ok(HttpResponse::Created().json(OutboundBody {
        task_id: placed.task_id.into(),
        call_sid: placed.call_sid,
        status: placed.status.to_string(),
    }))
}

#[utoipa::path(get, path = "/v1/sessions/twilio/tasks/{taskId}", tag = "sessions",
    params(("taskId" = String, Path, description = "Outbound call task id")),
    responses((status = 200, body = TaskBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/sessions/twilio/tasks/{taskId}")]
async fn get_task(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let task = state
        .telephony()
        .send(GetTask {
            developer_id: Some(developer.id().clone()),
            id: id.into_inner().into(),
        })
        .await??;
    Ok(HttpResponse::Ok().json(TaskBody::from(task)))
}

/// A webhook's form parameters, after its signature was checked against the auth token.
pub(super) struct SignedForm(Vec<(String, String)>);

impl SignedForm {
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Checks `X-Twilio-Signature` over the URL Twilio requested (this server's public base URL
/// and the request's path and query) and the form body.
pub(super) fn verify_webhook(
    state: &AppState,
    req: &HttpRequest,
    body: &[u8],
) -> Result<SignedForm, ApiError> {
    let twilio = &state.config().telephony.twilio;
    if !twilio.configured() {
        return Err(ApiError::Unavailable(
            "Twilio webhooks are not configured: set [telephony.twilio] account_sid and auth_token"
                .into(),
        ));
    }
    let params: Vec<(String, String)> = url::form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let url = format!(
        "{}{}",
        state.public_base(req),
        req.uri()
            .path_and_query()
            .map_or(req.path(), |pq| pq.as_str())
    );
    let provided = req
        .headers()
        .get("X-Twilio-Signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if provided.is_empty() || !signature::verify(twilio.auth_token.trim(), &url, &params, provided)
    {
        tracing::warn!(path = %req.path(), "refused a Twilio webhook: bad or missing X-Twilio-Signature");
        return Err(ApiError::Forbidden(
            "X-Twilio-Signature is missing or does not match this request".into(),
        ));
    }
    Ok(SignedForm(params))
}

pub(super) fn twiml_response(markup: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/xml; charset=utf-8")
        .body(markup)
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HangUpBody {
    pub call_sid: String,
    pub session_id: String,
    /// `completed`: Twilio ended the call now. `already_ended`: Twilio had no call in progress
    /// any more (it ended as the request was made).
    pub status: &'static str,
}

/// Hangs up one of the developer's live phone calls: Twilio ends the call (`Status=completed`),
/// its media stream stops and the session ends as `hangup`, with a `hangup_requested` call
/// event on its record.
#[utoipa::path(post, path = "/v1/sessions/twilio/{callSid}/hangup", tag = "sessions",
    params(("callSid" = String, Path, description = "Twilio's call SID")),
    responses((status = 200, body = HangUpBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "The developer has no call with this SID"),
        (status = 409, body = ErrorBody, description = "The call's session already ended"),
        (status = 502, body = ErrorBody, description = "Twilio failed"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")),
    security(("bearer" = [])))]
#[post("/sessions/twilio/{callSid}/hangup")]
async fn hang_up(
    state: web::Data<AppState>,
    developer: Developer,
    call_sid: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let call_sid = call_sid.into_inner();
    let hung_up = control::hang_up(&state, developer.id(), &call_sid).await?;
    Ok(HttpResponse::Ok().json(HangUpBody {
        call_sid,
        session_id: hung_up.session_id.into(),
        status: if hung_up.ended_now {
            "completed"
        } else {
            "already_ended"
        },
    }))
}

/// Twilio fetches this when an outbound call is answered: the stream markup for the task's
/// agent. Called by Twilio, not API consumers: no API key, a valid `X-Twilio-Signature`.
#[utoipa::path(post, path = "/v1/sessions/twilio/task/{taskId}/connect", tag = "telephony webhooks",
    params(("taskId" = String, Path, description = "Outbound call task id"),
        ("X-Twilio-Signature" = String, Header, description = "base64 HMAC-SHA1 of the URL and sorted form parameters with the auth token")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Twilio's voice request parameters (CallSid, From, To, ...)"),
    responses((status = 200, description = "TwiML connecting the call to the agent's media stream, or the busy message and a hang-up when the developer's concurrent sessions are all in use", content_type = "text/xml"),
        (status = 403, body = ErrorBody, description = "Missing or invalid signature"), (status = 404, body = ErrorBody),
        (status = 409, description = "The task was already connected (a replayed or repeated connect): TwiML that says so and hangs up, with no relay token", content_type = "text/xml"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")))]
async fn task_connect(
    state: web::Data<AppState>,
    req: HttpRequest,
    task_id: web::Path<String>,
    RawWebhook(body): RawWebhook,
) -> Result<HttpResponse, ApiError> {
    let form = verify_webhook(&state, &req, &body)?;
    let task = state
        .telephony()
        .send(GetTask {
            developer_id: None,
            id: task_id.into_inner().into(),
        })
        .await??;
    if task.status.is_terminal() {
        return Ok(twiml_response(twiml::say_and_hang_up(
            "This call has already ended. Goodbye.",
        )));
    }
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: task.developer_id.clone(),
            agent_id: task.agent_id.clone(),
        })
        .await?;
    let Ok(agent) = agent else {
        tracing::warn!(task = %task.id, "the task's agent is gone; hanging up");
        end_task(&state, &task.id, "the agent no longer exists").await;
        return Ok(twiml_response(twiml::say_and_hang_up(
            "Sorry, this agent is not available. Goodbye.",
        )));
    };
    // One connect per task: the first claims the task for its session; a replay of the same
    // signed request (or a second answer) gets no relay token.
    let session_id = SessionId::new();
    let claimed = state
        .telephony()
        .send(ClaimTaskConnect {
            id: task.id.clone(),
            session_id: session_id.clone(),
        })
        .await??;
    let Some(task) = claimed else {
        tracing::warn!(task = %task.id, "refused a second connect of an outbound task");
        return Ok(HttpResponse::Conflict()
            .content_type("text/xml; charset=utf-8")
            .body(twiml::say_and_hang_up(
                "This call is already connected. Goodbye.",
            )));
    };
    // The stream takes the tier's slot from here (when it starts); the ringing hold ends.
    release_ringing(&state, &task.id);
    warm_agent_voice(&state, &agent);
    let call_sid = form
        .get("CallSid")
        .map(str::to_string)
        .or(task.call_sid.clone());
    // From the agent's side the person called is the caller: their number picks the instance.
    let instance = match task.instance_id.clone() {
        Some(id) => Some(id),
        None => {
            match resolve_instance(&state, &task.developer_id, &agent.id, None, &task.to_number)
                .await
            {
                Ok(instance) => instance,
                Err(e) => {
                    end_task(&state, &task.id, "the call could not be connected").await;
                    return Err(e);
                }
            }
        }
    };
    let issued = issue_stream_as(
        &state,
        &req,
        StreamFor {
            developer_id: task.developer_id.clone(),
            agent_id: agent.id,
            from: Some(task.to_number.clone()),
            to: Some(task.from_number.clone()),
            instance_id: instance,
            call_sid: call_sid.clone(),
            // The stream is refused if the key that placed the call was revoked since.
            key_id: task.key_id.clone(),
            // A call placed with variables (a campaign's) gives them to its agent.
            task_id: task.variables.is_some().then(|| task.id.clone()),
            resumes: None,
            opening: None,
        },
        session_id,
    )
    .await;
    let issued = match issued {
        Ok(issued) => issued,
        Err(ApiError::SessionLimit(reason)) => {
            tracing::warn!(task = %task.id, "outbound call refused, the lines are busy: {reason}");
            end_task(
                &state,
                &task.id,
                "busy: the tier's concurrent sessions were all in use",
            )
            .await;
            return Ok(twiml_response(busy_markup(&state)));
        }
        Err(e) => {
            end_task(&state, &task.id, "the call could not be connected").await;
            return Err(e);
        }
    };
    state
        .telephony()
        .send(UpdateTask {
            id: task.id,
            changes: TaskChanges {
                status: Some(TaskStatus::InProgress),
                call_sid: call_sid.map(Some),
                session_id: Some(Some(issued.session_id)),
                updated_at: time::now_ms(),
                ..Default::default()
            },
        })
        .await??;
    Ok(twiml_response(issued.twiml))
}

async fn end_task(state: &AppState, task_id: &TaskId, reason: &str) {
    release_ringing(state, task_id);
    campaigns::task_ended(state, task_id, TaskStatus::Failed, Some(reason.to_string()));
    let _ = state
        .telephony()
        .send(UpdateTask {
            id: task_id.clone(),
            changes: TaskChanges {
                status: Some(TaskStatus::Failed),
                error: Some(Some(reason.to_string())),
                updated_at: time::now_ms(),
                ..Default::default()
            },
        })
        .await;
}

/// Twilio reports the call's progress here (`StatusCallbackEvent` initiated, ringing,
/// answered, completed). Events are applied in `SequenceNumber` order: an older one arriving
/// late changes nothing, and an ended task stays ended.
#[utoipa::path(post, path = "/v1/sessions/twilio/task/{taskId}/status", tag = "telephony webhooks",
    params(("taskId" = String, Path, description = "Outbound call task id"),
        ("X-Twilio-Signature" = String, Header, description = "base64 HMAC-SHA1 of the URL and sorted form parameters with the auth token")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Twilio's status callback parameters (CallSid, CallStatus, SequenceNumber, CallDuration, ...)"),
    responses((status = 204, description = "Applied (or ignored as stale)"),
        (status = 400, body = ErrorBody, description = "Unknown CallStatus"),
        (status = 403, body = ErrorBody, description = "Missing or invalid signature"), (status = 404, body = ErrorBody),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")))]
async fn task_status(
    state: web::Data<AppState>,
    req: HttpRequest,
    task_id: web::Path<String>,
    RawWebhook(body): RawWebhook,
) -> Result<HttpResponse, ApiError> {
    let form = verify_webhook(&state, &req, &body)?;
    let task_id = TaskId::from(task_id.into_inner());
    // Known task (404 otherwise), whoever owns it: the signature is the proof.
    state
        .telephony()
        .send(GetTask {
            developer_id: None,
            id: task_id.clone(),
        })
        .await??;
    let call_status = form.get("CallStatus").unwrap_or("");
    let Some(status) = task_status_of(call_status) else {
        return Err(ApiError::invalid(
            "CallStatus",
            format!("unknown CallStatus '{call_status}'"),
        ));
    };
    let terminal = status.is_terminal();
    if terminal {
        release_ringing(&state, &task_id);
    }
    let changes = TaskChanges {
        status: Some(status),
        call_sid: form.get("CallSid").map(|s| Some(s.to_string())),
        duration_seconds: form
            .get("CallDuration")
            .and_then(|d| d.trim().parse::<i64>().ok())
            .map(Some),
        error: (status == TaskStatus::Failed)
            .then(|| {
                form.get("SipResponseCode")
                    .map(|c| format!("SIP response {c}"))
            })
            .flatten()
            .map(Some),
        updated_at: time::now_ms(),
        ..Default::default()
    };
    let updated = match form
        .get("SequenceNumber")
        .and_then(|n| n.trim().parse::<i64>().ok())
    {
        Some(sequence) => {
            state
                .telephony()
                .send(AdvanceTask {
                    id: task_id.clone(),
                    sequence,
                    changes: TaskChanges {
                        last_sequence: Some(sequence),
                        ..changes
                    },
                })
                .await??
        }
        None => {
            state
                .telephony()
                .send(UpdateTask {
                    id: task_id.clone(),
                    changes,
                })
                .await??
        }
    };
    match updated {
        Some(task) if terminal => {
            campaigns::task_ended(&state, &task.id, status, task.error.clone());
            if let Some(session_id) = task.session_id {
                state
                    .telephony()
                    .send(EndUnconnectedSession {
                        session_id,
                        reason: status.to_string(),
                    })
                    .await?;
            }
        }
        Some(_) => {}
        None => {
            tracing::debug!(task = %task_id, "ignored a stale or late status callback ({call_status})")
        }
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Twilio's answering-machine verdict on an outbound call placed with `machineDetection`
/// `hangup` or `message` (asynchronous detection: the call went on meanwhile). A person or
/// no verdict (`human`, `unknown`) keeps talking to the agent; a machine is hung up on or
/// left the voicemail message after the beep; a fax is hung up on. The first verdict
/// stands: a repeated callback changes nothing. The verdict shows on the task
/// (`answeredBy`, `machineAction`) and, once the call connected, on its session as a
/// `machine_detection` call event.
#[utoipa::path(post, path = "/v1/sessions/twilio/task/{taskId}/amd", tag = "telephony webhooks",
    params(("taskId" = String, Path, description = "Outbound call task id"),
        ("X-Twilio-Signature" = String, Header, description = "base64 HMAC-SHA1 of the URL and sorted form parameters with the auth token")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Twilio's AsyncAmdStatusCallback parameters: CallSid, AnsweredBy (human, machine_start, machine_end_beep, machine_end_silence, machine_end_other, fax, unknown), MachineDetectionDuration (ms)"),
    responses((status = 204, description = "Acted on (or ignored as a repeat of the verdict already acted on)"),
        (status = 400, body = ErrorBody, description = "Missing CallSid, unknown AnsweredBy, or a MachineDetectionDuration that is no number of milliseconds"),
        (status = 403, body = ErrorBody, description = "Missing or invalid signature"), (status = 404, body = ErrorBody),
        (status = 502, body = ErrorBody, description = "Twilio failed to hang up or redirect the call; the verdict is not kept"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")))]
async fn task_amd(
    state: web::Data<AppState>,
    req: HttpRequest,
    task_id: web::Path<String>,
    RawWebhook(body): RawWebhook,
) -> Result<HttpResponse, ApiError> {
    let form = verify_webhook(&state, &req, &body)?;
    let task = state
        .telephony()
        .send(GetTask {
            developer_id: None,
            id: task_id.into_inner().into(),
        })
        .await??;
    let verdict = Verdict::parse(
        form.get("CallSid").or(task.call_sid.as_deref()),
        form.get("AnsweredBy"),
        form.get("MachineDetectionDuration"),
    )?;
    voicemail::apply_verdict(&state, &task, &verdict).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The voice webhook of a Twilio number: connects the call to the agent the called number is
/// routed to (`/v1/phone-numbers`), or says the number is not in service.
#[utoipa::path(post, path = "/v1/sessions/twilio/inbound", tag = "telephony webhooks",
    params(("X-Twilio-Signature" = String, Header, description = "base64 HMAC-SHA1 of the URL and sorted form parameters with the auth token")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Twilio's voice request parameters (CallSid, From, To, ...)"),
    responses((status = 200, description = "TwiML: the agent's media stream; or a message and a hang-up for an unrouted number, or for a developer whose concurrent sessions are all in use (`telephony.busy_message`)", content_type = "text/xml"),
        (status = 403, body = ErrorBody, description = "Missing or invalid signature"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")))]
async fn inbound_call(
    state: web::Data<AppState>,
    req: HttpRequest,
    RawWebhook(body): RawWebhook,
) -> Result<HttpResponse, ApiError> {
    let form = verify_webhook(&state, &req, &body)?;
    let called = form
        .get("To")
        .or(form.get("Called"))
        .unwrap_or("")
        .to_string();
    let caller = form
        .get("From")
        .or(form.get("Caller"))
        .unwrap_or("")
        .to_string();
    let Some(route) = state
        .telephony()
        .send(RouteCall {
            number: called.clone(),
        })
        .await??
    else {
        tracing::warn!(number = %called, "inbound call to a number with no route");
        return Ok(twiml_response(twiml::say_and_hang_up(
            "The number you have called is not in service. Goodbye.",
        )));
    };
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: route.developer_id.clone(),
            agent_id: route.agent_id.clone(),
        })
        .await?;
    let Ok(agent) = agent else {
        tracing::warn!(number = %called, agent = %route.agent_id, "inbound call routed to an agent that is gone");
        return Ok(twiml_response(twiml::say_and_hang_up(
            "Sorry, nobody can take your call right now. Goodbye.",
        )));
    };
    warm_agent_voice(&state, &agent);
    let instance = match route.instance_id.clone() {
        Some(id) => Some(id),
        None => resolve_instance(&state, &route.developer_id, &agent.id, None, &caller).await?,
    };
    let issued = issue_stream(
        &state,
        &req,
        StreamFor {
            developer_id: route.developer_id,
            agent_id: agent.id,
            from: Some(caller),
            to: Some(called.clone()),
            instance_id: instance,
            call_sid: form.get("CallSid").map(str::to_string),
            key_id: None,
            resumes: None,
            opening: None,
            task_id: None,
        },
    )
    .await;
    match issued {
        Ok(issued) => Ok(twiml_response(issued.twiml)),
        Err(ApiError::SessionLimit(reason)) => {
            tracing::warn!(number = %called, "inbound call refused, the lines are busy: {reason}");
            Ok(twiml_response(busy_markup(&state)))
        }
        Err(e) => Err(e),
    }
}
