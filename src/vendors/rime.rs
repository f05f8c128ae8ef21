//! Rime text to speech (`POST /v1/rime-tts`), streamed in the format the `Accept` header asks
//! for: headerless PCM16 (`audio/pcm`) at the playback rate, or G.711 µ-law (`audio/x-mulaw`)
//! at 8 kHz on phone calls. Followed: https://docs.rime.ai/api-reference/tts (formats, the
//! `speaker`/`modelId`/`samplingRate` fields, bearer key).

use serde_json::json;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};

use super::audio::{usual_output, RawAudioChunker, RawEncoding};
use super::http::Endpoint;

const DEFAULT_MODEL: &str = "mistv2";
const DEFAULT_VOICE: &str = "cove";

pub struct RimeSpeech {
    pub endpoint: Endpoint,
}

/// Rime's three-letter language codes.
fn rime_language(code: &str) -> Option<&'static str> {
    Some(match code {
        "en" => "eng",
        "es" => "spa",
        "fr" => "fra",
        "de" => "ger",
        "pt" => "por",
        "it" => "ita",
        "hi" => "hin",
        "ja" => "jpn",
        _ => return None,
    })
}

fn body(endpoint: &Endpoint, request: &SpeechRequest, rate: u32) -> serde_json::Value {
    let mut body = json!({
        "text": request.text,
        "speaker": endpoint.voice(&request.voice, DEFAULT_VOICE),
        "modelId": endpoint.tts_model(&request.model, DEFAULT_MODEL),
        "samplingRate": rate,
    });
    if (request.speed - 1.0).abs() > f32::EPSILON {
        // Rime's speedAlpha is a duration factor: above 1 is slower.
        body["speedAlpha"] = json!(1.0 / request.speed.clamp(0.5, 2.0));
    }
    if let Some(lang) = request.language.as_deref().and_then(rime_language) {
        body["lang"] = json!(lang);
    }
    body
}

fn accept(encoding: RawEncoding) -> &'static str {
    match encoding {
        RawEncoding::Mulaw => "audio/x-mulaw",
        RawEncoding::Pcm16 => "audio/pcm",
    }
}

impl TextToSpeech for RimeSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let (encoding, rate) = usual_output(request.output_rate);
        let post = endpoint.post_json("/v1/rime-tts", body(&endpoint, &request, rate));
        let build = move || post().header("Accept", accept(encoding));
        Ok(super::speech::spawn_raw_speech(
            endpoint,
            build,
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

/// Rime has no free authenticated read: the cheapest call is one word at 8 kHz µ-law,
/// whose answer is read and dropped.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    let request = SpeechRequest {
        output_rate: Some(8_000),
        ..SpeechRequest::new("Hi.", "default")
    };
    let post = endpoint.post_json("/v1/rime-tts", body(endpoint, &request, 8_000));
    let response = endpoint
        .send(|| post().header("Accept", accept(RawEncoding::Mulaw)))
        .await?;
    let mut body = endpoint.body(response);
    while body.next().await?.is_some() {}
    Ok(())
}
