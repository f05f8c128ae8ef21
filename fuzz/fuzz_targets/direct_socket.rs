#![no_main]
//! A direct-socket conversation: JSON text frames through the decoder the socket runs
//! (`http::direct::parse_client_message`) and binary audio frames (PCM16 or one Opus packet
//! each) through the caller's audio pipeline, at any of the four rates.
//!
//! Input: one configuration byte (bits 0-1: 8, 16, 24 or 48 kHz; bit 2: Opus; bit 3: the GMM
//! VAD instead of the neural one), then frames
//! of `[kind][length: u16 LE][bytes]`; an even kind is a text frame, an odd one binary.

use libfuzzer_sys::fuzz_target;
use switchboard::transports::direct::parse_client_message;
use switchboard_actors::audio::{SampleRate, VadModel};
use switchboard_actors::session::{AudioFormat, CallerAudio};

fuzz_target!(|data: &[u8]| {
    let Some((&config, mut rest)) = data.split_first() else {
        return;
    };
    let rate = [
        SampleRate::Hz8000,
        SampleRate::Hz16000,
        SampleRate::Hz24000,
        SampleRate::Hz48000,
    ][usize::from(config & 3)];
    let format = if config & 4 != 0 {
        AudioFormat::Opus { rate }
    } else {
        AudioFormat::Pcm16 { rate }
    };
    let model = if config & 8 != 0 {
        VadModel::Gmm
    } else {
        VadModel::Neural
    };
    let mut caller = CallerAudio::new(format, model, 0.5).expect("every socket format builds");
    while let [kind, low, high, tail @ ..] = rest {
        let length = usize::from(u16::from_le_bytes([*low, *high])).min(tail.len());
        let (frame, next) = tail.split_at(length);
        rest = next;
        if kind & 1 == 0 {
            if let Ok(text) = std::str::from_utf8(frame) {
                let _ = parse_client_message(text);
            }
        } else {
            caller.push(frame);
            // As the session does: decode every complete frame, stop at the first bad one.
            while let Ok(Some(_)) = caller.next_frame() {}
        }
    }
});
