//! What the live (WebSocket) recognisers share: the `ws://`/`wss://` address of a vendor's
//! streaming path, opening it with the key in a header, with the endpoint's deadline and the
//! vendor's refusal reported as an error naming the vendor (never the key), and the final
//! transcript of one utterance.

use switchboard_actors::engine::{
    EngineError, EngineErrorKind, SttEvent, TranscribeOptions, Transcript, TranscriptSegment,
    TranscriptWord,
};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::http::Endpoint;

pub type VendorSocket = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Read buffer of a live stream. A vendor's messages are transcripts of a few hundred bytes to
/// a few KB (a larger frame still gets the room it needs). The library's default, 128 KB, is
/// zero-filled before every read, so each open stream kept 128 KB resident and cleared it for
/// every transcript.
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// `http_url` with its scheme turned into the WebSocket one (`http` → `ws`, else `wss`).
pub fn ws_url(endpoint: &Endpoint, http_url: &str) -> Result<url::Url, EngineError> {
    let not_a_url = || endpoint.error(EngineErrorKind::InvalidInput, "the base URL is not a URL");
    let mut url = url::Url::parse(http_url).map_err(|_| not_a_url())?;
    let scheme = if url.scheme() == "http" { "ws" } else { "wss" };
    url.set_scheme(scheme).map_err(|_| not_a_url())?;
    Ok(url)
}

/// Opens `url` with `header: value` on the upgrade request.
pub async fn open(
    endpoint: &Endpoint,
    url: &url::Url,
    header: &'static str,
    value: &str,
) -> Result<VendorSocket, EngineError> {
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|_| endpoint.error(EngineErrorKind::InvalidInput, "the base URL is not a URL"))?;
    let value = HeaderValue::from_str(value).map_err(|_| {
        endpoint.error(
            EngineErrorKind::InvalidInput,
            "the key is not a valid header",
        )
    })?;
    request.headers_mut().insert(header, value);
    let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
    // No Nagle: audio chunks and control messages are small and must leave at once.
    let (socket, _) = tokio::time::timeout(
        endpoint.timeout,
        tokio_tungstenite::connect_async_with_config(request, Some(config), true),
    )
    .await
    .map_err(|_| {
        endpoint.error(
            EngineErrorKind::Timeout,
            "the live stream did not open in time",
        )
    })?
    .map_err(|err| match err {
        tokio_tungstenite::tungstenite::Error::Http(response) => {
            let status = response.status().as_u16();
            let what = match status {
                401 | 403 => "rejected the API key for the live stream",
                429 => "is rate limiting this key's live streams",
                _ => "refused the live stream",
            };
            endpoint.error(EngineErrorKind::Upstream, format!("{what} (HTTP {status})"))
        }
        _ => endpoint.error(EngineErrorKind::Upstream, "could not open the live stream"),
    })?;
    Ok(socket)
}

/// One utterance's settled text as a final transcript: one segment (none when nothing was
/// recognised, so the session's turn ends either way), words when they were asked for.
pub fn live_final(
    text: String,
    words: Vec<TranscriptWord>,
    duration: f32,
    options: &TranscribeOptions,
) -> SttEvent {
    SttEvent::Final(Transcript {
        segments: if text.is_empty() {
            Vec::new()
        } else {
            vec![TranscriptSegment {
                start: 0.0,
                end: duration,
                text: text.clone(),
                speaker: None,
                language: None,
            }]
        },
        words: if options.word_timestamps {
            words
        } else {
            Vec::new()
        },
        text,
        language: options.language.clone().unwrap_or_else(|| "en".to_string()),
        language_probability: None,
        duration,
    })
}
