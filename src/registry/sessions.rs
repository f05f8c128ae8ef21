//! `SessionRegistry`: real-time session records. Creates them when a session is set up,
//! claims a pending one when its stream connects (once), records turns as they finish and the
//! summary when the session ends, and serves the observability reads. Writes from live
//! sessions arrive as fire-and-forget messages, so a session never waits for storage.

use std::collections::HashMap;

use actix::prelude::*;

use super::{cursor_position, Page, PageRequest};
use crate::error::ApiError;
use crate::store::sessions::{
    self, EventRow, InterruptionRow, SessionEnd, SessionRow, SessionScope, ToolCallRow, TurnRow,
};
use crate::store::Db;
use crate::time::now_ms;

pub struct SessionRegistry {
    db: Db,
    /// This node: the sessions it runs carry it, so that after a crash it ends them (see
    /// `sessions::fail_abandoned`).
    node_id: String,
    /// Sessions named by session tokens this node has let in, until the tokens expire.
    claimed_tokens: HashMap<String, i64>,
}

impl SessionRegistry {
    pub fn new(db: Db, node_id: String) -> Self {
        Self {
            db,
            node_id,
            claimed_tokens: HashMap::new(),
        }
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
        let node = (msg.0.status == sessions::STATUS_ACTIVE).then(|| self.node_id.clone());
        Box::pin(async move { Ok(sessions::insert(&db, &msg.0, node.as_deref()).await?) })
    }
}

/// Claims the session a browser's session token names, once: `false` when that session was
/// already opened (on this node, checked in memory so two sockets racing with one token cannot
/// both win; or on any node, as a stored session).
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct ClaimTokenSession {
    pub session_id: String,
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
    pub session_id: String,
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
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: RecordTurn, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        in_order(async move {
            if let Err(e) = sessions::add_turn(&db, &msg.0).await {
                tracing::error!(session = %msg.0.session_id, "could not record a turn: {e}");
            }
        })
    }
}

/// Tool calls of one agent turn.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordToolCalls(pub Vec<ToolCallRow>);

impl Handler<RecordToolCalls> for SessionRegistry {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: RecordToolCalls, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        in_order(async move {
            if let Err(e) = sessions::add_tool_calls(&db, &msg.0).await {
                tracing::error!("could not record a turn's tool calls: {e}");
            }
        })
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordEvent(pub EventRow);

impl Handler<RecordEvent> for SessionRegistry {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: RecordEvent, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        in_order(async move {
            if let Err(e) = sessions::add_event(&db, &msg.0).await {
                tracing::error!(session = %msg.0.session_id, "could not record a session event: {e}");
            }
        })
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct EndSession {
    pub session_id: String,
    pub end: SessionEnd,
}

impl Handler<EndSession> for SessionRegistry {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: EndSession, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        in_order(async move {
            if let Err(e) = sessions::finish(&db, &msg.session_id, &msg.end).await {
                tracing::error!(session = %msg.session_id, "could not record a session's end: {e}");
            }
        })
    }
}

/// Answers once every record write sent before it is done (writes run one after another, in
/// the order they were sent): a stopping server waits on it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Settle;

impl Handler<Settle> for SessionRegistry {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: Settle, _: &mut Context<Self>) -> Self::Result {
        in_order(async {})
    }
}

/// A session's whole trace: the record, its turns, tool calls and events.
#[derive(Debug, Clone)]
pub struct SessionTrace {
    pub session: SessionRow,
    pub turns: Vec<TurnRow>,
    pub tool_calls: Vec<ToolCallRow>,
    pub events: Vec<EventRow>,
}

/// A developer's session with its trace, by session id or Twilio call SID.
#[derive(Message)]
#[rtype(result = "Result<SessionTrace, ApiError>")]
pub struct GetSession {
    pub developer_id: String,
    pub lookup: SessionLookup,
}

pub enum SessionLookup {
    Id(String),
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
                    .ok_or_else(|| ApiError::not_found("session", id))?,
                SessionLookup::CallSid(sid) => sessions::by_call_sid(&db, &msg.developer_id, sid)
                    .await?
                    .ok_or_else(|| ApiError::not_found("call", sid))?,
            };
            let turns = sessions::turns_of(&db, &row.id).await?;
            let tool_calls = sessions::tool_calls_of(&db, &row.id).await?;
            let events = sessions::events_of(&db, &row.id).await?;
            Ok(SessionTrace {
                session: row,
                turns,
                tool_calls,
                events,
            })
        })
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
    pub developer_id: String,
    pub agent_id: Option<String>,
    pub page: PageRequest,
}

impl Handler<ListSessions> for SessionRegistry {
    type Result = ResponseFuture<Result<Page<SessionRow>, ApiError>>;

    fn handle(&mut self, msg: ListSessions, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let dev = &msg.developer_id;
            let cursor = msg.page.cursor.as_deref();
            let after =
                cursor_position(cursor, sessions::seq_of(&db, dev, cursor.unwrap_or(""))).await?;
            let rows = sessions::list(&db, dev, msg.agent_id.as_deref(), after, msg.page.limit + 1)
                .await?;
            Ok(Page::from_rows(rows, msg.page.limit, |row| &row.id))
        })
    }
}

/// A write that holds the registry's mailbox until it is done, so a session's records land in
/// the order it sent them: its turns and tool calls before its end (a reader that sees the
/// session ended sees all of its turns). Writes are a few milliseconds each.
fn in_order(
    write: impl std::future::Future<Output = ()> + 'static,
) -> AtomicResponse<SessionRegistry, ()> {
    AtomicResponse::new(Box::pin(actix::fut::wrap_future::<_, SessionRegistry>(
        write,
    )))
}
