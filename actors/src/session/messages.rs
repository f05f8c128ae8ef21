//! The transport boundary: messages a transport sends a session ([`AudioIn`], [`TextIn`],
//! [`Dtmf`], [`PlaybackMark`], [`Interrupt`], [`Hangup`], [`TransportClosed`],
//! [`ServerShutdown`]) and what the
//! session sends back ([`SessionOutput`], with [`SessionEvent`]s for the client), through the
//! transport's [`OutputQueue`].
//!
//! Audio crosses the boundary already in the configured wire format (raw bytes, no base64, no
//! container). Events carry typed data; the transport chooses their JSON shape, using
//! [`SessionEvent::name`] as the event type.

use actix::Message;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::observer::{SessionSummary, TurnRecord};
use crate::engine::ToolCall;

/// Caller audio: raw payload bytes in the configured input format (for Twilio, the decoded
/// base64 `media.payload`). Any length; the session re-frames it into 20 ms frames.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct AudioIn(pub Bytes);

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

/// The transport's socket closed: the session ends.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct TransportClosed;

/// The server is stopping and its drain time is over: the session ends cleanly (summary
/// reported, `session.ended` sent) with [`EndReason::Shutdown`](super::EndReason::Shutdown).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct ServerShutdown;

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
    Clear,
    /// Something for the client to see.
    Event(SessionEvent),
    /// The session has stopped: close the socket. Always the last output.
    Ended,
}

/// Where a session's output goes: a queue the transport's socket task reads in order. The
/// session and its playback put outputs straight on it (no actor in between, so an agent frame
/// costs one queue push and one wake of the socket task). The transport going away shows as
/// the queue closing: dropping the receiver ends the session.
#[derive(Debug, Clone)]
pub struct OutputQueue(mpsc::UnboundedSender<SessionOutput>);

impl OutputQueue {
    /// A queue and the transport's end of it.
    pub fn new() -> (Self, SessionOutputs) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self(tx), SessionOutputs(rx))
    }

    /// Queues `output`; false when the transport has stopped reading.
    pub fn send(&self, output: SessionOutput) -> bool {
        self.0.send(output).is_ok()
    }

    /// Whether the transport has stopped reading.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// The transport's end of an [`OutputQueue`]: the session's outputs, in order.
#[derive(Debug)]
pub struct SessionOutputs(mpsc::UnboundedReceiver<SessionOutput>);

impl SessionOutputs {
    /// The next output; `None` once the session and its playback are gone.
    pub async fn recv(&mut self) -> Option<SessionOutput> {
        self.0.recv().await
    }

    /// After the socket closed and the session was told ([`TransportClosed`]): waits for the
    /// session to finish (its record flushed, `Ended` sent), discarding what it still sends.
    pub async fn until_ended(mut self) {
        while let Some(output) = self.0.recv().await {
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
    /// `agent.audio.end`: the reply finished playing, or was cut short.
    AgentAudioEnd {
        /// The reply.
        response_id: u64,
        /// It was interrupted or failed rather than played to the end.
        interrupted: bool,
    },
    /// `audio.clear`: queued agent audio was dropped (sent together with
    /// [`SessionOutput::Clear`]).
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
            SessionEvent::AudioClear { .. } => "audio.clear",
            SessionEvent::ToolCall(_) => "tool.call",
            SessionEvent::ToolResult { .. } => "tool.result",
            SessionEvent::TurnMetrics(_) => "turn.metrics",
            SessionEvent::Error { .. } => "error",
            SessionEvent::SessionEnded(_) => "session.ended",
        }
    }
}
