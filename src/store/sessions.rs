//! Queries on real-time session records and their turns.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::session_tool_calls as tool_calls;
use super::schema::{session_analyses as analyses, session_events as events};
use super::schema::{session_turns as turns, sessions};
pub use super::status::{AnalysisStatus, SessionStatus};
use super::{Db, StoreResult};
use crate::ids::{AgentId, DeveloperId, InstanceId, NodeId, SessionId};
use crate::{db_run, db_snapshot, db_tx};

/// Event kind: caller speech in which the recogniser found no words.
pub const EVENT_UNRECOGNISED_SPEECH: &str = "unrecognised_speech";
/// The integrator hung the call up (`POST /v1/sessions/twilio/{callSid}/hangup`).
pub const EVENT_HANGUP_REQUESTED: &str = "hangup_requested";
/// The agent hung the call up after its goodbye (its `end_call` tool).
pub const EVENT_AGENT_HUNG_UP: &str = "agent_hung_up";
/// The call was handed to a person; detail `{name, number, mode, by, outcome}`.
pub const EVENT_TRANSFER: &str = "transfer";
/// The agent pressed keys on the call; detail `{digits}`.
pub const EVENT_KEYPAD: &str = "keypad";
/// An outbound call's answering-machine verdict and what was done about it; detail
/// `{answeredBy, action, detectionMs}`.
pub const EVENT_MACHINE_DETECTION: &str = "machine_detection";

/// The post-call analysis of a session whose agent asks for one.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = analyses)]
pub struct AnalysisRow {
    pub session_id: SessionId,
    pub developer_id: DeveloperId,
    /// Running, completed (at least one part answered) or failed (no part could be).
    pub status: AnalysisStatus,
    pub summary: Option<String>,
    pub success: Option<bool>,
    pub success_reason: Option<String>,
    /// The extracted fields, a JSON object.
    pub data: Option<String>,
    /// A JSON array of what could not be answered.
    pub errors: String,
    /// The language model's provider that answered.
    pub provider: Option<String>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub created_at: i64,
    pub completed_at: Option<i64>,
}

/// What a finished analysis sets.
#[derive(Debug, Clone, AsChangeset)]
#[diesel(table_name = analyses)]
pub struct AnalysisResult {
    pub status: AnalysisStatus,
    pub summary: Option<String>,
    pub success: Option<bool>,
    pub success_reason: Option<String>,
    pub data: Option<String>,
    pub errors: String,
    pub provider: Option<String>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub completed_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = sessions)]
pub struct SessionRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: SessionId,
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    /// `twilio` or `direct`.
    pub transport: String,
    pub call_sid: Option<String>,
    pub from_number: Option<String>,
    pub to_number: Option<String>,
    pub instance_id: Option<InstanceId>,
    pub status: SessionStatus,
    pub turn_count: i32,
    pub tool_executions: i32,
    pub total_duration_ms: i64,
    pub avg_turn_latency_ms: i64,
    pub end_reason: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
}

impl SessionRow {
    /// A new session's record, nothing counted yet: `pending` (a phone session waiting for
    /// its media stream) or `active` (started now). Who called whom, the call and the
    /// instance are filled in by the caller where it knows them.
    pub fn new(
        id: &SessionId,
        developer_id: &DeveloperId,
        agent_id: &AgentId,
        transport: &str,
        status: SessionStatus,
        now: i64,
    ) -> Self {
        Self {
            seq: 0,
            id: id.clone(),
            developer_id: developer_id.clone(),
            agent_id: agent_id.clone(),
            transport: transport.to_string(),
            call_sid: None,
            from_number: None,
            to_number: None,
            instance_id: None,
            status,
            turn_count: 0,
            tool_executions: 0,
            total_duration_ms: 0,
            avg_turn_latency_ms: 0,
            end_reason: None,
            created_at: now,
            started_at: (status == SessionStatus::Active).then_some(now),
            ended_at: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = turns)]
pub struct TurnRow {
    pub session_id: SessionId,
    pub turn_index: i32,
    /// `user` or `agent`.
    pub speaker: String,
    pub text: String,
    pub start_ms: i64,
    pub end_ms: i64,
    pub stt_ms: i64,
    pub llm_ms: i64,
    pub tts_ms: i64,
    /// End of caller speech to first agent audio, for agent turns that answered a caller.
    pub latency_ms: Option<i64>,
    pub interrupted: bool,
    pub error: Option<String>,
    /// Caller turns: how their end was decided (`vad`, `stt`, `text`).
    pub endpoint: Option<String>,
    /// Agent replies to the caller: the rest of the latency breakdown.
    pub endpoint_ms: Option<i64>,
    pub tool_ms: Option<i64>,
    pub platform_ms: Option<i64>,
    /// The provider that served each stage this turn ran (a fallback when the agent's own
    /// failed); `None` where the stage did not run or nothing served.
    pub stt_provider: Option<String>,
    pub llm_provider: Option<String>,
    pub tts_provider: Option<String>,
    /// Interrupted agent turns: how the interruption went.
    pub barge_in_detection_ms: Option<i64>,
    pub barge_in_stop_ms: Option<i64>,
    pub bleed_through: Option<String>,
    pub barge_in_requested: Option<bool>,
}

#[cfg(test)]
impl TurnRow {
    /// A turn of `speaker` with no timings, text or outcome, for tests to fill in.
    pub fn blank(session_id: &str, turn_index: i32, speaker: &str) -> Self {
        TurnRow {
            session_id: session_id.into(),
            turn_index,
            speaker: speaker.into(),
            text: String::new(),
            start_ms: 0,
            end_ms: 0,
            stt_ms: 0,
            llm_ms: 0,
            tts_ms: 0,
            latency_ms: None,
            interrupted: false,
            error: None,
            endpoint: None,
            endpoint_ms: None,
            tool_ms: None,
            platform_ms: None,
            stt_provider: None,
            llm_provider: None,
            tts_provider: None,
            barge_in_detection_ms: None,
            barge_in_stop_ms: None,
            bleed_through: None,
            barge_in_requested: None,
        }
    }
}

/// A tool call an agent turn made.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = tool_calls)]
pub struct ToolCallRow {
    pub session_id: SessionId,
    pub turn_index: i32,
    pub call_id: String,
    pub name: String,
    /// JSON text of the arguments, as the model wrote them.
    pub arguments: String,
    pub output: String,
    pub is_error: bool,
    pub duration_ms: i64,
}

/// Something a session noticed that is no turn (see [`EVENT_UNRECOGNISED_SPEECH`]).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = events)]
pub struct EventRow {
    pub session_id: SessionId,
    pub kind: String,
    /// For unrecognised speech that interrupted the agent: the interrupted turn.
    pub turn_index: Option<i32>,
    pub start_ms: i64,
    pub end_ms: i64,
    /// JSON about a call event (a transfer's target and outcome, the digits pressed).
    pub detail: Option<String>,
}

impl EventRow {
    /// A call event of `kind` on `session` happening now (timed from the session's start, or
    /// its creation while it waits for its stream), with its JSON detail.
    pub fn call(session: &SessionRow, kind: &str, detail: Option<String>) -> EventRow {
        let at_ms = crate::time::now_ms() - session.started_at.unwrap_or(session.created_at);
        EventRow {
            session_id: session.id.clone(),
            kind: kind.to_string(),
            turn_index: None,
            start_ms: at_ms.max(0),
            end_ms: at_ms.max(0),
            detail,
        }
    }
}

/// One interruption of an agent turn, for aggregates over sessions.
#[derive(Debug, Clone, PartialEq, Queryable)]
pub struct InterruptionRow {
    pub session_id: SessionId,
    pub turn_index: i32,
    pub detection_ms: Option<i64>,
    pub stop_ms: Option<i64>,
    pub bleed_through: Option<String>,
    pub requested: Option<bool>,
}

/// Records a new session. `node` is the node that runs it (for a session that starts
/// active); a pending session gets its node when a stream claims it ([`activate`]).
pub async fn insert(db: &Db, row: &SessionRow, node: Option<&NodeId>) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::insert_into(sessions::table)
            .values((row, sessions::node_id.eq(node)))
            .execute(conn)
            .await?;
        Ok(())
    })
}

store_fns! {
    table = sessions, row = SessionRow;

    /// Moves a pending session to active (its stream connected) on `node`, once. Answers the
    /// session when this call claimed it; `None` if it is unknown or was already claimed.
    update pub fn activate(id: &SessionId, call_sid: Option<&str>, node: &NodeId, at: i64)
        set ((
            sessions::status.eq(SessionStatus::Active),
            sessions::call_sid.eq(call_sid),
            sessions::started_at.eq(Some(at)),
            sessions::node_id.eq(Some(node)),
        ))
        where id.eq(id), status.eq(SessionStatus::Pending);

    get pub fn get(developer: &DeveloperId, id: &SessionId) where developer_id.eq(developer), id.eq(id);

    /// A session of any developer (for a webhook that names it).
    get pub fn by_id(id: &SessionId) where id.eq(id);

    /// The developer's latest session for a Twilio call SID.
    latest pub fn by_call_sid(developer: &DeveloperId, call_sid: &str)
        where developer_id.eq(developer), call_sid.eq(call_sid);

    seq pub fn seq_of(developer: &DeveloperId, id: &SessionId) where developer_id.eq(developer), id.eq(id);
}

store_fns! {
    table = analyses, row = AnalysisRow;

    /// Records that a session's analysis started (`pending`).
    insert pub fn insert_analysis(row: &AnalysisRow);

    /// Stores what a session's analysis came to.
    update pub fn finish_analysis(session: &SessionId, result: &AnalysisResult)
        set (result)
        where session_id.eq(session);
}

store_fns! {
    table = events, row = EventRow;

    /// Sets the detail of the session's events of `kind` (a transfer's outcome, once known).
    mark pub fn settle_events(session: &SessionId, kind: &str, detail: &str)
        set (events::detail.eq(Some(detail)))
        where session_id.eq(session), kind.eq(kind);
}

/// A record write from a live session (see [`write_records`]).
// Most writes are turns: boxing them would add an allocation each and save no memory.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum RecordWrite {
    /// A finished turn; the session's turn count goes up by one.
    Turn(TurnRow),
    /// The tool calls of one agent turn.
    ToolCalls(Vec<ToolCallRow>),
    /// A session event.
    Event(EventRow),
    /// The session ended, with its summary.
    End {
        session_id: SessionId,
        end: SessionEnd,
    },
}

impl RecordWrite {
    /// The session the write belongs to, for logs.
    pub fn session_id(&self) -> &str {
        match self {
            RecordWrite::Turn(row) => row.session_id.as_str(),
            RecordWrite::ToolCalls(rows) => {
                rows.iter().next().map_or("", |r| r.session_id.as_str())
            }
            RecordWrite::Event(row) => row.session_id.as_str(),
            RecordWrite::End { session_id, .. } => session_id.as_str(),
        }
    }
}

/// The statements of `$writes`, in order, on `$conn`; `$($wait)*` is `.await` for an async
/// connection and nothing for a blocking one, so both backends run the same statements.
macro_rules! record_statements {
    ($conn:ident, $writes:expr, $($wait:tt)*) => {
        for write in $writes {
            match write {
                RecordWrite::Turn(row) => {
                    diesel::insert_into(turns::table)
                        .values(row)
                        .execute($conn)
                        $($wait)*?;
                    diesel::update(sessions::table.filter(sessions::id.eq(&row.session_id)))
                        .set(sessions::turn_count.eq(sessions::turn_count + 1))
                        .execute($conn)
                        $($wait)*?;
                }
                RecordWrite::ToolCalls(rows) => {
                    for row in rows {
                        diesel::insert_into(tool_calls::table)
                            .values(row)
                            .execute($conn)
                            $($wait)*?;
                    }
                }
                RecordWrite::Event(row) => {
                    diesel::insert_into(events::table)
                        .values(row)
                        .execute($conn)
                        $($wait)*?;
                }
                RecordWrite::End { session_id, end } => {
                    diesel::update(sessions::table.filter(sessions::id.eq(session_id)))
                        .set(end)
                        .execute($conn)
                        $($wait)*?;
                }
            }
        }
    };
}

/// Record writes on a blocking SQLite connection.
mod blocking {
    use diesel::prelude::*;

    use super::super::schema::{session_events as events, session_tool_calls as tool_calls};
    use super::super::schema::{session_turns as turns, sessions};
    use super::RecordWrite;

    pub fn write(conn: &mut SqliteConnection, writes: &[RecordWrite]) -> QueryResult<()> {
        record_statements!(conn, writes,);
        Ok(())
    }
}

/// Applies `writes` in order, in one transaction: all of them or none. On SQLite the whole
/// transaction runs in one trip to a blocking thread, which shares the writes rather than
/// copying them.
pub async fn write_records(db: &Db, writes: Arc<[RecordWrite]>) -> StoreResult<()> {
    if writes.is_empty() {
        return Ok(());
    }
    match db {
        Db::Sqlite { pool, write_lock } => {
            super::sqlite_transaction_in_one_trip(pool, write_lock, move |conn| {
                blocking::write(conn, &writes)
            })
            .await
        }
        Db::Postgres { .. } => db_tx!(db, |conn| {
            record_statements!(conn, writes.iter(), .await);
            Ok(())
        }),
    }
}

/// Which of a developer's sessions an aggregate covers: one agent's or all, started within
/// `[from, to)` (epoch ms; open ends when `None`). Sessions never connected are left out.
#[derive(Debug, Clone)]
pub struct SessionScope {
    pub developer_id: DeveloperId,
    pub agent_id: Option<AgentId>,
    pub from: Option<i64>,
    pub to: Option<i64>,
}

macro_rules! scoped_sessions {
    ($scope:expr) => {{
        let scope = $scope;
        let mut query = sessions::table
            .filter(sessions::developer_id.eq(scope.developer_id.clone()))
            .filter(sessions::status.ne(SessionStatus::Pending))
            .into_boxed();
        if let Some(agent) = &scope.agent_id {
            query = query.filter(sessions::agent_id.eq(agent.clone()));
        }
        if let Some(from) = scope.from {
            query = query.filter(sessions::started_at.ge(from));
        }
        if let Some(to) = scope.to {
            query = query.filter(sessions::started_at.lt(to));
        }
        query
    }};
}

/// How many sessions `scope` covers.
pub async fn count_in_scope(db: &Db, scope: &SessionScope) -> StoreResult<i64> {
    db_run!(db, |conn| {
        Ok(scoped_sessions!(scope).count().get_result(conn).await?)
    })
}

/// Every interrupted agent turn of the sessions in `scope`, with its interruption record.
pub async fn interruptions_in_scope(
    db: &Db,
    scope: &SessionScope,
) -> StoreResult<Vec<InterruptionRow>> {
    db_run!(db, |conn| {
        Ok(turns::table
            .filter(turns::session_id.eq_any(scoped_sessions!(scope).select(sessions::id)))
            .filter(turns::interrupted.eq(true))
            .order(turns::seq.asc())
            .select((
                turns::session_id,
                turns::turn_index,
                turns::barge_in_detection_ms,
                turns::barge_in_stop_ms,
                turns::bleed_through,
                turns::barge_in_requested,
            ))
            .load(conn)
            .await?)
    })
}

/// The (session, turn) pairs of false barge-ins (interrupting speech with no words) in
/// `scope`.
pub async fn false_barge_ins_in_scope(
    db: &Db,
    scope: &SessionScope,
) -> StoreResult<Vec<(String, i32)>> {
    db_run!(db, |conn| {
        let rows: Vec<(String, Option<i32>)> = events::table
            .filter(events::session_id.eq_any(scoped_sessions!(scope).select(sessions::id)))
            .filter(events::kind.eq(EVENT_UNRECOGNISED_SPEECH))
            .filter(events::turn_index.is_not_null())
            .select((events::session_id, events::turn_index))
            .load(conn)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(session, turn)| turn.map(|t| (session, t)))
            .collect())
    })
}

/// The end of a session, with its summary figures.
#[derive(Debug, Clone, AsChangeset)]
#[diesel(table_name = sessions)]
pub struct SessionEnd {
    pub status: SessionStatus,
    pub tool_executions: i32,
    pub total_duration_ms: i64,
    pub avg_turn_latency_ms: i64,
    pub end_reason: Option<String>,
    pub ended_at: Option<i64>,
}

/// Why a session or recording that a crash cut short was ended when its node came back.
pub const ABANDONED_REASON: &str = "node_restarted: the server stopped before the session ended";

/// At a node's start: its sessions still `active` ran on its previous process, which is gone,
/// so nothing will ever end them. They become `failed` with [`ABANDONED_REASON`]; sessions of
/// other nodes sharing the database are theirs to end. Answers how many were ended.
pub async fn fail_abandoned(db: &Db, node: &NodeId, at: i64) -> StoreResult<usize> {
    db_run!(db, |conn| {
        Ok(diesel::update(
            sessions::table
                .filter(sessions::node_id.eq(node))
                .filter(sessions::status.eq(SessionStatus::Active)),
        )
        .set((
            sessions::status.eq(SessionStatus::Failed),
            sessions::end_reason.eq(Some(ABANDONED_REASON)),
            sessions::ended_at.eq(Some(at)),
        ))
        .execute(conn)
        .await?)
    })
}

/// What a post-call analysis cut off by a stop of its node says in `errors`.
pub const ANALYSIS_ABANDONED: &str = "the server stopped before the analysis finished";

/// Fails the post-call analyses still pending for sessions of `node`, which a previous run
/// left unfinished (it ran them in memory after the calls ended); answers how many.
pub async fn fail_abandoned_analyses(db: &Db, node: &NodeId, at: i64) -> StoreResult<usize> {
    db_run!(db, |conn| {
        let of_node = sessions::table
            .filter(sessions::node_id.eq(node))
            .select(sessions::id);
        Ok(diesel::update(
            analyses::table
                .filter(analyses::status.eq(AnalysisStatus::Pending))
                .filter(analyses::session_id.eq_any(of_node)),
        )
        .set((
            analyses::status.eq(AnalysisStatus::Failed),
            analyses::errors.eq(serde_json::json!([ANALYSIS_ABANDONED]).to_string()),
            analyses::completed_at.eq(Some(at)),
        ))
        .execute(conn)
        .await?)
    })
}

/// Whether a session with this id was ever recorded (by any developer, on any node).
pub async fn exists(db: &Db, id: &SessionId) -> StoreResult<bool> {
    db_run!(db, |conn| {
        let found: i64 = sessions::table
            .filter(sessions::id.eq(id))
            .count()
            .get_result(conn)
            .await?;
        Ok(found > 0)
    })
}

/// A session's whole record: the session, its turns, tool calls and events, and its
/// post-call analysis when its agent asked for one.
#[derive(Debug, Clone)]
pub struct SessionTrace {
    pub session: SessionRow,
    pub turns: Vec<TurnRow>,
    pub tool_calls: Vec<ToolCallRow>,
    pub events: Vec<EventRow>,
    pub analysis: Option<AnalysisRow>,
}

/// The record of session `id`, every part read as of one moment ([`db_snapshot!`]): a
/// session's records are committed in the order they happened, its end last, so a record
/// that says the session ended holds every turn before that end (read in separate queries,
/// the turns could be read before the commit that held the last turn and the end, and the
/// session after it). `None` when there is no such session.
pub async fn trace_of(db: &Db, id: &SessionId) -> StoreResult<Option<SessionTrace>> {
    db_snapshot!(db, |conn| {
        let Some(session) = sessions::table
            .filter(sessions::id.eq(id))
            .select(SessionRow::as_select())
            .first(conn)
            .await
            .optional()?
        else {
            return Ok(None);
        };
        let turns = turns::table
            .filter(turns::session_id.eq(id))
            .order((turns::turn_index.asc(), turns::seq.asc()))
            .select(TurnRow::as_select())
            .load(conn)
            .await?;
        let tool_calls = tool_calls::table
            .filter(tool_calls::session_id.eq(id))
            .order(tool_calls::seq.asc())
            .select(ToolCallRow::as_select())
            .load(conn)
            .await?;
        let events = events::table
            .filter(events::session_id.eq(id))
            .order(events::seq.asc())
            .select(EventRow::as_select())
            .load(conn)
            .await?;
        let analysis = analyses::table
            .filter(analyses::session_id.eq(id))
            .select(AnalysisRow::as_select())
            .first(conn)
            .await
            .optional()?;
        Ok(Some(SessionTrace {
            session,
            turns,
            tool_calls,
            events,
            analysis,
        }))
    })
}

/// A developer's sessions past the one at `cursor` (a `seq`; `None` from the start), oldest
/// first, or newest first when `newest_first`.
pub async fn list(
    db: &Db,
    developer: &DeveloperId,
    agent: Option<&AgentId>,
    cursor: Option<i64>,
    newest_first: bool,
    limit: i64,
) -> StoreResult<Vec<SessionRow>> {
    db_run!(db, |conn| {
        let mut query = sessions::table
            .filter(sessions::developer_id.eq(developer))
            .filter(sessions::status.ne(SessionStatus::Pending))
            .into_boxed();
        if let Some(agent) = agent {
            query = query.filter(sessions::agent_id.eq(agent.clone()));
        }
        query = match (newest_first, cursor) {
            (false, cursor) => query
                .filter(sessions::seq.gt(cursor.unwrap_or(0)))
                .order(sessions::seq.asc()),
            (true, Some(cursor)) => query
                .filter(sessions::seq.lt(cursor))
                .order(sessions::seq.desc()),
            (true, None) => query.order(sessions::seq.desc()),
        };
        Ok(query
            .limit(limit)
            .select(SessionRow::as_select())
            .load(conn)
            .await?)
    })
}
