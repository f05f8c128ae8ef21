//! Hugging Face, the model hub: text to speech through its inference providers
//! (`POST {router}/hf-inference/models/{model}` with `{"inputs": text}`), which answer with one
//! audio file (FLAC or WAV) at the model's own rate: there is no streaming endpoint, so the
//! file is decoded when it has arrived and played at its own rate. The agent's `ttsModel`
//! names the hub model. Followed:
//! https://huggingface.co/docs/inference-providers/tasks/text-to-speech and
//! https://huggingface.co/docs/hub/api (`/api/whoami-v2`, the key check).

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{RawAudioChunker, RawEncoding};
use super::http::Endpoint;
use super::speech::Framing;

/// Meta's MMS English voice, served by Hugging Face's own inference provider.
const DEFAULT_MODEL: &str = "facebook/mms-tts-eng";

pub struct HuggingFaceSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for HuggingFaceSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let model = endpoint.tts_model(&request.model, DEFAULT_MODEL);
        // A model id is `owner/name`; each part is escaped, the slash kept.
        let path: Vec<String> = model
            .split('/')
            .map(|part| url::form_urlencoded::byte_serialize(part.as_bytes()).collect())
            .collect();
        let post = endpoint.post_json(
            &format!("/hf-inference/models/{}", path.join("/")),
            json!({"inputs": request.text}),
        );
        let build = move || post().header("Accept", "audio/flac, audio/wav, audio/*");
        Ok(super::speech::spawn_speech(
            endpoint,
            build,
            Framing::File,
            // The rate is the file's own; the chunker only carries the text.
            RawAudioChunker::new(RawEncoding::Pcm16, 16_000, request.text),
        ))
    }
}

/// The cheapest authenticated call: who the token belongs to, on the Hub.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    let url = endpoint.alt_url("/api/whoami-v2");
    endpoint
        .send(|| endpoint.authorize(endpoint.client.get(&url)))
        .await
        .map(drop)
}
