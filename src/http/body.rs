//! `OptionalJson<T>`: a JSON body that may be left out entirely (then `T::default()`), for
//! endpoints whose every field is optional, such as `POST /v1/keys`.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::http::StatusCode;
use actix_web::{web, FromRequest, HttpRequest};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Bodies of these endpoints are small; anything larger is refused before parsing.
pub const SMALL_BODY_LIMIT: usize = 65_536;

pub struct OptionalJson<T>(pub T);

impl<T: DeserializeOwned + Default + 'static> FromRequest for OptionalJson<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let is_json = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| {
                let mime = value
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json" || mime.ends_with("+json")
            });
        let mut payload = payload.take();
        let body = async move {
            let mut bytes = web::BytesMut::new();
            while let Some(chunk) = futures_util::StreamExt::next(&mut payload).await {
                let chunk = chunk?;
                if bytes.len() + chunk.len() > SMALL_BODY_LIMIT {
                    return Err(actix_web::error::PayloadError::Overflow.into());
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok::<_, actix_web::Error>(bytes.freeze())
        };
        Box::pin(async move {
            let bytes = body.await.map_err(|err| {
                if err.as_response_error().status_code() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge(format!(
                        "request body exceeds the {SMALL_BODY_LIMIT} byte limit"
                    ))
                } else {
                    ApiError::bad_request(format!("could not read the request body: {err}"))
                }
            })?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(OptionalJson(T::default()));
            }
            if !is_json {
                return Err(ApiError::UnsupportedMediaType(
                    "request body must be JSON: send `Content-Type: application/json`".into(),
                ));
            }
            serde_json::from_slice(&bytes)
                .map(OptionalJson)
                .map_err(|err| {
                    if err.is_data() {
                        ApiError::bad_request(format!("invalid request body: {err}"))
                    } else {
                        ApiError::bad_request(format!("malformed JSON body: {err}"))
                    }
                })
        })
    }
}
