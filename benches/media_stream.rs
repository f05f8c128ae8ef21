//! The Twilio media stream's per-message decoding: what the socket loop runs fifty times a
//! second per call. `parse_event_into` (a `media` message read straight into its fields and
//! decoded into the stream's one buffer, as the socket loop does), `parse_event` (the same
//! with a fresh buffer) and the JSON tree it was read into before, on a real 20 ms frame.
//!
//! ```text
//! cargo bench --bench media_stream
//! ```

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use std::hint::black_box;
use switchboard::transports::twilio::{parse_event, parse_event_into, StreamEvent};

fn media_message() -> String {
    // 160 bytes of µ-law: one 20 ms frame at 8 kHz, as Twilio sends it.
    let frame: Vec<u8> = (0..160u32).map(|i| (i * 37 % 256) as u8).collect();
    json!({
        "event": "media",
        "sequenceNumber": "1234",
        "media": {
            "track": "inbound",
            "chunk": "1233",
            "timestamp": "24660",
            "payload": BASE64.encode(&frame),
        },
        "streamSid": "MZ18ad3ab5a668481ce02b83e7395059f0",
    })
    .to_string()
}

/// The message read as a JSON tree, then its payload decoded.
fn parse_as_tree(text: &str) -> Option<Vec<u8>> {
    let event: Value = serde_json::from_str(text).ok()?;
    if event["event"].as_str()? != "media" || event["media"]["track"].as_str()? != "inbound" {
        return None;
    }
    BASE64.decode(event["media"]["payload"].as_str()?).ok()
}

fn media_stream(c: &mut Criterion) {
    let text = media_message();
    assert!(matches!(parse_event(&text), Ok(StreamEvent::Media(a)) if a.len() == 160));
    assert_eq!(parse_as_tree(&text).map(|a| a.len()), Some(160));
    let mut group = c.benchmark_group("twilio_media_message");
    let mut buffer = BytesMut::new();
    group.bench_function("parse_event_into", |b| {
        b.iter(|| parse_event_into(black_box(&text), &mut buffer))
    });
    group.bench_function("parse_event", |b| b.iter(|| parse_event(black_box(&text))));
    group.bench_function("json_tree", |b| b.iter(|| parse_as_tree(black_box(&text))));
    group.finish();
}

criterion_group!(benches, media_stream);
criterion_main!(benches);
