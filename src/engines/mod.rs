//! The embedded engines: speech recognition (Whisper), the local language model (SmolLM2),
//! embeddings (MiniLM) and speech synthesis (Piper voices, eSpeak NG), all on CPU and all
//! behind the engine traits of `switchboard_actors::engine`. CPU-heavy inference runs on the
//! bounded [`pool::WorkerPool`].

pub mod pool;
pub mod whisper;
