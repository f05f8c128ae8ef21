//! Queries on ingested documents and their chunks (with their embeddings, stored as
//! little-endian f32 bytes next to the text they embed).

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::schema::{chunks, collections, documents};
use super::{Db, StoreResult};
use crate::{db_run, db_tx};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = documents)]
pub struct DocumentRow {
    pub id: String,
    pub developer_id: String,
    pub collection_id: String,
    pub content_type: String,
    pub source_url: Option<String>,
    pub metadata: String,
    pub chunk_count: i32,
    pub tokens: i64,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = chunks)]
pub struct ChunkRow {
    pub document_id: String,
    pub collection_id: String,
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
        // Row by row: SQLite cannot batch rows with nullable columns in diesel, and inside
        // one transaction each insert is cheap.
        for row in rows {
            diesel::insert_into(chunks::table)
                .values(row)
                .execute(conn)
                .await?;
        }
        Ok(true)
    })
}

/// Deletes a document of a collection and its chunks. Answers whether it existed.
pub async fn delete(
    db: &Db,
    developer: &str,
    collection: &str,
    document: &str,
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
pub async fn vectors(db: &Db, collection: &str) -> StoreResult<Vec<(String, i32, Vec<u8>)>> {
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
    collection: &str,
    document: &str,
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
    collection: &str,
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
