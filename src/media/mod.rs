//! Audio files in and out of the speech endpoints: decoding any common container and codec to
//! PCM ([`decode`], bounded and streamed through [`sink`], into [`pcm`]), sample-rate conversion of whole clips ([`resample`]) and streaming
//! encoders for the response formats ([`encode`]). The real-time path has its own
//! allocation-free frame code in `switchboard_actors::audio`.

pub mod decode;
pub mod encode;
pub mod pcm;
pub mod resample;
pub mod sink;

pub use decode::{check_header, decode, decode_to};
pub use encode::{AudioEncoder, OutputFormat};
pub use pcm::{DecodedAudio, MediaError};
pub use resample::{resample, StreamResampler};
pub use sink::DecodeTarget;
