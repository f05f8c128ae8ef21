//! Reading Twilio `media` messages allocates nothing per frame: each payload is decoded into
//! the stream's one buffer and split off it, so the socket loop allocates only when that
//! buffer is used up (about every dozen frames), never once a frame. A counting global
//! allocator tallies what the current thread allocates while the messages are read.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::BytesMut;
use switchboard::transports::twilio::{parse_event_into, StreamEvent};

#[path = "../actors/tests/support/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::allocations_during;

#[test]
fn media_messages_are_read_without_an_allocation_per_frame() {
    const FRAMES: usize = 240;
    // Messages as Twilio sends them: 160 bytes of µ-law, every field a string.
    let messages: Vec<String> = (0..FRAMES)
        .map(|n| {
            let frame: Vec<u8> = (0..160).map(|i| ((i * 37 + n) % 256) as u8).collect();
            format!(
                r#"{{"event":"media","sequenceNumber":"{}","media":{{"track":"inbound","chunk":"{n}","timestamp":"{}","payload":"{}"}},"streamSid":"MZ18ad3ab5a668481ce02b83e7395059f0"}}"#,
                n + 2,
                n * 20,
                BASE64.encode(&frame)
            )
        })
        .collect();
    let mut buffer = BytesMut::new();
    let mut frames = 0;
    let allocations = allocations_during(|| {
        for text in &messages {
            // Each frame is dropped before the next arrives, as when the session has read it.
            if let Ok(StreamEvent::Media(audio)) = parse_event_into(text, &mut buffer) {
                assert_eq!(audio.len(), 160);
                frames += 1;
            }
        }
    });
    assert_eq!(frames, FRAMES);
    assert!(
        allocations <= FRAMES / 10,
        "{allocations} allocations reading {FRAMES} media messages"
    );
}
