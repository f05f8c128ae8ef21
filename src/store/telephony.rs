//! Queries of telephony operations: the phone-number routing table, outbound call tasks,
//! call recordings and agents' copies on outside platforms.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::{agent_syncs, call_tasks, phone_numbers, recordings, sessions};
use super::sessions::SessionStatus;
pub use super::status::{RecordingStatus, TaskStatus};
use super::{Db, StoreResult};
use crate::ids::{
    AgentId, DeveloperId, InstanceId, KeyId, NodeId, PhoneNumberId, RecordingId, SessionId, TaskId,
};
use crate::{db_run, db_tx};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = phone_numbers)]
pub struct PhoneNumberRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: PhoneNumberId,
    pub developer_id: DeveloperId,
    /// E.164, unique across the service.
    pub phone_number: String,
    pub agent_id: AgentId,
    pub instance_id: Option<InstanceId>,
    pub name: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// When the developer proved the number is theirs; `None` while the route is pending
    /// (it takes no calls and is no caller id).
    pub verified_at: Option<i64>,
    /// The keyed hash of the code texted to the number, while one is live.
    pub code_hash: Option<String>,
    pub code_expires_at: Option<i64>,
    pub code_attempts: i32,
}

/// What checking a claim's code came to.
#[derive(Debug)]
pub enum ClaimCheck {
    Verified(PhoneNumberRow),
    /// The route was already verified: nothing changed.
    AlreadyVerified(PhoneNumberRow),
    NoCode,
    Expired,
    Wrong {
        remaining: i32,
    },
    /// Another developer proved the number first.
    Taken,
}

/// The columns an update may change; `None` leaves one as it is.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = phone_numbers)]
pub struct PhoneNumberChanges {
    pub phone_number: Option<String>,
    pub agent_id: Option<AgentId>,
    pub instance_id: Option<Option<InstanceId>>,
    pub name: Option<Option<String>>,
    pub updated_at: i64,
}

store_fns! {
    table = phone_numbers, row = PhoneNumberRow;

    insert pub fn insert_number(row: &PhoneNumberRow);

    get pub fn get_number(developer: &DeveloperId, id: &PhoneNumberId)
        where developer_id.eq(developer), id.eq(id);

    /// The verified route of a called number, whoever owns it (the inbound webhook's lookup
    /// and the owner of an outbound caller id). Pending claims are not routes.
    get pub fn route_of(number: &str) where phone_number.eq(number), verified_at.is_not_null();

    list pub fn list_numbers(developer: &DeveloperId) where developer_id.eq(developer);

    seq pub fn number_seq(developer: &DeveloperId, id: &PhoneNumberId)
        where developer_id.eq(developer), id.eq(id);

    update pub fn update_number(developer: &DeveloperId, id: &PhoneNumberId, changes: &PhoneNumberChanges)
        set (changes)
        where developer_id.eq(developer), id.eq(id);

    delete pub fn delete_number(developer: &DeveloperId, id: &PhoneNumberId)
        where developer_id.eq(developer), id.eq(id);
}

/// How many of the developer's routes are still waiting for their code.
pub async fn pending_claims(db: &Db, developer: &DeveloperId, now: i64) -> StoreResult<i64> {
    db_run!(db, |conn| {
        Ok(phone_numbers::table
            .filter(phone_numbers::developer_id.eq(developer))
            .filter(phone_numbers::verified_at.is_null())
            .filter(phone_numbers::code_expires_at.gt(now))
            .count()
            .get_result(conn)
            .await?)
    })
}

/// Checks a code presented for the developer's route `id` (`matches` compares it with the
/// stored hash). A wrong code counts a try and the `max_attempts`-th burns the code; the
/// right one verifies the route, unless another developer verified the number first.
pub async fn verify_claim(
    db: &Db,
    developer: &DeveloperId,
    id: &PhoneNumberId,
    matches: &(dyn Fn(&str) -> bool + Sync),
    max_attempts: i32,
    now: i64,
) -> StoreResult<Option<ClaimCheck>> {
    db_tx!(db, |conn| {
        let row: Option<PhoneNumberRow> = phone_numbers::table
            .filter(phone_numbers::developer_id.eq(developer))
            .filter(phone_numbers::id.eq(id))
            .select(PhoneNumberRow::as_select())
            .first(conn)
            .await
            .optional()?;
        let Some(row) = row else {
            return Ok(None);
        };
        if row.verified_at.is_some() {
            return Ok(Some(ClaimCheck::AlreadyVerified(row)));
        }
        let this = phone_numbers::table.filter(phone_numbers::seq.eq(row.seq));
        let (Some(hash), Some(expires_at)) = (&row.code_hash, row.code_expires_at) else {
            return Ok(Some(ClaimCheck::NoCode));
        };
        if expires_at <= now {
            diesel::update(this)
                .set(phone_numbers::code_hash.eq(None::<String>))
                .execute(conn)
                .await?;
            return Ok(Some(ClaimCheck::Expired));
        }
        if !matches(hash) {
            let attempts = row.code_attempts + 1;
            let burnt = attempts >= max_attempts;
            diesel::update(this)
                .set((
                    phone_numbers::code_attempts.eq(attempts),
                    phone_numbers::code_hash.eq(if burnt { None } else { Some(hash.clone()) }),
                ))
                .execute(conn)
                .await?;
            return Ok(Some(ClaimCheck::Wrong {
                remaining: (max_attempts - attempts).max(0),
            }));
        }
        let taken: i64 = phone_numbers::table
            .filter(phone_numbers::phone_number.eq(&row.phone_number))
            .filter(phone_numbers::verified_at.is_not_null())
            .count()
            .get_result(conn)
            .await?;
        if taken > 0 {
            return Ok(Some(ClaimCheck::Taken));
        }
        let verified = diesel::update(this)
            .set((
                phone_numbers::verified_at.eq(Some(now)),
                phone_numbers::code_hash.eq(None::<String>),
                phone_numbers::updated_at.eq(now),
            ))
            .returning(PhoneNumberRow::as_returning())
            .get_result(conn)
            .await?;
        Ok(Some(ClaimCheck::Verified(verified)))
    })
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = call_tasks)]
pub struct CallTaskRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: TaskId,
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub instance_id: Option<InstanceId>,
    pub to_number: String,
    pub from_number: String,
    pub status: TaskStatus,
    pub call_sid: Option<String>,
    pub session_id: Option<SessionId>,
    pub record: bool,
    pub last_sequence: i64,
    pub duration_seconds: Option<i64>,
    pub error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The API key that placed the call; its stream is refused once the key is revoked.
    pub key_id: Option<KeyId>,
    /// Answering-machine detection asked for: `off`, `hangup` or `message`
    /// (see `crate::live::voicemail`).
    pub machine_detection: String,
    /// The message left after the beep, in `message` mode.
    pub voicemail_message: Option<String>,
    /// Twilio's verdict (`AnsweredBy`), once it arrived.
    pub answered_by: Option<String>,
    /// What was done about the verdict: `none`, `hung_up` or `left_message`.
    pub machine_action: Option<String>,
    /// The variables the call's agent is given (a campaign contact's), a JSON object.
    pub variables: Option<String>,
}

/// What a task's progress changes.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = call_tasks)]
pub struct TaskChanges {
    pub status: Option<TaskStatus>,
    pub call_sid: Option<Option<String>>,
    pub session_id: Option<Option<SessionId>>,
    pub last_sequence: Option<i64>,
    pub duration_seconds: Option<Option<i64>>,
    pub error: Option<Option<String>>,
    pub updated_at: i64,
}

store_fns! {
    table = call_tasks, row = CallTaskRow;

    insert pub fn insert_task(row: &CallTaskRow);

    /// Applies `changes` unless the task has already ended; answers the task as it is after.
    update pub fn update_task(id: &TaskId, changes: &TaskChanges)
        set (changes)
        where id.eq(id), status.ne_all(TaskStatus::TERMINAL);

    /// Marks the task as connected to `session_id`, once: only a live task that no connect
    /// has reached yet is changed, so a replayed connect webhook finds `None`.
    update pub fn claim_connect(id: &TaskId, session_id: &SessionId, updated_at: i64)
        set ((
            call_tasks::session_id.eq(Some(session_id)),
            call_tasks::updated_at.eq(updated_at),
        ))
        where id.eq(id), session_id.is_null(), status.ne_all(TaskStatus::TERMINAL);

    /// Records a status callback: applied only if its sequence number is newer than the last
    /// one applied and the task has not ended (Twilio does not promise arrival order).
    update pub fn advance_task(id: &TaskId, sequence: i64, changes: &TaskChanges)
        set (changes)
        where id.eq(id), last_sequence.lt(sequence), status.ne_all(TaskStatus::TERMINAL);

    /// Records the answering machine's verdict on a task and what is done about it, once:
    /// only a task with no verdict yet changes, so a repeated callback finds `None`.
    update pub fn claim_verdict(id: &TaskId, verdict: &str, action: &str, updated_at: i64)
        set ((
            call_tasks::answered_by.eq(Some(verdict)),
            call_tasks::machine_action.eq(Some(action)),
            call_tasks::updated_at.eq(updated_at),
        ))
        where id.eq(id), answered_by.is_null();

    /// Gives up a verdict claimed by [`claim_verdict`] whose action could not be carried out,
    /// so that the task shows no verdict and Twilio's retry can act on it.
    mark pub fn release_verdict(id: &TaskId, verdict: &str)
        set ((
            call_tasks::answered_by.eq(None::<String>),
            call_tasks::machine_action.eq(None::<String>),
        ))
        where id.eq(id), answered_by.eq(verdict);
}

/// A task by id: the developer's own, or (`developer` = `None`) whoever's, for Twilio's
/// callbacks, which are proven by their signature instead of a key.
pub async fn get_task(
    db: &Db,
    developer: Option<&DeveloperId>,
    id: &TaskId,
) -> StoreResult<Option<CallTaskRow>> {
    db_run!(db, |conn| {
        let mut query = call_tasks::table.filter(call_tasks::id.eq(id)).into_boxed();
        if let Some(developer) = developer {
            query = query.filter(call_tasks::developer_id.eq(developer.clone()));
        }
        Ok(query
            .select(CallTaskRow::as_select())
            .first(conn)
            .await
            .optional()?)
    })
}

/// The id of the outbound task `developer`'s call `call_sid` was placed as, if it was one.
pub async fn task_of_call(
    db: &Db,
    developer: &DeveloperId,
    call_sid: &str,
) -> StoreResult<Option<TaskId>> {
    db_run!(db, |conn| {
        Ok(call_tasks::table
            .filter(call_tasks::developer_id.eq(developer))
            .filter(call_tasks::call_sid.eq(call_sid))
            .select(call_tasks::id)
            .first::<TaskId>(conn)
            .await
            .optional()?)
    })
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = recordings)]
pub struct RecordingRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: RecordingId,
    pub developer_id: DeveloperId,
    pub session_id: SessionId,
    pub call_sid: Option<String>,
    pub sample_rate: i32,
    pub status: RecordingStatus,
    /// `local` or `s3`.
    pub storage: String,
    /// The file name under the recordings dir, or the object key.
    pub location: String,
    pub bytes: i64,
    pub duration_ms: i64,
    pub created_at: i64,
    pub completed_at: Option<i64>,
}

/// The end of a recording.
#[derive(Debug, Clone, AsChangeset)]
#[diesel(table_name = recordings)]
pub struct RecordingEnd {
    pub status: RecordingStatus,
    pub storage: String,
    pub location: String,
    pub bytes: i64,
    pub duration_ms: i64,
    pub completed_at: Option<i64>,
}

/// Records a recording's start by `node`, the node writing it; nothing if its end was
/// recorded first (a very short call).
pub async fn insert_recording(db: &Db, row: &RecordingRow, node: &NodeId) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::insert_into(recordings::table)
            .values((row, recordings::node_id.eq(Some(node))))
            .on_conflict(recordings::id)
            .do_nothing()
            .execute(conn)
            .await?;
        Ok(())
    })
}

/// At a node's start: the recordings its previous process was still writing when it died
/// can never be finished; they become `failed`. Answers their locations, so that their
/// partial files can be removed (a failed recording is not kept).
pub async fn fail_abandoned_recordings(
    db: &Db,
    node: &NodeId,
    at: i64,
) -> StoreResult<Vec<String>> {
    db_run!(db, |conn| {
        Ok(diesel::update(
            recordings::table
                .filter(recordings::node_id.eq(node))
                .filter(recordings::status.eq(RecordingStatus::Recording)),
        )
        .set((
            recordings::status.eq(RecordingStatus::Failed),
            recordings::completed_at.eq(Some(at)),
        ))
        .returning(recordings::location)
        .get_results(conn)
        .await?)
    })
}

/// Records a recording's end, inserting the whole record if its start has not arrived yet.
pub async fn complete_recording(
    db: &Db,
    row: &RecordingRow,
    end: &RecordingEnd,
) -> StoreResult<()> {
    db_run!(db, |conn| {
        let updated = diesel::update(recordings::table.filter(recordings::id.eq(&row.id)))
            .set(end)
            .execute(conn)
            .await?;
        if updated == 0 {
            let mut complete = row.clone();
            complete.status = end.status;
            complete.storage = end.storage.clone();
            complete.location = end.location.clone();
            complete.bytes = end.bytes;
            complete.duration_ms = end.duration_ms;
            complete.completed_at = end.completed_at;
            diesel::insert_into(recordings::table)
                .values(&complete)
                .on_conflict(recordings::id)
                .do_update()
                .set(end)
                .execute(conn)
                .await?;
        }
        Ok(())
    })
}

store_fns! {
    table = recordings, row = RecordingRow;

    /// The developer's latest recording of a call (by Twilio call SID) or session (by id).
    /// `call` stays text: it may be either, so it is no one kind of id.
    latest pub fn recording_of(developer: &DeveloperId, call: &str)
        where developer_id.eq(developer), call_sid.eq(call).or(recordings::session_id.eq(call));
}

/// Finished recordings created before `before` (oldest first), for the retention sweep.
pub async fn expired_recordings(
    db: &Db,
    before: i64,
    limit: i64,
) -> StoreResult<Vec<RecordingRow>> {
    db_run!(db, |conn| {
        Ok(recordings::table
            .filter(recordings::created_at.lt(before))
            .filter(recordings::status.ne(RecordingStatus::Recording))
            .order(recordings::seq.asc())
            .limit(limit)
            .select(RecordingRow::as_select())
            .load(conn)
            .await?)
    })
}

pub async fn delete_recording(db: &Db, id: &RecordingId) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::delete(recordings::table.filter(recordings::id.eq(id)))
            .execute(conn)
            .await?;
        Ok(())
    })
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = agent_syncs)]
pub struct AgentSyncRow {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub provider: String,
    pub external_agent_id: String,
    pub synced_at: i64,
}

store_fns! {
    table = agent_syncs, row = AgentSyncRow;

    get pub fn get_sync(developer: &DeveloperId, agent: &AgentId, provider: &str)
        where developer_id.eq(developer), agent_id.eq(agent), provider.eq(provider);
}

/// Stores where the agent lives on the platform (inserted on the first sync, then updated).
pub async fn save_sync(db: &Db, row: &AgentSyncRow) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::insert_into(agent_syncs::table)
            .values(row)
            .on_conflict((
                agent_syncs::developer_id,
                agent_syncs::agent_id,
                agent_syncs::provider,
            ))
            .do_update()
            .set((
                agent_syncs::external_agent_id.eq(&row.external_agent_id),
                agent_syncs::synced_at.eq(row.synced_at),
            ))
            .execute(conn)
            .await?;
        Ok(())
    })
}

store_fns! {
    table = sessions, row = SessionRow;

    /// Ends a phone session whose stream never connected (the outbound call was not
    /// answered): `failed` with the call's final status as the reason. Sessions that
    /// connected are ended by their stream.
    mark pub fn end_unconnected_session(session: &SessionId, reason: &str, at: i64)
        set ((
            sessions::status.eq(SessionStatus::Failed),
            sessions::end_reason.eq(Some(reason)),
            sessions::ended_at.eq(Some(at)),
        ))
        where id.eq(session), status.eq(SessionStatus::Pending);
}
