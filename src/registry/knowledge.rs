//! `KnowledgeIndex`: one in-memory vector index per collection, built from storage on first
//! use, kept in an LRU of collections, and updated in place on ingest and document delete.
//! Searches run on the blocking pool under a read lock, so the actor only hands out indexes
//! and never computes. A large collection's HNSW graph is built, extended and rebuilt on the
//! blocking pool too, on a small rayon pool of `registry.search_graph_threads` threads
//! (see `knowledge::index`); exact search answers for whatever the graph does not hold yet.
//! On PostgreSQL with several nodes, documents ingested or deleted on another node arrive as
//! change notifications and are added to or removed from a loaded index at once (only that
//! document's vectors are read); while the change listener is down, a cached index is
//! instead rebuilt after 30 × `registry.shared_cache_ttl_ms` (30 s by default).

use std::sync::{Arc, RwLock};

use actix::prelude::*;

use super::cache::RegistryCache;
use crate::background::BackgroundPriority;
use crate::cluster::{Change, Changed, FeedState};
use crate::config::RegistryConfig;
use crate::error::ApiError;
use crate::ids::{CollectionId, DeveloperId, DocumentId};
use crate::knowledge::index::{ChunkRef, VectorIndex};
use crate::store::documents::{self, ChunkRow, DocumentRow};
use crate::store::Db;

/// Collections whose indexes are kept in memory.
const CACHED_COLLECTIONS: usize = 256;

pub type SharedIndex = Arc<RwLock<VectorIndex>>;

pub struct KnowledgeIndex {
    db: Db,
    dimensions: usize,
    cache: RegistryCache<CollectionId, SharedIndex>,
    graph_min_chunks: usize,
    graph_search_ef: usize,
    /// Where graph jobs compute; `None` if its threads could not be started (exact search
    /// then answers for every collection).
    graph_pool: Option<Arc<rayon::ThreadPool>>,
    /// Counts document removals: a document read from storage for another node's ingest is
    /// not added when a removal happened while it was read.
    removals: u64,
}

impl KnowledgeIndex {
    /// The index over `db`; its graph builders run at `priority`.
    pub fn new(
        db: Db,
        dimensions: usize,
        config: &RegistryConfig,
        priority: BackgroundPriority,
    ) -> Self {
        let ttl = config.cache_ttl(db.backend()).map(|t| t * 30);
        let graph_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.graph_threads())
            .thread_name(|i| format!("search-graph-{i}"))
            .start_handler(move |_| priority.apply_to_current_thread())
            .build()
            .map(Arc::new)
            .map_err(|err| tracing::warn!("cannot start the search-graph builders: {err}"))
            .ok();
        Self {
            db,
            dimensions,
            cache: RegistryCache::new(CACHED_COLLECTIONS, ttl),
            graph_min_chunks: config.search_graph_min_chunks,
            graph_search_ef: config.search_graph_ef,
            graph_pool,
            removals: 0,
        }
    }

    /// Starts the graph work due on an index, if any (see [`maintain_graph`]).
    fn maintain(&self, index: &SharedIndex) {
        if let Some(pool) = &self.graph_pool {
            maintain_graph(index, pool);
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
    fn remove_from_index(&mut self, collection: &CollectionId, document: &DocumentId) {
        self.removals += 1;
        let Some(shared) = self.cache.get(collection) else {
            // A build in flight may have read the document: drop it.
            self.cache.invalidate(collection);
            return;
        };
        let removed = match shared.write() {
            Ok(mut index) => Some(
                index.contains_document(document.as_str()) && {
                    index.remove_document(document.as_str());
                    true
                },
            ),
            Err(_) => None,
        };
        match removed {
            Some(true) => self.maintain(&shared),
            Some(false) => {}
            None => self.cache.invalidate(collection),
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
    pub collection_id: CollectionId,
}

impl Handler<IndexOf> for KnowledgeIndex {
    type Result = ResponseActFuture<Self, Result<SharedIndex, ApiError>>;

    fn handle(&mut self, msg: IndexOf, _: &mut Context<Self>) -> Self::Result {
        if let Some(index) = self.cache.get(&msg.collection_id) {
            return Box::pin(fut::ready(Ok(index)));
        }
        let db = self.db.clone();
        let dimensions = self.dimensions;
        let graph_min_chunks = self.graph_min_chunks;
        let graph_search_ef = self.graph_search_ef;
        let generation = self.cache.generation();
        let collection = msg.collection_id;
        Box::pin(
            async move {
                let rows = documents::vectors(&db, &collection).await?;
                let index = tokio::task::spawn_blocking(move || {
                    let mut index =
                        VectorIndex::new(dimensions).with_ann_threshold(graph_min_chunks);
                    index.set_search_ef(graph_search_ef);
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
                registry.maintain(&index);
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
        collection: &CollectionId,
        document: &DocumentId,
        chunks: &[i32],
        vectors: &[Vec<f32>],
    ) {
        let collection = collection.clone();
        let Some(index) = self.cache.get(&collection) else {
            // A build in flight may have read storage before this document: drop it.
            self.cache.invalidate(&collection);
            return;
        };
        let poisoned = match index.write() {
            Ok(mut index) => {
                if index.contains_document(document.as_str()) {
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
            self.maintain(&index);
        }
    }
}

/// Runs the graph work due on an index (a first build, an extension with new chunks, a
/// rebuild past the tombstone fraction, retiring a graph no longer wanted) on the blocking
/// pool, one job after another until none is due. The job computes on `pool` without the
/// index's lock; the lock is taken only to copy its input (read) and to install its result
/// (write, brief). Searches meanwhile are answered exactly for what the graph lacks.
fn maintain_graph(index: &SharedIndex, pool: &Arc<rayon::ThreadPool>) {
    if !index.read().is_ok_and(|index| index.graph_work_due()) {
        return;
    }
    let index = index.clone();
    let pool = pool.clone();
    tokio::task::spawn_blocking(move || loop {
        let retired = match index.write() {
            Ok(mut index) => index.retire_unwanted_graph(),
            Err(_) => return,
        };
        drop(retired);
        let job = match index.read() {
            Ok(index) => index.graph_job(),
            Err(_) => return,
        };
        let Some(job) = job else {
            return;
        };
        let (build, points) = (job.is_build(), job.points());
        let started = std::time::Instant::now();
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.install(|| job.run())));
        let Ok(done) = outcome else {
            // Exact search goes on answering for what the graph lacks; the next change
            // tries again.
            tracing::error!("a search-graph job panicked");
            if let Ok(index) = index.read() {
                index.abandon_graph_job();
            }
            return;
        };
        let finished = match index.write() {
            Ok(mut index) => index.finish_graph(done),
            Err(_) => return,
        };
        drop(finished.retired);
        tracing::info!(
            build,
            points,
            installed = finished.installed,
            seconds = started.elapsed().as_secs_f32(),
            "search graph updated"
        );
    });
}

/// Deletes a document of a developer's collection; its vectors leave the index at once.
/// Answers whether it existed.
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct DeleteDocument {
    pub developer_id: DeveloperId,
    pub collection_id: CollectionId,
    pub document_id: DocumentId,
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
    pub collection_id: CollectionId,
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
    pub collection_id: CollectionId,
}

impl Handler<CollectionDropped> for KnowledgeIndex {
    type Result = ();

    fn handle(&mut self, msg: CollectionDropped, _: &mut Context<Self>) {
        self.cache.invalidate(&msg.collection_id);
    }
}
