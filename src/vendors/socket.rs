//! What the live (WebSocket) recognisers share: the `ws://`/`wss://` address of a vendor's
//! streaming path, opening it with the key in a header, with the endpoint's deadline and the
//! vendor's refusal reported as an error naming the vendor (never the key), the loop that
//! carries audio out and messages in for a vendor's [`LiveProtocol`], and the final
//! transcript of one utterance.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use switchboard_actors::engine::{
    EngineError, EngineErrorKind, EngineStream, SttEvent, SttInput, TranscribeOptions, Transcript,
    TranscriptSegment, TranscriptWord,
};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::http::Endpoint;

/// An open live stream to a vendor.
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

/// After the session ends an utterance, how long to wait for the vendor's answer to it before
/// reporting what is settled.
const FINISH_WAIT: Duration = Duration::from_millis(1500);

/// A vendor's live recognition protocol: what goes out for the caller's audio and the
/// session's end of utterance, and what its messages mean.
pub trait LiveProtocol: Send + 'static {
    /// How often to send which keep-alive message while no audio goes out (`None`: the vendor
    /// needs none).
    fn keepalive(&self) -> Option<(Duration, Message)>;

    /// The bytes to send now for these samples, if any (a vendor may want larger pieces).
    fn audio(&mut self, samples: &[i16]) -> Option<Vec<u8>>;

    /// The frames that ask the vendor to end the utterance now, in order.
    fn end_utterance(&mut self) -> Vec<Message>;

    /// The message that ends the stream when the session is done with it.
    fn terminate(&self) -> Message;

    /// The events one JSON text message yields, or the vendor's reported error.
    fn on_text(
        &mut self,
        json: &Value,
        text: &str,
        options: &TranscribeOptions,
    ) -> Result<Vec<SttEvent>, String>;

    /// What is settled, as one final transcript, when the vendor did not answer the end of
    /// the utterance in time; and a fresh start.
    fn timed_out(&mut self, options: &TranscribeOptions) -> SttEvent;

    /// What follows `closed the live stream` in the error for the vendor's close frame.
    fn closed(frame: Option<CloseFrame>) -> String;
}

/// What opens a live stream: the address (or why there is none) and the header with the key.
pub struct LiveRequest {
    pub url: Result<url::Url, EngineError>,
    pub header: &'static str,
    pub value: String,
}

/// Starts a live recognition: opens `request` and runs `protocol` over it in the background.
/// Failures, the opening's included, end the event stream with an error.
pub fn spawn_live<P: LiveProtocol>(
    endpoint: Endpoint,
    options: TranscribeOptions,
    request: LiveRequest,
    protocol: P,
) -> (mpsc::Sender<SttInput>, EngineStream<SttEvent>) {
    let (input_tx, input_rx) = mpsc::channel::<SttInput>(256);
    let (event_tx, event_rx) = mpsc::channel(32);
    tokio::spawn(async move {
        let run = live(&endpoint, &options, request, protocol, input_rx, &event_tx);
        if let Err(err) = run.await {
            let _ = event_tx.send(Err(err)).await;
        }
    });
    (input_tx, event_rx)
}

/// Opens the stream and carries audio out and events in until either side is done.
async fn live<P: LiveProtocol>(
    endpoint: &Endpoint,
    options: &TranscribeOptions,
    request: LiveRequest,
    mut protocol: P,
    mut input: mpsc::Receiver<SttInput>,
    events: &mpsc::Sender<Result<SttEvent, EngineError>>,
) -> Result<(), EngineError> {
    let socket = open(endpoint, &request.url?, request.header, &request.value).await?;
    let (mut sink, mut stream) = socket.split();
    let mut keepalive = match protocol.keepalive() {
        Some((every, message)) => {
            let mut interval = tokio::time::interval(every);
            interval.tick().await;
            Some((interval, message))
        }
        None => None,
    };
    // After the end of an utterance was asked for, when to stop waiting for its answer.
    let mut finish_deadline: Option<tokio::time::Instant> = None;
    let broke_off = || endpoint.error(EngineErrorKind::Upstream, "the live stream broke off");
    loop {
        let deadline = finish_deadline;
        tokio::select! {
            item = input.recv() => match item {
                Some(SttInput::Audio(samples)) => {
                    if let Some(bytes) = protocol.audio(&samples) {
                        sink.send(Message::binary(bytes)).await.map_err(|_| broke_off())?;
                        if let Some((interval, _)) = keepalive.as_mut() {
                            interval.reset();
                        }
                    }
                }
                // A live recognizer hears the pause itself.
                Some(SttInput::Paused | SttInput::Resumed) => {}
                Some(SttInput::EndOfUtterance) => {
                    for message in protocol.end_utterance() {
                        sink.send(message).await.map_err(|_| broke_off())?;
                    }
                    finish_deadline = Some(tokio::time::Instant::now() + FINISH_WAIT);
                }
                None => {
                    let _ = sink.send(protocol.terminate()).await;
                    return Ok(());
                }
            },
            message = tick(&mut keepalive), if keepalive.is_some() => {
                sink.send(message).await.map_err(|_| broke_off())?;
            }
            _ = async { tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)).await }, if deadline.is_some() => {
                finish_deadline = None;
                let last = protocol.timed_out(options);
                if events.send(Ok(last)).await.is_err() {
                    return Ok(());
                }
            }
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    let Ok(json) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                    let yielded = protocol
                        .on_text(&json, text.as_str(), options)
                        .map_err(|message| endpoint.error(EngineErrorKind::Upstream, message))?;
                    for event in yielded {
                        if matches!(event, SttEvent::Final(_)) {
                            finish_deadline = None;
                        }
                        if events.send(Ok(event)).await.is_err() {
                            return Ok(());
                        }
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    let detail = P::closed(frame);
                    return Err(endpoint.error(EngineErrorKind::Upstream, format!("closed the live stream{detail}")));
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return Err(broke_off()),
            },
            _ = events.closed() => return Ok(()),
        }
    }
}

/// The keep-alive message, when its interval next ticks (never without one).
async fn tick(keepalive: &mut Option<(tokio::time::Interval, Message)>) -> Message {
    match keepalive {
        Some((interval, message)) => {
            interval.tick().await;
            message.clone()
        }
        None => std::future::pending().await,
    }
}

/// A control message of a live stream: `{"type": kind}` as JSON text.
pub fn control(kind: &str) -> Message {
    Message::text(serde_json::json!({ "type": kind }).to_string())
}

/// Little-endian bytes of 16-bit samples, as the live recognisers take them.
pub fn pcm16_bytes(samples: &[i16]) -> impl Iterator<Item = u8> + '_ {
    samples.iter().flat_map(|s| s.to_le_bytes())
}

/// A partial transcript: the utterance's settled pieces, then the open hypothesis (none when
/// the hypothesis is empty).
pub fn partial(settled: &[String], hypothesis: String) -> Vec<SttEvent> {
    if hypothesis.is_empty() {
        return Vec::new();
    }
    let mut partial = settled.join(" ");
    if !partial.is_empty() {
        partial.push(' ');
    }
    partial.push_str(&hypothesis);
    vec![SttEvent::Partial(partial)]
}
