#![no_main]
//! One text message of a Twilio media stream, through the decoder the socket loop runs
//! (`telephony::stream::parse_event`), and a `media` payload on through the caller's audio
//! pipeline (μ-law re-framing, decoding, resampling, VAD) as `AudioIn` would take it.

use libfuzzer_sys::fuzz_target;
use switchboard::telephony::stream::{parse_event, StreamEvent};
use switchboard::telephony::token::TokenSigner;
use switchboard_actors::audio::VadModel;
use switchboard_actors::session::{AudioFormat, CallerAudio};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_event(text) {
        Ok(StreamEvent::Media(audio)) => {
            let mut caller =
                CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5).expect("the μ-law pipeline builds");
            caller.push(&audio);
            while let Ok(Some(_)) = caller.next_frame() {}
        }
        Ok(StreamEvent::Start(start)) => {
            let _ = TokenSigner::new("fuzz-secret").verify(&start.token, 0);
        }
        Ok(StreamEvent::Dtmf(_) | StreamEvent::Mark(_) | StreamEvent::Stop)
        | Ok(StreamEvent::Ignored)
        | Err(_) => {}
    }
});
