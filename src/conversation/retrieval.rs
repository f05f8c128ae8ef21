//! Knowledge retrieval before the model answers: the chunks of the agent's collection closest
//! to the user's words, as a system-prompt section. The model always gets the best
//! [`RETRIEVED_CHUNKS`] for a question; only text below [`RETRIEVAL_FLOOR`] (cosine
//! similarity, the search's one scale) is left out as unrelated. Chat turns call [`retrieve`] directly;
//! voice sessions get a [`CollectionKnowledge`] among their engines, which the session calls
//! after each caller turn (with its own deadline) before the model starts.

use crate::ids::CollectionId;
use crate::registry::Supervised;
use std::sync::Arc;

use switchboard_actors::engine::{EngineError, EngineFuture, KnowledgeRetriever};

use crate::engines::embeddings::Embedder;
use crate::error::ApiError;
use crate::registry::knowledge::KnowledgeIndex;
use crate::registry::search::{search_collection, KnowledgeHit};

/// Chunks retrieved into the prompt before the model runs (within
/// `prompt::KNOWLEDGE_BUDGET_CHARS`).
pub const RETRIEVED_CHUNKS: usize = 3;
/// Least cosine similarity a chunk needs to be retrieved: a floor for clearly unrelated
/// text only. In the evaluation set (`tests/evaluation/`, all-MiniLM-L6-v2, 1,000-character
/// chunks) the passage answering a question scored 0.10-0.67 and the best passage for a
/// question the knowledge does not answer 0.11-0.62: a score cannot tell them apart, so the
/// model gets the best passages and the floor sits below both.
pub const RETRIEVAL_FLOOR: f32 = 0.05;
/// Most characters of the user's words used as the query.
const QUERY_CHARS: usize = 2_000;

/// The best chunks of `collection_id` for `latest` (and the user's `previous` message, which
/// often names what a follow-up question is about).
pub async fn retrieve(
    embedder: &dyn Embedder,
    knowledge: &Supervised<KnowledgeIndex>,
    collection_id: &CollectionId,
    latest: &str,
    previous: Option<&str>,
) -> Result<Vec<KnowledgeHit>, ApiError> {
    let query = match previous {
        Some(previous) => format!("{latest}\n{previous}"),
        None => latest.to_string(),
    };
    search_collection(
        embedder,
        knowledge,
        collection_id,
        query.chars().take(QUERY_CHARS).collect(),
        RETRIEVED_CHUNKS,
        RETRIEVAL_FLOOR,
    )
    .await
}

/// One agent's collection, searched for a voice session.
pub struct CollectionKnowledge {
    pub embedder: Arc<dyn Embedder>,
    pub knowledge: Supervised<KnowledgeIndex>,
    pub collection_id: CollectionId,
}

impl KnowledgeRetriever for CollectionKnowledge {
    fn retrieve(&self, query: String) -> EngineFuture<Option<String>> {
        let (embedder, knowledge) = (self.embedder.clone(), self.knowledge.clone());
        let collection_id = self.collection_id.clone();
        Box::pin(async move {
            // The session has already joined the caller's latest and previous turns.
            let hits = retrieve(embedder.as_ref(), &knowledge, &collection_id, &query, None)
                .await
                .map_err(|e| EngineError::internal(e.to_string()))?;
            Ok(super::prompt::knowledge_section(&hits))
        })
    }
}
