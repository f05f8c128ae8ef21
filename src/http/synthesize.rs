//! `POST /v1/synthesize`: text to speech, streamed in the requested format as each sentence
//! is synthesized.

use actix_web::{post, web, HttpRequest, HttpResponse};
use serde::Deserialize;
use switchboard_actors::engine::SpeechRequest;
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::body::Binary;
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::billing::Usage;
use crate::engines::pool::Lane;
use crate::error::{ApiError, ErrorBody};
use crate::media::OutputFormat;
use crate::providers::{self, Caller};
use crate::registry::agents::GetAgent;
use crate::registry::meter;
use crate::speech::synthesis::synthesize_stream;

pub const MAX_TEXT_CHARS: usize = 10_000;
const MAX_VOICE_CHARS: usize = 200;
const FORMATS: [&str; 3] = ["wav", "mp3", "ogg"];

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(synthesize).service(speak);
    methods::other_methods(cfg, &["/synthesize", "/agents/{id}/speak"]);
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SynthesizeRequest {
    /// 1-10,000 characters.
    pub text: Option<String>,
    /// Default `default` (the embedded neural voice). `espeak-<lang>` voices and every
    /// installed Piper voice are listed by `GET /v1/audio/models`.
    pub voice_id: Option<String>,
    /// `wav` (default; PCM16 mono 24 kHz), `mp3` (mono 24 kHz, 64 kbit/s) or `ogg` (Opus,
    /// mono 48 kHz).
    pub format: Option<String>,
    /// 0.5-2.0, default 1.0.
    pub speed: Option<f64>,
    /// 0.5-2.0, default 1.0.
    pub pitch: Option<f64>,
    /// A speech vendor id, default `default` (the embedded engine).
    pub provider: Option<String>,
}

/// The format name of the spec mapped onto an encoder.
pub fn output_format(param: &str, name: &str) -> Result<OutputFormat, ApiError> {
    match name {
        "wav" => Ok(OutputFormat::Wav),
        "mp3" => Ok(OutputFormat::Mp3),
        "ogg" => Ok(OutputFormat::OggOpus),
        other => Err(ApiError::invalid(
            param,
            format!("{param} '{other}' is not one of: {}", FORMATS.join(", ")),
        )),
    }
}

/// Synthesizes speech. The body is the audio itself, streamed as it is produced.
#[utoipa::path(post, path = "/v1/synthesize", tag = "speech", request_body = SynthesizeRequest,
    responses(
        (status = 200, description = "The audio, streamed in the requested format; X-Provider-Used names the engine", content((inline(Binary) = "audio/wav"), (inline(Binary) = "audio/mpeg"), (inline(Binary) = "audio/ogg"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 402, description = "insufficient_credits", body = ErrorBody),
        (status = 503, description = "engine_unavailable (a model is not installed) or unavailable (inference queue full)", body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/synthesize")]
async fn synthesize(
    state: web::Data<AppState>,
    developer: Developer,
    http: HttpRequest,
    body: ApiJson<SynthesizeRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    validate::required_text("text", request.text.as_deref(), MAX_TEXT_CHARS)?;
    let voice = request.voice_id.unwrap_or_else(|| "default".to_string());
    validate::length("voiceId", &voice, 1, MAX_VOICE_CHARS)?;
    let format = output_format("format", request.format.as_deref().unwrap_or("wav"))?;
    let speed = request.speed.unwrap_or(1.0);
    validate::number_in("speed", speed, 0.5, 2.0)?;
    let pitch = request.pitch.unwrap_or(1.0);
    validate::number_in("pitch", pitch, 0.5, 2.0)?;
    let provider = request.provider.unwrap_or_else(|| "default".to_string());
    let chosen = providers::tts(
        &state,
        "provider",
        &provider,
        Caller {
            developer_id: developer.id(),
            headers: Some(http.headers()),
            lane: Lane::Batch,
        },
    )
    .await?;
    let speech = SpeechRequest {
        speed: speed as f32,
        pitch: pitch as f32,
        ..SpeechRequest::new(request.text.unwrap_or_default(), voice)
    };
    speak_metered(&state, &developer, &chosen, speech, format).await
}

/// Checks credits, starts the speech, charges it (unless the caller's own vendor key pays)
/// and answers the audio stream tagged with the provider that served.
async fn speak_metered(
    state: &AppState,
    developer: &Developer,
    chosen: &providers::Chosen<dyn switchboard_actors::engine::TextToSpeech>,
    speech: SpeechRequest,
    format: OutputFormat,
) -> Result<HttpResponse, ApiError> {
    meter::ensure_credits(state.metering(), developer.id(), chosen.metered_up_front()).await?;
    let characters = speech.text.chars().count() as u64;
    let voice = speech.voice.clone();
    let stream = synthesize_stream(chosen.engine.clone(), speech, format)
        .await
        .map_err(|e| voice_error(e.into(), &voice))?;
    meter::charge(
        state.metering(),
        developer.id(),
        Usage::Tts { characters },
        !chosen.bypasses_metering(),
    );
    let mut response = HttpResponse::Ok();
    super::auth::tag_provider(chosen, &mut response);
    Ok(response
        .content_type(format.content_type())
        .streaming(stream))
}

/// An engine's refusal of the request is about the voice; the message names the voice asked
/// for when the engine's own reason does not (a vendor answering a bare 400).
pub fn voice_error(error: ApiError, voice: &str) -> ApiError {
    match error {
        ApiError::Validation {
            mut message,
            param: None,
        } => {
            if !message.contains(voice) {
                message.push_str(&format!(" (voiceId '{voice}')"));
            }
            ApiError::Validation {
                message,
                param: Some("voiceId".into()),
            }
        }
        other => other,
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SpeakRequest {
    /// 1-10,000 characters.
    pub text: Option<String>,
    /// `wav` (default), `mp3` or `ogg`, as for POST /v1/synthesize.
    pub format: Option<String>,
    /// 0.5-2.0, default 1.0.
    pub speed: Option<f64>,
}

/// Speaks text in an agent's voice (its `voiceId` on its `ttsProvider`), streamed.
#[utoipa::path(post, path = "/v1/agents/{id}/speak", tag = "agents", request_body = SpeakRequest,
    params(("id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "The audio, streamed in the requested format", content((inline(Binary) = "audio/wav"), (inline(Binary) = "audio/mpeg"), (inline(Binary) = "audio/ogg"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/agents/{id}/speak")]
async fn speak(
    state: web::Data<AppState>,
    developer: Developer,
    http: HttpRequest,
    id: web::Path<String>,
    body: ApiJson<SpeakRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    validate::required_text("text", request.text.as_deref(), MAX_TEXT_CHARS)?;
    let format = output_format("format", request.format.as_deref().unwrap_or("wav"))?;
    let speed = request.speed.unwrap_or(1.0);
    validate::number_in("speed", speed, 0.5, 2.0)?;
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer.id().clone(),
            agent_id: id.into_inner().into(),
        })
        .await??;
    let chosen = providers::for_agent::<providers::Tts>(
        &state,
        &agent,
        Caller {
            developer_id: developer.id(),
            headers: Some(http.headers()),
            lane: Lane::Batch,
        },
    )
    .await?;
    let speech = SpeechRequest {
        speed: speed as f32,
        language: agent.forced_language().map(str::to_string),
        model: agent.tts_model,
        ..SpeechRequest::new(request.text.unwrap_or_default(), agent.voice_id)
    };
    speak_metered(&state, &developer, &chosen, speech, format).await
}
