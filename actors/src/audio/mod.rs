//! The real-time audio path: the G.711 mu-law codec, PCM framing and conversion, and
//! streaming resampling.
//!
//! Everything here works on caller-provided or preallocated buffers: building a stage
//! allocates, processing a frame does not.

pub mod error;
pub mod mulaw;
pub mod pcm;
pub mod resample;

pub use error::AudioError;
pub use pcm::{frame_bytes, frame_samples, FrameBuffer, FrameDuration, SampleRate};
pub use resample::StreamResampler;
