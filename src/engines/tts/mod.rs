//! Speech synthesis: Piper neural voices (VITS models on ONNX Runtime) and eSpeak NG voices,
//! behind the `TextToSpeech` trait.
//!
//! - [`engine`]: the engine ([`TtsEngine`]): voice resolution and the `default` fallback,
//!   sentence-by-sentence streaming on the worker pool, status for /health.
//! - [`catalog`]: which voices exist (the models directory's Piper voices, eSpeak's voices).
//! - [`piper`]: a Piper voice's configuration and its ONNX Runtime session.
//! - [`phonemes`]: text to Piper phoneme ids (eSpeak IPA with punctuation, id mapping).
//! - [`espeak`]: the safe wrapper over libespeak-ng, the only `unsafe` code here.
//! - [`runtime`]: loading the ONNX Runtime library once per process.
//! - [`text`]: splitting text into sentences and clauses.
//! - [`pitch`]: duration-preserving pitch shifting for the neural voices.

pub mod catalog;
pub mod engine;
pub mod espeak;
pub mod loudness;
pub mod phonemes;
pub mod piper;
pub mod pitch;
pub mod runtime;
pub mod text;

pub use catalog::{VoiceInfo, VoiceKind, DEFAULT_NEURAL_VOICE, DEFAULT_VOICE};
pub use engine::{
    ComponentStatus, Readiness, ServedVoice, Synthesis, TtsEngine, TtsOptions, TtsStatus,
};
