//! Queries on developers, the owners of everything else.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::schema::developers;
use super::{Db, StoreResult};
use crate::{db_run, time};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = developers)]
pub struct DeveloperRow {
    pub seq: i64,
    pub id: String,
    pub name: Option<String>,
    pub tier: String,
    pub created_at: i64,
}

/// Creates the developer unless it exists; answers whether it was created.
pub async fn ensure(db: &Db, id: &str) -> StoreResult<bool> {
    db_run!(db, |conn| {
        let inserted = diesel::insert_into(developers::table)
            .values((
                developers::id.eq(id),
                developers::tier.eq("starter"),
                developers::created_at.eq(time::now_ms()),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
        Ok(inserted == 1)
    })
}

pub async fn get(db: &Db, id: &str) -> StoreResult<Option<DeveloperRow>> {
    db_run!(db, |conn| {
        Ok(developers::table
            .filter(developers::id.eq(id))
            .select(DeveloperRow::as_select())
            .first(conn)
            .await
            .optional()?)
    })
}

pub async fn count(db: &Db) -> StoreResult<i64> {
    db_run!(db, |conn| {
        Ok(developers::table.count().get_result(conn).await?)
    })
}
