//! The embedded language model: decode speed, a forward pass over prompt chunks of several
//! lengths both ways (quantized kernels, dequantized weights), and time to first token for a
//! 180-token prompt cold (no prompt cache) and on a second turn served from the prompt cache.
//!
//! Run: `cargo bench --bench llm` (needs `models/smollm2-135m-instruct`).

#[path = "support/llm_requests.rs"]
mod llm_requests;

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use llm_requests::{request, timed};
use switchboard::engines::llm::model::{LlamaModel, Products};
use switchboard::engines::llm::{LlmOptions, LocalLlm, MODEL_FILE};
use switchboard::engines::pool::WorkerPool;
use switchboard_actors::engine::{ChatMessage, Role};

const SYSTEM: &str = "You are Ava, the receptionist of the Harbour Street Dental Clinic. You \
answer phone calls. Keep every answer to one or two short sentences, because the caller hears \
them spoken aloud. The clinic opens at 8 a.m. on weekdays and 9 a.m. on Saturdays, and is \
closed on Sundays and public holidays. A cleaning lasts forty-five minutes and costs 85 euros, \
X-rays included. New patients arrive fifteen minutes early to fill in a form. Cancellations \
less than a day ahead cost 30 euros unless the patient is ill. Dr. Lindqvist works Monday to \
Wednesday, Dr. Okafor Thursday to Saturday. If a caller has severe pain or swelling, offer the \
first free slot today. Never give medical advice beyond booking.";

fn models_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(MODEL_FILE)
}

fn first_turn(conversation: usize) -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(Role::System, format!("Call {conversation}. {SYSTEM}")),
        ChatMessage::new(
            Role::User,
            "Hello, I would like to book a cleaning next week.",
        ),
    ]
}

fn llm(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");

    // Decode: one token at a fixed position after a 180-token prompt.
    let (content, mut reader) = LlamaModel::read_header(&models_file()).expect("model file");
    let model = LlamaModel::load(&content, &mut reader, 4096).expect("model loads");
    let cold = LocalLlm::new(
        models_file(),
        WorkerPool::new(1, 4),
        LlmOptions {
            prompt_cache_entries: 0,
            ..LlmOptions::default()
        },
    );
    let prompt = cold
        .prompt_tokens(&request(first_turn(0), 1, None))
        .expect("prompt renders");
    eprintln!("prompt: {} tokens", prompt.len());
    let mut kv = model.new_cache();
    model.forward(&prompt, &mut kv).expect("prefill");
    let mut group = c.benchmark_group("llm");
    group.throughput(Throughput::Elements(1));
    group.bench_function("decode_token", |b| {
        b.iter(|| {
            model.forward(&[28], &mut kv).expect("decode");
            kv.truncate(prompt.len());
        })
    });
    drop(group);

    // Prefill: a chunk of `n` prompt tokens after the system prompt, each way.
    let mut group = c.benchmark_group("llm_prefill");
    group.sample_size(20);
    let base = 64;
    let tokens: Vec<u32> = prompt.iter().copied().cycle().take(base + 512).collect();
    for n in [8usize, 16, 32, 64, 128, 256, 512] {
        group.throughput(Throughput::Elements(n as u64));
        for (name, products) in [
            ("quantized", Products::Quantized),
            ("dense", Products::Dense),
        ] {
            group.bench_function(format!("{name}_{n}_tokens"), |b| {
                b.iter(|| {
                    kv.truncate(base);
                    model
                        .forward_with(&tokens[base..base + n], &mut kv, products)
                        .expect("prefill")
                })
            });
        }
    }
    drop(group);

    let mut group = c.benchmark_group("llm_ttft");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("cold_180_token_prompt", |b| {
        b.to_async(&runtime)
            .iter(|| async { timed(&cold, request(first_turn(0), 1, None)).await })
    });

    // Second turn: each iteration is a new conversation whose first turn runs untimed.
    let cached = LocalLlm::new(models_file(), WorkerPool::new(1, 4), LlmOptions::default());
    let mut conversation = 0usize;
    group.bench_function("second_turn_prompt_cache", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let cached = cached.clone();
            conversation += 1;
            let base = conversation * 1000;
            async move {
                let mut total = Duration::ZERO;
                for i in 0..iters as usize {
                    let mut messages = first_turn(base + i);
                    let (_, answer) = timed(&cached, request(messages.clone(), 32, None)).await;
                    messages.push(ChatMessage::new(Role::Assistant, answer));
                    messages.push(ChatMessage::new(
                        Role::User,
                        "Tuesday morning, if possible.",
                    ));
                    total += timed(&cached, request(messages, 1, None)).await.0;
                }
                total
            }
        })
    });
    group.finish();
}

criterion_group!(benches, llm);
criterion_main!(benches);
