//! [`BargeIn`]: the session's watch over the caller's voice activity while the agent is
//! talking. It decides when the caller has interrupted: speech sustained for the configured
//! time (default 200 ms), after the optional echo gate (see [`EchoGate`]) has dropped frames
//! that are only the agent's own voice coming back.
//!
//! The session runs it on each caller frame as it reads the frame, not as a child actor: the
//! decision is made, and acted on, while the session handles the `AudioIn` that completed it.
//! A watcher actor put two mailbox hops (the frames to it, its decision back) on the one path
//! whose whole budget after the sustain is a few tens of milliseconds, and under load each
//! hop waits for every other task queued on the arbiter.

use std::collections::VecDeque;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use crate::audio::{SpeechEvent, SpeechTracker, SpeechTrackerConfig, Voice};

use super::audio_in::{FRAME_MS, RING_MS};
use super::config::EchoGate;

/// Most agent frame levels remembered for the echo gate (10 s of 20 ms frames).
const MAX_LEVELS: usize = 500;

/// A pause this long ends a run of the caller's speech (see [`BargeInDetected::speech_began_ms`]).
const RUN_GAP_MS: u64 = 200;

/// How far before its decision an interruption's speech is looked for: the length of the
/// session's audio ring, which is as far back as the recognizer can be given audio.
pub const MAX_LOOKBACK_MS: u64 = RING_MS as u64;

/// The level of an agent audio frame just sent, for the session's echo gate. Playback sends
/// it only when the session has a gate.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct AgentAudioLevel {
    /// RMS level in dBFS.
    pub level_dbfs: f32,
    /// When the frame was sent.
    pub sent_at: Instant,
}

/// One caller frame's voice activity, heard while the agent talks.
#[derive(Debug, Clone, Copy)]
pub struct CallerVoice {
    /// Stream time of the frame's start, in ms.
    pub start_ms: u64,
    /// What the VAD heard in the frame.
    pub voice: Voice,
    /// The frame's level in dBFS.
    pub energy_dbfs: f32,
}

/// The caller interrupted reply `response_id`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BargeInDetected {
    /// The interrupted reply.
    pub response_id: u64,
    /// Stream time at which the interrupting speech began.
    pub onset_ms: u64,
    /// Stream time at which the sustain was complete (end of the deciding frame).
    pub decided_ms: u64,
    /// Stream time at which the caller's voice began, as the VAD heard it: the start of its
    /// run of speech that holds the onset, at most [`MAX_LOOKBACK_MS`] before the decision.
    /// Earlier than `onset_ms` when the first words were too quiet to pass the echo gate
    /// (a caller resuming softly as the agent starts): they count as the caller's turn,
    /// though not as evidence of an interruption.
    pub speech_began_ms: u64,
    /// When the decision was made.
    pub decided_at: Instant,
}

/// Decides interruptions (see the module docs).
pub struct BargeIn {
    tracker: SpeechTracker,
    /// The reply that may be interrupted, while the agent talks.
    armed: Option<u64>,
    gate: Option<EchoGate>,
    levels: VecDeque<(Instant, f32)>,
    /// Where the caller's latest run of speech began, gate aside.
    run_since: Option<u64>,
    /// Where the quiet after that run began, while it is quiet.
    quiet_since: Option<u64>,
}

impl BargeIn {
    /// A detector requiring `sustain_ms` of speech, with an optional echo gate.
    pub fn new(sustain_ms: u32, gate: Option<EchoGate>) -> Self {
        Self {
            tracker: SpeechTracker::new(SpeechTrackerConfig {
                onset_ms: sustain_ms,
                end_silence_ms: sustain_ms,
            }),
            armed: None,
            // Only a gate reads agent levels: a call without one (Twilio) keeps no room for them.
            levels: VecDeque::with_capacity(if gate.is_some() { MAX_LEVELS } else { 0 }),
            gate,
            run_since: None,
            quiet_since: None,
        }
    }

    /// The VAD's verdict on every caller frame, in stream order, whoever is talking: where
    /// the caller's speech began is known when an interruption is decided, even if its first
    /// frames came before the agent's audio or did not pass the gate.
    pub fn speech(&mut self, start_ms: u64, is_speech: bool) {
        if is_speech {
            self.quiet_since = None;
            self.run_since.get_or_insert(start_ms);
        } else {
            let quiet_since = *self.quiet_since.get_or_insert(start_ms);
            if start_ms + u64::from(FRAME_MS) - quiet_since >= RUN_GAP_MS {
                self.run_since = None;
            }
        }
    }

    /// Whether agent levels matter: only an echo gate reads them.
    pub fn wants_agent_levels(&self) -> bool {
        self.gate.is_some()
    }

    /// The agent is about to talk (or think) in reply `response_id`: start watching.
    pub fn arm(&mut self, response_id: u64) {
        if self.armed != Some(response_id) {
            self.tracker.reset();
        }
        self.armed = Some(response_id);
    }

    /// The agent stopped talking: stop watching.
    pub fn disarm(&mut self) {
        self.armed = None;
        self.tracker.reset();
        self.levels.clear();
    }

    /// An agent frame at `level_dbfs` was sent at `sent_at`.
    pub fn agent_level(&mut self, level_dbfs: f32, sent_at: Instant) {
        if self.gate.is_none() {
            return;
        }
        if self.levels.len() == MAX_LEVELS {
            self.levels.pop_front();
        }
        self.levels.push_back((sent_at, level_dbfs));
    }

    /// One caller frame, in stream order, heard at `now`: the interruption it completes, if
    /// any. A decision disarms the watch until the next [`BargeIn::arm`].
    pub fn hear(&mut self, frame: CallerVoice, now: Instant) -> Option<BargeInDetected> {
        let response_id = self.armed?;
        // Frames no louder than the agent's own echo count as quiet.
        let counted = if frame.voice == Voice::Quiet || self.passes_gate(frame.energy_dbfs, now) {
            frame.voice
        } else {
            Voice::Quiet
        };
        match self.tracker.update(frame.start_ms, FRAME_MS, counted) {
            Some(SpeechEvent::SpeechStarted { at_ms }) => {
                self.armed = None;
                self.tracker.reset();
                let decided_ms = frame.start_ms + u64::from(FRAME_MS);
                let speech_began_ms = self
                    .run_since
                    .unwrap_or(at_ms)
                    .max(decided_ms.saturating_sub(MAX_LOOKBACK_MS))
                    .min(at_ms);
                Some(BargeInDetected {
                    response_id,
                    onset_ms: at_ms,
                    decided_ms,
                    speech_began_ms,
                    decided_at: now,
                })
            }
            _ => None,
        }
    }

    /// Whether a caller frame at `energy_dbfs` is louder than the echo of recent agent audio
    /// can be.
    fn passes_gate(&mut self, energy_dbfs: f32, now: Instant) -> bool {
        let Some(gate) = self.gate else {
            return true;
        };
        let window = Duration::from_millis(u64::from(gate.window_ms));
        while self
            .levels
            .front()
            .is_some_and(|(at, _)| now.saturating_duration_since(*at) > window)
        {
            self.levels.pop_front();
        }
        match self.levels.iter().map(|(_, l)| *l).reduce(f32::max) {
            Some(loudest) => energy_dbfs > loudest - gate.echo_loss_db,
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(start_ms: u64, voice: Voice, energy_dbfs: f32) -> CallerVoice {
        CallerVoice {
            start_ms,
            voice,
            energy_dbfs,
        }
    }

    /// Feeds `frames` frames of `voice` from stream time `from_ms`; the first decision.
    fn feed(
        watch: &mut BargeIn,
        from_ms: u64,
        frames: u64,
        voice: Voice,
        energy_dbfs: f32,
    ) -> Option<BargeInDetected> {
        let now = Instant::now();
        (0..frames)
            .filter_map(|i| watch.hear(frame(from_ms + i * 20, voice, energy_dbfs), now))
            .next()
    }

    #[test]
    fn speech_sustained_for_the_configured_time_interrupts_the_armed_reply_once() {
        let mut watch = BargeIn::new(200, None);
        watch.arm(7);
        assert_eq!(feed(&mut watch, 0, 9, Voice::Speech, -20.0), None);
        let decided = watch
            .hear(frame(180, Voice::Speech, -20.0), Instant::now())
            .expect("the tenth frame of speech completes 200 ms");
        assert_eq!(decided.response_id, 7);
        assert_eq!((decided.onset_ms, decided.decided_ms), (0, 200));
        // Decided once: the watch is disarmed until the next reply.
        assert_eq!(feed(&mut watch, 200, 20, Voice::Speech, -20.0), None);
    }

    #[test]
    fn a_pause_restarts_the_sustain_and_an_unarmed_watch_decides_nothing() {
        let mut watch = BargeIn::new(200, None);
        assert_eq!(feed(&mut watch, 0, 20, Voice::Speech, -20.0), None);
        watch.arm(1);
        assert_eq!(feed(&mut watch, 400, 8, Voice::Speech, -20.0), None);
        assert_eq!(feed(&mut watch, 560, 1, Voice::Quiet, -70.0), None);
        assert_eq!(feed(&mut watch, 580, 9, Voice::Speech, -20.0), None);
        let decided = feed(&mut watch, 760, 1, Voice::Speech, -20.0).expect("sustained again");
        assert_eq!(decided.onset_ms, 580);
        watch.arm(2);
        watch.disarm();
        assert_eq!(feed(&mut watch, 800, 20, Voice::Speech, -20.0), None);
    }

    #[test]
    fn the_echo_gate_ignores_caller_frames_no_louder_than_the_agents_echo() {
        let mut watch = BargeIn::new(200, Some(EchoGate::default()));
        assert!(watch.wants_agent_levels());
        watch.arm(1);
        watch.agent_level(-10.0, Instant::now());
        // 12 dB below the agent's -10 dBFS is echo; louder is a caller.
        assert_eq!(feed(&mut watch, 0, 30, Voice::Speech, -25.0), None);
        assert!(feed(&mut watch, 600, 10, Voice::Speech, -15.0).is_some());
        assert!(!BargeIn::new(200, None).wants_agent_levels());
    }

    /// Frames heard by both the run tracking and the watch, as the session hears them.
    fn speak(
        watch: &mut BargeIn,
        from_ms: u64,
        frames: u64,
        energy_dbfs: f32,
    ) -> Option<BargeInDetected> {
        let now = Instant::now();
        (0..frames)
            .filter_map(|i| {
                let start = from_ms + i * 20;
                watch.speech(start, true);
                watch.hear(frame(start, Voice::Speech, energy_dbfs), now)
            })
            .next()
    }

    #[test]
    fn the_caller_turn_starts_where_the_voice_began_not_where_it_passed_the_gate() {
        let mut watch = BargeIn::new(200, Some(EchoGate::default()));
        watch.arm(1);
        watch.agent_level(-10.0, Instant::now());
        // Soft words first (under the gate), then the caller's full voice.
        assert_eq!(speak(&mut watch, 1_000, 20, -25.0), None);
        let decided = speak(&mut watch, 1_400, 10, -15.0).expect("the loud frames interrupt");
        assert_eq!(decided.onset_ms, 1_400, "the evidence is the loud frames");
        assert_eq!(
            decided.speech_began_ms, 1_000,
            "the words began with the soft ones"
        );

        // A pause of 200 ms ends a run: speech after it begins a new one.
        watch.arm(2);
        watch.speech(1_600, false);
        watch.speech(1_780, false);
        assert_eq!(
            speak(&mut watch, 1_800, 10, -15.0).unwrap().speech_began_ms,
            1_800
        );
        // A shorter pause does not: the run goes on through it.
        watch.arm(3);
        watch.speech(2_000, false);
        assert_eq!(
            speak(&mut watch, 2_100, 10, -15.0).unwrap().speech_began_ms,
            1_800
        );
    }

    #[test]
    fn the_search_for_where_the_voice_began_reaches_back_one_ring() {
        let mut watch = BargeIn::new(200, Some(EchoGate::default()));
        watch.arm(1);
        watch.agent_level(-10.0, Instant::now());
        assert_eq!(speak(&mut watch, 0, 100, -25.0), None);
        let decided = speak(&mut watch, 2_000, 10, -15.0).expect("interrupts");
        assert_eq!(decided.decided_ms, 2_200);
        assert_eq!(decided.speech_began_ms, 2_200 - MAX_LOOKBACK_MS);
        // Speech that never went quiet, heard without a gate, begins at the onset.
        let mut plain = BargeIn::new(200, None);
        plain.arm(1);
        let decided = speak(&mut plain, 500, 10, -25.0).unwrap();
        assert_eq!((decided.onset_ms, decided.speech_began_ms), (500, 500));
    }
}
