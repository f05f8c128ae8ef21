//! `GET /v1/recordings/{callId}`: a call's recording as `audio/wav` (two channels, caller
//! left, agent right; 8 kHz for calls, 16 kHz for direct sessions), by Twilio call SID or by
//! session id, to its owner only. Single byte ranges are served (`Range: bytes=a-b`, `a-`,
//! `-n`) with 206 and `Content-Range`; a range past the end is 416. The body is streamed from
//! the file or object store, never loaded whole.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{get, web, HttpRequest, HttpResponse};

use super::auth::Developer;
use super::body::Binary;
use super::methods;
use crate::app::AppState;
use crate::error::{current_request_id, ApiError, ErrorBody, ErrorDetail};
use crate::registry::telephony::GetRecording;
use crate::store::telephony::RecordingStatus;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(get_recording);
    methods::other_methods(cfg, &["/recordings/{callId}"]);
}

/// What a `Range` header asks for, against a body of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
enum RangeRequest {
    /// No usable Range header: the whole body (several ranges or bad syntax are ignored, as
    /// RFC 9110 allows).
    Whole,
    /// Bytes `start..end` (end exclusive).
    Part(u64, u64),
    /// Nothing of the body lies in the range.
    Unsatisfiable,
}

fn parse_range(header: Option<&str>, size: u64) -> RangeRequest {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return RangeRequest::Whole;
    };
    if spec.contains(',') {
        return RangeRequest::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeRequest::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.is_empty(), last.is_empty()) {
        // `-n`: the last n bytes.
        (true, false) => match number(last) {
            Some(0) => RangeRequest::Unsatisfiable,
            Some(_) if size == 0 => RangeRequest::Unsatisfiable,
            Some(n) => RangeRequest::Part(size.saturating_sub(n), size),
            None => RangeRequest::Whole,
        },
        // `a-`: from a to the end.
        (false, true) => match number(first) {
            Some(a) if a < size => RangeRequest::Part(a, size),
            Some(_) => RangeRequest::Unsatisfiable,
            None => RangeRequest::Whole,
        },
        (false, false) => match (number(first), number(last)) {
            (Some(a), Some(b)) if a > b => RangeRequest::Whole,
            (Some(a), Some(_)) if a >= size => RangeRequest::Unsatisfiable,
            (Some(a), Some(b)) => RangeRequest::Part(a, b.min(size - 1) + 1),
            _ => RangeRequest::Whole,
        },
        (true, true) => RangeRequest::Whole,
    }
}

/// The recording of a finished call or session.
#[utoipa::path(get, path = "/v1/recordings/{callId}", tag = "observability",
    params(("callId" = String, Path, description = "Twilio call SID, or the session id of a direct session"),
        ("Range" = Option<String>, Header, description = "One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n`")),
    responses(
        (status = 200, description = "The whole recording: two-channel 16-bit PCM WAV, caller left, agent right", body = inline(Binary), content_type = "audio/wav"),
        (status = 206, description = "The requested byte range, with Content-Range", body = inline(Binary), content_type = "audio/wav"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "No recording of this call for you"),
        (status = 409, body = ErrorBody, description = "The call is still being recorded"),
        (status = 416, body = ErrorBody, description = "The range lies past the end; Content-Range: bytes */size")),
    security(("bearer" = [])))]
#[get("/recordings/{callId}")]
async fn get_recording(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    call_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let call_id = call_id.into_inner();
    let row = state
        .telephony()
        .send(GetRecording {
            developer_id: developer.id().clone(),
            call_id: call_id.clone(),
        })
        .await??;
    if row.status == RecordingStatus::Recording {
        return Err(ApiError::Conflict(format!(
            "call '{call_id}' is still being recorded; its recording is served once it ends"
        )));
    }
    if row.status == RecordingStatus::Failed {
        return Err(ApiError::NotFound(format!(
            "the recording of call '{call_id}' failed and was not kept"
        )));
    }
    let storage = &state.recording_storage();
    let size = storage
        .size(&row.storage, &row.location)
        .await
        .map_err(|e| ApiError::Unavailable(format!("the recording cannot be read: {e}")))?;
    let range = parse_range(
        req.headers()
            .get(header::RANGE)
            .and_then(|v| v.to_str().ok()),
        size,
    );
    let (start, end, mut response) = match range {
        RangeRequest::Unsatisfiable => {
            return Ok(HttpResponse::RangeNotSatisfiable()
                .insert_header((header::CONTENT_RANGE, format!("bytes */{size}")))
                .insert_header((header::ACCEPT_RANGES, "bytes"))
                .json(ErrorBody {
                    error: ErrorDetail {
                        code: "range_not_satisfiable".into(),
                        message: format!(
                            "the recording has {size} bytes; the range lies past its end"
                        ),
                        param: None,
                        request_id: current_request_id().unwrap_or_default(),
                    },
                }));
        }
        RangeRequest::Whole => (0, size, HttpResponse::Ok()),
        RangeRequest::Part(start, end) => {
            let mut partial = HttpResponse::PartialContent();
            partial.insert_header((
                header::CONTENT_RANGE,
                format!("bytes {start}-{}/{size}", end - 1),
            ));
            (start, end, partial)
        }
    };
    let body = storage
        .read(&row.storage, &row.location, start, end)
        .await
        .map_err(|e| ApiError::Unavailable(format!("the recording cannot be read: {e}")))?;
    response
        .content_type("audio/wav")
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            HeaderValue::from_str(&format!("inline; filename=\"{}.wav\"", row.id))
                .unwrap_or(HeaderValue::from_static("inline")),
        ))
        .insert_header(("X-Recording-Duration-Ms", row.duration_ms.to_string()))
        .insert_header(("X-Recording-Sample-Rate", row.sample_rate.to_string()))
        .no_chunking(end - start);
    Ok(response.streaming(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use RangeRequest::*;
        let size = 1000;
        assert_eq!(parse_range(None, size), Whole);
        assert_eq!(parse_range(Some("bytes=0-99"), size), Part(0, 100));
        assert_eq!(parse_range(Some("bytes=900-"), size), Part(900, 1000));
        assert_eq!(parse_range(Some("bytes=-100"), size), Part(900, 1000));
        assert_eq!(parse_range(Some("bytes=-5000"), size), Part(0, 1000));
        assert_eq!(parse_range(Some("bytes=990-5000"), size), Part(990, 1000));
        assert_eq!(parse_range(Some("bytes=1000-"), size), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=1000-1001"), size), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=-0"), size), Unsatisfiable);
        for ignored in [
            "bytes=5-1",
            "bytes=a-b",
            "items=0-1",
            "bytes=0-1,5-9",
            "bytes=-",
        ] {
            assert_eq!(parse_range(Some(ignored), size), Whole, "{ignored}");
        }
    }
}
