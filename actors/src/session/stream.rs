//! Adapting engine streams (`tokio::sync::mpsc` receivers) to actix streams. The receiver
//! moves into the stream, so when the actor stops or cancels the stream, the receiver is
//! dropped and the engine learns that nobody listens any more.

use futures_util::stream::{self, Stream};
use tokio::sync::mpsc;

/// A stream of everything `rx` yields, ending when the sender side closes.
pub fn receiver_stream<T: 'static>(rx: mpsc::Receiver<T>) -> impl Stream<Item = T> {
    stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
}
