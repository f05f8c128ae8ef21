//! How the real-time sockets (the Twilio media stream and the direct socket) are accepted,
//! read, written and ended. [`accept`] checks a WebSocket handshake and makes the socket that
//! takes the connection over once the `101` is written ([`upgraded`]): the session reads the
//! client's messages ([`Messages`]) straight from it, and what the server sends goes straight
//! onto it ([`SocketWriter`]). The writer gives up on a client that takes nothing for
//! [`WRITE_TIMEOUT`], so a socket loop never waits on it for ever. [`answer`] says how the
//! server answers a client that closed the socket or broke the WebSocket protocol (RFC 6455
//! §5.5.1, §7.4.1): a client's `Close` is echoed with its own code, a frame over the size
//! limit is answered with 1009, a text frame that is not UTF-8 with 1007, any other protocol
//! error with 1002 and what it was (a frame with a reserved bit set among them), a frame left
//! unfinished or a client silent past its limits ([`SocketLimits`]) with 1008. A stream that
//! just ended gets nothing: the connection is already gone.

pub mod caller_side;
pub mod upgraded;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_http::ws::Message;
pub use actix_http::ws::{CloseCode, CloseReason, ProtocolError};
use actix_http::HttpMessage;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use bytestring::ByteString;

use upgraded::Takeover;

/// A message from the client, its fragments (RFC 6455 §5.4) put together.
#[derive(Debug, PartialEq, Eq)]
pub enum ClientMessage {
    Text(ByteString),
    Binary(Bytes),
    Ping(Bytes),
    Pong(Bytes),
    Close(Option<CloseReason>),
}

/// What a client sent: a message, a protocol error, or (`None`) the end of its connection.
pub type Incoming = Option<Result<ClientMessage, ProtocolError>>;

/// The client's messages, read from its connection (see [`upgraded::Reader`]).
pub type Messages = upgraded::Reader;

/// Largest message a client may send, fragmented or not, and largest frame.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The error for fragments that add up to more than the limit (the codec has no variant for
/// it); the same text as actix-ws's.
const FRAGMENTS_TOO_LARGE: &str = "Exceeded maximum continuation size";

/// Accepts the WebSocket upgrade of `req`: the `101` to answer with, and the socket that takes
/// the connection once the HTTP layer has written it ([`crate::http::upgrade`]). A request
/// that is not a valid handshake is refused (400, with actix-http's reason).
/// The socket's reader follows `limits` ([`SocketLimits`] as registered in the app's data, or
/// its defaults).
pub fn accept(
    req: &HttpRequest,
    limits: SocketLimits,
) -> Result<(HttpResponse, SocketWriter, Messages), actix_web::Error> {
    let response = actix_http::ws::handshake(req.head())?.finish();
    let takeover = req.extensions().get::<Takeover>().cloned().ok_or_else(|| {
        actix_web::error::ErrorInternalServerError(
            "this connection cannot be taken over for a WebSocket",
        )
    })?;
    let (reader, writer, handoff, in_use) = upgraded::socket(limits);
    takeover.leave(handoff, in_use);
    Ok((
        HttpResponse::from(response.map_into_boxed_body()),
        SocketWriter::new(writer),
        reader,
    ))
}

/// How a socket's reader bounds what a client may hold on the server: the largest message, how
/// long a frame may take to arrive whole, and how long a client may send nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketLimits {
    /// Largest message (and frame); a frame declaring more is refused from its header.
    pub max_message: usize,
    /// Longest a frame may take from its first byte to its last.
    pub frame_timeout: Duration,
    /// Longest the client may send no text or binary message; `None` = no limit.
    pub idle_timeout: Option<Duration>,
}

impl SocketLimits {
    /// The limits `[server]` sets; the idle timeout is the direct socket's.
    pub fn from_config(server: &crate::config::ServerConfig) -> SocketLimits {
        SocketLimits {
            max_message: MAX_MESSAGE_BYTES,
            frame_timeout: Duration::from_secs(server.websocket_frame_timeout_seconds.max(1)),
            idle_timeout: (server.direct_idle_timeout_seconds > 0)
                .then(|| Duration::from_secs(server.direct_idle_timeout_seconds)),
        }
    }
}

impl Default for SocketLimits {
    fn default() -> Self {
        Self {
            max_message: MAX_MESSAGE_BYTES,
            frame_timeout: Duration::from_secs(10),
            idle_timeout: None,
        }
    }
}

impl SocketLimits {
    /// The limits registered in the app's data (`server::run` sets them from `[sockets]`), or
    /// the defaults.
    pub fn of(req: &HttpRequest) -> Self {
        req.app_data::<SocketLimits>().copied().unwrap_or_default()
    }
}

/// Why the reader refused a client: what the codec has no variant for. Carried as the source
/// of a [`ProtocolError::Io`], so that [`answer`] can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// RSV1-3 set without an extension that defines them (none is negotiated here).
    #[error("a frame has a reserved bit set")]
    ReservedBits,
    /// A frame was not whole within [`SocketLimits::frame_timeout`].
    #[error("a frame did not arrive whole within {} s", .0.as_secs_f32())]
    FrameTimedOut(Duration),
    /// No text or binary message within [`SocketLimits::idle_timeout`].
    #[error("no audio or message from the client for {} s", .0.as_secs_f32())]
    Idle(Duration),
}

impl Refusal {
    /// As a reader's error.
    pub fn error(self) -> ProtocolError {
        let kind = match self {
            Refusal::ReservedBits => std::io::ErrorKind::InvalidInput,
            Refusal::FrameTimedOut(_) | Refusal::Idle(_) => std::io::ErrorKind::TimedOut,
        };
        ProtocolError::Io(std::io::Error::new(kind, self))
    }

    /// The refusal `error` carries, if it is one.
    fn of(error: &ProtocolError) -> Option<Refusal> {
        match error {
            ProtocolError::Io(e) => e.get_ref()?.downcast_ref::<Refusal>().copied(),
            _ => None,
        }
    }
}

/// What the server sends back when a socket's incoming side ends with `ending`; `None` when
/// it is not an ending or nothing can be sent.
pub fn answer(ending: &Incoming) -> Option<CloseReason> {
    match ending {
        Some(Ok(ClientMessage::Close(reason))) => Some(CloseReason {
            code: reason.as_ref().map_or(CloseCode::Normal, |r| r.code),
            description: None,
        }),
        Some(Err(error)) if Refusal::of(error).is_some() => {
            let refusal = Refusal::of(error)?;
            let code = match refusal {
                Refusal::ReservedBits => CloseCode::Protocol,
                Refusal::FrameTimedOut(_) | Refusal::Idle(_) => CloseCode::Policy,
            };
            Some(CloseReason {
                code,
                description: Some(refusal.to_string()),
            })
        }
        // The reader reports a text frame that is not UTF-8 as invalid data.
        Some(Err(ProtocolError::Io(e))) if e.kind() == std::io::ErrorKind::InvalidData => {
            Some(CloseReason {
                code: CloseCode::Invalid,
                description: Some("a text frame is not UTF-8".into()),
            })
        }
        Some(Err(ProtocolError::Overflow)) => Some(too_large()),
        Some(Err(ProtocolError::Io(e))) if e.to_string() == FRAGMENTS_TOO_LARGE => {
            Some(too_large())
        }
        Some(Err(ProtocolError::Io(_))) => None,
        Some(Err(error)) => Some(CloseReason {
            code: CloseCode::Protocol,
            description: Some(error.to_string()),
        }),
        Some(Ok(_)) | None => None,
    }
}

/// Longest a write waits for the client to take what was sent before it. A client reading
/// in real time never waits more than a moment: the socket's buffers hold seconds of audio.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The client is gone: its socket closed, or it took nothing for [`WRITE_TIMEOUT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// The sending half of a real-time socket. A client that stops reading but keeps its
/// connection open would otherwise hold the socket loop on a write for ever, and with it the
/// session's recording, its place on the node and the socket; past [`WRITE_TIMEOUT`] the write
/// fails as if the socket had closed, and so does every later one, at once.
#[derive(Clone)]
pub struct SocketWriter {
    writer: upgraded::Writer,
    stalled: Arc<AtomicBool>,
}

impl SocketWriter {
    fn new(writer: upgraded::Writer) -> Self {
        Self {
            writer,
            stalled: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Sends `message`, waiting (up to [`WRITE_TIMEOUT`]) until the connection has taken it.
    async fn send(&mut self, message: Message) -> Result<(), Gone> {
        let writer = &self.writer;
        within(&self.stalled, async move {
            writer.send(message).await.map_err(|_| Gone)
        })
        .await
    }

    pub async fn text(&mut self, text: impl Into<ByteString>) -> Result<(), Gone> {
        self.send(Message::Text(text.into())).await
    }

    /// Writes `text` at once, without waiting and from any task: false when the client is
    /// gone. What the connection does not take at once goes out ahead of the next write, or
    /// with [`flush`](Self::flush).
    pub fn try_text(&self, text: impl Into<ByteString>) -> bool {
        !self.stalled.load(Ordering::Relaxed) && self.writer.send_now(Message::Text(text.into()))
    }

    /// Waits until everything written has left, [`try_text`](Self::try_text)'s too.
    pub async fn flush(&mut self) -> Result<(), Gone> {
        let writer = &self.writer;
        within(&self.stalled, async move {
            writer.flush().await.map_err(|_| Gone)
        })
        .await
    }

    pub async fn binary(&mut self, bytes: impl Into<Bytes>) -> Result<(), Gone> {
        self.send(Message::Binary(bytes.into())).await
    }

    pub async fn pong(&mut self, payload: &[u8]) -> Result<(), Gone> {
        self.send(Message::Pong(Bytes::copy_from_slice(payload)))
            .await
    }

    /// Sends `reason` as the Close frame, unless the client is gone.
    pub async fn close(mut self, reason: Option<CloseReason>) {
        if self.stalled.load(Ordering::Relaxed) {
            return;
        }
        let _ = self.send(Message::Close(reason)).await;
    }
}

async fn within(
    stalled: &AtomicBool,
    write: impl Future<Output = Result<(), Gone>>,
) -> Result<(), Gone> {
    if stalled.load(Ordering::Relaxed) {
        return Err(Gone);
    }
    match tokio::time::timeout(WRITE_TIMEOUT, write).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!(
                "a real-time socket's client took nothing for {} s: it is treated as gone",
                WRITE_TIMEOUT.as_secs()
            );
            stalled.store(true, Ordering::Relaxed);
            Err(Gone)
        }
    }
}

fn too_large() -> CloseReason {
    CloseReason {
        code: CloseCode::Size,
        description: Some("a message is larger than this socket accepts".into()),
    }
}

/// Answers the end of `socket`'s incoming side as [`answer`] says. A protocol error is logged
/// at warn as `socket`'s `name`'s; a connection that failed under it only at debug, since
/// callers vanish all the time.
pub async fn close_after(socket: SocketWriter, ending: &Incoming, name: &str) {
    let reason = answer(ending);
    if let Some(Err(e)) = ending {
        if reason.is_some() {
            tracing::warn!("{name}: closed on a protocol error: {e}");
        } else {
            tracing::debug!("{name}: the connection failed: {e}");
        }
    }
    if let Some(reason) = reason {
        socket.close(Some(reason)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_is_echoed_and_protocol_errors_get_their_codes() {
        let closed = Some(Ok(ClientMessage::Close(Some(CloseCode::Away.into()))));
        assert_eq!(answer(&closed).map(|r| r.code), Some(CloseCode::Away));
        let bare = Some(Ok(ClientMessage::Close(None)));
        assert_eq!(answer(&bare).map(|r| r.code), Some(CloseCode::Normal));
        let big = Some(Err(ProtocolError::Overflow));
        assert_eq!(answer(&big).map(|r| r.code), Some(CloseCode::Size));
        let bad = Some(Err(ProtocolError::BadOpCode));
        assert_eq!(answer(&bad).map(|r| r.code), Some(CloseCode::Protocol));
        let gone = Some(Err(ProtocolError::Io(
            std::io::ErrorKind::BrokenPipe.into(),
        )));
        assert_eq!(answer(&gone), None);
        let garbled = Some(Err(ProtocolError::Io(
            std::io::ErrorKind::InvalidData.into(),
        )));
        assert_eq!(answer(&garbled).map(|r| r.code), Some(CloseCode::Invalid));
        let fragments = Some(Err(ProtocolError::Io(std::io::Error::other(
            FRAGMENTS_TOO_LARGE,
        ))));
        assert_eq!(answer(&fragments).map(|r| r.code), Some(CloseCode::Size));
        assert_eq!(answer(&None), None);
        assert_eq!(answer(&Some(Ok(ClientMessage::Text("x".into())))), None);
        let reserved = Some(Err(Refusal::ReservedBits.error()));
        assert_eq!(answer(&reserved).map(|r| r.code), Some(CloseCode::Protocol));
        let slow = Some(Err(Refusal::FrameTimedOut(Duration::from_secs(1)).error()));
        assert_eq!(answer(&slow).map(|r| r.code), Some(CloseCode::Policy));
        let idle = Some(Err(Refusal::Idle(Duration::from_secs(1)).error()));
        assert_eq!(answer(&idle).map(|r| r.code), Some(CloseCode::Policy));
    }
}
