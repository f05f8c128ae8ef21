//! Inworld text to speech, streamed (`POST /tts/v1/voice:stream`): one JSON object a line,
//! each with a base64 piece of `LINEAR16` at the playback rate or `MULAW` at 8 kHz on phone
//! calls (a WAV header on a piece is dropped). The key is Inworld's ready-made Basic
//! credential. Followed: https://docs.inworld.ai/api-reference/ttsAPI/texttospeech/synthesize-speech-stream
//! and the inworld-ai/inworld-api-examples streaming example.

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{usual_output, RawAudioChunker, RawEncoding};
use super::http::Endpoint;
use super::speech::Framing;

const DEFAULT_MODEL: &str = "inworld-tts-1";
const DEFAULT_VOICE: &str = "Ashley";

pub struct InworldSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for InworldSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let (encoding, rate) = usual_output(request.output_rate);
        let body = json!({
            "text": request.text,
            "voiceId": endpoint.voice(&request.voice, DEFAULT_VOICE),
            "modelId": endpoint.tts_model(&request.model, DEFAULT_MODEL),
            "audio_config": {
                "audio_encoding": if encoding == RawEncoding::Mulaw { "MULAW" } else { "LINEAR16" },
                "sample_rate_hertz": rate,
                "speaking_rate": request.speed.clamp(0.5, 1.5),
            },
        });
        let build = endpoint.post_json("/tts/v1/voice:stream", body);
        Ok(super::speech::spawn_speech(
            endpoint,
            build,
            Framing::NdjsonBase64("/result/audioContent"),
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

/// The cheapest authenticated call: the voice list.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/tts/v1/voices").await
}
