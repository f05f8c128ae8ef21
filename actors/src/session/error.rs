//! The session's error types: [`SessionError`] for what stops a session from starting or
//! running, and [`TurnError`] for what fails one turn while the call goes on.

use thiserror::Error;

use crate::audio::AudioError;
use crate::engine::EngineError;

/// Why a session could not start, or why it ended early.
#[derive(Debug, Error)]
pub enum SessionError {
    /// The configuration breaks a documented limit.
    #[error("invalid session configuration: {0}")]
    InvalidConfig(String),
    /// An audio stage could not be built for the configured formats.
    #[error("audio: {0}")]
    Audio(#[from] AudioError),
    /// The speech-to-text stream could not be opened (or reopened after a failure).
    #[error("speech-to-text stream unavailable: {0}")]
    SttUnavailable(EngineError),
}

impl SessionError {
    /// A stable, machine-readable code for `error` events and logs.
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::InvalidConfig(_) => "invalid_config",
            SessionError::Audio(_) => "audio",
            SessionError::SttUnavailable(_) => "stt_unavailable",
        }
    }
}

/// Why one turn failed. The session records it on the turn, tells the caller a short apology
/// and keeps listening.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum TurnError {
    /// The recognizer reported an error.
    #[error("speech-to-text failed: {0}")]
    Stt(EngineError),
    /// No transcript arrived within the configured time after the end of the utterance.
    #[error("speech-to-text gave no transcript within {0} ms")]
    SttTimeout(u64),
    /// The language model refused the request or broke its stream.
    #[error("language model failed: {0}")]
    Llm(EngineError),
    /// The language model went silent for longer than the configured time.
    #[error("language model produced nothing for {0} ms")]
    LlmTimeout(u64),
    /// The model kept asking for tools past the agent's `max_steps` rounds.
    #[error("language model still calling tools after {0} rounds")]
    ToolStepLimit(u32),
    /// Speech synthesis refused a sentence or broke its stream.
    #[error("speech synthesis failed: {0}")]
    Tts(EngineError),
    /// Speech synthesis produced nothing for longer than the configured time.
    #[error("speech synthesis produced nothing for {0} ms")]
    TtsTimeout(u64),
    /// Synthesized audio could not be converted to the transport's format.
    #[error("audio output: {0}")]
    AudioOut(String),
}

impl TurnError {
    /// A stable, machine-readable code for `error` events and turn records.
    pub fn code(&self) -> &'static str {
        match self {
            TurnError::Stt(_) => "stt_failed",
            TurnError::SttTimeout(_) => "stt_timeout",
            TurnError::Llm(_) => "llm_failed",
            TurnError::LlmTimeout(_) => "llm_timeout",
            TurnError::ToolStepLimit(_) => "tool_step_limit",
            TurnError::Tts(_) => "tts_failed",
            TurnError::TtsTimeout(_) => "tts_timeout",
            TurnError::AudioOut(_) => "audio_out",
        }
    }
}
