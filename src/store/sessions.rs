//! Queries on real-time session records and their turns.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::schema::{session_turns as turns, sessions};
use super::{Db, StoreResult};
use crate::{db_run, db_tx};

pub const STATUS_PENDING: &str = "pending";
pub const STATUS_ACTIVE: &str = "active";
pub const STATUS_COMPLETED: &str = "completed";
pub const STATUS_FAILED: &str = "failed";

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = sessions)]
pub struct SessionRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: String,
    pub developer_id: String,
    pub agent_id: String,
    /// `twilio` or `direct`.
    pub transport: String,
    pub call_sid: Option<String>,
    pub from_number: Option<String>,
    pub to_number: Option<String>,
    pub instance_id: Option<String>,
    pub status: String,
    pub turn_count: i32,
    pub tool_executions: i32,
    pub total_duration_ms: i64,
    pub avg_turn_latency_ms: i64,
    pub end_reason: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = turns)]
pub struct TurnRow {
    pub session_id: String,
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
}

pub async fn insert(db: &Db, row: &SessionRow) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::insert_into(sessions::table)
            .values(row)
            .execute(conn)
            .await?;
        Ok(())
    })
}

/// Moves a pending session to active (its stream connected), once. Answers the session when
/// this call claimed it; `None` if it is unknown or was already claimed.
pub async fn activate(
    db: &Db,
    id: &str,
    call_sid: Option<&str>,
    at: i64,
) -> StoreResult<Option<SessionRow>> {
    db_run!(db, |conn| {
        Ok(diesel::update(
            sessions::table
                .filter(sessions::id.eq(id))
                .filter(sessions::status.eq(STATUS_PENDING)),
        )
        .set((
            sessions::status.eq(STATUS_ACTIVE),
            sessions::call_sid.eq(call_sid),
            sessions::started_at.eq(Some(at)),
        ))
        .returning(SessionRow::as_returning())
        .get_result(conn)
        .await
        .optional()?)
    })
}

pub async fn add_turn(db: &Db, row: &TurnRow) -> StoreResult<()> {
    db_tx!(db, |conn| {
        diesel::insert_into(turns::table)
            .values(row)
            .execute(conn)
            .await?;
        diesel::update(sessions::table.filter(sessions::id.eq(&row.session_id)))
            .set(sessions::turn_count.eq(sessions::turn_count + 1))
            .execute(conn)
            .await?;
        Ok(())
    })
}

/// The end of a session, with its summary figures.
#[derive(Debug, Clone, AsChangeset)]
#[diesel(table_name = sessions)]
pub struct SessionEnd {
    pub status: String,
    pub tool_executions: i32,
    pub total_duration_ms: i64,
    pub avg_turn_latency_ms: i64,
    pub end_reason: Option<String>,
    pub ended_at: Option<i64>,
}

pub async fn finish(db: &Db, id: &str, end: &SessionEnd) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::update(sessions::table.filter(sessions::id.eq(id)))
            .set(end)
            .execute(conn)
            .await?;
        Ok(())
    })
}

pub async fn get(db: &Db, developer: &str, id: &str) -> StoreResult<Option<SessionRow>> {
    db_run!(db, |conn| {
        Ok(sessions::table
            .filter(sessions::developer_id.eq(developer))
            .filter(sessions::id.eq(id))
            .select(SessionRow::as_select())
            .first(conn)
            .await
            .optional()?)
    })
}

/// The developer's latest session for a Twilio call SID.
pub async fn by_call_sid(
    db: &Db,
    developer: &str,
    call_sid: &str,
) -> StoreResult<Option<SessionRow>> {
    db_run!(db, |conn| {
        Ok(sessions::table
            .filter(sessions::developer_id.eq(developer))
            .filter(sessions::call_sid.eq(call_sid))
            .order(sessions::seq.desc())
            .select(SessionRow::as_select())
            .first(conn)
            .await
            .optional()?)
    })
}

pub async fn turns_of(db: &Db, session: &str) -> StoreResult<Vec<TurnRow>> {
    db_run!(db, |conn| {
        Ok(turns::table
            .filter(turns::session_id.eq(session))
            .order((turns::turn_index.asc(), turns::seq.asc()))
            .select(TurnRow::as_select())
            .load(conn)
            .await?)
    })
}

pub async fn list(
    db: &Db,
    developer: &str,
    agent: Option<&str>,
    after: i64,
    limit: i64,
) -> StoreResult<Vec<SessionRow>> {
    db_run!(db, |conn| {
        let mut query = sessions::table
            .filter(sessions::developer_id.eq(developer))
            .filter(sessions::seq.gt(after))
            .filter(sessions::status.ne(STATUS_PENDING))
            .into_boxed();
        if let Some(agent) = agent {
            query = query.filter(sessions::agent_id.eq(agent.to_string()));
        }
        Ok(query
            .order(sessions::seq.asc())
            .limit(limit)
            .select(SessionRow::as_select())
            .load(conn)
            .await?)
    })
}

pub async fn seq_of(db: &Db, developer: &str, id: &str) -> StoreResult<Option<i64>> {
    db_run!(db, |conn| {
        Ok(sessions::table
            .filter(sessions::developer_id.eq(developer))
            .filter(sessions::id.eq(id))
            .select(sessions::seq)
            .first(conn)
            .await
            .optional()?)
    })
}
