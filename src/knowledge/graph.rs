//! The HNSW graph behind large collections' search (the `hnsw_rs` crate): its parameters, the
//! distance it walks by, and the background jobs that build or extend it off the request
//! path. [`super::index::VectorIndex`] decides when a job is due, hands out its input and
//! installs its result; the graph itself only inserts and answers nearest neighbours.

use std::sync::Arc;

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::hnsw::{Hnsw, Neighbour};

use super::vectors::{dot, ChunkRef};

/// Neighbours kept per node and layer (twice as many on the bottom layer).
const GRAPH_CONNECTIONS: usize = 24;
/// Candidates examined when a node is inserted.
const GRAPH_EF_CONSTRUCTION: usize = 160;
/// Candidates a graph search keeps unless `registry.search_graph_ef` says otherwise (a search
/// keeps at least its `limit`): recall@10 0.98 at p99 1.6 ms over 100,000 chunks (docs/api.md).
pub const GRAPH_EF_SEARCH: usize = 64;
const GRAPH_MAX_LAYERS: usize = 16;

/// Cosine distance between unit vectors, `1 - dot`, never negative (the graph requires it;
/// rounding can push the dot product of a vector with itself just past 1).
#[derive(Debug, Clone, Copy, Default)]
struct CosineDistance;

impl Distance<f32> for CosineDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// An HNSW graph whose point ids are slots of the index it belongs to.
pub struct Graph {
    hnsw: Hnsw<'static, f32, CosineDistance>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("points", &self.hnsw.get_nb_point())
            .finish()
    }
}

impl Graph {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            hnsw: Hnsw::new(
                GRAPH_CONNECTIONS,
                capacity.max(1),
                GRAPH_MAX_LAYERS,
                GRAPH_EF_CONSTRUCTION,
                CosineDistance,
            ),
        }
    }

    /// Points in the graph.
    pub(super) fn points(&self) -> usize {
        self.hnsw.get_nb_point()
    }

    /// The `k` nearest slots to `query` (distance `1 - cosine`), keeping `ef` candidates;
    /// with `keep`, only slots it accepts: the others are still walked through, never
    /// answered. (Filtering costs time, so it is asked for only when there is something to
    /// filter.)
    pub(super) fn nearest(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        keep: Option<&dyn Fn(&usize) -> bool>,
    ) -> Vec<Neighbour> {
        match keep {
            Some(keep) => self.hnsw.search_filter(query, k, ef, Some(&keep)),
            None => self.hnsw.search(query, k, ef),
        }
    }

    /// Inserts `(vector, slot)` pairs, in parallel on the current rayon pool.
    fn insert(&self, vectors: &[f32], dimensions: usize, first_slot: usize) {
        let points: Vec<(&[f32], usize)> = vectors
            .chunks_exact(dimensions)
            .enumerate()
            .map(|(offset, v)| (v, first_slot + offset))
            .collect();
        self.hnsw.parallel_insert_slice(&points);
    }
}

/// A graph taken out of service; dropping a large one takes a while, so the caller drops it
/// after letting go of the index's lock (or [`VectorIndex`]'s own drop hands it to a thread).
#[must_use = "drop it outside the index's lock"]
pub struct RetiredGraph(#[allow(dead_code)] pub(super) Arc<Graph>);

/// Background work on an index's graph, taken with [`VectorIndex::graph_job`].
pub struct GraphJob {
    pub(super) dimensions: usize,
    pub(super) layout: u64,
    pub(super) kind: JobKind,
}

pub(super) enum JobKind {
    /// A new graph over the live slots below `base`, renumbered densely.
    Build {
        base: usize,
        kept: Vec<usize>,
        refs: Vec<ChunkRef>,
        vectors: Vec<f32>,
    },
    /// Inserts slots `from..upto` into the current graph.
    Extend {
        graph: Arc<Graph>,
        from: usize,
        upto: usize,
        vectors: Vec<f32>,
    },
}

/// A finished [`GraphJob`], for [`VectorIndex::finish_graph`].
pub struct GraphDone {
    pub(super) layout: u64,
    pub(super) kind: DoneKind,
}

pub(super) enum DoneKind {
    Built {
        graph: Graph,
        base: usize,
        kept: Vec<usize>,
        refs: Vec<ChunkRef>,
        vectors: Vec<f32>,
    },
    Extended {
        graph: Arc<Graph>,
        upto: usize,
    },
}

impl GraphJob {
    /// Whether this job builds a whole new graph (rather than adding to the current one).
    pub fn is_build(&self) -> bool {
        matches!(self.kind, JobKind::Build { .. })
    }

    /// Chunks the job inserts into a graph.
    pub fn points(&self) -> usize {
        match &self.kind {
            JobKind::Build { kept, .. } => kept.len(),
            JobKind::Extend { from, upto, .. } => upto - from,
        }
    }

    /// Does the work: CPU-heavy for a build (minutes for 100k chunks on one thread), so run
    /// it off the request path, inside the rayon pool whose threads it may use.
    pub fn run(self) -> GraphDone {
        let dimensions = self.dimensions.max(1);
        let kind = match self.kind {
            JobKind::Build {
                base,
                kept,
                refs,
                vectors,
            } => {
                let graph = Graph::new(kept.len());
                graph.insert(&vectors, dimensions, 0);
                DoneKind::Built {
                    graph,
                    base,
                    kept,
                    refs,
                    vectors,
                }
            }
            JobKind::Extend {
                graph,
                from,
                upto,
                vectors,
            } => {
                graph.insert(&vectors, dimensions, from);
                DoneKind::Extended { graph, upto }
            }
        };
        GraphDone {
            layout: self.layout,
            kind,
        }
    }
}

/// What [`VectorIndex::finish_graph`] did.
pub struct Finished {
    /// Whether the job's result was taken into service.
    pub installed: bool,
    /// The graph it replaced, to drop outside the lock.
    pub retired: Option<RetiredGraph>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_distance_is_never_negative() {
        let v = vec![0.3f32 / 0.9; 9];
        assert!(CosineDistance.eval(&v, &v) >= 0.0);
        assert_eq!(CosineDistance.eval(&[f32::NAN], &[1.0]), 0.0);
    }
}
