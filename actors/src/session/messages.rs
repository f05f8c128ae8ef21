//! The transport boundary: messages a transport sends a session ([`AudioIn`], [`TextIn`],
//! [`Dtmf`], [`PlaybackMark`], [`Interrupt`], [`Hangup`], [`TransportClosed`],
//! [`ServerShutdown`], [`EndAs`]), or the same as a stream of [`CallerInput`] the session reads itself,
//! and what the
//! session sends back ([`SessionOutput`], with [`SessionEvent`]s for the client), through the
//! transport's [`OutputQueue`].
//!
//! Audio crosses the boundary already in the configured wire format (raw bytes, no base64, no
//! container). Events carry typed data; the transport chooses their JSON shape, using
//! [`SessionEvent::name`] as the event type.
//!
//! A barge-in's clear may skip the queue: a transport that gives its queue a [`ClearLane`]
//! has the clear written to its client from the session's own turn, and the queue then
//! drops the agent audio and marks that were already waiting in it (see [`OutputQueue::clear`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use actix::Message;
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::observer::{EndReason, SessionSummary, TurnRecord};
use crate::engine::ToolCall;

/// Caller audio: raw payload bytes in the configured input format (for Twilio, the decoded
/// base64 `media.payload`). Any length; the session re-frames it into 20 ms frames.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct AudioIn(pub Bytes);

/// One thing the caller's side of a socket carried, for a session that reads the socket
/// itself ([`CallSession::start_reading`](super::CallSession::start_reading)): each is
/// handled as the message of the same name, and the end of the stream as
/// [`TransportClosed`].
#[derive(Debug, Clone, PartialEq)]
pub enum CallerInput {
    /// As [`AudioIn`].
    Audio(Bytes),
    /// As [`TextIn`].
    Text(String),
    /// As [`Dtmf`].
    Dtmf(char),
    /// As [`PlaybackMark`].
    Mark(String),
    /// As [`Interrupt`].
    Interrupt,
    /// As [`Hangup`].
    Hangup,
}

/// Text the user typed (direct socket): a complete user turn.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct TextIn(pub String);

/// A DTMF key press: becomes a user turn reading `DTMF <digit>`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct Dtmf {
    /// `0`-`9`, `*`, `#`, `A`-`D`.
    pub digit: char,
}

/// The transport echoed a mark: the audio sent before it has played (or, after a `Clear`,
/// was discarded — the session tells the two apart).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct PlaybackMark {
    /// The name from [`SessionOutput::Mark`].
    pub name: String,
}

/// The client asks the agent to stop talking (a stop button): handled like a barge-in.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Interrupt;

/// The caller hung up (Twilio `stop`, or the client's `session.end`): the session ends.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Hangup;

/// The call is being handed over from outside the session (an integrator's transfer):
/// when its transport goes away next (a hang-up or a closed socket), the session ends with
/// this reason instead; `None` takes that back (the hand-over failed).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct EndAs(pub Option<EndReason>);

/// The transport's socket closed: the session ends.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct TransportClosed;

/// The server is stopping and its drain time is over: the session ends cleanly (summary
/// reported, `session.ended` sent) with [`EndReason::Shutdown`](super::EndReason::Shutdown).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct ServerShutdown;

/// Stops one of the session's child actors (recognizer, model round, tool runner,
/// playback): the session's word to its children, as [`ServerShutdown`] is the server's to
/// the session.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// What a session sends its transport.
#[derive(Debug, Clone)]
pub enum SessionOutput {
    /// Agent audio in the configured output format: one 20 ms frame (for Twilio, 160 bytes
    /// to base64 into a `media` message).
    Audio(Bytes),
    /// A named position in the audio stream; echo it back as [`PlaybackMark`] when the audio
    /// before it has played (Twilio does this itself).
    Mark(String),
    /// Drop all audio queued for playback (Twilio `clear`; `audio.clear` on the direct socket).
    /// `written_at`: when the transport's [`ClearLane`] already wrote it to the client, which
    /// leaves the transport only its own bookkeeping (the recording's cut); `None` when the
    /// transport writes it now.
    Clear { written_at: Option<Instant> },
    /// Something for the client to see.
    Event(SessionEvent),
    /// The session has stopped: close the socket. Always the last output.
    Ended,
}

/// Writes a barge-in's clear to the client the moment the session decides it, from the
/// session's own turn, instead of after the outputs already queued for the transport. Under
/// load the transport's socket task waits its turn behind every other task of its worker
/// before it reads the queue, and the clear is the one output whose delay the caller hears:
/// the agent goes on talking over them.
pub trait ClearLane: Send + Sync {
    /// Puts the clear of reply `response_id` on the wire if that needs no wait (Twilio
    /// `clear`; the direct socket's `audio.clear` event). False when it cannot: the clear then
    /// goes through the queue as any output.
    fn clear_now(&self, response_id: u64) -> bool;
}

/// Where a session's output goes: a queue the transport's socket task reads in order. The
/// session and its playback put outputs straight on it (no actor in between, so an agent frame
/// costs one queue push and one wake of the socket task). The transport going away shows as
/// the queue closing: dropping the receiver ends the session.
#[derive(Clone)]
pub struct OutputQueue {
    tx: mpsc::UnboundedSender<SessionOutput>,
    lane: Option<Arc<dyn ClearLane>>,
    /// Clears written by the lane whose place in the queue the transport has not reached yet:
    /// while any is, the audio and marks before it were cleared at the client already.
    cleared_ahead: Arc<AtomicUsize>,
}

impl std::fmt::Debug for OutputQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputQueue")
            .field("clear_lane", &self.lane.is_some())
            .finish_non_exhaustive()
    }
}

impl OutputQueue {
    /// A queue and the transport's end of it.
    pub fn new() -> (Self, SessionOutputs) {
        Self::build(None)
    }

    /// A queue whose barge-in clears are written through `lane` (see [`ClearLane`]).
    pub fn with_clear_lane(lane: Arc<dyn ClearLane>) -> (Self, SessionOutputs) {
        Self::build(Some(lane))
    }

    fn build(lane: Option<Arc<dyn ClearLane>>) -> (Self, SessionOutputs) {
        let (tx, rx) = mpsc::unbounded_channel();
        let cleared_ahead = Arc::new(AtomicUsize::new(0));
        let outputs = SessionOutputs {
            rx,
            cleared_ahead: cleared_ahead.clone(),
        };
        let queue = Self {
            tx,
            lane,
            cleared_ahead,
        };
        (queue, outputs)
    }

    /// Queues `output`; false when the transport has stopped reading.
    pub fn send(&self, output: SessionOutput) -> bool {
        self.tx.send(output).is_ok()
    }

    /// Clears the client's playback of reply `response_id` (a barge-in, or a reply that
    /// failed): through the lane at
    /// once when the transport has one and it can write now, and either way with a
    /// [`SessionOutput::Clear`] in the queue, in its place. Returns whether the lane wrote
    /// the clear (the transport then writes nothing more for it), or `None` when the
    /// transport has stopped reading.
    ///
    /// Until the transport reads that `Clear`, it is given no [`SessionOutput::Audio`] or
    /// [`SessionOutput::Mark`]: everything queued before the clear was dropped at the client
    /// by it, and sent after it would be played.
    pub fn clear(&self, response_id: u64) -> Option<bool> {
        if self.is_closed() {
            return None;
        }
        let written = self.lane.as_ref().is_some_and(|lane| {
            // Counted before the write, so the transport cannot send queued audio after it.
            self.cleared_ahead.fetch_add(1, Ordering::AcqRel);
            let written = lane.clear_now(response_id);
            if !written {
                // What the transport dropped meanwhile came before this clear: it was to go.
                self.cleared_ahead.fetch_sub(1, Ordering::AcqRel);
            }
            written
        });
        let written_at = written.then(Instant::now);
        self.send(SessionOutput::Clear { written_at })
            .then_some(written)
    }

    /// Whether the transport has stopped reading.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// The transport's end of an [`OutputQueue`]: the session's outputs, in order.
#[derive(Debug)]
pub struct SessionOutputs {
    rx: mpsc::UnboundedReceiver<SessionOutput>,
    cleared_ahead: Arc<AtomicUsize>,
}

impl SessionOutputs {
    /// The next output; `None` once the session and its playback are gone. Agent audio and
    /// marks queued before a clear that the [`ClearLane`] already wrote are skipped.
    pub async fn recv(&mut self) -> Option<SessionOutput> {
        loop {
            let output = self.rx.recv().await?;
            if self.cleared_ahead.load(Ordering::Acquire) > 0 {
                match output {
                    SessionOutput::Audio(_) | SessionOutput::Mark(_) => continue,
                    SessionOutput::Clear {
                        written_at: Some(_),
                    } => {
                        self.cleared_ahead.fetch_sub(1, Ordering::AcqRel);
                    }
                    _ => {}
                }
            }
            return Some(output);
        }
    }

    /// After the socket closed and the session was told ([`TransportClosed`]): waits for the
    /// session to finish (its record flushed, `Ended` sent), discarding what it still sends.
    pub async fn until_ended(mut self) {
        while let Some(output) = self.rx.recv().await {
            if matches!(output, SessionOutput::Ended) {
                return;
            }
        }
    }
}

/// Events for the client, in the order they happen.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// `session.started`
    SessionStarted {
        /// The session id from the configuration.
        session_id: String,
    },
    /// `transcript.partial`: a hypothesis that may still change.
    TranscriptPartial {
        /// Hypothesis text.
        text: String,
    },
    /// `transcript.final`: the caller's utterance.
    TranscriptFinal {
        /// Final text.
        text: String,
    },
    /// `agent.text.delta`: a piece of the agent's answer as the model writes it.
    AgentTextDelta {
        /// The reply this text belongs to.
        response_id: u64,
        /// New text.
        text: String,
    },
    /// `agent.audio.start`: the first audio frame of a reply was sent.
    AgentAudioStart {
        /// The reply.
        response_id: u64,
    },
    /// `agent.cancelled`: a reply was dropped before any of it was spoken (the caller went
    /// on talking while it was being prepared): its text, if some was sent, was never said.
    AgentCancelled {
        /// The reply.
        response_id: u64,
    },
    /// `agent.audio.end`: the reply finished playing, or was cut short.
    AgentAudioEnd {
        /// The reply.
        response_id: u64,
        /// It was interrupted or failed rather than played to the end.
        interrupted: bool,
    },
    /// `audio.clear`: queued agent audio was dropped (sent after [`SessionOutput::Clear`],
    /// unless the transport's [`ClearLane`] wrote the clear, which for the direct socket is
    /// this event).
    AudioClear {
        /// The reply that was cut.
        response_id: u64,
    },
    /// `tool.call`: the model called a tool.
    ToolCall(ToolCall),
    /// `tool.result`: a tool answered (or failed; the error text goes back to the model).
    ToolResult {
        /// The call this answers.
        call_id: String,
        /// Tool name.
        name: String,
        /// Text handed back to the model.
        output: String,
        /// The tool failed or timed out.
        is_error: bool,
        /// Execution time.
        duration_ms: u64,
    },
    /// `turn.metrics`: a turn finished.
    TurnMetrics(TurnRecord),
    /// `error`: a turn failed (the call goes on) or the session is ending on an error.
    Error {
        /// Machine-readable code.
        code: &'static str,
        /// Human-readable detail.
        message: String,
    },
    /// `session.ended`: the summary, just before [`SessionOutput::Ended`].
    SessionEnded(SessionSummary),
}

impl SessionEvent {
    /// The event's wire name (`session.started`, `transcript.partial`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            SessionEvent::SessionStarted { .. } => "session.started",
            SessionEvent::TranscriptPartial { .. } => "transcript.partial",
            SessionEvent::TranscriptFinal { .. } => "transcript.final",
            SessionEvent::AgentTextDelta { .. } => "agent.text.delta",
            SessionEvent::AgentAudioStart { .. } => "agent.audio.start",
            SessionEvent::AgentAudioEnd { .. } => "agent.audio.end",
            SessionEvent::AgentCancelled { .. } => "agent.cancelled",
            SessionEvent::AudioClear { .. } => "audio.clear",
            SessionEvent::ToolCall(_) => "tool.call",
            SessionEvent::ToolResult { .. } => "tool.result",
            SessionEvent::TurnMetrics(_) => "turn.metrics",
            SessionEvent::Error { .. } => "error",
            SessionEvent::SessionEnded(_) => "session.ended",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A lane whose answers are scripted, one per clear.
    struct Lane(Mutex<Vec<bool>>);

    impl ClearLane for Lane {
        fn clear_now(&self, _: u64) -> bool {
            self.0.lock().expect("not poisoned").remove(0)
        }
    }

    fn audio(n: u8) -> SessionOutput {
        SessionOutput::Audio(Bytes::from(vec![n]))
    }

    /// Everything queued so far, as the transport reads it.
    async fn read_all(outputs: &mut SessionOutputs) -> Vec<String> {
        let mut read = Vec::new();
        while let Ok(Some(output)) =
            tokio::time::timeout(std::time::Duration::from_millis(5), outputs.recv()).await
        {
            read.push(match output {
                SessionOutput::Audio(bytes) => format!("audio{}", bytes[0]),
                SessionOutput::Mark(name) => format!("mark {name}"),
                SessionOutput::Clear { written_at } => {
                    format!(
                        "clear{}",
                        if written_at.is_some() { " written" } else { "" }
                    )
                }
                SessionOutput::Event(event) => event.name().to_string(),
                SessionOutput::Ended => "ended".into(),
            });
        }
        read
    }

    #[tokio::test]
    async fn only_what_was_queued_before_a_written_clear_is_dropped() {
        // The first clear cannot be written, the second can: the audio before the second
        // (including that between the two) was cleared at the client by it.
        let lane = Arc::new(Lane(Mutex::new(vec![false, true])));
        let (queue, mut outputs) = OutputQueue::with_clear_lane(lane);
        queue.send(audio(1));
        queue.send(SessionOutput::Mark("m1".into()));
        assert_eq!(queue.clear(1), Some(false));
        queue.send(SessionOutput::Event(SessionEvent::AgentAudioStart {
            response_id: 2,
        }));
        queue.send(audio(2));
        assert_eq!(queue.clear(2), Some(true));
        queue.send(audio(3));
        assert_eq!(
            read_all(&mut outputs).await,
            ["clear", "agent.audio.start", "clear written", "audio3"]
        );
        // Read after the clear's place: nothing more is dropped.
        queue.send(audio(4));
        queue.send(SessionOutput::Mark("m4".into()));
        assert_eq!(read_all(&mut outputs).await, ["audio4", "mark m4"]);
    }

    #[tokio::test]
    async fn without_a_lane_every_clear_is_queued_in_its_place() {
        let (queue, mut outputs) = OutputQueue::new();
        queue.send(audio(1));
        assert_eq!(queue.clear(1), Some(false));
        queue.send(audio(2));
        assert_eq!(read_all(&mut outputs).await, ["audio1", "clear", "audio2"]);
        drop(outputs);
        // A transport that stopped reading is reported, and its lane is not asked.
        let lane = Arc::new(Lane(Mutex::new(Vec::new())));
        let (queue, outputs) = OutputQueue::with_clear_lane(lane);
        drop(outputs);
        assert_eq!(queue.clear(1), None);
    }
}
