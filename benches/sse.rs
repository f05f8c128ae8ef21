//! Reading a vendor's streamed answer: server-sent events split out of the bytes as they
//! arrive, for a chat-completions stream of 200 tokens, fed one event per read (a vendor
//! streaming as it generates) and all in one read (a burst the socket buffered).
//!
//! Run: `cargo bench --bench sse`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use switchboard::vendors::http::SseDecoder;

/// One chat-completions stream as OpenAI sends it: 200 token events, then `[DONE]`.
fn openai_stream() -> Vec<Vec<u8>> {
    let mut events: Vec<Vec<u8>> = (0..200)
        .map(|i| {
            format!(
                "data: {{\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\
                 \"created\":1727985000,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_f85bea6784\",\
                 \"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" word{i}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
            )
            .into_bytes()
        })
        .collect();
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

fn sse(c: &mut Criterion) {
    let events = openai_stream();
    let burst: Vec<u8> = events.concat();
    let mut group = c.benchmark_group("sse_decode");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("event_per_read", |b| {
        b.iter_batched(
            SseDecoder::default,
            |mut decoder| {
                let mut decoded = 0;
                for event in &events {
                    decoded += decoder.push(event).len();
                }
                assert_eq!(decoded, 201);
                decoded
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("one_read", |b| {
        b.iter_batched(
            SseDecoder::default,
            |mut decoder| {
                let decoded = decoder.push(&burst).len();
                assert_eq!(decoded, 201);
                decoded
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, sse);
criterion_main!(benches);
