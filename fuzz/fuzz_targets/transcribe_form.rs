#![no_main]
//! `POST /v1/transcribe` as multipart: the form reader the handler runs
//! (`http::upload::read_form`) over a body arriving in pieces, then the form's validation
//! (`http::transcribe::from_form`).
//!
//! Input: one byte for the size of the body's pieces (0: all at once), the Content-Type
//! header's value up to the first newline, then the body.

use actix_web::error::PayloadError;
use actix_web::http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use switchboard::http::transcribe::from_form;
use switchboard::http::upload::read_form;

fuzz_target!(|data: &[u8]| {
    let Some((&piece, rest)) = data.split_first() else {
        return;
    };
    let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
        return;
    };
    let (content_type, body) = (&rest[..newline], &rest[newline + 1..]);
    let Ok(value) = HeaderValue::from_bytes(content_type) else {
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, value);
    let piece = if piece == 0 {
        body.len().max(1)
    } else {
        usize::from(piece)
    };
    let pieces: Vec<Result<Bytes, PayloadError>> = body
        .chunks(piece)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let stream = futures_util::stream::iter(pieces);
    if let Ok(form) = futures_executor::block_on(read_form(&headers, stream, "file")) {
        let _ = from_form(form);
    }
});
