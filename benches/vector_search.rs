//! Vector search over one collection's index: 10k and 100k chunks of 384 dimensions (MiniLM's
//! size), top 10, the way `POST /v1/collections/{id}/search` runs it after the query is
//! embedded: exact, and at 100k through the HNSW graph (its build time and recall@10 against
//! exact search are printed).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::{Rng, SeedableRng};
use switchboard::knowledge::index::{ChunkRef, VectorIndex};

const DIMENSIONS: usize = 384;

fn unit_vector(rng: &mut impl Rng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIMENSIONS)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

fn search(c: &mut Criterion) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut group = c.benchmark_group("vector_search");
    for size in [10_000usize, 100_000] {
        let mut index = VectorIndex::new(DIMENSIONS);
        for i in 0..size {
            index.add(
                ChunkRef {
                    document_id: format!("doc_{}", i / 100),
                    chunk_index: (i % 100) as i32,
                },
                &unit_vector(&mut rng),
            );
        }
        let query = unit_vector(&mut rng);
        group.bench_with_input(BenchmarkId::new("top10", size), &index, |b, index| {
            b.iter(|| index.search(&query, 10, 0.0))
        });
        if size >= 100_000 {
            // The same collection through its HNSW graph (built once, on one thread).
            let mut graphed = index.clone().with_ann_threshold(1);
            let job = graphed.ann_job().expect("a graph to build");
            let started = std::time::Instant::now();
            let graph = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
                .install(|| job.build());
            assert!(graphed.install_ann(graph));
            eprintln!(
                "graph over {size} chunks built in {:.1} s",
                started.elapsed().as_secs_f32()
            );
            let queries: Vec<Vec<f32>> = (0..200).map(|_| unit_vector(&mut rng)).collect();
            let mut found = 0;
            for q in &queries {
                let truth = index.search(q, 10, 0.0);
                let approx = graphed.search(q, 10, 0.0);
                found += truth
                    .iter()
                    .filter(|t| approx.iter().any(|a| a.chunk == t.chunk))
                    .count();
            }
            eprintln!(
                "recall@10 against exact: {:.3}",
                found as f64 / (queries.len() * 10) as f64
            );
            group.bench_with_input(
                BenchmarkId::new("hnsw_top10", size),
                &graphed,
                |b, index| b.iter(|| index.search(&query, 10, 0.0)),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
