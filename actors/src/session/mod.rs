//! Real-time voice sessions: one [`CallSession`] actor per phone call or direct WebSocket
//! connection, and the child actors it supervises.
//!
//! | piece | owns |
//! |---|---|
//! | [`CallSession`] (`call/`) | turn state machine, conversation history, turn records, child lifecycle |
//! | [`SttStream`] (`stt`) | the recognizer stream: caller audio in, partial/final transcripts out |
//! | [`BargeIn`] (`barge_in`) | deciding that the caller interrupted the agent, with the echo gate: run by the session on each caller frame, not an actor (see its module docs) |
//! | [`LlmStream`] (`llm`) | one model round: tokens, speakable sentences, tool calls |
//! | [`ToolRunner`] (`tools`) | tool calls with timeouts |
//! | [`TtsPlayback`] (`tts`) | one reply's synthesis, encoding, pacing and marks |
//!
//! Pure helpers beside them: [`CallerAudio`] (inbound frames, VAD, pre-roll), [`OutputEncoder`]
//! (outbound formats), [`SentenceSplitter`], [`PlaybackLedger`] (what was heard).
//!
//! # For transports
//! 1. Fill a [`SessionConfig`] ([`SessionConfig::twilio`] or [`SessionConfig::direct`]) and a
//!    [`SessionEngines`]; implement [`SessionObserver`] (or use [`NoopObserver`]).
//! 2. Make an [`OutputQueue`] and, inside an actix system, call [`CallSession::start`] with
//!    it. Keep the returned [`SessionHandle`] and read the queue's receiver.
//! 3. Send the session [`AudioIn`] for every media payload, and [`TextIn`], [`Dtmf`],
//!    [`PlaybackMark`], [`Interrupt`] as they arrive; [`Hangup`] or [`TransportClosed`] at the
//!    end. Or start it with [`CallSession::start_reading`] and a stream of [`CallerInput`],
//!    which it reads itself (the real-time transports do).
//! 4. Write every [`SessionOutput`] to the socket: `Audio` as media, `Mark` as a mark, `Clear`
//!    as Twilio `clear` (or an `audio.clear` event), `Event` as JSON named by
//!    [`SessionEvent::name`]. Close the socket on `Ended`, which is always last.
//!
//! The greeting starts as soon as the session does. The session ends on `Hangup`,
//! `TransportClosed`, when the output queue's receiver is dropped, after the idle
//! timeout, or on a fatal error. A session that reads its caller's side itself hears
//! `TransportClosed` (or the dropped receiver) as the socket failing on the writing side: it
//! first reads what the caller sent before the socket went, so a `stop` sent before the close
//! ends the call as a hangup, and it ends when that side ends (or two seconds later, should
//! it stay open). It then stops its children, reports the summary to the
//! observer, sends `session.ended` and `Ended`. [`SessionHandle::live_actors`] counts its
//! actors still alive (zero shortly after the end).

pub mod audio_in;
pub mod audio_out;
pub mod barge_in;
mod call;
pub mod config;
pub mod end_of_turn;
pub mod error;
pub mod liveness;
pub mod llm;
pub mod messages;
pub mod observer;
pub mod playback;
pub mod sentences;
mod stream;
pub mod stream_clock;
pub mod stt;
pub mod tools;
pub mod tts;

pub use audio_in::{CallerAudio, CallerFrame};
pub use audio_out::{EncodedFrame, OutputEncoder};
pub use barge_in::BargeIn;
pub use call::{
    CallSession, GetSnapshot, SessionEngines, SessionHandle, SessionSnapshot, TurnState,
    HISTORY_MESSAGES, MAX_UTTERANCE_MS,
};
pub use config::{
    AgentProfile, AudioFormat, EchoGate, Pacing, PlaybackAcks, SessionConfig, SmartTurn,
    StageTimeouts, TurnDetection, TurnPreferences, TurnTiming,
};
pub use error::{SessionError, TurnError};
pub use liveness::{live_actors_in_process, LiveCounter};
pub use llm::LlmStream;
pub use messages::{
    AudioIn, CallerInput, ClearLane, Dtmf, EndAs, Hangup, Interrupt, OutputQueue, PlaybackMark,
    ServerShutdown, SessionEvent, SessionOutput, SessionOutputs, TextIn, TransportClosed,
};
pub use observer::{
    BargeInRecord, EndReason, EndpointSource, NoopObserver, SessionObserver, SessionStatus,
    SessionSummary, Speaker, ToolOutcome, TurnLatency, TurnRecord, UnrecognisedSpeech,
};
pub use playback::PlaybackLedger;
pub use sentences::SentenceSplitter;
pub use stt::SttStream;
pub use tools::ToolRunner;
pub use tts::{frames_sent_in_process, TtsPlayback, SENT_LATE_MS};
