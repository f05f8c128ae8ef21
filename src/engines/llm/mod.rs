//! The embedded language model: SmolLM2-135M-Instruct from a GGUF file, on CPU with candle.
//!
//! - [`model`]: GGUF loading, Q8_0 requantisation, the llama forward pass and the KV cache.
//! - [`tokenizer`]: the byte-level BPE tokenizer rebuilt from the GGUF, UTF-8 safe streaming.
//! - [`template`]: SmolLM2's ChatML template and the tool prompt.
//! - [`sampling`]: greedy, temperature and top-p sampling with a repetition penalty.
//! - [`cache`]: the prompt cache (KV caches reused by longest common token prefix).
//! - [`tools`]: parsing `<tool_call>` elements out of the generated text.
//! - [`engine`]: [`LocalLlm`], the `LanguageModel` implementation running on the worker pool.

pub mod cache;
pub mod engine;
pub mod model;
pub mod sampling;
pub mod template;
pub mod tokenizer;
pub mod tools;

use std::path::PathBuf;

pub use engine::{
    LlmCounters, LlmOptions, LocalLlm, DEFAULT_KNOWLEDGE_HISTORY_TOKENS, MODEL_FILE, MODEL_NAME,
};

/// Whether an embedded model can serve requests, as /health reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelStatus {
    /// Loaded and serving.
    Ready,
    /// Installed; loads on the first request.
    NotLoaded,
    /// A model file is not installed (`scripts/fetch-models` installs it).
    Missing(PathBuf),
    /// Loading failed; the message says why.
    Failed(String),
}

impl ModelStatus {
    /// `ready`, `not_loaded`, `missing` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::NotLoaded => "not_loaded",
            Self::Missing(_) => "missing",
            Self::Failed(_) => "failed",
        }
    }
}

#[cfg(test)]
mod tests;
