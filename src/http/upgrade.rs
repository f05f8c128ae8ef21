//! Requests to upgrade their connection (`Connection: Upgrade`, the WebSocket handshakes): the
//! HTTP layer hands them, with their connection, to [`serve`] instead of its dispatcher. Each is
//! served by the application like any other request (routing, authentication, limits and the
//! handler's own checks), with a [`Takeover`] in its extensions. When the handler accepted a
//! real-time socket on it ([`crate::transports::socket::accept`]), the `101` is written and the
//! connection is handed to that socket, which reads and writes it itself from then on; the
//! connection counts as open on its worker until the socket is done with it. Any other answer
//! is written whole and the connection closed after it, as a client that asked to upgrade
//! does not reuse it.

use std::rc::Rc;

use actix_codec::Framed;
use actix_http::body::{self, BodySize, MessageBody};
use actix_http::{h1, ConnectionType, HttpMessage, Request, Response, StatusCode};
use actix_service::Service;
use actix_web::dev::ServiceResponse;
use futures_util::SinkExt;
use tokio::net::TcpStream;

use crate::transports::socket::upgraded::Takeover;

/// An upgrade request as the HTTP layer gives it: the request and its connection.
pub type Upgrade = (Request, Framed<TcpStream, h1::Codec>);

/// Serves an upgrade request with `app` (see the module docs). An error is the connection's:
/// it is closed.
pub async fn serve<S, B>(app: Rc<S>, (req, mut framed): Upgrade) -> Result<(), actix_web::Error>
where
    S: Service<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + 'static,
{
    let takeover = Takeover::default();
    req.extensions_mut().insert(takeover.clone());
    let response: Response<body::BoxBody> = match app.call(req).await {
        Ok(served) => served.into_parts().1.map_into_boxed_body().into(),
        Err(error) => error.error_response().map_into_boxed_body().into(),
    };
    let socket = takeover.take();
    match socket {
        Some((handoff, in_use)) if response.status() == StatusCode::SWITCHING_PROTOCOLS => {
            framed
                .send(h1::Message::Item((response.drop_body(), BodySize::None)))
                .await?;
            let parts = framed.into_parts();
            handoff.connect(parts.io, parts.read_buf);
            in_use.ended().await;
            Ok(())
        }
        // The socket (if the handler made one) is dropped here: it never starts.
        _ => Ok(write_whole(&mut framed, response).await?),
    }
}

/// Writes `response` and its body, asking the client to close the connection after it.
async fn write_whole(
    framed: &mut Framed<TcpStream, h1::Codec>,
    response: Response<body::BoxBody>,
) -> Result<(), std::io::Error> {
    let (mut head, body) = response.into_parts();
    let bytes = body::to_bytes(body)
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    head.head_mut().set_connection_type(ConnectionType::Close);
    let size = BodySize::Sized(bytes.len() as u64);
    // Head and body leave together: a client reading the refusal of its handshake may read
    // only what arrived with the head.
    framed.feed(h1::Message::Item((head, size))).await?;
    if !bytes.is_empty() {
        framed.feed(h1::Message::Chunk(Some(bytes))).await?;
    }
    framed.feed(h1::Message::Chunk(None)).await?;
    framed.flush().await
}
