//! Audio files in and out of the speech endpoints: decoding any common container and codec to
//! PCM ([`decode`], bounded and streamed through [`sink`]), sample-rate conversion of whole clips ([`resample`]) and streaming
//! encoders for the response formats ([`encode`]). The real-time path has its own
//! allocation-free frame code in `switchboard_actors::audio`.

pub mod decode;
pub mod encode;
pub mod resample;
pub mod sink;

pub use decode::{check_header, decode, decode_to, DecodedAudio, MediaError};
pub use encode::{AudioEncoder, OutputFormat};
pub use resample::{resample, StreamResampler};
pub use sink::DecodeTarget;
