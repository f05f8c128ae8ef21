//! Text embeddings: all-MiniLM-L6-v2 (sentence-transformers) on CPU with candle, behind the
//! [`Embedder`] trait the knowledge search uses.
//!
//! The pipeline matches sentence-transformers: WordPiece tokenization truncated at 256 word
//! pieces (the model's `max_seq_length`), the 6-layer BERT encoder, mean pooling over the
//! attention mask and L2 normalisation, giving 384-dimensional unit vectors whose dot product
//! is the cosine similarity.
//!
//! Texts are sorted by length and cut into batches bounded by a token budget; within a batch
//! the [`encoder`] packs texts without padding. Results are returned in the caller's order.
//! All inference runs on the worker pool.

pub mod encoder;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;

use encoder::Encoder;
use switchboard_actors::engine::{EngineError, EngineFuture};
use tokenizers::{Tokenizer, TruncationParams};

use super::llm::ModelStatus;
use super::pool::{Lane, WorkerPool};

/// The model folder of the default embedder, relative to the models directory.
pub const MINILM_DIR: &str = "all-minilm-l6-v2";

/// The model name reported for the default embedder.
pub const MINILM_MODEL: &str = "all-minilm-l6-v2";

/// Width of MiniLM-L6 vectors.
pub const MINILM_DIMENSIONS: usize = 384;

/// Word pieces per text the model reads (sentence-transformers' `max_seq_length`); longer
/// texts are truncated.
pub const MAX_TOKENS: usize = 256;

/// Tokens per forward pass: large enough to keep the matrix kernels busy, small enough that
/// the activations stay moderate (about 25 MB for the widest layer).
const BATCH_TOKENS: usize = 4096;

/// Texts embedded into vectors for semantic search.
pub trait Embedder: Send + Sync + 'static {
    /// One unit-length vector of [`Embedder::dimensions`] values per text, in order.
    fn embed(&self, texts: Vec<String>) -> EngineFuture<Vec<Vec<f32>>>;

    /// Width of the vectors.
    fn dimensions(&self) -> usize;

    /// Tokens the model reads for `text`, as usage accounting reports them.
    fn count_tokens(&self, text: &str) -> usize;

    /// The model name stored beside vectors, so that vectors of different models never mix.
    fn model(&self) -> &str;
}

struct Loaded {
    model: Encoder,
    tokenizer: Arc<Tokenizer>,
}

/// all-MiniLM-L6-v2 on the worker pool. Cheap to clone; clones share the model.
#[derive(Clone)]
pub struct MiniLmEmbedder {
    shared: Arc<Shared>,
    /// The pool lane this handle's embeddings wait in.
    pool: WorkerPool,
}

struct Shared {
    dir: PathBuf,
    tokenizer: OnceLock<Result<Arc<Tokenizer>, EngineError>>,
    model: Mutex<Option<Result<Arc<Loaded>, EngineError>>>,
    loading: Mutex<()>,
}

fn internal(context: &str) -> impl Fn(candle_core::Error) -> EngineError + '_ {
    move |err| EngineError::internal(format!("{context}: {err}"))
}

impl MiniLmEmbedder {
    /// An embedder over the sentence-transformers folder `dir` (holding `model.safetensors`,
    /// `config.json` and `tokenizer.json`), running on `pool`. Nothing is read until first use
    /// or [`MiniLmEmbedder::preload`].
    pub fn new(dir: impl Into<PathBuf>, pool: WorkerPool) -> Self {
        Self {
            pool,
            shared: Arc::new(Shared {
                dir: dir.into(),
                tokenizer: OnceLock::new(),
                model: Mutex::new(None),
                loading: Mutex::new(()),
            }),
        }
    }

    /// The default model ([`MINILM_DIR`]) under `models_dir`.
    pub fn from_models_dir(models_dir: impl AsRef<Path>, pool: WorkerPool) -> Self {
        Self::new(models_dir.as_ref().join(MINILM_DIR), pool)
    }

    /// Whether the model is loaded, not loaded yet, missing or failed to load (for /health).
    pub fn status(&self) -> ModelStatus {
        match &*self.shared.lock_model() {
            Some(Ok(_)) => ModelStatus::Ready,
            Some(Err(err)) => ModelStatus::Failed(err.message.clone()),
            None => match self.shared.missing_file() {
                Some(path) => ModelStatus::Missing(path),
                None => ModelStatus::NotLoaded,
            },
        }
    }

    /// Loads the model now (on the pool) instead of on first use.
    pub async fn preload(&self) -> Result<(), EngineError> {
        let shared = Arc::clone(&self.shared);
        self.pool.run(move || shared.load().map(|_| ())).await
    }

    /// The same model, its embeddings waiting in `lane` of the worker pool.
    pub fn on_lane(&self, lane: Lane) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            pool: self.pool.lane(lane),
        }
    }

    /// Embeds on the calling thread. Blocking: for the pool, benchmarks and tools.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EngineError> {
        let loaded = self.shared.load()?;
        embed_batches(&loaded, texts)
    }
}

impl Shared {
    fn lock_model(&self) -> std::sync::MutexGuard<'_, Option<Result<Arc<Loaded>, EngineError>>> {
        self.model.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn missing_file(&self) -> Option<PathBuf> {
        ["model.safetensors", "config.json", "tokenizer.json"]
            .iter()
            .map(|name| self.dir.join(name))
            .find(|path| !path.is_file())
    }

    fn missing(&self, path: &Path) -> EngineError {
        EngineError::unavailable(format!(
            "the embedding model is not installed ({} is missing); run scripts/fetch-models",
            path.display()
        ))
    }

    fn tokenizer(&self) -> Result<Arc<Tokenizer>, EngineError> {
        self.tokenizer
            .get_or_init(|| {
                let path = self.dir.join("tokenizer.json");
                if !path.is_file() {
                    return Err(self.missing(&path));
                }
                let mut tokenizer = Tokenizer::from_file(&path).map_err(|err| {
                    EngineError::internal(format!("reading {}: {err}", path.display()))
                })?;
                // The file pads and truncates to 128 for training; the model reads up to 256
                // and batches are padded here, to the longest text of each batch.
                tokenizer.with_padding(None);
                tokenizer
                    .with_truncation(Some(TruncationParams {
                        max_length: MAX_TOKENS,
                        ..TruncationParams::default()
                    }))
                    .map_err(|err| EngineError::internal(format!("tokenizer truncation: {err}")))?;
                Ok(Arc::new(tokenizer))
            })
            .clone()
    }

    /// The loaded model, loading it first if needed. Blocking: call on the pool.
    fn load(&self) -> Result<Arc<Loaded>, EngineError> {
        if let Some(Ok(loaded)) = &*self.lock_model() {
            return Ok(Arc::clone(loaded));
        }
        let _guard = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(Ok(loaded)) = &*self.lock_model() {
            return Ok(Arc::clone(loaded));
        }
        if let Some(path) = self.missing_file() {
            return Err(self.missing(&path));
        }
        let result = self.read_model().map(Arc::new);
        if let Err(err) = &result {
            tracing::error!(dir = %self.dir.display(), error = %err, "loading the embedding model failed");
        }
        *self.lock_model() = Some(result.clone());
        result
    }

    fn read_model(&self) -> Result<Loaded, EngineError> {
        let tokenizer = self.tokenizer()?;
        let config_path = self.dir.join("config.json");
        let config_text = std::fs::read_to_string(&config_path).map_err(|err| {
            EngineError::internal(format!("reading {}: {err}", config_path.display()))
        })?;
        let config: Config = serde_json::from_str(&config_text).map_err(|err| {
            EngineError::internal(format!("parsing {}: {err}", config_path.display()))
        })?;
        let weights_path = self.dir.join("model.safetensors");
        let weights = std::fs::read(&weights_path).map_err(|err| {
            EngineError::internal(format!("reading {}: {err}", weights_path.display()))
        })?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(internal("reading the embedding weights"))?;
        let model = Encoder::load(vb, &config).map_err(internal("building the BERT encoder"))?;
        Ok(Loaded { model, tokenizer })
    }
}

/// Embeds `texts` in length-sorted batches; vectors come back in the order of `texts`.
fn embed_batches(loaded: &Loaded, texts: &[String]) -> Result<Vec<Vec<f32>>, EngineError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let encodings = loaded
        .tokenizer
        .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
        .map_err(|err| EngineError::internal(format!("tokenizing for embeddings: {err}")))?;
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| encodings[i].get_ids().len());

    let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
    let mut start = 0;
    while start < order.len() {
        // Grow the batch while its tokens fit the budget (one text always fits).
        let mut end = start + 1;
        let mut tokens = encodings[order[start]].get_ids().len();
        while end < order.len() {
            tokens += encodings[order[end]].get_ids().len();
            if tokens > BATCH_TOKENS {
                break;
            }
            end += 1;
        }
        let batch: Vec<&[u32]> = order[start..end]
            .iter()
            .map(|&i| encodings[i].get_ids())
            .collect();
        let embedded = loaded
            .model
            .embed(&batch)
            .map_err(internal("embedding forward pass"))?;
        for (&index, vector) in order[start..end].iter().zip(embedded) {
            vectors[index] = vector;
        }
        start = end;
    }
    Ok(vectors)
}

impl Embedder for MiniLmEmbedder {
    fn embed(&self, texts: Vec<String>) -> EngineFuture<Vec<Vec<f32>>> {
        let shared = Arc::clone(&self.shared);
        let pool = self.pool.clone();
        Box::pin(async move {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            if let Some(path) = shared.missing_file() {
                return Err(shared.missing(&path));
            }
            let worker = Arc::clone(&shared);
            pool.run(move || {
                let loaded = worker.load()?;
                embed_batches(&loaded, &texts)
            })
            .await
        })
    }

    fn dimensions(&self) -> usize {
        MINILM_DIMENSIONS
    }

    /// Word pieces after truncation, `[CLS]` and `[SEP]` included: exactly what the model
    /// reads. Without an installed tokenizer, an estimate of one token per four bytes.
    fn count_tokens(&self, text: &str) -> usize {
        let counted = self.shared.tokenizer().and_then(|tokenizer| {
            tokenizer
                .encode_fast(text, true)
                .map(|encoding| encoding.get_ids().len())
                .map_err(|err| EngineError::internal(err.to_string()))
        });
        counted.unwrap_or_else(|_| (text.len().div_ceil(4) + 2).min(MAX_TOKENS))
    }

    fn model(&self) -> &str {
        MINILM_MODEL
    }
}

#[cfg(test)]
mod tests;
