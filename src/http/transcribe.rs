//! `/v1/transcribe`: speech to text from an uploaded file (multipart `file`) or a fetched
//! `audioUrl`, synchronously or as a polled job (`/v1/transcribe/async`,
//! `GET /v1/transcribe/{jobId}`).

use actix_web::{get, post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use switchboard_actors::engine::Transcript;
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::{is_json_type, parse_object, read_limited, unsupported_type};
use super::methods;
use super::upload::{is_multipart, read_form, Form};
use super::validate;
use crate::app::AppState;
use crate::billing::Usage;
use crate::error::{ApiError, ErrorBody};
use crate::ids::{DeveloperId, JobId};
use crate::media::check_header;
use crate::providers;
use crate::registry::jobs::{extension_of, GetJob, JobRequest, SubmitJob};
use crate::registry::meter;
use crate::speech::transcription::{transcribe_file, TranscriptionBody};
use crate::store::jobs::{JobRow, JobStatus};
use crate::time::{iso, iso_opt};

const MAX_URL_CHARS: usize = 2048;
const MODES: [&str; 2] = ["accurate", "fast"];
const TIMESTAMPS: [&str; 2] = ["segment", "word"];
const FIELDS: [&str; 6] = [
    "file",
    "audioUrl",
    "language",
    "mode",
    "diarize",
    "timestamps",
];

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(transcribe)
        .service(transcribe_async)
        .service(get_job);
    methods::other_methods(
        cfg,
        &["/transcribe", "/transcribe/async", "/transcribe/{jobId}"],
    );
}

/// The JSON form of a transcription request. Multipart forms carry the same fields as text
/// parts, plus the audio as the `file` part.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TranscribeRequest {
    /// http(s) URL of the audio (JSON requests need it; forms send `file` or this). Loopback,
    /// private and link-local addresses are refused unless the operator allows them.
    pub audio_url: Option<String>,
    /// ISO 639-1 code; empty or absent detects the language.
    pub language: Option<String>,
    /// `accurate` (default: the multilingual model with beam search) or `fast` (greedy; the
    /// English model for English).
    pub mode: Option<String>,
    /// Label speakers (`speaker_1`, ...): one per channel when the channels carry different
    /// voices (a call recording), by voice pitch for mono audio and for channels that carry
    /// the same voice. Channels with different voices are each transcribed (two voices, two
    /// recognitions) whether or not this is set; without it their segments have no speaker.
    pub diarize: Option<bool>,
    /// `segment` (default) or `word` (adds `words`).
    pub timestamps: Option<String>,
}

/// A transcription job as `GET /v1/transcribe/{jobId}` shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobBody {
    pub id: String,
    /// `processing`, `completed` or `failed`.
    pub status: String,
    /// Present when completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<TranscriptionBody>,
    /// Present when failed: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub created_at: String,
    /// Present once the job has ended (completed or failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
}

impl From<JobRow> for JobBody {
    fn from(row: JobRow) -> JobBody {
        let result = (row.status == JobStatus::Completed)
            .then(|| {
                row.result
                    .as_deref()
                    .and_then(|r| serde_json::from_str(r).ok())
            })
            .flatten();
        JobBody {
            id: row.id.into(),
            error: (row.status == JobStatus::Failed).then(|| row.error.unwrap_or_default()),
            status: row.status.to_string(),
            result,
            created_at: iso(row.created_at),
            completed_at: iso_opt(row.completed_at),
        }
    }
}

/// The 202 answer to an accepted job.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedJobBody {
    pub id: String,
    pub status: String,
    pub created_at: String,
}

/// Transcribes audio and answers when done.
#[utoipa::path(post, path = "/v1/transcribe", tag = "speech",
    request_body(content = TranscribeRequest, description = "JSON with `audioUrl`, or `multipart/form-data` with a `file` part (at most 25 MB) and the same fields as text parts"),
    responses((status = 200, body = TranscriptionBody),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 413, description = "The upload is over 25 MB", body = ErrorBody),
        (status = 415, description = "The audio format cannot be decoded", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/transcribe")]
async fn transcribe(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (request, upload) = parse_request(&req, payload).await?;
    let engine = providers::embedded(state.engines().batch.stt.clone()).engine;
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    let (audio, extension) = match upload {
        Some(bytes) => (bytes, request.extension.clone()),
        None => {
            let url = request.audio_url.as_deref().unwrap_or_default();
            let fetched = state.fetcher().fetch(url).await?;
            let extension = extension_of(fetched.url.path());
            (fetched.bytes, extension)
        }
    };
    let transcript = transcribe_file(engine, audio, extension, request.transcription())
        .await
        .map_err(|e| language_error(e.into()))?;
    charge_transcription(&state, developer.id(), &transcript);
    Ok(HttpResponse::Ok()
        .insert_header(("X-Provider-Used", "default"))
        .json(TranscriptionBody::new(transcript, request.words)))
}

/// Charges the developer for a finished transcription: the seconds of audio it read.
pub(super) fn charge_transcription(
    state: &AppState,
    developer_id: &DeveloperId,
    transcript: &Transcript,
) {
    let seconds = f64::from(transcript.duration);
    meter::charge(state.metering(), developer_id, Usage::Stt { seconds }, true);
}

/// How much of an upload is read to check its header before a job is accepted; a container
/// whose header is further in (an MP4 with its index at the end) is checked by the job.
const HEADER_PROBE_BYTES: usize = 1 << 20;

/// Accepts a transcription to run in the background; poll `GET /v1/transcribe/{jobId}`.
#[utoipa::path(post, path = "/v1/transcribe/async", tag = "speech",
    request_body(content = TranscribeRequest, description = "As for POST /v1/transcribe"),
    responses((status = 202, body = AcceptedJobBody),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 503, description = "Too many jobs pending", body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/transcribe/async")]
async fn transcribe_async(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (request, upload) = parse_request(&req, payload).await?;
    // A header no recording has is refused now rather than in the job.
    if let Some(bytes) = &upload {
        let header = bytes[..bytes.len().min(HEADER_PROBE_BYTES)].to_vec();
        let extension = request.extension.clone();
        web::block(move || check_header(&header, extension.as_deref()))
            .await
            .map_err(|_| ApiError::Internal("the upload's header could not be read".into()))??;
    }
    // Charged when the job completes.
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    let row = state
        .jobs()
        .send(SubmitJob {
            developer_id: developer.id().clone(),
            request,
            upload,
        })
        .await??;
    Ok(HttpResponse::Accepted()
        .insert_header(("Location", format!("/v1/transcribe/{}", row.id)))
        .json(AcceptedJobBody {
            id: row.id.into(),
            status: row.status.to_string(),
            created_at: iso(row.created_at),
        }))
}

/// A transcription job: `processing`, then `completed` with its result or `failed` with a
/// reason.
#[utoipa::path(get, path = "/v1/transcribe/{jobId}", tag = "speech",
    params(("jobId" = String, Path, description = "The id returned by POST /v1/transcribe/async")),
    responses((status = 200, body = JobBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/transcribe/{jobId}")]
async fn get_job(
    state: web::Data<AppState>,
    developer: Developer,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = JobId::from(path.into_inner());
    let row = state
        .jobs()
        .send(GetJob {
            developer_id: developer.id().clone(),
            id: id.clone(),
        })
        .await??
        .ok_or_else(|| ApiError::not_found("transcription job", id.as_str()))?;
    Ok(HttpResponse::Ok().json(JobBody::from(row)))
}

/// Reads and validates a JSON or multipart transcription request.
async fn parse_request(
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<(JobRequest, Option<Vec<u8>>), ApiError> {
    if is_multipart(req.headers()) {
        let form = read_form(req.headers(), payload, "file").await?;
        return from_form(form);
    }
    if !is_json_type(req) {
        return Err(unsupported_type());
    }
    let mut payload = payload.into_inner();
    let bytes = read_limited(&mut payload, super::body::SMALL_BODY_LIMIT).await?;
    let body: TranscribeRequest = parse_object(&bytes)?;
    let url = body.audio_url.as_deref().ok_or_else(|| {
        ApiError::invalid(
            "audioUrl",
            "audioUrl is required (or upload a file as multipart/form-data)",
        )
    })?;
    validate_url(url)?;
    let request = JobRequest {
        audio_url: Some(url.to_string()),
        extension: None,
        language: language(body.language.as_deref())?,
        fast: mode(body.mode.as_deref())?,
        diarize: body.diarize.unwrap_or(false),
        words: words(body.timestamps.as_deref())?,
    };
    Ok((request, None))
}

/// Validates a multipart transcription form: its fields, and either its file or its
/// `audioUrl`. Returns the job request and the uploaded bytes, if any.
pub fn from_form(mut form: Form) -> Result<(JobRequest, Option<Vec<u8>>), ApiError> {
    if let Some(unknown) = form.fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(ApiError::invalid(
            unknown,
            format!(
                "unknown field '{unknown}'; the fields are: {}",
                FIELDS.join(", ")
            ),
        ));
    }
    let diarize = match form.text("diarize") {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(_) => {
            return Err(ApiError::invalid(
                "diarize",
                "diarize must be true or false",
            ))
        }
    };
    let audio_url = form.text("audioUrl").map(str::to_string);
    let (extension, upload) = match (form.file.take(), &audio_url) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "send either a file or an audioUrl, not both",
            ))
        }
        (Some(file), None) => {
            if file.bytes.is_empty() {
                return Err(ApiError::invalid("file", "the uploaded file is empty"));
            }
            (
                file.filename.as_deref().and_then(extension_of),
                Some(file.bytes),
            )
        }
        (None, Some(url)) => {
            validate_url(url)?;
            (None, None)
        }
        (None, None) => {
            return Err(ApiError::invalid(
                "file",
                "a file part (or an audioUrl field) is required",
            ))
        }
    };
    let request = JobRequest {
        audio_url,
        extension,
        language: language(form.text("language"))?,
        fast: mode(form.text("mode"))?,
        diarize,
        words: words(form.text("timestamps"))?,
    };
    Ok((request, upload))
}

fn validate_url(url: &str) -> Result<(), ApiError> {
    validate::length("audioUrl", url, 1, MAX_URL_CHARS)?;
    match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(()),
        _ => Err(ApiError::invalid(
            "audioUrl",
            "audioUrl must be an http or https URL",
        )),
    }
}

/// Empty means detect; `en-US` style tags are reduced to their language.
fn language(value: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let primary = value
        .split(['-', '_'])
        .next()
        .unwrap_or(value)
        .to_ascii_lowercase();
    if !(2..=3).contains(&primary.len()) || !primary.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(ApiError::invalid(
            "language",
            "language must be an ISO 639-1 code such as en or de, or empty to detect it",
        ));
    }
    Ok(Some(primary))
}

fn mode(value: Option<&str>) -> Result<bool, ApiError> {
    let value = value.unwrap_or("accurate");
    validate::one_of("mode", value, &MODES)?;
    Ok(value == "fast")
}

fn words(value: Option<&str>) -> Result<bool, ApiError> {
    let value = value.unwrap_or("segment");
    validate::one_of("timestamps", value, &TIMESTAMPS)?;
    Ok(value == "word")
}

/// The engine refuses a request only for its language.
fn language_error(error: ApiError) -> ApiError {
    match error {
        ApiError::Validation {
            message,
            param: None,
        } => ApiError::Validation {
            message,
            param: Some("language".into()),
        },
        other => other,
    }
}
