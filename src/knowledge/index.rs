//! The in-memory vector index of one collection: unit-length embeddings in one contiguous
//! array, searched exactly with a dot-product loop the compiler vectorises (exact search is
//! fast enough up to about 100k chunks of 384 dimensions). Built from storage on first use;
//! updated in place on ingest and delete.
//!
//! Scores: embeddings are L2-normalised, so the dot product is the cosine similarity `c` in
//! [-1, 1]; the API reports `score = (c + 1) / 2` in [0, 1]. A `threshold` of 0.7 therefore
//! keeps chunks with cosine similarity of at least 0.4.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
        }
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
    }

    /// Removes every vector of a document.
    pub fn remove_document(&mut self, document_id: &str) {
        let dims = self.dimensions;
        let mut kept_refs = Vec::with_capacity(self.refs.len());
        let mut kept_vectors = Vec::with_capacity(self.vectors.len());
        for (index, chunk) in self.refs.drain(..).enumerate() {
            if chunk.document_id != document_id {
                kept_vectors.extend_from_slice(&self.vectors[index * dims..(index + 1) * dims]);
                kept_refs.push(chunk);
            }
        }
        self.refs = kept_refs;
        self.vectors = kept_vectors;
    }

    /// The `limit` best chunks with a score of at least `threshold`, best first.
    pub fn search(&self, query: &[f32], limit: usize, threshold: f32) -> Vec<Hit> {
        if query.len() != self.dimensions || limit == 0 || self.dimensions == 0 {
            return Vec::new();
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

    #[test]
    fn mismatched_dimensions_find_nothing() {
        let mut index = VectorIndex::new(4);
        index.add(chunk("a", 0), &[1.0, 0.0]);
        assert!(index.is_empty());
        assert!(index.search(&[1.0, 0.0], 3, 0.0).is_empty());
    }
}
