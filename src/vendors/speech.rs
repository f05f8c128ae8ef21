//! Running a vendor's speech stream: sends the request and turns the raw audio bytes into
//! speech chunks as they arrive. Dropping the receiver closes the connection to the vendor.

use switchboard_actors::engine::{EngineError, EngineStream, SpeechChunk};
use tokio::sync::mpsc;

use super::audio::RawAudioChunker;
use super::http::Endpoint;

pub fn spawn_raw_speech(
    endpoint: Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder + Send + Sync + 'static,
    chunker: RawAudioChunker,
) -> EngineStream<SpeechChunk> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let watcher = tx.clone();
        tokio::select! {
            _ = watcher.closed() => {}
            result = run(&endpoint, build, chunker, &tx) => {
                if let Err(err) = result {
                    let _ = tx.send(Err(err)).await;
                }
            }
        }
    });
    rx
}

async fn run(
    endpoint: &Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder,
    mut chunker: RawAudioChunker,
    tx: &mpsc::Sender<Result<SpeechChunk, EngineError>>,
) -> Result<(), EngineError> {
    let response = endpoint.send(build).await?;
    let mut body = endpoint.body(response);
    let mut sent_any = false;
    while let Some(bytes) = body.next().await? {
        if let Some(chunk) = chunker.push(&bytes) {
            sent_any = true;
            if tx.send(Ok(chunk)).await.is_err() {
                return Ok(());
            }
        }
    }
    match chunker.finish() {
        Some(chunk) => {
            let _ = tx.send(Ok(chunk)).await;
            Ok(())
        }
        None if sent_any => Ok(()),
        None => Err(endpoint.error(
            switchboard_actors::engine::EngineErrorKind::Upstream,
            "answered with no audio",
        )),
    }
}
