//! The real-time audio path: codecs (G.711 mu-law, Opus), PCM framing and conversion,
//! streaming resampling, and voice activity detection.
//!
//! Everything here works on caller-provided or preallocated buffers: building a stage
//! allocates, processing a frame does not.

pub mod error;
pub mod mulaw;
pub mod opus;
pub mod pcm;
pub mod resample;
pub mod vad;

pub use error::AudioError;
pub use opus::{OpusDecoder, OpusEncoder};
pub use pcm::{frame_bytes, frame_samples, FrameBuffer, FrameDuration, SampleRate};
pub use resample::StreamResampler;
pub use vad::{
    SpeechEvent, SpeechTracker, SpeechTrackerConfig, VadDecision, VoiceActivityDetector,
};
