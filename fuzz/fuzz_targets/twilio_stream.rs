#![no_main]
//! Text messages of a Twilio media stream, one per line, through the decoder the socket loop
//! runs (`telephony::stream::parse_event_into`, one decode buffer for the whole stream, every
//! frame kept alive as the recording tap would), and each `media` payload on through the
//! caller's audio pipeline (μ-law re-framing, decoding, VAD, and the 16 kHz capture for the
//! recognizer from the first frame called speech) as `AudioIn` would take it.

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use switchboard::transports::twilio::{parse_event_into, StreamEvent};
use switchboard::telephony::token::TokenSigner;
use switchboard_actors::audio::VadModel;
use switchboard_actors::session::{AudioFormat, CallerAudio};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut buffer = BytesMut::new();
    let mut caller =
        CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5).expect("the μ-law pipeline builds");
    let mut kept = Vec::new();
    for line in text.lines() {
        match parse_event_into(line, &mut buffer) {
            Ok(StreamEvent::Media(audio)) => {
                caller.push(&audio);
                while let Ok(Some(frame)) = caller.next_frame() {
                    if frame.vad.is_speech && !caller.is_capturing() {
                        caller.start_capture(frame.start_ms.saturating_sub(300));
                    }
                    let _ = caller.take_capture(100);
                }
                kept.push(audio);
            }
            Ok(StreamEvent::Start(start)) => {
                let _ = TokenSigner::new("fuzz-secret").verify(&start.token, 0);
            }
            Ok(StreamEvent::Dtmf(_) | StreamEvent::Mark(_) | StreamEvent::Stop)
            | Ok(StreamEvent::Ignored)
            | Err(_) => {}
        }
    }
    let _ = caller.stop_capture();
});
