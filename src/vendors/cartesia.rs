//! Cartesia text to speech (`/tts/bytes`): raw PCM at the caller's playback rate, or µ-law
//! 8 kHz for phone calls, streamed as it is produced. Wire format: reference/protocols.md
//! §7.4; https://docs.cartesia.ai/api-reference/tts/bytes.

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{RawAudioChunker, RawEncoding};
use super::http::Endpoint;

const DEFAULT_MODEL: &str = "sonic-3";
/// "Barbershop Man", one of Cartesia's stock voices.
const DEFAULT_VOICE: &str = "a0e99841-438c-4a64-b679-ae501e7d6091";

pub struct CartesiaSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for CartesiaSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let voice = endpoint.voice(&request.voice, DEFAULT_VOICE);
        let (encoding, wire, rate) = match request.output_rate {
            Some(8_000) => (RawEncoding::Mulaw, "pcm_mulaw", 8_000),
            Some(rate @ (16_000 | 22_050 | 44_100 | 48_000)) => {
                (RawEncoding::Pcm16, "pcm_s16le", rate)
            }
            _ => (RawEncoding::Pcm16, "pcm_s16le", 24_000),
        };
        let mut body = json!({
            "model_id": endpoint.tts_model(&request.model, DEFAULT_MODEL),
            "transcript": request.text,
            "voice": {"mode": "id", "id": voice},
            "output_format": {"container": "raw", "encoding": wire, "sample_rate": rate},
        });
        if let Some(language) = &request.language {
            body["language"] = json!(language);
        }
        if (request.speed - 1.0).abs() > f32::EPSILON {
            body["generation_config"] = json!({"speed": request.speed.clamp(0.6, 1.5)});
        }
        let build = endpoint.post_json("/tts/bytes", body);
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
