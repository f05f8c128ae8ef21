//! Neuphonic text to speech over server-sent events (`POST /sse/speak/{language}`): each
//! event carries a base64 piece of PCM16 (`pcm_linear`) at the playback rate or of µ-law
//! (`pcm_mulaw`) at 8 kHz on phone calls. Followed: https://docs.neuphonic.com/api-reference
//! (the SSE endpoint, `x-api-key`, `sampling_rate` and `encoding`) and the pyneuphonic
//! client's `docs/source/websocket-api.md`.

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{output_for, RawAudioChunker, RawEncoding};
use super::http::Endpoint;
use super::speech::Framing;

const DEFAULT_MODEL: &str = "neu_fast";

pub struct NeuphonicSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for NeuphonicSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let (encoding, rate) = output_for(request.output_rate, &[16_000, 22_050], 22_050);
        let mut body = json!({
            "text": request.text,
            "model": endpoint.tts_model(&request.model, DEFAULT_MODEL),
            "sampling_rate": rate,
            "encoding": if encoding == RawEncoding::Mulaw { "pcm_mulaw" } else { "pcm_linear" },
            "speed": request.speed.clamp(0.7, 2.0),
        });
        // Without a voice, Neuphonic speaks in the language's default voice.
        let voice = endpoint.voice(&request.voice, "");
        if !voice.is_empty() {
            body["voice_id"] = json!(voice);
        }
        let language = request.language.clone().unwrap_or_else(|| "en".into());
        let path = format!(
            "/sse/speak/{}",
            url::form_urlencoded::byte_serialize(language.as_bytes()).collect::<String>()
        );
        let build = endpoint.post_json(&path, body);
        Ok(super::speech::spawn_speech(
            endpoint,
            build,
            Framing::SseBase64("/data/audio"),
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

/// The cheapest authenticated call: the voice list.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/voices").await
}
