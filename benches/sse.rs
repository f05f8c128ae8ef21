//! A chat-completions exchange with a vendor, as every agent turn makes one:
//!
//! - `chat_request`: the request body written from a call's conversation (a system prompt and
//!   twenty exchanges: the whole history goes out with every turn);
//! - `sse_decode`: the streamed answer's server-sent events split out of the bytes as they
//!   arrive, for 200 tokens, fed one event per read (a vendor streaming as it generates) and
//!   all in one read (a burst the socket buffered).
//!
//! Run: `cargo bench --bench sse`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use switchboard::vendors::http::SseDecoder;
use switchboard::vendors::openai::chat_body;
use switchboard_actors::engine::{ChatMessage, ChatRequest, Role};

/// A call's conversation twenty exchanges in.
fn conversation() -> ChatRequest {
    let prompt = "You are a phone agent for a delivery company. Answer in one or two short \
                  sentences, politely, and never make up an order status. ";
    let mut messages = vec![ChatMessage::new(Role::System, prompt.repeat(4))];
    for i in 0..20 {
        messages.push(ChatMessage::new(
            Role::User,
            format!("Hi, I am calling about my order number {i}; it has not arrived yet."),
        ));
        messages.push(ChatMessage::new(
            Role::Assistant,
            format!("I am sorry. Order {i} left our warehouse yesterday and arrives tomorrow."),
        ));
    }
    ChatRequest {
        model: None,
        messages,
        tools: Vec::new(),
        temperature: 0.7,
        max_tokens: 200,
        conversation: None,
    }
}

fn chat_request(c: &mut Criterion) {
    let request = conversation();
    let mut group = c.benchmark_group("chat_request");
    group.bench_function("body_of_41_messages", |b| {
        b.iter(|| chat_body("gpt-4o-mini", &request).expect("writes"))
    });
    group.finish();
}

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

criterion_group!(benches, chat_request, sse);
criterion_main!(benches);
