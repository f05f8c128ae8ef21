//! `KnowledgeIndex`: one in-memory vector index per collection, built from storage on first
//! use, kept in an LRU of collections, and updated in place on ingest and document delete.
//! Searches run on the blocking pool under a read lock, so the actor only hands out indexes
//! and never computes. On PostgreSQL with several nodes, documents ingested or deleted on
//! another node arrive as change notifications and are added to or removed from a loaded
//! index at once (only that document's vectors are read); while the change listener is down,
//! a cached index is instead rebuilt after 30 × `registry.shared_cache_ttl_ms` (30 s by
//! default).

use std::sync::{Arc, RwLock};

use actix::prelude::*;

use super::cache::RegistryCache;
use crate::cluster::{Change, Changed, FeedState};
use crate::config::RegistryConfig;
use crate::error::ApiError;
use crate::knowledge::index::{ChunkRef, VectorIndex};
use crate::store::documents::{self, ChunkRow, DocumentRow};
use crate::store::Db;

/// Collections whose indexes are kept in memory.
const CACHED_COLLECTIONS: usize = 256;

pub type SharedIndex = Arc<RwLock<VectorIndex>>;

pub struct KnowledgeIndex {
    db: Db,
    dimensions: usize,
    cache: RegistryCache<String, SharedIndex>,
    /// Counts document removals: a document read from storage for another node's ingest is
    /// not added when a removal happened while it was read.
    removals: u64,
}

impl KnowledgeIndex {
    pub fn new(db: Db, dimensions: usize, config: &RegistryConfig) -> Self {
        let ttl = config.cache_ttl(db.backend()).map(|t| t * 30);
        Self {
            db,
            dimensions,
            cache: RegistryCache::new(CACHED_COLLECTIONS, ttl),
            removals: 0,
        }
    }

    /// Applies other nodes' ingests and deletes as they are announced; a rebuild after the
    /// time limit happens only while the feed is down.
    pub fn following(mut self, feed: FeedState) -> Self {
        self.cache = self.cache.following(feed);
        self
    }

    /// Removes a document's vectors from a loaded index (an index that cannot be changed is
    /// dropped, to be rebuilt from storage).
    fn remove_from_index(&mut self, collection: &str, document: &str) {
        self.removals += 1;
        let Some(shared) = self.cache.get(&collection.to_string()) else {
            // A build in flight may have read the document: drop it.
            self.cache.invalidate(&collection.to_string());
            return;
        };
        let removed = match shared.write() {
            Ok(mut index) => Some(
                index.contains_document(document) && {
                    index.remove_document(document);
                    true
                },
            ),
            Err(_) => None,
        };
        match removed {
            Some(true) => refresh_graph(&shared),
            Some(false) => {}
            None => self.cache.invalidate(&collection.to_string()),
        }
    }
}

impl Handler<Changed> for KnowledgeIndex {
    type Result = ();

    fn handle(&mut self, msg: Changed, ctx: &mut Context<Self>) {
        match msg.0 {
            Change::Documents {
                collection,
                document,
                removed: true,
            } => self.remove_from_index(&collection, &document),
            Change::Documents {
                collection,
                document,
                removed: false,
            } => {
                if self.cache.get(&collection).is_none() {
                    // Not loaded here (a build in flight may predate the document).
                    self.cache.invalidate(&collection);
                    return;
                }
                let db = self.db.clone();
                let removals = self.removals;
                async move {
                    let rows = documents::document_vectors(&db, &collection, &document).await;
                    (collection, document, rows)
                }
                .into_actor(self)
                .map(move |(collection, document, rows), registry, _| {
                    let rows = match rows {
                        Ok(rows) if registry.removals == removals => rows,
                        Ok(_) => {
                            registry.cache.invalidate(&collection);
                            return;
                        }
                        Err(e) => {
                            tracing::warn!("cannot read an ingested document's vectors: {e}");
                            registry.cache.invalidate(&collection);
                            return;
                        }
                    };
                    let (chunks, vectors): (Vec<i32>, Vec<Vec<f32>>) = rows
                        .into_iter()
                        .map(|(index, bytes)| (index, documents::floats_of(&bytes)))
                        .unzip();
                    registry.add_document(&collection, &document, &chunks, &vectors);
                })
                .spawn(ctx);
            }
            Change::Collection { id, .. } => self.cache.invalidate(&id),
            Change::Everything => self.cache.clear(),
            _ => {}
        }
    }
}

impl Actor for KnowledgeIndex {
    type Context = Context<Self>;
}

/// The index of a collection (whose ownership the caller has checked).
#[derive(Message)]
#[rtype(result = "Result<SharedIndex, ApiError>")]
pub struct IndexOf {
    pub collection_id: String,
}

impl Handler<IndexOf> for KnowledgeIndex {
    type Result = ResponseActFuture<Self, Result<SharedIndex, ApiError>>;

    fn handle(&mut self, msg: IndexOf, _: &mut Context<Self>) -> Self::Result {
        if let Some(index) = self.cache.get(&msg.collection_id) {
            return Box::pin(fut::ready(Ok(index)));
        }
        let db = self.db.clone();
        let dimensions = self.dimensions;
        let generation = self.cache.generation();
        let collection = msg.collection_id;
        Box::pin(
            async move {
                let rows = documents::vectors(&db, &collection).await?;
                let index = tokio::task::spawn_blocking(move || {
                    let mut index = VectorIndex::new(dimensions);
                    for (document_id, chunk_index, bytes) in rows {
                        let vector = documents::floats_of(&bytes);
                        index.add(
                            ChunkRef {
                                document_id,
                                chunk_index,
                            },
                            &vector,
                        );
                    }
                    index
                })
                .await
                .map_err(|_| ApiError::Internal("building a search index failed".into()))?;
                Ok::<_, ApiError>((collection, Arc::new(RwLock::new(index))))
            }
            .into_actor(self)
            .map(move |result, registry, _| {
                let (collection, index) = result?;
                registry.cache.fill(generation, collection, index.clone());
                refresh_graph(&index);
                Ok(index)
            }),
        )
    }
}

/// Stores a document with its chunks in one transaction, then adds its vectors to the
/// collection's index if it is loaded. Answers false when the collection is gone.
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct StoreDocument {
    pub document: DocumentRow,
    pub chunks: Vec<ChunkRow>,
    pub vectors: Vec<Vec<f32>>,
}

impl Handler<StoreDocument> for KnowledgeIndex {
    type Result = ResponseActFuture<Self, Result<bool, ApiError>>;

    fn handle(&mut self, msg: StoreDocument, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move {
                let stored = documents::insert(&db, &msg.document, &msg.chunks).await?;
                Ok::<_, ApiError>((stored, msg))
            }
            .into_actor(self)
            .map(|result, registry, _| {
                let (stored, msg) = result?;
                if stored {
                    registry.add_vectors(&msg.document, msg.chunks, msg.vectors);
                }
                Ok(stored)
            }),
        )
    }
}

impl KnowledgeIndex {
    fn add_vectors(
        &mut self,
        document: &DocumentRow,
        chunks: Vec<ChunkRow>,
        vectors: Vec<Vec<f32>>,
    ) {
        let indices: Vec<i32> = chunks.iter().map(|chunk| chunk.chunk_index).collect();
        self.add_document(&document.collection_id, &document.id, &indices, &vectors);
    }

    /// Puts a document's vectors into the collection's loaded index, unless they are there
    /// already (this node's own ingest and the notification of it both arrive; an index built
    /// after the ingest holds it before its notification comes).
    fn add_document(
        &mut self,
        collection: &str,
        document: &str,
        chunks: &[i32],
        vectors: &[Vec<f32>],
    ) {
        let collection = collection.to_string();
        let Some(index) = self.cache.get(&collection) else {
            // A build in flight may have read storage before this document: drop it.
            self.cache.invalidate(&collection);
            return;
        };
        let poisoned = match index.write() {
            Ok(mut index) => {
                if index.contains_document(document) {
                    return;
                }
                for (chunk_index, vector) in chunks.iter().zip(vectors) {
                    index.add(
                        ChunkRef {
                            document_id: document.to_string(),
                            chunk_index: *chunk_index,
                        },
                        vector,
                    );
                }
                false
            }
            Err(_) => true,
        };
        if poisoned {
            self.cache.invalidate(&collection);
        } else {
            refresh_graph(&index);
        }
    }
}

/// Starts building a large collection's HNSW graph when it has none for its current contents
/// (see `knowledge::index`): on a blocking thread, inside a one-thread pool so the build never
/// takes the cores live calls need. A build that finishes after the index changed is thrown
/// away and started again over the new contents; exact search answers meanwhile.
fn refresh_graph(index: &SharedIndex) {
    if !index.read().is_ok_and(|index| index.wants_ann()) {
        return;
    }
    let index = index.clone();
    // Even the snapshot (a copy of every vector) is taken off the actor's thread.
    tokio::task::spawn_blocking(move || {
        let job = match index.write() {
            Ok(mut index) => index.ann_job(),
            Err(_) => None,
        };
        let Some(mut job) = job else {
            return;
        };
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(1).build() {
            Ok(pool) => pool,
            Err(err) => {
                tracing::warn!("cannot start the search-graph builder: {err}");
                return;
            }
        };
        loop {
            let started = std::time::Instant::now();
            let graph = pool.install(|| job.build());
            let Ok(mut guard) = index.write() else {
                return;
            };
            if guard.install_ann(graph) {
                tracing::info!(
                    chunks = guard.len(),
                    seconds = started.elapsed().as_secs_f32(),
                    "search graph built"
                );
                return;
            }
            match guard.ann_job() {
                Some(next) => job = next,
                None => return,
            }
        }
    });
}

/// Deletes a document of a developer's collection; its vectors leave the index at once.
/// Answers whether it existed.
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct DeleteDocument {
    pub developer_id: String,
    pub collection_id: String,
    pub document_id: String,
}

impl Handler<DeleteDocument> for KnowledgeIndex {
    type Result = ResponseActFuture<Self, Result<bool, ApiError>>;

    fn handle(&mut self, msg: DeleteDocument, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move {
                let deleted =
                    documents::delete(&db, &msg.developer_id, &msg.collection_id, &msg.document_id)
                        .await?;
                Ok::<_, ApiError>((deleted, msg))
            }
            .into_actor(self)
            .map(|result, registry, _| {
                let (deleted, msg) = result?;
                if deleted {
                    registry.remove_from_index(&msg.collection_id, &msg.document_id);
                }
                Ok(deleted)
            }),
        )
    }
}

/// The text and metadata of chunks found by a search, by (document id, chunk index).
#[derive(Message)]
#[rtype(result = "Result<Vec<(String, i32, String, String)>, ApiError>")]
pub struct ChunkTexts {
    pub collection_id: String,
    pub chunks: Vec<ChunkRef>,
}

impl Handler<ChunkTexts> for KnowledgeIndex {
    type Result = ResponseFuture<Result<Vec<(String, i32, String, String)>, ApiError>>;

    fn handle(&mut self, msg: ChunkTexts, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let document_ids: Vec<String> =
                msg.chunks.iter().map(|c| c.document_id.clone()).collect();
            let indices: Vec<i32> = msg.chunks.iter().map(|c| c.chunk_index).collect();
            Ok(documents::chunk_texts(&db, &msg.collection_id, &document_ids, &indices).await?)
        })
    }
}

/// A collection was deleted: its index is dropped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CollectionDropped {
    pub collection_id: String,
}

impl Handler<CollectionDropped> for KnowledgeIndex {
    type Result = ();

    fn handle(&mut self, msg: CollectionDropped, _: &mut Context<Self>) {
        self.cache.invalidate(&msg.collection_id);
    }
}
