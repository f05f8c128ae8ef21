//! Semantic search over a collection: embed the query, search the collection's vector index
//! (off the async workers), and fill the hits in with their text and metadata from storage.
//! Used by the search endpoint, by chat retrieval and by the `search_knowledge` tool.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::knowledge::{ChunkTexts, IndexOf, KnowledgeIndex};
use super::Supervised;
use crate::engines::embeddings::Embedder;
use crate::error::ApiError;
use crate::ids::CollectionId;

/// One search result.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeHit {
    pub content: String,
    /// 0-1: the cosine similarity of the query and the chunk (negatives clamped to 0).
    pub score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub document_id: String,
    pub chunk_index: i32,
}

/// Searches a collection whose ownership the caller has checked.
pub async fn search_collection(
    embedder: &dyn Embedder,
    knowledge: &Supervised<KnowledgeIndex>,
    collection_id: &CollectionId,
    query: String,
    limit: usize,
    threshold: f32,
) -> Result<Vec<KnowledgeHit>, ApiError> {
    let mut embedded = embedder.embed(vec![query]).await?;
    let vector = embedded
        .pop()
        .ok_or_else(|| ApiError::Internal("the embedder returned nothing".into()))?;
    let index = knowledge
        .send(IndexOf {
            collection_id: collection_id.clone(),
        })
        .await??;
    let hits = tokio::task::spawn_blocking(move || {
        index
            .read()
            .map(|index| index.search(&vector, limit, threshold))
            .unwrap_or_default()
    })
    .await
    .map_err(|_| ApiError::Internal("search failed".into()))?;
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    let texts: HashMap<(String, i32), (String, String)> = knowledge
        .send(ChunkTexts {
            collection_id: collection_id.clone(),
            chunks: hits.iter().map(|h| h.chunk.clone()).collect(),
        })
        .await??
        .into_iter()
        .map(|(doc, index, content, metadata)| ((doc, index), (content, metadata)))
        .collect();
    Ok(hits
        .into_iter()
        .filter_map(|hit| {
            let key = (hit.chunk.document_id.clone(), hit.chunk.chunk_index);
            // A chunk deleted since the index was read is skipped.
            let (content, metadata) = texts.get(&key)?;
            Some(KnowledgeHit {
                content: content.clone(),
                score: (f64::from(hit.score) * 10_000.0).round() / 10_000.0,
                metadata: Some(crate::store::stored_json(metadata)),
                document_id: hit.chunk.document_id,
                chunk_index: hit.chunk.chunk_index,
            })
        })
        .collect())
}
