//! [`BargeIn`]: the child actor that watches the caller's voice activity while the agent is
//! talking and decides when the caller has interrupted: speech sustained for the configured
//! time (default 200 ms) after the optional echo gate (see [`EchoGate`]) has dropped frames
//! that are only the agent's own voice coming back.

use std::collections::VecDeque;
use std::time::Duration;

use actix::prelude::*;
use smallvec::SmallVec;
use tokio::time::Instant;

use crate::audio::{SpeechEvent, SpeechTracker, SpeechTrackerConfig, Voice};

use super::audio_in::FRAME_MS;
use super::call::CallSession;
use super::config::EchoGate;
use super::liveness::LiveGuard;
use super::stt::Shutdown;

/// Most agent frame levels remembered for the echo gate (10 s of 20 ms frames).
const MAX_LEVELS: usize = 500;

/// The agent is about to talk (or think) in reply `response_id`: start watching.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct ArmBargeIn {
    /// The reply that may be interrupted.
    pub response_id: u64,
}

/// The agent stopped talking: stop watching.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct DisarmBargeIn;

/// The voice activity of the caller frames of one `AudioIn`, in stream order: one message
/// however many frames the transport read together.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct CallerVoices(pub SmallVec<[CallerVoice; 4]>);

/// One caller frame's voice activity, forwarded while the agent talks.
#[derive(Debug, Clone, Copy)]
pub struct CallerVoice {
    /// Stream time of the frame's start, in ms.
    pub start_ms: u64,
    /// What the VAD heard in the frame.
    pub voice: Voice,
    /// The frame's level in dBFS.
    pub energy_dbfs: f32,
}

/// The level of an agent audio frame just sent (for the echo gate).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct AgentAudioLevel {
    /// RMS level in dBFS.
    pub level_dbfs: f32,
}

/// The caller interrupted reply `response_id`.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
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
    session: Addr<CallSession>,
    tracker: SpeechTracker,
    armed: Option<u64>,
    gate: Option<EchoGate>,
    levels: VecDeque<(Instant, f32)>,
    _live: LiveGuard,
}

impl BargeIn {
    /// A detector requiring `sustain_ms` of speech, with an optional echo gate.
    pub fn new(
        session: Addr<CallSession>,
        sustain_ms: u32,
        gate: Option<EchoGate>,
        live: LiveGuard,
    ) -> Self {
        Self {
            session,
            tracker: SpeechTracker::new(SpeechTrackerConfig {
                onset_ms: sustain_ms,
                end_silence_ms: sustain_ms,
            }),
            armed: None,
            // Only a gate reads agent levels: a call without one (Twilio) keeps no room for them.
            levels: VecDeque::with_capacity(if gate.is_some() { MAX_LEVELS } else { 0 }),
            gate,
            _live: live,
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

impl Actor for BargeIn {
    type Context = Context<Self>;
}

impl Handler<ArmBargeIn> for BargeIn {
    type Result = ();

    fn handle(&mut self, msg: ArmBargeIn, _: &mut Self::Context) {
        if self.armed != Some(msg.response_id) {
            self.tracker.reset();
        }
        self.armed = Some(msg.response_id);
    }
}

impl Handler<DisarmBargeIn> for BargeIn {
    type Result = ();

    fn handle(&mut self, _: DisarmBargeIn, _: &mut Self::Context) {
        self.armed = None;
        self.tracker.reset();
        self.levels.clear();
    }
}

impl Handler<AgentAudioLevel> for BargeIn {
    type Result = ();

    fn handle(&mut self, msg: AgentAudioLevel, _: &mut Self::Context) {
        if self.gate.is_none() {
            return;
        }
        if self.levels.len() == MAX_LEVELS {
            self.levels.pop_front();
        }
        self.levels.push_back((Instant::now(), msg.level_dbfs));
    }
}

impl Handler<CallerVoices> for BargeIn {
    type Result = ();

    fn handle(&mut self, msg: CallerVoices, _: &mut Self::Context) {
        let now = Instant::now();
        for voice in msg.0 {
            // Disarmed, or decided by an earlier frame: the rest is not an interruption.
            let Some(response_id) = self.armed else {
                return;
            };
            // Frames no louder than the agent's own echo count as quiet.
            let counted = if voice.voice == Voice::Quiet || self.passes_gate(voice.energy_dbfs, now)
            {
                voice.voice
            } else {
                Voice::Quiet
            };
            if let Some(SpeechEvent::SpeechStarted { at_ms }) =
                self.tracker.update(voice.start_ms, FRAME_MS, counted)
            {
                self.armed = None;
                self.tracker.reset();
                self.session.do_send(BargeInDetected {
                    response_id,
                    onset_ms: at_ms,
                    decided_ms: voice.start_ms + u64::from(FRAME_MS),
                    decided_at: now,
                });
            }
        }
    }
}

impl Handler<Shutdown> for BargeIn {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
