//! The real-time audio path: the G.711 mu-law codec and PCM framing and conversion.
//!
//! Everything here works on caller-provided or preallocated buffers: building a stage
//! allocates, processing a frame does not.

pub mod error;
pub mod mulaw;
pub mod pcm;

pub use error::AudioError;
pub use pcm::{frame_bytes, frame_samples, FrameBuffer, FrameDuration, SampleRate};
