//! [`LocalLlm`]: the embedded language model behind the `LanguageModel` trait.
//!
//! The model loads lazily on the first request (or on [`LocalLlm::preload`]) on a pool worker.
//! Each request is one pool job that renders the prompt, takes a KV cache from the prompt
//! cache, feeds the tokens the cache does not already hold, then samples token by token and
//! `blocking_send`s text deltas. The job notices a dropped stream at the next token and stops,
//! freeing its worker.
//!
//! Threads: candle splits every matrix product over `CANDLE_NUM_THREADS` threads (default: all
//! cores) and synchronises them per product, about 200 times per decoded token. On a machine
//! whose cores are busy with other work that synchronisation dominates (measured on two shared
//! cores: 3 tokens/s with two candle threads, 28 with one). When the worker pool already runs
//! requests side by side, or the machine is shared, start the process with
//! `CANDLE_NUM_THREADS=1`; concurrent requests are safe either way (candle serialises its
//! thread pool between callers).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use switchboard_actors::engine::{
    ChatRequest, EngineError, EngineStream, FinishReason, LanguageModel, LlmEvent,
};
use tokio::sync::mpsc;

use super::cache::PromptCache;
use super::model::LlamaModel;
use super::sampling::{Sampler, SamplingParams};
use super::template::ChatTemplate;
use super::tokenizer::{LlmTokenizer, Utf8Stream};
use super::tools::{Parsed, ToolCallParser};
use super::ModelStatus;
use crate::engines::pool::{Lane, WorkerPool};

/// The GGUF file of the default model, relative to the models directory.
pub const MODEL_FILE: &str = "smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf";

/// The model name reported for the embedded model.
pub const MODEL_NAME: &str = "smollm2-135m-instruct";

/// Events buffered between the generating worker and the reader of the stream.
const STREAM_BUFFER: usize = 64;

/// [`LlmOptions::knowledge_history_tokens`] by default: about three exchanges of a call.
pub const DEFAULT_KNOWLEDGE_HISTORY_TOKENS: usize = 256;

/// Tuning of the embedded language model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmOptions {
    /// Positions a conversation may use, prompt and answer together (capped by the model's
    /// own context length, 8192 for SmolLM2).
    pub max_context: usize,
    /// Conversations whose KV cache is kept for reuse (about 46 KB per token each for
    /// SmolLM2-135M; 0 disables the prompt cache).
    pub prompt_cache_entries: usize,
    /// Tokens of a conversation's history a turn with facts is read with: this model reads
    /// facts in its system turn, so such a turn reads its history again; only its latest
    /// exchanges that fit in this many tokens are read.
    pub knowledge_history_tokens: usize,
    /// Nucleus mass for sampled (temperature > 0) decoding.
    pub top_p: f32,
    /// The highest temperature a request is sampled at; higher ones are lowered to it.
    /// 0 by default: a 135M-parameter model sampled at an agent's default 0.7 drifts from the
    /// facts in its prompt, and taking its most likely word gives the same answer to the same
    /// question (which the evaluation in `tests/evaluation/` relies on).
    pub max_temperature: f32,
    /// Penalty on tokens repeated within `repeat_window` recent tokens (1.0 disables it).
    pub repeat_penalty: f32,
    pub repeat_window: usize,
    /// Fixed sampling seed (tests, benchmarks); `None` seeds each request from the OS.
    pub seed: Option<u64>,
}

impl Default for LlmOptions {
    fn default() -> Self {
        let sampling = SamplingParams::default();
        Self {
            max_context: 4096,
            prompt_cache_entries: 4,
            knowledge_history_tokens: DEFAULT_KNOWLEDGE_HISTORY_TOKENS,
            top_p: sampling.top_p,
            max_temperature: 0.0,
            repeat_penalty: sampling.repeat_penalty,
            repeat_window: sampling.repeat_window,
            seed: None,
        }
    }
}

/// Running totals, for metrics and for tests that check what the prompt cache saved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlmCounters {
    /// Requests that reached generation.
    pub requests: u64,
    /// Prompt tokens actually fed through the model.
    pub prompt_tokens_fed: u64,
    /// Prompt tokens served from the prompt cache instead.
    pub prompt_tokens_reused: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
}

struct Loaded {
    model: LlamaModel,
    tokenizer: LlmTokenizer,
    template: ChatTemplate,
}

enum LoadState {
    NotLoaded,
    Ready(Arc<Loaded>),
    Failed(EngineError),
}

struct Shared {
    path: PathBuf,
    options: LlmOptions,
    state: Mutex<LoadState>,
    /// Serialises loading so that concurrent first requests load the model once.
    loading: Mutex<()>,
    cache: PromptCache,
    requests: AtomicU64,
    prompt_fed: AtomicU64,
    prompt_reused: AtomicU64,
    completion: AtomicU64,
}

/// The embedded SmolLM2 language model. Cheap to clone; clones share the model and caches.
#[derive(Clone)]
pub struct LocalLlm {
    shared: Arc<Shared>,
    /// The pool lane this handle's requests wait in.
    pool: WorkerPool,
}

fn missing(path: &Path) -> EngineError {
    EngineError::unavailable(format!(
        "the local language model is not installed ({} is missing); run scripts/fetch-models",
        path.display()
    ))
}

impl LocalLlm {
    /// An engine over the GGUF file at `path`, running on `pool`. Nothing is read until the
    /// first request or [`LocalLlm::preload`].
    pub fn new(path: impl Into<PathBuf>, pool: WorkerPool, options: LlmOptions) -> Self {
        let cache = PromptCache::new(options.prompt_cache_entries);
        Self {
            pool,
            shared: Arc::new(Shared {
                path: path.into(),
                options,
                state: Mutex::new(LoadState::NotLoaded),
                loading: Mutex::new(()),
                cache,
                requests: AtomicU64::new(0),
                prompt_fed: AtomicU64::new(0),
                prompt_reused: AtomicU64::new(0),
                completion: AtomicU64::new(0),
            }),
        }
    }

    /// The GGUF file this engine reads.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Whether the model is loaded, not loaded yet, missing or failed to load (for /health).
    pub fn status(&self) -> ModelStatus {
        match &*self.shared.lock_state() {
            LoadState::Ready(_) => ModelStatus::Ready,
            LoadState::Failed(err) => ModelStatus::Failed(err.message.clone()),
            LoadState::NotLoaded if !self.shared.path.is_file() => {
                ModelStatus::Missing(self.shared.path.clone())
            }
            LoadState::NotLoaded => ModelStatus::NotLoaded,
        }
    }

    /// Loads the model now (on the pool) instead of on the first request.
    pub async fn preload(&self) -> Result<(), EngineError> {
        let shared = Arc::clone(&self.shared);
        self.pool.run(move || shared.load().map(|_| ())).await
    }

    /// The same model, its requests waiting in `lane` of the worker pool.
    pub fn on_lane(&self, lane: Lane) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            pool: self.pool.lane(lane),
        }
    }

    /// Totals since the engine was made.
    pub fn counters(&self) -> LlmCounters {
        let s = &self.shared;
        LlmCounters {
            requests: s.requests.load(Ordering::Relaxed),
            prompt_tokens_fed: s.prompt_fed.load(Ordering::Relaxed),
            prompt_tokens_reused: s.prompt_reused.load(Ordering::Relaxed),
            completion_tokens: s.completion.load(Ordering::Relaxed),
        }
    }

    /// Token ids of the prompt `request` renders to (loads the model's tokenizer if needed).
    /// Blocking: meant for tests, benchmarks and tools, not the async runtime.
    pub fn prompt_tokens(&self, request: &ChatRequest) -> Result<Vec<u32>, EngineError> {
        let loaded = self.shared.load()?;
        loaded
            .template
            .render(&loaded.tokenizer, &request.messages, &request.tools)
    }

    /// Token ids of plain `text` in the model's tokenizer (blocking, like `prompt_tokens`).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        self.shared.load()?.tokenizer.encode(text)
    }

    /// Text of token ids (blocking, like `prompt_tokens`).
    pub fn decode(&self, ids: &[u32]) -> Result<String, EngineError> {
        Ok(self.shared.load()?.tokenizer.decode(ids))
    }
}

impl Shared {
    fn lock_state(&self) -> std::sync::MutexGuard<'_, LoadState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn ready(&self) -> Option<Arc<Loaded>> {
        match &*self.lock_state() {
            LoadState::Ready(loaded) => Some(Arc::clone(loaded)),
            _ => None,
        }
    }

    /// The loaded model, loading it first if needed. Blocking: call on the pool.
    fn load(&self) -> Result<Arc<Loaded>, EngineError> {
        if let Some(loaded) = self.ready() {
            return Ok(loaded);
        }
        let _guard = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(loaded) = self.ready() {
            return Ok(loaded);
        }
        if !self.path.is_file() {
            return Err(missing(&self.path));
        }
        let started = std::time::Instant::now();
        let result = (|| {
            let (content, mut reader) = LlamaModel::read_header(&self.path)?;
            let tokenizer = LlmTokenizer::from_gguf(&content)?;
            let template = ChatTemplate::new(&tokenizer, self.options.knowledge_history_tokens)?;
            let model = LlamaModel::load(&content, &mut reader, self.options.max_context)?;
            Ok::<_, EngineError>(Loaded {
                model,
                tokenizer,
                template,
            })
        })();
        let mut state = self.lock_state();
        match result {
            Ok(loaded) => {
                tracing::info!(
                    path = %self.path.display(),
                    millis = started.elapsed().as_millis() as u64,
                    "local language model loaded"
                );
                let loaded = Arc::new(loaded);
                *state = LoadState::Ready(Arc::clone(&loaded));
                Ok(loaded)
            }
            Err(err) => {
                tracing::error!(path = %self.path.display(), error = %err, "loading the local language model failed");
                *state = LoadState::Failed(err.clone());
                Err(err)
            }
        }
    }
}

impl LanguageModel for LocalLlm {
    fn provider(&self) -> &str {
        "default"
    }

    /// A one-token answer, thrown away: the prompt's state stays in the prompt cache for the
    /// request that starts with it.
    fn warm(&self, request: ChatRequest) {
        let request = ChatRequest {
            max_tokens: 1,
            ..request
        };
        match self.stream(request) {
            Ok(mut events) => {
                tokio::spawn(async move { while events.recv().await.is_some() {} });
            }
            Err(error) => tracing::debug!(%error, "the prompt was not read ahead"),
        }
    }

    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError> {
        if request.max_tokens == 0 {
            return Err(EngineError::invalid("max_tokens must be at least 1"));
        }
        if request.messages.is_empty() {
            return Err(EngineError::invalid(
                "a chat request needs at least one message",
            ));
        }
        if let Some(model) = request.model.as_deref() {
            if model != MODEL_NAME && model != "default" {
                return Err(EngineError::invalid(format!(
                    "unknown model `{model}`; the local provider serves `{MODEL_NAME}`"
                )));
            }
        }
        if let LoadState::Failed(err) = &*self.shared.lock_state() {
            return Err(err.clone());
        }
        if !self.shared.path.is_file() {
            return Err(missing(&self.shared.path));
        }
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let shared = Arc::clone(&self.shared);
        self.pool.submit(move || {
            if let Err(err) = generate(&shared, request, &tx) {
                let _ = tx.blocking_send(Err(err));
            }
        })?;
        Ok(rx)
    }
}

/// Why the token loop ended.
enum Ending {
    Finished(FinishReason),
    Cancelled,
}

/// Prompt tokens fed to the model at a time: between two pieces the request may be
/// cancelled (a caller talking over the agent), so a long prompt frees its worker within one
/// piece of the cancel instead of after the whole prompt. A piece this long is read through
/// dense products at about 600 tokens a second on 2 cores (`cargo bench --bench llm`).
const PREFILL_PIECE: usize = 512;

/// One request, start to end, on a pool worker.
fn generate(
    shared: &Shared,
    request: ChatRequest,
    tx: &mpsc::Sender<Result<LlmEvent, EngineError>>,
) -> Result<(), EngineError> {
    // Cancelled while it waited for a worker: nothing to do.
    if tx.is_closed() {
        return Ok(());
    }
    let loaded = shared.load()?;
    let Loaded {
        model,
        tokenizer,
        template,
    } = &*loaded;
    let prompt = template.render(tokenizer, &request.messages, &request.tools)?;
    let context = model.config().context_length;
    if prompt.len() >= context {
        return Err(EngineError::invalid(format!(
            "the conversation is {} tokens long; the local model attends over at most {context}",
            prompt.len()
        )));
    }
    let budget = (request.max_tokens as usize).min(context - prompt.len());
    shared.requests.fetch_add(1, Ordering::Relaxed);

    let conversation = request.conversation.as_deref();
    let checked = shared
        .cache
        .checkout(&prompt, conversation, || model.new_cache());
    let mut kv = checked.kv;
    let reused = checked.tokens.len();
    let mut fed = checked.tokens;
    shared
        .prompt_reused
        .fetch_add(reused as u64, Ordering::Relaxed);
    // `checkout` keeps at least the prompt's last token to feed, so there are logits to
    // sample from.
    let mut logits = None;
    for piece in prompt[reused..].chunks(PREFILL_PIECE) {
        if tx.is_closed() {
            // The KV cache holds exactly `fed`: a later turn reuses what was fed.
            shared.cache.checkin(fed, kv, conversation);
            return Ok(());
        }
        logits = Some(model.forward(piece, &mut kv)?);
        fed.extend_from_slice(piece);
        shared
            .prompt_fed
            .fetch_add(piece.len() as u64, Ordering::Relaxed);
    }
    let Some(mut logits) = logits else {
        return Err(EngineError::internal(
            "the prompt cache left no token to feed",
        ));
    };

    let mut sampler = Sampler::new(SamplingParams {
        temperature: request.temperature.min(shared.options.max_temperature),
        top_p: shared.options.top_p,
        repeat_penalty: shared.options.repeat_penalty,
        repeat_window: shared.options.repeat_window,
        seed: shared.options.seed,
    });
    let mut parser = ToolCallParser::new(request.tools.iter().map(|t| t.name.clone()).collect());
    let mut utf8 = Utf8Stream::default();
    let mut completion = 0usize;
    // Only the answer counts for the repetition penalty: the prompt legitimately repeats.
    let answer_start = fed.len();

    let send = |pieces: Vec<Parsed>| -> bool {
        for piece in pieces {
            let event = match piece {
                Parsed::Text(text) if text.is_empty() => continue,
                Parsed::Text(text) => LlmEvent::TextDelta(text),
                Parsed::Call(call) => LlmEvent::ToolCall(call),
            };
            if tx.blocking_send(Ok(event)).is_err() {
                return false;
            }
        }
        true
    };

    let ending = loop {
        if tx.is_closed() {
            break Ending::Cancelled;
        }
        let token = sampler.sample(&mut logits, &fed[answer_start..]);
        if tokenizer.is_control(token) || token == template.end_of_turn() {
            break Ending::Finished(FinishReason::Stop);
        }
        completion += 1;
        let text = utf8.push(tokenizer.token_bytes(token));
        if !send(parser.push(&text)) {
            break Ending::Cancelled;
        }
        if completion >= budget {
            break Ending::Finished(FinishReason::Length);
        }
        match model.forward(&[token], &mut kv) {
            Ok(next) => logits = next,
            Err(err) => {
                shared
                    .completion
                    .fetch_add(completion as u64, Ordering::Relaxed);
                return Err(err);
            }
        }
        fed.push(token);
    };
    shared
        .completion
        .fetch_add(completion as u64, Ordering::Relaxed);
    // The KV cache holds exactly `fed`, whichever way the loop ended.
    shared.cache.checkin(fed, kv, conversation);

    if let Ending::Finished(reason) = ending {
        let mut rest = parser.push(&utf8.finish());
        rest.extend(parser.finish());
        if !send(rest) {
            return Ok(());
        }
        let reason = if parser.calls() > 0 {
            FinishReason::ToolCalls
        } else {
            reason
        };
        let _ = tx.blocking_send(Ok(LlmEvent::Done {
            reason,
            prompt_tokens: prompt.len() as u32,
            completion_tokens: completion as u32,
        }));
    }
    Ok(())
}
