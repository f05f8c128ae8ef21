//! The OpenAI-compatible audio routes, so code written for OpenAI's SDKs works by changing the
//! base URL: `POST /v1/audio/speech`, `POST /v1/audio/transcriptions`,
//! `GET /v1/audio/models`. Requests and responses follow OpenAI's API field for field
//! (reference/protocols.md §4), errors included: under `/v1/audio/` every error body is
//! OpenAI's `{"error": {"message", "type", "param", "code"}}`.

use actix_web::body::{self, BoxBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use base64::Engine as _;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use switchboard_actors::engine::{SpeechRequest, SttMode, TranscribeOptions, Transcript};
use utoipa::ToSchema;

use super::upload::{is_multipart, read_form};
use crate::app::AppState;
use crate::billing::{meter, Usage};
use crate::error::ApiError;
use crate::media::OutputFormat;
use crate::providers;
use crate::registry::jobs::extension_of;
use crate::speech::languages::language_name;
use crate::speech::synthesis::synthesize_stream;
use crate::speech::transcription::{transcribe_file, TranscriptionRequest};

/// Longest `input` OpenAI accepts.
const MAX_INPUT_CHARS: usize = 4096;
/// OpenAI's speech models; all are served by the embedded voice.
const SPEECH_MODELS: [&str; 5] = [
    "tts-1",
    "tts-1-hd",
    "gpt-4o-mini-tts",
    "gpt-4o-mini-tts-2025-12-15",
    "default",
];
/// OpenAI's voices, all spoken by our default voice; our own voice ids work too.
const OPENAI_VOICES: [&str; 13] = [
    "alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse",
    "marin", "cedar",
];
/// Transcription models: `whisper-1` and the larger ones run accurate mode; the `mini` ones
/// run fast mode.
const TRANSCRIPTION_MODELS: [&str; 7] = [
    "whisper-1",
    "gpt-4o-transcribe",
    "gpt-4o-mini-transcribe",
    "gpt-4o-mini-transcribe-2025-12-15",
    "gpt-4o-transcribe-diarize",
    "gpt-transcribe",
    "default",
];
/// Unix time the model list reports as `created`.
const MODELS_CREATED: i64 = 1_763_856_000;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(speech).service(transcriptions).service(models);
    super::other_methods(
        cfg,
        &["/audio/speech", "/audio/transcriptions", "/audio/models"],
    );
}

/// True for the paths whose errors take OpenAI's shape.
pub fn is_openai_path(path: &str) -> bool {
    path.starts_with("/v1/audio/")
}

/// Rewrites an error response of ours into OpenAI's error body (same status, same headers).
pub async fn reshape_error(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (request, response) = response.into_parts();
    let (head, body) = response.into_parts();
    let bytes = body::to_bytes(body).await.unwrap_or_default();
    let ours: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let detail = &ours["error"];
    let message = detail["message"]
        .as_str()
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error"))
        .to_string();
    let (kind, code) = match status {
        StatusCode::UNAUTHORIZED => ("invalid_request_error", json!("invalid_api_key")),
        StatusCode::TOO_MANY_REQUESTS => ("rate_limit_error", detail["code"].clone()),
        s if s.is_server_error() => ("server_error", detail["code"].clone()),
        _ => ("invalid_request_error", detail["code"].clone()),
    };
    let openai = json!({
        "error": {
            "message": message,
            "type": kind,
            "param": detail["param"].clone(),
            "code": code,
        }
    });
    let mut rebuilt = HttpResponse::build(status).json(openai);
    for (name, value) in head.headers() {
        if name != CONTENT_TYPE && name != actix_web::http::header::CONTENT_LENGTH {
            rebuilt.headers_mut().insert(name.clone(), value.clone());
        }
    }
    ServiceResponse::new(request, rebuilt)
}

/// The body of `POST /v1/audio/speech`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SpeechBody {
    pub model: Option<String>,
    /// Up to 4096 characters.
    pub input: Option<String>,
    /// An OpenAI voice name (spoken by our default voice), one of our voice ids, or
    /// `{"id": "..."}`.
    #[schema(value_type = Object)]
    pub voice: Option<Value>,
    /// Accepted for compatibility; the embedded voice does not take style instructions.
    pub instructions: Option<String>,
    /// `mp3` (default), `opus` (Ogg Opus), `wav` or `pcm` (24 kHz, 16-bit, mono, raw).
    /// `aac` and `flac` are refused.
    pub response_format: Option<String>,
    /// 0.25-4.0, default 1.0; the voice itself speaks at 0.5-2.0 and values beyond are held
    /// at those bounds.
    pub speed: Option<f64>,
    /// `audio` (default) or `sse`.
    pub stream_format: Option<String>,
}

/// Speech synthesis as OpenAI's `POST /v1/audio/speech`.
#[utoipa::path(post, path = "/v1/audio/speech", tag = "openai-compatible", request_body = SpeechBody,
    responses((status = 200, description = "The audio bytes in the requested format, or an SSE stream of speech.audio.delta events", content(("audio/mpeg"), ("audio/ogg"), ("audio/wav"), ("audio/pcm"), ("text/event-stream"))),
        (status = 400, description = "OpenAI error body")),
    security(("bearer" = [])))]
#[post("/audio/speech")]
async fn speech(
    state: web::Data<AppState>,
    developer: super::auth::Developer,
    body: super::body::ApiJson<SpeechBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let model = body
        .model
        .ok_or_else(|| ApiError::invalid("model", "you must provide a model parameter"))?;
    if !SPEECH_MODELS.contains(&model.as_str()) {
        return Err(ApiError::invalid(
            "model",
            format!(
                "model '{model}' is not a speech model; use one of: {}",
                SPEECH_MODELS.join(", ")
            ),
        ));
    }
    let input = body
        .input
        .ok_or_else(|| ApiError::invalid("input", "you must provide an input parameter"))?;
    if input.trim().is_empty() {
        return Err(ApiError::invalid("input", "input must not be empty"));
    }
    super::validate::length("input", &input, 1, MAX_INPUT_CHARS)?;
    let voice = match body.voice {
        Some(Value::String(name)) => name,
        Some(Value::Object(map)) => map
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ApiError::invalid("voice", "a voice object needs an id"))?,
        Some(_) => {
            return Err(ApiError::invalid(
                "voice",
                "voice must be a string or {\"id\": ...}",
            ))
        }
        None => {
            return Err(ApiError::invalid(
                "voice",
                "you must provide a voice parameter",
            ))
        }
    };
    let voice = if OPENAI_VOICES.contains(&voice.as_str()) {
        "default".to_string()
    } else {
        voice
    };
    let format = match body.response_format.as_deref().unwrap_or("mp3") {
        "mp3" => OutputFormat::Mp3,
        "opus" => OutputFormat::OggOpus,
        "wav" => OutputFormat::Wav,
        "pcm" => OutputFormat::Pcm16,
        other @ ("aac" | "flac") => {
            return Err(ApiError::invalid(
                "response_format",
                format!("response_format '{other}' is not supported by this server; use mp3, opus, wav or pcm"),
            ))
        }
        other => {
            return Err(ApiError::invalid(
                "response_format",
                format!("'{other}' is not one of ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] - 'response_format'"),
            ))
        }
    };
    let speed = body.speed.unwrap_or(1.0);
    super::validate::number_in("speed", speed, 0.25, 4.0)?;
    let sse = match body.stream_format.as_deref().unwrap_or("audio") {
        "audio" => false,
        "sse" => true,
        other => {
            return Err(ApiError::invalid(
                "stream_format",
                format!("'{other}' is not one of ['sse', 'audio'] - 'stream_format'"),
            ))
        }
    };
    let engine = providers::embedded(state.engines().batch.tts.clone()).engine;
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    let characters = input.chars().count() as u64;
    let asked_voice = voice.clone();
    let request = SpeechRequest {
        speed: speed.clamp(0.5, 2.0) as f32,
        ..SpeechRequest::new(input, voice)
    };
    let stream = synthesize_stream(engine, request, format)
        .await
        .map_err(|e| super::synthesize::voice_error(e.into(), &asked_voice))
        .map_err(|e| match e {
            ApiError::Validation {
                message,
                param: Some(p),
            } if p == "voiceId" => ApiError::invalid("voice", message),
            other => other,
        })?;
    meter::charge(
        state.metering(),
        developer.id(),
        Usage::Tts { characters },
        true,
    );
    let mut response = HttpResponse::Ok();
    response.insert_header(("X-Provider-Used", "default"));
    if !sse {
        return Ok(response
            .content_type(format.content_type())
            .streaming(stream));
    }
    let events = stream
        .map(|piece| {
            piece.map(|bytes| {
                let event = json!({
                    "type": "speech.audio.delta",
                    "audio": base64::engine::general_purpose::STANDARD.encode(&bytes),
                });
                web::Bytes::from(format!("data: {event}\n\n"))
            })
        })
        .chain(futures_util::stream::once(async {
            let done = json!({"type": "speech.audio.done"});
            Ok(web::Bytes::from(format!("data: {done}\n\n")))
        }));
    Ok(response
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .streaming(events))
}

/// Transcription as OpenAI's `POST /v1/audio/transcriptions` (multipart, `file` at most
/// 25 MB). `response_format` json (default), text, srt, verbose_json or vtt;
/// `timestamp_granularities[]` word and/or segment with verbose_json.
#[utoipa::path(post, path = "/v1/audio/transcriptions", tag = "openai-compatible",
    request_body(content_type = "multipart/form-data", description = "file, model, language, prompt, response_format, temperature, timestamp_granularities[]"),
    responses((status = 200, description = "JSON, verbose JSON, text, SRT or WebVTT"),
        (status = 400, description = "OpenAI error body"), (status = 413, description = "Over 25 MB")),
    security(("bearer" = [])))]
#[post("/audio/transcriptions")]
async fn transcriptions(
    state: web::Data<AppState>,
    developer: super::auth::Developer,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if !is_multipart(req.headers()) {
        return Err(ApiError::UnsupportedMediaType(
            "send the audio as multipart/form-data with a file part".into(),
        ));
    }
    let mut form = read_form(req.headers(), payload, "file").await?;
    let file = form
        .file
        .take()
        .ok_or_else(|| ApiError::invalid("file", "you must provide a file parameter"))?;
    if file.bytes.is_empty() {
        return Err(ApiError::invalid("file", "the uploaded file is empty"));
    }
    let model = form
        .text("model")
        .ok_or_else(|| ApiError::invalid("model", "you must provide a model parameter"))?;
    if !TRANSCRIPTION_MODELS.contains(&model) {
        return Err(ApiError::invalid(
            "model",
            format!(
                "model '{model}' is not a transcription model; use one of: {}",
                TRANSCRIPTION_MODELS.join(", ")
            ),
        ));
    }
    let mode = if model.contains("mini") {
        SttMode::Fast
    } else {
        SttMode::Accurate
    };
    let format = form.text("response_format").unwrap_or("json").to_string();
    if !["json", "text", "srt", "verbose_json", "vtt"].contains(&format.as_str()) {
        return Err(ApiError::invalid(
            "response_format",
            format!("response_format '{format}' is not supported; use json, text, srt, verbose_json or vtt"),
        ));
    }
    let granularities = form.all("timestamp_granularities");
    if let Some(bad) = granularities
        .iter()
        .find(|g| !["word", "segment"].contains(*g))
    {
        return Err(ApiError::invalid(
            "timestamp_granularities",
            format!("'{bad}' is not one of ['word', 'segment']"),
        ));
    }
    let words = granularities.contains(&"word");
    if !granularities.is_empty() && format != "verbose_json" {
        return Err(ApiError::invalid(
            "timestamp_granularities",
            "timestamp_granularities requires response_format verbose_json",
        ));
    }
    let temperature = match form.text("temperature") {
        None => 0.0,
        Some(t) => t
            .parse::<f32>()
            .ok()
            .filter(|t| (0.0..=1.0).contains(t))
            .ok_or_else(|| {
                ApiError::invalid("temperature", "temperature must be a number from 0 to 1")
            })?,
    };
    let language = form
        .text("language")
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.to_ascii_lowercase());
    let request = TranscriptionRequest {
        options: TranscribeOptions {
            language,
            mode,
            word_timestamps: words,
            prompt: form.text("prompt").map(str::to_string),
            temperature,
            live_turn: false,
            ..TranscribeOptions::default()
        },
        diarize: false,
    };
    let engine = providers::embedded(state.engines().batch.stt.clone()).engine;
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    let extension = file.filename.as_deref().and_then(extension_of);
    let transcript = transcribe_file(engine, file.bytes, extension, request)
        .await
        .map_err(|e| match ApiError::from(e) {
            ApiError::Validation {
                message,
                param: None,
            } => ApiError::invalid("language", message),
            ApiError::UnsupportedMediaType(message) => ApiError::invalid("file", message),
            other => other,
        })?;
    meter::charge(
        state.metering(),
        developer.id(),
        Usage::Stt {
            seconds: f64::from(transcript.duration),
        },
        true,
    );
    let mut response = HttpResponse::Ok();
    response.insert_header(("X-Provider-Used", "default"));
    Ok(match format.as_str() {
        "text" => response
            .content_type("text/plain; charset=utf-8")
            .body(format!("{}\n", transcript.text.trim())),
        "srt" => response
            .content_type("text/plain; charset=utf-8")
            .body(subtitles(&transcript, false)),
        "vtt" => response
            .content_type("text/vtt; charset=utf-8")
            .body(subtitles(&transcript, true)),
        "verbose_json" => response.json(verbose_json(&transcript, words, &granularities)),
        _ => response.json(json!({
            "text": transcript.text.trim(),
            "usage": {"type": "duration", "seconds": transcript.duration.ceil() as u64},
        })),
    })
}

fn verbose_json(transcript: &Transcript, words: bool, granularities: &[&str]) -> Value {
    let segments = granularities.is_empty() || granularities.contains(&"segment");
    let mut body = json!({
        "task": "transcribe",
        "language": language_name(&transcript.language),
        "duration": round(transcript.duration),
        "text": transcript.text.trim(),
        "usage": {"type": "duration", "seconds": transcript.duration.ceil() as u64},
    });
    if segments {
        body["segments"] = transcript
            .segments
            .iter()
            .enumerate()
            .map(|(id, s)| {
                json!({
                    "id": id,
                    "seek": (s.start * 100.0) as u64,
                    "start": round(s.start),
                    "end": round(s.end),
                    "text": format!(" {}", s.text.trim()),
                    "tokens": [],
                    "temperature": 0.0,
                    "avg_logprob": 0.0,
                    "compression_ratio": 1.0,
                    "no_speech_prob": 0.0,
                })
            })
            .collect();
    }
    if words {
        body["words"] = transcript
            .words
            .iter()
            .map(|w| json!({"word": w.word.trim(), "start": round(w.start), "end": round(w.end)}))
            .collect();
    }
    body
}

fn round(value: f32) -> f64 {
    (f64::from(value) * 1000.0).round() / 1000.0
}

/// SubRip or WebVTT cues, one per segment.
fn subtitles(transcript: &Transcript, vtt: bool) -> String {
    let mut out = String::new();
    if vtt {
        out.push_str("WEBVTT\n\n");
    }
    for (index, segment) in transcript.segments.iter().enumerate() {
        if !vtt {
            out.push_str(&format!("{}\n", index + 1));
        }
        out.push_str(&format!(
            "{} --> {}\n{}\n\n",
            timestamp(segment.start, vtt),
            timestamp(segment.end, vtt),
            segment.text.trim()
        ));
    }
    out
}

fn timestamp(seconds: f32, vtt: bool) -> String {
    let total_ms = (f64::from(seconds.max(0.0)) * 1000.0).round() as u64;
    let (h, m, s, ms) = (
        total_ms / 3_600_000,
        total_ms / 60_000 % 60,
        total_ms / 1000 % 60,
        total_ms % 1000,
    );
    let separator = if vtt { '.' } else { ',' };
    format!("{h:02}:{m:02}:{s:02}{separator}{ms:03}")
}

/// One entry of `GET /v1/audio/models`, OpenAI's model object plus what the model does.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelBody {
    pub id: String,
    /// Always `model`.
    pub object: String,
    pub created: i64,
    pub owned_by: String,
    /// `speech` or `transcription`.
    pub kind: String,
    /// For speech models: the voice ids they speak with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub voices: Option<Vec<String>>,
}

/// The audio models this server serves, in OpenAI's list shape, plus `providers`: every
/// provider id by kind (`tts`, `stt`, `llm`) with `{id, embedded, adapter, platformKey,
/// keyHeader}`, and for vendors `streaming`, `phoneFormat` (speech) and `model` (when
/// configured): an extension OpenAI clients ignore.
#[utoipa::path(get, path = "/v1/audio/models", tag = "openai-compatible",
    responses((status = 200, description = "{\"object\": \"list\", \"data\": [model], \"providers\": {tts, stt, llm}}; each provider {id, embedded, adapter, platformKey, keyHeader, streaming?, phoneFormat?, model?}")),
    security(("bearer" = [])))]
#[get("/audio/models")]
async fn models(state: web::Data<AppState>) -> HttpResponse {
    let mut voices: Vec<String> = OPENAI_VOICES.iter().map(|v| v.to_string()).collect();
    voices.extend(state.engines().voice_ids());
    let mut data: Vec<ModelBody> = SPEECH_MODELS
        .iter()
        .map(|id| ModelBody {
            id: id.to_string(),
            object: "model".into(),
            created: MODELS_CREATED,
            owned_by: "switchboard".into(),
            kind: "speech".into(),
            voices: Some(voices.clone()),
        })
        .collect();
    data.extend(TRANSCRIPTION_MODELS.iter().map(|id| ModelBody {
        id: id.to_string(),
        object: "model".into(),
        created: MODELS_CREATED,
        owned_by: "switchboard".into(),
        kind: "transcription".into(),
        voices: None,
    }));
    HttpResponse::Ok().json(json!({
        "object": "list",
        "data": data,
        "providers": state.vendors().catalog(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtitle_timestamps_follow_each_format() {
        assert_eq!(timestamp(3723.456, false), "01:02:03,456");
        assert_eq!(timestamp(0.5, true), "00:00:00.500");
    }
}
