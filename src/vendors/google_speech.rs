//! Google Cloud Text-to-Speech (`POST /v1/text:synthesize` on `alt_base_url`, the
//! `texttospeech.googleapis.com` host, with the key in `x-goog-api-key`): `MULAW` at 8 kHz on
//! phone calls, `LINEAR16` at the playback rate otherwise. Its REST API answers with one JSON
//! document whose `audioContent` is base64 audio with a WAV header; the header is dropped and
//! the samples sent on as soon as the answer is in (the streaming variant is gRPC-only).
//! Followed: https://cloud.google.com/text-to-speech/docs/reference/rest/v1/text/synthesize
//! and https://cloud.google.com/text-to-speech/docs/reference/rest/v1/AudioConfig.

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{usual_output, RawAudioChunker, RawEncoding};
use super::http::Endpoint;
use super::speech::{locale_of, Framing};

const DEFAULT_VOICE: &str = "en-US-Neural2-F";

pub struct GoogleSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for GoogleSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let (encoding, rate) = usual_output(request.output_rate);
        let voice = endpoint.voice(&request.voice, DEFAULT_VOICE);
        // A voice name starts with its locale (`en-US-Neural2-F`).
        let parts: Vec<&str> = voice.splitn(3, '-').collect();
        let language = match parts.as_slice() {
            [lang, region, _] if lang.len() <= 3 && region.len() == 2 => format!("{lang}-{region}"),
            _ => locale_of(request.language.as_deref().unwrap_or("en")),
        };
        let mut audio_config = json!({
            "audioEncoding": if encoding == RawEncoding::Mulaw { "MULAW" } else { "LINEAR16" },
            "sampleRateHertz": rate,
        });
        if (request.speed - 1.0).abs() > f32::EPSILON {
            audio_config["speakingRate"] = json!(request.speed.clamp(0.25, 4.0));
        }
        if (request.pitch - 1.0).abs() > f32::EPSILON {
            // Semitones, -20 to 20: a factor of 2 is an octave.
            audio_config["pitch"] = json!((12.0 * request.pitch.log2()).clamp(-20.0, 20.0));
        }
        let mut voice_selection = json!({"languageCode": language, "name": voice});
        if let Some(model) = request.model.clone().or_else(|| endpoint.tts_model.clone()) {
            voice_selection["modelName"] = json!(model);
        }
        let body = json!({
            "input": {"text": request.text},
            "voice": voice_selection,
            "audioConfig": audio_config,
        });
        let url = endpoint.alt_url("/v1/text:synthesize");
        let build = {
            let endpoint = endpoint.clone();
            move || endpoint.authorize(endpoint.client.post(&url)).json(&body)
        };
        Ok(super::speech::spawn_speech(
            endpoint,
            build,
            Framing::JsonBase64("/audioContent"),
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}
