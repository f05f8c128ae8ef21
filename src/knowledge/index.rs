//! The in-memory vector index of one collection: unit-length embeddings in one contiguous
//! array, searched exactly with a dot-product loop the compiler vectorises (exact search is
//! fast enough up to about 100k chunks of 384 dimensions). Built from storage on first use;
//! updated in place on ingest and delete.
//!
//! Past [`ANN_MIN_CHUNKS`] chunks an HNSW graph (the `instant-distance` crate) answers
//! instead, behind the same `search`. The graph is built off the request path
//! ([`VectorIndex::ann_job`], [`AnnJob::build`]) over a snapshot; a change to the index makes
//! it stale, and until its replacement is installed exact search answers, so results are
//! never missing a chunk that was ingested, nor showing one that was deleted.
//!
//! Scores: embeddings are L2-normalised, so the dot product is the cosine similarity `c` in
//! [-1, 1]; the API reports `score = (c + 1) / 2` in [0, 1]. A `threshold` of 0.7 therefore
//! keeps chunks with cosine similarity of at least 0.4.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use instant_distance::{Builder, HnswMap, Point, Search};

/// Collections with at least this many chunks are searched through an HNSW graph.
pub const ANN_MIN_CHUNKS: usize = 100_000;
/// Candidates the graph search keeps (the API's largest `limit` is 100).
const ANN_EF_SEARCH: usize = 128;
const ANN_EF_CONSTRUCTION: usize = 100;

/// Where a vector came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    pub document_id: String,
    pub chunk_index: i32,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub chunk: ChunkRef,
    /// (cosine + 1) / 2.
    pub score: f32,
}

#[derive(Debug, Clone, Default)]
pub struct VectorIndex {
    dimensions: usize,
    refs: Vec<ChunkRef>,
    vectors: Vec<f32>,
    /// Bumped by every change; a graph serves only the version it was built over.
    version: u64,
    ann: Option<Arc<AnnGraph>>,
    ann_building: bool,
    ann_min_chunks: usize,
}

/// An embedding as the graph sees it; distance is 1 - cosine similarity.
#[derive(Clone)]
struct Embedding(Arc<[f32]>);

impl Point for Embedding {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(&self.0, &other.0)
    }
}

/// An HNSW graph over one version of an index; values are positions in it.
pub struct AnnGraph {
    map: HnswMap<Embedding, u32>,
    version: u64,
}

impl std::fmt::Debug for AnnGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnnGraph")
            .field("points", &self.map.values.len())
            .field("version", &self.version)
            .finish()
    }
}

/// What building a graph needs: a snapshot of the vectors and their version.
pub struct AnnJob {
    dimensions: usize,
    vectors: Vec<f32>,
    version: u64,
}

impl AnnJob {
    /// Builds the graph (seconds to minutes of CPU for a large collection: run it off the
    /// request path, on one thread).
    pub fn build(self) -> AnnGraph {
        let points: Vec<Embedding> = self
            .vectors
            .chunks_exact(self.dimensions.max(1))
            .map(|v| Embedding(Arc::from(v)))
            .collect();
        let values: Vec<u32> = (0..points.len() as u32).collect();
        let map = Builder::default()
            .ef_construction(ANN_EF_CONSTRUCTION)
            .ef_search(ANN_EF_SEARCH)
            .seed(0x5EED)
            .build(points, values);
        AnnGraph {
            map,
            version: self.version,
        }
    }
}

/// Maps cosine similarity into the API's 0-1 score.
pub fn score_of(cosine: f32) -> f32 {
    ((cosine + 1.0) / 2.0).clamp(0.0, 1.0)
}

impl VectorIndex {
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions,
            refs: Vec::new(),
            vectors: Vec::new(),
            version: 0,
            ann: None,
            ann_building: false,
            ann_min_chunks: ANN_MIN_CHUNKS,
        }
    }

    /// The size from which the graph answers (tests and benchmarks use smaller ones).
    pub fn with_ann_threshold(mut self, min_chunks: usize) -> Self {
        self.ann_min_chunks = min_chunks.max(1);
        self
    }

    /// Whether a graph build is due (cheap: no copying).
    pub fn wants_ann(&self) -> bool {
        let current = self.ann.as_ref().is_some_and(|a| a.version == self.version);
        self.len() >= self.ann_min_chunks && !current && !self.ann_building
    }

    /// A graph build to start, when the index is large enough, has no current graph and none
    /// is being built. Marks one as being built.
    pub fn ann_job(&mut self) -> Option<AnnJob> {
        if !self.wants_ann() {
            return None;
        }
        self.ann_building = true;
        Some(AnnJob {
            dimensions: self.dimensions,
            vectors: self.vectors.clone(),
            version: self.version,
        })
    }

    /// Installs a built graph; answers false when the index changed meanwhile (the graph is
    /// dropped and the caller may build again).
    pub fn install_ann(&mut self, graph: AnnGraph) -> bool {
        self.ann_building = false;
        if graph.version != self.version {
            return false;
        }
        self.ann = Some(Arc::new(graph));
        true
    }

    /// Whether searches are answered by the graph right now.
    pub fn uses_ann(&self) -> bool {
        self.ann.as_ref().is_some_and(|a| a.version == self.version)
    }

    pub fn len(&self) -> usize {
        self.refs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Adds a vector; one of another dimension is ignored (it cannot be compared).
    pub fn add(&mut self, chunk: ChunkRef, vector: &[f32]) {
        if vector.len() != self.dimensions {
            return;
        }
        self.refs.push(chunk);
        self.vectors.extend_from_slice(vector);
        self.version += 1;
    }

    /// Whether any vector of the document is in the index.
    pub fn contains_document(&self, document_id: &str) -> bool {
        self.refs
            .iter()
            .any(|chunk| chunk.document_id == document_id)
    }

    /// Removes every vector of a document.
    pub fn remove_document(&mut self, document_id: &str) {
        let dims = self.dimensions;
        let before = self.refs.len();
        let mut kept_refs = Vec::with_capacity(self.refs.len());
        let mut kept_vectors = Vec::with_capacity(self.vectors.len());
        for (index, chunk) in self.refs.drain(..).enumerate() {
            if chunk.document_id != document_id {
                kept_vectors.extend_from_slice(&self.vectors[index * dims..(index + 1) * dims]);
                kept_refs.push(chunk);
            }
        }
        if kept_refs.len() != before {
            self.version += 1;
        }
        self.refs = kept_refs;
        self.vectors = kept_vectors;
    }

    /// The `limit` best chunks with a score of at least `threshold`, best first.
    pub fn search(&self, query: &[f32], limit: usize, threshold: f32) -> Vec<Hit> {
        if query.len() != self.dimensions || limit == 0 || self.dimensions == 0 {
            return Vec::new();
        }
        if let Some(ann) = self.ann.as_ref().filter(|a| a.version == self.version) {
            let mut search = Search::default();
            return ann
                .map
                .search(&Embedding(Arc::from(query)), &mut search)
                .map(|item| (score_of(1.0 - item.distance), *item.value as usize))
                .filter(|(score, _)| *score >= threshold)
                .take(limit)
                .map(|(score, index)| Hit {
                    chunk: self.refs[index].clone(),
                    score,
                })
                .collect();
        }
        let mut best: BinaryHeap<Candidate> = BinaryHeap::with_capacity(limit + 1);
        for (index, vector) in self.vectors.chunks_exact(self.dimensions).enumerate() {
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
        let mut hits: Vec<Candidate> = best.into_vec();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.into_iter()
            .map(|c| Hit {
                chunk: self.refs[c.index].clone(),
                score: c.score,
            })
            .collect()
    }
}

/// Dot product in eight independent lanes, which the compiler turns into SIMD.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_rest, b_rest) = (a_chunks.remainder(), b_chunks.remainder());
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
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
        // The opposite vector scores 0; the orthogonal one 0.5.
        let all = index.search(&unit(&[1.0, 0.0, 0.0]), 10, 0.0);
        assert_eq!(all.len(), 4);
        assert!((all[2].score - 0.5).abs() < 1e-6 && all[3].score.abs() < 1e-6);
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
        let hits = index.search(&[1.0, 0.0], 3, 0.0);
        assert_eq!(
            hits.iter().map(|h| h.chunk.chunk_index).collect::<Vec<_>>(),
            [1, 3, 5]
        );
    }

    fn random_unit(rng: &mut impl rand::Rng, dims: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
        unit(&v)
    }

    #[test]
    fn the_graph_finds_what_exact_search_finds_and_steps_aside_when_stale() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let dims = 64;
        let mut index = VectorIndex::new(dims).with_ann_threshold(2_000);
        for i in 0..3_000 {
            index.add(
                chunk(&format!("d{}", i / 10), i % 10),
                &random_unit(&mut rng, dims),
            );
        }
        let queries: Vec<Vec<f32>> = (0..50).map(|_| random_unit(&mut rng, dims)).collect();
        let exact: Vec<Vec<Hit>> = queries.iter().map(|q| index.search(q, 10, 0.0)).collect();

        let job = index.ann_job().expect("large enough for a graph");
        assert!(index.ann_job().is_none(), "one build at a time");
        assert!(index.install_ann(job.build()));
        assert!(index.uses_ann());
        let mut found = 0;
        for (query, truth) in queries.iter().zip(&exact) {
            let approx = index.search(query, 10, 0.0);
            assert!(approx.windows(2).all(|w| w[0].score >= w[1].score));
            found += truth
                .iter()
                .filter(|t| approx.iter().any(|a| a.chunk == t.chunk))
                .count();
        }
        let recall = found as f64 / (queries.len() * 10) as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");

        // A change makes the graph stale: exact search answers, and sees the change at once.
        let newcomer = queries[0].clone();
        index.add(chunk("new", 0), &newcomer);
        assert!(!index.uses_ann());
        assert_eq!(index.search(&newcomer, 1, 0.0)[0].chunk, chunk("new", 0));
        // A graph built before the change is refused.
        let job = index.ann_job().expect("stale, so a rebuild is due");
        index.remove_document("new");
        assert!(!index.install_ann(job.build()));
        assert!(index
            .search(&newcomer, 10, 0.0)
            .iter()
            .all(|h| h.chunk.document_id != "new"));
    }

    #[test]
    fn mismatched_dimensions_find_nothing() {
        let mut index = VectorIndex::new(4);
        index.add(chunk("a", 0), &[1.0, 0.0]);
        assert!(index.is_empty());
        assert!(index.search(&[1.0, 0.0], 3, 0.0).is_empty());
    }
}
