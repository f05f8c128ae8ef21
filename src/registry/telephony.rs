//! `TelephonyRegistry`: the records of telephony operations. It owns the phone-number routing
//! table (CRUD, and the lookup of the inbound voice webhook), outbound call tasks and the
//! progress Twilio reports for them, call recordings (started and finished without making a
//! call wait, moved to the object store when one is configured, deleted past their
//! retention), and where agents were synced to on outside platforms.

use std::time::Duration;

use actix::prelude::*;

use super::{cursor_position, Page, PageRequest};
use crate::config::RecordingsConfig;
use crate::error::ApiError;
use crate::ids::{AgentId, DeveloperId, InstanceId, NodeId, PhoneNumberId, SessionId, TaskId};
use crate::recording::{RecordingFinished, RecordingStorage, StartRecording};
use crate::store::telephony::{
    self, AgentSyncRow, CallTaskRow, ClaimCheck, PhoneNumberChanges, PhoneNumberRow, RecordingEnd,
    RecordingRow, RecordingStatus, TaskChanges,
};
use crate::store::{agents, instances, Db, StoreError};
use crate::time::now_ms;

const DAY_MS: f64 = 86_400_000.0;
/// Recordings removed per retention query.
const SWEEP_BATCH: i64 = 200;

pub struct TelephonyRegistry {
    db: Db,
    storage: RecordingStorage,
    recordings: RecordingsConfig,
    sweeping: bool,
    /// This node: recordings it writes carry it (see `fail_abandoned_recordings`).
    node_id: NodeId,
}

impl TelephonyRegistry {
    pub fn new(
        db: Db,
        storage: RecordingStorage,
        recordings: RecordingsConfig,
        node_id: NodeId,
    ) -> Self {
        Self {
            db,
            storage,
            recordings,
            sweeping: false,
            node_id,
        }
    }

    /// Deletes recordings past their retention, unless a sweep is still running.
    fn sweep(&mut self, ctx: &mut Context<Self>) {
        if self.sweeping || self.recordings.retention_days <= 0.0 {
            return;
        }
        self.sweeping = true;
        let (db, storage) = (self.db.clone(), self.storage.clone());
        let before = now_ms() - (self.recordings.retention_days * DAY_MS) as i64;
        let work = async move {
            loop {
                let expired = match telephony::expired_recordings(&db, before, SWEEP_BATCH).await {
                    Ok(rows) => rows,
                    Err(e) => {
                        tracing::error!("recording retention: {e}");
                        return;
                    }
                };
                let full = expired.len() as i64 == SWEEP_BATCH;
                let mut removed = 0;
                for row in expired {
                    if let Err(e) = storage.remove(&row.storage, &row.location).await {
                        tracing::error!(recording = %row.id, "recording retention: {e}");
                        continue;
                    }
                    if let Err(e) = telephony::delete_recording(&db, &row.id).await {
                        tracing::error!(recording = %row.id, "recording retention: {e}");
                        continue;
                    }
                    removed += 1;
                }
                if removed > 0 {
                    tracing::info!("recording retention: deleted {removed} recordings");
                }
                if !full || removed == 0 {
                    return;
                }
            }
        };
        ctx.spawn(
            work.into_actor(self)
                .map(|_, actor, _| actor.sweeping = false),
        );
    }
}

impl Actor for TelephonyRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.recordings.retention_days > 0.0 {
            let every = Duration::from_millis(self.recordings.cleanup_interval_ms.max(1));
            ctx.run_interval(every, |actor, ctx| actor.sweep(ctx));
        }
    }
}

async fn check_target(
    db: &Db,
    developer: &DeveloperId,
    agent: &AgentId,
    instance: Option<&InstanceId>,
) -> Result<(), ApiError> {
    if agents::get(db, developer, agent).await?.is_none() {
        return Err(ApiError::invalid(
            "agentId",
            format!("agent '{agent}' was not found"),
        ));
    }
    if let Some(instance) = instance {
        if instances::get(db, developer, agent, instance)
            .await?
            .is_none()
        {
            return Err(ApiError::invalid(
                "instanceId",
                format!("instance '{instance}' of agent '{agent}' was not found"),
            ));
        }
    }
    Ok(())
}

fn number_conflict(err: StoreError, number: &str) -> ApiError {
    match err {
        StoreError::Conflict(_) => ApiError::Conflict(format!(
            "you already have a route for phone number {number}"
        )),
        other => other.into(),
    }
}

/// A pending route: it takes calls once its code is confirmed ([`VerifyPhoneNumber`]). At
/// most `max_pending` of a developer's routes may wait for their code at once.
#[derive(Message)]
#[rtype(result = "Result<PhoneNumberRow, ApiError>")]
pub struct CreatePhoneNumber {
    pub row: PhoneNumberRow,
    pub max_pending: u32,
    /// How long a refused developer should wait: the code lifetime.
    pub retry_after_seconds: u64,
}

impl Handler<CreatePhoneNumber> for TelephonyRegistry {
    type Result = ResponseFuture<Result<PhoneNumberRow, ApiError>>;

    fn handle(&mut self, msg: CreatePhoneNumber, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let row = msg.row;
            check_target(
                &db,
                &row.developer_id,
                &row.agent_id,
                row.instance_id.as_ref(),
            )
            .await?;
            let pending = telephony::pending_claims(&db, &row.developer_id, now_ms()).await?;
            if pending >= i64::from(msg.max_pending) {
                return Err(ApiError::RateLimited {
                    message: format!(
                        "{pending} phone numbers are already waiting for their code; confirm \
                         or delete one, or wait until their codes expire"
                    ),
                    limit: msg.max_pending,
                    retry_after_seconds: msg.retry_after_seconds.max(1),
                });
            }
            telephony::insert_number(&db, &row)
                .await
                .map_err(|e| number_conflict(e, &row.phone_number))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<PhoneNumberRow, ApiError>")]
pub struct GetPhoneNumber {
    pub developer_id: DeveloperId,
    pub id: PhoneNumberId,
}

impl Handler<GetPhoneNumber> for TelephonyRegistry {
    type Result = ResponseFuture<Result<PhoneNumberRow, ApiError>>;

    fn handle(&mut self, msg: GetPhoneNumber, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            telephony::get_number(&db, &msg.developer_id, &msg.id)
                .await?
                .ok_or_else(|| ApiError::not_found("phone number", msg.id.as_str()))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<Page<PhoneNumberRow>, ApiError>")]
pub struct ListPhoneNumbers {
    pub developer_id: DeveloperId,
    pub page: PageRequest,
}

impl Handler<ListPhoneNumbers> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Page<PhoneNumberRow>, ApiError>>;

    fn handle(&mut self, msg: ListPhoneNumbers, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let dev = &msg.developer_id;
            let cursor = msg.page.cursor.as_deref();
            let after = cursor_position(cursor, async |id: PhoneNumberId| {
                telephony::number_seq(&db, dev, &id).await
            })
            .await?;
            let rows = telephony::list_numbers(&db, dev, after, msg.page.limit + 1).await?;
            Ok(Page::from_rows(rows, msg.page.limit, |row| row.id.as_str()))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<PhoneNumberRow, ApiError>")]
pub struct UpdatePhoneNumber {
    pub developer_id: DeveloperId,
    pub id: PhoneNumberId,
    pub changes: PhoneNumberChanges,
}

impl Handler<UpdatePhoneNumber> for TelephonyRegistry {
    type Result = ResponseFuture<Result<PhoneNumberRow, ApiError>>;

    fn handle(&mut self, msg: UpdatePhoneNumber, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let (dev, id) = (&msg.developer_id, &msg.id);
            let current = telephony::get_number(&db, dev, id)
                .await?
                .ok_or_else(|| ApiError::not_found("phone number", id.as_str()))?;
            let agent = msg.changes.agent_id.as_ref().unwrap_or(&current.agent_id);
            let instance = match &msg.changes.instance_id {
                Some(changed) => changed.as_ref(),
                // A new agent does not have the old agent's instance.
                None if msg.changes.agent_id.is_some() => None,
                None => current.instance_id.as_ref(),
            };
            check_target(&db, dev, agent, instance).await?;
            let mut changes = msg.changes.clone();
            if changes.agent_id.is_some() && changes.instance_id.is_none() {
                changes.instance_id = Some(None);
            }
            if changes
                .phone_number
                .as_ref()
                .is_some_and(|n| *n != current.phone_number)
            {
                return Err(ApiError::invalid(
                    "phoneNumber",
                    "a route's number cannot be changed: delete the route and add the new \
                     number, which needs its own proof",
                ));
            }
            let number = current.phone_number.clone();
            telephony::update_number(&db, dev, id, &changes)
                .await
                .map_err(|e| number_conflict(e, &number))?
                .ok_or_else(|| ApiError::not_found("phone number", id.as_str()))
        })
    }
}

/// Confirms the code texted to a pending route's number.
#[derive(Message)]
#[rtype(result = "Result<PhoneNumberRow, ApiError>")]
pub struct VerifyPhoneNumber {
    pub developer_id: DeveloperId,
    pub id: PhoneNumberId,
    /// Compares the presented code with the stored hash.
    pub matches: Box<dyn Fn(&str) -> bool + Send + Sync>,
    pub max_attempts: u32,
}

impl Handler<VerifyPhoneNumber> for TelephonyRegistry {
    type Result = ResponseFuture<Result<PhoneNumberRow, ApiError>>;

    fn handle(&mut self, msg: VerifyPhoneNumber, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let max = i32::try_from(msg.max_attempts).unwrap_or(i32::MAX);
            let checked = telephony::verify_claim(
                &db,
                &msg.developer_id,
                &msg.id,
                &*msg.matches,
                max,
                now_ms(),
            )
            .await;
            let taken = || {
                ApiError::Conflict(
                    "another developer proved this number first; it routes to them".into(),
                )
            };
            let checked = match checked {
                Ok(checked) => checked,
                Err(StoreError::Conflict(_)) => return Err(taken()),
                Err(e) => return Err(e.into()),
            };
            match checked.ok_or_else(|| ApiError::not_found("phone number", msg.id.as_str()))? {
                ClaimCheck::Verified(row) | ClaimCheck::AlreadyVerified(row) => Ok(row),
                ClaimCheck::Taken => Err(taken()),
                ClaimCheck::NoCode => Err(ApiError::invalid(
                    "code",
                    "no code is waiting for this route (it was burnt by wrong tries or \
                     expired); delete the route and add it again for a new one",
                )),
                ClaimCheck::Expired => Err(ApiError::invalid(
                    "code",
                    "the code has expired; delete the route and add it again for a new one",
                )),
                ClaimCheck::Wrong { remaining: 0 } => Err(ApiError::invalid(
                    "code",
                    "wrong code; it had too many wrong tries and no longer works",
                )),
                ClaimCheck::Wrong { remaining } => Err(ApiError::invalid(
                    "code",
                    format!(
                        "wrong code; {remaining} {} left",
                        if remaining == 1 { "try" } else { "tries" }
                    ),
                )),
            }
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct DeletePhoneNumber {
    pub developer_id: DeveloperId,
    pub id: PhoneNumberId,
}

impl Handler<DeletePhoneNumber> for TelephonyRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: DeletePhoneNumber, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            if telephony::delete_number(&db, &msg.developer_id, &msg.id).await? {
                Ok(())
            } else {
                Err(ApiError::not_found("phone number", msg.id.as_str()))
            }
        })
    }
}

/// The route of a called number (the inbound webhook's lookup, across developers).
#[derive(Message)]
#[rtype(result = "Result<Option<PhoneNumberRow>, ApiError>")]
pub struct RouteCall {
    pub number: String,
}

impl Handler<RouteCall> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Option<PhoneNumberRow>, ApiError>>;

    fn handle(&mut self, msg: RouteCall, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move { Ok(telephony::route_of(&db, &msg.number).await?) })
    }
}

#[derive(Message)]
#[rtype(result = "Result<CallTaskRow, ApiError>")]
pub struct CreateTask(pub CallTaskRow);

impl Handler<CreateTask> for TelephonyRegistry {
    type Result = ResponseFuture<Result<CallTaskRow, ApiError>>;

    fn handle(&mut self, msg: CreateTask, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move { Ok(telephony::insert_task(&db, &msg.0).await?) })
    }
}

/// A task: the developer's own, or (no developer) whoever's, for Twilio's signed callbacks.
#[derive(Message)]
#[rtype(result = "Result<CallTaskRow, ApiError>")]
pub struct GetTask {
    pub developer_id: Option<DeveloperId>,
    pub id: TaskId,
}

impl Handler<GetTask> for TelephonyRegistry {
    type Result = ResponseFuture<Result<CallTaskRow, ApiError>>;

    fn handle(&mut self, msg: GetTask, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            telephony::get_task(&db, msg.developer_id.as_ref(), &msg.id)
                .await?
                .ok_or_else(|| ApiError::not_found("task", msg.id.as_str()))
        })
    }
}

/// The outbound task a developer's call was placed as; `None` for a call that came in.
#[derive(Message)]
#[rtype(result = "Result<Option<TaskId>, ApiError>")]
pub struct TaskOfCall {
    pub developer_id: DeveloperId,
    pub call_sid: String,
}

impl Handler<TaskOfCall> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Option<TaskId>, ApiError>>;

    fn handle(&mut self, msg: TaskOfCall, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            Ok(telephony::task_of_call(&db, &msg.developer_id, &msg.call_sid).await?)
        })
    }
}

/// Changes a task that has not ended; `None` if it has.
#[derive(Message)]
#[rtype(result = "Result<Option<CallTaskRow>, ApiError>")]
pub struct UpdateTask {
    pub id: TaskId,
    pub changes: TaskChanges,
}

impl Handler<UpdateTask> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Option<CallTaskRow>, ApiError>>;

    fn handle(&mut self, msg: UpdateTask, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move { Ok(telephony::update_task(&db, &msg.id, &msg.changes).await?) })
    }
}

/// The first connect of a task claims it for a session; `None` when a connect already did (a
/// replay) or the task has ended.
#[derive(Message)]
#[rtype(result = "Result<Option<CallTaskRow>, ApiError>")]
pub struct ClaimTaskConnect {
    pub id: TaskId,
    pub session_id: SessionId,
}

impl Handler<ClaimTaskConnect> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Option<CallTaskRow>, ApiError>>;

    fn handle(&mut self, msg: ClaimTaskConnect, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            Ok(telephony::claim_connect(&db, &msg.id, &msg.session_id, now_ms()).await?)
        })
    }
}

/// The answering machine's verdict on a task and the action taken on it, recorded once;
/// `None` when the task already has a verdict (a repeated callback).
#[derive(Message)]
#[rtype(result = "Result<Option<CallTaskRow>, ApiError>")]
pub struct ClaimVerdict {
    pub id: TaskId,
    pub answered_by: String,
    pub action: String,
}

impl Handler<ClaimVerdict> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Option<CallTaskRow>, ApiError>>;

    fn handle(&mut self, msg: ClaimVerdict, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            Ok(
                telephony::claim_verdict(&db, &msg.id, &msg.answered_by, &msg.action, now_ms())
                    .await?,
            )
        })
    }
}

/// Takes back a claimed verdict whose action failed (Twilio could not be asked to act).
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct ReleaseVerdict {
    pub id: TaskId,
    pub answered_by: String,
}

impl Handler<ReleaseVerdict> for TelephonyRegistry {
    type Result = ResponseFuture<Result<bool, ApiError>>;

    fn handle(&mut self, msg: ReleaseVerdict, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move { Ok(telephony::release_verdict(&db, &msg.id, &msg.answered_by).await?) },
        )
    }
}

/// A status callback: applied when newer than the last one applied; `None` if stale.
#[derive(Message)]
#[rtype(result = "Result<Option<CallTaskRow>, ApiError>")]
pub struct AdvanceTask {
    pub id: TaskId,
    pub sequence: i64,
    pub changes: TaskChanges,
}

impl Handler<AdvanceTask> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Option<CallTaskRow>, ApiError>>;

    fn handle(&mut self, msg: AdvanceTask, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            Ok(telephony::advance_task(&db, &msg.id, msg.sequence, &msg.changes).await?)
        })
    }
}

impl Handler<StartRecording> for TelephonyRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: StartRecording, _: &mut Context<Self>) -> Self::Result {
        let (db, node) = (self.db.clone(), self.node_id.clone());
        Box::pin(async move {
            if let Err(e) = telephony::insert_recording(&db, &msg.0, &node).await {
                tracing::error!(recording = %msg.0.id, "could not record a recording's start: {e}");
            }
        })
    }
}

impl Handler<RecordingFinished> for TelephonyRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: RecordingFinished, _: &mut Context<Self>) -> Self::Result {
        let (db, storage) = (self.db.clone(), self.storage.clone());
        Box::pin(async move {
            let _hold = msg.hold;
            let row = msg.row;
            let end = match msg.result {
                Ok(written) => {
                    if written.dropped_frames > 0 {
                        tracing::warn!(recording = %row.id, dropped = written.dropped_frames, "recording finished with dropped frames");
                    }
                    let (kind, location) = match storage.publish(&row.location).await {
                        Ok(published) => published,
                        Err(e) => {
                            tracing::error!(recording = %row.id, "kept locally: {e}");
                            (
                                crate::recording::storage::LOCAL.into(),
                                row.location.clone(),
                            )
                        }
                    };
                    RecordingEnd {
                        status: RecordingStatus::Completed,
                        storage: kind,
                        location,
                        bytes: written.bytes as i64,
                        duration_ms: written.duration_ms,
                        completed_at: Some(now_ms()),
                    }
                }
                Err(e) => {
                    tracing::error!(recording = %row.id, "recording failed: {e}");
                    if let Err(e) = storage.remove_partial(&row.location).await {
                        tracing::warn!(recording = %row.id, "could not remove the partial file: {e}");
                    }
                    RecordingEnd {
                        status: RecordingStatus::Failed,
                        storage: row.storage.clone(),
                        location: row.location.clone(),
                        bytes: 0,
                        duration_ms: 0,
                        completed_at: Some(now_ms()),
                    }
                }
            };
            if let Err(e) = telephony::complete_recording(&db, &row, &end).await {
                tracing::error!(recording = %row.id, "could not record a recording's end: {e}");
            }
        })
    }
}

/// The developer's recording of a call (Twilio call SID) or session (id).
#[derive(Message)]
#[rtype(result = "Result<RecordingRow, ApiError>")]
pub struct GetRecording {
    pub developer_id: DeveloperId,
    /// A Twilio call SID or a session id, as the caller gave it: text, since it is either.
    pub call_id: String,
}

impl Handler<GetRecording> for TelephonyRegistry {
    type Result = ResponseFuture<Result<RecordingRow, ApiError>>;

    fn handle(&mut self, msg: GetRecording, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            telephony::recording_of(&db, &msg.developer_id, &msg.call_id)
                .await?
                .ok_or_else(|| ApiError::not_found("recording of call", &msg.call_id))
        })
    }
}

/// Where an agent lives on an outside platform, if it was synced there.
#[derive(Message)]
#[rtype(result = "Result<Option<AgentSyncRow>, ApiError>")]
pub struct GetAgentSync {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub provider: String,
}

impl Handler<GetAgentSync> for TelephonyRegistry {
    type Result = ResponseFuture<Result<Option<AgentSyncRow>, ApiError>>;

    fn handle(&mut self, msg: GetAgentSync, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            Ok(telephony::get_sync(&db, &msg.developer_id, &msg.agent_id, &msg.provider).await?)
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct SaveAgentSync(pub AgentSyncRow);

impl Handler<SaveAgentSync> for TelephonyRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: SaveAgentSync, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move { Ok(telephony::save_sync(&db, &msg.0).await?) })
    }
}

/// An outbound call ended before its stream connected: its pending session ends too.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EndUnconnectedSession {
    pub session_id: SessionId,
    pub reason: String,
}

impl Handler<EndUnconnectedSession> for TelephonyRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: EndUnconnectedSession, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            if let Err(e) =
                telephony::end_unconnected_session(&db, &msg.session_id, &msg.reason, now_ms())
                    .await
            {
                tracing::error!(session = %msg.session_id, "could not end a session: {e}");
            }
        })
    }
}
