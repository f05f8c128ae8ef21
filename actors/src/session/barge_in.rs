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

use super::audio_in::FRAME_MS;
use super::config::EchoGate;

/// Most agent frame levels remembered for the echo gate (10 s of 20 ms frames).
const MAX_LEVELS: usize = 500;

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
                Some(BargeInDetected {
                    response_id,
                    onset_ms: at_ms,
                    decided_ms: frame.start_ms + u64::from(FRAME_MS),
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
}
