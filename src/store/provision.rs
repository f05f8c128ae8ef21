//! Provisioning: an agent, its new collection and the collection's first documents written in
//! one transaction, so a failure leaves none of them behind.

use diesel_async::RunQueryDsl;

use super::agents::AgentRow;
use super::collections::CollectionRow;
use super::documents::{ChunkRow, DocumentRow};
use super::schema::{agents, chunks, collections, documents};
use super::{Db, StoreResult};
use crate::db_tx;

pub async fn create(
    db: &Db,
    collection: &CollectionRow,
    agent: &AgentRow,
    content: &[(DocumentRow, Vec<ChunkRow>)],
) -> StoreResult<()> {
    db_tx!(db, |conn| {
        diesel::insert_into(collections::table)
            .values(collection)
            .execute(conn)
            .await?;
        diesel::insert_into(agents::table)
            .values(agent)
            .execute(conn)
            .await?;
        for (document, rows) in content {
            diesel::insert_into(documents::table)
                .values(document)
                .execute(conn)
                .await?;
            // Row by row: SQLite cannot batch rows with nullable columns in diesel.
            for row in rows {
                diesel::insert_into(chunks::table)
                    .values(row)
                    .execute(conn)
                    .await?;
            }
        }
        Ok(())
    })
}
