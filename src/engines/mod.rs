//! The embedded engines: speech recognition (Whisper), the local language model (SmolLM2),
//! embeddings (MiniLM), speech synthesis (Piper voices, eSpeak NG) and the end-of-turn model
//! (Smart Turn), all on CPU and all
//! behind the engine traits of `switchboard_actors::engine`. CPU-heavy inference runs on the
//! bounded [`pool::WorkerPool`]. [`Engines`] holds the running set for the server.

pub mod embeddings;
pub mod llm;
pub mod pool;
pub mod tts;
pub mod turn;
pub mod whisper;

use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_actors::engine::{LanguageModel, SpeechToText, TextToSpeech, TurnEndModel};

use crate::config::Config;
use embeddings::{Embedder, MiniLmEmbedder};
use llm::LocalLlm;
use pool::Lane;
use tts::{TtsEngine, TtsOptions};
use turn::SmartTurn;
use whisper::WhisperEngine;

/// The engines a server runs with, shared by every request and session. Cheap to clone.
#[derive(Clone)]
pub struct Engines {
    pub pool: pool::WorkerPool,
    /// The engines for HTTP requests and batch work.
    pub batch: EngineSet,
    /// The same engines for live conversations.
    pub live: EngineSet,
    whisper: WhisperEngine,
    voices: TtsEngine,
    local_llm: LocalLlm,
    minilm: MiniLmEmbedder,
    turn: SmartTurn,
}

/// The embedded engines whose jobs wait in one lane of the worker pool; [`Engines::on`] picks
/// the set for a lane. Live conversations' jobs are taken ahead of HTTP requests and batch work.
#[derive(Clone)]
pub struct EngineSet {
    pub stt: Arc<dyn SpeechToText>,
    pub tts: Arc<dyn TextToSpeech>,
    pub llm: Arc<dyn LanguageModel>,
    pub embedder: Arc<dyn Embedder>,
}

impl Engines {
    /// Builds the embedded engines over the models directory; with `engines.preload` every
    /// model loads now (failures are logged and reported by `/health`), otherwise each loads
    /// on first use.
    pub fn start(config: &Config) -> Engines {
        let pool = pool::WorkerPool::with_priority(
            config.engines.worker_threads(),
            config.engines.queue,
            config.server.background_nice,
        );
        let models = &config.server.models_dir;
        let whisper = WhisperEngine::new(models, pool.clone());
        let voices = TtsEngine::with_options(
            models,
            pool.clone(),
            TtsOptions {
                intra_threads: config.engines.threads_per_job.max(1),
                loudness_dbfs: Some(config.engines.voice_level_dbfs),
                ..TtsOptions::default()
            },
        );
        let local_llm = LocalLlm::new(
            models.join(llm::MODEL_FILE),
            pool.clone(),
            llm::LlmOptions {
                prompt_cache_entries: config.engines.llm_prompt_cache,
                knowledge_history_tokens: config.engines.llm_knowledge_history,
                ..llm::LlmOptions::default()
            },
        );
        let minilm = MiniLmEmbedder::from_models_dir(models, pool.clone());
        let turn = SmartTurn::new(models, pool.clone());
        let set = |lane| EngineSet {
            stt: Arc::new(whisper.on_lane(lane)),
            tts: Arc::new(voices.on_lane(lane)),
            llm: Arc::new(local_llm.on_lane(lane)),
            embedder: Arc::new(minilm.on_lane(lane)),
        };
        let engines = Engines {
            batch: set(Lane::Batch),
            live: set(Lane::Live),
            pool,
            whisper,
            voices,
            local_llm,
            minilm,
            turn,
        };
        if config.engines.preload {
            engines.preload();
        }
        engines
    }

    /// The engines whose jobs wait in `lane`.
    pub fn on(&self, lane: Lane) -> &EngineSet {
        match lane {
            Lane::Live => &self.live,
            Lane::Batch => &self.batch,
        }
    }

    /// The embedded recogniser for HTTP requests and batch work, as its own type: for what
    /// only it does (translation into English, segments handed over as they are decoded).
    pub fn batch_whisper(&self) -> WhisperEngine {
        self.whisper.on_lane(Lane::Batch)
    }

    /// The end-of-turn model live sessions ask when their caller pauses.
    pub fn turn_model(&self) -> Arc<dyn TurnEndModel> {
        Arc::new(self.turn.clone())
    }

    /// Loads every model in the background; each failure is logged.
    fn preload(&self) {
        let engines = self.clone();
        std::thread::spawn(move || {
            if let Err(e) = engines.turn.preload() {
                tracing::warn!("end-of-turn model not loaded: {e}");
            }
            if let Err(e) = engines.whisper.preload() {
                tracing::warn!("speech recognition not loaded: {e}");
            }
            if let Err(e) = engines.voices.preload() {
                tracing::warn!("speech synthesis not loaded: {e}");
            }
        });
        let llm = self.local_llm.clone();
        let minilm = self.minilm.clone();
        actix_web::rt::spawn(async move {
            if let Err(e) = llm.preload().await {
                tracing::warn!("language model not loaded: {e}");
            }
            if let Err(e) = minilm.preload().await {
                tracing::warn!("embeddings not loaded: {e}");
            }
        });
    }

    /// Starts loading the embedded voice `voice` in the background, when a call that will
    /// speak with it has been placed: the carrier takes a second or so to open the media
    /// stream, which hides the model's load, so the greeting does not wait for it.
    pub fn warm_voice(&self, voice: &str, language: Option<&str>) {
        let voices = self.voices.clone();
        let (voice, language) = (voice.to_string(), language.map(str::to_string));
        actix_web::rt::task::spawn_blocking(move || {
            if let Err(e) = voices.warm(&voice, language.as_deref()) {
                tracing::warn!(voice = %voice, "the call's voice could not be loaded ahead: {e}");
            }
        });
    }

    /// Every voice id the embedded synthesis serves.
    pub fn voice_ids(&self) -> Vec<String> {
        self.voices.voices().into_iter().map(|v| v.id).collect()
    }

    /// Each engine's state for `/health`.
    pub fn status(&self) -> Value {
        let llm = self.local_llm.status();
        let embeddings = self.minilm.status();
        let turn = self.turn.status();
        json!({
            "stt": {"models": self.whisper.status()},
            "tts": self.voices.status(),
            "llm": {"model": llm::MODEL_NAME, "state": llm.as_str()},
            "embeddings": {"model": self.minilm.model(), "state": embeddings.as_str()},
            "turn": {"model": turn::MODEL_NAME, "state": turn.as_str()},
            "inferenceQueue": self.pool.stats(),
        })
    }
}
