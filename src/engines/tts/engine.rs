//! The speech synthesis engine: resolves a voice, splits the text, and synthesizes sentence by
//! sentence on the worker pool, streaming each sentence as soon as it is ready.
//!
//! `default` is the Piper joe voice. When its model or the ONNX Runtime library is missing (or
//! failed to load), `default` is spoken by the eSpeak NG voice of the same language instead,
//! and [`Synthesis::voice`] / [`TtsEngine::resolve`] say so. A `default` request for another
//! language goes to a neural voice of that language if there is one, else to eSpeak.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
};
use tokio::sync::mpsc;

use super::catalog::{
    normalise_language, Catalog, EspeakEntry, NeuralEntry, VoiceInfo, VoiceKind,
    DEFAULT_NEURAL_VOICE, DEFAULT_VOICE, ESPEAK_PREFIX,
};
use super::espeak::{self, Espeak};
use super::loudness;
use super::phonemes::PhonemeType;
use super::piper::{PiperVoice, SPEED_RANGE};
use super::pitch::{shift_pitch, PITCH_RANGE};
use super::runtime;
use super::text::{self, Segment};
use crate::engines::pool::{Lane, WorkerPool};

/// Tuning of the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct TtsOptions {
    /// ONNX Runtime intra-op threads per synthesis (1: a synthesis uses one core).
    pub intra_threads: usize,
    /// Silence added after each sentence but the last, in seconds at speed 1.0.
    pub sentence_pause: f32,
    /// Whether neural voices sample noise as their configuration says (natural variation in
    /// delivery and timing). Off, the same text always renders to the same audio: for
    /// reproducible benchmarks and measurements.
    pub sampling_noise: bool,
    /// The level each sentence of a neural voice is brought to, as the RMS of its speech in
    /// dBFS ([`super::loudness`]); `None` leaves the model's own level.
    pub loudness_dbfs: Option<f32>,
}

/// The level sentences of neural voices are brought to by default: the RMS of their speech,
/// in dBFS (piper-tts, scaling each sentence's peak to full scale, lands near it).
pub const DEFAULT_LOUDNESS_DBFS: f32 = -18.0;
/// The silence between two clauses of a sentence rendered apart, in seconds at speed 1.0.
const COMMA_PAUSE_SECONDS: f32 = 0.12;

impl Default for TtsOptions {
    fn default() -> Self {
        Self {
            intra_threads: 1,
            sentence_pause: 0.2,
            sampling_noise: true,
            loudness_dbfs: Some(DEFAULT_LOUDNESS_DBFS),
        }
    }
}

/// The voice that serves a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServedVoice {
    /// The voice id asked for.
    pub requested: String,
    /// The voice that speaks (`en_US-joe-medium`, `espeak-en-us`).
    pub id: String,
    pub kind: VoiceKind,
    /// The sample rate of the chunks, in Hz.
    pub sample_rate: u32,
    /// Why another voice than the one asked for speaks, when it is a fallback.
    pub fallback: Option<String>,
}

/// A started synthesis: who speaks, and the stream of chunks.
#[derive(Debug)]
pub struct Synthesis {
    pub voice: ServedVoice,
    pub stream: EngineStream<SpeechChunk>,
}

/// How ready a component is, for /health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Readiness {
    /// Loaded and serving.
    Ready,
    /// Present; loaded on first use (or by `preload`).
    NotLoaded,
    /// Files are missing (run scripts/fetch-models).
    Missing,
    /// Present but unusable (a corrupt model or configuration).
    Failed,
}

/// The state of one component.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentStatus {
    pub id: String,
    pub state: Readiness,
    pub detail: Option<String>,
}

/// The engine's state for /health.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TtsStatus {
    /// The ONNX Runtime library.
    pub runtime: ComponentStatus,
    /// eSpeak NG (all of its voices at once).
    pub espeak: ComponentStatus,
    /// `default` and every neural voice.
    pub voices: Vec<ComponentStatus>,
    /// The voice `default` is spoken by now.
    pub default_served_by: Option<String>,
}

/// The embedded speech synthesis engine. Cheap to clone.
#[derive(Clone)]
pub struct TtsEngine {
    inner: Arc<Inner>,
    /// The pool lane this handle's synthesis waits in.
    pool: WorkerPool,
}

struct Inner {
    models_dir: PathBuf,
    catalog: Catalog,
    options: TtsOptions,
    /// One slot per neural voice id; the slot's lock is held while the voice loads.
    loaded: Mutex<HashMap<String, VoiceSlot>>,
    /// Voices whose model failed to load, with the reason.
    failures: Mutex<HashMap<String, EngineError>>,
}

/// A neural voice, once loaded; its lock is held while it loads.
type VoiceSlot = Arc<Mutex<Option<Arc<PiperVoice>>>>;

/// What a resolved voice synthesizes with.
#[derive(Clone)]
enum Plan {
    Neural(Arc<NeuralEntry>),
    Espeak(EspeakEntry),
}

impl TtsEngine {
    /// An engine over the models directory (voices in `voices/`, the ONNX Runtime library in
    /// `onnxruntime/`), running inference on `pool`. Nothing is loaded yet, and nothing
    /// missing is an error here: [`status`](Self::status) reports it.
    pub fn new(models_dir: impl Into<PathBuf>, pool: WorkerPool) -> Self {
        Self::with_options(models_dir, pool, TtsOptions::default())
    }

    /// As [`new`](Self::new), with tuning.
    pub fn with_options(
        models_dir: impl Into<PathBuf>,
        pool: WorkerPool,
        options: TtsOptions,
    ) -> Self {
        let models_dir = models_dir.into();
        Self {
            pool,
            inner: Arc::new(Inner {
                catalog: Catalog::new(&models_dir),
                models_dir,
                options,
                loaded: Mutex::new(HashMap::new()),
                failures: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The same voices, their synthesis waiting in `lane` of the worker pool.
    pub fn on_lane(&self, lane: Lane) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            pool: self.pool.lane(lane),
        }
    }

    /// Loads eSpeak NG, the ONNX Runtime library and the neural voice behind `default`, so
    /// that the first request does not wait for them. Blocking (up to about a second): call
    /// it at start-up or from a blocking task. A missing model is not an error (`default`
    /// falls back to eSpeak); a model that fails to load is.
    pub fn preload(&self) -> Result<(), EngineError> {
        self.inner.catalog.espeak()?;
        if let Some(entry) = self.inner.catalog.neural_voice(DEFAULT_NEURAL_VOICE) {
            if runtime::library_path(&self.inner.models_dir).is_file() {
                self.inner.load(&entry)?;
            }
        }
        Ok(())
    }

    /// Loads what `voice` (as an agent names it, with its language) needs: eSpeak NG and, for
    /// a neural voice, its model. Blocking like [`preload`](Self::preload); a voice already
    /// loaded returns at once.
    pub fn warm(&self, voice: &str, language: Option<&str>) -> Result<(), EngineError> {
        self.inner.catalog.espeak()?;
        if let (_, Plan::Neural(entry)) = self.plan(voice, language)? {
            self.inner.load(&entry)?;
        }
        Ok(())
    }

    /// Every voice: `default` first, then the neural voices, then the eSpeak voices.
    pub fn voices(&self) -> Vec<VoiceInfo> {
        let mut voices = Vec::new();
        let served = self.resolve(DEFAULT_VOICE, None).ok();
        let espeak = self.inner.catalog.espeak().ok();
        let espeak_rate = espeak.as_ref().map_or(22_050, |e| e.sample_rate);
        let neural = self.inner.catalog.neural();
        if let Some(served) = served {
            let base = match served.kind {
                VoiceKind::Neural => neural
                    .iter()
                    .find(|entry| entry.id == served.id)
                    .and_then(|entry| entry.info()),
                VoiceKind::Espeak => self
                    .inner
                    .catalog
                    .espeak_voice(&served.id)
                    .map(|entry| entry.info(espeak_rate)),
            };
            if let Some(mut info) = base {
                info.name = format!("Default ({})", info.name);
                info.id = DEFAULT_VOICE.to_owned();
                info.served_by = Some(served.id);
                voices.push(info);
            }
        }
        voices.extend(neural.iter().filter_map(|entry| entry.info()));
        if let Some(espeak) = espeak {
            voices.extend(
                espeak
                    .voices
                    .iter()
                    .map(|entry| entry.info(espeak.sample_rate)),
            );
        }
        voices
    }

    /// Which voice would speak a request for `voice` (in `language`, for `default`), without
    /// synthesizing anything. The integrator reports `id` (and `fallback`) to the client.
    pub fn resolve(&self, voice: &str, language: Option<&str>) -> Result<ServedVoice, EngineError> {
        self.plan(voice, language).map(|(served, _)| served)
    }

    /// The state of the runtime library, eSpeak NG and each neural voice.
    pub fn status(&self) -> TtsStatus {
        let library = runtime::library_path(&self.inner.models_dir);
        let runtime_status = if runtime::is_loaded() {
            ComponentStatus {
                id: "onnxruntime".into(),
                state: Readiness::Ready,
                detail: None,
            }
        } else if library.is_file() {
            ComponentStatus {
                id: "onnxruntime".into(),
                state: Readiness::NotLoaded,
                detail: None,
            }
        } else {
            ComponentStatus {
                id: "onnxruntime".into(),
                state: Readiness::Missing,
                detail: Some(format!(
                    "{} is missing; run scripts/fetch-models",
                    library.display()
                )),
            }
        };
        let espeak_status = match self.inner.catalog.espeak() {
            Ok(espeak) => ComponentStatus {
                id: "espeak-ng".into(),
                state: Readiness::Ready,
                detail: Some(format!(
                    "eSpeak NG {}, {} voices",
                    espeak.version,
                    espeak.voices.len()
                )),
            },
            Err(error) => ComponentStatus {
                id: "espeak-ng".into(),
                state: Readiness::Missing,
                detail: Some(error.message),
            },
        };
        let neural = self.inner.catalog.neural();
        let mut voices: Vec<ComponentStatus> = Vec::new();
        let served = self.resolve(DEFAULT_VOICE, None);
        voices.push(match &served {
            Ok(served) => ComponentStatus {
                id: DEFAULT_VOICE.into(),
                state: match served.kind {
                    VoiceKind::Neural => self.neural_state(&served.id, runtime_status.state),
                    VoiceKind::Espeak => espeak_status.state,
                },
                detail: served.fallback.clone(),
            },
            Err(error) => ComponentStatus {
                id: DEFAULT_VOICE.into(),
                state: Readiness::Missing,
                detail: Some(error.message.clone()),
            },
        });
        if !neural.iter().any(|entry| entry.id == DEFAULT_NEURAL_VOICE) {
            voices.push(ComponentStatus {
                id: DEFAULT_NEURAL_VOICE.into(),
                state: Readiness::Missing,
                detail: Some(format!(
                    "{}/{DEFAULT_NEURAL_VOICE}.onnx is missing; run scripts/fetch-models",
                    self.inner.catalog.voices_dir().display()
                )),
            });
        }
        for entry in &neural {
            let (state, detail) = match &entry.config {
                Err(error) => (Readiness::Failed, Some(error.message.clone())),
                Ok(_) => {
                    let state = self.neural_state(&entry.id, runtime_status.state);
                    let detail = match state {
                        Readiness::Failed => self.failure(&entry.id).map(|e| e.message),
                        Readiness::Missing => runtime_status.detail.clone(),
                        _ => None,
                    };
                    (state, detail)
                }
            };
            voices.push(ComponentStatus {
                id: entry.id.clone(),
                state,
                detail,
            });
        }
        TtsStatus {
            runtime: runtime_status,
            espeak: espeak_status,
            voices,
            default_served_by: served.ok().map(|s| s.id),
        }
    }

    /// Starts synthesizing: checks the request, resolves the voice and queues one job on the
    /// pool that synthesizes sentence by sentence, sending each as soon as it is ready and
    /// stopping when the stream is dropped.
    pub fn start(&self, request: SpeechRequest) -> Result<Synthesis, EngineError> {
        let (speed, pitch) = check_request(&request)?;
        let segments = text::split(&request.text);
        if segments.is_empty() {
            return Err(nothing_to_say());
        }
        let (voice, plan) = self.plan(&request.voice, request.language.as_deref())?;
        // Room for every chunk: the worker never waits on a slow reader.
        let (tx, rx) = mpsc::channel(segments.len());
        let inner = Arc::clone(&self.inner);
        let requested = voice.requested.clone();
        self.pool.submit(move || {
            inner.run(&requested, plan, segments, speed, pitch, &tx);
        })?;
        Ok(Synthesis { voice, stream: rx })
    }

    /// Synthesizes the whole text on the calling thread and returns every chunk. Blocking:
    /// for tests, benchmarks and batch tools, never on an async runtime.
    pub fn synthesize_blocking(
        &self,
        request: SpeechRequest,
    ) -> Result<(ServedVoice, Vec<SpeechChunk>), EngineError> {
        let (speed, pitch) = check_request(&request)?;
        let segments = text::split(&request.text);
        if segments.is_empty() {
            return Err(nothing_to_say());
        }
        let (voice, plan) = self.plan(&request.voice, request.language.as_deref())?;
        let (tx, mut rx) = mpsc::channel(segments.len());
        self.inner
            .run(&voice.requested, plan, segments, speed, pitch, &tx);
        drop(tx);
        let mut chunks = Vec::new();
        while let Ok(chunk) = rx.try_recv() {
            chunks.push(chunk?);
        }
        Ok((voice, chunks))
    }

    /// The phoneme ids a neural voice reads for `text` (one sentence).
    pub fn phoneme_ids(&self, voice: &str, text: &str) -> Result<Vec<i64>, EngineError> {
        match self.plan(voice, None)?.1 {
            Plan::Neural(entry) => entry
                .config
                .as_ref()
                .map_err(Clone::clone)?
                .phonemizer
                .phoneme_ids(text),
            Plan::Espeak(_) => Err(EngineError::invalid(format!(
                "`{voice}` is an eSpeak voice, which has no phoneme ids"
            ))),
        }
    }

    fn failure(&self, id: &str) -> Option<EngineError> {
        self.inner
            .failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    fn neural_state(&self, id: &str, runtime: Readiness) -> Readiness {
        if self.failure(id).is_some() {
            return Readiness::Failed;
        }
        if runtime == Readiness::Missing {
            return Readiness::Missing;
        }
        let slot = self
            .inner
            .loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned();
        // A slot being loaded right now is locked: it is not ready yet.
        match slot.and_then(|slot| slot.try_lock().ok().map(|voice| voice.is_some())) {
            Some(true) => Readiness::Ready,
            _ => Readiness::NotLoaded,
        }
    }

    /// Resolves a voice id (and language, for `default`) to the voice that speaks it.
    fn plan(
        &self,
        voice: &str,
        language: Option<&str>,
    ) -> Result<(ServedVoice, Plan), EngineError> {
        let requested = voice.trim();
        let catalog = &self.inner.catalog;
        let served = |plan: &Plan, fallback: Option<String>| -> Result<ServedVoice, EngineError> {
            let (id, kind, sample_rate) = match plan {
                Plan::Neural(entry) => (
                    entry.id.clone(),
                    VoiceKind::Neural,
                    entry.config.as_ref().map_err(Clone::clone)?.sample_rate,
                ),
                Plan::Espeak(entry) => (
                    entry.id.clone(),
                    VoiceKind::Espeak,
                    catalog.espeak()?.sample_rate,
                ),
            };
            Ok(ServedVoice {
                requested: requested.to_owned(),
                id,
                kind,
                sample_rate,
                fallback,
            })
        };
        if requested.is_empty() || requested.eq_ignore_ascii_case(DEFAULT_VOICE) {
            let (plan, fallback) = self.default_plan(language)?;
            return Ok((served(&plan, fallback.clone())?, plan));
        }
        if requested.starts_with(ESPEAK_PREFIX) {
            let entry = catalog
                .espeak_voice(requested)
                .ok_or_else(|| unknown_voice(requested))?;
            let plan = Plan::Espeak(entry);
            return Ok((served(&plan, None)?, plan));
        }
        match catalog.neural_voice(requested) {
            Some(entry) => {
                if let Err(error) = &entry.config {
                    return Err(error.clone());
                }
                self.neural_usable(&entry)?;
                let plan = Plan::Neural(entry);
                Ok((served(&plan, None)?, plan))
            }
            None if requested == DEFAULT_NEURAL_VOICE => Err(EngineError::unavailable(format!(
                "the voice {requested} is not installed in {}; run scripts/fetch-models",
                catalog.voices_dir().display()
            ))),
            None => Err(unknown_voice(requested)),
        }
    }

    /// Whether a neural voice can run: its runtime library present and no failed load.
    fn neural_usable(&self, entry: &NeuralEntry) -> Result<(), EngineError> {
        if let Some(error) = self.failure(&entry.id) {
            return Err(error);
        }
        let library = runtime::library_path(&self.inner.models_dir);
        if !runtime::is_loaded() && !library.is_file() {
            return Err(EngineError::unavailable(format!(
                "the ONNX Runtime library {} is missing; run scripts/fetch-models",
                library.display()
            )));
        }
        Ok(())
    }

    /// The plan for `default`, with the reason when it is a fallback.
    fn default_plan(&self, language: Option<&str>) -> Result<(Plan, Option<String>), EngineError> {
        let catalog = &self.inner.catalog;
        let neural = catalog.neural_voice(DEFAULT_NEURAL_VOICE);
        let neural_language = neural
            .as_ref()
            .and_then(|entry| entry.config.as_ref().ok())
            .and_then(|config| config.language.clone())
            .map_or_else(|| "en-us".to_owned(), |l| normalise_language(&l));
        if let Some(language) = language.map(normalise_language).filter(|l| !l.is_empty()) {
            let base = |tag: &str| tag.split('-').next().unwrap_or_default().to_owned();
            if base(&language) != base(&neural_language) {
                // Another language: its own neural voice if there is one, else eSpeak.
                let other = catalog.neural().into_iter().find(|entry| {
                    entry
                        .config
                        .as_ref()
                        .ok()
                        .and_then(|c| c.language.as_deref())
                        .is_some_and(|l| base(&normalise_language(l)) == base(&language))
                        && self.neural_usable(entry).is_ok()
                });
                if let Some(entry) = other {
                    return Ok((Plan::Neural(entry), None));
                }
                let espeak = catalog.espeak_for_language(&language).ok_or_else(|| {
                    EngineError::invalid(format!(
                        "no voice speaks the language `{language}`; list the voices with GET /v1/audio/models"
                    ))
                })?;
                return Ok((Plan::Espeak(espeak), None));
            }
        }
        let reason = match &neural {
            None => format!(
                "the neural voice {DEFAULT_NEURAL_VOICE} is not installed (run scripts/fetch-models)"
            ),
            Some(entry) => match (&entry.config, self.neural_usable(entry)) {
                (Ok(_), Ok(())) => return Ok((Plan::Neural(Arc::clone(entry)), None)),
                (Err(error), _) => error.message.clone(),
                (_, Err(error)) => error.message,
            },
        };
        let entry = neural
            .as_deref()
            .and_then(|entry| espeak_stand_in(entry, catalog))
            .or_else(|| catalog.espeak_for_language(&neural_language))
            .ok_or_else(|| {
                EngineError::unavailable(format!("{reason}, and eSpeak NG has no voice for it"))
            })?;
        let fallback = format!("{reason}; eSpeak NG voice {} speaks instead", entry.id);
        Ok((Plan::Espeak(entry), Some(fallback)))
    }
}

impl Inner {
    /// Loads a neural voice once; concurrent callers wait for the same load.
    fn load(&self, entry: &NeuralEntry) -> Result<Arc<PiperVoice>, EngineError> {
        let slot = Arc::clone(
            self.loaded
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(entry.id.clone())
                .or_default(),
        );
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(voice) = slot.as_ref() {
            return Ok(Arc::clone(voice));
        }
        let mut config = (**entry.config.as_ref().map_err(Clone::clone)?).clone();
        if !self.options.sampling_noise {
            config.noise_scale = 0.0;
            config.noise_w = 0.0;
        }
        let library = runtime::library_path(&self.models_dir);
        match PiperVoice::load(&entry.model, config, &library, self.options.intra_threads) {
            Ok(voice) => {
                let voice = Arc::new(voice);
                *slot = Some(Arc::clone(&voice));
                self.failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&entry.id);
                Ok(voice)
            }
            Err(error) => {
                // A missing file may appear later; a model that does not load stays failed.
                if error.kind != switchboard_actors::engine::EngineErrorKind::Unavailable {
                    self.failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(entry.id.clone(), error.clone());
                }
                Err(error)
            }
        }
    }

    /// The synthesis job: one segment after another, each sent when ready; stops when the
    /// receiver is gone.
    fn run(
        &self,
        requested: &str,
        plan: Plan,
        segments: Vec<Segment>,
        speed: f32,
        pitch: f32,
        tx: &mpsc::Sender<Result<SpeechChunk, EngineError>>,
    ) {
        let last = segments.len().saturating_sub(1);
        let mut plan = plan;
        let neural = match &plan {
            Plan::Neural(entry) => match self.load(entry) {
                Ok(voice) => Some(voice),
                Err(error) => {
                    // `default` still speaks, with eSpeak, when its model fails to load.
                    let is_default =
                        requested.is_empty() || requested.eq_ignore_ascii_case(DEFAULT_VOICE);
                    let fallback = is_default
                        .then(|| espeak_stand_in(entry, &self.catalog))
                        .flatten();
                    match fallback {
                        Some(entry) => {
                            tracing::warn!(error = %error.message, voice = %entry.id, "the default neural voice failed to load; speaking with eSpeak");
                            plan = Plan::Espeak(entry);
                            None
                        }
                        None => {
                            let _ = tx.blocking_send(Err(error));
                            return;
                        }
                    }
                }
            },
            Plan::Espeak(_) => None,
        };
        let mut after_clause = false;
        let mut spoke = false;
        for (index, segment) in segments.into_iter().enumerate() {
            if tx.is_closed() {
                return;
            }
            let follows_clause = std::mem::replace(&mut after_clause, !segment.ends_sentence);
            let result = match (&plan, &neural) {
                (_, Some(voice)) => voice.synthesize(&segment.text, speed).map(|audio| {
                    let rate = voice.sample_rate();
                    let mut audio = shift_pitch(audio, rate, pitch);
                    if let Some(target) = self.options.loudness_dbfs {
                        loudness::normalize(&mut audio, rate, target);
                    }
                    // Clauses of one sentence join with a comma's pause, not the model's
                    // silence on both sides of the cut.
                    let comma = (COMMA_PAUSE_SECONDS / speed * rate as f32) as usize;
                    loudness::trim_silence(
                        &mut audio,
                        follows_clause.then_some(0),
                        (!segment.ends_sentence).then_some(comma),
                    );
                    if segment.ends_sentence && index != last && !audio.is_empty() {
                        let pause = (self.options.sentence_pause / speed * rate as f32) as usize;
                        audio.resize(audio.len() + pause, 0.0);
                    }
                    (audio, rate)
                }),
                (Plan::Espeak(entry), None) => {
                    synthesize_espeak(entry, &segment.text, speed, pitch)
                }
                (Plan::Neural(entry), None) => Err(EngineError::internal(format!(
                    "the voice {} was not loaded",
                    entry.id
                ))),
            };
            let chunk = result.map(|(samples, sample_rate)| SpeechChunk {
                samples,
                sample_rate,
                text: segment.text,
            });
            let failed = chunk.is_err();
            if matches!(&chunk, Ok(c) if c.samples.is_empty()) {
                continue;
            }
            spoke = true;
            if tx.blocking_send(chunk).is_err() || failed {
                return;
            }
        }
        // Text of characters no voice reads (controls, private-use symbols) comes out as no
        // sound at all: that is the text's fault, not a failure of the voice.
        if !spoke {
            let _ = tx.blocking_send(Err(nothing_to_say()));
        }
    }
}

/// The refusal of a text with nothing a voice can read aloud.
fn nothing_to_say() -> EngineError {
    EngineError::invalid_field("text", "the text has nothing a voice can read aloud")
}

/// The eSpeak voice that stands in for a neural voice: the one it phonemizes with, or one of
/// its language.
fn espeak_stand_in(entry: &NeuralEntry, catalog: &Catalog) -> Option<EspeakEntry> {
    let config = entry.config.as_ref().ok()?;
    match &config.phonemizer.kind {
        PhonemeType::Espeak { voice } => catalog.espeak_for_language(voice),
        PhonemeType::Text => None,
    }
    .or_else(|| catalog.espeak_for_language(config.language.as_deref()?))
}

/// eSpeak's speaking rate at speed 1.0, in words per minute. eSpeak's own default (175) is
/// brisk for a formant voice: at 130, a calm conversational pace, speech recognition
/// (Whisper) and listeners on a phone line understand it markedly better.
pub const ESPEAK_RATE: i32 = 130;

/// Synthesizes one segment with an eSpeak voice: speed through its rate, pitch through its
/// base pitch (a factor of 2 is one octave, spread over eSpeak's 0-100 scale around 50).
fn synthesize_espeak(
    entry: &EspeakEntry,
    text: &str,
    speed: f32,
    pitch: f32,
) -> Result<(Vec<f32>, u32), EngineError> {
    let rate = (ESPEAK_RATE as f32 * speed).round() as i32;
    let pitch = (espeak::NORMAL_PITCH as f32 + 50.0 * pitch.log2()).round() as i32;
    let mut espeak = Espeak::lock()?;
    let audio = espeak.synthesize(&entry.identifier, text, rate, pitch)?;
    Ok((audio, espeak.sample_rate()))
}

/// Checks text, speed and pitch; returns speed and pitch.
fn check_request(request: &SpeechRequest) -> Result<(f32, f32), EngineError> {
    if request.text.trim().is_empty() {
        return Err(EngineError::invalid_field(
            "text",
            "the text to speak is empty",
        ));
    }
    let in_range = |value: f32, (low, high): (f32, f32)| {
        value.is_finite() && value >= low - 1e-4 && value <= high + 1e-4
    };
    if !in_range(request.speed, SPEED_RANGE) {
        return Err(EngineError::invalid_field(
            "speed",
            format!(
                "speed must be between {} and {} (got {})",
                SPEED_RANGE.0, SPEED_RANGE.1, request.speed
            ),
        ));
    }
    if !in_range(request.pitch, PITCH_RANGE) {
        return Err(EngineError::invalid_field(
            "pitch",
            format!(
                "pitch must be between {} and {} (got {})",
                PITCH_RANGE.0, PITCH_RANGE.1, request.pitch
            ),
        ));
    }
    Ok((
        request.speed.clamp(SPEED_RANGE.0, SPEED_RANGE.1),
        request.pitch.clamp(PITCH_RANGE.0, PITCH_RANGE.1),
    ))
}

fn unknown_voice(voice: &str) -> EngineError {
    EngineError::invalid(format!(
        "unknown voice `{voice}`; list the voices with GET /v1/audio/models"
    ))
}

impl TextToSpeech for TtsEngine {
    fn provider(&self) -> &str {
        "default"
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        self.start(request).map(|synthesis| synthesis.stream)
    }
}

/// The models directory of this checkout, for tests and benchmarks.
pub fn repository_models_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/models"))
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    use switchboard_actors::engine::EngineErrorKind;

    use super::*;
    use crate::engines::tts::pitch::estimate_f0;

    /// One engine (and one loaded joe voice) shared by the tests.
    fn engine() -> &'static TtsEngine {
        static ENGINE: OnceLock<TtsEngine> = OnceLock::new();
        ENGINE.get_or_init(|| {
            let engine = TtsEngine::new(repository_models_dir(), WorkerPool::new(2, 16));
            engine
                .preload()
                .expect("the joe voice and ONNX Runtime; run scripts/fetch-models");
            engine
        })
    }

    fn request(voice: &str, text: &str) -> SpeechRequest {
        SpeechRequest::new(text, voice)
    }

    fn speak(request: SpeechRequest) -> (ServedVoice, Vec<f32>, u32) {
        let (voice, chunks) = engine().synthesize_blocking(request).unwrap();
        let rate = chunks.first().map_or(0, |c| c.sample_rate);
        (
            voice,
            chunks.into_iter().flat_map(|c| c.samples).collect(),
            rate,
        )
    }

    fn rms(samples: &[f32]) -> f32 {
        (samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32).sqrt()
    }

    const TEN_WORDS: &str = "The quick brown fox jumps over the lazy sleeping dog.";

    #[test]
    fn a_sentence_is_audible_and_of_plausible_length() {
        let (voice, audio, rate) = speak(request("default", TEN_WORDS));
        assert_eq!(voice.id, DEFAULT_NEURAL_VOICE);
        assert_eq!(voice.kind, VoiceKind::Neural);
        assert!(voice.fallback.is_none());
        assert_eq!(rate, 22_050);
        let seconds = audio.len() as f32 / rate as f32;
        assert!((2.0..5.0).contains(&seconds), "{seconds} s");
        assert!(rms(&audio) > 0.02, "rms {}", rms(&audio));
    }

    #[test]
    fn every_sentence_speaks_at_the_set_level_without_clipping() {
        // A statement, a short exclamation and a long question come out of the model at
        // different levels; each is brought to the same one.
        let text = "The clinic opens at nine. Wow! Could you tell me whether the pharmacy on the corner is still open this evening?";
        let (_, chunks) = engine()
            .synthesize_blocking(request("default", text))
            .unwrap();
        assert_eq!(chunks.len(), 3);
        for chunk in &chunks {
            let level = loudness::speech_level_dbfs(&chunk.samples, chunk.sample_rate).unwrap();
            let peak = chunk.samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
            let peak_dbfs = 20.0 * peak.log10();
            assert!(
                peak_dbfs <= loudness::PEAK_CEILING_DBFS + 0.01,
                "{}: peak {peak_dbfs}",
                chunk.text
            );
            // At the level, unless the peak ceiling held it under.
            assert!(
                (level - DEFAULT_LOUDNESS_DBFS).abs() < 0.5
                    || (level < DEFAULT_LOUDNESS_DBFS
                        && peak_dbfs > loudness::PEAK_CEILING_DBFS - 0.1),
                "{}: {level} dBFS, peak {peak_dbfs} dBFS",
                chunk.text
            );
        }
    }

    #[test]
    fn sentences_stream_in_order_as_they_are_ready() {
        let sentences = [
            "This is the first sentence.",
            "Here comes the second one!",
            "Is this the third?",
            "And this is the last sentence of the text.",
        ];
        let started = Instant::now();
        let mut synthesis = engine()
            .start(request("default", &sentences.join(" ")))
            .unwrap();
        let mut arrivals = Vec::new();
        while let Some(chunk) = synthesis.stream.blocking_recv() {
            let chunk = chunk.unwrap();
            assert!(rms(&chunk.samples) > 0.01);
            arrivals.push((started.elapsed(), chunk.text));
        }
        let texts: Vec<&str> = arrivals.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, sentences);
        let first = arrivals[0].0;
        let last = arrivals[arrivals.len() - 1].0;
        assert!(
            last > first + Duration::from_millis(30),
            "first chunk at {first:?}, last at {last:?}"
        );
    }

    #[test]
    fn speed_changes_duration() {
        let text = "Speaking faster or slower changes how long this rather long sentence \
                    lasts, from the first word to the very last one.";
        let duration = |speed: f32| {
            let (_, audio, rate) = speak(SpeechRequest {
                speed,
                ..request("default", text)
            });
            audio.len() as f32 / rate as f32
        };
        let normal = duration(1.0);
        let fast = duration(2.0) / normal;
        let slow = duration(0.5) / normal;
        // The model's own start and end silences do not scale: "about half" and "about double".
        assert!((0.38..0.7).contains(&fast), "speed 2.0: {fast} of normal");
        assert!((1.6..2.5).contains(&slow), "speed 0.5: {slow} of normal");
    }

    #[test]
    fn pitch_raises_f0_and_keeps_duration() {
        // Without sampling noise both renderings are the same speech, so the request's pitch
        // is the only difference between them.
        static STEADY: OnceLock<TtsEngine> = OnceLock::new();
        let steady = STEADY.get_or_init(|| {
            TtsEngine::with_options(
                repository_models_dir(),
                WorkerPool::new(1, 4),
                TtsOptions {
                    sampling_noise: false,
                    ..TtsOptions::default()
                },
            )
        });
        let speak = |pitch: f32| {
            let (_, chunks) = steady
                .synthesize_blocking(SpeechRequest {
                    pitch,
                    ..request("default", "Hello there, how are you doing today?")
                })
                .unwrap();
            let rate = chunks[0].sample_rate;
            let samples: Vec<f32> = chunks.into_iter().flat_map(|c| c.samples).collect();
            (samples, rate)
        };
        let (plain, rate) = speak(1.0);
        assert_eq!(
            speak(1.0).0,
            plain,
            "renderings without noise are identical"
        );
        let (high, _) = speak(2.0);
        let plain_f0 = estimate_f0(&plain, rate).unwrap();
        let high_f0 = estimate_f0(&high, rate).unwrap();
        let ratio = high_f0 / plain_f0;
        assert!((1.6..2.4).contains(&ratio), "{plain_f0} Hz -> {high_f0} Hz");
        let drift = (high.len() as f32 / plain.len() as f32 - 1.0).abs();
        assert!(drift < 0.05, "duration changed by {drift}");
        assert!(rms(&high) > 0.5 * rms(&plain));
    }

    #[test]
    fn every_espeak_voice_listed_speaks() {
        let voices: Vec<VoiceInfo> = engine()
            .voices()
            .into_iter()
            .filter(|v| v.kind == VoiceKind::Espeak)
            .collect();
        assert!(voices.len() > 50, "{} eSpeak voices", voices.len());
        for id in ["espeak-en", "espeak-de", "espeak-fr"] {
            assert!(voices.iter().any(|v| v.id == id), "{id} is listed");
        }
        for voice in &voices {
            let (served, audio, rate) = speak(request(&voice.id, "ok, 1 2 3, ma na ta la."));
            assert_eq!(served.id, voice.id);
            assert_eq!(rate, voice.sample_rate);
            let seconds = audio.len() as f32 / rate as f32;
            assert!(
                seconds > 0.3 && rms(&audio) > 0.01,
                "{}: {seconds} s",
                voice.id
            );
        }
    }

    #[test]
    fn espeak_speed_and_pitch_apply() {
        let text = "This sentence is spoken by eSpeak at several speeds.";
        let (_, normal, rate) = speak(request("espeak-en-us", text));
        let (_, fast, _) = speak(SpeechRequest {
            speed: 2.0,
            ..request("espeak-en-us", text)
        });
        let ratio = fast.len() as f32 / normal.len() as f32;
        assert!((0.35..0.7).contains(&ratio), "{ratio}");
        let (_, high, _) = speak(SpeechRequest {
            pitch: 2.0,
            ..request("espeak-en-us", text)
        });
        let (low, high) = (
            estimate_f0(&normal, rate).unwrap(),
            estimate_f0(&high, rate).unwrap(),
        );
        assert!(high > low * 1.3, "{low} Hz -> {high} Hz");
    }

    #[test]
    fn bad_requests_are_refused() {
        let error = engine()
            .start(request("no-such-voice", "Hello."))
            .unwrap_err();
        assert_eq!(error.kind, EngineErrorKind::InvalidInput);
        assert!(
            error.message.contains("GET /v1/audio/models"),
            "{}",
            error.message
        );
        let error = engine()
            .start(request("espeak-xx-nowhere", "Hello."))
            .unwrap_err();
        assert_eq!(error.kind, EngineErrorKind::InvalidInput);
        let error = engine().start(request("default", "  \n ")).unwrap_err();
        assert_eq!(error.kind, EngineErrorKind::InvalidInput);
        let error = engine()
            .start(SpeechRequest {
                speed: 3.0,
                ..request("default", "Hello.")
            })
            .unwrap_err();
        assert_eq!(error.kind, EngineErrorKind::InvalidInput);
        let error = engine()
            .start(SpeechRequest {
                pitch: 0.1,
                ..request("default", "Hello.")
            })
            .unwrap_err();
        assert_eq!(error.kind, EngineErrorKind::InvalidInput);
    }

    #[test]
    fn dropping_the_stream_stops_the_job() {
        let pool = WorkerPool::new(1, 4);
        let engine = TtsEngine::new(repository_models_dir(), pool.clone());
        engine.preload().unwrap();
        let text = "This sentence is here to keep the voice busy for a while. ".repeat(60);
        let mut synthesis = engine.start(request("default", &text)).unwrap();
        let first = synthesis.stream.blocking_recv().unwrap().unwrap();
        assert!(!first.samples.is_empty());
        drop(synthesis);
        let dropped = Instant::now();
        while pool.stats().busy > 0 {
            assert!(
                dropped.elapsed() < Duration::from_secs(2),
                "the job kept running after its stream was dropped"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // The only worker is free again.
        let (_, chunks) = engine
            .synthesize_blocking(request("default", "Done."))
            .unwrap();
        assert_eq!(chunks.len(), 1);
    }

    #[test]
    fn a_missing_model_dir_falls_back_to_espeak_for_default() {
        let empty = tempfile::tempdir().unwrap();
        let engine = TtsEngine::new(empty.path().join("models"), WorkerPool::new(1, 4));
        let served = engine.resolve("default", None).unwrap();
        assert_eq!(served.kind, VoiceKind::Espeak);
        assert_eq!(served.id, "espeak-en-us");
        assert!(
            served
                .fallback
                .as_deref()
                .unwrap_or("")
                .contains("scripts/fetch-models"),
            "{served:?}"
        );
        let mut synthesis = engine.start(request("default", TEN_WORDS)).unwrap();
        assert_eq!(synthesis.voice, served);
        let chunk = synthesis.stream.blocking_recv().unwrap().unwrap();
        assert_eq!(chunk.sample_rate, 22_050);
        assert!(rms(&chunk.samples) > 0.01);
        let status = engine.status();
        assert_eq!(status.default_served_by.as_deref(), Some("espeak-en-us"));
        let joe = status
            .voices
            .iter()
            .find(|v| v.id == DEFAULT_NEURAL_VOICE)
            .unwrap();
        assert_eq!(joe.state, Readiness::Missing);
        let default = engine.voices().into_iter().next().unwrap();
        assert_eq!(default.id, "default");
        assert_eq!(default.served_by.as_deref(), Some("espeak-en-us"));
        let error = engine
            .start(request(DEFAULT_NEURAL_VOICE, "Hello."))
            .unwrap_err();
        assert_eq!(error.kind, EngineErrorKind::Unavailable);
        assert!(
            error.message.contains("scripts/fetch-models"),
            "{}",
            error.message
        );
    }

    #[test]
    fn status_reports_loading() {
        let engine = TtsEngine::new(repository_models_dir(), WorkerPool::new(1, 4));
        let state = |engine: &TtsEngine| {
            engine
                .status()
                .voices
                .into_iter()
                .find(|v| v.id == DEFAULT_NEURAL_VOICE)
                .unwrap()
                .state
        };
        assert_eq!(state(&engine), Readiness::NotLoaded);
        engine.preload().unwrap();
        assert_eq!(state(&engine), Readiness::Ready);
        let status = engine.status();
        assert_eq!(status.runtime.state, Readiness::Ready);
        assert_eq!(status.espeak.state, Readiness::Ready);
        assert_eq!(
            status.default_served_by.as_deref(),
            Some(DEFAULT_NEURAL_VOICE)
        );
    }

    #[test]
    fn the_catalog_lists_default_and_the_neural_voice() {
        let voices = engine().voices();
        assert_eq!(voices[0].id, "default");
        assert_eq!(voices[0].served_by.as_deref(), Some(DEFAULT_NEURAL_VOICE));
        let joe = voices
            .iter()
            .find(|v| v.id == DEFAULT_NEURAL_VOICE)
            .unwrap();
        assert_eq!(joe.kind, VoiceKind::Neural);
        assert_eq!(joe.language, "en-US");
        assert_eq!(joe.license.as_deref(), Some("CC0"));
    }

    #[test]
    fn default_in_another_language_goes_to_espeak() {
        let served = engine().resolve("default", Some("de")).unwrap();
        assert_eq!(served.id, "espeak-de");
        assert!(served.fallback.is_none());
        let served = engine().resolve("default", Some("en-GB")).unwrap();
        assert_eq!(served.id, DEFAULT_NEURAL_VOICE);
    }

    #[test]
    fn phoneme_ids_are_framed_and_padded() {
        let ids = engine().phoneme_ids("default", "Hello, world.").unwrap();
        assert_eq!(&ids[..2], &[1, 0], "BOS then pad: {ids:?}");
        assert_eq!(ids.last(), Some(&2), "EOS: {ids:?}");
        assert!(ids.len() > 20 && ids.len() % 2 == 1, "{ids:?}");
        // Every phoneme is followed by a pad.
        assert!(
            ids[1..ids.len() - 1].iter().step_by(2).all(|&id| id == 0),
            "{ids:?}"
        );
        let phonemes: Vec<i64> = ids[2..ids.len() - 1].iter().step_by(2).copied().collect();
        assert!(phonemes.iter().all(|&id| id > 2), "{phonemes:?}");
        // The comma (8), the space after it (3) and the final full stop (10) are kept.
        assert!(phonemes.windows(2).any(|w| w == [8, 3]), "{phonemes:?}");
        assert_eq!(phonemes.last(), Some(&10), "{phonemes:?}");
    }
}

#[cfg(test)]
mod round_trip {
    use super::*;
    use crate::engines::whisper::WhisperEngine;
    use switchboard_actors::engine::{TranscribeOptions, STT_SAMPLE_RATE};

    /// Word error rate: word-level edit distance over the reference's length, ignoring case
    /// and punctuation.
    fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
        let words = |text: &str| -> Vec<String> {
            text.to_lowercase()
                .split_whitespace()
                .map(|w| {
                    w.chars()
                        .filter(|c| c.is_alphanumeric())
                        .collect::<String>()
                })
                .filter(|w| !w.is_empty())
                .collect()
        };
        let (reference, hypothesis) = (words(reference), words(hypothesis));
        let mut row: Vec<usize> = (0..=hypothesis.len()).collect();
        for (i, r) in reference.iter().enumerate() {
            let mut previous = row[0];
            row[0] = i + 1;
            for (j, h) in hypothesis.iter().enumerate() {
                let substitution = previous + usize::from(r != h);
                previous = row[j + 1];
                row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
            }
        }
        row[hypothesis.len()] as f64 / reference.len().max(1) as f64
    }

    #[test]
    fn synthesized_speech_is_recognised_by_whisper() {
        let pool = WorkerPool::new(1, 4);
        let tts = TtsEngine::new(repository_models_dir(), pool.clone());
        let stt = WhisperEngine::new(repository_models_dir(), pool);
        let text = "Please call me back tomorrow morning, my number has not changed.";
        for (voice, max_wer) in [
            ("default", 0.15),
            ("espeak-en", 0.25),
            ("espeak-en-us", 0.25),
        ] {
            let (_, chunks) = tts
                .synthesize_blocking(SpeechRequest::new(text, voice))
                .unwrap();
            let rate = chunks[0].sample_rate;
            let audio: Vec<f32> = chunks.into_iter().flat_map(|c| c.samples).collect();
            let audio = crate::media::resample::resample(&audio, rate, STT_SAMPLE_RATE);
            let options = TranscribeOptions {
                language: Some("en".into()),
                ..TranscribeOptions::default()
            };
            let heard = stt.transcribe_blocking(&audio, &options).unwrap().text;
            let wer = word_error_rate(text, &heard);
            assert!(wer <= max_wer, "{voice}: WER {wer:.2}, heard {heard:?}");
        }
    }
}
