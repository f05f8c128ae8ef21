//! Queries on agent instances: per-agent records (a customer, a store, a caller) whose
//! context and variables personalise the agent's prompt.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::schema::agent_instances as instances;
use super::{Db, StoreResult};
use crate::db_run;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = instances)]
pub struct InstanceRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: String,
    pub developer_id: String,
    pub agent_id: String,
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

pub async fn insert(db: &Db, row: &InstanceRow) -> StoreResult<InstanceRow> {
    db_run!(db, |conn| {
        Ok(diesel::insert_into(instances::table)
            .values(row)
            .returning(InstanceRow::as_returning())
            .get_result(conn)
            .await?)
    })
}

pub async fn get(
    db: &Db,
    developer: &str,
    agent: &str,
    id: &str,
) -> StoreResult<Option<InstanceRow>> {
    db_run!(db, |conn| {
        Ok(instances::table
            .filter(instances::developer_id.eq(developer))
            .filter(instances::agent_id.eq(agent))
            .filter(instances::id.eq(id))
            .select(InstanceRow::as_select())
            .first(conn)
            .await
            .optional()?)
    })
}

/// The agent's instance for a caller's phone number (E.164, as stored).
pub async fn by_phone(
    db: &Db,
    developer: &str,
    agent: &str,
    phone: &str,
) -> StoreResult<Option<InstanceRow>> {
    db_run!(db, |conn| {
        Ok(instances::table
            .filter(instances::developer_id.eq(developer))
            .filter(instances::agent_id.eq(agent))
            .filter(instances::phone_number.eq(phone))
            .select(InstanceRow::as_select())
            .first(conn)
            .await
            .optional()?)
    })
}

pub async fn list(
    db: &Db,
    developer: &str,
    agent: &str,
    after: i64,
    limit: i64,
) -> StoreResult<Vec<InstanceRow>> {
    db_run!(db, |conn| {
        Ok(instances::table
            .filter(instances::developer_id.eq(developer))
            .filter(instances::agent_id.eq(agent))
            .filter(instances::seq.gt(after))
            .order(instances::seq.asc())
            .limit(limit)
            .select(InstanceRow::as_select())
            .load(conn)
            .await?)
    })
}

pub async fn seq_of(db: &Db, developer: &str, agent: &str, id: &str) -> StoreResult<Option<i64>> {
    db_run!(db, |conn| {
        Ok(instances::table
            .filter(instances::developer_id.eq(developer))
            .filter(instances::agent_id.eq(agent))
            .filter(instances::id.eq(id))
            .select(instances::seq)
            .first(conn)
            .await
            .optional()?)
    })
}

pub async fn update(
    db: &Db,
    developer: &str,
    agent: &str,
    id: &str,
    changes: &InstanceChanges,
) -> StoreResult<Option<InstanceRow>> {
    db_run!(db, |conn| {
        Ok(diesel::update(
            instances::table
                .filter(instances::developer_id.eq(developer))
                .filter(instances::agent_id.eq(agent))
                .filter(instances::id.eq(id)),
        )
        .set(changes)
        .returning(InstanceRow::as_returning())
        .get_result(conn)
        .await
        .optional()?)
    })
}

pub async fn delete(db: &Db, developer: &str, agent: &str, id: &str) -> StoreResult<bool> {
    db_run!(db, |conn| {
        let deleted = diesel::delete(
            instances::table
                .filter(instances::developer_id.eq(developer))
                .filter(instances::agent_id.eq(agent))
                .filter(instances::id.eq(id)),
        )
        .execute(conn)
        .await?;
        Ok(deleted == 1)
    })
}
