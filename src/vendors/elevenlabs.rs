//! ElevenLabs text to speech, streamed: raw PCM at the rate the caller plays, or µ-law 8 kHz
//! on phone calls (Twilio's own format, so nothing is resampled). Wire format:
//! reference/protocols.md §7.1; https://elevenlabs.io/docs/api-reference/text-to-speech/stream.

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{RawAudioChunker, RawEncoding};
use super::http::Endpoint;

const DEFAULT_MODEL: &str = "eleven_flash_v2_5";
/// "Rachel", a premade voice every account has.
const DEFAULT_VOICE: &str = "21m00Tcm4TlvDQ8ikfK";

pub struct ElevenLabsSpeech {
    pub endpoint: Endpoint,
}

/// The `output_format` for a playback rate, and how its bytes decode.
fn output_format(rate: Option<u32>) -> (&'static str, RawEncoding, u32) {
    match rate {
        Some(8_000) => ("ulaw_8000", RawEncoding::Mulaw, 8_000),
        Some(16_000) => ("pcm_16000", RawEncoding::Pcm16, 16_000),
        Some(22_050) => ("pcm_22050", RawEncoding::Pcm16, 22_050),
        Some(44_100) => ("pcm_44100", RawEncoding::Pcm16, 44_100),
        Some(48_000) => ("pcm_48000", RawEncoding::Pcm16, 48_000),
        _ => ("pcm_24000", RawEncoding::Pcm16, 24_000),
    }
}

impl TextToSpeech for ElevenLabsSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let voice = endpoint.voice(&request.voice, DEFAULT_VOICE);
        let (format, encoding, rate) = output_format(request.output_rate);
        let mut body = json!({
            "text": request.text,
            "model_id": endpoint.tts_model(&request.model, DEFAULT_MODEL),
            "voice_settings": {"speed": request.speed.clamp(0.7, 1.2)},
        });
        if let Some(language) = &request.language {
            body["language_code"] = json!(language);
        }
        let url = endpoint.url(&format!(
            "/v1/text-to-speech/{}/stream",
            url::form_urlencoded::byte_serialize(voice.as_bytes()).collect::<String>()
        ));
        let build = {
            let endpoint = endpoint.clone();
            move || {
                endpoint
                    .authorize(endpoint.client.post(&url))
                    .query(&[
                        ("output_format", format),
                        ("optimize_streaming_latency", "3"),
                    ])
                    .json(&body)
            }
        };
        Ok(super::speech::spawn_raw_speech(
            endpoint,
            build,
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

/// The cheapest authenticated call: the account's voices.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/v1/voices").await
}
