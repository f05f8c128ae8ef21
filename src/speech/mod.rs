//! The speech services behind the HTTP endpoints: transcription of uploaded or fetched audio
//! (decode, resample, diarize, recognise) and synthesis streamed in a response format. They
//! work on the engine traits, so embedded engines and vendor adapters serve them alike.

pub mod channels;
pub mod diarize;
pub mod languages;
pub mod synthesis;
pub mod transcription;

use switchboard_actors::engine::EngineError;

use crate::media::MediaError;

/// Why a speech request failed: the audio itself, or the engine.
#[derive(Debug, thiserror::Error)]
pub enum SpeechError {
    #[error(transparent)]
    Media(#[from] MediaError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}
