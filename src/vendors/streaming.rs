//! Running a vendor's language-model stream: sends the request, feeds the server-sent events
//! to the adapter's protocol state, and forwards what it yields to the caller as it arrives.
//! The caller dropping its receiver (a barge-in) drops the HTTP response at once, which
//! closes the connection to the vendor.

use switchboard_actors::engine::{EngineError, EngineStream, LlmEvent};
use tokio::sync::mpsc;

use super::http::{Endpoint, SseDecoder, SseEvent};

/// What one server-sent event means to a protocol.
pub enum Step {
    /// Events to forward; the stream goes on.
    More(Vec<LlmEvent>),
    /// Events to forward; the answer is complete.
    Finished(Vec<LlmEvent>),
}

/// A vendor's streaming chat protocol, fed one event at a time.
pub trait ChatProtocol: Send + 'static {
    fn on_event(&mut self, event: SseEvent) -> Result<Step, EngineError>;

    /// The stream ended without the protocol's own end marker.
    fn on_eof(&mut self) -> Result<Vec<LlmEvent>, EngineError>;
}

/// Starts the request made by `build` and streams the answer through `protocol`.
pub fn spawn_chat_stream<P: ChatProtocol>(
    endpoint: Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder + Send + Sync + 'static,
    protocol: P,
) -> EngineStream<LlmEvent> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let watcher = tx.clone();
        tokio::select! {
            _ = watcher.closed() => {}
            result = run(&endpoint, build, protocol, &tx) => {
                if let Err(err) = result {
                    let _ = tx.send(Err(err)).await;
                }
            }
        }
    });
    rx
}

async fn run<P: ChatProtocol>(
    endpoint: &Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder,
    mut protocol: P,
    tx: &mpsc::Sender<Result<LlmEvent, EngineError>>,
) -> Result<(), EngineError> {
    let response = endpoint.send(build).await?;
    let mut body = endpoint.body(response);
    let mut decoder = SseDecoder::default();
    loop {
        let events = match body.next().await? {
            Some(chunk) => decoder.push(&chunk),
            None => {
                let mut tail = Vec::new();
                if let Some(event) = decoder.finish() {
                    match protocol.on_event(event)? {
                        Step::More(events) => tail.extend(events),
                        Step::Finished(events) => {
                            forward(tx, events).await;
                            return Ok(());
                        }
                    }
                }
                tail.extend(protocol.on_eof()?);
                forward(tx, tail).await;
                return Ok(());
            }
        };
        for event in events {
            match protocol.on_event(event)? {
                Step::More(events) => {
                    if !forward(tx, events).await {
                        return Ok(());
                    }
                }
                Step::Finished(events) => {
                    forward(tx, events).await;
                    return Ok(());
                }
            }
        }
    }
}

async fn forward(tx: &mpsc::Sender<Result<LlmEvent, EngineError>>, events: Vec<LlmEvent>) -> bool {
    for event in events {
        if tx.send(Ok(event)).await.is_err() {
            return false;
        }
    }
    true
}
