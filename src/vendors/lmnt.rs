//! LMNT text to speech (`POST /v1/ai/speech/bytes`): the audio streamed as it is produced,
//! headerless PCM16 (`raw`) at the playback rate or µ-law 8 kHz (`ulaw`) on phone calls.
//! Followed: https://docs.lmnt.com/api/ (X-API-Key) and the speech-bytes reference
//! (https://docs.lmnt.com/api-reference/speech/synthesize-speech-bytes).

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{output_for, RawAudioChunker, RawEncoding};
use super::http::Endpoint;

const DEFAULT_MODEL: &str = "blizzard";
const DEFAULT_VOICE: &str = "leah";

pub struct LmntSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for LmntSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let (encoding, rate) = output_for(request.output_rate, &[16_000], 24_000);
        let mut body = json!({
            "text": request.text,
            "voice": endpoint.voice(&request.voice, DEFAULT_VOICE),
            "model": endpoint.tts_model(&request.model, DEFAULT_MODEL),
            "format": if encoding == RawEncoding::Mulaw { "ulaw" } else { "raw" },
            "sample_rate": rate,
        });
        if let Some(language) = &request.language {
            body["language"] = json!(language);
        }
        if (request.speed - 1.0).abs() > f32::EPSILON {
            body["speed"] = json!(request.speed.clamp(0.25, 2.0));
        }
        let build = endpoint.post_json("/v1/ai/speech/bytes", body);
        Ok(super::speech::spawn_raw_speech(
            endpoint,
            build,
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

/// The cheapest authenticated call: the account.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/v1/account").await
}
