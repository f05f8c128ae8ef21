//! What every HTTP adapter shares: the endpoint a request goes to (base URL, key, deadline),
//! sending with one safe retry, turning a vendor's error answer into an `EngineError` that
//! names the vendor (and never the key), reading a body with a deadline between chunks, and a
//! server-sent-events decoder.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::{RequestBuilder, Response, StatusCode};
use switchboard_actors::engine::{EngineError, EngineErrorKind};

/// The string at `key` of a vendor's JSON answer, trimmed (empty when there is none).
pub fn trimmed_str(value: &serde_json::Value, key: &str) -> String {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The Messages API version every Anthropic call names.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The Cartesia API version whose voice object is `{mode: "id", id}`.
pub const CARTESIA_VERSION: &str = "2025-11-04";

/// Where one adapter call goes, with the key it was resolved to.
#[derive(Clone)]
pub struct Endpoint {
    pub vendor: String,
    pub base_url: String,
    /// The vendor's second host (empty when it has none): see `catalog::Vendor`.
    pub alt_base_url: String,
    pub key: String,
    pub timeout: Duration,
    pub client: reqwest::Client,
    /// Models and voice the operator configured for this vendor.
    pub llm_model: Option<String>,
    pub stt_model: Option<String>,
    pub tts_model: Option<String>,
    pub default_voice: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is left out on purpose: endpoints end up in logs.
        f.debug_struct("Endpoint")
            .field("vendor", &self.vendor)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// `base_url` joined with `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    /// `alt_base_url` (the vendor's second host) joined with `path`; `base_url` when the
    /// vendor has none.
    pub fn alt_url(&self, path: &str) -> String {
        let base = if self.alt_base_url.is_empty() {
            &self.base_url
        } else {
            &self.alt_base_url
        };
        format!("{}{path}", base.trim_end_matches('/'))
    }

    /// `builder` with this vendor's way of presenting the key: `Authorization: Bearer`
    /// (OpenAI, Cartesia, Rime, Hugging Face), `x-api-key` (Anthropic, LMNT, Neuphonic),
    /// `x-goog-api-key` (Google), `Authorization: Token` (Deepgram), `xi-api-key`
    /// (ElevenLabs), `Ocp-Apim-Subscription-Key` (Azure), the bare key in `Authorization`
    /// (AssemblyAI), `Authorization: Basic` with Inworld's ready-made credential, PlayHT's
    /// `AUTHORIZATION` and `X-USER-ID` (its key is given as `<user id>:<secret key>`), plus
    /// the version headers the vendor requires.
    pub fn authorize(&self, builder: RequestBuilder) -> RequestBuilder {
        match self.vendor.as_str() {
            "anthropic" => builder
                .header("x-api-key", &self.key)
                .header("anthropic-version", ANTHROPIC_VERSION),
            "deepgram" => builder.header("Authorization", format!("Token {}", self.key)),
            "google" => builder.header("x-goog-api-key", &self.key),
            "elevenlabs" => builder.header("xi-api-key", &self.key),
            "lmnt" | "neuphonic" => builder.header("x-api-key", &self.key),
            "azure" => builder.header("Ocp-Apim-Subscription-Key", &self.key),
            "assemblyai" => builder.header("Authorization", &self.key),
            "inworld" => builder.header("Authorization", format!("Basic {}", self.key)),
            "playht" => {
                let (user, secret) = playht_credentials(&self.key);
                let builder = builder.header("AUTHORIZATION", secret);
                match user {
                    Some(user) => builder.header("X-USER-ID", user),
                    None => builder,
                }
            }
            "cartesia" => builder
                .bearer_auth(&self.key)
                .header("Cartesia-Version", CARTESIA_VERSION),
            // A self-hosted engine may run without a key.
            _ if self.key.is_empty() => builder,
            _ => builder.bearer_auth(&self.key),
        }
    }

    /// A POST of `body` as JSON to `path`, authorized; what adapters stream from.
    pub fn post_json(&self, path: &str, body: serde_json::Value) -> impl Fn() -> RequestBuilder {
        self.post_serialized(path, Bytes::from(body.to_string()))
    }

    /// A POST of a JSON body serialized once, authorized: every attempt sends the same bytes.
    pub fn post_serialized(&self, path: &str, body: Bytes) -> impl Fn() -> RequestBuilder {
        let endpoint = self.clone();
        let url = self.url(path);
        move || {
            endpoint
                .authorize(endpoint.client.post(&url))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone())
        }
    }

    /// The vendor's cheapest authenticated call (a GET of `path`) succeeds with this key.
    pub async fn check_key(&self, path: &str) -> Result<(), EngineError> {
        let url = self.url(path);
        self.send(|| self.authorize(self.client.get(&url)))
            .await
            .map(drop)
    }

    /// The language model to ask for: the request's (an agent's `llmModel`), else the
    /// configured one, else the adapter's.
    pub fn llm_model(&self, requested: &Option<String>, built_in: &str) -> String {
        requested
            .clone()
            .or_else(|| self.llm_model.clone())
            .unwrap_or_else(|| built_in.to_string())
    }

    /// The speech model to ask for: the request's (an agent's `ttsModel`), else the configured
    /// one, else the adapter's.
    pub fn tts_model(&self, requested: &Option<String>, built_in: &str) -> String {
        requested
            .clone()
            .or_else(|| self.tts_model.clone())
            .unwrap_or_else(|| built_in.to_string())
    }

    /// The recognition model to ask for: the configured one, else the adapter's.
    pub fn stt_model_or(&self, built_in: &str) -> String {
        self.stt_model
            .clone()
            .unwrap_or_else(|| built_in.to_string())
    }

    /// The voice to ask for: the request's, or for `default` the configured or built-in one.
    pub fn voice(&self, requested: &str, built_in: &str) -> String {
        if requested == "default" || requested.is_empty() {
            self.default_voice
                .clone()
                .unwrap_or_else(|| built_in.to_string())
        } else {
            requested.to_string()
        }
    }

    /// Every failed vendor call passes here: it is counted in the vendor-error metric.
    pub fn error(&self, kind: EngineErrorKind, message: impl std::fmt::Display) -> EngineError {
        crate::metrics::vendor_error(&self.vendor, error_kind(kind));
        EngineError::new(kind, format!("{}: {message}", self.vendor))
    }

    /// Sends a request built by `build` and answers the response once its status is a
    /// success. A refused connection, or a 429/500/502/503/529 answer, is tried once more
    /// after a short pause: nothing reached the caller yet and none of these calls changes
    /// anything at the vendor.
    pub async fn send(&self, build: impl Fn() -> RequestBuilder) -> Result<Response, EngineError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = tokio::time::timeout(self.timeout, build().send()).await;
            let retry = attempt < 2;
            match result {
                Err(_) => {
                    return Err(self.error(
                        EngineErrorKind::Timeout,
                        format!("no answer within {} ms", self.timeout.as_millis()),
                    ))
                }
                Ok(Err(err)) if err.is_connect() && retry => {}
                Ok(Err(err)) => {
                    return Err(self.error(
                        EngineErrorKind::Upstream,
                        format!("request failed: {}", describe(&err)),
                    ))
                }
                Ok(Ok(response)) if response.status().is_success() => return Ok(response),
                Ok(Ok(response)) if retry && retryable(response.status()) => {
                    let pause = retry_after(&response).unwrap_or(Duration::from_millis(250));
                    if pause > Duration::from_secs(2) {
                        return Err(self.failure(response).await);
                    }
                    tokio::time::sleep(pause).await;
                }
                Ok(Ok(response)) => return Err(self.failure(response).await),
            }
        }
    }

    /// The error for a vendor's non-success answer, with the vendor's own message.
    pub async fn failure(&self, response: Response) -> EngineError {
        let status = response.status();
        let body = tokio::time::timeout(self.timeout, response.bytes())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let detail = vendor_message(&body);
        let what = match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => "rejected the API key",
            StatusCode::TOO_MANY_REQUESTS => "is rate limiting this key",
            status if status.is_server_error() => "failed",
            _ => "refused the request",
        };
        let message = match detail {
            Some(detail) => format!("{what} (HTTP {}): {detail}", status.as_u16()),
            None => format!("{what} (HTTP {})", status.as_u16()),
        };
        // What the request asked for (an unknown voice or model, text too long) is the
        // caller's to fix: a 400 naming it, not a 502.
        let kind = match status.as_u16() {
            400 | 404 | 413 | 422 => EngineErrorKind::InvalidInput,
            _ => EngineErrorKind::Upstream,
        };
        self.error(kind, message)
    }

    /// Sends the request made by `build` (see [`send`](Self::send)) and reads its whole JSON
    /// answer (see [`read_json`](Self::read_json)).
    pub async fn fetch_json(
        &self,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<serde_json::Value, EngineError> {
        let response = self.send(build).await?;
        self.read_json(response).await
    }

    /// A whole JSON answer (at most 32 MiB), with the deadline between chunks.
    pub async fn read_json(&self, response: Response) -> Result<serde_json::Value, EngineError> {
        const MAX: usize = 32 * 1024 * 1024;
        let mut body = self.body(response);
        let mut all = Vec::new();
        while let Some(chunk) = body.next().await? {
            all.extend_from_slice(&chunk);
            if all.len() > MAX {
                return Err(self.error(EngineErrorKind::Upstream, "answered with too large a body"));
            }
        }
        serde_json::from_slice(&all).map_err(|_| {
            self.error(
                EngineErrorKind::Upstream,
                "answered with a body that is not JSON",
            )
        })
    }

    /// Reads a response body chunk by chunk, failing when the vendor goes quiet for longer
    /// than the deadline.
    pub fn body(&self, response: Response) -> BodyReader<'_> {
        BodyReader {
            endpoint: self,
            body: Box::pin(response.bytes_stream()),
        }
    }
}

/// A streaming response body with the endpoint's deadline between chunks.
pub struct BodyReader<'a> {
    endpoint: &'a Endpoint,
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<Bytes>> + Send>>,
}

impl BodyReader<'_> {
    /// The next chunk, `None` at the end of the body.
    pub async fn next(&mut self) -> Result<Option<Bytes>, EngineError> {
        let endpoint = self.endpoint;
        match tokio::time::timeout(endpoint.timeout, self.body.next()).await {
            Err(_) => Err(endpoint.error(
                EngineErrorKind::Timeout,
                format!("the stream stalled for {} ms", endpoint.timeout.as_millis()),
            )),
            Ok(None) => Ok(None),
            Ok(Some(Err(err))) => Err(endpoint.error(
                EngineErrorKind::Upstream,
                format!("the stream broke off: {}", describe(&err)),
            )),
            Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
        }
    }

    /// Reads what is left of the body and throws it away, for at most `DRAIN_DEADLINE` and
    /// `DRAIN_MAX_BYTES`, so that a connection nobody reads any more can be used again. A
    /// body that does not end within those is dropped, which closes the connection.
    pub async fn drain(mut self) {
        let rest = async {
            let mut read = 0;
            while let Some(Ok(chunk)) = self.body.next().await {
                read += chunk.len();
                if read > DRAIN_MAX_BYTES {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_DEADLINE, rest).await;
    }
}

/// How long the rest of an answer nobody reads any more is read for before its connection is
/// given up; and how much of it.
const DRAIN_DEADLINE: Duration = Duration::from_secs(2);
const DRAIN_MAX_BYTES: usize = 64 * 1024;

/// PlayHT's two credentials from one key `<user id>:<secret key>`; a key without a colon is
/// the secret alone (PlayHT then refuses it, which reaches the caller as its 401).
pub fn playht_credentials(key: &str) -> (Option<&str>, &str) {
    match key.split_once(':') {
        Some((user, secret)) if !user.is_empty() => (Some(user), secret),
        _ => (None, key),
    }
}

/// The metric label of an error kind.
fn error_kind(kind: EngineErrorKind) -> &'static str {
    match kind {
        EngineErrorKind::InvalidInput => "invalid_input",
        EngineErrorKind::Unavailable => "unavailable",
        EngineErrorKind::Overloaded => "overloaded",
        EngineErrorKind::Timeout => "timeout",
        EngineErrorKind::Upstream => "upstream",
        EngineErrorKind::Internal => "internal",
    }
}

fn retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 500 | 502 | 503 | 529)
}

fn retry_after(response: &Response) -> Option<Duration> {
    let seconds: f64 = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// A transport error without its URL's query (which some vendors put keys in).
fn describe(err: &reqwest::Error) -> String {
    let mut text = if err.is_timeout() {
        "timed out".to_string()
    } else if err.is_connect() {
        "could not connect".to_string()
    } else if err.is_body() || err.is_decode() {
        "the body could not be read".to_string()
    } else {
        "the connection failed".to_string()
    };
    if let Some(source) = std::error::Error::source(err) {
        text.push_str(&format!(" ({source})"));
    }
    text
}

/// The human message in a vendor's error body: OpenAI and Anthropic `{error: {message}}`,
/// ElevenLabs `{detail: {message}}` or `{detail: "..."}`, Deepgram `{err_msg}`, Cartesia
/// `{error: "..."}`, or short plain text. Capped so a huge page never ends up in an error.
pub fn vendor_message(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let message = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(json) => [
            "/error/message",
            "/error",
            "/detail/message",
            "/detail",
            "/err_msg",
            "/message",
        ]
        .iter()
        .find_map(|pointer| match json.pointer(pointer) {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(value @ serde_json::Value::Array(_)) if *pointer == "/detail" => {
                Some(value.to_string())
            }
            _ => None,
        })
        .unwrap_or_else(|| text.to_string()),
        Err(_) => text.to_string(),
    };
    Some(cap(&message, 300))
}

fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut capped: String = text.chars().take(max).collect();
    capped.push('…');
    capped
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name; empty when the stream has none (OpenAI).
    pub event: String,
    pub data: String,
}

/// Splits a byte stream into server-sent events (lines, `\n` or `\r\n`; a blank line ends an
/// event; `data:` lines are joined with `\n`; comments are skipped). Lines are read where they
/// lie in the buffer, and what is left of a chunk is moved to the front once per chunk, so a
/// read that holds many events costs one pass over it.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes after the last complete line.
    pending: Vec<u8>,
    event: String,
    /// The event's `data:` lines so far, joined with `\n`; `None` before its first.
    data: Option<String>,
}

impl SseDecoder {
    /// Reads the next bytes of the stream; answers the events they complete.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + offset;
            let line = String::from_utf8_lossy(&self.pending[start..end]);
            start = end + 1;
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                if self.data.is_some() || !self.event.is_empty() {
                    events.push(SseEvent {
                        event: std::mem::take(&mut self.event),
                        data: self.data.take().unwrap_or_default(),
                    });
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                "data" => match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_string()),
                },
                _ => {}
            }
        }
        self.pending.drain(..start);
        events
    }

    /// The event left when the stream ends without a final blank line.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let rest = std::mem::take(&mut self.pending);
        let mut events = self.push(&rest);
        events.extend(self.push(b"\n\n"));
        events.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut decoder = SseDecoder::default();
        let mut events = decoder.push(b"event: message_start\r\ndata: {\"a\":");
        assert!(events.is_empty());
        events.extend(decoder.push(b"1}\r\n\r\n: comment\n\ndata: x\ndata: y\n\ndata: [DONE]"));
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: "message_start".into(),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "x\ny".into()
                },
            ]
        );
        assert_eq!(
            decoder.finish(),
            Some(SseEvent {
                event: String::new(),
                data: "[DONE]".into()
            })
        );
    }

    #[test]
    fn a_read_of_many_events_yields_them_all_in_order() {
        let mut decoder = SseDecoder::default();
        let stream: String = (0..500)
            .map(|i| format!("data: {{\"n\":{i}}}\r\n\r\n"))
            .collect::<String>()
            + "event: ping\ndata:\n\ndata: tail";
        let events = decoder.push(stream.as_bytes());
        assert_eq!(events.len(), 501);
        assert!(events[..500]
            .iter()
            .enumerate()
            .all(|(i, e)| e.event.is_empty() && e.data == format!("{{\"n\":{i}}}")));
        // An empty `data:` line still makes an event; the unfinished one waits for the end.
        assert_eq!(
            events[500],
            SseEvent {
                event: "ping".into(),
                data: String::new()
            }
        );
        assert_eq!(decoder.finish().map(|e| e.data), Some("tail".to_string()));
    }

    #[test]
    fn vendor_messages_are_found_and_capped() {
        assert_eq!(
            vendor_message(br#"{"error":{"message":"Incorrect API key","type":"x"}}"#).unwrap(),
            "Incorrect API key"
        );
        assert_eq!(
            vendor_message(br#"{"detail":{"status":"quota","message":"Quota exceeded"}}"#).unwrap(),
            "Quota exceeded"
        );
        assert_eq!(
            vendor_message(br#"{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials."}"#)
                .unwrap(),
            "Invalid credentials."
        );
        assert_eq!(vendor_message(b"  "), None);
        assert!(vendor_message(&[b'x'; 1000]).unwrap().chars().count() <= 301);
    }
}
