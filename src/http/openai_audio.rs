//! The OpenAI-compatible audio routes, so code written for OpenAI's SDKs works by changing the
//! base URL: `POST /v1/audio/speech`, `GET /v1/audio/models` and `GET /v1/models` (the
//! transcription and translation routes are in `openai_transcription`). Requests and
//! responses follow OpenAI's API field for field (reference/protocols.md §4), errors
//! included: under `/v1/audio/` and `/v1/models` every error body is OpenAI's
//! `{"error": {"message", "type", "param", "code"}}`.

use actix_web::body::{self, BoxBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpResponse};
use base64::Engine as _;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use switchboard_actors::engine::SpeechRequest;
use utoipa::ToSchema;

use super::body::Binary;
use super::methods;
use super::openai_transcription::TRANSCRIPTION_MODELS;
use crate::app::AppState;
use crate::billing::Usage;
use crate::error::ApiError;
use crate::media::OutputFormat;
use crate::providers;
use crate::registry::meter;
use crate::speech::synthesis::synthesize_stream;

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
/// Unix time the model list reports as `created`.
const MODELS_CREATED: i64 = 1_763_856_000;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(speech)
        .service(models)
        .service(openai_models)
        .service(openai_model);
    methods::other_methods(
        cfg,
        &[
            "/audio/speech",
            "/audio/models",
            "/models",
            "/models/{model}",
        ],
    );
}

/// Only the model and provider catalog (`/audio/models`): what the portal's agent editor
/// offers.
pub fn catalog_routes(cfg: &mut web::ServiceConfig) {
    cfg.service(models);
    methods::other_methods(cfg, &["/audio/models"]);
}

/// True for the paths whose errors take OpenAI's shape.
pub fn is_openai_path(path: &str) -> bool {
    path.starts_with("/v1/audio/") || path == "/v1/models" || path.starts_with("/v1/models/")
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
    responses((status = 200, description = "The audio bytes in the requested format, or an SSE stream of speech.audio.delta events", content((inline(Binary) = "audio/mpeg"), (inline(Binary) = "audio/ogg"), (inline(Binary) = "audio/wav"), (inline(Binary) = "audio/pcm"), (String = "text/event-stream"))),
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
            ApiError::Validation {
                message,
                param: Some(p),
            } if p == "text" => ApiError::invalid("input", message),
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
    HttpResponse::Ok().json(json!({
        "object": "list",
        "data": audio_models(&state),
        "providers": state.vendors().catalog(),
    }))
}

/// Every audio model, speech then transcription.
fn audio_models(state: &AppState) -> Vec<ModelBody> {
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
    data
}

/// A model as OpenAI's `GET /v1/models` lists it.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiModelBody {
    pub id: String,
    /// Always `model`.
    pub object: String,
    /// Unix seconds.
    pub created: i64,
    pub owned_by: String,
}

impl From<ModelBody> for OpenAiModelBody {
    fn from(model: ModelBody) -> Self {
        OpenAiModelBody {
            id: model.id,
            object: model.object,
            created: model.created,
            owned_by: model.owned_by,
        }
    }
}

/// OpenAI's list of models.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiModelList {
    /// Always `list`.
    pub object: String,
    pub data: Vec<OpenAiModelBody>,
}

/// The audio models in OpenAI's `GET /v1/models` shape (what the SDK's `models.list()`
/// reads): speech models, then transcription models.
#[utoipa::path(get, path = "/v1/models", tag = "openai-compatible",
    responses((status = 200, body = OpenAiModelList), (status = 401, description = "OpenAI error body")),
    security(("bearer" = [])))]
#[get("/models")]
async fn openai_models(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(OpenAiModelList {
        object: "list".into(),
        data: audio_models(&state)
            .into_iter()
            .map(OpenAiModelBody::from)
            .collect(),
    })
}

/// One audio model as OpenAI's `GET /v1/models/{model}` answers it (the SDK's
/// `models.retrieve()`); an unknown id is 404.
#[utoipa::path(get, path = "/v1/models/{model}", tag = "openai-compatible",
    params(("model" = String, Path, description = "A model id from GET /v1/models")),
    responses((status = 200, body = OpenAiModelBody), (status = 401, description = "OpenAI error body"),
        (status = 404, description = "OpenAI error body")),
    security(("bearer" = [])))]
#[get("/models/{model}")]
async fn openai_model(
    state: web::Data<AppState>,
    model: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = model.into_inner();
    audio_models(&state)
        .into_iter()
        .find(|m| m.id == id)
        .map(|m| HttpResponse::Ok().json(OpenAiModelBody::from(m)))
        .ok_or_else(|| ApiError::not_found("model", &id))
}
