//! `ConversationRegistry`: stored chat conversations. Loads a conversation with its recent
//! messages for a turn and records each finished turn in one transaction.

use actix::prelude::*;

use crate::error::ApiError;
use crate::ids::{AgentId, ConversationId, DeveloperId};
use crate::store::conversations::{self, ConversationRow, MessageRow};
use crate::store::Db;
use crate::time::now_ms;

/// Messages of history a turn sees.
pub const HISTORY_MESSAGES: i64 = 24;

pub struct ConversationRegistry {
    db: Db,
}

impl ConversationRegistry {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

impl Actor for ConversationRegistry {
    type Context = Context<Self>;
}

/// A developer's conversation with an agent and its recent messages, oldest first.
#[derive(Message)]
#[rtype(result = "Result<(ConversationRow, Vec<MessageRow>), ApiError>")]
pub struct LoadConversation {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub conversation_id: ConversationId,
}

impl Handler<LoadConversation> for ConversationRegistry {
    type Result = ResponseFuture<Result<(ConversationRow, Vec<MessageRow>), ApiError>>;

    fn handle(&mut self, msg: LoadConversation, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let row =
                conversations::get(&db, &msg.developer_id, &msg.agent_id, &msg.conversation_id)
                    .await?
                    .ok_or_else(|| {
                        ApiError::not_found("conversation", msg.conversation_id.as_str())
                    })?;
            let mut messages =
                conversations::recent_messages(&db, &row.id, HISTORY_MESSAGES).await?;
            start_at_a_turn(&mut messages);
            Ok((row, messages))
        })
    }
}

/// Records a finished turn (creating the conversation on its first).
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct SaveTurn {
    pub conversation: ConversationRow,
    pub is_new: bool,
    pub messages: Vec<MessageRow>,
    pub ended: bool,
}

impl Handler<SaveTurn> for ConversationRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: SaveTurn, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            conversations::append_turn(
                &db,
                &msg.conversation,
                msg.is_new,
                &msg.messages,
                msg.ended,
                now_ms(),
            )
            .await?;
            Ok(())
        })
    }
}

/// Drops the messages before the window's first caller message: a window cut mid-turn could
/// begin with a tool result whose call fell outside it, which vendor models reject.
fn start_at_a_turn(messages: &mut Vec<MessageRow>) {
    let first_user = messages
        .iter()
        .position(|m| m.role == "user")
        .unwrap_or(messages.len());
    messages.drain(..first_user);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_window_starts_with_a_caller_message() {
        let row = |role: &str| MessageRow {
            conversation_id: "c".into(),
            turn_index: 0,
            role: role.into(),
            content: String::new(),
            tool_calls: "[]".into(),
            created_at: 0,
        };
        let mut window = vec![row("tool"), row("assistant"), row("user"), row("assistant")];
        start_at_a_turn(&mut window);
        let roles: Vec<&str> = window.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant"]);
        let mut no_caller = vec![row("tool")];
        start_at_a_turn(&mut no_caller);
        assert!(no_caller.is_empty());
    }
}
