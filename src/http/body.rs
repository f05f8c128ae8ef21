//! JSON request bodies: `ApiJson<T>` (a JSON object is required) and `OptionalJson<T>` (an
//! empty body means `T::default()`, for endpoints whose every field is optional, such as
//! `POST /v1/keys`). Both check the content type (415), the size (413), that the body is an
//! object (not an array, which serde would read by position), and name the failing field in
//! the error's `param`. `RawWebhook` is a webhook's raw body (Twilio's form, Stripe's event),
//! read up to [`WEBHOOK_BODY_LIMIT`] with the same JSON errors (413, never a bare text one).
//! [`Binary`] is how the OpenAPI document shows a file's bytes (audio answers, uploads).

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{web, FromRequest, HttpRequest};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use utoipa::ToSchema;

use crate::error::ApiError;

/// Largest body any JSON endpoint reads; set once from `server.max_json_bytes`.
#[derive(Debug, Clone, Copy)]
pub struct JsonLimit(pub usize);

/// Bodies of endpoints whose fields are all small; used when no limit is registered.
pub const SMALL_BODY_LIMIT: usize = 65_536;

/// Largest body a webhook (Twilio's or Stripe's) may send: theirs are a few KB.
pub const WEBHOOK_BODY_LIMIT: usize = 256 * 1024;

/// A required JSON object body.
pub struct ApiJson<T>(pub T);

/// A webhook's raw body, checked by its signature before it is read as anything.
pub struct RawWebhook(pub web::Bytes);

impl FromRequest for RawWebhook {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(_req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let mut payload = payload.take();
        Box::pin(async move {
            read_limited(&mut payload, WEBHOOK_BODY_LIMIT)
                .await
                .map(RawWebhook)
        })
    }
}

/// A JSON object body that may be left out.
pub struct OptionalJson<T>(pub T);

impl<T> ApiJson<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for ApiJson<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = req
            .app_data::<JsonLimit>()
            .map_or(SMALL_BODY_LIMIT, |l| l.0);
        let body = read_json(req, payload, limit);
        Box::pin(async move {
            let bytes = body.await?;
            if is_blank(&bytes) {
                return Err(ApiError::bad_request("request body must be a JSON object"));
            }
            parse_object(&bytes).map(ApiJson)
        })
    }
}

impl<T: DeserializeOwned + Default + 'static> FromRequest for OptionalJson<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let content_type_ok = is_json_type(req);
        let mut payload = payload.take();
        Box::pin(async move {
            let bytes = read_limited(&mut payload, SMALL_BODY_LIMIT).await?;
            if is_blank(&bytes) {
                return Ok(OptionalJson(T::default()));
            }
            if !content_type_ok {
                return Err(unsupported_type());
            }
            parse_object(&bytes).map(OptionalJson)
        })
    }
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

pub(crate) fn is_json_type(req: &HttpRequest) -> bool {
    req.headers()
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
        })
}

pub(crate) fn unsupported_type() -> ApiError {
    ApiError::UnsupportedMediaType(
        "request body must be JSON: send `Content-Type: application/json`".into(),
    )
}

/// Checks the content type, then reads the body up to `limit` bytes.
fn read_json(
    req: &HttpRequest,
    payload: &mut Payload,
    limit: usize,
) -> impl Future<Output = Result<web::Bytes, ApiError>> {
    let content_type_ok = is_json_type(req);
    let mut payload = payload.take();
    async move {
        if !content_type_ok {
            return Err(unsupported_type());
        }
        read_limited(&mut payload, limit).await
    }
}

pub(crate) async fn read_limited(
    payload: &mut Payload,
    limit: usize,
) -> Result<web::Bytes, ApiError> {
    let mut bytes = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|err| {
            ApiError::bad_request(format!("could not read the request body: {err}"))
        })?;
        if bytes.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge(format!(
                "request body exceeds the {limit} byte limit"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.freeze())
}

/// Deserializes a JSON object, naming the field at fault when it is the wrong type.
pub(crate) fn parse_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        if serde_json::from_slice::<serde_json::Value>(bytes).is_err() {
            return Err(ApiError::bad_request("malformed JSON body"));
        }
        return Err(ApiError::bad_request("request body must be a JSON object"));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let param = (path != "." && !path.is_empty()).then_some(path);
        let message = if inner.is_data() {
            format!("invalid request body: {inner}")
        } else {
            format!("malformed JSON body: {inner}")
        };
        ApiError::Validation { message, param }
    })?;
    deserializer
        .end()
        .map_err(|err| ApiError::bad_request(format!("malformed JSON body: {err}")))?;
    Ok(value)
}

/// The bytes of a file as the document shows them (`type: string, format: binary`): audio
/// answers and uploaded files.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
pub struct Binary(Vec<u8>);
