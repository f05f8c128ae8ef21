//! `SessionRegistry`: real-time session records. Creates them when a session is set up,
//! claims a pending one when its stream connects (once), records turns as they finish and the
//! summary when the session ends, and serves the observability reads. Writes from live
//! sessions arrive as fire-and-forget messages, so a session never waits for storage.
//!
//! Those writes are group-committed: a write waits up to [`WRITE_LINGER`] for others to join
//! it, one transaction is in flight at a time, and whatever arrived meanwhile goes into the
//! next one, in arrival order. The cost per transaction (a pool checkout, BEGIN and COMMIT, a
//! WAL flush on PostgreSQL, and on SQLite the round trip to a blocking thread) is shared: at a
//! thousand live calls, a few hundred turns a second go to the store in about
//! `1 s / WRITE_LINGER` transactions instead of one or a few per turn. A session's end is
//! written at once, with everything queued before it, so its record is complete as soon as
//! the call is over; so is everything queued when the server is asked to [`Settle`].
//!
//! The queue is bounded: while the database is unreachable or far too slow, at most
//! [`MAX_PENDING_WRITES`] writes wait. Past that, new turns, tool calls and events are dropped
//! and counted (`switchboard_session_record_writes_dropped_total`), so memory stays bounded
//! however long the outage; a session's end is always kept, so no session is left `active`.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;

use super::{cursor_position, Page, PageRequest};
use crate::error::ApiError;
use crate::ids::{AgentId, DeveloperId, NodeId, SessionId};
use crate::metrics::metrics;
use crate::store::sessions::{
    self, AnalysisResult, AnalysisRow, EventRow, InterruptionRow, RecordWrite, SessionEnd,
    SessionRow, SessionScope, ToolCallRow, TurnRow,
};
use crate::store::Db;
use crate::time::now_ms;

pub struct SessionRegistry {
    db: Db,
    /// This node: the sessions it runs carry it, so that after a crash it ends them (see
    /// `sessions::fail_abandoned`).
    node_id: NodeId,
    /// Sessions named by session tokens this node has let in, until the tokens expire.
    claimed_tokens: HashMap<SessionId, i64>,
    /// Record writes waiting for the next transaction, in arrival order.
    pending: Vec<RecordWrite>,
    /// How many writes may wait before new ones (other than ends) are dropped.
    max_pending: usize,
    /// Writes dropped because the queue was full, since the server started.
    dropped: u64,
    /// A transaction of record writes is in flight.
    writing: bool,
    /// How long a write waits for others to share its transaction.
    linger: std::time::Duration,
    /// The waiting writes' transaction is due: a timer is set for it.
    due: Option<SpawnHandle>,
    /// Sessions' ends among the waiting writes: while any waits, nothing lingers.
    ends_waiting: usize,
    /// The waiting writes' time ran out while a transaction was in flight: they go next.
    overdue: bool,
    /// [`Settle`] callers waiting for the writes sent before them.
    settling: Vec<tokio::sync::oneshot::Sender<()>>,
    /// Writes queued since the start, and of those written (or failed) so far: they go in
    /// arrival order, so a write is done once `written` reaches its number.
    queued: u64,
    written: u64,
    /// [`Flush`] callers, each with the number of the last write queued before it.
    flushing: Vec<(u64, tokio::sync::oneshot::Sender<()>)>,
}

/// How long a turn, tool call or event waits for other writes to share its transaction: the
/// delay before a live session's new turn can be read back.
pub const WRITE_LINGER: std::time::Duration = std::time::Duration::from_millis(50);

/// Most record writes in one transaction, so that a backlog is written in several short
/// transactions rather than one that holds SQLite's write lock for long.
const MAX_WRITES_PER_TRANSACTION: usize = 256;

/// Most record writes waiting for the database: a few hundred bytes each, so tens of MB at
/// most; at a thousand live calls, several minutes of turns.
pub const MAX_PENDING_WRITES: usize = 100_000;

impl SessionRegistry {
    pub fn new(db: Db, node_id: NodeId) -> Self {
        Self {
            db,
            node_id,
            claimed_tokens: HashMap::new(),
            pending: Vec::new(),
            max_pending: MAX_PENDING_WRITES,
            dropped: 0,
            writing: false,
            linger: WRITE_LINGER,
            due: None,
            ends_waiting: 0,
            overdue: false,
            settling: Vec::new(),
            queued: 0,
            written: 0,
            flushing: Vec::new(),
        }
    }

    /// The same registry with writes waiting up to `linger` for others to join them.
    pub fn with_linger(mut self, linger: std::time::Duration) -> Self {
        self.linger = linger;
        self
    }

    /// The same registry with room for `max_pending` waiting writes.
    pub fn with_pending_limit(mut self, max_pending: usize) -> Self {
        self.max_pending = max_pending;
        self
    }

    /// Queues a record write for the next transaction (see the module docs). With the queue
    /// full, drops the write unless it ends a session.
    fn record(&mut self, write: RecordWrite, ctx: &mut Context<Self>) {
        if self.pending.len() >= self.max_pending && !matches!(write, RecordWrite::End { .. }) {
            self.dropped += 1;
            metrics()
                .session_record_writes_dropped
                .with_label_values(&[kind(&write)])
                .inc();
            // Once when it starts, then every thousandth: an outage must not flood the log.
            if self.dropped % 1_000 == 1 {
                tracing::error!(
                    session = %write.session_id(),
                    waiting = self.pending.len(),
                    dropped = self.dropped,
                    "the session record queue is full (is the database reachable?): dropped {}",
                    describe(&write)
                );
            }
            return;
        }
        self.ends_waiting += usize::from(matches!(write, RecordWrite::End { .. }));
        self.pending.push(write);
        self.queued += 1;
        metrics()
            .session_record_writes_pending
            .set(self.pending.len() as i64);
        self.schedule(ctx);
    }

    /// Starts the next transaction now if it should not wait (a waiting end or settle, or a
    /// full transaction's worth queued), else sets the timer for it; nothing while one is in
    /// flight, whose end comes back here.
    fn schedule(&mut self, ctx: &mut Context<Self>) {
        if self.writing {
            return;
        }
        if self.pending.is_empty() {
            for waiter in self.settling.drain(..) {
                let _ = waiter.send(());
            }
            return;
        }
        let urgent = self.overdue || self.ends_waiting > 0 || !self.settling.is_empty();
        if urgent || self.pending.len() >= MAX_WRITES_PER_TRANSACTION {
            self.write_pending(ctx);
        } else if self.due.is_none() {
            self.due = Some(ctx.run_later(self.linger, |act, ctx| {
                act.due = None;
                if act.writing {
                    // They have waited long enough: they go as soon as the database is free.
                    act.overdue = true;
                } else {
                    act.write_pending(ctx);
                }
            }));
        }
    }

    fn write_pending(&mut self, ctx: &mut Context<Self>) {
        if let Some(due) = self.due.take() {
            ctx.cancel_future(due);
        }
        if self.pending.is_empty() {
            self.schedule(ctx);
            return;
        }
        let take = self.pending.len().min(MAX_WRITES_PER_TRANSACTION);
        let batch: Vec<RecordWrite> = self.pending.drain(..take).collect();
        self.overdue = false;
        self.ends_waiting -= batch
            .iter()
            .filter(|write| matches!(write, RecordWrite::End { .. }))
            .count();
        metrics()
            .session_record_writes_pending
            .set(self.pending.len() as i64);
        self.writing = true;
        let db = self.db.clone();
        let count = batch.len() as u64;
        ctx.spawn(
            actix::fut::wrap_future::<_, Self>(write_batch(db, batch)).map(move |(), act, ctx| {
                act.writing = false;
                act.written += count;
                let written = act.written;
                for (_, waiter) in act.flushing.extract_if(.., |(upto, _)| *upto <= written) {
                    let _ = waiter.send(());
                }
                act.schedule(ctx);
            }),
        );
    }
}

/// Writes `batch` in one transaction. If that fails, each write is tried alone, so one bad
/// write (its session deleted meanwhile, say) loses only itself.
async fn write_batch(db: Db, batch: Vec<RecordWrite>) {
    let batch: Arc<[RecordWrite]> = batch.into();
    let Err(e) = sessions::write_records(&db, batch.clone()).await else {
        return;
    };
    if let [write] = &*batch {
        tracing::error!(session = %write.session_id(), "could not record {}: {e}", describe(write));
        return;
    }
    tracing::warn!(
        writes = batch.len(),
        "a transaction of session records failed ({e}); writing them one by one"
    );
    for write in batch.iter() {
        if let Err(e) = sessions::write_records(&db, Arc::new([write.clone()])).await {
            tracing::error!(session = %write.session_id(), "could not record {}: {e}", describe(write));
        }
    }
}

/// The `kind` label of a dropped write.
fn kind(write: &RecordWrite) -> &'static str {
    match write {
        RecordWrite::Turn(_) => "turn",
        RecordWrite::ToolCalls(_) => "tool_calls",
        RecordWrite::Event(_) => "event",
        RecordWrite::End { .. } => "end",
    }
}

fn describe(write: &RecordWrite) -> &'static str {
    match write {
        RecordWrite::Turn(_) => "a turn",
        RecordWrite::ToolCalls(_) => "a turn's tool calls",
        RecordWrite::Event(_) => "a session event",
        RecordWrite::End { .. } => "a session's end",
    }
}

impl Actor for SessionRegistry {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct CreateSession(pub SessionRow);

impl Handler<CreateSession> for SessionRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: CreateSession, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        // A session that starts active runs here; a pending one is placed when claimed.
        let node = (msg.0.status == sessions::SessionStatus::Active).then(|| self.node_id.clone());
        Box::pin(async move { Ok(sessions::insert(&db, &msg.0, node.as_ref()).await?) })
    }
}

/// Claims the session a browser's session token names, once: `false` when that session was
/// already opened (on this node, checked in memory so two sockets racing with one token cannot
/// both win; or on any node, as a stored session).
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct ClaimTokenSession {
    pub session_id: SessionId,
    /// The token's expiry (epoch ms): past it the token is refused anyway, so it is forgotten.
    pub expires_at: i64,
}

impl Handler<ClaimTokenSession> for SessionRegistry {
    type Result = ResponseFuture<Result<bool, ApiError>>;

    fn handle(&mut self, msg: ClaimTokenSession, _: &mut Context<Self>) -> Self::Result {
        let now = now_ms();
        self.claimed_tokens.retain(|_, expires| *expires > now);
        if self.claimed_tokens.contains_key(&msg.session_id) {
            return Box::pin(async { Ok(false) });
        }
        self.claimed_tokens
            .insert(msg.session_id.clone(), msg.expires_at);
        let db = self.db.clone();
        Box::pin(async move { Ok(!sessions::exists(&db, &msg.session_id).await?) })
    }
}

/// Claims a pending session for the stream that just connected; `None` if it is unknown or
/// was claimed before (a reused token).
#[derive(Message)]
#[rtype(result = "Result<Option<SessionRow>, ApiError>")]
pub struct ClaimSession {
    pub session_id: SessionId,
    pub call_sid: Option<String>,
}

impl Handler<ClaimSession> for SessionRegistry {
    type Result = ResponseFuture<Result<Option<SessionRow>, ApiError>>;

    fn handle(&mut self, msg: ClaimSession, _: &mut Context<Self>) -> Self::Result {
        let (db, node) = (self.db.clone(), self.node_id.clone());
        Box::pin(async move {
            Ok(sessions::activate(
                &db,
                &msg.session_id,
                msg.call_sid.as_deref(),
                &node,
                now_ms(),
            )
            .await?)
        })
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordTurn(pub TurnRow);

impl Handler<RecordTurn> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: RecordTurn, ctx: &mut Context<Self>) {
        self.record(RecordWrite::Turn(msg.0), ctx);
    }
}

/// Tool calls of one agent turn.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordToolCalls(pub Vec<ToolCallRow>);

impl Handler<RecordToolCalls> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: RecordToolCalls, ctx: &mut Context<Self>) {
        if !msg.0.is_empty() {
            self.record(RecordWrite::ToolCalls(msg.0), ctx);
        }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordEvent(pub EventRow);

impl Handler<RecordEvent> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: RecordEvent, ctx: &mut Context<Self>) {
        self.record(RecordWrite::Event(msg.0), ctx);
    }
}

/// Sets the detail of a session's call events of one kind (a transfer's outcome, reported
/// by Twilio after the session ended). Answers whether such an event was there.
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct SettleEvent {
    pub session_id: SessionId,
    pub kind: &'static str,
    pub detail: String,
}

impl Handler<SettleEvent> for SessionRegistry {
    type Result = ResponseFuture<Result<bool, ApiError>>;

    fn handle(&mut self, msg: SettleEvent, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            Ok(sessions::settle_events(&db, &msg.session_id, msg.kind, &msg.detail).await?)
        })
    }
}

/// The session ended. Written after every record the session sent before it (a reader that
/// sees the session ended sees all of its turns).
#[derive(Message)]
#[rtype(result = "()")]
pub struct EndSession {
    pub session_id: SessionId,
    pub end: SessionEnd,
}

impl Handler<EndSession> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: EndSession, ctx: &mut Context<Self>) {
        self.record(
            RecordWrite::End {
                session_id: msg.session_id,
                end: msg.end,
            },
            ctx,
        );
    }
}

/// Answers once every record write sent before it is done (and any that arrived while those
/// were written, since it waits for the queue to empty): a stopping server waits on it, with a
/// time limit of its own.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Settle;

impl Handler<Settle> for SessionRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Settle, ctx: &mut Context<Self>) -> Self::Result {
        if !self.writing && self.pending.is_empty() {
            return Box::pin(async {});
        }
        let (done, settled) = tokio::sync::oneshot::channel();
        self.settling.push(done);
        // What waits is written without lingering (`settling` is not empty).
        self.schedule(ctx);
        Box::pin(async move {
            let _ = settled.await;
        })
    }
}

/// Answers once every record write sent before it is written (or failed), however many
/// arrive after it: what reads a session's record right after its end waits on it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Flush;

impl Handler<Flush> for SessionRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Flush, _: &mut Context<Self>) -> Self::Result {
        if self.written >= self.queued {
            return Box::pin(async {});
        }
        let (done, flushed) = tokio::sync::oneshot::channel();
        self.flushing.push((self.queued, done));
        Box::pin(async move {
            let _ = flushed.await;
        })
    }
}

pub use crate::store::sessions::SessionTrace;

/// A developer's session with its trace, by session id or Twilio call SID.
#[derive(Message)]
#[rtype(result = "Result<SessionTrace, ApiError>")]
pub struct GetSession {
    pub developer_id: DeveloperId,
    pub lookup: SessionLookup,
}

pub enum SessionLookup {
    Id(SessionId),
    CallSid(String),
}

impl Handler<GetSession> for SessionRegistry {
    type Result = ResponseFuture<Result<SessionTrace, ApiError>>;

    fn handle(&mut self, msg: GetSession, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let row = match &msg.lookup {
                SessionLookup::Id(id) => sessions::get(&db, &msg.developer_id, id)
                    .await?
                    .ok_or_else(|| ApiError::not_found("session", id.as_str()))?,
                SessionLookup::CallSid(sid) => sessions::by_call_sid(&db, &msg.developer_id, sid)
                    .await?
                    .ok_or_else(|| ApiError::not_found("call", sid))?,
            };
            trace_of(&db, row).await
        })
    }
}

/// A session of any developer with its trace, by id: for Twilio's signed webhooks about a
/// session, whose URL names it and which carry no developer.
#[derive(Message)]
#[rtype(result = "Result<SessionTrace, ApiError>")]
pub struct GetAnySession {
    pub session_id: SessionId,
}

impl Handler<GetAnySession> for SessionRegistry {
    type Result = ResponseFuture<Result<SessionTrace, ApiError>>;

    fn handle(&mut self, msg: GetAnySession, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let row = sessions::by_id(&db, &msg.session_id)
                .await?
                .ok_or_else(|| ApiError::not_found("session", msg.session_id.as_str()))?;
            trace_of(&db, row).await
        })
    }
}

/// The whole record of the session `row` was found as, read as of one moment (see
/// [`sessions::trace_of`]): the row found first only says which session it is.
async fn trace_of(db: &Db, row: SessionRow) -> Result<SessionTrace, ApiError> {
    sessions::trace_of(db, &row.id)
        .await?
        .ok_or_else(|| ApiError::not_found("session", row.id.as_str()))
}

/// Records that a session's post-call analysis started.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct StartAnalysis(pub AnalysisRow);

impl Handler<StartAnalysis> for SessionRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: StartAnalysis, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            sessions::insert_analysis(&db, &msg.0).await?;
            Ok(())
        })
    }
}

/// Stores what a session's post-call analysis came to; answers the stored row.
#[derive(Message)]
#[rtype(result = "Result<Option<AnalysisRow>, ApiError>")]
pub struct FinishAnalysis {
    pub session_id: SessionId,
    pub result: AnalysisResult,
}

impl Handler<FinishAnalysis> for SessionRegistry {
    type Result = ResponseFuture<Result<Option<AnalysisRow>, ApiError>>;

    fn handle(&mut self, msg: FinishAnalysis, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move { Ok(sessions::finish_analysis(&db, &msg.session_id, &msg.result).await?) },
        )
    }
}

/// What the interruption aggregates are computed from.
#[derive(Debug, Clone)]
pub struct InterruptionData {
    pub sessions: i64,
    pub interruptions: Vec<InterruptionRow>,
    /// (session, turn) of each false barge-in.
    pub false_barge_ins: Vec<(String, i32)>,
}

/// The interruptions of a developer's sessions in a scope.
#[derive(Message)]
#[rtype(result = "Result<InterruptionData, ApiError>")]
pub struct GetInterruptions(pub SessionScope);

impl Handler<GetInterruptions> for SessionRegistry {
    type Result = ResponseFuture<Result<InterruptionData, ApiError>>;

    fn handle(&mut self, msg: GetInterruptions, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let scope = msg.0;
            Ok(InterruptionData {
                sessions: sessions::count_in_scope(&db, &scope).await?,
                interruptions: sessions::interruptions_in_scope(&db, &scope).await?,
                false_barge_ins: sessions::false_barge_ins_in_scope(&db, &scope).await?,
            })
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<Page<SessionRow>, ApiError>")]
pub struct ListSessions {
    pub developer_id: DeveloperId,
    pub agent_id: Option<AgentId>,
    /// Newest first instead of oldest first.
    pub newest_first: bool,
    pub page: PageRequest,
}

impl Handler<ListSessions> for SessionRegistry {
    type Result = ResponseFuture<Result<Page<SessionRow>, ApiError>>;

    fn handle(&mut self, msg: ListSessions, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let dev = &msg.developer_id;
            let cursor = msg.page.cursor.as_deref();
            let position = cursor_position(cursor, async |id: SessionId| {
                sessions::seq_of(&db, dev, &id).await
            })
            .await?;
            let rows = sessions::list(
                &db,
                dev,
                msg.agent_id.as_ref(),
                cursor.map(|_| position),
                msg.newest_first,
                msg.page.limit + 1,
            )
            .await?;
            Ok(Page::from_rows(rows, msg.page.limit, |row| row.id.as_str()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> SessionRow {
        SessionRow {
            seq: 0,
            id: id.into(),
            developer_id: "dev".into(),
            agent_id: "agent".into(),
            transport: "twilio".into(),
            call_sid: None,
            from_number: None,
            to_number: None,
            instance_id: None,
            status: sessions::SessionStatus::Active,
            turn_count: 0,
            tool_executions: 0,
            total_duration_ms: 0,
            avg_turn_latency_ms: 0,
            end_reason: None,
            created_at: 1,
            started_at: Some(1),
            ended_at: None,
        }
    }

    fn turn(session_id: &str, index: i32) -> TurnRow {
        TurnRow {
            text: format!("turn {index}"),
            end_ms: 10,
            ..TurnRow::blank(session_id, index, "user")
        }
    }

    /// A fresh SQLite database (its directory, URL and pool) holding developer `dev` and the
    /// active sessions `ids`.
    async fn database_with(ids: &[&str]) -> (tempfile::TempDir, String, Db) {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = dir.path().join("db.sqlite").display().to_string();
        let db = Db::open(&url, 4, 10_000).await.expect("database opens");
        crate::store::developers::ensure(&db, &"dev".into())
            .await
            .expect("developer stored");
        for id in ids {
            sessions::insert(&db, &session(id), Some(&NodeId::from("node")))
                .await
                .expect("session stored");
        }
        (dir, url, db)
    }

    async fn stored(registry: &Addr<SessionRegistry>, id: &str) -> SessionTrace {
        registry
            .send(GetSession {
                developer_id: "dev".into(),
                lookup: SessionLookup::Id(id.into()),
            })
            .await
            .expect("registry answers")
            .expect("session found")
    }

    fn turn_texts(trace: &SessionTrace) -> Vec<String> {
        trace.turns.iter().map(|t| t.text.clone()).collect()
    }

    /// The texts of [`turn`] 0 to `count - 1`.
    fn turn_texts_up_to(count: i32) -> Vec<String> {
        (0..count).map(|i| format!("turn {i}")).collect()
    }

    /// Writes sent while a transaction is in flight share the next one; a write that fails
    /// (its session does not exist) loses only itself, and `Settle` answers after all of them.
    #[actix::test]
    async fn writes_are_grouped_in_order_and_a_bad_one_loses_only_itself() {
        let (_dir, _url, db) = database_with(&["s1"]).await;
        let registry = SessionRegistry::new(db.clone(), "node".into()).start();
        for index in 0..20 {
            registry.do_send(RecordTurn(turn("s1", index)));
        }
        registry.do_send(RecordTurn(turn("missing", 0)));
        registry.do_send(RecordEvent(EventRow {
            session_id: "s1".into(),
            kind: sessions::EVENT_UNRECOGNISED_SPEECH.into(),
            turn_index: None,
            start_ms: 0,
            end_ms: 5,
            detail: None,
        }));
        registry.do_send(ended("s1"));
        registry.send(Settle).await.expect("registry answers");

        let trace = stored(&registry, "s1").await;
        assert_eq!(turn_texts(&trace), turn_texts_up_to(20));
        assert_eq!(trace.session.turn_count, 20);
        assert_eq!(trace.session.status, sessions::SessionStatus::Completed);
        assert_eq!(trace.events.len(), 1);
        assert!(!sessions::exists(&db, &"missing".into())
            .await
            .expect("query runs"));
        // Nothing is left queued: a second settle answers at once.
        registry.send(Settle).await.expect("registry answers");
    }

    fn ended(session_id: &str) -> EndSession {
        EndSession {
            session_id: session_id.into(),
            end: SessionEnd {
                status: sessions::SessionStatus::Completed,
                tool_executions: 0,
                total_duration_ms: 1_000,
                avg_turn_latency_ms: 0,
                end_reason: Some("hangup".into()),
                ended_at: Some(2),
            },
        }
    }

    /// While the database holds the registry's writes up, at most the limit wait: later
    /// turns are dropped and counted, the sessions' ends are kept, and once the database
    /// answers again everything that waited is written in order.
    #[actix::test]
    async fn a_stalled_database_queues_a_bounded_backlog_and_keeps_every_end() {
        use diesel::{Connection as _, RunQueryDsl as _};

        let (_dir, url, db) = database_with(&["s1", "s2"]).await;
        // Another connection holds SQLite's write lock, so the registry's first transaction
        // waits for it.
        let mut blocker = diesel::SqliteConnection::establish(&url).expect("connects");
        diesel::sql_query("BEGIN EXCLUSIVE")
            .execute(&mut blocker)
            .expect("takes the write lock");
        let dropped = || {
            metrics()
                .session_record_writes_dropped
                .with_label_values(&["turn"])
                .get()
        };
        let dropped_before = dropped();
        // The turns linger until an end comes, however slowly the machine runs the test.
        let registry = SessionRegistry::new(db.clone(), "node".into())
            .with_pending_limit(10)
            .with_linger(std::time::Duration::from_secs(600))
            .start();
        // Turns 0-9 fill the queue while they linger, 10-29 find it full; s1's end starts
        // the transaction, which waits for the lock, and s2's end waits behind it.
        for index in 0..30 {
            registry.do_send(RecordTurn(turn("s1", index)));
        }
        registry.do_send(ended("s1"));
        registry.do_send(ended("s2"));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(dropped() - dropped_before, 20, "turns 10-29 are dropped");

        diesel::sql_query("COMMIT")
            .execute(&mut blocker)
            .expect("gives the lock back");
        registry.send(Settle).await.expect("registry answers");
        for (id, turns) in [("s1", 10), ("s2", 0)] {
            let trace = stored(&registry, id).await;
            assert_eq!(turn_texts(&trace), turn_texts_up_to(turns), "{id}");
            assert_eq!(
                trace.session.status,
                sessions::SessionStatus::Completed,
                "{id}"
            );
        }
    }

    /// Turns linger for others to share their transaction, so a live session's turn is read
    /// back only after the linger; a session's end does not wait for it, and brings the turns
    /// queued before it along.
    #[actix::test]
    async fn turns_linger_for_company_and_an_end_is_written_at_once() {
        use std::time::{Duration, Instant};

        const LINGER: Duration = Duration::from_secs(4);
        let (_dir, _url, db) = database_with(&["s1", "s2"]).await;
        let registry = SessionRegistry::new(db.clone(), "node".into())
            .with_linger(LINGER)
            .start();
        let until_stored = |id: &'static str, turns: usize| {
            let registry = registry.clone();
            async move {
                let started = Instant::now();
                loop {
                    let trace = stored(&registry, id).await;
                    if trace.turns.len() == turns {
                        return (started.elapsed(), trace);
                    }
                    assert!(
                        started.elapsed() < 3 * LINGER,
                        "{id}: {} turns",
                        trace.turns.len()
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };

        let sent = Instant::now();
        for index in 0..5 {
            registry.do_send(RecordTurn(turn("s1", index)));
        }
        assert!(
            stored(&registry, "s1").await.turns.is_empty(),
            "nothing is written before the linger is over"
        );
        let (_, trace) = until_stored("s1", 5).await;
        assert!(
            sent.elapsed() >= LINGER,
            "written after {:?}",
            sent.elapsed()
        );
        assert_eq!(turn_texts(&trace), turn_texts_up_to(5));
        assert_eq!(trace.session.status, sessions::SessionStatus::Active);

        for index in 0..3 {
            registry.do_send(RecordTurn(turn("s2", index)));
        }
        registry.do_send(ended("s2"));
        let (waited, trace) = until_stored("s2", 3).await;
        assert!(waited < LINGER, "the end waited {waited:?}");
        assert_eq!(turn_texts(&trace), turn_texts_up_to(3));
        assert_eq!(trace.session.status, sessions::SessionStatus::Completed);
    }
}
