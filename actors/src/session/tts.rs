//! [`TtsPlayback`]: the child actor that speaks one reply. It synthesizes sentence by sentence
//! as they arrive (while the model is still writing), converts the audio to the transport's
//! format, and paces it out in 20 ms frames a little ahead of real time, following each
//! sentence with a mark so the session learns what was actually played. One actor per reply;
//! stopping it drops the synthesis stream.
//!
//! Audio leaves only while the reply holds the session's [`PlaybackGate`]. The session moves
//! the gate before it sends `Clear`, and all of a session's actors run on one arbiter thread,
//! so no frame of a cancelled reply can follow the `Clear`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use tokio::time::Instant;

use crate::engine::{EngineError, SpeechChunk, SpeechRequest, TextToSpeech};

use super::audio_in::FRAME_MS;
use super::audio_out::{EncodedFrame, OutputEncoder};
use super::barge_in::AgentAudioLevel;
use super::config::{AudioFormat, Pacing};
use super::error::TurnError;
use super::liveness::LiveGuard;
use super::messages::Shutdown;
use super::messages::{OutputQueue, SessionOutput};
use super::stream::receiver_stream;

/// The reply currently allowed to send audio (0: none).
#[derive(Debug, Clone, Default)]
pub struct PlaybackGate(Arc<AtomicU64>);

impl PlaybackGate {
    /// Lets reply `response_id` (and only it) send audio.
    pub fn open(&self, response_id: u64) {
        self.0.store(response_id, Ordering::SeqCst);
    }

    /// Lets no reply send audio.
    pub fn close(&self) {
        self.0.store(0, Ordering::SeqCst);
    }

    /// Whether reply `response_id` may send audio.
    pub fn is_open_for(&self, response_id: u64) -> bool {
        self.0.load(Ordering::SeqCst) == response_id
    }
}

/// A sentence to speak.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Speak(pub String);

/// No more sentences will come for this reply.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct EndOfResponse;

/// The reply's first audio frame was sent.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct PlaybackStarted {
    /// The reply.
    pub response_id: u64,
    /// When.
    pub at: Instant,
}

/// A sentence's audio is queued for sending, followed by `mark`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SegmentQueued {
    /// The reply.
    pub response_id: u64,
    /// The mark sent after the sentence's audio.
    pub mark: String,
    /// The sentence.
    pub text: String,
    /// Audio length.
    pub duration_ms: u64,
}

/// Everything of the reply has been sent to the transport.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct PlaybackDrained {
    /// The reply.
    pub response_id: u64,
}

/// Synthesis failed.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct TtsFailed {
    /// The reply.
    pub response_id: u64,
    /// What went wrong.
    pub error: TurnError,
}

/// What a reply speaks with.
#[derive(Debug, Clone)]
pub struct Voice {
    /// Voice id.
    pub voice: String,
    /// Language for multilingual voices.
    pub language: Option<String>,
    /// The speech provider's model; `None` is its default.
    pub model: Option<String>,
}

/// The session's side of a playback: where audio goes and who hears about it. The four
/// recipients lead to the session's one mailbox, so they arrive in the order they were sent.
#[derive(Clone)]
pub struct PlaybackLinks {
    /// The first audio of a reply left.
    pub started: Recipient<PlaybackStarted>,
    /// A reply's audio has all left.
    pub drained: Recipient<PlaybackDrained>,
    /// Synthesis failed.
    pub failed: Recipient<TtsFailed>,
    /// A segment was queued.
    pub queued: Recipient<SegmentQueued>,
    /// The transport.
    pub output: OutputQueue,
    /// Where the level of each frame sent goes, when the session has an echo gate.
    pub echo_levels: Option<Recipient<AgentAudioLevel>>,
    /// The session's playback gate.
    pub gate: PlaybackGate,
}

#[derive(Debug)]
enum Outgoing {
    /// A frame, its level in dBFS, and when it was ready to send.
    Audio(Bytes, f32, Instant),
    Mark(String),
}

/// A frame that leaves more than this long after its time to play, although it was ready
/// before then, was sent late by the platform: the caller hears a gap.
pub const SENT_LATE_MS: u64 = 40;

static FRAMES_SENT: AtomicU64 = AtomicU64::new(0);
static FRAMES_SENT_LATE: AtomicU64 = AtomicU64::new(0);

/// Agent audio frames sent by every session of this process so far, and how many of them
/// left more than [`SENT_LATE_MS`] after their time to play although they were ready before
/// it (the playback fell behind, not the voice). Counted where a caller would hear the gap:
/// at the first frame after it.
pub fn frames_sent_in_process() -> (u64, u64) {
    (
        FRAMES_SENT.load(Ordering::Relaxed),
        FRAMES_SENT_LATE.load(Ordering::Relaxed),
    )
}

#[derive(Debug)]
struct Synthesis {
    text: String,
    last_progress: Instant,
    audio_ms: u64,
}

/// Speaks one reply (see the module docs).
pub struct TtsPlayback {
    response_id: u64,
    engine: Arc<dyn TextToSpeech>,
    voice: Voice,
    links: PlaybackLinks,
    encoder: OutputEncoder,
    /// The transport's sample rate, asked of the voice so it need not be resampled.
    output_rate: u32,
    pacing: Pacing,
    timeout: Duration,
    sentences: VecDeque<String>,
    current: Option<Synthesis>,
    end_of_response: bool,
    queue: VecDeque<Outgoing>,
    clock_start: Option<Instant>,
    sent_ms: u64,
    seq: u32,
    frames: Vec<EncodedFrame>,
    done: bool,
    _live: LiveGuard,
}

impl TtsPlayback {
    /// Playback of reply `response_id` in `format`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        response_id: u64,
        engine: Arc<dyn TextToSpeech>,
        voice: Voice,
        links: PlaybackLinks,
        format: AudioFormat,
        pacing: Pacing,
        timeout: Duration,
        live: LiveGuard,
    ) -> Result<Self, crate::audio::AudioError> {
        Ok(Self {
            response_id,
            engine,
            voice,
            links,
            encoder: OutputEncoder::new(format)?,
            output_rate: format.sample_rate().hz(),
            pacing,
            timeout,
            sentences: VecDeque::new(),
            current: None,
            end_of_response: false,
            queue: VecDeque::new(),
            clock_start: None,
            sent_ms: 0,
            seq: 0,
            frames: Vec::new(),
            done: false,
            _live: live,
        })
    }

    fn start_next(&mut self, ctx: &mut Context<Self>) {
        if self.current.is_some() || self.done {
            return;
        }
        let Some(text) = self.sentences.pop_front() else {
            return;
        };
        let request = SpeechRequest {
            language: self.voice.language.clone(),
            output_rate: Some(self.output_rate),
            model: self.voice.model.clone(),
            ..SpeechRequest::new(text.clone(), self.voice.voice.clone())
        };
        match self.engine.synthesize(request) {
            Ok(rx) => {
                ctx.add_stream(receiver_stream(rx));
                self.current = Some(Synthesis {
                    text,
                    last_progress: Instant::now(),
                    audio_ms: 0,
                });
            }
            Err(error) => self.fail(TurnError::Tts(error), ctx),
        }
    }

    fn enqueue_frames(&mut self) {
        let now = Instant::now();
        if let Some(current) = self.current.as_mut() {
            current.audio_ms += self.frames.len() as u64 * u64::from(FRAME_MS);
        }
        for frame in self.frames.drain(..) {
            self.queue
                .push_back(Outgoing::Audio(frame.bytes, frame.level_dbfs, now));
        }
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.done || !self.links.gate.is_open_for(self.response_id) {
            return;
        }
        let now = Instant::now();
        let lead = u64::from(self.pacing.lead_ms);
        while let Some(front) = self.queue.front() {
            match *front {
                Outgoing::Mark(_) => {
                    if let Some(Outgoing::Mark(name)) = self.queue.pop_front() {
                        self.links.output.send(SessionOutput::Mark(name));
                    }
                }
                Outgoing::Audio(_, _, ready_at) => {
                    match self.clock_start {
                        None => {
                            self.clock_start = Some(now);
                            self.links.started.do_send(PlaybackStarted {
                                response_id: self.response_id,
                                at: now,
                            });
                        }
                        Some(start) => {
                            let mut elapsed =
                                now.saturating_duration_since(start).as_millis() as u64;
                            if self.sent_ms < elapsed {
                                // Underrun: everything sent has played. Was this frame ready
                                // in time to play without a gap?
                                let due = start + Duration::from_millis(self.sent_ms);
                                let late = now.saturating_duration_since(due.max(ready_at));
                                if late > Duration::from_millis(SENT_LATE_MS) {
                                    FRAMES_SENT_LATE.fetch_add(1, Ordering::Relaxed);
                                }
                                // Restart the clock so the next burst is no larger than the
                                // lead.
                                self.clock_start = Some(
                                    now.checked_sub(Duration::from_millis(self.sent_ms))
                                        .unwrap_or(now),
                                );
                                elapsed = self.sent_ms;
                            }
                            if self.sent_ms >= elapsed + lead {
                                break;
                            }
                        }
                    }
                    if let Some(Outgoing::Audio(bytes, level_dbfs, _)) = self.queue.pop_front() {
                        FRAMES_SENT.fetch_add(1, Ordering::Relaxed);
                        self.links.output.send(SessionOutput::Audio(bytes));
                        self.sent_ms += u64::from(FRAME_MS);
                        if let Some(levels) = self.links.echo_levels.as_ref() {
                            levels.do_send(AgentAudioLevel {
                                level_dbfs,
                                sent_at: now,
                            });
                        }
                    }
                }
            }
        }
        if self.end_of_response
            && self.sentences.is_empty()
            && self.current.is_none()
            && self.queue.is_empty()
        {
            self.done = true;
            self.links.drained.do_send(PlaybackDrained {
                response_id: self.response_id,
            });
            ctx.stop();
        }
    }

    fn fail(&mut self, error: TurnError, ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        self.done = true;
        self.links.failed.do_send(TtsFailed {
            response_id: self.response_id,
            error,
        });
        ctx.stop();
    }
}

/// Longest wait between two pumps of the playback clock.
const MAX_PUMP_INTERVAL_MS: u32 = 60;

/// How often the playback clock sends what has become due: a fifth of the lead, between one
/// frame and [`MAX_PUMP_INTERVAL_MS`]. With the default 300 ms lead, every pump sends three
/// frames at once, so the timer, the transport's task and the socket wake a third as often as
/// with a pump per frame, and the lead still keeps well ahead of the listener's playback.
fn pump_interval(lead_ms: u32) -> Duration {
    Duration::from_millis(u64::from(
        (lead_ms / 5).clamp(FRAME_MS, MAX_PUMP_INTERVAL_MS),
    ))
}

impl Actor for TtsPlayback {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(pump_interval(self.pacing.lead_ms), |act, ctx| {
            let stalled = act
                .current
                .as_ref()
                .is_some_and(|c| c.last_progress.elapsed() > act.timeout);
            if stalled {
                let ms = act.timeout.as_millis() as u64;
                act.fail(TurnError::TtsTimeout(ms), ctx);
                return;
            }
            act.pump(ctx);
        });
    }
}

impl Handler<Speak> for TtsPlayback {
    type Result = ();

    fn handle(&mut self, msg: Speak, ctx: &mut Self::Context) {
        self.sentences.push_back(msg.0);
        self.start_next(ctx);
    }
}

impl Handler<EndOfResponse> for TtsPlayback {
    type Result = ();

    fn handle(&mut self, _: EndOfResponse, ctx: &mut Self::Context) {
        self.end_of_response = true;
        self.pump(ctx);
    }
}

impl StreamHandler<Result<SpeechChunk, EngineError>> for TtsPlayback {
    fn handle(&mut self, item: Result<SpeechChunk, EngineError>, ctx: &mut Self::Context) {
        if self.done {
            return;
        }
        match item {
            Ok(chunk) => {
                if let Some(current) = self.current.as_mut() {
                    current.last_progress = Instant::now();
                }
                let mut frames = std::mem::take(&mut self.frames);
                let result = self
                    .encoder
                    .push(&chunk.samples, chunk.sample_rate, &mut frames);
                self.frames = frames;
                match result {
                    Ok(()) => {
                        self.enqueue_frames();
                        self.pump(ctx);
                    }
                    Err(e) => self.fail(TurnError::AudioOut(e.to_string()), ctx),
                }
            }
            Err(error) => self.fail(TurnError::Tts(error), ctx),
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        if self.done {
            return;
        }
        let mut frames = std::mem::take(&mut self.frames);
        let result = self
            .encoder
            .finish(self.pacing.sentence_gap_ms, &mut frames);
        self.frames = frames;
        if let Err(e) = result {
            self.fail(TurnError::AudioOut(e.to_string()), ctx);
            return;
        }
        self.enqueue_frames();
        if let Some(current) = self.current.take() {
            self.seq += 1;
            let mark = format!("r{}-s{}", self.response_id, self.seq);
            self.links.queued.do_send(SegmentQueued {
                response_id: self.response_id,
                mark: mark.clone(),
                text: current.text,
                duration_ms: current.audio_ms,
            });
            self.queue.push_back(Outgoing::Mark(mark));
        }
        self.start_next(ctx);
        self.pump(ctx);
    }
}

impl Handler<Shutdown> for TtsPlayback {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        self.done = true;
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pumps_come_often_enough_to_keep_the_lead() {
        assert_eq!(pump_interval(300), Duration::from_millis(60));
        assert_eq!(pump_interval(150), Duration::from_millis(30));
        assert_eq!(pump_interval(20), Duration::from_millis(20));
        assert_eq!(pump_interval(5_000), Duration::from_millis(60));
        // Never slower than one frame per frame's worth of lead, so the lead is always refilled
        // before it has played out.
        for lead in 20..=5_000 {
            let interval = pump_interval(lead).as_millis() as u32;
            assert!(
                (FRAME_MS..=lead.max(FRAME_MS)).contains(&interval),
                "{lead}"
            );
        }
    }
}
