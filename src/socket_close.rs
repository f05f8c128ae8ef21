//! How the real-time sockets (the Twilio media stream and the direct socket) answer a client
//! that closed them or broke the WebSocket protocol (RFC 6455 §5.5.1, §7.4.1): a client's
//! `Close` is echoed with its own code, a frame over the size limit is answered with 1009, any
//! other protocol error with 1002 and what it was. A stream that just ended gets nothing: the
//! connection is already gone.

use actix_ws::{CloseCode, CloseReason, Message, ProtocolError};

/// What the server sends back when a socket's incoming side ends with `ending`; `None` when
/// it is not an ending or nothing can be sent.
pub fn answer(ending: &Option<Result<Message, ProtocolError>>) -> Option<CloseReason> {
    match ending {
        Some(Ok(Message::Close(reason))) => Some(CloseReason {
            code: reason.as_ref().map_or(CloseCode::Normal, |r| r.code),
            description: None,
        }),
        Some(Err(ProtocolError::Io(_))) => None,
        Some(Err(ProtocolError::Overflow)) => Some(CloseReason {
            code: CloseCode::Size,
            description: Some("a frame is larger than this socket accepts".into()),
        }),
        Some(Err(error)) => Some(CloseReason {
            code: CloseCode::Protocol,
            description: Some(error.to_string()),
        }),
        Some(Ok(_)) | None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_is_echoed_and_protocol_errors_get_their_codes() {
        let closed = Some(Ok(Message::Close(Some(CloseCode::Away.into()))));
        assert_eq!(answer(&closed).map(|r| r.code), Some(CloseCode::Away));
        let bare = Some(Ok(Message::Close(None)));
        assert_eq!(answer(&bare).map(|r| r.code), Some(CloseCode::Normal));
        let big = Some(Err(ProtocolError::Overflow));
        assert_eq!(answer(&big).map(|r| r.code), Some(CloseCode::Size));
        let bad = Some(Err(ProtocolError::BadOpCode));
        assert_eq!(answer(&bad).map(|r| r.code), Some(CloseCode::Protocol));
        let gone = Some(Err(ProtocolError::Io(
            std::io::ErrorKind::BrokenPipe.into(),
        )));
        assert_eq!(answer(&gone), None);
        assert_eq!(answer(&None), None);
        assert_eq!(answer(&Some(Ok(Message::Text("x".into())))), None);
    }
}
