//! Queries on agents (archived on delete, never removed) and their instances.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::agents;
pub use super::status::AgentStatus;
use super::{Db, StoreError, StoreResult};
use crate::db_tx;
use crate::ids::{AgentId, CollectionId, DeveloperId};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = agents)]
pub struct AgentRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: AgentId,
    pub developer_id: DeveloperId,
    pub name: String,
    pub description: Option<String>,
    pub system_prompt: Option<String>,
    pub first_message: Option<String>,
    pub voice_id: String,
    pub tts_provider: String,
    pub tts_model: Option<String>,
    pub stt_provider: String,
    pub llm_provider: String,
    pub llm_model: Option<String>,
    pub collection_id: Option<CollectionId>,
    pub style_profile: Option<String>,
    pub language: String,
    pub temperature: f64,
    pub max_tokens: Option<i32>,
    pub metadata: String,
    /// The people the agent may hand a phone call to, as a JSON array (see
    /// [`crate::conversation::transfer`]); `[]` for none.
    pub transfer: String,
    /// What the agent asks of each finished call, as a JSON object (see
    /// [`crate::conversation::analysis`]); `None` for nothing.
    pub analysis: Option<String>,
    pub status: AgentStatus,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The agent `language` that has its sessions detect the caller's language turn by turn.
pub const DETECTED_LANGUAGE: &str = "auto";

impl AgentRow {
    /// The language the agent's sessions (and its `/speak`) force on the recognizer and the
    /// voice: its code, or `None` for [`DETECTED_LANGUAGE`].
    pub fn forced_language(&self) -> Option<&str> {
        (self.language != DETECTED_LANGUAGE).then_some(self.language.as_str())
    }
}

/// The columns an update may change; `None` leaves a column as it is, `Some(None)` clears a
/// nullable one.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = agents)]
pub struct AgentChanges {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub system_prompt: Option<Option<String>>,
    pub first_message: Option<Option<String>>,
    pub voice_id: Option<String>,
    pub tts_provider: Option<String>,
    pub tts_model: Option<Option<String>>,
    pub stt_provider: Option<String>,
    pub llm_provider: Option<String>,
    pub llm_model: Option<Option<String>>,
    pub collection_id: Option<Option<CollectionId>>,
    pub style_profile: Option<Option<String>>,
    pub language: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<Option<i32>>,
    pub metadata: Option<String>,
    pub transfer: Option<String>,
    pub analysis: Option<Option<String>>,
    pub updated_at: i64,
}

store_fns! {
    table = agents, row = AgentRow;

    insert pub fn insert(agent: &AgentRow);

    /// A developer's agent unless archived.
    get pub fn get(developer: &DeveloperId, id: &AgentId)
        where developer_id.eq(developer), id.eq(id), status.ne(AgentStatus::Archived);

    /// A developer's agents that are not archived, in creation order after `after` (a `seq`).
    list pub fn list(developer: &DeveloperId)
        where developer_id.eq(developer), status.ne(AgentStatus::Archived);

    /// The position of one of the developer's agents (archived ones too), for cursors.
    seq pub fn seq_of(developer: &DeveloperId, id: &AgentId) where developer_id.eq(developer), id.eq(id);

    /// Archives a live agent; answers whether there was one.
    mark pub fn archive(developer: &DeveloperId, id: &AgentId, now: i64)
        set ((agents::status.eq(AgentStatus::Archived), agents::updated_at.eq(now)))
        where developer_id.eq(developer), id.eq(id), status.ne(AgentStatus::Archived);
}

/// Applies the changes to a live agent and keeps them only if `check` accepts the row they
/// make: a refusal rolls the change back as [`StoreError::Refused`]. Answers the updated row,
/// or `None` if there is no such agent.
pub async fn update(
    db: &Db,
    developer: &DeveloperId,
    id: &AgentId,
    changes: &AgentChanges,
    check: fn(&AgentRow) -> Result<(), String>,
) -> StoreResult<Option<AgentRow>> {
    db_tx!(db, |conn| {
        let row = diesel::update(
            agents::table
                .filter(agents::developer_id.eq(developer))
                .filter(agents::id.eq(id))
                .filter(agents::status.ne(AgentStatus::Archived)),
        )
        .set(changes)
        .returning(AgentRow::as_returning())
        .get_result(conn)
        .await
        .optional()?;
        if let Some(row) = &row {
            check(row).map_err(StoreError::Refused)?;
        }
        Ok(row)
    })
}
