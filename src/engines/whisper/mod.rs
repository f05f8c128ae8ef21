//! Embedded speech recognition: OpenAI's Whisper on CPU with candle, loading CTranslate2
//! (`model.bin`) weights.
//!
//! - [`ct2`]: the CTranslate2 model reader and the mapping onto candle's tensor names;
//! - [`mel`]: the log-mel front end;
//! - [`model`]: the encoder and the cached, batched decoder;
//! - [`skinny`]: a decoder step's products of a few rows with a weight read in place;
//! - [`vocab`]: the tokenizer and special tokens;
//! - [`decode`]: greedy and beam search under Whisper's timestamp rules;
//! - [`language`]: spoken-language detection;
//! - [`timestamps`]: segments from timestamp tokens, word timestamps by attention alignment;
//! - [`engine`]: [`WhisperEngine`], the `SpeechToText` implementation, and [`WhisperTask`] for
//!   translation into English and segments handed over as they are decoded;
//! - [`audio`]: decoding audio files to 16 kHz mono for the command line and tests.

pub mod audio;
pub mod ct2;
pub mod decode;
pub mod engine;
pub mod language;
pub mod mel;
pub mod model;
mod skinny;
pub mod timestamps;
mod vector_math;
pub mod vocab;

#[cfg(test)]
mod tests;

pub use engine::{
    ModelState, ModelStatus, SegmentSink, Task, WhisperEngine, WhisperTask, ENGLISH_MODEL,
    MULTILINGUAL_MODEL,
};

/// The speech fixtures the tests use (`shared/` beside the repository).
#[cfg(test)]
pub(crate) const FIXTURES_DIR: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/audio");
