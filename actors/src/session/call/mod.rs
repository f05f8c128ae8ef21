//! [`CallSession`]: the actor at the centre of a call. It owns the turn state machine
//! (listening → user speaking → thinking → agent speaking → listening), the conversation
//! history and the turn records, starts and stops the child actors, and is the only actor a
//! transport talks to.
//!
//! This file holds the actor, its start and end, the transport's messages and [`Liveness`]
//! (whether the call is still on). `caller.rs` handles the caller's side of a turn (audio
//! frames, endpointing, transcripts), `reply.rs` the agent's (model rounds, tools, playback,
//! barge-in, failures), `history.rs` the conversation history's rules.

mod caller;
mod history;
mod reply;

pub use caller::MAX_UTTERANCE_MS;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use crate::audio::{SpeechTracker, SpeechTrackerConfig};
use crate::engine::{
    ChatMessage, KnowledgeRetriever, LanguageModel, SpeechToText, TextToSpeech, ToolExecutor,
    TranscribeOptions, TurnEndModel, STT_SAMPLE_RATE,
};

use super::audio_in::CallerAudio;
use super::audio_out::OutputEncoder;
use super::barge_in::BargeIn;
use super::config::SessionConfig;
use super::end_of_turn::EndOfTurn;
use super::error::SessionError;
use super::liveness::{LiveCounter, LiveGuard};
use super::messages::{
    AudioIn, CallerInput, Dtmf, EndAs, Hangup, Interrupt, OutputQueue, PlaybackMark,
    ServerShutdown, SessionEvent, SessionOutput, Shutdown, TextIn, TransportClosed,
};
use super::observer::{EndReason, SessionObserver, SessionStatus, SessionSummary, TurnRecord};
use super::stt::{SttLinks, SttStream};
use super::tools::ToolRunner;

use caller::CallerSide;
use reply::Replies;

/// The engines one session calls, resolved once when it starts.
#[derive(Clone)]
pub struct SessionEngines {
    /// Speech to text (its `stream()` is used).
    pub stt: Arc<dyn SpeechToText>,
    /// The language model.
    pub llm: Arc<dyn LanguageModel>,
    /// Speech synthesis.
    pub tts: Arc<dyn TextToSpeech>,
    /// Tool execution.
    pub tools: Arc<dyn ToolExecutor>,
    /// The agent's knowledge, looked up for each answer before the model runs; `None` for an
    /// agent without a collection.
    pub knowledge: Option<Arc<dyn KnowledgeRetriever>>,
    /// Judges the caller's pauses when the session's turn detection is smart; `None` leaves
    /// turn ends to the silence timer.
    pub turn_end: Option<Arc<dyn TurnEndModel>>,
}

/// Where the conversation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Nobody is speaking.
    Listening,
    /// The caller is speaking.
    UserSpeaking,
    /// Waiting for the transcript, the model, tools or the first audio.
    Thinking,
    /// Agent audio is playing.
    AgentSpeaking,
}

/// Messages of the conversation a session keeps and sends the model: a long call keeps its
/// latest exchanges, so neither the prompt nor the session's memory grows with its length.
/// The transcript of the whole call is in the turn records.
///
/// Past this many the history is cut to its latest half, not by one exchange a turn: a model
/// that caches the prompt by its prefix (the embedded one, and vendors' prompt caching) then
/// reads the whole conversation again once every ten exchanges rather than every turn (on the
/// embedded model at 40 messages, some 7 s before the answer).
pub const HISTORY_MESSAGES: usize = 40;

/// How long a session that reads its caller's side itself keeps reading after the transport
/// was seen gone from the writing side, for what the caller sent before it went. A closed
/// socket's last messages are read within milliseconds; this only bounds a caller's side that
/// stays open.
const READER_GRACE: Duration = Duration::from_secs(2);

/// Asks a session for its current state and history (for persistence or inspection).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "SessionSnapshot")]
pub struct GetSnapshot;

/// A session's state at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSnapshot {
    /// Where the conversation stands.
    pub state: TurnState,
    /// The conversation (system prompt excluded), assistant text truncated to what was heard.
    pub history: Vec<ChatMessage>,
    /// Turns recorded so far.
    pub turns: u32,
}

/// What a transport keeps of a started session.
#[derive(Debug, Clone)]
pub struct SessionHandle {
    addr: Addr<CallSession>,
    live: LiveCounter,
}

impl SessionHandle {
    /// The session's address: send it [`AudioIn`](super::AudioIn) and the other transport
    /// messages.
    pub fn addr(&self) -> &Addr<CallSession> {
        &self.addr
    }

    /// How many of the session's actors (itself and its children) are alive.
    pub fn live_actors(&self) -> usize {
        self.live.get()
    }
}

/// Whole milliseconds from `from` to `to` (0 if `to` is earlier).
fn ms_between(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_millis() as u64
}

/// Running totals for the summary.
#[derive(Debug, Default)]
struct Totals {
    turns: u32,
    latency_sum_ms: u64,
    latency_count: u64,
    tool_executions: u32,
    interruptions: u32,
    failed_turns: u32,
}

/// Whether the call is still on, as the session watches it: its transport as the writing side
/// sees it, whether the session still reads the caller's side, when the caller was last heard
/// (for the idle timeout), and how and whether the session has ended.
struct Liveness {
    /// A write to the transport failed, or its clear lane was gone.
    transport_gone: bool,
    /// The session reads the caller's side of the socket itself
    /// ([`CallSession::start_reading`]) and that side has not ended yet.
    reading: bool,
    /// When the transport was first seen gone from the writing side while the caller's side
    /// was still being read: see [`CallSession::transport_lost`].
    transport_lost_at: Option<Instant>,
    /// When the caller last sent audio or text.
    last_heard_at: Instant,
    /// Why the session ends when its transport goes away ([`EndAs`]).
    end_as: Option<EndReason>,
    /// The task that asks the session to check its liveness ([`CheckLiveness`]); aborted when
    /// the session stops.
    ticks: Option<tokio::task::JoinHandle<()>>,
    /// The session has ended: it reported its summary and takes no more input.
    ended: bool,
}

/// What a session does about its transport gone from the writing side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TransportLoss {
    /// End the session now.
    End,
    /// Read on what the caller sent before it went, and look again after [`READER_GRACE`].
    ReadOn,
    /// Still reading, within the grace.
    StillReading,
}

impl Liveness {
    /// A call just started at `now`.
    fn new(now: Instant) -> Self {
        Self {
            transport_gone: false,
            reading: false,
            transport_lost_at: None,
            last_heard_at: now,
            end_as: None,
            ticks: None,
            ended: false,
        }
    }

    /// The caller sent audio or text at `at`.
    fn caller_heard(&mut self, at: Instant) {
        self.last_heard_at = at;
    }

    /// Whether the caller has sent nothing for `idle_timeout` by `now`.
    fn is_idle(&self, now: Instant, idle_timeout: Duration) -> bool {
        now.saturating_duration_since(self.last_heard_at) >= idle_timeout
    }

    /// The transport is gone from the writing side, seen at `now` (see
    /// [`CallSession::transport_lost`]).
    fn transport_lost(&mut self, now: Instant) -> TransportLoss {
        if !self.reading {
            return TransportLoss::End;
        }
        match self.transport_lost_at {
            None => {
                self.transport_lost_at = Some(now);
                TransportLoss::ReadOn
            }
            Some(at) if now.saturating_duration_since(at) >= READER_GRACE => TransportLoss::End,
            Some(_) => TransportLoss::StillReading,
        }
    }

    /// Marks the session ended: false if it had already.
    fn end(&mut self) -> bool {
        !std::mem::replace(&mut self.ended, true)
    }

    /// Why a session ending for `reason` ends: a caller hanging up or a transport going
    /// away ends it as the transport asked ([`EndAs`]), if it did.
    fn end_reason(&mut self, reason: EndReason) -> EndReason {
        match reason {
            EndReason::Hangup | EndReason::TransportClosed => self.end_as.take().unwrap_or(reason),
            other => other,
        }
    }
}

/// One call (see the module docs).
pub struct CallSession {
    config: SessionConfig,
    engines: SessionEngines,
    output: OutputQueue,
    observer: Arc<dyn SessionObserver>,
    live: LiveCounter,
    started_at: Instant,
    audio: CallerAudio,
    tracker: SpeechTracker,
    /// Puts the caller's pauses to the end-of-turn model (smart turn detection).
    end_of_turn: EndOfTurn,
    state: TurnState,
    history: Vec<ChatMessage>,
    stt: Option<Addr<SttStream>>,
    /// Decides, frame by frame while the agent talks, that the caller interrupted.
    barge_in: BargeIn,
    tools: Option<Addr<ToolRunner>>,
    /// The caller's side: the utterance being captured, those awaiting their transcripts, how
    /// the caller's audio arrives.
    caller: CallerSide,
    /// The agent's side: the reply in progress and the answer owed.
    replies: Replies,
    liveness: Liveness,
    totals: Totals,
    _live: LiveGuard,
}

impl CallSession {
    /// Validates `config`, builds the audio path and starts the session on the current
    /// arbiter. Must be called inside a running actix system. Output goes to `output`,
    /// records to `observer`.
    pub fn start(
        config: SessionConfig,
        engines: SessionEngines,
        output: OutputQueue,
        observer: Arc<dyn SessionObserver>,
    ) -> Result<SessionHandle, SessionError> {
        let (session, live) = Self::new(config, engines, output, observer)?;
        let addr = session.start();
        Ok(SessionHandle { addr, live })
    }

    /// As [`start`](Self::start), with the session reading the caller's side of the socket
    /// from `input` on its own turn: no task between the socket and the session, so a caller
    /// frame wakes one task, not two, and the frame that completes a barge-in is heard
    /// without waiting behind the worker's other tasks a second time. The end of `input` is
    /// the transport closing ([`TransportClosed`]).
    pub fn start_reading<S>(
        config: SessionConfig,
        engines: SessionEngines,
        output: OutputQueue,
        observer: Arc<dyn SessionObserver>,
        input: S,
    ) -> Result<SessionHandle, SessionError>
    where
        S: Stream<Item = CallerInput> + 'static,
    {
        let (mut session, live) = Self::new(config, engines, output, observer)?;
        session.liveness.reading = true;
        let addr = CallSession::create(move |ctx| {
            ctx.add_stream(input);
            session
        });
        Ok(SessionHandle { addr, live })
    }

    fn new(
        config: SessionConfig,
        engines: SessionEngines,
        output: OutputQueue,
        observer: Arc<dyn SessionObserver>,
    ) -> Result<(Self, LiveCounter), SessionError> {
        config.validate()?;
        let audio = CallerAudio::new(
            config.input,
            config.turn.vad_model,
            config.turn.vad_threshold,
            engines.stt.live_rate(config.input.sample_rate().hz()),
        )?;
        // Built here only to refuse an unusable output format before the call starts.
        OutputEncoder::new(config.output)?;
        let live = LiveCounter::new();
        let tracker = SpeechTracker::new(SpeechTrackerConfig {
            onset_ms: config.turn.speech_onset_ms,
            end_silence_ms: config.turn.endpoint_silence_ms,
        });
        let end_of_turn = EndOfTurn::new(
            config.turn.detection,
            engines.turn_end.clone(),
            config.turn.endpoint_silence_ms,
            audio.capture_rate(),
        );
        let now = Instant::now();
        let session = CallSession {
            history: Vec::new(),
            engines,
            output,
            observer,
            _live: live.guard(),
            live: live.clone(),
            started_at: now,
            audio,
            tracker,
            end_of_turn,
            state: TurnState::Listening,
            stt: None,
            barge_in: BargeIn::new(config.turn.barge_in_sustain_ms, config.echo_gate),
            tools: None,
            caller: CallerSide::new(),
            replies: Replies::new(),
            liveness: Liveness::new(now),
            totals: Totals::default(),
            config,
        };
        Ok((session, live))
    }

    /// Milliseconds since the session started, at `at`.
    fn session_ms(&self, at: Instant) -> u64 {
        ms_between(self.started_at, at)
    }

    /// Sends `output` to the transport, noticing when it is gone.
    fn send(&mut self, output: SessionOutput) {
        if !self.output.send(output) {
            self.liveness.transport_gone = true;
        }
    }

    /// Clears the client's playback of reply `response_id`: through the transport's clear
    /// lane when it has one, else in the queue followed by `audio.clear`.
    fn clear_client(&mut self, response_id: u64) {
        match self.output.clear(response_id) {
            None => self.liveness.transport_gone = true,
            Some(true) => {}
            Some(false) => self.emit(SessionEvent::AudioClear { response_id }),
        }
    }

    fn emit(&mut self, event: SessionEvent) {
        self.send(SessionOutput::Event(event));
    }

    fn record_turn(&mut self, turn: TurnRecord) {
        self.totals.turns += 1;
        if turn.error.is_some() {
            self.totals.failed_turns += 1;
        }
        if let Some(latency) = turn.latency {
            self.totals.latency_sum_ms += latency.total_ms;
            self.totals.latency_count += 1;
        }
        self.observer.turn_completed(&self.config.session_id, &turn);
        self.emit(SessionEvent::TurnMetrics(turn));
    }

    fn next_turn_index(&self) -> u32 {
        self.totals.turns
    }

    /// The transport is gone as the writing side sees it: a write failed, or the socket's
    /// writer let go of the output queue. A session that reads the caller's side itself first
    /// reads what the caller sent before the socket went, so that a caller who hung up
    /// (Twilio's `stop`, then the close) ends as `hangup` even when a write to the closed
    /// socket failed before the session had read that far; the end of the caller's side then
    /// ends the session. Should that side stay open (a client that stopped reading but still
    /// sends), the session ends after [`READER_GRACE`].
    fn transport_lost(&mut self, ctx: &mut Context<Self>) {
        match self.liveness.transport_lost(Instant::now()) {
            TransportLoss::End => self.end(EndReason::TransportClosed, ctx),
            TransportLoss::ReadOn => {
                ctx.run_later(READER_GRACE, |act, ctx| act.transport_lost(ctx));
            }
            TransportLoss::StillReading => {}
        }
    }

    /// Ends the session: stops every child, reports the summary, tells the transport.
    fn end(&mut self, reason: EndReason, ctx: &mut Context<Self>) {
        self.finish(reason);
        ctx.stop();
    }

    fn finish(&mut self, reason: EndReason) {
        if !self.liveness.end() {
            return;
        }
        let reason = self.liveness.end_reason(reason);
        if let Some(reply) = self.replies.end() {
            reply.stop_children(self.tools.as_ref());
            // The call ended over the agent: its turn is what the caller heard of it.
            if reply.audio_started {
                self.finish_cut_off_reply(&reply);
            }
        }
        if let Some(stt) = self.stt.take() {
            stt.do_send(Shutdown);
        }
        self.barge_in.disarm();
        if let Some(tools) = self.tools.take() {
            tools.do_send(Shutdown);
        }
        let status = match reason {
            EndReason::Fatal { .. } => SessionStatus::Failed,
            _ => SessionStatus::Completed,
        };
        if let EndReason::Fatal { code, message } = &reason {
            self.emit(SessionEvent::Error {
                code,
                message: message.clone(),
            });
        }
        let summary = SessionSummary {
            total_duration_ms: self.session_ms(Instant::now()),
            avg_turn_latency_ms: self
                .totals
                .latency_sum_ms
                .checked_div(self.totals.latency_count)
                .unwrap_or(0),
            tool_executions: self.totals.tool_executions,
            turns: self.totals.turns,
            interruptions: self.totals.interruptions,
            failed_turns: self.totals.failed_turns,
            status,
            reason,
        };
        self.observer
            .session_ended(&self.config.session_id, &summary);
        self.emit(SessionEvent::SessionEnded(summary));
        self.send(SessionOutput::Ended);
    }

    /// The conversation so far (system prompt excluded).
    pub fn history(&self) -> &[ChatMessage] {
        &self.history
    }

    /// Adds a caller turn to the history, kept to its latest exchanges without cutting into
    /// the reply in progress (see [`history::push_caller_turn`]).
    fn push_caller_turn(&mut self, text: String) {
        history::push_caller_turn(&mut self.history, text, self.replies.history_from_mut());
    }
}

impl Actor for CallSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.observer.session_started(&self.config.session_id);
        let me = ctx.address();
        let capture_rate = self.audio.capture_rate();
        let options = TranscribeOptions {
            language: self.config.agent.language.clone(),
            mode: self.config.agent.recognition,
            live_turn: true,
            input_rate: (capture_rate != STT_SAMPLE_RATE).then_some(capture_rate),
            ..TranscribeOptions::default()
        };
        self.stt = Some(
            SttStream::new(
                self.engines.stt.clone(),
                options,
                SttLinks::to(&me),
                self.live.guard(),
            )
            .start(),
        );
        self.tools = Some(
            ToolRunner::new(
                self.engines.tools.clone(),
                self.config.timeouts.tool,
                me.recipient(),
                self.live.guard(),
            )
            .start(),
        );
        let session_id = self.config.session_id.clone();
        self.emit(SessionEvent::SessionStarted { session_id });
        let greeting = self.config.agent.first_message.clone();
        if !greeting.trim().is_empty() {
            self.start_fixed_reply(reply::ReplyKind::Greeting, &greeting, ctx);
        }
        // The model reads the system prompt and the greeting while the greeting plays.
        self.engines.llm.warm(self.model_request(None));
        let idle = self.config.idle_timeout;
        let every = (idle / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let ticks = liveness_ticks(ctx.address().downgrade(), every, self.live.guard());
        self.liveness.ticks = Some(ticks);
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        if let Some(ticks) = self.liveness.ticks.take() {
            ticks.abort();
        }
        self.finish(EndReason::TransportClosed);
    }
}

/// Time to check whether the session's transport is gone or its caller silent for too long.
#[derive(Message)]
#[rtype(result = "()")]
struct CheckLiveness;

/// Sends the session [`CheckLiveness`] every `every`, from a task of its own rather than a
/// timer in the session's context: actix polls every timer of a context each time its actor
/// wakes, and a session wakes for every 20 ms caller frame, so a timer there costs a poll per
/// frame (measured at 1,000 calls: 2-4% of the server's CPU in `Sleep::poll`). The task ends
/// with the session (aborted in `stopped`, or at its next tick once the session is gone) and
/// counts among the session's live actors until then.
fn liveness_ticks(
    session: actix::WeakAddr<CallSession>,
    every: Duration,
    live: LiveGuard,
) -> tokio::task::JoinHandle<()> {
    actix::spawn(async move {
        let _live = live;
        let mut ticks = tokio::time::interval_at(Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match session.upgrade() {
                Some(session) if session.connected() => session.do_send(CheckLiveness),
                _ => return,
            }
        }
    })
}

impl Handler<CheckLiveness> for CallSession {
    type Result = ();

    fn handle(&mut self, _: CheckLiveness, ctx: &mut Self::Context) {
        if self.liveness.transport_gone || self.output.is_closed() {
            self.transport_lost(ctx);
        } else if self
            .liveness
            .is_idle(Instant::now(), self.config.idle_timeout)
        {
            self.end(EndReason::IdleTimeout, ctx);
        }
    }
}

impl Handler<GetSnapshot> for CallSession {
    type Result = MessageResult<GetSnapshot>;

    fn handle(&mut self, _: GetSnapshot, _: &mut Self::Context) -> Self::Result {
        MessageResult(SessionSnapshot {
            state: self.state,
            history: self.history.clone(),
            turns: self.totals.turns,
        })
    }
}

impl Handler<TextIn> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: TextIn, ctx: &mut Self::Context) {
        if self.liveness.ended {
            return;
        }
        self.liveness.caller_heard(Instant::now());
        self.typed_turn(msg.0, ctx);
    }
}

impl Handler<Dtmf> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: Dtmf, ctx: &mut Self::Context) {
        if self.liveness.ended {
            return;
        }
        self.typed_turn(format!("DTMF {}", msg.digit), ctx);
    }
}

impl Handler<Interrupt> for CallSession {
    type Result = ();

    fn handle(&mut self, _: Interrupt, _: &mut Self::Context) {
        if self.liveness.ended || !self.replies.is_replying() {
            return;
        }
        self.interrupt_reply(None);
        self.state = TurnState::Listening;
        self.tracker.reset();
    }
}

impl Handler<Hangup> for CallSession {
    type Result = ();

    fn handle(&mut self, _: Hangup, ctx: &mut Self::Context) {
        self.end(EndReason::Hangup, ctx);
    }
}

impl Handler<EndAs> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: EndAs, _: &mut Self::Context) {
        self.liveness.end_as = msg.0;
    }
}

impl Handler<ServerShutdown> for CallSession {
    type Result = ();

    fn handle(&mut self, _: ServerShutdown, ctx: &mut Self::Context) {
        self.end(EndReason::Shutdown, ctx);
    }
}

impl Handler<TransportClosed> for CallSession {
    type Result = ();

    fn handle(&mut self, _: TransportClosed, ctx: &mut Self::Context) {
        self.transport_lost(ctx);
    }
}

/// The caller's side of the socket, read by the session itself ([`CallSession::start_reading`]):
/// each input is handled as the message of the same name.
impl StreamHandler<CallerInput> for CallSession {
    fn handle(&mut self, input: CallerInput, ctx: &mut Self::Context) {
        match input {
            CallerInput::Audio(audio) => Handler::handle(self, AudioIn(audio), ctx),
            CallerInput::Text(text) => Handler::handle(self, TextIn(text), ctx),
            CallerInput::Dtmf(digit) => Handler::handle(self, Dtmf { digit }, ctx),
            CallerInput::Mark(name) => Handler::handle(self, PlaybackMark { name }, ctx),
            CallerInput::Interrupt => Handler::handle(self, Interrupt, ctx),
            CallerInput::Hangup => Handler::handle(self, Hangup, ctx),
        }
    }

    /// The socket's caller side ended.
    fn finished(&mut self, ctx: &mut Self::Context) {
        self.liveness.reading = false;
        self.end(EndReason::TransportClosed, ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_session_that_does_not_read_the_caller_ends_when_its_transport_is_lost() {
        let t0 = Instant::now();
        let mut liveness = Liveness::new(t0);
        assert_eq!(liveness.transport_lost(t0), TransportLoss::End);
    }

    #[test]
    fn a_reading_session_reads_on_for_the_grace_before_it_ends() {
        let t0 = Instant::now();
        let mut liveness = Liveness::new(t0);
        liveness.reading = true;
        assert_eq!(liveness.transport_lost(t0), TransportLoss::ReadOn);
        // Seen again within the grace (a failed write, a liveness check): no second timer.
        assert_eq!(
            liveness.transport_lost(t0 + READER_GRACE - ms(1)),
            TransportLoss::StillReading
        );
        assert_eq!(
            liveness.transport_lost(t0 + READER_GRACE),
            TransportLoss::End
        );
        // Once the caller's side has ended, nothing is left to read.
        let mut liveness = Liveness::new(t0);
        liveness.reading = true;
        assert_eq!(liveness.transport_lost(t0), TransportLoss::ReadOn);
        liveness.reading = false;
        assert_eq!(liveness.transport_lost(t0 + ms(10)), TransportLoss::End);
    }

    #[test]
    fn the_caller_is_idle_after_the_timeout_since_they_were_last_heard() {
        let t0 = Instant::now();
        let timeout = ms(10_000);
        let mut liveness = Liveness::new(t0);
        assert!(!liveness.is_idle(t0 + timeout - ms(1), timeout));
        assert!(liveness.is_idle(t0 + timeout, timeout));
        liveness.caller_heard(t0 + ms(5_000));
        assert!(!liveness.is_idle(t0 + timeout, timeout));
        assert!(liveness.is_idle(t0 + ms(5_000) + timeout, timeout));
    }

    #[test]
    fn the_transport_decides_how_a_hangup_or_its_own_close_ends_the_session() {
        let mut liveness = Liveness::new(Instant::now());
        assert_eq!(liveness.end_reason(EndReason::Hangup), EndReason::Hangup);
        liveness.end_as = Some(EndReason::Transferred);
        // Other endings are the session's own.
        assert_eq!(
            liveness.end_reason(EndReason::IdleTimeout),
            EndReason::IdleTimeout
        );
        assert_eq!(
            liveness.end_reason(EndReason::TransportClosed),
            EndReason::Transferred
        );
        assert_eq!(
            liveness.end_reason(EndReason::TransportClosed),
            EndReason::TransportClosed
        );
        liveness.end_as = Some(EndReason::Redirected);
        assert_eq!(
            liveness.end_reason(EndReason::Hangup),
            EndReason::Redirected
        );
    }

    #[test]
    fn a_session_ends_once() {
        let mut liveness = Liveness::new(Instant::now());
        assert!(!liveness.ended);
        assert!(liveness.end());
        assert!(liveness.ended);
        assert!(!liveness.end());
        assert!(liveness.ended);
    }
}
