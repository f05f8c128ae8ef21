//! Provider ids by kind. `default` is always the embedded engine; the others are the
//! lowercase, hyphenated ids of real vendors (the spec's tts-vendor-N and llm-vendor-N).

/// Speech synthesis: `default` plus twelve vendors.
pub const TTS_PROVIDERS: &[&str] = &[
    "default",
    "elevenlabs",
    "cartesia",
    "deepgram",
    "openai",
    "playht",
    "rime",
    "lmnt",
    "azure",
    "google",
    "huggingface",
    "kokoro",
    "neuphonic",
];

/// Speech recognition.
pub const STT_PROVIDERS: &[&str] = &[
    "default",
    "openai",
    "deepgram",
    "assemblyai",
    "elevenlabs",
    "groq",
    "azure",
];

/// Language models.
pub const LLM_PROVIDERS: &[&str] = &["default", "openai", "anthropic", "google", "groq"];

pub const DEFAULT_PROVIDER: &str = "default";
