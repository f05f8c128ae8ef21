//! Throughput of the embedded MiniLM embedder on batches of 1,000-character chunks, the size
//! the knowledge base splits documents into. Reported as tokens (word pieces) per second.
//!
//! Run: `cargo bench --bench embeddings` (needs `models/all-minilm-l6-v2`).

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use switchboard::engines::embeddings::{Embedder, MiniLmEmbedder};
use switchboard::engines::pool::WorkerPool;

const CORPUS: &str = "Switchboard answers phone calls with a voice agent. A caller speaks, \
the speech is recognised, the language model decides what to say, and the answer is spoken \
back within a few hundred milliseconds. Knowledge bases let an agent answer questions about \
opening hours, prices, delivery times and policies: documents are split into chunks, every \
chunk is embedded into a vector, and the chunks closest to the caller's question are handed \
to the model. The dental clinic on Harbour Street opens at 8 a.m. on weekdays and at 9 a.m. \
on Saturdays; it is closed on Sundays and public holidays. New patients should arrive fifteen \
minutes early to fill in a medical history form. Cleaning appointments last forty-five minutes \
and cost 85 euros, X-rays included. Cancellations less than 24 hours ahead are charged 30 euros \
unless the patient is ill. The bakery delivers bread, pastries and cakes within the city from \
6:30 to 11:00; orders placed before 8 p.m. arrive the next morning. Wholesale customers get a \
monthly invoice and a 12% discount above 500 euros. Gluten-free loaves are baked on Tuesdays \
and Fridays in a separate oven. The museum's summer exhibition covers three centuries of \
maritime trade, with ship models, navigation instruments and letters written by sailors to \
their families. Guided tours in English, French and German start every hour; school groups \
must book two weeks in advance. Tickets cost 14 euros, 9 for students and seniors, and \
children under twelve enter free. The café on the top floor serves lunch until 3 p.m.";

/// `count` chunks of 1,000 characters cut at different offsets of the corpus.
fn chunks(count: usize) -> Vec<String> {
    let chars: Vec<char> = CORPUS.chars().collect();
    (0..count)
        .map(|i| {
            let start = (i * 97) % chars.len();
            (0..1000)
                .map(|j| chars[(start + j) % chars.len()])
                .collect()
        })
        .collect()
}

fn embeddings(c: &mut Criterion) {
    let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models");
    let embedder = MiniLmEmbedder::from_models_dir(models, WorkerPool::new(1, 4));
    let mut group = c.benchmark_group("embeddings");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for batch in [1usize, 32] {
        let texts = chunks(batch);
        let tokens: usize = texts.iter().map(|t| embedder.count_tokens(t)).sum();
        embedder.embed_blocking(&texts).expect("embedding works");
        group.throughput(Throughput::Elements(tokens as u64));
        group.bench_function(format!("chunks_1000_chars_x{batch}"), |b| {
            b.iter(|| embedder.embed_blocking(&texts).expect("embedding works"))
        });
    }
    group.finish();
}

criterion_group!(benches, embeddings);
criterion_main!(benches);
