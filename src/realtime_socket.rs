//! How the real-time sockets (the Twilio media stream and the direct socket) are accepted,
//! written and ended. [`accept`] reads everything a client sent before its connection closed.
//! [`SocketWriter`] gives up on a client that takes nothing for [`WRITE_TIMEOUT`], so a socket
//! loop never waits on it for ever. [`answer`] says how the server answers a client that
//! closed the socket or broke the WebSocket protocol (RFC 6455 §5.5.1, §7.4.1): a client's
//! `Close` is echoed with its own code, a frame over the size limit is answered with 1009, a
//! text frame that is not UTF-8 with 1007, any other protocol error with 1002 and what it
//! was. A stream that just ended gets nothing: the connection is already gone.

use std::future::{ready, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::error::PayloadError;
use actix_web::{web, FromRequest, HttpRequest, HttpResponse};
use actix_ws::{
    AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Closed, ProtocolError,
    Session,
};
use bytes::Bytes;
use bytestring::ByteString;
use futures_util::{FutureExt, Stream, StreamExt};

/// What a client sent, fragmented messages put together.
pub type Incoming = Option<Result<AggregatedMessage, ProtocolError>>;

/// Largest message a client may send, fragmented or not: actix-ws's limit on one frame.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// actix-ws's error for fragments that add up to more than the limit (it has no variant).
const FRAGMENTS_TOO_LARGE: &str = "Exceeded maximum continuation size";

/// Accepts the WebSocket upgrade of `req` as [`actix_ws::handle`] does, with the end of the
/// client's connection read as the end of its stream, and fragmented messages put together
/// (RFC 6455 §5.4) up to [`MAX_MESSAGE_BYTES`].
///
/// actix-http reports a connection the client closed as an `Incomplete` payload error, and
/// actix-ws returns that error before it decodes the frames that arrived with it. So a
/// Twilio `stop` and a `Close` sent just before the client closed its connection were lost,
/// and the call was recorded as `transport_closed` instead of `hangup`. Ended here instead,
/// the stream yields those frames first.
pub fn accept(
    req: &HttpRequest,
    body: web::Payload,
) -> Result<(HttpResponse, SocketWriter, AggregatedMessageStream), actix_web::Error> {
    let until_closed: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> =
        Box::pin(body.scan((), |_, chunk| {
            ready(match chunk {
                Err(PayloadError::Incomplete(_)) => None,
                other => Some(other),
            })
        }));
    let mut payload = Payload::Stream {
        payload: until_closed,
    };
    let body = web::Payload::from_request(req, &mut payload).into_inner()?;
    let (response, session, messages) = actix_ws::handle(req, body)?;
    let messages = messages
        .aggregate_continuations()
        .max_continuation_size(MAX_MESSAGE_BYTES);
    Ok((response, SocketWriter::new(session), messages))
}

/// What the server sends back when a socket's incoming side ends with `ending`; `None` when
/// it is not an ending or nothing can be sent.
pub fn answer(ending: &Incoming) -> Option<CloseReason> {
    match ending {
        Some(Ok(AggregatedMessage::Close(reason))) => Some(CloseReason {
            code: reason.as_ref().map_or(CloseCode::Normal, |r| r.code),
            description: None,
        }),
        // actix-ws reports a text frame that is not UTF-8 as invalid data.
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
    session: Session,
    stalled: Arc<AtomicBool>,
}

impl SocketWriter {
    pub fn new(session: Session) -> Self {
        Self {
            session,
            stalled: Arc::new(AtomicBool::new(false)),
        }
    }

    pub async fn text(&mut self, text: impl Into<ByteString>) -> Result<(), Gone> {
        within(&self.stalled, self.session.text(text)).await
    }

    /// Writes `text` at once if the socket's send queue has room, without waiting and from
    /// any task: false when it has none (or the client is gone), and then nothing was sent.
    pub fn try_text(&self, text: impl Into<ByteString>) -> bool {
        if self.stalled.load(Ordering::Relaxed) {
            return false;
        }
        let mut session = self.session.clone();
        matches!(session.text(text).now_or_never(), Some(Ok(())))
    }

    pub async fn binary(&mut self, bytes: impl Into<Bytes>) -> Result<(), Gone> {
        within(&self.stalled, self.session.binary(bytes)).await
    }

    pub async fn pong(&mut self, payload: &[u8]) -> Result<(), Gone> {
        within(&self.stalled, self.session.pong(payload)).await
    }

    /// Sends `reason` as the Close frame, unless the client is gone.
    pub async fn close(self, reason: Option<CloseReason>) {
        if self.stalled.load(Ordering::Relaxed) {
            return;
        }
        let _ = within(&self.stalled, self.session.close(reason)).await;
    }
}

async fn within(
    stalled: &AtomicBool,
    write: impl Future<Output = Result<(), Closed>>,
) -> Result<(), Gone> {
    if stalled.load(Ordering::Relaxed) {
        return Err(Gone);
    }
    match tokio::time::timeout(WRITE_TIMEOUT, write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(Closed)) => Err(Gone),
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
        let closed = Some(Ok(AggregatedMessage::Close(Some(CloseCode::Away.into()))));
        assert_eq!(answer(&closed).map(|r| r.code), Some(CloseCode::Away));
        let bare = Some(Ok(AggregatedMessage::Close(None)));
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
        assert_eq!(answer(&Some(Ok(AggregatedMessage::Text("x".into())))), None);
    }
}
