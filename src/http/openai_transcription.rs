//! OpenAI's speech-to-text routes on the embedded recogniser, field for field
//! (reference/protocols.md §4.2): `POST /v1/audio/transcriptions` and
//! `POST /v1/audio/translations` (into English), multipart with a `file` of at most 25 MB,
//! answered as JSON, text, SRT, WebVTT or verbose JSON. With `stream=true` a model of the
//! `gpt-4o-transcribe` family answers server-sent `transcript.text.delta` events as the text is
//! decoded, then `transcript.text.done`; `whisper-1` ignores `stream`, as OpenAI's does. Errors
//! take OpenAI's shape (`openai_audio::reshape_error`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::{post, web, HttpRequest, HttpResponse, HttpResponseBuilder};
use futures_util::stream;
use serde_json::{json, Value};
use switchboard_actors::engine::{SpeechToText, SttMode, TranscribeOptions, Transcript};
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::auth::{Developer, PROVIDER_USED};
use super::methods;
use super::transcribe::charge_transcription;
use super::upload::{is_multipart, read_form, Form, UploadedFile};
use crate::app::AppState;
use crate::engines::whisper::{SegmentSink, Task};
use crate::error::ApiError;
use crate::registry::jobs::extension_of;
use crate::registry::meter;
use crate::speech::languages::language_name;
use crate::speech::transcription::{
    decode_file, find_voices, transcribe_file, transcribe_voices, TranscriptionRequest,
};
use crate::speech::SpeechError;
use crate::vendors::catalog::DEFAULT_PROVIDER;

/// Transcription models: `whisper-1` and the larger ones run accurate mode; the `mini` ones
/// run fast mode.
pub const TRANSCRIPTION_MODELS: [&str; 7] = [
    "whisper-1",
    "gpt-4o-transcribe",
    "gpt-4o-mini-transcribe",
    "gpt-4o-mini-transcribe-2025-12-15",
    "gpt-4o-transcribe-diarize",
    "gpt-transcribe",
    "default",
];
/// Translation models: OpenAI translates with `whisper-1` only.
pub const TRANSLATION_MODELS: [&str; 2] = ["whisper-1", "default"];
/// Response formats of both routes.
const FORMATS: [&str; 5] = ["json", "text", "srt", "verbose_json", "vtt"];

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(transcriptions).service(translations);
    methods::other_methods(cfg, &["/audio/transcriptions", "/audio/translations"]);
}

/// Whether `stream=true` streams with `model`: the `gpt-4o-transcribe` family does, and
/// `whisper-1` (and our `default`) ignore it, as OpenAI's `whisper-1` does.
fn streams(model: &str) -> bool {
    model.starts_with("gpt-")
}

/// The form of `POST /v1/audio/transcriptions`, as the document shows it (OpenAI's fields).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TranscriptionForm {
    /// The audio file, at most 25 MB.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// `whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe`,
    /// `gpt-4o-mini-transcribe-2025-12-15`, `gpt-4o-transcribe-diarize`, `gpt-transcribe` or
    /// `default`; the `mini` ones run the fast mode.
    model: String,
    /// The spoken language (ISO 639-1); detected when absent.
    language: Option<String>,
    /// Text that the audio continues (names, spelling).
    prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `verbose_json` or `vtt`.
    response_format: Option<String>,
    /// 0 to 1, default 0.
    temperature: Option<f64>,
    /// `word` and/or `segment`; needs `verbose_json`.
    #[schema(rename = "timestamp_granularities[]")]
    timestamp_granularities: Option<Vec<String>>,
    /// `true` streams with the gpt-4o-transcribe family (a text/event-stream) and is ignored
    /// for `whisper-1`.
    stream: Option<bool>,
}

/// The form of `POST /v1/audio/translations`, as the document shows it (OpenAI's fields).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TranslationForm {
    /// The audio file, at most 25 MB.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// `whisper-1` or `default`.
    model: String,
    /// Text, in English, that the audio continues.
    prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `verbose_json` or `vtt`.
    response_format: Option<String>,
    /// 0 to 1, default 0.
    temperature: Option<f64>,
}

/// What both routes read from their form.
struct AudioForm {
    file: UploadedFile,
    model: String,
    format: String,
    prompt: Option<String>,
    temperature: f32,
    /// The rest of the form.
    form: Form,
}

/// Reads and checks the fields both routes share; `models` are the ones the route serves.
async fn read_audio_form(
    req: &HttpRequest,
    payload: web::Payload,
    models: &[&str],
    kind: &str,
) -> Result<AudioForm, ApiError> {
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
        .ok_or_else(|| ApiError::invalid("model", "you must provide a model parameter"))?
        .to_string();
    if !models.contains(&model.as_str()) {
        return Err(ApiError::invalid(
            "model",
            format!(
                "model '{model}' is not a {kind} model; use one of: {}",
                models.join(", ")
            ),
        ));
    }
    let format = form.text("response_format").unwrap_or("json").to_string();
    if !FORMATS.contains(&format.as_str()) {
        return Err(ApiError::invalid(
            "response_format",
            format!("response_format '{format}' is not supported; use json, text, srt, verbose_json or vtt"),
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
    Ok(AudioForm {
        file,
        model,
        format,
        prompt: form.text("prompt").map(str::to_string),
        temperature,
        form,
    })
}

/// `true` or `false` (any case), absent is false.
fn flag(form: &Form, name: &str) -> Result<bool, ApiError> {
    match form.text(name) {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(ApiError::invalid(
            name,
            format!("{name} must be true or false"),
        )),
    }
}

/// Engine and decoding errors as OpenAI names their fields.
fn openai_param(error: SpeechError) -> ApiError {
    match ApiError::from(error) {
        ApiError::Validation {
            message,
            param: None,
        } => ApiError::invalid("language", message),
        ApiError::UnsupportedMediaType(message) => ApiError::invalid("file", message),
        other => other,
    }
}

/// Transcription as OpenAI's `POST /v1/audio/transcriptions` (multipart, `file` at most
/// 25 MB). `response_format` json (default), text, srt, verbose_json or vtt;
/// `timestamp_granularities[]` word and/or segment with verbose_json; `stream=true` with a
/// `gpt-4o-transcribe` family model answers server-sent events.
#[utoipa::path(post, path = "/v1/audio/transcriptions", tag = "openai-compatible",
    request_body(content = TranscriptionForm, content_type = "multipart/form-data"),
    responses((status = 200, description = "JSON, verbose JSON, text, SRT or WebVTT; with stream=true and a gpt-4o-transcribe family model a text/event-stream of transcript.text.delta events ({type, delta}) as the text is decoded, then transcript.text.done ({type, text, usage})",
            content(("application/json"), ("text/plain"), ("text/vtt"), ("text/event-stream"))),
        (status = 400, description = "OpenAI error body"), (status = 413, description = "Over 25 MB")),
    security(("bearer" = [])))]
#[post("/audio/transcriptions")]
async fn transcriptions(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let audio = read_audio_form(&req, payload, &TRANSCRIPTION_MODELS, "transcription").await?;
    let form = &audio.form;
    let mode = if audio.model.contains("mini") {
        SttMode::Fast
    } else {
        SttMode::Accurate
    };
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
    if !granularities.is_empty() && audio.format != "verbose_json" {
        return Err(ApiError::invalid(
            "timestamp_granularities",
            "timestamp_granularities requires response_format verbose_json",
        ));
    }
    let stream = flag(form, "stream")? && streams(&audio.model);
    if stream && !["json", "text"].contains(&audio.format.as_str()) {
        return Err(ApiError::invalid(
            "response_format",
            "a streamed transcription answers events of text: use response_format json or text",
        ));
    }
    let language = form
        .text("language")
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.to_ascii_lowercase());
    let options = TranscribeOptions {
        language,
        mode,
        word_timestamps: words,
        prompt: audio.prompt.clone(),
        temperature: audio.temperature,
        live_turn: false,
        ..TranscribeOptions::default()
    };
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    if stream {
        return stream_transcription(state, developer, audio.file, options).await;
    }
    let granularities: Vec<String> = granularities.iter().map(|g| g.to_string()).collect();
    let engine = state.engines().batch.stt.clone();
    let transcript = recognise(&state, &developer, engine, audio.file, options).await?;
    let language = language_name(&transcript.language).to_string();
    Ok(answer(
        &audio.format,
        &transcript,
        Verbose {
            task: "transcribe",
            language,
            words,
            granularities: &granularities,
        },
    ))
}

/// Translation into English as OpenAI's `POST /v1/audio/translations` (multipart, `file` at
/// most 25 MB, `model` whisper-1). `response_format` json (default), text, srt, verbose_json
/// or vtt.
#[utoipa::path(post, path = "/v1/audio/translations", tag = "openai-compatible",
    request_body(content = TranslationForm, content_type = "multipart/form-data"),
    responses((status = 200, description = "The English text: {text} (json), verbose JSON ({task: translate, language: english, duration, text, segments}), text, SRT or WebVTT",
            content(("application/json"), ("text/plain"), ("text/vtt"))),
        (status = 400, description = "OpenAI error body"), (status = 413, description = "Over 25 MB")),
    security(("bearer" = [])))]
#[post("/audio/translations")]
async fn translations(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let audio = read_audio_form(&req, payload, &TRANSLATION_MODELS, "translation").await?;
    let options = TranscribeOptions {
        // The multilingual model with beam search: the English-only model cannot translate.
        mode: SttMode::Accurate,
        prompt: audio.prompt.clone(),
        temperature: audio.temperature,
        live_turn: false,
        ..TranscribeOptions::default()
    };
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    let engine: Arc<dyn SpeechToText> = Arc::new(
        state
            .engines()
            .batch_whisper()
            .with_task(Task::Translate, None),
    );
    let transcript = recognise(&state, &developer, engine, audio.file, options).await?;
    Ok(answer(
        &audio.format,
        &transcript,
        Verbose {
            task: "translate",
            language: "english".to_string(),
            words: false,
            granularities: &[],
        },
    ))
}

/// Recognises an uploaded file on `engine` and charges for it.
async fn recognise(
    state: &AppState,
    developer: &Developer,
    engine: Arc<dyn SpeechToText>,
    file: UploadedFile,
    options: TranscribeOptions,
) -> Result<Transcript, ApiError> {
    let extension = file.filename.as_deref().and_then(extension_of);
    let request = TranscriptionRequest {
        options,
        diarize: false,
    };
    let transcript = transcribe_file(engine, file.bytes, extension, request)
        .await
        .map_err(openai_param)?;
    charge_transcription(state, developer.id(), &transcript);
    Ok(transcript)
}

/// How a verbose JSON answer describes itself.
struct Verbose<'a> {
    /// `transcribe` or `translate`.
    task: &'static str,
    /// The language's English name, as OpenAI writes it.
    language: String,
    words: bool,
    granularities: &'a [String],
}

fn provider_named(mut response: HttpResponseBuilder) -> HttpResponseBuilder {
    response.insert_header((PROVIDER_USED, DEFAULT_PROVIDER));
    response
}

/// The transcript in `format`.
fn answer(format: &str, transcript: &Transcript, verbose: Verbose<'_>) -> HttpResponse {
    let mut response = provider_named(HttpResponse::Ok());
    match format {
        "text" => response
            .content_type("text/plain; charset=utf-8")
            .body(format!("{}\n", transcript.text.trim())),
        "srt" => response
            .content_type("text/plain; charset=utf-8")
            .body(subtitles(transcript, false)),
        "vtt" => response
            .content_type("text/vtt; charset=utf-8")
            .body(subtitles(transcript, true)),
        "verbose_json" => response.json(verbose_json(transcript, &verbose)),
        _ => response.json(json!({
            "text": transcript.text.trim(),
            "usage": usage(transcript),
        })),
    }
}

fn usage(transcript: &Transcript) -> Value {
    json!({"type": "duration", "seconds": transcript.duration.ceil() as u64})
}

fn verbose_json(transcript: &Transcript, verbose: &Verbose<'_>) -> Value {
    let granularities = verbose.granularities;
    let segments = granularities.is_empty() || granularities.iter().any(|g| g == "segment");
    let mut body = json!({
        "task": verbose.task,
        "language": verbose.language,
        "duration": round(transcript.duration),
        "text": transcript.text.trim(),
        "usage": usage(transcript),
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
    if verbose.words {
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

/// The recognition a streamed answer waits for, charged when it succeeds.
type Recognition = Pin<Box<dyn Future<Output = Result<Transcript, ApiError>>>>;

/// One server-sent event.
fn event(data: Value) -> Result<web::Bytes, Infallible> {
    Ok(web::Bytes::from(format!("data: {data}\n\n")))
}

/// Answers `transcript.text.delta` events as the recogniser decodes each segment, then
/// `transcript.text.done` with the whole text (or an `error` event, which the SDK raises).
/// A recording whose channels carry different voices is recognised voice by voice and its
/// text, merged utterance by utterance, is known only at the end: it arrives as one delta
/// just before `transcript.text.done`. The file is decoded first, so audio that is none still
/// answers its HTTP error; a client that hangs up drops the recognition, which stops at its
/// next 30 s window.
async fn stream_transcription(
    state: web::Data<AppState>,
    developer: Developer,
    file: UploadedFile,
    options: TranscribeOptions,
) -> Result<HttpResponse, ApiError> {
    let extension = file.filename.as_deref().and_then(extension_of);
    let decoded = decode_file(file.bytes, extension)
        .await
        .map_err(openai_param)?;
    let voices = find_voices(decoded)
        .await
        .map_err(|e| openai_param(e.into()))?;
    let one_voice = voices.count() == 1;
    let (deltas, received) = mpsc::unbounded_channel::<String>();
    let sink: Option<SegmentSink> = one_voice.then(|| {
        let sink: SegmentSink = Arc::new(move |text: &str| {
            // The receiver is gone only when the client is: nothing to tell.
            let _ = deltas.send(text.to_string());
        });
        sink
    });
    let engine: Arc<dyn SpeechToText> = Arc::new(
        state
            .engines()
            .batch_whisper()
            .with_task(Task::Transcribe, sink),
    );
    let request = TranscriptionRequest {
        options,
        diarize: false,
    };
    let developer_id = developer.id().clone();
    let recognition: Recognition = Box::pin(async move {
        let transcript = transcribe_voices(engine, voices, request)
            .await
            .map_err(openai_param)?;
        charge_transcription(&state, &developer_id, &transcript);
        Ok::<_, ApiError>(transcript)
    });
    let events = stream::unfold(
        Streaming::Running(received, recognition),
        move |state| async move {
            match state {
                Streaming::Running(mut received, mut recognition) => {
                    tokio::select! {
                        // Every segment's delta before the end: the recogniser hands a segment
                        // over before it answers.
                        biased;
                        Some(delta) = received.recv() => {
                            Some((delta_event(&delta), Streaming::Running(received, recognition)))
                        }
                        result = &mut recognition => {
                            let mut last = std::collections::VecDeque::new();
                            while let Ok(delta) = received.try_recv() {
                                last.push_back(delta_event(&delta));
                            }
                            last.extend(end_events(result, one_voice));
                            let first = last.pop_front()?;
                            Some((first, Streaming::Ending(last)))
                        }
                    }
                }
                Streaming::Ending(mut last) => {
                    let next = last.pop_front()?;
                    Some((next, Streaming::Ending(last)))
                }
            }
        },
    );
    Ok(provider_named(HttpResponse::Ok())
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .streaming(events))
}

/// Where a streamed transcription is: recognising, or sending its last events.
enum Streaming {
    Running(mpsc::UnboundedReceiver<String>, Recognition),
    Ending(std::collections::VecDeque<Result<web::Bytes, Infallible>>),
}

fn delta_event(delta: &str) -> Result<web::Bytes, Infallible> {
    event(json!({"type": "transcript.text.delta", "delta": delta}))
}

/// The events that end a stream: with several voices the merged text as one delta, then
/// `transcript.text.done`; or the `error` event.
fn end_events(
    result: Result<Transcript, ApiError>,
    one_voice: bool,
) -> Vec<Result<web::Bytes, Infallible>> {
    match result {
        Ok(transcript) => {
            let text = transcript.text.trim();
            let mut events = Vec::new();
            if !one_voice && !text.is_empty() {
                events.push(delta_event(text));
            }
            events.push(event(json!({
                "type": "transcript.text.done",
                "text": text,
                "usage": usage(&transcript),
            })));
            events
        }
        Err(error) => vec![event(json!({
            "type": "error",
            "error": {
                "message": error.to_string(),
                "type": "server_error",
                "param": null,
                "code": error.code(),
            },
        }))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtitle_timestamps_follow_each_format() {
        assert_eq!(timestamp(3723.456, false), "01:02:03,456");
        assert_eq!(timestamp(0.5, true), "00:00:00.500");
    }

    #[test]
    fn only_the_gpt_4o_family_streams() {
        assert!(streams("gpt-4o-transcribe") && streams("gpt-4o-mini-transcribe"));
        assert!(!streams("whisper-1") && !streams("default"));
    }
}
