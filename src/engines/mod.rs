//! The embedded engines: speech recognition (Whisper), the local language model (SmolLM2),
//! embeddings (MiniLM) and speech synthesis (Piper voices, eSpeak NG), all on CPU and all
//! behind the engine traits of `switchboard_actors::engine`. CPU-heavy inference runs on the
//! bounded [`pool::WorkerPool`].

pub mod embeddings;
pub mod llm;
pub mod pool;

use std::sync::Arc;

use switchboard_actors::engine::{SpeechToText, TextToSpeech};

/// The engines a server runs with, shared by every request and session.
#[derive(Clone)]
pub struct Engines {
    pub pool: pool::WorkerPool,
    pub stt: Arc<dyn SpeechToText>,
    pub tts: Arc<dyn TextToSpeech>,
}
