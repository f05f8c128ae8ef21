//! The one error type of the audio path. Every fallible audio function returns
//! [`AudioError`], so a session can log or drop a bad frame without knowing which stage
//! rejected it.

use thiserror::Error;

/// Why an audio stage refused its input or could not be built.
#[derive(Debug, Error)]
pub enum AudioError {
    /// A frame had a different number of samples (or bytes) than the stage was built for.
    #[error("frame has {actual} units, expected {expected}")]
    FrameLength {
        /// Units (samples or bytes) the stage needs per frame.
        expected: usize,
        /// Units the caller passed.
        actual: usize,
    },
    /// The caller's output buffer cannot hold the result.
    #[error("output buffer holds {available} units, {needed} needed")]
    BufferTooSmall {
        /// Units the stage is about to write.
        needed: usize,
        /// Length of the buffer the caller passed.
        available: usize,
    },
    /// PCM16 byte input whose length is not a whole number of samples.
    #[error("PCM16 input of {0} bytes is not a whole number of samples")]
    OddByteLength(usize),
    /// A sample rate, frame duration or channel layout the stage does not support.
    #[error("unsupported audio format: {0}")]
    Unsupported(&'static str),
    /// The resampler could not be built or refused a chunk.
    #[error("resampler: {0}")]
    Resample(String),
    /// libopus rejected a call.
    #[error("opus: {0}")]
    Opus(#[from] audiopus::Error),
}

/// Checks that `actual` equals `expected`, the common precondition of every fixed-frame stage.
pub(crate) fn check_frame_len(expected: usize, actual: usize) -> Result<(), AudioError> {
    if expected == actual {
        Ok(())
    } else {
        Err(AudioError::FrameLength { expected, actual })
    }
}

/// Checks that an output buffer of `available` units can take `needed` units.
pub(crate) fn check_capacity(needed: usize, available: usize) -> Result<(), AudioError> {
    if available >= needed {
        Ok(())
    } else {
        Err(AudioError::BufferTooSmall { needed, available })
    }
}
