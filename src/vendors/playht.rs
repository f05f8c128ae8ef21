//! PlayHT text to speech, streamed (`POST /api/v2/tts/stream`): raw PCM16 at the playback
//! rate, or µ-law 8 kHz on phone calls, as it is produced. PlayHT authenticates with two
//! values; its key here is `<user id>:<secret key>` (sent as `X-USER-ID` and
//! `AUTHORIZATION`). Followed: https://docs.play.ht/reference/api-generate-tts-audio-stream
//! and https://docs.play.ht/reference/api-authentication.

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{usual_output, RawAudioChunker, RawEncoding};
use super::http::Endpoint;

const DEFAULT_MODEL: &str = "Play3.0-mini";
/// "Jennifer", one of PlayHT's stock voices.
const DEFAULT_VOICE: &str =
    "s3://voice-cloning-zero-shot/d9ff78ba-d016-47f6-b0ef-dd630f59414e/female-cs/manifest.json";

pub struct PlayHtSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for PlayHtSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let (encoding, rate) = usual_output(request.output_rate);
        let body = json!({
            "text": request.text,
            "voice": endpoint.voice(&request.voice, DEFAULT_VOICE),
            "voice_engine": endpoint.tts_model(&request.model, DEFAULT_MODEL),
            "output_format": if encoding == RawEncoding::Mulaw { "mulaw" } else { "raw" },
            "sample_rate": rate,
            "speed": request.speed.clamp(0.5, 2.0),
        });
        let build = endpoint.post_json("/tts/stream", body);
        Ok(super::speech::spawn_raw_speech(
            endpoint,
            build,
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

/// The cheapest authenticated call: the voice list.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/voices").await
}
