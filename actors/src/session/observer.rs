//! What a session reports about itself: one [`TurnRecord`] per turn (timings, interruption,
//! failure), a [`SessionSummary`] at the end, and the [`SessionObserver`] trait through which
//! both leave the session (the server's implementation writes them to the database).

use crate::engine::{SessionEnding, ToolCall};

/// How one tool call went.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The call.
    pub call: ToolCall,
    /// The tool's answer, or the error text handed to the model instead.
    pub output: String,
    /// The tool failed or timed out.
    pub is_error: bool,
    /// Execution time.
    pub duration_ms: u64,
    /// The call ran and ends the session ([`ToolExecutor::ends_session`](crate::engine::ToolExecutor::ends_session)).
    pub ends_session: Option<SessionEnding>,
}

/// Who spoke a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The caller.
    User,
    /// The voice agent.
    Agent,
}

impl Speaker {
    /// `user` or `agent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Speaker::User => "user",
            Speaker::Agent => "agent",
        }
    }
}

/// How the end of a caller turn was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointSource {
    /// VAD silence for the configured time after speech.
    Vad,
    /// The recognizer's own final transcript, before the VAD decided.
    Stt,
    /// The end-of-turn model judged the caller's pause the end of their turn (smart turn
    /// detection), before the silence timer would have.
    Model,
    /// Typed text or a DTMF digit: no audio to endpoint.
    Text,
    /// The caller spoke without a pause for [`MAX_UTTERANCE_MS`](super::MAX_UTTERANCE_MS):
    /// the turn was cut there (speech that goes on is the next turn).
    MaxLength,
}

/// Where an agent turn's latency went: from the end of the caller's speech (the end of the
/// last VAD speech frame) to the first agent audio frame sent. All in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnLatency {
    /// End of caller speech to first agent audio frame sent.
    pub total_ms: u64,
    /// Waiting for the endpoint: the silence that ends a turn (VAD), or the wait for the
    /// recognizer's own final.
    pub endpoint_ms: u64,
    /// End of utterance to final transcript.
    pub stt_ms: u64,
    /// Model time until the first speakable sentence, over all rounds.
    pub llm_ms: u64,
    /// Tool execution between model rounds.
    pub tool_ms: u64,
    /// First sentence handed to synthesis to its first audio frame sent.
    pub tts_ms: u64,
    /// What is left: the session's own overhead (message hops, scheduling, encoding).
    pub platform_ms: u64,
}

/// Measurements of one barge-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BargeInRecord {
    /// Caller speech onset to the interruption decision, as the caller lived it: the sustain
    /// time plus how late the session heard the deciding frame (see
    /// [`StreamClock`](super::stream_clock::StreamClock)).
    pub detection_ms: u64,
    /// Decision to `Clear` sent.
    pub stop_ms: u64,
    /// Agent words estimated to have played from when the caller's speech was due to the
    /// clear.
    pub bleed_through: String,
    /// `true` when the client asked for the interruption ([`Interrupt`](super::Interrupt))
    /// rather than the VAD detecting it.
    pub requested: bool,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    /// 0-based position in the session.
    pub index: u32,
    /// Who spoke.
    pub speaker: Speaker,
    /// For agent turns: the reply's id (the `responseId` of its live events).
    pub response_id: Option<u64>,
    /// What was said: the transcript, or the agent text actually played.
    pub text: String,
    /// Start, in ms since the session started.
    pub start_ms: u64,
    /// End, in ms since the session started.
    pub end_ms: u64,
    /// Recognition time (the caller utterance this turn is or answers); 0 if none ran.
    pub stt_ms: u64,
    /// Model time to first sentence; 0 if the model did not run.
    pub llm_ms: u64,
    /// Synthesis time to first audio; 0 if synthesis did not run.
    pub tts_ms: u64,
    /// The caller (or client) interrupted this agent turn.
    pub interrupted: bool,
    /// Why the turn failed, as `code: message`; `None` if it did not.
    pub error: Option<String>,
    /// For agent replies to the caller: the latency breakdown.
    pub latency: Option<TurnLatency>,
    /// For interrupted agent turns: how the interruption went.
    pub barge_in: Option<BargeInRecord>,
    /// For caller turns: how the end was decided.
    pub endpoint: Option<EndpointSource>,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    /// Hangup, transport close, idle timeout or server shutdown.
    Completed,
    /// A fatal error ended the call.
    Failed,
}

/// Why a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndReason {
    /// The caller hung up ([`Hangup`](super::Hangup)).
    Hangup,
    /// The transport went away ([`TransportClosed`](super::TransportClosed), or its recipient
    /// stopped accepting output).
    TransportClosed,
    /// No caller audio for the configured idle time.
    IdleTimeout,
    /// The agent ended the conversation (a tool that ends the session, `end_conversation`),
    /// once its last words had played.
    AgentEnded,
    /// The agent handed the call to a person (`transfer_call`), once its last words had
    /// played.
    Transferred,
    /// The call left the session for other markup (`send_dtmf`) and goes on in a new one.
    Redirected,
    /// The server stopped while the session was still live
    /// ([`ServerShutdown`](super::ServerShutdown)).
    Shutdown,
    /// An unrecoverable error, with its code and message.
    Fatal {
        /// Machine-readable code.
        code: &'static str,
        /// Human-readable detail.
        message: String,
    },
}

/// End-of-session totals.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// Session start to end.
    pub total_duration_ms: u64,
    /// Mean [`TurnLatency::total_ms`] over agent replies that reached audio; 0 if none did.
    pub avg_turn_latency_ms: u64,
    /// Tool calls executed.
    pub tool_executions: u32,
    /// Turns recorded (both speakers).
    pub turns: u32,
    /// Agent turns interrupted.
    pub interruptions: u32,
    /// Turns that failed.
    pub failed_turns: u32,
    /// Completed or failed.
    pub status: SessionStatus,
    /// Why it ended.
    pub reason: EndReason,
}

/// Caller speech that the recognizer turned into no words: the VAD heard speech, the
/// transcript was empty, and no turn was recorded for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnrecognisedSpeech {
    /// Start of the speech, in ms since the session started.
    pub start_ms: u64,
    /// End of the speech, in ms since the session started.
    pub end_ms: u64,
    /// When this speech interrupted the agent (a barge-in), the index of the interrupted
    /// agent turn: the interruption was a false one.
    pub interrupted_turn: Option<u32>,
}

/// Receives a session's records. Calls are made on the session's own thread, so an
/// implementation must return at once: hand the record to a queue or channel (the database
/// writer does) and do the work elsewhere.
pub trait SessionObserver: Send + Sync + 'static {
    /// The session started (its actor is running); called once, first. The default ignores
    /// it.
    fn session_started(&self, session_id: &str) {
        let _ = session_id;
    }

    /// A turn finished (completed, interrupted or failed).
    fn turn_completed(&self, session_id: &str, turn: &TurnRecord);

    /// A tool call finished (for audit); reported before the agent turn it belongs to. The
    /// default ignores it.
    fn tool_executed(&self, session_id: &str, outcome: &ToolOutcome) {
        let _ = (session_id, outcome);
    }

    /// Caller speech was heard but nothing was recognised in it. The default ignores it.
    fn speech_unrecognised(&self, session_id: &str, speech: &UnrecognisedSpeech) {
        let _ = (session_id, speech);
    }

    /// The session ended; called exactly once, last.
    fn session_ended(&self, session_id: &str, summary: &SessionSummary);
}

/// An observer that drops everything, for sessions nobody records.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopObserver;

impl SessionObserver for NoopObserver {
    fn turn_completed(&self, _: &str, _: &TurnRecord) {}
    fn session_ended(&self, _: &str, _: &SessionSummary) {}
}
