//! ElevenLabs text to speech, streamed: raw PCM at the rate the caller plays, or µ-law 8 kHz
//! on phone calls (Twilio's own format, so nothing is resampled); and speech to text with
//! Scribe (`POST /v1/speech-to-text`, multipart, word timings). Wire format:
//! reference/protocols.md §7.1; https://elevenlabs.io/docs/api-reference/text-to-speech/stream
//! and https://elevenlabs.io/docs/api-reference/speech-to-text/convert.

use serde_json::{json, Value};
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech, TranscribeOptions,
    Transcript, TranscriptWord,
};

use super::audio::{clip_recognizer, wav_part, Clip, RawAudioChunker, RawEncoding};
use super::http::{trimmed_str, Endpoint};
use crate::speech::languages::language_code;

const DEFAULT_STT_MODEL: &str = "scribe_v1";

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

pub struct ElevenLabsTranscription {
    pub endpoint: Endpoint,
}

clip_recognizer!(ElevenLabsTranscription, scribe);

/// One clip through Scribe.
async fn scribe(
    endpoint: Endpoint,
    clip: Clip,
    options: TranscribeOptions,
) -> Result<Transcript, EngineError> {
    let wav = clip.wav();
    let model = endpoint.stt_model_or(DEFAULT_STT_MODEL);
    let url = endpoint.url("/v1/speech-to-text");
    let build = || {
        let mut form = reqwest::multipart::Form::new()
            .text("model_id", model.clone())
            .text("timestamps_granularity", "word")
            .text("tag_audio_events", "false")
            .part("file", wav_part(wav.clone()));
        if let Some(language) = &options.language {
            form = form.text("language_code", language.clone());
        }
        endpoint
            .authorize(endpoint.client.post(&url))
            .multipart(form)
    };
    let json = endpoint.fetch_json(build).await?;
    Ok(transcript_from_scribe(&json, &options, clip.seconds()))
}

/// ISO 639-3 codes Scribe reports, as ISO 639-1 (the common ones whose two letters are not
/// the first two of the three).
fn language_of(code: &str) -> Option<&'static str> {
    let two = match code {
        "spa" => "es",
        "deu" | "ger" => "de",
        "nld" | "dut" => "nl",
        "zho" | "chi" | "cmn" => "zh",
        "jpn" => "ja",
        "kor" => "ko",
        "pol" => "pl",
        "ell" | "gre" => "el",
        "heb" => "he",
        "ukr" => "uk",
        "swe" => "sv",
        "dan" => "da",
        "ces" | "cze" => "cs",
        "fas" | "per" => "fa",
        "ron" | "rum" => "ro",
        "tur" => "tr",
        "vie" => "vi",
        "cat" => "ca",
        "slk" | "slo" => "sk",
        "fin" => "fi",
        "ara" => "ar",
        "hin" => "hi",
        "por" => "pt",
        "rus" => "ru",
        "ita" => "it",
        "fra" | "fre" => "fr",
        "eng" => "en",
        other => return language_code(other),
    };
    Some(two)
}

/// Our transcript from a Scribe answer: its words (`type: "word"`, spacing left out),
/// segments by sentence and pause.
pub fn transcript_from_scribe(
    json: &Value,
    options: &TranscribeOptions,
    clip_seconds: f32,
) -> Transcript {
    let text = trimmed_str(json, "text");
    let words: Vec<TranscriptWord> = json
        .get("words")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|word| word.get("type").and_then(Value::as_str).unwrap_or("word") == "word")
        .map(|word| TranscriptWord {
            start: word.get("start").and_then(Value::as_f64).unwrap_or(0.0) as f32,
            end: word.get("end").and_then(Value::as_f64).unwrap_or(0.0) as f32,
            word: trimmed_str(word, "text"),
        })
        .collect();
    let detected = json
        .get("language_code")
        .and_then(Value::as_str)
        .and_then(language_of);
    super::deepgram::file_transcript(text, words, clip_seconds, detected, options)
}

/// The cheapest authenticated call: the account's voices.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/v1/voices").await
}
