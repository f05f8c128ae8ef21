//! Vector search over one collection's index: 10k and 100k chunks of 384 dimensions (MiniLM's
//! size), top 10, the way `POST /v1/collections/{id}/search` runs it after the query is
//! embedded: exact, and at 100k through the HNSW graph. Printed besides criterion's means:
//! p50/p99 over 2,000 distinct queries, the graph's build time (on `GRAPH_THREADS` threads,
//! default 1, what a 2-core server gives its builds), recall@10 against exact search over
//! 500 queries, the cost of inserting chunks into the built graph one by one, and search with
//! 10% of the chunks deleted (tombstones).
//!
//! Vectors are uniformly random on the sphere by default: the hardest case for a graph, where
//! every chunk is about as far from a query as every other. `DATA=clustered` draws them around
//! 2,000 centres (queries too): close neighbours exist, then a flat plateau of the rest.
//! `DATA=graded` draws them from 50 topics of 40 subtopics each, so similarity falls off in
//! steps (same subtopic, same topic, other), closer to how sentence embeddings spread.
//! The graph is then searched keeping 16 to 160 candidates (`ef`), each with its recall and
//! latency, to pick the default.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::{Rng, SeedableRng};
use switchboard::knowledge::index::{ChunkRef, VectorIndex};

const DIMENSIONS: usize = 384;
/// The graph search's candidates in production (`registry.search_graph_ef`'s default).
const SEARCH_EF: usize = switchboard::knowledge::index::GRAPH_EF_SEARCH;

fn unit_vector(rng: &mut impl Rng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIMENSIONS)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// The vectors to index and to query with, as `DATA` asks (see the module's note): each is
/// the sum of one vector from every level, weighted, plus noise, normalised.
struct Dataset {
    /// Per level: its weight and its directions (a subtopic level is picked within its topic).
    levels: Vec<(f32, Vec<Vec<f32>>)>,
    noise: f32,
}

impl Dataset {
    fn from_env(rng: &mut impl Rng) -> Self {
        let mut directions = |n: usize| (0..n).map(|_| unit_vector(rng)).collect::<Vec<_>>();
        match std::env::var("DATA").as_deref() {
            Ok("clustered") => Dataset {
                levels: vec![(1.0, directions(2_000))],
                noise: 1.0,
            },
            Ok("graded") => Dataset {
                levels: vec![(1.0, directions(50)), (0.8, directions(50 * 40))],
                noise: 0.7,
            },
            _ => Dataset {
                levels: Vec::new(),
                noise: 1.0,
            },
        }
    }

    fn draw(&self, rng: &mut impl Rng) -> Vec<f32> {
        let mut v: Vec<f32> = unit_vector(rng)
            .into_iter()
            .map(|x| x * self.noise)
            .collect();
        // Each level picks among the children of the previous level's pick (subtopics are
        // numbered within their topic: topic t owns t*40..t*40+40).
        let mut parent: Option<(usize, usize)> = None;
        for (weight, directions) in &self.levels {
            let pick = match parent {
                None => rng.random_range(0..directions.len()),
                Some((index, count)) => {
                    let children = directions.len() / count;
                    index * children + rng.random_range(0..children)
                }
            };
            for (x, d) in v.iter_mut().zip(&directions[pick]) {
                *x += weight * d;
            }
            parent = Some((pick, directions.len()));
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }
}

fn chunk(i: usize) -> ChunkRef {
    ChunkRef {
        document_id: format!("doc_{}", i / 100),
        chunk_index: (i % 100) as i32,
    }
}

fn filled(vectors: &[Vec<f32>], ann_threshold: usize) -> VectorIndex {
    let mut index = VectorIndex::new(DIMENSIONS).with_ann_threshold(ann_threshold);
    for (i, v) in vectors.iter().enumerate() {
        index.add(chunk(i), v);
    }
    index
}

/// p50 and p99 of one search per query, in ms.
fn percentiles(index: &VectorIndex, queries: &[Vec<f32>]) -> (f64, f64) {
    let mut times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let started = Instant::now();
            std::hint::black_box(index.search(q, 10, 0.0));
            started.elapsed()
        })
        .collect();
    times.sort();
    let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    (at(0.50).as_secs_f64() * 1e3, at(0.99).as_secs_f64() * 1e3)
}

fn recall(approx: &VectorIndex, exact: &VectorIndex, queries: &[Vec<f32>]) -> f64 {
    let mut found = 0;
    for q in queries {
        let truth = exact.search(q, 10, 0.0);
        let got = approx.search(q, 10, 0.0);
        found += truth
            .iter()
            .filter(|t| got.iter().any(|a| a.chunk == t.chunk))
            .count();
    }
    found as f64 / (queries.len() * 10) as f64
}

/// Runs the index's due graph jobs on a pool of `threads`; answers the seconds they took.
fn settle(index: &mut VectorIndex, threads: usize) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let started = Instant::now();
    while let Some(job) = index.graph_job() {
        let done = pool.install(|| job.run());
        assert!(index.finish_graph(done).installed);
    }
    started.elapsed().as_secs_f64()
}

fn search(c: &mut Criterion) {
    let threads: usize = std::env::var("GRAPH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let data = Dataset::from_env(&mut rng);
    let queries: Vec<Vec<f32>> = (0..2_000).map(|_| data.draw(&mut rng)).collect();
    let mut group = c.benchmark_group("vector_search");
    for size in [10_000usize, 100_000] {
        let vectors: Vec<Vec<f32>> = (0..size).map(|_| data.draw(&mut rng)).collect();
        let exact = filled(&vectors, usize::MAX);
        let (p50, p99) = percentiles(&exact, &queries);
        eprintln!("exact over {size} chunks: p50 {p50:.2} ms, p99 {p99:.2} ms");
        group.bench_with_input(BenchmarkId::new("top10", size), &exact, |b, index| {
            b.iter(|| index.search(&queries[0], 10, 0.0))
        });
        if size < 100_000 {
            continue;
        }
        // The same chunks through the HNSW graph.
        let mut graphed = filled(&vectors, 1);
        let seconds = settle(&mut graphed, threads);
        assert!(graphed.uses_ann() && graphed.graph_covers() == size);
        eprintln!("graph over {size} chunks built in {seconds:.1} s on {threads} thread(s)");
        for ef in [16, 24, 32, 48, 64, 96, 160] {
            graphed.set_search_ef(ef);
            let (p50, p99) = percentiles(&graphed, &queries);
            eprintln!(
                "graph over {size} chunks, ef {ef}: p50 {p50:.3} ms, p99 {p99:.3} ms, recall@10 {:.3}",
                recall(&graphed, &exact, &queries[..500])
            );
        }
        graphed.set_search_ef(SEARCH_EF);
        let (p50, p99) = percentiles(&graphed, &queries);
        eprintln!("graph over {size} chunks, ef {SEARCH_EF} (the default): p50 {p50:.3} ms, p99 {p99:.3} ms");
        group.bench_with_input(
            BenchmarkId::new("hnsw_top10", size),
            &graphed,
            |b, index| b.iter(|| index.search(&queries[0], 10, 0.0)),
        );

        // Incremental inserts: 1,000 more chunks, one at a time on one thread.
        let extra: Vec<Vec<f32>> = (0..1_000).map(|_| data.draw(&mut rng)).collect();
        for (i, v) in extra.iter().enumerate() {
            graphed.add(chunk(size + i), v);
        }
        let seconds = settle(&mut graphed, 1);
        assert_eq!(graphed.graph_covers(), size + 1_000);
        eprintln!(
            "incremental insert into the {size}-chunk graph: {:.2} ms per chunk (one thread)",
            seconds * 1e3 / 1_000.0
        );

        // 10% deleted: tombstones filtered out, results still 10 long.
        for doc in (0..(size + 1_000) / 100).step_by(10) {
            graphed.remove_document(&format!("doc_{doc}"));
        }
        assert!(graphed.tombstones() > 0 && !graphed.graph_work_due());
        let (p50, p99) = percentiles(&graphed, &queries);
        let mut live = VectorIndex::new(DIMENSIONS).with_ann_threshold(usize::MAX);
        for (i, v) in vectors.iter().chain(&extra).enumerate() {
            if (i / 100) % 10 != 0 {
                live.add(chunk(i), v);
            }
        }
        eprintln!(
            "graph with {} tombstones: p50 {p50:.3} ms, p99 {p99:.3} ms, recall@10 {:.3}",
            graphed.tombstones(),
            recall(&graphed, &live, &queries[..500])
        );
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
