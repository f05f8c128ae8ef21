//! Queries on knowledge collections and, for deletion, their documents and chunks.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::{agents, chunks, collections, documents};
use super::{Db, StoreResult};
use crate::db_tx;
use crate::ids::{CollectionId, DeveloperId};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = collections)]
pub struct CollectionRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: CollectionId,
    pub developer_id: DeveloperId,
    pub name: String,
    pub description: Option<String>,
    pub metadata: String,
    pub created_at: i64,
}

store_fns! {
    table = collections, row = CollectionRow;

    insert pub fn insert(collection: &CollectionRow);

    get pub fn get(developer: &DeveloperId, id: &CollectionId) where developer_id.eq(developer), id.eq(id);

    /// A developer's collections in creation order after `after` (a `seq`).
    list pub fn list(developer: &DeveloperId) where developer_id.eq(developer);

    seq pub fn seq_of(developer: &DeveloperId, id: &CollectionId) where developer_id.eq(developer), id.eq(id);
}

/// Removes a collection with all its documents and chunks, and detaches it from the
/// developer's agents, in one transaction. Answers whether the collection existed.
pub async fn delete(
    db: &Db,
    developer: &DeveloperId,
    id: &CollectionId,
    now: i64,
) -> StoreResult<bool> {
    db_tx!(db, |conn| {
        let owned: Option<i64> = collections::table
            .filter(collections::developer_id.eq(developer))
            .filter(collections::id.eq(id))
            .select(collections::seq)
            .first(conn)
            .await
            .optional()?;
        if owned.is_none() {
            return Ok(false);
        }
        diesel::delete(chunks::table.filter(chunks::collection_id.eq(id)))
            .execute(conn)
            .await?;
        diesel::delete(documents::table.filter(documents::collection_id.eq(id)))
            .execute(conn)
            .await?;
        diesel::update(
            agents::table
                .filter(agents::developer_id.eq(developer))
                .filter(agents::collection_id.eq(id)),
        )
        .set((
            agents::collection_id.eq(None::<String>),
            agents::updated_at.eq(now),
        ))
        .execute(conn)
        .await?;
        diesel::delete(collections::table.filter(collections::id.eq(id)))
            .execute(conn)
            .await?;
        Ok(true)
    })
}
