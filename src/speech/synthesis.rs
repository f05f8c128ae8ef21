//! Synthesis streamed in a response format: sentences come from the engine as they are ready,
//! are resampled to the format's rate, encoded, and sent on at once, so the first sentence
//! plays while the rest is synthesized. Dropping the response stream (the client went away)
//! drops the engine stream, which stops synthesis.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;
use switchboard_actors::engine::{EngineError, SpeechChunk, SpeechRequest, TextToSpeech};
use tokio::sync::mpsc;

use super::SpeechError;
use crate::media::{resample, AudioEncoder, MediaError, OutputFormat};

/// Encoded chunks waiting for a slow client before synthesis pauses.
const BUFFERED_CHUNKS: usize = 4;

/// Starts synthesis and waits for the first sentence, so a request the engine refuses (an
/// unknown voice, an unavailable model) fails with a status instead of an empty 200. Returns
/// the byte stream of the encoded audio.
pub async fn synthesize_stream(
    engine: Arc<dyn TextToSpeech>,
    request: SpeechRequest,
    format: OutputFormat,
) -> Result<impl Stream<Item = Result<Bytes, std::io::Error>> + 'static, SpeechError> {
    let mut chunks = engine.synthesize(request)?;
    let first = match chunks.recv().await {
        Some(chunk) => chunk?,
        None => {
            return Err(EngineError::internal("the voice produced no audio").into());
        }
    };
    let mut encoder = AudioEncoder::new(format)?;
    let (first_bytes, returned) = encode_chunk(encoder, first, format).await?;
    encoder = returned;

    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(BUFFERED_CHUNKS);
    tokio::spawn(async move {
        if tx.send(Ok(first_bytes)).await.is_err() {
            return;
        }
        while let Some(next) = chunks.recv().await {
            let chunk = match next {
                Ok(chunk) => chunk,
                Err(e) => {
                    tracing::warn!("synthesis failed mid-stream: {e}");
                    let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                    return;
                }
            };
            match encode_chunk(encoder, chunk, format).await {
                Ok((bytes, returned)) => {
                    encoder = returned;
                    if !bytes.is_empty() && tx.send(Ok(bytes)).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                    return;
                }
            }
        }
        match tokio::task::spawn_blocking(move || encoder.finish()).await {
            Ok(Ok(tail)) if !tail.is_empty() => {
                let _ = tx.send(Ok(Bytes::from(tail))).await;
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
            }
            Err(_) => {
                let _ = tx
                    .send(Err(std::io::Error::other("encoding failed unexpectedly")))
                    .await;
            }
        }
    });
    Ok(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// Synthesizes the whole text and returns the encoded file (used where a body must be
/// complete, such as an audio attachment).
pub async fn synthesize_all(
    engine: Arc<dyn TextToSpeech>,
    request: SpeechRequest,
    format: OutputFormat,
) -> Result<Vec<u8>, SpeechError> {
    use futures_util::StreamExt;
    let mut stream = Box::pin(synthesize_stream(engine, request, format).await?);
    let mut out = Vec::new();
    while let Some(piece) = stream.next().await {
        let piece = piece.map_err(|e| MediaError::Encode(e.to_string()))?;
        out.extend_from_slice(&piece);
    }
    Ok(out)
}

/// Resamples and encodes one chunk off the async workers; the encoder travels with the job.
async fn encode_chunk(
    mut encoder: AudioEncoder,
    chunk: SpeechChunk,
    format: OutputFormat,
) -> Result<(Bytes, AudioEncoder), SpeechError> {
    let result = tokio::task::spawn_blocking(move || {
        let samples = resample(&chunk.samples, chunk.sample_rate, format.sample_rate());
        encoder
            .push(&samples)
            .map(|bytes| (Bytes::from(bytes), encoder))
    })
    .await
    .map_err(|_| EngineError::internal("encoding failed unexpectedly"))?;
    Ok(result?)
}
