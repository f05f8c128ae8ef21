//! Session configuration: the plain struct a transport fills before it starts a
//! [`CallSession`](super::CallSession). It holds the agent profile (what the agent says and how),
//! the audio formats on both sides of the transport, and the timing of turn taking, barge-in,
//! pacing and timeouts. Defaults follow the design: 600 ms endpoint silence, 200 ms barge-in
//! sustain, 10 minutes of idle time.

use std::time::Duration;

use crate::audio::{SampleRate, VadModel};
use crate::engine::{SttMode, ToolSpec};

use super::error::SessionError;

/// Who the agent is: prompt, voice and model settings, tools.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfile {
    /// The system prompt, sent first in every model request.
    pub system_prompt: String,
    /// Spoken as soon as the session starts; empty for no greeting.
    pub first_message: String,
    /// The TTS provider's voice id (`default` for its default voice).
    pub voice: String,
    /// ISO 639-1 code for recognition and synthesis; `None` lets the engines decide.
    pub language: Option<String>,
    /// Model name as the provider knows it; `None` is the provider's default.
    pub model: Option<String>,
    /// The speech provider's model (`ttsModel`); `None` is its default.
    pub tts_model: Option<String>,
    /// Sampling temperature.
    pub temperature: f32,
    /// Upper bound on tokens per model answer.
    pub max_tokens: u32,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Model rounds per reply, tool rounds included (at least 1).
    pub max_steps: u32,
    /// How the caller's turns are recognised: [`SttMode::Fast`] decodes greedily (on tiny.en
    /// for an English agent), [`SttMode::Accurate`] with beam search; vendors ignore it. The
    /// server sets it from `engines.live_recognition` (`fast` unless configured).
    pub recognition: SttMode,
    /// The agent's own turn taking, over the transport's defaults.
    pub turn: TurnPreferences,
}

/// How the end of a caller's turn is decided.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum TurnDetection {
    /// Silence for [`TurnTiming::endpoint_silence_ms`] ends the turn.
    #[default]
    Silence,
    /// The end-of-turn model judges each pause (see [`SmartTurn`]).
    Smart(SmartTurn),
}

/// Semantic end of turn: when the caller has paused for `pause_ms`, the session's end-of-turn
/// model judges the turn from how it sounds. At `complete_threshold` or above, the turn ends
/// at the pause; below it, the caller may stay silent for up to `incomplete_silence_ms` before
/// the turn ends. Without a verdict in time (no model, a saturated machine) the silence timer,
/// [`TurnTiming::endpoint_silence_ms`], decides as it does without the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmartTurn {
    pub pause_ms: u32,
    pub complete_threshold: f32,
    pub incomplete_silence_ms: u32,
}

impl Default for SmartTurn {
    fn default() -> Self {
        Self {
            pause_ms: 200,
            complete_threshold: 0.5,
            incomplete_silence_ms: 1_500,
        }
    }
}

/// Turn-taking settings an agent may set for itself; `None` keeps the session's default.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TurnPreferences {
    /// Silence after speech that ends the caller's turn (see
    /// [`TurnTiming::endpoint_silence_ms`]).
    pub endpoint_silence_ms: Option<u32>,
    /// Caller speech over the agent that interrupts it (see
    /// [`TurnTiming::barge_in_sustain_ms`]).
    pub barge_in_sustain_ms: Option<u32>,
    /// How the end of a turn is decided (see [`TurnTiming::detection`]).
    pub detection: Option<TurnDetection>,
    /// When a batch recognizer starts on a paused turn (see
    /// [`TurnTiming::early_recognition_ms`]); set from the server's configuration.
    pub early_recognition_ms: Option<u32>,
}

impl Default for AgentProfile {
    fn default() -> Self {
        Self {
            system_prompt: "You are a helpful voice assistant. Answer briefly.".to_owned(),
            first_message: String::new(),
            voice: "default".to_owned(),
            language: None,
            model: None,
            tts_model: None,
            temperature: 0.7,
            max_tokens: 256,
            tools: Vec::new(),
            max_steps: 4,
            recognition: SttMode::Accurate,
            turn: TurnPreferences::default(),
        }
    }
}

/// Audio encoding on one side of the transport. Every format is mono with 20 ms frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    /// G.711 mu-law at 8 kHz, 160 bytes per 20 ms: Twilio media streams, both directions.
    Mulaw8k,
    /// Signed 16-bit little-endian PCM at the given rate: the direct WebSocket.
    Pcm16 {
        /// Sample rate (8, 16, 24 or 48 kHz).
        rate: SampleRate,
    },
    /// One Opus packet of 20 ms per message, decoding to the given rate.
    Opus {
        /// Sample rate of the decoded (or encoded) PCM.
        rate: SampleRate,
    },
}

impl AudioFormat {
    /// The sample rate of the PCM behind the encoding.
    pub fn sample_rate(self) -> SampleRate {
        match self {
            AudioFormat::Mulaw8k => SampleRate::Hz8000,
            AudioFormat::Pcm16 { rate } | AudioFormat::Opus { rate } => rate,
        }
    }
}

/// How the session learns what the caller has actually heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaybackAcks {
    /// The transport echoes every [`SessionOutput::Mark`](super::SessionOutput::Mark) back as
    /// [`PlaybackMark`](super::PlaybackMark) once the audio before it has played (Twilio's
    /// `mark` semantics). Marks still outstanding when the session sends `Clear` count as
    /// discarded.
    Marks,
    /// No acknowledgements: audio counts as played at real-time pace from the first frame sent.
    /// For transports whose client cannot report playback.
    Clock,
}

/// Echo suppression for barge-in on transports without network echo cancellation (the direct
/// socket, where a laptop's speakers feed its microphone).
///
/// Method: the level of every agent frame sent is remembered for `window_ms` (long enough to
/// cover the pacing lead and the client's playout buffer). While any was sent in that window,
/// a caller frame counts towards barge-in only if its level exceeds the loudest recent agent
/// frame minus `echo_loss_db`. The echo of our own audio comes back at least that much
/// quieter (a browser's echo canceller alone removes far more), while a caller talking into
/// the microphone is about as loud as the agent or louder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EchoGate {
    /// Attenuation the echo path is assumed to add at least, in dB.
    pub echo_loss_db: f32,
    /// How long each agent frame's level is considered, in ms.
    pub window_ms: u32,
}

impl Default for EchoGate {
    fn default() -> Self {
        Self {
            echo_loss_db: 12.0,
            window_ms: 800,
        }
    }
}

/// Turn taking: endpointing and barge-in timing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnTiming {
    /// Silence after speech that ends the caller's turn.
    pub endpoint_silence_ms: u32,
    /// Speech must last this long before it counts as the start of a caller turn.
    pub speech_onset_ms: u32,
    /// Caller speech over the agent must last this long before it interrupts.
    pub barge_in_sustain_ms: u32,
    /// Audio before the detected onset also sent to the recognizer, so the first syllable is
    /// not clipped.
    pub stt_preroll_ms: u32,
    /// The VAD's model: the GMM on a telephone line (8 kHz), where it reads the line's own
    /// samples, and the neural network on wideband audio.
    pub vad_model: VadModel,
    /// VAD speech threshold (see [`crate::audio::vad::DEFAULT_THRESHOLD`]).
    pub vad_threshold: f32,
    /// Silence alone, or the end-of-turn model with the silence as its fallback.
    pub detection: TurnDetection,
    /// A caller's pause this long starts the recognition of the turn so far, for a recognizer
    /// that [starts early](crate::engine::SpeechToText::starts_early), so that the end of the
    /// turn only waits for what is left of it; 0 never starts early.
    pub early_recognition_ms: u32,
}

impl TurnTiming {
    /// These timings with the agent's own preferences over them.
    pub fn with_preferences(self, preferences: TurnPreferences) -> Self {
        Self {
            endpoint_silence_ms: preferences
                .endpoint_silence_ms
                .unwrap_or(self.endpoint_silence_ms),
            barge_in_sustain_ms: preferences
                .barge_in_sustain_ms
                .unwrap_or(self.barge_in_sustain_ms),
            detection: preferences.detection.unwrap_or(self.detection),
            early_recognition_ms: preferences
                .early_recognition_ms
                .unwrap_or(self.early_recognition_ms),
            ..self
        }
    }
}

impl Default for TurnTiming {
    fn default() -> Self {
        Self {
            endpoint_silence_ms: 600,
            speech_onset_ms: 200,
            barge_in_sustain_ms: 200,
            stt_preroll_ms: 300,
            vad_model: VadModel::Neural,
            vad_threshold: crate::audio::vad::DEFAULT_THRESHOLD,
            detection: TurnDetection::Silence,
            early_recognition_ms: 200,
        }
    }
}

/// How agent audio is paced to the transport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pacing {
    /// How far ahead of real time audio may be sent. Enough to ride out network jitter; small
    /// enough that a `Clear` has little to throw away and a late barge-in is still accurate.
    pub lead_ms: u32,
    /// Silence inserted after each sentence, in ms (0 for none).
    pub sentence_gap_ms: u32,
    /// After the last audio of a reply has played by the clock, how long to wait for its
    /// final mark before treating it as played anyway.
    pub mark_grace_ms: u32,
    /// How playback is acknowledged.
    pub acks: PlaybackAcks,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            lead_ms: 300,
            sentence_gap_ms: 0,
            mark_grace_ms: 2_000,
            acks: PlaybackAcks::Marks,
        }
    }
}

/// Deadlines for the engines. A stage that misses one fails the turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageTimeouts {
    /// End of utterance to final transcript.
    pub stt: Duration,
    /// Longest silence of the model's stream (first token included).
    pub llm: Duration,
    /// Longest wait for synthesized audio of a sentence.
    pub tts: Duration,
    /// One tool call.
    pub tool: Duration,
    /// Knowledge retrieval before the model. Missing it does not fail the turn: the model
    /// answers without the knowledge rather than keep the caller waiting.
    pub retrieval: Duration,
}

impl Default for StageTimeouts {
    fn default() -> Self {
        Self {
            stt: Duration::from_secs(10),
            llm: Duration::from_secs(15),
            tts: Duration::from_secs(10),
            tool: Duration::from_secs(10),
            retrieval: Duration::from_millis(500),
        }
    }
}

/// Everything a transport decides about one session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// Identifier reported to the observer and in events (the call or session id).
    pub session_id: String,
    /// The agent.
    pub agent: AgentProfile,
    /// Format of [`AudioIn`](super::AudioIn) payloads.
    pub input: AudioFormat,
    /// Format of [`SessionOutput::Audio`](super::SessionOutput::Audio) payloads.
    pub output: AudioFormat,
    /// Endpointing and barge-in timing.
    pub turn: TurnTiming,
    /// Output pacing and playback acknowledgement.
    pub pacing: Pacing,
    /// Engine deadlines.
    pub timeouts: StageTimeouts,
    /// Echo suppression for barge-in; `None` trusts the caller's VAD as is.
    pub echo_gate: Option<EchoGate>,
    /// The session ends after this long without caller audio.
    pub idle_timeout: Duration,
    /// Spoken (synthesized) when a turn fails.
    pub apology_text: String,
}

impl SessionConfig {
    /// A Twilio media-stream session: mu-law 8 kHz both ways, the GMM VAD on the line's
    /// samples, marks echoed by Twilio, no echo gate (the phone network cancels echo).
    pub fn twilio(session_id: impl Into<String>, agent: AgentProfile) -> Self {
        let turn = TurnTiming {
            vad_model: VadModel::Gmm,
            ..TurnTiming::default()
        }
        .with_preferences(agent.turn);
        Self {
            session_id: session_id.into(),
            agent,
            input: AudioFormat::Mulaw8k,
            output: AudioFormat::Mulaw8k,
            turn,
            pacing: Pacing::default(),
            timeouts: StageTimeouts::default(),
            echo_gate: None,
            idle_timeout: Duration::from_secs(600),
            apology_text: "Sorry, I had a problem there. Could you say that again?".to_owned(),
        }
    }

    /// A direct WebSocket session: PCM16 at `rate` both ways, the neural VAD, echo gate on.
    /// The client is expected to echo marks when the audio before them has played; set
    /// [`Pacing::acks`] to [`PlaybackAcks::Clock`] if it cannot.
    pub fn direct(session_id: impl Into<String>, agent: AgentProfile, rate: SampleRate) -> Self {
        Self {
            input: AudioFormat::Pcm16 { rate },
            output: AudioFormat::Pcm16 { rate },
            turn: TurnTiming::default().with_preferences(agent.turn),
            echo_gate: Some(EchoGate::default()),
            ..Self::twilio(session_id, agent)
        }
    }

    /// Checks every documented limit.
    pub fn validate(&self) -> Result<(), SessionError> {
        let bad = |m: &str| Err(SessionError::InvalidConfig(m.to_owned()));
        if self.agent.max_steps == 0 {
            return bad("agent.max_steps must be at least 1");
        }
        if !(0.0..=2.0).contains(&self.agent.temperature) {
            return bad("agent.temperature must be within 0-2");
        }
        if self.agent.max_tokens == 0 {
            return bad("agent.max_tokens must be positive");
        }
        if !(100..=10_000).contains(&self.turn.endpoint_silence_ms) {
            return bad("turn.endpoint_silence_ms must be within 100-10000");
        }
        if let TurnDetection::Smart(smart) = self.turn.detection {
            if !(60..=2_000).contains(&smart.pause_ms) {
                return bad("turn.detection.pause_ms must be within 60-2000");
            }
            if !(0.0..=1.0).contains(&smart.complete_threshold) {
                return bad("turn.detection.complete_threshold must be within 0-1");
            }
            if !(100..=10_000).contains(&smart.incomplete_silence_ms) {
                return bad("turn.detection.incomplete_silence_ms must be within 100-10000");
            }
        }
        if !(20..=2_000).contains(&self.turn.speech_onset_ms) {
            return bad("turn.speech_onset_ms must be within 20-2000");
        }
        if !(20..=2_000).contains(&self.turn.barge_in_sustain_ms) {
            return bad("turn.barge_in_sustain_ms must be within 20-2000");
        }
        if self.turn.stt_preroll_ms > 500 {
            return bad("turn.stt_preroll_ms must be at most 500");
        }
        if !(0.0..=1.0).contains(&self.turn.vad_threshold) {
            return bad("turn.vad_threshold must be within 0-1");
        }
        if !(20..=5_000).contains(&self.pacing.lead_ms) {
            return bad("pacing.lead_ms must be within 20-5000");
        }
        if self.idle_timeout.is_zero() {
            return bad("idle_timeout must be positive");
        }
        if [
            self.timeouts.stt,
            self.timeouts.llm,
            self.timeouts.tts,
            self.timeouts.tool,
        ]
        .iter()
        .any(Duration::is_zero)
        {
            return bad("stage timeouts must be positive");
        }
        if self.apology_text.trim().is_empty() {
            return bad("apology_text must not be empty");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_turn_preferences_override_each_transports_defaults() {
        let agent = AgentProfile {
            turn: TurnPreferences {
                endpoint_silence_ms: Some(900),
                ..TurnPreferences::default()
            },
            ..AgentProfile::default()
        };
        let call = SessionConfig::twilio("CA1", agent.clone());
        assert_eq!(call.turn.endpoint_silence_ms, 900);
        assert_eq!(call.turn.barge_in_sustain_ms, 200);
        assert_eq!(call.turn.vad_model, VadModel::Gmm);
        let direct = SessionConfig::direct(
            "s1",
            AgentProfile {
                turn: TurnPreferences {
                    barge_in_sustain_ms: Some(350),
                    ..TurnPreferences::default()
                },
                ..agent
            },
            SampleRate::Hz48000,
        );
        assert_eq!(direct.turn.endpoint_silence_ms, 600);
        assert_eq!(direct.turn.barge_in_sustain_ms, 350);
        assert_eq!(direct.turn.vad_model, VadModel::Neural);
        call.validate().expect("valid");
        direct.validate().expect("valid");
    }

    #[test]
    fn defaults_follow_the_design_and_validate() {
        let c = SessionConfig::twilio("CA1", AgentProfile::default());
        assert_eq!(c.turn.endpoint_silence_ms, 600);
        assert_eq!(c.turn.barge_in_sustain_ms, 200);
        assert_eq!(c.idle_timeout, Duration::from_secs(600));
        c.validate().expect("defaults are valid");
        let d = SessionConfig::direct("s1", AgentProfile::default(), SampleRate::Hz16000);
        assert!(d.echo_gate.is_some());
        d.validate().expect("defaults are valid");
    }

    #[test]
    fn limits_are_enforced() {
        let mut c = SessionConfig::twilio("CA1", AgentProfile::default());
        c.agent.max_steps = 0;
        assert!(matches!(c.validate(), Err(SessionError::InvalidConfig(_))));
    }
}
