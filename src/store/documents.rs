//! Queries on ingested documents and their chunks (with their embeddings, stored as
//! little-endian f32 bytes next to the text they embed).

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::schema::{chunks, collections, documents};
use super::{Db, StoreResult};
use crate::ids::{CollectionId, DeveloperId, DocumentId};
use crate::{db_run, db_tx};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = documents)]
pub struct DocumentRow {
    pub id: DocumentId,
    pub developer_id: DeveloperId,
    pub collection_id: CollectionId,
    pub content_type: String,
    pub source_url: Option<String>,
    pub metadata: String,
    pub chunk_count: i32,
    pub tokens: i64,
    pub created_at: i64,
}

/// A chunk as stored. `None` inserts NULL rather than the column's default, which lets
/// SQLite take many rows in one `INSERT` (a default there would need a statement per row).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = chunks, treat_none_as_default_value = false)]
pub struct ChunkRow {
    pub document_id: DocumentId,
    pub collection_id: CollectionId,
    pub chunk_index: i32,
    pub content: String,
    pub metadata: String,
    pub embedding: Option<Vec<u8>>,
}

/// A stored embedding's bytes as floats (little-endian f32).
pub fn floats_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Floats as stored bytes.
pub fn bytes_of(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Chunks written by one multi-row `INSERT`: 6 bound values a row, 3,000 a statement, well
/// under SQLite's limit of 32,766 variables and PostgreSQL's 65,535 parameters.
const CHUNKS_PER_INSERT: usize = 500;

/// Writes chunks in multi-row `INSERT`s of [`CHUNKS_PER_INSERT`], inside the connection's
/// open transaction.
trait InsertChunks {
    async fn insert_chunks(&mut self, rows: &[ChunkRow]) -> StoreResult<()>;
}

impl InsertChunks for super::SqliteConn {
    async fn insert_chunks(&mut self, rows: &[ChunkRow]) -> StoreResult<()> {
        // diesel builds SQLite's multi-row INSERT only on its synchronous connection, which
        // the async wrapper lends out on a blocking thread (same connection, same
        // transaction).
        let rows = rows.to_vec();
        self.spawn_blocking(move |conn| {
            for batch in rows.chunks(CHUNKS_PER_INSERT) {
                diesel::RunQueryDsl::execute(
                    diesel::insert_into(chunks::table).values(batch),
                    conn,
                )?;
            }
            Ok(())
        })
        .await?;
        Ok(())
    }
}

impl InsertChunks for diesel_async::AsyncPgConnection {
    async fn insert_chunks(&mut self, rows: &[ChunkRow]) -> StoreResult<()> {
        for batch in rows.chunks(CHUNKS_PER_INSERT) {
            diesel::insert_into(chunks::table)
                .values(batch)
                .execute(self)
                .await?;
        }
        Ok(())
    }
}

/// Stores a document with all its chunks in one transaction, if the collection still exists
/// and belongs to the developer. Answers false (and stores nothing) otherwise.
pub async fn insert(db: &Db, document: &DocumentRow, rows: &[ChunkRow]) -> StoreResult<bool> {
    db_tx!(db, |conn| {
        let owned: Option<i64> = collections::table
            .filter(collections::id.eq(&document.collection_id))
            .filter(collections::developer_id.eq(&document.developer_id))
            .select(collections::seq)
            .first(conn)
            .await
            .optional()?;
        if owned.is_none() {
            return Ok(false);
        }
        diesel::insert_into(documents::table)
            .values(document)
            .execute(conn)
            .await?;
        conn.insert_chunks(rows).await?;
        Ok(true)
    })
}

/// Deletes a document of a collection and its chunks. Answers whether it existed.
pub async fn delete(
    db: &Db,
    developer: &DeveloperId,
    collection: &CollectionId,
    document: &DocumentId,
) -> StoreResult<bool> {
    db_tx!(db, |conn| {
        let found: Option<i64> = documents::table
            .filter(documents::id.eq(document))
            .filter(documents::collection_id.eq(collection))
            .filter(documents::developer_id.eq(developer))
            .select(documents::seq)
            .first(conn)
            .await
            .optional()?;
        if found.is_none() {
            return Ok(false);
        }
        diesel::delete(chunks::table.filter(chunks::document_id.eq(document)))
            .execute(conn)
            .await?;
        diesel::delete(documents::table.filter(documents::id.eq(document)))
            .execute(conn)
            .await?;
        Ok(true)
    })
}

/// Every embedded chunk of a collection as (document id, chunk index, embedding bytes), in
/// storage order: what the in-memory index is built from.
pub async fn vectors(
    db: &Db,
    collection: &CollectionId,
) -> StoreResult<Vec<(String, i32, Vec<u8>)>> {
    db_run!(db, |conn| {
        let rows: Vec<(String, i32, Option<Vec<u8>>)> = chunks::table
            .filter(chunks::collection_id.eq(collection))
            .order(chunks::seq.asc())
            .select((chunks::document_id, chunks::chunk_index, chunks::embedding))
            .load(conn)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(doc, index, embedding)| embedding.map(|e| (doc, index, e)))
            .collect())
    })
}

/// One document's embedded chunks as (chunk index, embedding bytes), in storage order: what
/// a node adds to its index when another node ingested the document.
pub async fn document_vectors(
    db: &Db,
    collection: &CollectionId,
    document: &DocumentId,
) -> StoreResult<Vec<(i32, Vec<u8>)>> {
    db_run!(db, |conn| {
        let rows: Vec<(i32, Option<Vec<u8>>)> = chunks::table
            .filter(chunks::collection_id.eq(collection))
            .filter(chunks::document_id.eq(document))
            .order(chunks::seq.asc())
            .select((chunks::chunk_index, chunks::embedding))
            .load(conn)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(index, embedding)| embedding.map(|e| (index, e)))
            .collect())
    })
}

/// The text and metadata of the chunks that search found, as (document id, chunk index,
/// content, metadata JSON). May include neighbours with the same ids and indices in other
/// combinations; callers match exact pairs.
pub async fn chunk_texts(
    db: &Db,
    collection: &CollectionId,
    document_ids: &[String],
    chunk_indices: &[i32],
) -> StoreResult<Vec<(String, i32, String, String)>> {
    db_run!(db, |conn| {
        Ok(chunks::table
            .filter(chunks::collection_id.eq(collection))
            .filter(chunks::document_id.eq_any(document_ids))
            .filter(chunks::chunk_index.eq_any(chunk_indices))
            .select((
                chunks::document_id,
                chunks::chunk_index,
                chunks::content,
                chunks::metadata,
            ))
            .load(conn)
            .await?)
    })
}
