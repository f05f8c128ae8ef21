//! Exact vector search over one collection's index: 10k and 100k chunks of 384 dimensions
//! (MiniLM's size), top 10, the way `POST /v1/collections/{id}/search` runs it after the query
//! is embedded.

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
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
