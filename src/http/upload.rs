//! Multipart form uploads: one audio file part plus small text fields, read as a stream with
//! the audio size capped (25 MB on every transcription route) so an oversized upload is
//! refused with 413 while it arrives, not after it has been buffered.

use std::collections::BTreeMap;

use actix_multipart::Multipart;
use actix_web::error::PayloadError;
use actix_web::http::header::{HeaderMap, CONTENT_TYPE};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::error::ApiError;

/// Largest audio upload on every transcription route.
pub const MAX_AUDIO_BYTES: usize = 25 * 1024 * 1024;
/// Largest text field of a form.
const MAX_FIELD_BYTES: usize = 64 * 1024;
/// Most parts a form may have.
const MAX_PARTS: usize = 64;

/// An uploaded file.
#[derive(Debug)]
pub struct UploadedFile {
    pub bytes: Vec<u8>,
    pub filename: Option<String>,
}

/// The parts of a form: text fields by name (a name may repeat, as `timestamp_granularities[]`
/// does) and the file part, if any.
#[derive(Debug, Default)]
pub struct Form {
    pub fields: BTreeMap<String, Vec<String>>,
    pub file: Option<UploadedFile>,
}

impl Form {
    /// The last value of a field.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.fields
            .get(name)
            .and_then(|values| values.last())
            .map(String::as_str)
    }

    /// Every value of a field, under its plain or `[]` name.
    pub fn all(&self, name: &str) -> Vec<&str> {
        let bracketed = format!("{name}[]");
        [name, bracketed.as_str()]
            .iter()
            .filter_map(|n| self.fields.get(*n))
            .flatten()
            .map(String::as_str)
            .collect()
    }
}

/// True when the request carries a multipart form.
pub fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

/// Reads a multipart form whose file part is named `file_field` from the request body
/// (`web::Payload` in the handlers; any byte stream in the fuzz targets).
pub async fn read_form<S>(
    headers: &HeaderMap,
    payload: S,
    file_field: &str,
) -> Result<Form, ApiError>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + 'static,
{
    let mut multipart = Multipart::new(headers, payload);
    let mut form = Form::default();
    let mut parts = 0;
    while let Some(part) = multipart.next().await {
        let mut part =
            part.map_err(|e| ApiError::bad_request(format!("malformed multipart form: {e}")))?;
        parts += 1;
        if parts > MAX_PARTS {
            return Err(ApiError::bad_request(format!(
                "the form has more than {MAX_PARTS} parts"
            )));
        }
        let name = part.name().unwrap_or_default().to_string();
        let filename = part
            .content_disposition()
            .and_then(|d| d.get_filename())
            .map(str::to_string);
        let is_file = name == file_field;
        if is_file && form.file.is_some() {
            return Err(ApiError::invalid(file_field, "send a single file"));
        }
        let limit = if is_file {
            MAX_AUDIO_BYTES
        } else {
            MAX_FIELD_BYTES
        };
        let mut bytes = Vec::new();
        while let Some(chunk) = part.next().await {
            let chunk = chunk
                .map_err(|e| ApiError::bad_request(format!("malformed multipart form: {e}")))?;
            if bytes.len() + chunk.len() > limit {
                return Err(if is_file {
                    ApiError::PayloadTooLarge(format!(
                        "the audio file exceeds the {} MB limit",
                        MAX_AUDIO_BYTES / (1024 * 1024)
                    ))
                } else {
                    ApiError::invalid(&name, format!("{name} exceeds {MAX_FIELD_BYTES} bytes"))
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        if is_file {
            form.file = Some(UploadedFile { bytes, filename });
        } else {
            let text = String::from_utf8(bytes)
                .map_err(|_| ApiError::invalid(&name, format!("{name} must be UTF-8 text")))?;
            form.fields.entry(name).or_default().push(text);
        }
    }
    Ok(form)
}
