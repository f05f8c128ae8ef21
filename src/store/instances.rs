//! Queries on agent instances: per-agent records (a customer, a store, a caller) whose
//! context and variables personalise the agent's prompt.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::agent_instances as instances;

use crate::ids::{AgentId, DeveloperId, InstanceId};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = instances)]
pub struct InstanceRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: InstanceId,
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub name: Option<String>,
    pub phone_number: Option<String>,
    pub context: String,
    /// The instance's variables, a JSON object.
    pub metadata: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The columns an update may change; `None` leaves one as it is.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = instances)]
pub struct InstanceChanges {
    pub name: Option<Option<String>>,
    pub phone_number: Option<Option<String>>,
    pub context: Option<String>,
    pub metadata: Option<String>,
    pub updated_at: i64,
}

store_fns! {
    table = instances, row = InstanceRow;

    insert pub fn insert(row: &InstanceRow);

    get pub fn get(developer: &DeveloperId, agent: &AgentId, id: &InstanceId)
        where developer_id.eq(developer), agent_id.eq(agent), id.eq(id);

    /// The agent's instance for a caller's phone number (E.164, as stored).
    get pub fn by_phone(developer: &DeveloperId, agent: &AgentId, phone: &str)
        where developer_id.eq(developer), agent_id.eq(agent), phone_number.eq(phone);

    list pub fn list(developer: &DeveloperId, agent: &AgentId)
        where developer_id.eq(developer), agent_id.eq(agent);

    seq pub fn seq_of(developer: &DeveloperId, agent: &AgentId, id: &InstanceId)
        where developer_id.eq(developer), agent_id.eq(agent), id.eq(id);

    update pub fn update(developer: &DeveloperId, agent: &AgentId, id: &InstanceId, changes: &InstanceChanges)
        set (changes)
        where developer_id.eq(developer), agent_id.eq(agent), id.eq(id);

    delete pub fn delete(developer: &DeveloperId, agent: &AgentId, id: &InstanceId)
        where developer_id.eq(developer), agent_id.eq(agent), id.eq(id);
}
