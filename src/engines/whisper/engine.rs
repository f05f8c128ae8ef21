//! The speech-to-text engine: model selection by mode and language, lazy shared model
//! loading, and the long-form loop over 30 s windows (encode, detect the language, decode,
//! split into segments, align words, seek to the last timestamp).
//!
//! Models: `whisper-tiny.en` (English only) serves fast mode in English; `whisper-base`
//! (multilingual) serves everything else: language detection, other languages, and
//! accurate mode with beam search. Both are CTranslate2 directories under the models dir.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use serde::Serialize;
use switchboard_actors::engine::{
    EngineError, EngineErrorKind, EngineFuture, SpeechToText, SttMode, TranscribeOptions,
    Transcript, TranscriptSegment, TranscriptWord, STT_SAMPLE_RATE,
};

use super::ct2;
use super::decode::{decode_window, DecodeRequest};
use super::language;
use super::mel::{MelFrontEnd, HOP_LENGTH, N_FRAMES};
use super::model::WhisperModel;
use super::timestamps::{align_words, segment_span, split_segments, RawSegment};
use super::vocab::Vocab;
use crate::engines::pool::{Lane, WorkerPool};
use crate::speech::languages::{self, language_code};

/// The English-only model directory.
pub const ENGLISH_MODEL: &str = "whisper-tiny.en";
/// The multilingual model directory.
pub const MULTILINGUAL_MODEL: &str = "whisper-base";
/// Beams in accurate mode.
pub const BEAM_SIZE: usize = 5;
/// Padding after the speech of a live turn, in mel frames (10 ms): the encoder of a live
/// turn reads the turn and 10 s more, rounded up to whole seconds, not a padded 30 s. On 91
/// short turns (0.6-5.8 s: cuts of the JFK clip, synthesized requests at 16 kHz and through
/// an 8 kHz line, the stereo fixture's two sentences) in accurate mode, 10 s of padding made
/// 157 word errors of 382 against 155 with the full window, in 42% of the time; 5 s made
/// 201 and 2 s 289 (the decoder repeats itself), 15 s 153 in 55% of the time.
const LIVE_TURN_PADDING_FRAMES: usize = 1000;
/// Tokens a live turn may decode per second of speech, over a floor of
/// [`LIVE_TURN_MIN_TOKENS`]: twice a fast talker's rate, timestamps included, so that a
/// decoder that starts repeating itself stops early instead of filling its context.
const LIVE_TURN_TOKENS_PER_SECOND: usize = 8;
const LIVE_TURN_MIN_TOKENS: usize = 16;

/// Above this no-speech probability a window whose text is also unlikely is silence.
const NO_SPEECH_THRESHOLD: f32 = 0.6;
/// Mean log-probability below which a window's text is deemed unreliable.
const LOGPROB_THRESHOLD: f32 = -1.0;
/// Temperatures tried, in order, when a greedy window decodes as a repetition loop.
const FALLBACK_TEMPERATURES: [f32; 3] = [0.2, 0.4, 0.6];
/// A window shorter than this (in mel frames) at the end of the audio is not decoded alone.
const MIN_WINDOW_FRAMES: usize = 10;
/// Languages written without spaces between words: every token is a word for timestamps.
const UNSPACED_LANGUAGES: [&str; 6] = ["zh", "ja", "th", "lo", "my", "bo"];

/// What the recogniser writes: the speech in its own language, or in English.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Task {
    #[default]
    Transcribe,
    /// Into English, whatever language is spoken (Whisper's `<|translate|>` task; the
    /// multilingual model runs it).
    Translate,
}

/// Receives the text of each segment as soon as its 30 s window is decoded, in order; the
/// texts joined with single spaces are the transcript's `text`.
pub type SegmentSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How one recognition runs beyond its [`TranscribeOptions`].
#[derive(Clone, Default)]
struct Job {
    task: Task,
    on_segment: Option<SegmentSink>,
    /// Set when nobody waits for the result any more (a client gone, an early start the
    /// caller spoke on after): decoding stops at its next token.
    abandoned: Arc<AtomicBool>,
}

/// Whether a model is ready, for `/health`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelState {
    /// In memory and serving.
    Loaded,
    /// Installed; loads on first use (or on `preload`).
    NotLoaded,
    /// Not installed: `scripts/fetch-models` downloads it.
    Missing,
}

/// One model's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelStatus {
    pub name: &'static str,
    pub state: ModelState,
}

/// A loaded model with everything needed to run it.
struct Loaded {
    model: WhisperModel,
    vocab: Vocab,
    mel: MelFrontEnd,
    suppress: Vec<u32>,
    alignment_heads: Vec<(usize, usize)>,
}

struct Slot {
    name: &'static str,
    loaded: Mutex<Option<Arc<Loaded>>>,
}

struct Inner {
    dir: PathBuf,
    english: Slot,
    multilingual: Slot,
}

/// Whisper on CPU. Cheap to clone; clones share the loaded models.
#[derive(Clone)]
pub struct WhisperEngine {
    inner: Arc<Inner>,
    pool: WorkerPool,
}

impl WhisperEngine {
    /// An engine over the models in `models_dir` (which holds `whisper-tiny.en/` and
    /// `whisper-base/`), running inference on `pool`. Nothing is loaded yet.
    pub fn new(models_dir: impl Into<PathBuf>, pool: WorkerPool) -> Self {
        let slot = |name| Slot {
            name,
            loaded: Mutex::new(None),
        };
        Self {
            inner: Arc::new(Inner {
                dir: models_dir.into(),
                english: slot(ENGLISH_MODEL),
                multilingual: slot(MULTILINGUAL_MODEL),
            }),
            pool,
        }
    }

    /// The same models, their recognition waiting in `lane` of the worker pool.
    pub fn on_lane(&self, lane: Lane) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            pool: self.pool.lane(lane),
        }
    }

    /// Loads every installed model now (blocking; seconds). Fails if none is installed or
    /// one is corrupt.
    pub fn preload(&self) -> Result<(), EngineError> {
        let mut any = false;
        for slot in [&self.inner.english, &self.inner.multilingual] {
            if self.inner.installed(slot.name) {
                self.inner.get(slot)?;
                any = true;
            }
        }
        if any {
            Ok(())
        } else {
            Err(self.inner.missing(MULTILINGUAL_MODEL))
        }
    }

    /// Each model's state.
    pub fn status(&self) -> Vec<ModelStatus> {
        [&self.inner.english, &self.inner.multilingual]
            .into_iter()
            .map(|slot| {
                let loaded = slot.loaded.lock().map(|g| g.is_some()).unwrap_or(false);
                let state = if loaded {
                    ModelState::Loaded
                } else if self.inner.installed(slot.name) {
                    ModelState::NotLoaded
                } else {
                    ModelState::Missing
                };
                ModelStatus {
                    name: slot.name,
                    state,
                }
            })
            .collect()
    }

    /// Transcribes on the calling thread (for the command line and benchmarks; servers use
    /// [`SpeechToText::transcribe`], which runs on the worker pool).
    pub fn transcribe_blocking(
        &self,
        audio: &[f32],
        options: &TranscribeOptions,
    ) -> Result<Transcript, EngineError> {
        self.inner
            .transcribe(audio, options, &Job::default(), &mut || {})
    }

    /// A recogniser on the same models that runs `task` and, when given, hands each segment's
    /// text to `on_segment` as soon as it is decoded (OpenAI's translations and streamed
    /// transcriptions).
    pub fn with_task(&self, task: Task, on_segment: Option<SegmentSink>) -> WhisperTask {
        WhisperTask {
            engine: self.clone(),
            job: Job {
                task,
                on_segment,
                ..Job::default()
            },
        }
    }

    fn recognise(
        &self,
        audio: Arc<[f32]>,
        options: TranscribeOptions,
        job: Job,
    ) -> EngineFuture<Transcript> {
        let inner = self.inner.clone();
        let pool = self.pool.clone();
        let make_way = self.pool.clone();
        // Set when the caller stops waiting (a client gone, a job past its time bound, an
        // early start the caller spoke on after): a job still queued then computes nothing,
        // and a running one ends at its next token.
        let job = Job {
            abandoned: Arc::default(),
            ..job
        };
        let abandoned = job.abandoned.clone();
        Box::pin(async move {
            let _abandon_on_drop = SetOnDrop(abandoned);
            pool.run(move || {
                // A file's windows make way for a caller's turn (see `run_waiting_live`).
                inner.transcribe(&audio, &options, &job, &mut || make_way.run_waiting_live())
            })
            .await
        })
    }
}

impl SpeechToText for WhisperEngine {
    fn provider(&self) -> &str {
        "default"
    }

    /// A caller's pause starts the recognition: it costs only this node's CPU, and a
    /// recognition abandoned while queued costs nothing.
    fn starts_early(&self) -> bool {
        true
    }

    fn transcribe(
        &self,
        audio: Arc<[f32]>,
        options: TranscribeOptions,
    ) -> EngineFuture<Transcript> {
        self.recognise(audio, options, Job::default())
    }
}

/// The embedded recogniser running one [`Task`], with an optional [`SegmentSink`]: see
/// [`WhisperEngine::with_task`].
#[derive(Clone)]
pub struct WhisperTask {
    engine: WhisperEngine,
    job: Job,
}

impl SpeechToText for WhisperTask {
    fn provider(&self) -> &str {
        "default"
    }

    fn transcribe(
        &self,
        audio: Arc<[f32]>,
        options: TranscribeOptions,
    ) -> EngineFuture<Transcript> {
        self.engine.recognise(audio, options, self.job.clone())
    }
}

/// Sets its flag when dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A recognition nobody waits for any more.
fn abandoned() -> EngineError {
    EngineError::new(
        EngineErrorKind::Timeout,
        "the recognition was abandoned: nobody waits for its result any more",
    )
}

fn inference(err: candle_core::Error) -> EngineError {
    EngineError::internal(format!("Whisper inference failed: {err}"))
}

/// The checked language code of a request, if one was given.
fn requested_language(options: &TranscribeOptions) -> Result<Option<&'static str>, EngineError> {
    let Some(code) = options.language.as_deref() else {
        return Ok(None);
    };
    // A tag with a region or script (`pt-BR`, `zh_Hant`) is heard as its language.
    language_code(code).map(Some).ok_or_else(|| {
        EngineError::invalid(format!(
            "unsupported language {code:?}; supported: {}",
            languages::codes().collect::<Vec<_>>().join(", ")
        ))
    })
}

impl Inner {
    fn model_dir(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn installed(&self, name: &str) -> bool {
        let dir = self.model_dir(name);
        ["model.bin", "tokenizer.json"]
            .iter()
            .all(|f| dir.join(f).is_file())
    }

    fn missing(&self, name: &str) -> EngineError {
        EngineError::unavailable(format!(
            "the Whisper model {name} is not installed in {}; run scripts/fetch-models",
            self.dir.display()
        ))
    }

    /// The loaded model of a slot, loading it on first use.
    fn get(&self, slot: &Slot) -> Result<Arc<Loaded>, EngineError> {
        // Holding the lock while loading makes concurrent first requests wait for one load.
        let mut guard = slot
            .loaded
            .lock()
            .map_err(|_| EngineError::internal("the Whisper model lock is poisoned"))?;
        if let Some(loaded) = guard.as_ref() {
            return Ok(loaded.clone());
        }
        if !self.installed(slot.name) {
            return Err(self.missing(slot.name));
        }
        let started = std::time::Instant::now();
        let loaded = Arc::new(load(&self.model_dir(slot.name))?);
        tracing::info!(
            model = slot.name,
            ms = started.elapsed().as_millis() as u64,
            "Whisper model loaded"
        );
        *guard = Some(loaded.clone());
        Ok(loaded)
    }

    /// Transcribes `audio`, calling `between_windows` before each 30 s window after the
    /// first; stops when the job is abandoned.
    fn transcribe(
        &self,
        audio: &[f32],
        options: &TranscribeOptions,
        job: &Job,
        between_windows: &mut dyn FnMut(),
    ) -> Result<Transcript, EngineError> {
        let forced = requested_language(options)?;
        if audio.is_empty() {
            return Err(EngineError::invalid("the audio is empty"));
        }
        if audio.iter().any(|s| !s.is_finite()) {
            return Err(EngineError::invalid("the audio has non-finite samples"));
        }
        // Only the multilingual model translates.
        let english_fast =
            options.mode == SttMode::Fast && forced == Some("en") && job.task == Task::Transcribe;
        // English in fast mode runs on the English-only model; when only one model is
        // installed, that one serves.
        let model = if english_fast
            && (self.installed(ENGLISH_MODEL) || !self.installed(MULTILINGUAL_MODEL))
        {
            self.get(&self.english)?
        } else {
            self.get(&self.multilingual)?
        };
        let beam_size = match options.mode {
            SttMode::Accurate => BEAM_SIZE,
            SttMode::Fast => 1,
        };
        run(
            &model,
            audio,
            options,
            job,
            forced,
            beam_size,
            between_windows,
        )
    }
}

/// Reads a model directory.
fn load(dir: &Path) -> Result<Loaded, EngineError> {
    let corrupt =
        |msg: String| EngineError::internal(format!("cannot load the Whisper model: {msg}"));
    let started = std::time::Instant::now();
    let model_path = dir.join("model.bin");
    let file = ct2::Ct2File::open(&model_path).map_err(|e| corrupt(e.0))?;
    let dims = file.dims_of_model().map_err(|e| corrupt(e.0))?;
    // The tokenizer parses while the weights convert.
    let (tensors, vocab) = std::thread::scope(|scope| {
        let vocab = scope.spawn(|| Vocab::load(&dir.join("tokenizer.json"), dims.n_vocab));
        let tensors = file.candle_tensors(&dims);
        let vocab = vocab
            .join()
            .unwrap_or_else(|_| Err("the tokenizer loader failed".into()));
        (tensors, vocab)
    });
    let tensors = tensors.map_err(|e| corrupt(format!("{}: {}", model_path.display(), e.0)))?;
    let vocab = vocab.map_err(corrupt)?;
    drop(file);
    tracing::debug!(
        ms = started.elapsed().as_millis() as u64,
        "Whisper weights read"
    );
    let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
    let model = WhisperModel::load(&vb, dims)
        .map_err(|e| corrupt(format!("{}: {e}", model_path.display())))?;
    let mel = MelFrontEnd::new(dims.n_mels).map_err(|e| corrupt(e.to_string()))?;
    let config: serde_json::Value = match std::fs::read(dir.join("config.json")) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(format!("{}: {e}", dir.join("config.json").display())))?,
        Err(_) => serde_json::Value::Null,
    };
    let mut suppress: Vec<u32> = config["suppress_ids"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(|v| v.as_u64())
                .map(|v| v as u32)
                .collect()
        })
        .unwrap_or_default();
    // Special tokens (start, languages, task, previous text, no-speech) are never sampled.
    suppress.extend(vocab.eot + 1..vocab.timestamp_begin);
    suppress.retain(|&id| id != vocab.eot && (id as usize) < dims.n_vocab);
    suppress.sort_unstable();
    suppress.dedup();
    let mut alignment_heads: Vec<(usize, usize)> = config["alignment_heads"]
        .as_array()
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|p| Some((p.get(0)?.as_u64()? as usize, p.get(1)?.as_u64()? as usize)))
                .filter(|&(l, h)| l < dims.n_decoder_layers && h < dims.n_decoder_heads)
                .collect()
        })
        .unwrap_or_default();
    if alignment_heads.is_empty() {
        // Without a list, every head of the upper half of the decoder (as openai-whisper).
        for l in dims.n_decoder_layers / 2..dims.n_decoder_layers {
            alignment_heads.extend((0..dims.n_decoder_heads).map(|h| (l, h)));
        }
    }
    Ok(Loaded {
        model,
        vocab,
        mel,
        suppress,
        alignment_heads,
    })
}

/// Whether a window's tokens look like a decoding loop (one short phrase over and over).
fn is_repetitive(tokens: &[u32]) -> bool {
    if tokens.len() < 24 {
        return false;
    }
    // The fraction of distinct 4-grams: a loop has very few.
    let mut grams: Vec<&[u32]> = tokens.windows(4).collect();
    let total = grams.len();
    grams.sort_unstable();
    grams.dedup();
    (grams.len() as f32) < 0.35 * total as f32
}

/// Mel frames the encoder reads for a window of `content` frames: the full 30 s the model was
/// trained on, or for a live turn the speech with [`LIVE_TURN_PADDING_FRAMES`] after it.
fn encoder_frames(content: usize, options: &TranscribeOptions) -> usize {
    if options.live_turn {
        (content + LIVE_TURN_PADDING_FRAMES)
            .div_ceil(100)
            .saturating_mul(100)
            .min(N_FRAMES)
    } else {
        N_FRAMES
    }
}

/// The most tokens one window may decode: half the text context, and for a live turn no more
/// than its length calls for.
fn max_new_tokens(content: usize, options: &TranscribeOptions, n_ctx: usize) -> usize {
    let ceiling = n_ctx / 2;
    if options.live_turn {
        let seconds = (content * HOP_LENGTH).div_ceil(STT_SAMPLE_RATE as usize);
        (LIVE_TURN_MIN_TOKENS + LIVE_TURN_TOKENS_PER_SECOND * seconds).min(ceiling)
    } else {
        ceiling
    }
}

/// The long-form loop; `between_windows` runs before each window after the first. An
/// abandoned job ([`Job::abandoned`]) stops before its next window and at its next token.
fn run(
    m: &Loaded,
    audio: &[f32],
    options: &TranscribeOptions,
    job: &Job,
    forced: Option<&'static str>,
    beam_size: usize,
    between_windows: &mut dyn FnMut(),
) -> Result<Transcript, EngineError> {
    let vocab = &m.vocab;
    let duration = audio.len() as f32 / STT_SAMPLE_RATE as f32;
    let mel = m.mel.log_mel(audio).map_err(inference)?;
    let content = mel.content_frames;
    let n_ctx = m.model.dims.n_text_ctx;
    let initial_prompt: Vec<u32> = options
        .prompt
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .map(|p| vocab.encode(&format!(" {}", p.trim())))
        .unwrap_or_default();
    let mut history: Vec<u32> = Vec::new();
    let mut segments: Vec<(RawSegment, &'static str)> = Vec::new();
    let mut words: Vec<TranscriptWord> = Vec::new();
    let mut first_language: Option<(&'static str, Option<f32>)> = None;
    let mut previous_language: Option<&'static str> = None;
    let mut seek = 0usize;
    // Whether a segment's text has gone to `job.on_segment` yet.
    let mut emitted = false;
    while seek < content {
        let window_frames = (content - seek).min(N_FRAMES);
        if window_frames < MIN_WINDOW_FRAMES && seek > 0 {
            break;
        }
        if seek > 0 {
            between_windows();
        }
        if job.abandoned.load(Ordering::Relaxed) {
            return Err(abandoned());
        }
        let time_offset = (seek * HOP_LENGTH) as f32 / STT_SAMPLE_RATE as f32;
        let window_started = std::time::Instant::now();
        let features = m
            .model
            .encode(
                &mel.window(seek, encoder_frames(window_frames, options))
                    .map_err(inference)?,
            )
            .map_err(inference)?;
        let cross = m.model.cross_kv(&features).map_err(inference)?;
        let encoded_ms = window_started.elapsed().as_millis() as u64;
        let (language, probability) = match forced {
            Some(code) if vocab.multilingual => (code, None),
            _ if !vocab.multilingual => ("en", None),
            _ => {
                let hint = options.language_hint.as_deref();
                let (code, p) =
                    language::detect(&m.model, vocab, &cross, hint).map_err(inference)?;
                (code, Some(p))
            }
        };
        first_language.get_or_insert((language, probability));
        if previous_language != Some(language) {
            // Text in another language is a poor prompt.
            history.clear();
        }
        previous_language = Some(language);
        let sot_sequence = vocab.sot_sequence_for(Some(language), job.task == Task::Translate);
        let mut prompt = Vec::new();
        let context: Vec<u32> = initial_prompt.iter().chain(&history).copied().collect();
        if !context.is_empty() {
            let keep = (n_ctx / 2).saturating_sub(1).min(context.len());
            prompt.push(vocab.sot_prev);
            prompt.extend_from_slice(&context[context.len() - keep..]);
        }
        let sot_index = prompt.len();
        prompt.extend_from_slice(&sot_sequence);
        let request = DecodeRequest {
            prompt,
            sot_index,
            beam_size,
            temperature: options.temperature.max(0.0),
            max_new_tokens: max_new_tokens(window_frames, options, n_ctx),
            suppress: &m.suppress,
            abandoned: &job.abandoned,
        };
        let mut decoded = decode_window(&m.model, vocab, &cross, &request).map_err(inference)?;
        if is_repetitive(&decoded.tokens) {
            // A loop: retry by sampling at rising temperatures, without the prompt text.
            for temperature in FALLBACK_TEMPERATURES {
                let request = DecodeRequest {
                    prompt: sot_sequence.clone(),
                    sot_index: 0,
                    beam_size: 1,
                    temperature,
                    max_new_tokens: max_new_tokens(window_frames, options, n_ctx),
                    suppress: &m.suppress,
                    abandoned: &job.abandoned,
                };
                decoded = decode_window(&m.model, vocab, &cross, &request).map_err(inference)?;
                if !is_repetitive(&decoded.tokens) {
                    break;
                }
            }
        }
        if job.abandoned.load(Ordering::Relaxed) {
            return Err(abandoned());
        }
        tracing::debug!(
            seek,
            encode_ms = encoded_ms,
            total_ms = window_started.elapsed().as_millis() as u64,
            tokens = decoded.tokens.len(),
            no_speech = decoded.no_speech_prob,
            avg_logprob = decoded.avg_logprob,
            language,
            "Whisper window decoded"
        );
        if decoded.no_speech_prob > NO_SPEECH_THRESHOLD && decoded.avg_logprob < LOGPROB_THRESHOLD {
            seek += window_frames;
            continue;
        }
        let (mut window_segments, advance) =
            split_segments(vocab, &decoded.tokens, time_offset, window_frames);
        if options.word_timestamps && !window_segments.is_empty() {
            let spaced = !UNSPACED_LANGUAGES.contains(&language);
            // Where the windows before ended, in their words and segments.
            let not_before = words
                .last()
                .map(|w| w.end)
                .into_iter()
                .chain(segments.last().map(|(s, _)| s.end))
                .fold(time_offset, f32::max);
            let aligned = align_words(
                &m.model,
                vocab,
                &cross,
                &sot_sequence,
                &window_segments,
                &m.alignment_heads,
                time_offset,
                not_before,
                window_frames,
                spaced,
            )
            .map_err(inference)?;
            // A segment spans its words, as in the reference implementations: the model's
            // timestamp tokens can be coarser than the words (whole seconds on some audio).
            let mut previous_end = not_before;
            for (segment, timed) in window_segments.iter_mut().zip(&aligned) {
                (segment.start, segment.end) = segment_span(segment, timed, previous_end);
                previous_end = segment.end;
            }
            for timing in aligned.into_iter().flatten() {
                let word = vocab.decode(&timing.tokens).trim().to_string();
                if !word.is_empty() {
                    words.push(TranscriptWord {
                        start: timing.start,
                        end: timing.end,
                        word,
                    });
                }
            }
        }
        if let Some(sink) = &job.on_segment {
            for segment in &window_segments {
                let text = vocab.decode(&segment.tokens);
                let text = text.trim();
                if !text.is_empty() {
                    // Joined as the transcript's text is: one space between segments.
                    if emitted {
                        sink(&format!(" {text}"));
                    } else {
                        sink(text);
                    }
                    emitted = true;
                }
            }
        }
        history.extend_from_slice(&decoded.tokens);
        segments.extend(window_segments.into_iter().map(|s| (s, language)));
        seek += advance.max(1);
    }
    let (language, language_probability) = first_language.unwrap_or(("en", None));
    let segments: Vec<TranscriptSegment> = segments
        .into_iter()
        .filter_map(|(s, lang)| {
            let text = vocab.decode(&s.tokens).trim().to_string();
            (!text.is_empty()).then(|| TranscriptSegment {
                start: s.start.min(duration),
                end: s.end.min(duration),
                text,
                speaker: None,
                language: (lang != language).then(|| lang.to_string()),
            })
        })
        .collect();
    let text = segments
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for w in &mut words {
        w.start = w.start.min(duration);
        w.end = w.end.min(duration);
    }
    Ok(Transcript {
        text,
        segments,
        words,
        language: language.to_string(),
        language_probability,
        duration,
    })
}
