//! Voice activity detection for a session: [`VoiceActivityDetector`] scores each frame with one
//! of two models ([`VadModel`]: earshot's neural network for wideband audio, WebRTC's sub-band
//! Gaussian mixture for telephone lines) behind an adaptive energy gate, and [`SpeechTracker`]
//! turns those per-frame decisions into debounced [`SpeechEvent`]s: a sustained onset for
//! barge-in and a silence timeout for endpointing.

use super::error::{check_frame_len, AudioError};
use super::pcm::{frame_samples, FrameDuration, SampleRate};
use super::resample::StreamResampler;

/// earshot scores fixed hops of 256 samples (16 ms) at 16 kHz.
const HOP: usize = 256;

/// earshot looks at a 768-sample window (three hops). When inference resumes after a pause,
/// the two hops before the current frame are replayed so the window holds real audio.
const CONTEXT: usize = 2 * HOP;

/// How long the model keeps running after the energy gate closes. Neural inference costs about
/// 5 µs per hop, most of the audio path's budget, and any scoring is pointless while the gate
/// rejects every frame; the hangover keeps the model's state intact across the dips between
/// syllables, so the network is only reset after a real pause.
const INFERENCE_HANGOVER_MS: u32 = 300;

/// Floor for frame energies, so that digital silence has a finite level.
const SILENCE_DBFS: f32 = -100.0;

/// The model that scores frames behind the energy gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VadModel {
    /// earshot's neural network on 16 ms hops of 16 kHz audio: the better judge of wideband
    /// speech and of non-stationary noise (clicks, music), at about 5 µs per hop. Other rates
    /// are resampled to 16 kHz first.
    #[default]
    Neural,
    /// WebRTC's detector (the pure-Rust port in earshot 0.1): six sub-band log energies of an
    /// 8 kHz frame scored against adaptive Gaussian mixtures of speech and noise, in the
    /// aggressive profile. Built for narrowband telephony, where it runs on the line's own
    /// samples at about 1 µs per 20 ms frame; its score is 1 or 0. Other rates are resampled
    /// to 8 kHz first.
    Gmm,
}

impl VadModel {
    /// The rate the model reads.
    pub fn native_rate(self) -> SampleRate {
        match self {
            VadModel::Neural => SampleRate::Hz16000,
            VadModel::Gmm => SampleRate::Hz8000,
        }
    }
}

/// Tuning of [`VoiceActivityDetector`].
///
/// earshot normalises its input level, so on its own it scores a steady hiss or hum much the
/// same whether quiet or loud, and band-limited noise often scores as speech: white noise on an
/// 8 kHz line, upsampled to 16 kHz, scored above 0.5 in over 90% of frames. The energy gate
/// supplies what the network leaves out: a frame is speech only if it is also loud in absolute
/// terms and clearly above the recent noise floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadConfig {
    /// The model behind the gate.
    pub model: VadModel,
    /// Model score at or above which a frame may be speech; 0.5 is earshot's recommended
    /// default. The GMM scores 1 or 0, so any threshold in (0, 1] reads its verdict, and 0
    /// leaves the decision to the energy gate alone.
    pub threshold: f32,
    /// Frames quieter than this (RMS, dB relative to full scale) are never speech. Telephone
    /// speech runs at about -20 to -35 dBFS; -55 dBFS is well under a quiet talker.
    pub min_energy_dbfs: f32,
    /// A frame must exceed the noise floor by this much. 6 dB over the floor means speech about
    /// 5 dB above the noise under it (speech plus noise adds power: 10·log10(1 + 10^0.47) ≈ 6).
    pub noise_margin_db: f32,
    /// The noise floor is the quietest frame within this window. Pauses between syllables
    /// reach the floor several times a second, so one second tracks the noise without rising
    /// to the level of continuous speech; noise that starts suddenly is absorbed within it.
    pub noise_window_ms: u32,
}

impl Default for VadConfig {
    fn default() -> Self {
        Self {
            model: VadModel::default(),
            threshold: DEFAULT_THRESHOLD,
            min_energy_dbfs: -55.0,
            noise_margin_db: 6.0,
            noise_window_ms: 1_000,
        }
    }
}

/// Default model score threshold (see [`VadConfig::threshold`]).
pub const DEFAULT_THRESHOLD: f32 = 0.5;

/// The detector's verdict on one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadDecision {
    /// Speech probability in [0, 1] from the model. The neural model gives the highest score
    /// among the 16 ms hops that completed during this frame, or the previous frame's score if
    /// none completed; the GMM gives 1 or 0. 0 while scoring is paused because the energy gate
    /// has been closed for a while.
    pub probability: f32,
    /// RMS level of the frame in dB relative to full scale (-100 for digital silence).
    pub energy_dbfs: f32,
    /// Estimated noise floor in dBFS (quietest recent frame).
    pub noise_floor_dbfs: f32,
    /// Whether the frame is speech: probability at threshold and energy through the gate.
    pub is_speech: bool,
    /// Whether the frame passed the energy gate (loud in absolute terms and above the noise
    /// floor), whatever the network scored it.
    pub loud: bool,
}

impl VadDecision {
    /// The frame as [`SpeechTracker`] reads it.
    pub fn voice(&self) -> Voice {
        if self.is_speech {
            Voice::Speech
        } else if self.loud {
            Voice::Loud
        } else {
            Voice::Quiet
        }
    }
}

/// Per-session voice activity detector for mono i16 frames.
///
/// Frames at the model's [native rate](VadModel::native_rate) go straight to it; others are
/// first resampled to that rate. For the neural model, frames of any supported duration are
/// regrouped into earshot's 16 ms hops without allocating. The model only runs while the
/// energy gate is open (plus a short hangover), so silence costs next to nothing.
pub struct VoiceActivityDetector {
    rate: SampleRate,
    frame_len: usize,
    frame_ms: u32,
    config: VadConfig,
    scorer: Scorer,
    noise: NoiseFloor,
    to_model_rate: Option<(StreamResampler, Vec<i16>)>,
}

impl std::fmt::Debug for VoiceActivityDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VoiceActivityDetector")
            .field("rate", &self.rate)
            .field("frame_len", &self.frame_len)
            .field("config", &self.config)
            .field("scoring_active", &self.scorer.active)
            .finish()
    }
}

impl VoiceActivityDetector {
    /// A detector for frames of `frame` duration at `rate`, with the default [`VadConfig`].
    pub fn new(rate: SampleRate, frame: FrameDuration) -> Result<Self, AudioError> {
        Self::with_config(rate, frame, VadConfig::default())
    }

    /// A detector for frames of `frame` duration at `rate` with explicit tuning.
    pub fn with_config(
        rate: SampleRate,
        frame: FrameDuration,
        config: VadConfig,
    ) -> Result<Self, AudioError> {
        let model_rate = config.model.native_rate();
        let to_model_rate = if rate == model_rate {
            None
        } else {
            let resampler = StreamResampler::new(rate, model_rate, frame)?;
            let buf = vec![0; resampler.output_frame_len()];
            Some((resampler, buf))
        };
        Ok(Self {
            rate,
            frame_len: frame_samples(rate, frame),
            frame_ms: frame.ms(),
            config,
            scorer: Scorer::new(config.model),
            noise: NoiseFloor::new((config.noise_window_ms / frame.ms()).max(1) as usize),
            to_model_rate,
        })
    }

    /// Sets the model score threshold (clamped to [0, 1]).
    pub fn with_threshold(mut self, threshold: f32) -> Self {
        self.config.threshold = threshold.clamp(0.0, 1.0);
        self
    }

    /// The detector's tuning.
    pub fn config(&self) -> VadConfig {
        self.config
    }

    /// Input rate.
    pub fn rate(&self) -> SampleRate {
        self.rate
    }

    /// Samples per frame passed to [`process`](Self::process).
    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// Scores one frame.
    pub fn process(&mut self, frame: &[i16]) -> Result<VadDecision, AudioError> {
        check_frame_len(self.frame_len, frame.len())?;
        let energy_dbfs = energy_dbfs(frame);
        let noise_floor_dbfs = self.noise.push(energy_dbfs);
        let loud_enough = energy_dbfs >= self.config.min_energy_dbfs
            && energy_dbfs >= noise_floor_dbfs + self.config.noise_margin_db;
        let at_model_rate = match self.to_model_rate.as_mut() {
            Some((resampler, buf)) => {
                // Runs on every frame, gate open or not, so its filter history stays continuous.
                let n = resampler.process_i16(frame, buf)?;
                &buf[..n]
            }
            None => frame,
        };
        let probability = self.scorer.score(at_model_rate, loud_enough, self.frame_ms);
        Ok(VadDecision {
            probability,
            energy_dbfs,
            noise_floor_dbfs,
            is_speech: loud_enough && probability >= self.config.threshold,
            loud: loud_enough,
        })
    }

    /// Forgets all history, as at the start of a new call.
    pub fn reset(&mut self) {
        self.scorer.reset();
        self.noise.reset();
        if let Some((resampler, _)) = self.to_model_rate.as_mut() {
            resampler.reset();
        }
    }
}

/// The model plus the gating around it: whether scoring is currently running, and for how long
/// the gate has been closed.
struct Scorer {
    model: ModelState,
    active: bool,
    gate_closed_ms: u32,
    last_score: f32,
}

/// A model's own state.
enum ModelState {
    Neural(Box<NeuralState>),
    Gmm(Box<earshot_gmm::VoiceActivityDetector>),
}

/// earshot's network with the partial hop and the replay context around it.
struct NeuralState {
    detector: earshot::Detector,
    hop: [i16; HOP],
    hop_fill: usize,
    context: [i16; CONTEXT],
}

impl Scorer {
    fn new(model: VadModel) -> Self {
        let model = match model {
            VadModel::Neural => ModelState::Neural(Box::new(NeuralState {
                detector: earshot::Detector::default(),
                hop: [0; HOP],
                hop_fill: 0,
                context: [0; CONTEXT],
            })),
            VadModel::Gmm => ModelState::Gmm(Box::new(earshot_gmm::VoiceActivityDetector::new(
                earshot_gmm::VoiceActivityProfile::AGGRESSIVE,
            ))),
        };
        Self {
            model,
            active: false,
            gate_closed_ms: 0,
            last_score: 0.0,
        }
    }

    fn reset(&mut self) {
        match &mut self.model {
            ModelState::Neural(neural) => {
                neural.detector.reset();
                neural.hop_fill = 0;
                neural.context = [0; CONTEXT];
            }
            ModelState::Gmm(gmm) => gmm.reset(),
        }
        self.active = false;
        self.gate_closed_ms = 0;
        self.last_score = 0.0;
    }

    /// Score for one frame at the model's rate (see [`VadDecision::probability`]), or 0 while
    /// scoring is paused.
    fn score(&mut self, samples: &[i16], gate_open: bool, frame_ms: u32) -> f32 {
        if gate_open {
            self.gate_closed_ms = 0;
            if !self.active {
                self.resume();
            }
        } else if self.active {
            self.gate_closed_ms += frame_ms;
            if self.gate_closed_ms > INFERENCE_HANGOVER_MS {
                self.active = false;
                self.last_score = 0.0;
            }
        }
        match &mut self.model {
            ModelState::Neural(neural) => {
                if self.active {
                    if let Some(score) = neural.feed(samples) {
                        self.last_score = score;
                    }
                }
                neural.remember(samples);
            }
            ModelState::Gmm(gmm) if self.active => {
                // Frame lengths are checked against 10, 20 or 30 ms at 8 kHz when the detector
                // is built, so the GMM never refuses one.
                let speech = gmm.predict_8khz(samples).unwrap_or(false);
                self.last_score = if speech { 1.0 } else { 0.0 };
            }
            ModelState::Gmm(_) => {}
        }
        self.last_score
    }

    /// Starts scoring again after a pause. The network restarts from a clean state primed with
    /// the audio just before this frame; the GMM keeps the speech and noise models it had
    /// adapted, which describe the line, not the pause.
    fn resume(&mut self) {
        if let ModelState::Neural(neural) = &mut self.model {
            neural.detector.reset();
            neural.hop_fill = 0;
            let context = neural.context;
            // The replayed hops only rebuild the window; their scores describe the pause.
            let _ = neural.feed(&context);
        }
        self.last_score = 0.0;
        self.active = true;
    }
}

impl NeuralState {
    /// Appends `samples` to the partial hop, scoring every hop that fills up; returns the
    /// highest score, or `None` when no hop completed.
    fn feed(&mut self, mut samples: &[i16]) -> Option<f32> {
        let mut best: Option<f32> = None;
        while !samples.is_empty() {
            let take = (HOP - self.hop_fill).min(samples.len());
            self.hop[self.hop_fill..self.hop_fill + take].copy_from_slice(&samples[..take]);
            self.hop_fill += take;
            samples = &samples[take..];
            if self.hop_fill == HOP {
                self.hop_fill = 0;
                let score = self.detector.predict_i16(&self.hop);
                best = Some(best.map_or(score, |b| b.max(score)));
            }
        }
        best
    }

    /// Keeps the last [`CONTEXT`] samples for a later [`Scorer::resume`].
    fn remember(&mut self, samples: &[i16]) {
        if samples.len() >= CONTEXT {
            self.context
                .copy_from_slice(&samples[samples.len() - CONTEXT..]);
        } else {
            self.context.copy_within(samples.len().., 0);
            self.context[CONTEXT - samples.len()..].copy_from_slice(samples);
        }
    }
}

/// RMS level of `frame` in dBFS, floored at [`SILENCE_DBFS`].
fn energy_dbfs(frame: &[i16]) -> f32 {
    if frame.is_empty() {
        return SILENCE_DBFS;
    }
    let sum: i64 = frame.iter().map(|&s| i64::from(s) * i64::from(s)).sum();
    let mean_square = sum as f32 / (frame.len() as f32 * 32768.0 * 32768.0);
    (10.0 * mean_square.log10()).max(SILENCE_DBFS)
}

/// Minimum-statistics noise floor: the quietest frame energy within a sliding window of
/// frames, kept in a ring preallocated at construction.
#[derive(Debug, Clone)]
struct NoiseFloor {
    ring: Vec<f32>,
    pos: usize,
    filled: usize,
}

impl NoiseFloor {
    fn new(window_frames: usize) -> Self {
        Self {
            ring: vec![SILENCE_DBFS; window_frames],
            pos: 0,
            filled: 0,
        }
    }

    /// Records one frame's energy and returns the floor including it.
    fn push(&mut self, energy_dbfs: f32) -> f32 {
        self.ring[self.pos] = energy_dbfs;
        self.pos = (self.pos + 1) % self.ring.len();
        self.filled = (self.filled + 1).min(self.ring.len());
        self.ring[..self.filled]
            .iter()
            .copied()
            .fold(f32::INFINITY, f32::min)
    }

    fn reset(&mut self) {
        self.pos = 0;
        self.filled = 0;
    }
}

/// Timing of [`SpeechTracker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeechTrackerConfig {
    /// Speech must last this long without a non-speech frame before it counts as started.
    /// Filters coughs and clicks before interrupting the agent (barge-in).
    pub onset_ms: u32,
    /// Non-speech must last this long before speech counts as ended (endpointing): long enough
    /// to bridge pauses between words, short enough to answer promptly.
    pub end_silence_ms: u32,
}

impl Default for SpeechTrackerConfig {
    fn default() -> Self {
        Self {
            onset_ms: 200,
            end_silence_ms: 600,
        }
    }
}

/// How far before the first frame the network calls speech a speech run may begin: the loud
/// frames just before it count when they lead straight into it.
///
/// The neural model needs about two 16 ms hops of a new sound before its score crosses the
/// threshold: on the fixtures' utterances, read from silence over a phone line, the energy gate
/// opens one to two frames before its first speech frame. Those frames are the start of the
/// words, so the run is counted from them, and barge-in is decided 200 ms after the caller
/// started talking rather than 200 ms after the network became sure. (The GMM usually calls
/// the first loud frame of the words speech, so there is nothing to count back.) Loud frames
/// further back (noise, a door) do not stretch the run.
pub const MAX_ONSET_LEAD_MS: u64 = 40;

/// One frame as [`SpeechTracker`] reads it (see [`VadDecision::voice`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice {
    /// Below the energy gate.
    Quiet,
    /// Through the energy gate, but not (yet) scored as speech.
    Loud,
    /// Speech.
    Speech,
}

impl From<bool> for Voice {
    /// `true` is speech and `false` quiet, for callers without levels.
    fn from(is_speech: bool) -> Self {
        if is_speech {
            Voice::Speech
        } else {
            Voice::Quiet
        }
    }
}

/// A change in whether the caller is speaking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeechEvent {
    /// Speech began at stream time `at_ms`: the start of the sustained run, including up to
    /// [`MAX_ONSET_LEAD_MS`] of loud frames that led into it. Reported once the run has lasted
    /// `onset_ms`.
    SpeechStarted {
        /// Stream time in milliseconds at which the speech run began.
        at_ms: u64,
    },
    /// Speech ended at stream time `at_ms` (end of the last speech frame). Reported once
    /// `end_silence_ms` of non-speech has followed.
    SpeechEnded {
        /// Stream time in milliseconds at which the last speech frame ended.
        at_ms: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrackState {
    /// No speech; `loud_since` is the start of the current run of loud frames, if any.
    Silent {
        loud_since: Option<u64>,
    },
    Onset {
        since_ms: u64,
    },
    Speaking,
    Trailing {
        since_ms: u64,
    },
}

/// Debounces per-frame VAD decisions into speech start and end events.
#[derive(Debug, Clone)]
pub struct SpeechTracker {
    config: SpeechTrackerConfig,
    state: TrackState,
}

impl Default for SpeechTracker {
    fn default() -> Self {
        Self::new(SpeechTrackerConfig::default())
    }
}

impl SpeechTracker {
    /// A tracker with the given timing, starting in silence.
    pub fn new(config: SpeechTrackerConfig) -> Self {
        Self {
            config,
            state: TrackState::Silent { loud_since: None },
        }
    }

    /// The tracker's timing.
    pub fn config(&self) -> SpeechTrackerConfig {
        self.config
    }

    /// Whether speech has started and not yet ended.
    pub fn is_speaking(&self) -> bool {
        matches!(
            self.state,
            TrackState::Speaking | TrackState::Trailing { .. }
        )
    }

    /// Feeds the verdict for the frame covering `[at_ms, at_ms + duration_ms)`; returns the
    /// event this frame completes, if any. Frames must arrive in time order.
    pub fn update(
        &mut self,
        at_ms: u64,
        duration_ms: u32,
        voice: impl Into<Voice>,
    ) -> Option<SpeechEvent> {
        let voice = voice.into();
        let is_speech = voice == Voice::Speech;
        let end_ms = at_ms + u64::from(duration_ms);
        let (next, event) = match (self.state, is_speech) {
            (TrackState::Silent { loud_since }, false) => (
                TrackState::Silent {
                    loud_since: (voice == Voice::Loud).then(|| loud_since.unwrap_or(at_ms)),
                },
                None,
            ),
            (TrackState::Silent { loud_since }, true) => {
                let lead_from = at_ms.saturating_sub(MAX_ONSET_LEAD_MS);
                self.onset(loud_since.map_or(at_ms, |l| l.max(lead_from)), end_ms)
            }
            (TrackState::Onset { since_ms }, true) => self.onset(since_ms, end_ms),
            (TrackState::Onset { .. }, false) => (
                TrackState::Silent {
                    loud_since: (voice == Voice::Loud).then_some(at_ms),
                },
                None,
            ),
            (TrackState::Speaking, true) => (TrackState::Speaking, None),
            (TrackState::Speaking, false) => self.trailing(at_ms, end_ms),
            (TrackState::Trailing { .. }, true) => (TrackState::Speaking, None),
            (TrackState::Trailing { since_ms }, false) => self.trailing(since_ms, end_ms),
        };
        self.state = next;
        event
    }

    /// Closes an open speech segment at the end of the stream: returns `SpeechEnded` if speech
    /// had started and not ended, with the end at `at_ms` unless silence was already running.
    pub fn finish(&mut self, at_ms: u64) -> Option<SpeechEvent> {
        let event = match self.state {
            TrackState::Speaking => Some(SpeechEvent::SpeechEnded { at_ms }),
            TrackState::Trailing { since_ms } => Some(SpeechEvent::SpeechEnded { at_ms: since_ms }),
            TrackState::Silent { .. } | TrackState::Onset { .. } => None,
        };
        self.state = TrackState::Silent { loud_since: None };
        event
    }

    /// How long the caller has been silent after speech, at stream time `now_ms`; `None`
    /// unless speech has started and is now pausing.
    pub fn pause_ms(&self, now_ms: u64) -> Option<u64> {
        match self.state {
            TrackState::Trailing { since_ms } => Some(now_ms.saturating_sub(since_ms)),
            _ => None,
        }
    }

    /// Ends speech now, at the start of the pause it is in (an end of turn decided by other
    /// means than the silence's length); `None` if it is not pausing.
    pub fn end_pause(&mut self) -> Option<SpeechEvent> {
        let TrackState::Trailing { since_ms } = self.state else {
            return None;
        };
        self.state = TrackState::Silent { loud_since: None };
        Some(SpeechEvent::SpeechEnded { at_ms: since_ms })
    }

    /// Changes the silence that ends speech, from the next frame on (a pause judged not to
    /// end the turn waits longer).
    pub fn set_end_silence_ms(&mut self, end_silence_ms: u32) {
        self.config.end_silence_ms = end_silence_ms;
    }

    /// Returns to silence without emitting anything.
    pub fn reset(&mut self) {
        self.state = TrackState::Silent { loud_since: None };
    }

    fn onset(&self, since_ms: u64, end_ms: u64) -> (TrackState, Option<SpeechEvent>) {
        if end_ms.saturating_sub(since_ms) >= u64::from(self.config.onset_ms) {
            (
                TrackState::Speaking,
                Some(SpeechEvent::SpeechStarted { at_ms: since_ms }),
            )
        } else {
            (TrackState::Onset { since_ms }, None)
        }
    }

    fn trailing(&self, since_ms: u64, end_ms: u64) -> (TrackState, Option<SpeechEvent>) {
        if end_ms.saturating_sub(since_ms) >= u64::from(self.config.end_silence_ms) {
            (
                TrackState::Silent { loud_since: None },
                Some(SpeechEvent::SpeechEnded { at_ms: since_ms }),
            )
        } else {
            (TrackState::Trailing { since_ms }, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::pcm::downmix_stereo_i16;
    use std::f32::consts::PI;

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/audio")
            .join(name)
    }

    /// Both channels of the two-speaker fixture as separate 16 kHz mono signals.
    fn stereo_fixture() -> (Vec<i16>, Vec<i16>) {
        let mut reader = hound::WavReader::open(fixture("stereo_diarization.wav"))
            .expect("fixture stereo_diarization.wav is in shared/fixtures/audio");
        let spec = reader.spec();
        assert_eq!(
            (spec.channels, spec.sample_rate, spec.bits_per_sample),
            (2, 16_000, 16)
        );
        let samples: Vec<i16> = reader
            .samples::<i16>()
            .collect::<Result<_, _>>()
            .expect("fixture decodes");
        let left = samples.iter().step_by(2).copied().collect();
        let right = samples.iter().skip(1).step_by(2).copied().collect();
        (left, right)
    }

    const MODELS: [VadModel; 2] = [VadModel::Neural, VadModel::Gmm];

    fn detector(model: VadModel, rate: SampleRate) -> VoiceActivityDetector {
        let config = VadConfig {
            model,
            ..VadConfig::default()
        };
        VoiceActivityDetector::with_config(rate, FrameDuration::Ms20, config).expect("supported")
    }

    fn scores(model: VadModel, rate: SampleRate, signal: &[i16]) -> Vec<VadDecision> {
        let mut vad = detector(model, rate);
        signal
            .chunks_exact(vad.frame_len())
            .map(|f| vad.process(f).expect("frame sized"))
            .collect()
    }

    /// Deterministic white noise in [-amp, amp] (xorshift32, fixed seed).
    fn white_noise(len: usize, amp: i32) -> Vec<i16> {
        let mut state = 0x9E37_79B9u32;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                ((state % (2 * amp as u32 + 1)) as i32 - amp) as i16
            })
            .collect()
    }

    fn events(decisions: &[VadDecision], frame_ms: u32) -> Vec<SpeechEvent> {
        let mut tracker = SpeechTracker::default();
        let mut out: Vec<SpeechEvent> = decisions
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                tracker.update(i as u64 * u64::from(frame_ms), frame_ms, d.voice())
            })
            .collect();
        out.extend(tracker.finish(decisions.len() as u64 * u64::from(frame_ms)));
        out
    }

    #[test]
    fn detects_real_speech() {
        let (left, right) = stereo_fixture();
        let mut mono = vec![0i16; left.len()];
        let mut interleaved = Vec::with_capacity(2 * left.len());
        for (l, r) in left.iter().zip(&right) {
            interleaved.extend([*l, *r]);
        }
        downmix_stereo_i16(&interleaved, &mut mono).expect("same length");
        for model in MODELS {
            for (name, signal) in [("left", &left), ("right", &right), ("mix", &mono)] {
                let d = scores(model, SampleRate::Hz16000, signal);
                let speech = d.iter().filter(|d| d.is_speech).count();
                let share = speech as f64 / d.len() as f64;
                assert!(
                    share > 0.25,
                    "{model:?} {name}: only {share:.2} of frames are speech"
                );
                assert!(
                    matches!(
                        events(&d, 20).first(),
                        Some(SpeechEvent::SpeechStarted { .. })
                    ),
                    "{model:?} {name}: tracker never started"
                );
            }
        }
    }

    #[test]
    fn detects_real_speech_at_8k() {
        let (left, _) = stereo_fixture();
        let mut down =
            StreamResampler::new(SampleRate::Hz16000, SampleRate::Hz8000, FrameDuration::Ms20)
                .expect("supported");
        let mut narrow = vec![0i16; left.len() / 2];
        for (i, o) in left.chunks_exact(320).zip(narrow.chunks_exact_mut(160)) {
            down.process_i16(i, o).expect("frame sized");
        }
        for model in MODELS {
            let d = scores(model, SampleRate::Hz8000, &narrow);
            let share = d.iter().filter(|d| d.is_speech).count() as f64 / d.len() as f64;
            assert!(
                share > 0.25,
                "{model:?}: only {share:.2} of 8 kHz frames are speech"
            );
        }
    }

    #[test]
    fn silence_and_low_noise_are_not_speech() {
        for rate in [SampleRate::Hz16000, SampleRate::Hz8000] {
            let len = rate.samples_per_ms() * 5_000;
            let silence = vec![0i16; len];
            // About -50 dBFS RMS: a quiet line, far below speech level.
            let low_noise = white_noise(len, 200);
            // About -35 dBFS RMS: a loud hiss. Upsampled from 8 kHz, earshot alone scores
            // this as speech most of the time; the energy gate must reject it.
            let hiss = white_noise(len, 1_000);
            let hum: Vec<i16> = (0..len)
                .map(|n| (3000.0 * (2.0 * PI * 440.0 * n as f32 / rate.hz() as f32).sin()) as i16)
                .collect();
            for (name, signal) in [
                ("silence", &silence),
                ("low noise", &low_noise),
                ("hiss", &hiss),
                ("tone", &hum),
            ] {
                for model in MODELS {
                    let d = scores(model, rate, signal);
                    let speech = d.iter().filter(|d| d.is_speech).count();
                    assert_eq!(
                        speech, 0,
                        "{model:?} {rate:?} {name}: {speech} speech frames"
                    );
                    assert!(events(&d, 20).is_empty());
                }
            }
        }
    }

    #[test]
    fn inference_pauses_in_silence_and_resumes_for_speech() {
        let (left, _) = stereo_fixture();
        let mut signal = white_noise(32_000, 100);
        signal.extend_from_slice(&left);
        for model in MODELS {
            let d = scores(model, SampleRate::Hz16000, &signal);
            // Two seconds of quiet line: scoring stops after the hangover and scores read 0.
            let quiet = &d[..100];
            assert!(quiet[INFERENCE_HANGOVER_MS as usize / 20 + 1..]
                .iter()
                .all(|d| d.probability == 0.0 && !d.is_speech));
            let ev = events(&d, 20);
            assert_eq!(ev.len(), 2, "{model:?}: {ev:?}");
            let SpeechEvent::SpeechStarted { at_ms } = ev[0] else {
                panic!("{model:?}: expected a start first, got {ev:?}");
            };
            assert!(
                (2_000..3_000).contains(&at_ms),
                "{model:?}: speech starts at {at_ms}"
            );
        }
    }

    #[test]
    fn reset_makes_a_detector_as_good_as_new() {
        let (left, _) = stereo_fixture();
        for model in MODELS {
            let mut used = detector(model, SampleRate::Hz8000);
            // Noise, then speech: both leave state behind in the model and the gate.
            for f in white_noise(8_000, 3_000)
                .chunks_exact(160)
                .chain(left.chunks_exact(160).skip(100).take(50))
            {
                used.process(f).expect("frame sized");
            }
            used.reset();
            let mut fresh = detector(model, SampleRate::Hz8000);
            for f in left.chunks_exact(160).take(100) {
                assert_eq!(
                    used.process(f).expect("frame sized"),
                    fresh.process(f).expect("frame sized"),
                    "{model:?}"
                );
            }
        }
    }

    #[test]
    fn gate_reports_levels() {
        let mut vad = VoiceActivityDetector::new(SampleRate::Hz16000, FrameDuration::Ms20)
            .expect("supported");
        let d = vad.process(&[0; 320]).expect("frame sized");
        assert_eq!(d.energy_dbfs, SILENCE_DBFS);
        // A full-scale square wave is 0 dBFS.
        let square: Vec<i16> = (0..320)
            .map(|n| if n % 2 == 0 { i16::MAX } else { -i16::MAX })
            .collect();
        let d = vad.process(&square).expect("frame sized");
        assert!(d.energy_dbfs.abs() < 0.01, "{}", d.energy_dbfs);
        assert_eq!(
            d.noise_floor_dbfs, SILENCE_DBFS,
            "the silent frame is still in the window"
        );
    }

    #[test]
    fn speech_burst_then_silence_gives_one_start_end_pair() {
        let (left, _) = stereo_fixture();
        // The fixture's speech, then 1 s of silence.
        let mut signal = left.clone();
        signal.extend(std::iter::repeat_n(0i16, 16_000));
        for model in MODELS {
            let d = scores(model, SampleRate::Hz16000, &signal);
            let mut tracker = SpeechTracker::default();
            let mut got = Vec::new();
            for (i, dec) in d.iter().enumerate() {
                got.extend(tracker.update(i as u64 * 20, 20, dec.voice()));
            }
            assert_eq!(got.len(), 2, "{model:?}: {got:?}");
            let (
                SpeechEvent::SpeechStarted { at_ms: start },
                SpeechEvent::SpeechEnded { at_ms: end },
            ) = (got[0], got[1])
            else {
                panic!("{model:?}: expected start then end, got {got:?}");
            };
            let speech_end_ms = (left.len() / 16) as u64;
            assert!(
                start < 1_000,
                "{model:?}: speech starts early in the fixture, got {start}"
            );
            assert!(
                end > start + 2_000 && end <= speech_end_ms + 100,
                "{model:?}: end {end}"
            );
            assert!(!tracker.is_speaking());
        }
    }

    #[test]
    fn tracker_onset_and_endpoint_timing() {
        let mut t = SpeechTracker::default();
        let mut events = Vec::new();
        // 100 ms of speech, a blip: no start.
        for i in 0..5 {
            events.extend(t.update(i * 20, 20, true));
        }
        events.extend(t.update(100, 20, false));
        assert!(events.is_empty());
        // Sustained speech from 120 ms: start reported at the frame ending at 320 ms.
        for i in 6..16 {
            let e = t.update(i * 20, 20, true);
            if i < 15 {
                assert_eq!(e, None, "frame {i}");
            } else {
                assert_eq!(e, Some(SpeechEvent::SpeechStarted { at_ms: 120 }));
            }
        }
        // A 400 ms pause does not end speech.
        for i in 16..36 {
            assert_eq!(t.update(i * 20, 20, false), None);
        }
        assert!(t.is_speaking());
        assert_eq!(t.update(720, 20, true), None);
        // Silence from 740 ms ends speech once 600 ms have passed (frame ending at 1340 ms).
        for i in 37..67 {
            let e = t.update(i * 20, 20, false);
            if i < 66 {
                assert_eq!(e, None, "frame {i}");
            } else {
                assert_eq!(e, Some(SpeechEvent::SpeechEnded { at_ms: 740 }));
            }
        }
        assert!(!t.is_speaking());
        assert_eq!(t.finish(2_000), None);
    }

    #[test]
    fn onset_counts_the_loud_frames_that_lead_into_speech() {
        let run = |frames: &[(u64, Voice)]| {
            let mut t = SpeechTracker::default();
            let mut events: Vec<(u64, SpeechEvent)> = Vec::new();
            for &(at, voice) in frames {
                events.extend(t.update(at, 20, voice).map(|e| (at + 20, e)));
            }
            events
        };
        // `lead`, then 240 ms of speech from `start`.
        let then_speech = |lead: Vec<(u64, Voice)>, start: u64| -> Vec<(u64, Voice)> {
            let speech = (0..12).map(|i| (start + i * 20, Voice::Speech));
            lead.into_iter().chain(speech).collect()
        };
        // Two loud frames, then speech: the run starts with the loud frames and is decided
        // 200 ms after them.
        let frames = then_speech(
            vec![(0, Voice::Quiet), (20, Voice::Loud), (40, Voice::Loud)],
            60,
        );
        assert_eq!(
            run(&frames).first(),
            Some(&(220, SpeechEvent::SpeechStarted { at_ms: 20 }))
        );
        // A long loud stretch (noise) before speech adds no more than the lead.
        let frames = then_speech((0..20).map(|i| (i * 20, Voice::Loud)).collect(), 400);
        assert_eq!(
            run(&frames).first(),
            Some(&(
                400 - MAX_ONSET_LEAD_MS + 200,
                SpeechEvent::SpeechStarted {
                    at_ms: 400 - MAX_ONSET_LEAD_MS
                }
            ))
        );
        // A quiet frame between them breaks the lead.
        let frames = then_speech(
            vec![(0, Voice::Loud), (20, Voice::Quiet), (40, Voice::Loud)],
            60,
        );
        assert_eq!(
            run(&frames).first(),
            Some(&(240, SpeechEvent::SpeechStarted { at_ms: 40 }))
        );
        // Without levels (plain booleans) nothing is counted before the first speech frame.
        let mut t = SpeechTracker::default();
        let events: Vec<_> = (0..10).filter_map(|i| t.update(i * 20, 20, true)).collect();
        assert_eq!(events, vec![SpeechEvent::SpeechStarted { at_ms: 0 }]);
        // Loud frames alone never start speech.
        assert!(run(&(0..50).map(|i| (i * 20, Voice::Loud)).collect::<Vec<_>>()).is_empty());
    }

    #[test]
    fn tracker_finish_closes_open_speech() {
        let mut t = SpeechTracker::new(SpeechTrackerConfig {
            onset_ms: 20,
            end_silence_ms: 600,
        });
        assert_eq!(
            t.update(0, 20, true),
            Some(SpeechEvent::SpeechStarted { at_ms: 0 })
        );
        assert_eq!(t.finish(500), Some(SpeechEvent::SpeechEnded { at_ms: 500 }));
        t.update(1000, 20, true);
        t.update(1020, 20, false);
        assert_eq!(
            t.finish(1100),
            Some(SpeechEvent::SpeechEnded { at_ms: 1020 })
        );
    }

    #[test]
    fn wrong_frame_length_is_an_error() {
        let mut vad = VoiceActivityDetector::new(SampleRate::Hz16000, FrameDuration::Ms10)
            .expect("supported");
        assert!(vad.process(&[0; 320]).is_err());
        assert!(vad.process(&[0; 160]).is_ok());
    }
}
