//! Queries on chat conversations and their messages.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::{conversation_messages as messages, conversations};
use super::{Db, StoreResult};
use crate::ids::{AgentId, ConversationId, DeveloperId, InstanceId};
use crate::{db_run, db_tx};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = conversations)]
pub struct ConversationRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: ConversationId,
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub instance_id: Option<InstanceId>,
    /// Turns completed so far.
    pub turns: i32,
    /// Set when the agent ended the conversation (the `end_conversation` tool).
    pub ended: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = messages)]
pub struct MessageRow {
    pub conversation_id: ConversationId,
    pub turn_index: i32,
    /// `user`, `assistant` or `tool`.
    pub role: String,
    pub content: String,
    /// JSON array of the tool calls an assistant message made (or, for `tool`, the call it
    /// answers: `[{"id": ...}]`).
    pub tool_calls: String,
    pub created_at: i64,
}

store_fns! {
    table = conversations, row = ConversationRow;

    get pub fn get(developer: &DeveloperId, agent: &AgentId, id: &ConversationId)
        where developer_id.eq(developer), agent_id.eq(agent), id.eq(id);
}

/// The last `limit` messages of a conversation, oldest first.
pub async fn recent_messages(
    db: &Db,
    conversation: &ConversationId,
    limit: i64,
) -> StoreResult<Vec<MessageRow>> {
    db_run!(db, |conn| {
        let mut rows: Vec<MessageRow> = messages::table
            .filter(messages::conversation_id.eq(conversation))
            .order(messages::seq.desc())
            .limit(limit)
            .select(MessageRow::as_select())
            .load(conn)
            .await?;
        rows.reverse();
        Ok(rows)
    })
}

/// Records one turn: creates the conversation on its first turn, appends the turn's messages
/// and advances the turn count, in one transaction.
pub async fn append_turn(
    db: &Db,
    conversation: &ConversationRow,
    is_new: bool,
    rows: &[MessageRow],
    ended: bool,
    now: i64,
) -> StoreResult<()> {
    db_tx!(db, |conn| {
        if is_new {
            diesel::insert_into(conversations::table)
                .values(conversation)
                .execute(conn)
                .await?;
        }
        for row in rows {
            diesel::insert_into(messages::table)
                .values(row)
                .execute(conn)
                .await?;
        }
        diesel::update(conversations::table.filter(conversations::id.eq(&conversation.id)))
            .set((
                conversations::turns.eq(conversations::turns + 1),
                conversations::ended.eq(ended),
                conversations::updated_at.eq(now),
            ))
            .execute(conn)
            .await?;
        Ok(())
    })
}
