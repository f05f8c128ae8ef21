//! The in-memory vector index of one collection: unit-length embeddings in one contiguous
//! array, searched exactly with a dot-product loop the compiler vectorises (exact search is
//! fast enough up to about 100k chunks of 384 dimensions). Built from storage on first use;
//! updated in place on ingest and delete.
//!
//! From [`ANN_MIN_CHUNKS`] live chunks an HNSW graph ([`super::graph`]) answers instead,
//! behind the same [`VectorIndex::search`]. The graph is kept current without rebuilding it:
//!
//! - **Ingest** appends to the array at once; slots not yet in the graph (its uncovered
//!   tail) are searched exactly next to the graph, and a background job inserts them into
//!   the graph ([`VectorIndex::graph_job`], [`GraphJob::run`], [`VectorIndex::finish_graph`]).
//! - **Delete** marks the document's slots as tombstones: searches skip them at once (the
//!   graph's walk filters them out while still passing through them), so results stay
//!   `limit` long.
//! - When tombstones pass [`REBUILD_TOMBSTONE_FRACTION`] of the slots, a background job
//!   builds a new graph over the live chunks only (in parallel, on the caller's thread pool)
//!   and installs it with the slots renumbered; changes made during the build carry over.
//!   The first graph of a collection that grows past the threshold is built the same way,
//!   and exact search answers until it is ready.
//!
//! So a search never misses a chunk just ingested nor returns one just deleted, whatever a
//! background job is doing. Jobs run one at a time per index and never hold its lock while
//! they compute.
//!
//! Scores: embeddings are L2-normalised, so the dot product is the cosine similarity `c` in
//! [-1, 1]. The score is that cosine itself, with the negative side (text pointing away from
//! the query, unrelated for retrieval's purposes) clamped to 0 so it lies in the API's 0-1. A
//! `threshold` is a minimum cosine similarity: one scale for the API, chat retrieval and the
//! `search_knowledge` tool.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;

use super::graph::{DoneKind, Graph, JobKind};
pub use super::graph::{Finished, GraphDone, GraphJob, RetiredGraph, GRAPH_EF_SEARCH};
use super::vectors::dot;
pub use super::vectors::ChunkRef;

/// Collections with at least this many live chunks are searched through an HNSW graph.
pub const ANN_MIN_CHUNKS: usize = 100_000;
/// A graph is rebuilt over the live chunks once this fraction of its index's slots are
/// tombstones (deleted chunks still in the graph). Below it, searches skip them.
pub const REBUILD_TOMBSTONE_FRACTION: f64 = 0.2;

/// One search hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub chunk: ChunkRef,
    /// Cosine similarity, negatives clamped to 0.
    pub score: f32,
}

/// The API's 0-1 score of a cosine similarity: the cosine, negatives (and rounding above 1)
/// clamped.
pub fn score_of(cosine: f32) -> f32 {
    cosine.clamp(0.0, 1.0)
}

#[derive(Debug)]
pub struct VectorIndex {
    dimensions: usize,
    /// By slot; a slot keeps its number until the slots are compacted (`layout` changes).
    refs: Vec<ChunkRef>,
    vectors: Vec<f32>,
    /// Tombstones, by slot: deleted chunks that a graph may still hold.
    deleted: Vec<bool>,
    tombstones: usize,
    graph: Option<Arc<Graph>>,
    /// Slots `0..graph_covers` are in the graph; later ones are searched exactly.
    graph_covers: usize,
    /// Bumped whenever slots are renumbered; a job over another numbering is refused.
    layout: u64,
    /// One graph job at a time.
    job_running: AtomicBool,
    ann_min_chunks: usize,
    /// Candidates a graph search keeps (at least the search's `limit`).
    search_ef: usize,
}

impl Drop for VectorIndex {
    fn drop(&mut self) {
        // Tearing a large graph down takes a while: not on the thread that let go of it
        // (an actor's, when the cache evicts a collection).
        if let Some(graph) = self.graph.take() {
            if graph.points() >= 10_000 {
                let _ = std::thread::Builder::new()
                    .name("search-graph-drop".into())
                    .spawn(move || drop(graph));
            }
        }
    }
}

impl VectorIndex {
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions,
            refs: Vec::new(),
            vectors: Vec::new(),
            deleted: Vec::new(),
            tombstones: 0,
            graph: None,
            graph_covers: 0,
            layout: 0,
            job_running: AtomicBool::new(false),
            ann_min_chunks: ANN_MIN_CHUNKS,
            search_ef: GRAPH_EF_SEARCH,
        }
    }

    /// Candidates a graph search keeps: more finds more of the true nearest chunks (recall)
    /// and costs time. A search always keeps at least its `limit`.
    pub fn set_search_ef(&mut self, ef: usize) {
        self.search_ef = ef.max(1);
    }

    /// The number of live chunks from which the graph answers (tests, benchmarks and
    /// operators use other sizes).
    pub fn with_ann_threshold(mut self, min_chunks: usize) -> Self {
        self.ann_min_chunks = min_chunks.max(1);
        self
    }

    /// Live chunks.
    pub fn len(&self) -> usize {
        self.refs.len() - self.tombstones
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Deleted chunks still holding a slot (until the next compaction).
    pub fn tombstones(&self) -> usize {
        self.tombstones
    }

    /// Whether searches go through a graph right now (for the chunks it covers).
    pub fn uses_ann(&self) -> bool {
        self.graph.is_some()
    }

    /// Chunks the graph covers (the rest are searched exactly).
    pub fn graph_covers(&self) -> usize {
        if self.graph.is_some() {
            self.graph_covers
        } else {
            0
        }
    }

    /// Adds a vector; one of another dimension is ignored (it cannot be compared).
    pub fn add(&mut self, chunk: ChunkRef, vector: &[f32]) {
        if vector.len() != self.dimensions {
            return;
        }
        self.refs.push(chunk);
        self.vectors.extend_from_slice(vector);
        self.deleted.push(false);
    }

    /// Whether any live (not deleted) vector of the document is in the index.
    pub fn contains_document(&self, document_id: &str) -> bool {
        self.refs
            .iter()
            .zip(&self.deleted)
            .any(|(chunk, deleted)| !deleted && chunk.document_id == document_id)
    }

    /// Removes every vector of a document: at once from searches. The slots are compacted
    /// right away when no graph refers to them, else left as tombstones.
    pub fn remove_document(&mut self, document_id: &str) {
        let mut removed = 0;
        for (slot, chunk) in self.refs.iter().enumerate() {
            if !self.deleted[slot] && chunk.document_id == document_id {
                self.deleted[slot] = true;
                removed += 1;
            }
        }
        self.tombstones += removed;
        if removed > 0 && self.graph.is_none() && !self.job_running.load(AtomicOrdering::Acquire) {
            self.compact();
        }
    }

    /// Drops the tombstones' slots, renumbering the rest (only with no graph and no job).
    fn compact(&mut self) {
        let dims = self.dimensions;
        let mut slot = 0;
        let deleted = std::mem::take(&mut self.deleted);
        self.refs.retain(|_| {
            let keep = !deleted[slot];
            slot += 1;
            keep
        });
        let mut kept_vectors = Vec::with_capacity(self.refs.len() * dims);
        for (slot, vector) in self.vectors.chunks_exact(dims.max(1)).enumerate() {
            if !deleted[slot] {
                kept_vectors.extend_from_slice(vector);
            }
        }
        self.vectors = kept_vectors;
        self.deleted = vec![false; self.refs.len()];
        self.tombstones = 0;
        self.layout += 1;
    }

    fn tombstone_fraction(&self) -> f64 {
        if self.refs.is_empty() {
            0.0
        } else {
            self.tombstones as f64 / self.refs.len() as f64
        }
    }

    /// Whether the graph is worth keeping: past the threshold, with some slack below it so
    /// a collection hovering around the threshold does not build and drop graphs in turn.
    fn wants_graph(&self) -> bool {
        let live = self.len();
        match self.graph {
            None => live >= self.ann_min_chunks,
            Some(_) => live >= self.ann_min_chunks / 2,
        }
    }

    /// Whether graph work is due (cheap: no copying): a first build, a rebuild past the
    /// tombstone fraction, an extension with new slots, or retiring a graph no longer wanted.
    pub fn graph_work_due(&self) -> bool {
        if self.job_running.load(AtomicOrdering::Acquire) {
            return false;
        }
        match &self.graph {
            None => self.wants_graph(),
            Some(_) => {
                !self.wants_graph()
                    || self.tombstone_fraction() > REBUILD_TOMBSTONE_FRACTION
                    || self.graph_covers < self.refs.len()
            }
        }
    }

    /// Takes the graph out of service when the collection shrank well below the threshold
    /// (exact search answers from then on), compacting the slots. Cheap.
    pub fn retire_unwanted_graph(&mut self) -> Option<RetiredGraph> {
        if self.graph.is_none()
            || self.wants_graph()
            || self.job_running.load(AtomicOrdering::Acquire)
        {
            return None;
        }
        let graph = self.graph.take().map(RetiredGraph);
        self.graph_covers = 0;
        if self.tombstones > 0 {
            self.compact();
        }
        graph
    }

    /// Takes the graph work that is due, if any and if no job is running: a build (first
    /// graph, or a rebuild past the tombstone fraction) or an extension with the slots added
    /// since. Copies what the job needs (under a read lock: searches go on), so the job runs
    /// without the index.
    pub fn graph_job(&self) -> Option<GraphJob> {
        if !self.wants_graph() {
            return None;
        }
        let extend = match &self.graph {
            None => false,
            Some(_) if self.tombstone_fraction() > REBUILD_TOMBSTONE_FRACTION => false,
            Some(_) if self.graph_covers < self.refs.len() => true,
            Some(_) => return None,
        };
        if self
            .job_running
            .compare_exchange(false, true, AtomicOrdering::AcqRel, AtomicOrdering::Acquire)
            .is_err()
        {
            return None;
        }
        let dims = self.dimensions;
        let kind = match (&self.graph, extend) {
            (Some(graph), true) => {
                let (from, upto) = (self.graph_covers, self.refs.len());
                JobKind::Extend {
                    graph: graph.clone(),
                    from,
                    upto,
                    vectors: self.vectors[from * dims..upto * dims].to_vec(),
                }
            }
            _ => {
                let base = self.refs.len();
                let kept: Vec<usize> = (0..base).filter(|&slot| !self.deleted[slot]).collect();
                let mut vectors = Vec::with_capacity(kept.len() * dims);
                for &slot in &kept {
                    vectors.extend_from_slice(&self.vectors[slot * dims..(slot + 1) * dims]);
                }
                JobKind::Build {
                    base,
                    refs: kept.iter().map(|&slot| self.refs[slot].clone()).collect(),
                    kept,
                    vectors,
                }
            }
        };
        Some(GraphJob {
            dimensions: dims,
            layout: self.layout,
            kind,
        })
    }

    /// Lets the next job start after one that could not finish.
    pub fn abandon_graph_job(&self) {
        self.job_running.store(false, AtomicOrdering::Release);
    }

    /// Takes a finished job's result into service, carrying over the changes made while it
    /// ran. Refused (and the next job may start) if the slots were renumbered meanwhile.
    pub fn finish_graph(&mut self, done: GraphDone) -> Finished {
        self.job_running.store(false, AtomicOrdering::Release);
        if done.layout != self.layout {
            return Finished {
                installed: false,
                retired: None,
            };
        }
        match done.kind {
            DoneKind::Extended { graph, upto } => {
                let current = self.graph.as_ref().is_some_and(|g| Arc::ptr_eq(g, &graph));
                if current && upto <= self.refs.len() {
                    self.graph_covers = self.graph_covers.max(upto);
                }
                Finished {
                    installed: current,
                    retired: None,
                }
            }
            DoneKind::Built {
                graph,
                base,
                kept,
                mut refs,
                mut vectors,
            } => {
                let dims = self.dimensions;
                // Chunks deleted during the build stay deleted; chunks added during it
                // follow the graph's slots, to be inserted by the next job.
                let mut deleted: Vec<bool> = kept.iter().map(|&slot| self.deleted[slot]).collect();
                refs.extend(self.refs.drain(base..));
                vectors.extend_from_slice(&self.vectors[base * dims..]);
                deleted.extend_from_slice(&self.deleted[base..]);
                self.tombstones = deleted.iter().filter(|d| **d).count();
                self.graph_covers = kept.len();
                self.refs = refs;
                self.vectors = vectors;
                self.deleted = deleted;
                self.layout += 1;
                let retired = self.graph.replace(Arc::new(graph)).map(RetiredGraph);
                Finished {
                    installed: true,
                    retired,
                }
            }
        }
    }

    /// The `limit` best chunks with a score of at least `threshold`, best first.
    pub fn search(&self, query: &[f32], limit: usize, threshold: f32) -> Vec<Hit> {
        if query.len() != self.dimensions || limit == 0 || self.dimensions == 0 {
            return Vec::new();
        }
        let mut best = match &self.graph {
            Some(graph) => {
                let covers = self.graph_covers.min(self.refs.len());
                let mut best = self.graph_search(graph, covers, query, limit, threshold);
                best.extend(self.exact(query, covers..self.refs.len(), limit, threshold));
                best
            }
            None => self.exact(query, 0..self.refs.len(), limit, threshold),
        };
        best.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        best.truncate(limit);
        best.into_iter()
            .map(|c| Hit {
                chunk: self.refs[c.index].clone(),
                score: c.score,
            })
            .collect()
    }

    /// The best live slots below `covers` through the graph. Tombstones are filtered out
    /// inside the graph's search: it still walks through them, so
    /// deletions clustered around a query do not hide the live chunks behind them. Should the
    /// walk still find fewer than `limit` live chunks, it is repeated keeping twice the
    /// candidates, and past `covers` candidates every slot is compared exactly.
    fn graph_search(
        &self,
        graph: &Graph,
        covers: usize,
        query: &[f32],
        limit: usize,
        threshold: f32,
    ) -> Vec<Candidate> {
        let live = |slot: &usize| *slot < covers && !self.deleted[*slot];
        // Without tombstones, filtering in the walk is not worth its cost; slots a running
        // job is adding past `covers` (searched exactly beside) are dropped afterwards.
        let keep: Option<&dyn Fn(&usize) -> bool> = (self.tombstones > 0).then_some(&live);
        // At most this many live chunks can be found (fewer if tombstones lie past `covers`).
        let findable = limit.min(covers.saturating_sub(self.tombstones).max(1));
        let mut ef = self.search_ef.max(limit);
        loop {
            let mut below_threshold = false;
            let hits: Vec<Candidate> = graph
                .nearest(query, limit, ef, keep)
                .iter()
                .filter_map(|n| {
                    if n.d_id >= covers {
                        return None;
                    }
                    let score = score_of(1.0 - n.distance);
                    if score < threshold {
                        below_threshold = true;
                        return None;
                    }
                    Some(Candidate {
                        score,
                        index: n.d_id,
                    })
                })
                .collect();
            if hits.len() >= findable || below_threshold {
                return hits;
            }
            if ef >= covers {
                return self.exact(query, 0..covers, limit, threshold);
            }
            ef *= 2;
        }
    }

    /// The `limit` best live slots of `range` at or above `threshold`, exactly.
    fn exact(
        &self,
        query: &[f32],
        range: std::ops::Range<usize>,
        limit: usize,
        threshold: f32,
    ) -> Vec<Candidate> {
        let dims = self.dimensions;
        let mut best: BinaryHeap<Candidate> = BinaryHeap::with_capacity(limit + 1);
        let start = range.start;
        let vectors = &self.vectors[range.start * dims..range.end * dims];
        for (offset, vector) in vectors.chunks_exact(dims).enumerate() {
            let index = start + offset;
            if self.deleted[index] {
                continue;
            }
            let score = score_of(dot(query, vector));
            if score < threshold {
                continue;
            }
            if best.len() < limit {
                best.push(Candidate { score, index });
            } else if best.peek().is_some_and(|worst| score > worst.score) {
                best.pop();
                best.push(Candidate { score, index });
            }
        }
        best.into_vec()
    }
}

/// A min-heap entry: the heap's top is the worst of the best so far.
#[derive(Debug, PartialEq)]
struct Candidate {
    score: f32,
    index: usize,
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.index.cmp(&other.index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::sync::RwLock;

    fn unit(values: &[f32]) -> Vec<f32> {
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        values.iter().map(|v| v / norm).collect()
    }

    fn chunk(doc: &str, index: i32) -> ChunkRef {
        ChunkRef {
            document_id: doc.into(),
            chunk_index: index,
        }
    }

    fn random_unit(rng: &mut impl rand::Rng, dims: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
        unit(&v)
    }

    /// Runs every due graph job to the end, as the registry does in the background.
    fn settle(index: &mut VectorIndex) {
        drop(index.retire_unwanted_graph());
        while let Some(job) = index.graph_job() {
            let finished = index.finish_graph(job.run());
            assert!(finished.installed);
            drop(finished.retired);
        }
        assert!(!index.graph_work_due());
    }

    /// 64-dimensional random chunks, ten per document `d<n>`.
    fn random_index(rng: &mut impl rand::Rng, size: usize, threshold: usize) -> VectorIndex {
        let mut index = VectorIndex::new(64).with_ann_threshold(threshold);
        for i in 0..size {
            index.add(
                chunk(&format!("d{}", i / 10), (i % 10) as i32),
                &random_unit(rng, 64),
            );
        }
        index
    }

    /// Recall@10 of `index` against exact search over the same live chunks.
    fn recall(index: &VectorIndex, exact: &VectorIndex, queries: &[Vec<f32>]) -> f64 {
        let mut found = 0;
        for query in queries {
            let approx = index.search(query, 10, 0.0);
            assert!(approx.windows(2).all(|w| w[0].score >= w[1].score));
            found += exact
                .search(query, 10, 0.0)
                .iter()
                .filter(|t| approx.iter().any(|a| a.chunk == t.chunk))
                .count();
        }
        found as f64 / (queries.len() * 10) as f64
    }

    /// The same chunks without a graph.
    fn exact_copy(index: &VectorIndex) -> VectorIndex {
        let mut copy = VectorIndex::new(index.dimensions);
        for (slot, chunk) in index.refs.iter().enumerate() {
            if !index.deleted[slot] {
                let dims = index.dimensions;
                copy.add(
                    chunk.clone(),
                    &index.vectors[slot * dims..(slot + 1) * dims],
                );
            }
        }
        copy
    }

    #[test]
    fn finds_the_nearest_vectors_best_first_above_the_threshold() {
        let mut index = VectorIndex::new(3);
        index.add(chunk("a", 0), &unit(&[1.0, 0.0, 0.0]));
        index.add(chunk("a", 1), &unit(&[0.9, 0.1, 0.0]));
        index.add(chunk("b", 0), &unit(&[0.0, 1.0, 0.0]));
        index.add(chunk("b", 1), &unit(&[-1.0, 0.0, 0.0]));
        let hits = index.search(&unit(&[1.0, 0.05, 0.0]), 10, 0.7);
        let found: Vec<_> = hits
            .iter()
            .map(|h| (h.chunk.document_id.as_str(), h.chunk.chunk_index))
            .collect();
        assert_eq!(found, [("a", 0), ("a", 1)]);
        assert!(hits[0].score > hits[1].score && hits[0].score <= 1.0);
        // The score is the cosine: the orthogonal vector scores 0, and so does the opposite
        // one (negative cosines are clamped).
        let all = index.search(&unit(&[1.0, 0.0, 0.0]), 10, 0.0);
        assert_eq!(all.len(), 4);
        assert!((all[1].score - unit(&[0.9, 0.1, 0.0])[0]).abs() < 1e-6);
        assert!(all[2].score.abs() < 1e-6 && all[3].score.abs() < 1e-6);
    }

    #[test]
    fn limit_keeps_the_best_and_deleting_a_document_removes_its_vectors() {
        let mut index = VectorIndex::new(2);
        for i in 0..100 {
            let angle = i as f32 / 100.0;
            index.add(
                chunk(if i % 2 == 0 { "even" } else { "odd" }, i),
                &[angle.cos(), angle.sin()],
            );
        }
        let hits = index.search(&[1.0, 0.0], 5, 0.0);
        assert_eq!(
            hits.iter().map(|h| h.chunk.chunk_index).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        index.remove_document("even");
        assert_eq!(index.len(), 50);
        // Without a graph the slots are compacted at once.
        assert_eq!(index.tombstones(), 0);
        let hits = index.search(&[1.0, 0.0], 3, 0.0);
        assert_eq!(
            hits.iter().map(|h| h.chunk.chunk_index).collect::<Vec<_>>(),
            [1, 3, 5]
        );
    }

    #[test]
    fn the_graph_finds_what_exact_search_finds_and_steps_aside_when_stale() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut index = random_index(&mut rng, 3_000, 2_000);
        let queries: Vec<Vec<f32>> = (0..50).map(|_| random_unit(&mut rng, 64)).collect();
        let exact = exact_copy(&index);

        assert!(index.graph_work_due());
        let job = index.graph_job().expect("large enough for a graph");
        assert!(job.is_build() && job.points() == 3_000);
        assert!(index.graph_job().is_none(), "one job at a time");
        assert!(
            !index.uses_ann(),
            "exact search answers until the graph is ready"
        );
        assert!(index.finish_graph(job.run()).installed);
        assert!(index.uses_ann() && index.graph_covers() == 3_000);
        let recall = recall(&index, &exact, &queries);
        assert!(recall >= 0.95, "recall@10 {recall}");

        // A chunk added is found at once, before the graph holds it.
        let newcomer = queries[0].clone();
        index.add(chunk("new", 0), &newcomer);
        assert_eq!(index.graph_covers(), 3_000);
        assert_eq!(index.search(&newcomer, 1, 0.0)[0].chunk, chunk("new", 0));
        // A chunk deleted is gone at once, though the graph still holds it.
        index.remove_document("new");
        index.remove_document("d0");
        assert!(index
            .search(&newcomer, 10, 0.0)
            .iter()
            .all(|h| h.chunk.document_id != "new" && h.chunk.document_id != "d0"));
        assert_eq!(index.len(), 2_990);
    }

    #[test]
    fn chunks_added_then_deleted_are_kept_current_without_a_rebuild() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut index = random_index(&mut rng, 3_000, 2_000);
        settle(&mut index);
        let first_layout = index.layout;

        // 500 more chunks: searched exactly until a job inserts them into the graph.
        let added: Vec<Vec<f32>> = (0..500).map(|_| random_unit(&mut rng, 64)).collect();
        for (i, vector) in added.iter().enumerate() {
            index.add(chunk(&format!("late{}", i / 10), (i % 10) as i32), vector);
        }
        for (i, vector) in added.iter().enumerate().step_by(50) {
            let hit = &index.search(vector, 1, 0.0)[0];
            assert_eq!(
                hit.chunk,
                chunk(&format!("late{}", i / 10), (i % 10) as i32)
            );
        }
        let job = index.graph_job().expect("new slots to insert");
        assert!(!job.is_build() && job.points() == 500);
        assert!(index.finish_graph(job.run()).installed);
        assert_eq!(index.graph_covers(), 3_500);
        assert_eq!(index.layout, first_layout, "no rebuild, no renumbering");
        // Now through the graph.
        for (i, vector) in added.iter().enumerate().step_by(50) {
            let hit = &index.search(vector, 1, 0.0)[0];
            assert_eq!(
                hit.chunk,
                chunk(&format!("late{}", i / 10), (i % 10) as i32)
            );
            assert!(hit.score > 0.999);
        }

        // Deleting 9% leaves tombstones, not a rebuild.
        for doc in (0..300).step_by(10) {
            index.remove_document(&format!("d{doc}"));
        }
        index.remove_document("late3");
        assert_eq!(index.tombstones(), 310);
        assert_eq!(index.len(), 3_190);
        assert!(!index.graph_work_due());
        let queries: Vec<Vec<f32>> = (0..50).map(|_| random_unit(&mut rng, 64)).collect();
        let recall = recall(&index, &exact_copy(&index), &queries);
        assert!(recall >= 0.95, "recall@10 with tombstones {recall}");
        assert!(index
            .search(&added[35], 10, 0.0)
            .iter()
            .all(|h| h.chunk.document_id != "late3"));
    }

    #[test]
    fn tombstones_never_show_results_stay_full_and_past_the_fraction_the_graph_is_rebuilt() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut index = random_index(&mut rng, 3_000, 1_000);
        settle(&mut index);
        // Delete documents near one query, so the graph's nearest neighbours are mostly
        // tombstones: results must still be `limit` long, all live.
        let query = random_unit(&mut rng, 64);
        let near: Vec<String> = index
            .search(&query, 60, 0.0)
            .into_iter()
            .map(|h| h.chunk.document_id)
            .collect();
        for doc in &near {
            index.remove_document(doc);
        }
        let deleted = index.tombstones();
        assert!(deleted >= 60 && (deleted as f64) < 0.2 * 3_000.0);
        for limit in [1, 10, 100] {
            let hits = index.search(&query, limit, 0.0);
            assert_eq!(hits.len(), limit);
            assert!(hits.iter().all(|h| !near.contains(&h.chunk.document_id)));
            let truth = exact_copy(&index).search(&query, limit, 0.0);
            let overlap = truth
                .iter()
                .filter(|t| hits.iter().any(|h| h.chunk == t.chunk))
                .count();
            assert!(overlap as f64 >= 0.9 * limit as f64, "{overlap} of {limit}");
        }

        // Past a fifth of the slots, a rebuild over the live chunks is due.
        let mut doc = 0;
        while index.tombstone_fraction() <= REBUILD_TOMBSTONE_FRACTION {
            index.remove_document(&format!("d{doc}"));
            doc += 1;
        }
        let live = index.len();
        let job = index.graph_job().expect("a rebuild");
        assert!(job.is_build() && job.points() == live);
        assert!(index.finish_graph(job.run()).installed);
        assert_eq!(
            (index.tombstones(), index.len(), index.refs.len()),
            (0, live, live)
        );
        let queries: Vec<Vec<f32>> = (0..50).map(|_| random_unit(&mut rng, 64)).collect();
        let recall = recall(&index, &exact_copy(&index), &queries);
        assert!(recall >= 0.95, "recall@10 after the rebuild {recall}");

        // Shrunk well below the threshold, the graph is retired and exact search answers.
        for doc in 0..300 {
            index.remove_document(&format!("d{doc}"));
        }
        assert!(index.len() < 500 && index.graph_work_due());
        assert!(index.retire_unwanted_graph().is_some());
        assert!(!index.uses_ann() && index.tombstones() == 0);
        assert!(index.is_empty() || !index.search(&query, 1, 0.0).is_empty());
    }

    #[test]
    fn searches_during_a_background_build_answer_correctly_and_changes_carry_over() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let index = Arc::new(RwLock::new(random_index(&mut rng, 4_000, 2_000)));
        let job = index.read().unwrap().graph_job().expect("a first build");
        let builder = std::thread::spawn(move || job.run());

        // While it builds: add, delete and search, each answered exactly and at once.
        let added: Vec<Vec<f32>> = (0..100).map(|_| random_unit(&mut rng, 64)).collect();
        let mut checked = 0;
        for (i, vector) in added.iter().enumerate() {
            let mut guard = index.write().unwrap();
            guard.add(chunk("during", i as i32), vector);
            if i % 10 == 0 {
                guard.remove_document(&format!("d{}", i / 10));
            }
            drop(guard);
            let guard = index.read().unwrap();
            assert!(!guard.uses_ann());
            let hits = guard.search(vector, 10, 0.0);
            assert_eq!(hits[0].chunk, chunk("during", i as i32));
            assert_eq!(hits.len(), 10);
            let gone = format!("d{}", i / 10 * 10 / 10);
            assert!(i % 10 != 0 || hits.iter().all(|h| h.chunk.document_id != gone));
            checked += 1;
        }
        assert_eq!(checked, 100);
        assert!(
            index.read().unwrap().graph_job().is_none(),
            "one job at a time"
        );

        let done = builder.join().unwrap();
        let mut guard = index.write().unwrap();
        assert!(guard.finish_graph(done).installed);
        assert!(guard.uses_ann());
        // Built over the 4,000 chunks it copied; the 100 added since wait for an extension,
        // and the 100 deleted since are tombstones.
        assert_eq!(guard.graph_covers(), 4_000);
        assert_eq!(guard.tombstones(), 100);
        assert_eq!(guard.len(), 4_000);
        for (i, vector) in added.iter().enumerate() {
            assert_eq!(
                guard.search(vector, 1, 0.0)[0].chunk,
                chunk("during", i as i32)
            );
        }
        settle(&mut guard);
        assert_eq!(guard.graph_covers(), 4_100);
        for (i, vector) in added.iter().enumerate() {
            let hits = guard.search(vector, 10, 0.0);
            assert_eq!(hits[0].chunk, chunk("during", i as i32));
            assert!(hits.iter().all(|h| {
                let doc = &h.chunk.document_id;
                !(0..10).any(|d| doc == &format!("d{d}"))
            }));
        }
        let queries: Vec<Vec<f32>> = (0..50).map(|_| random_unit(&mut rng, 64)).collect();
        let recall = recall(&guard, &exact_copy(&guard), &queries);
        assert!(recall >= 0.95, "recall@10 {recall}");
    }

    #[test]
    fn mismatched_dimensions_find_nothing() {
        let mut index = VectorIndex::new(4);
        index.add(chunk("a", 0), &[1.0, 0.0]);
        assert!(index.is_empty());
        assert!(index.search(&[1.0, 0.0], 3, 0.0).is_empty());
    }
}
