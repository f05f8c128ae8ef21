//! The end-of-turn model: Smart Turn v3.2 (Daily's, BSD-2-Clause; docs/models.md), a small
//! Whisper-encoder classifier that reads the last 8 s of a caller's turn as Whisper log-mel
//! features and gives the probability that the turn is complete.
//!
//! [`SmartTurn`] implements the sessions' [`TurnEndModel`]. A session asks when its caller
//! pauses; the requests of every session that pauses within the same [`BATCH_WINDOW`] run as
//! one batch (the model's batch dimension is dynamic) on the live lane of the worker pool, so
//! the audio path never waits for it. One batch job runs at a time, taking what has gathered
//! meanwhile, so judging turns never holds more than one worker; a request whose answer would
//! come after its session's silence timer has decided ([`TurnAudio::answer_within`]) is
//! skipped rather than computed for nothing. A node short of CPU thus degrades to the timer
//! instead of falling behind.
//!
//! The features follow the reference implementation exactly: 16 kHz audio, the last 8 s kept
//! (shorter turns padded with silence in front), normalised to zero mean and unit variance,
//! then the fixed-window log-mel of [`MelFrontEnd::log_mel_window`] (80 × 800).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ort::session::Session;
use ort::value::Tensor;
use switchboard_actors::engine::{
    EngineError, EngineErrorKind, EngineFuture, TurnAudio, TurnEndModel,
};
use tokio::sync::oneshot;

use super::llm::ModelStatus;
use super::pool::{Lane, WorkerPool};
use super::tts::runtime;
use super::whisper::audio::resample;
use super::whisper::mel::{MelFrontEnd, HOP_LENGTH, SAMPLE_RATE};

/// The model's path inside the models directory.
pub const MODEL_FILE: &str = "smart-turn/smart-turn-v3.2-cpu.onnx";
/// The model's name in `/health`.
pub const MODEL_NAME: &str = "smart-turn-v3.2";
/// How much of the turn the model reads: its last 8 s.
pub const WINDOW_SAMPLES: usize = 8 * SAMPLE_RATE;
/// Mel bands of the features.
const N_MELS: usize = 80;
/// Feature frames: one per 10 ms of the window.
const N_FRAMES: usize = WINDOW_SAMPLES / HOP_LENGTH;
/// How long the first request of a batch waits for others before the batch is queued.
pub const BATCH_WINDOW: Duration = Duration::from_millis(4);
/// The most requests one inference takes; more wait for the next.
const MAX_BATCH: usize = 8;
/// The variance floor of the waveform normalisation (the reference's).
const NORM_EPS: f32 = 1e-7;

/// The Smart Turn model over the worker pool. Cheap to clone; clones share the model and the
/// batch being gathered.
#[derive(Clone)]
pub struct SmartTurn {
    shared: Arc<Shared>,
    pool: WorkerPool,
}

struct Shared {
    model: PathBuf,
    library: PathBuf,
    loaded: Mutex<Option<Result<Arc<Loaded>, EngineError>>>,
    /// Serialises loading, so two first requests load the model once.
    loading: Mutex<()>,
    waiting: Mutex<Waiting>,
}

/// Requests waiting for the next batch, and whether a batch job is queued or running (it
/// takes them all before it ends).
#[derive(Default)]
struct Waiting {
    requests: Vec<Request>,
    scheduled: bool,
}

struct Loaded {
    session: Mutex<Session>,
    input: String,
    output: String,
    mel: MelFrontEnd,
}

struct Request {
    audio: TurnAudio,
    asked_at: Instant,
    reply: oneshot::Sender<Result<f32, EngineError>>,
}

impl SmartTurn {
    /// The model in `models_dir`, loaded on first use (or by [`preload`](Self::preload)); its
    /// batches run on the live lane of `pool`.
    pub fn new(models_dir: &Path, pool: WorkerPool) -> Self {
        Self {
            shared: Arc::new(Shared {
                model: models_dir.join(MODEL_FILE),
                library: runtime::library_path(models_dir),
                loaded: Mutex::new(None),
                loading: Mutex::new(()),
                waiting: Mutex::new(Waiting::default()),
            }),
            pool: pool.lane(Lane::Live),
        }
    }

    /// Whether the model is installed, loaded or failed, for `/health`.
    pub fn status(&self) -> ModelStatus {
        match &*self.shared.lock_loaded() {
            Some(Ok(_)) => ModelStatus::Ready,
            Some(Err(e)) => ModelStatus::Failed(e.message.clone()),
            None if !self.shared.model.is_file() => ModelStatus::Missing(self.shared.model.clone()),
            None => ModelStatus::NotLoaded,
        }
    }

    /// Loads the model now, on the calling thread.
    pub fn preload(&self) -> Result<(), EngineError> {
        self.shared.load().map(|_| ())
    }

    /// The probability that each turn is complete, computed on the calling thread as one
    /// batch (evaluations and tests; sessions go through [`TurnEndModel`]).
    pub fn judge_now(&self, turns: &[TurnAudio]) -> Result<Vec<f32>, EngineError> {
        let loaded = self.shared.load()?;
        loaded.probabilities(turns)
    }

    /// Queues the batch job on the worker pool.
    fn queue_batch(shared: Arc<Shared>, pool: WorkerPool) {
        let job_shared = Arc::clone(&shared);
        let queued = pool.submit(move || Shared::run_batches(job_shared));
        if let Err(e) = queued {
            // The live lane is full: every waiting request gets the error, and its session
            // falls back to its silence timer.
            let requests = {
                let mut waiting = shared.lock_waiting();
                waiting.scheduled = false;
                std::mem::take(&mut waiting.requests)
            };
            for request in requests {
                let _ = request.reply.send(Err(e.clone()));
            }
        }
    }
}

impl TurnEndModel for SmartTurn {
    fn complete_probability(&self, audio: TurnAudio) -> EngineFuture<f32> {
        let (reply, answer) = oneshot::channel();
        let schedule = {
            let mut waiting = self.shared.lock_waiting();
            waiting.requests.push(Request {
                audio,
                asked_at: Instant::now(),
                reply,
            });
            !std::mem::replace(&mut waiting.scheduled, true)
        };
        if schedule {
            let (shared, pool) = (Arc::clone(&self.shared), self.pool.clone());
            tokio::spawn(async move {
                tokio::time::sleep(BATCH_WINDOW).await;
                SmartTurn::queue_batch(shared, pool);
            });
        }
        Box::pin(async move {
            answer
                .await
                .map_err(|_| EngineError::internal("the end-of-turn job failed unexpectedly"))?
        })
    }
}

impl Shared {
    fn lock_loaded(&self) -> std::sync::MutexGuard<'_, Option<Result<Arc<Loaded>, EngineError>>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// On a worker: answers the waiting requests, at most [`MAX_BATCH`] per inference, until
    /// none is left; then the next request schedules a new job.
    fn run_batches(shared: Arc<Shared>) {
        loop {
            let batch: Vec<Request> = {
                let mut waiting = shared.lock_waiting();
                if waiting.requests.is_empty() {
                    waiting.scheduled = false;
                    return;
                }
                let take = waiting.requests.len().min(MAX_BATCH);
                waiting.requests.drain(..take).collect()
            };
            shared.run_batch(batch);
        }
    }

    /// One inference over `batch`, skipping the requests nobody waits for any more.
    fn run_batch(&self, batch: Vec<Request>) {
        let (batch, late): (Vec<Request>, Vec<Request>) = batch
            .into_iter()
            .filter(|r| !r.reply.is_closed())
            .partition(|r| r.asked_at.elapsed() <= r.audio.answer_within);
        for request in late {
            let _ = request.reply.send(Err(EngineError::new(
                EngineErrorKind::Overloaded,
                "the end-of-turn model could not answer before the silence timer",
            )));
        }
        if batch.is_empty() {
            return;
        }
        let started = Instant::now();
        let turns: Vec<TurnAudio> = batch.iter().map(|r| r.audio.clone()).collect();
        let result = self.load().and_then(|loaded| loaded.probabilities(&turns));
        tracing::debug!(
            batch = batch.len(),
            ms = started.elapsed().as_millis() as u64,
            "end-of-turn batch"
        );
        match result {
            Ok(probabilities) => {
                for (request, p) in batch.into_iter().zip(probabilities) {
                    let _ = request.reply.send(Ok(p));
                }
            }
            Err(e) => {
                for request in batch {
                    let _ = request.reply.send(Err(e.clone()));
                }
            }
        }
    }

    fn load(&self) -> Result<Arc<Loaded>, EngineError> {
        if let Some(Ok(loaded)) = &*self.lock_loaded() {
            return Ok(Arc::clone(loaded));
        }
        let _guard = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(Ok(loaded)) = &*self.lock_loaded() {
            return Ok(Arc::clone(loaded));
        }
        if !self.model.is_file() {
            // Not remembered: the file may be installed while the server runs.
            return Err(EngineError::unavailable(format!(
                "the end-of-turn model {} is missing; run scripts/fetch-models",
                self.model.display()
            )));
        }
        let result = Loaded::read(&self.model, &self.library).map(Arc::new);
        if let Err(e) = &result {
            tracing::error!(model = %self.model.display(), error = %e, "loading the end-of-turn model failed");
        }
        *self.lock_loaded() = Some(result.clone());
        result
    }
}

impl Loaded {
    fn read(model: &Path, library: &Path) -> Result<Self, EngineError> {
        let failed = |e: String| {
            EngineError::internal(format!(
                "the end-of-turn model {} cannot be loaded: {e}",
                model.display()
            ))
        };
        let session = runtime::cpu_session(library, model, 1, failed)?;
        let input = session
            .inputs()
            .first()
            .map(|i| i.name().to_owned())
            .ok_or_else(|| failed("it has no input".into()))?;
        let output = session
            .outputs()
            .first()
            .map(|o| o.name().to_owned())
            .ok_or_else(|| failed("it has no output".into()))?;
        let mel = MelFrontEnd::new(N_MELS).map_err(|e| failed(e.to_string()))?;
        Ok(Self {
            session: Mutex::new(session),
            input,
            output,
            mel,
        })
    }

    /// One inference over all `turns`.
    fn probabilities(&self, turns: &[TurnAudio]) -> Result<Vec<f32>, EngineError> {
        let failed = |e: String| EngineError::internal(format!("the end-of-turn model: {e}"));
        let mut features = Vec::with_capacity(turns.len() * N_MELS * N_FRAMES);
        for turn in turns {
            let window = window_16k(turn);
            features.extend(
                self.mel
                    .log_mel_window(&normalised(window))
                    .map_err(|e| failed(e.to_string()))?,
            );
        }
        let input = Tensor::from_array(([turns.len(), N_MELS, N_FRAMES], features))
            .map_err(|e| failed(e.to_string()))?;
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let outputs = session
            .run(ort::inputs![self.input.as_str() => input])
            .map_err(|e| failed(e.to_string()))?;
        let output = outputs
            .get(&self.output)
            .ok_or_else(|| failed("no output".into()))?;
        let (_, values) = output
            .try_extract_tensor::<f32>()
            .map_err(|e| failed(e.to_string()))?;
        if values.len() != turns.len() {
            return Err(failed(format!(
                "{} answers for {} turns",
                values.len(),
                turns.len()
            )));
        }
        Ok(values
            .iter()
            .map(|p| {
                if p.is_finite() {
                    p.clamp(0.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect())
    }
}

/// The turn's last 8 s at 16 kHz as floats, with silence in front of a shorter turn.
fn window_16k(turn: &TurnAudio) -> Vec<f32> {
    // Only the chunks that reach into the window are converted.
    let wanted = WINDOW_SAMPLES * turn.rate.max(1) as usize / SAMPLE_RATE + 1;
    let mut kept = 0;
    let first = turn
        .chunks
        .iter()
        .rposition(|chunk| {
            kept += chunk.len();
            kept >= wanted
        })
        .unwrap_or(0);
    let samples: Vec<f32> = turn.chunks[first..]
        .iter()
        .flat_map(|chunk| chunk.iter().map(|&s| f32::from(s) / 32_768.0))
        .collect();
    let samples = if turn.rate as usize == SAMPLE_RATE {
        samples
    } else {
        resample(&samples, turn.rate, SAMPLE_RATE as u32)
    };
    let mut window = vec![0f32; WINDOW_SAMPLES];
    let take = samples.len().min(WINDOW_SAMPLES);
    window[WINDOW_SAMPLES - take..].copy_from_slice(&samples[samples.len() - take..]);
    window
}

/// Zero mean and unit variance over the whole window, as the reference does before its
/// spectrogram.
fn normalised(mut window: Vec<f32>) -> Vec<f32> {
    let n = window.len().max(1) as f64;
    let mean = window.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let variance = window
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    let scale = 1.0 / (variance as f32 + NORM_EPS).sqrt();
    let mean = mean as f32;
    for v in &mut window {
        *v = (*v - mean) * scale;
    }
    window
}

#[cfg(test)]
mod tests;
