//! The agent's side of a turn: a reply is the greeting, an answer (model rounds, tools,
//! sentences to speech) or an apology. Here the session starts replies, routes their
//! children's messages, tracks what was played, and ends them: completed, interrupted by the
//! caller (barge-in) or failed. [`Replies`] keeps the reply in progress and whether a caller
//! turn awaits its answer; a [`Reply`] keeps its own timing and playback; both are tested
//! here, and the session's handlers below do the actor's part around them.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use crate::engine::{ChatMessage, ChatRequest, KnowledgeRetriever, Role, SessionEnding, ToolCall};

use super::super::barge_in::BargeInDetected;
use super::super::config::PlaybackAcks;
use super::super::error::TurnError;
use super::super::llm::{
    AgentTextDelta, LlmFailed, LlmFinished, LlmLinks, LlmStream, SentenceReady,
};
use super::super::messages::Shutdown;
use super::super::messages::{PlaybackMark, SessionEvent};
use super::super::observer::{
    BargeInRecord, EndReason, Speaker, ToolOutcome, TurnLatency, TurnRecord,
};
use super::super::playback::PlaybackLedger;
use super::super::sentences::split_text;
use super::super::tools::{CancelTools, RunTools, ToolRunner, ToolsFinished};
use super::super::tts::{
    EndOfResponse, PlaybackDrained, PlaybackGate, PlaybackLinks, PlaybackStarted, SegmentQueued,
    Speak, TtsFailed, TtsPlayback, Voice,
};
use super::{history, ms_between, CallSession, TurnState};

/// Timing of the caller turn a reply answers.
#[derive(Debug, Clone, Copy)]
pub(super) struct AnswerTiming {
    /// When the caller's speech ended.
    pub(super) speech_end_at: Instant,
    /// The wait for the endpoint after that.
    pub(super) endpoint_ms: u64,
    /// The recognizer's time after the endpoint.
    pub(super) stt_ms: u64,
}

impl AnswerTiming {
    /// Where the time went from the end of the caller's speech to the answer's first audio,
    /// sent at `first_audio_at`, given the model's, the tools' and synthesis's shares: what
    /// none of them took is the session's own.
    fn latency(
        &self,
        first_audio_at: Instant,
        llm_ms: u64,
        tool_ms: u64,
        tts_ms: u64,
    ) -> TurnLatency {
        let total_ms = ms_between(self.speech_end_at, first_audio_at);
        let parts = self.endpoint_ms + self.stt_ms + llm_ms + tool_ms + tts_ms;
        TurnLatency {
            total_ms,
            endpoint_ms: self.endpoint_ms,
            stt_ms: self.stt_ms,
            llm_ms,
            tool_ms,
            tts_ms,
            platform_ms: total_ms.saturating_sub(parts),
        }
    }
}

/// What a reply is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReplyKind {
    /// The agent's first message.
    Greeting,
    /// An answer to the caller, from the model.
    Answer,
    /// The apology after a failed turn.
    Apology,
}

/// One reply in progress.
pub(super) struct Reply {
    pub(super) id: u64,
    kind: ReplyKind,
    llm: Option<Addr<LlmStream>>,
    tts: Addr<TtsPlayback>,
    /// Model rounds started.
    steps: u32,
    /// The model has said all it will.
    llm_done: bool,
    /// Playback has sent all its audio.
    drained: bool,
    ledger: PlaybackLedger,
    /// Where the reply's messages start in the history.
    pub(super) history_from: usize,
    pub(super) audio_started: bool,
    started_at: Instant,
    timing: Option<AnswerTiming>,
    round_started: Instant,
    /// The current model round has given a sentence to speak.
    round_spoke: bool,
    /// Model time until each round's first sentence (or its end), over all rounds.
    llm_ms: u64,
    tool_ms: u64,
    tools_started: Option<Instant>,
    tools_pending: Vec<ToolCall>,
    /// What the knowledge base said about the caller's words, added to the system prompt of
    /// every model round of this reply.
    knowledge: Option<String>,
    first_sentence_at: Option<Instant>,
    first_audio_at: Option<Instant>,
    latency: Option<TurnLatency>,
    /// A tool of this reply ended the conversation: the session ends once the reply has
    /// played to its end (not when the caller talks over it: they have more to say).
    ends_session: Option<SessionEnding>,
}

impl Reply {
    /// Reply `id`, started at `now`, played by `tts` (which acknowledges as `acks` says); its
    /// messages will start at `history_from` in the history.
    fn new(
        id: u64,
        kind: ReplyKind,
        tts: Addr<TtsPlayback>,
        acks: PlaybackAcks,
        history_from: usize,
        now: Instant,
    ) -> Self {
        Reply {
            id,
            kind,
            llm: None,
            tts,
            steps: 0,
            llm_done: false,
            drained: false,
            ledger: PlaybackLedger::new(acks),
            history_from,
            audio_started: false,
            started_at: now,
            timing: None,
            round_started: now,
            round_spoke: false,
            llm_ms: 0,
            tool_ms: 0,
            tools_started: None,
            tools_pending: Vec::new(),
            knowledge: None,
            first_sentence_at: None,
            first_audio_at: None,
            latency: None,
            ends_session: None,
        }
    }

    /// Stops the reply's model round, playback and tool calls.
    pub(super) fn stop_children(&self, tools: Option<&Addr<ToolRunner>>) {
        if let Some(llm) = self.llm.as_ref() {
            llm.do_send(Shutdown);
        }
        self.tts.do_send(Shutdown);
        if let Some(tools) = tools {
            tools.do_send(CancelTools {
                response_id: self.id,
            });
        }
    }

    /// Synthesis time: the first sentence handed to it to the first audio sent.
    fn tts_ms(&self) -> u64 {
        match (self.first_sentence_at, self.first_audio_at) {
            (Some(s), Some(a)) => ms_between(s, a),
            _ => 0,
        }
    }

    /// A model round starts at `now`.
    fn start_round(&mut self, now: Instant) {
        self.steps += 1;
        self.round_started = now;
        self.round_spoke = false;
    }

    /// The model gave a sentence to speak at `now`: the round's first ends its model time.
    fn sentence_ready(&mut self, now: Instant) {
        if !self.round_spoke {
            self.round_spoke = true;
            self.llm_ms += ms_between(self.round_started, now);
        }
        self.first_sentence_at.get_or_insert(now);
    }

    /// The model's round ended at `now`: all of a round that spoke nothing was model time.
    fn end_round(&mut self, now: Instant) {
        if !self.round_spoke {
            self.llm_ms += ms_between(self.round_started, now);
        }
        self.llm = None;
    }

    /// The model asked for `calls` at `now`.
    fn start_tools(&mut self, calls: Vec<ToolCall>, now: Instant) {
        self.tools_started = Some(now);
        self.tools_pending = calls;
    }

    /// The tool calls ended at `now` with `outcomes`; the first that ends the session does
    /// (once the reply has played), unless an earlier round's did already.
    fn finish_tools(&mut self, outcomes: &[ToolOutcome], now: Instant) {
        if let Some(started) = self.tools_started.take() {
            self.tool_ms += ms_between(started, now);
        }
        self.tools_pending.clear();
        self.ends_session = self
            .ends_session
            .or(outcomes.iter().find_map(|o| o.ends_session));
    }

    /// The reply's first audio was sent at `at`: an answer's latency is known.
    fn start_playback(&mut self, at: Instant) {
        self.audio_started = true;
        self.first_audio_at = Some(at);
        self.ledger.started(at);
        if let Some(timing) = self.timing {
            self.latency = Some(timing.latency(at, self.llm_ms, self.tool_ms, self.tts_ms()));
        }
    }

    /// Whether the reply is over at `now`: the model is done and all audio was sent and has
    /// played (or `force`: sent, and its last mark overdue).
    fn is_complete(&self, force: bool, now: Instant) -> bool {
        self.llm_done && self.drained && (force || self.ledger.all_played(now))
    }

    /// Audio sent but not yet played by `now`, at real-time pace from the first frame, in ms.
    fn unplayed_ms(&self, now: Instant) -> u64 {
        let played_ms = self.ledger.started_at().map_or(0, |t| ms_between(t, now));
        self.ledger.queued_ms().saturating_sub(played_ms)
    }
}

/// The session's replies: the one in progress, the next one's id, and whether a caller turn
/// in the history still awaits its answer (with its timing).
pub(super) struct Replies {
    current: Option<Reply>,
    /// The id of the next reply (from 1).
    next_id: u64,
    /// A caller turn is in the history and not yet answered.
    awaiting_answer: bool,
    /// Timing of that caller turn (none for typed text).
    answer_timing: Option<AnswerTiming>,
    /// Lets only the reply in progress send audio.
    gate: PlaybackGate,
}

impl Replies {
    /// No reply yet.
    pub(super) fn new() -> Self {
        Self {
            current: None,
            next_id: 1,
            awaiting_answer: false,
            answer_timing: None,
            gate: PlaybackGate::default(),
        }
    }

    /// The id for a new reply.
    fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// `reply` is now the reply in progress: only its audio passes the gate.
    fn begin(&mut self, reply: Reply) {
        self.gate.open(reply.id);
        self.current = Some(reply);
    }

    /// Ends the reply in progress, if any: no reply's audio passes the gate any more.
    pub(super) fn end(&mut self) -> Option<Reply> {
        self.gate.close();
        self.current.take()
    }

    /// The reply in progress.
    fn get(&self) -> Option<&Reply> {
        self.current.as_ref()
    }

    /// The reply in progress.
    fn get_mut(&mut self) -> Option<&mut Reply> {
        self.current.as_mut()
    }

    /// The reply in progress if it is reply `id` (messages of replies already ended are
    /// ignored).
    fn with_id(&mut self, id: u64) -> Option<&mut Reply> {
        self.current.as_mut().filter(|r| r.id == id)
    }

    /// Whether reply `id` is in progress.
    fn is_current(&self, id: u64) -> bool {
        self.current.as_ref().is_some_and(|r| r.id == id)
    }

    /// Whether a reply is in progress.
    pub(super) fn is_replying(&self) -> bool {
        self.current.is_some()
    }

    /// Whether a reply is in progress and has not made a sound yet.
    pub(super) fn is_silent(&self) -> bool {
        self.current.as_ref().is_some_and(|r| !r.audio_started)
    }

    /// Where the reply in progress starts in the history, for the history's cut to move.
    pub(super) fn history_from_mut(&mut self) -> Option<&mut usize> {
        self.current.as_mut().map(|r| &mut r.history_from)
    }

    /// A caller turn went into the history: it awaits an answer, timed by `timing`.
    pub(super) fn await_answer(&mut self, timing: Option<AnswerTiming>) {
        self.awaiting_answer = true;
        self.answer_timing = timing;
    }

    /// Whether a caller turn awaits its answer, with or without a reply in the way.
    pub(super) fn answer_owed(&self) -> bool {
        self.awaiting_answer
    }

    /// Whether a caller turn awaits its answer and no reply is in the way.
    pub(super) fn answer_due(&self) -> bool {
        self.awaiting_answer && self.current.is_none()
    }

    /// The answer is being started.
    fn answering(&mut self) {
        self.awaiting_answer = false;
    }

    /// The timing of the caller turn the answer started answers.
    fn take_answer_timing(&mut self) -> Option<AnswerTiming> {
        self.answer_timing.take()
    }

    /// `reply` was dropped before it made a sound: the caller turn an answer answered is
    /// still unanswered.
    fn dropped(&mut self, reply: &Reply) {
        if reply.kind == ReplyKind::Answer {
            self.awaiting_answer = true;
        }
    }
}

/// How the caller's interruption `detected` went, timed as the caller lived it: the frame that
/// decided was heard `late` by however far the session had fallen behind (a busy machine, a
/// backlog in the socket), and the caller's voice began before that frame was due by the
/// sustain, and by the soft words the echo gate did not count before it. `played`: the words of
/// the reply (`ledger`) played when the client's playback was cleared, at `cleared_at`.
fn barge_in_record(
    detected: &BargeInDetected,
    late: Duration,
    ledger: &PlaybackLedger,
    played: usize,
    cleared_at: Instant,
) -> BargeInRecord {
    let talking_ms = detected.decided_ms.saturating_sub(detected.speech_began_ms);
    let onset_at = detected
        .decided_at
        .checked_sub(late + Duration::from_millis(talking_ms))
        .unwrap_or(detected.decided_at);
    let before = ledger.words_played_at(onset_at);
    BargeInRecord {
        detection_ms: ms_between(onset_at, detected.decided_at).max(talking_ms),
        stop_ms: ms_between(detected.decided_at, cleared_at),
        bleed_through: ledger.words_between(before, played),
        requested: false,
    }
}

impl CallSession {
    /// Starts a reply whose playback child is ready; `None` if it could not be built.
    fn new_reply(&mut self, kind: ReplyKind, ctx: &mut Context<Self>) -> Option<Reply> {
        let id = self.replies.next_id();
        let me = ctx.address();
        let links = PlaybackLinks {
            started: me.clone().recipient(),
            drained: me.clone().recipient(),
            failed: me.clone().recipient(),
            queued: me.clone().recipient(),
            output: self.output.clone(),
            // Agent levels only matter to an echo gate; without one they are not sent.
            echo_levels: self.barge_in.wants_agent_levels().then(|| me.recipient()),
            gate: self.replies.gate.clone(),
        };
        let voice = Voice {
            voice: self.config.agent.voice.clone(),
            language: self.config.agent.language.clone(),
            model: self.config.agent.tts_model.clone(),
        };
        let playback = TtsPlayback::new(
            id,
            self.engines.tts.clone(),
            voice,
            links,
            self.config.output,
            self.config.pacing,
            self.config.timeouts.tts,
            self.live.guard(),
        );
        let tts = match playback {
            Ok(p) => p.start(),
            Err(error) => {
                self.emit(SessionEvent::Error {
                    code: "audio_out",
                    message: error.to_string(),
                });
                return None;
            }
        };
        Some(Reply::new(
            id,
            kind,
            tts,
            self.config.pacing.acks,
            self.history.len(),
            Instant::now(),
        ))
    }

    /// Speaks fixed text (greeting or apology).
    pub(super) fn start_fixed_reply(
        &mut self,
        kind: ReplyKind,
        text: &str,
        ctx: &mut Context<Self>,
    ) {
        let Some(mut reply) = self.new_reply(kind, ctx) else {
            return;
        };
        reply.llm_done = true;
        reply.first_sentence_at = Some(Instant::now());
        for sentence in split_text(text) {
            reply.tts.do_send(Speak(sentence));
        }
        reply.tts.do_send(EndOfResponse);
        self.history
            .push(ChatMessage::new(Role::Assistant, text.trim()));
        self.replies.begin(reply);
        if self.state != TurnState::UserSpeaking {
            self.state = TurnState::Thinking;
        }
    }

    /// Answers the caller turns in the history.
    pub(super) fn start_answer(&mut self, ctx: &mut Context<Self>) {
        self.replies.answering();
        let Some(mut reply) = self.new_reply(ReplyKind::Answer, ctx) else {
            return;
        };
        reply.timing = self.replies.take_answer_timing();
        let response_id = reply.id;
        self.replies.begin(reply);
        self.state = TurnState::Thinking;
        let query = history::retrieval_query(&self.history);
        match (self.engines.knowledge.clone(), query) {
            (Some(knowledge), Some(query)) => {
                self.retrieve_then_answer(response_id, knowledge, query, ctx)
            }
            _ => self.start_llm_round(ctx),
        }
    }

    /// Looks `query` up, then starts the model with what was found. A lookup that fails or
    /// misses its deadline is logged and the model answers without it. The time counts as
    /// the turn's tool time.
    fn retrieve_then_answer(
        &mut self,
        response_id: u64,
        knowledge: Arc<dyn KnowledgeRetriever>,
        query: String,
        ctx: &mut Context<Self>,
    ) {
        let deadline = self.config.timeouts.retrieval;
        let started = Instant::now();
        let lookup = async move { tokio::time::timeout(deadline, knowledge.retrieve(query)).await };
        ctx.spawn(lookup.into_actor(self).map(move |found, session, ctx| {
            let session_id = session.config.session_id.clone();
            // The caller may have spoken again meanwhile: that reply is gone.
            let Some(reply) = session.replies.with_id(response_id) else {
                return;
            };
            reply.tool_ms += ms_between(started, Instant::now());
            reply.knowledge = match found {
                Ok(Ok(section)) => section,
                Ok(Err(error)) => {
                    tracing::warn!(session = %session_id, %error, "knowledge retrieval failed");
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        session = %session_id,
                        deadline_ms = deadline.as_millis() as u64,
                        "knowledge retrieval missed its deadline"
                    );
                    None
                }
            };
            session.start_llm_round(ctx);
        }));
    }

    /// The model's request for the conversation so far: the system prompt, the history, and
    /// what the knowledge base said for this turn, if anything (see
    /// [`history::with_knowledge`]).
    pub(super) fn model_request(&self, knowledge: Option<&str>) -> ChatRequest {
        let agent = &self.config.agent;
        let messages = history::with_knowledge(&agent.system_prompt, &self.history, knowledge);
        ChatRequest {
            model: agent.model.clone(),
            messages,
            tools: agent.tools.clone(),
            temperature: agent.temperature,
            max_tokens: agent.max_tokens,
            conversation: Some(self.config.session_id.clone()),
        }
    }

    fn start_llm_round(&mut self, ctx: &mut Context<Self>) {
        let knowledge = self.replies.get().and_then(|r| r.knowledge.as_deref());
        let request = self.model_request(knowledge);
        let engine = self.engines.llm.clone();
        let timeout = self.config.timeouts.llm;
        let guard = self.live.guard();
        let me = ctx.address();
        let Some(reply) = self.replies.get_mut() else {
            return;
        };
        reply.start_round(Instant::now());
        let links = LlmLinks::to(&me);
        reply.llm = Some(LlmStream::new(reply.id, engine, request, links, timeout, guard).start());
    }

    /// The caller spoke again before the reply made a sound: drop it without a record.
    pub(super) fn drop_silent_reply(&mut self) {
        if let Some(reply) = self.replies.end() {
            self.emit(SessionEvent::AgentCancelled {
                response_id: reply.id,
            });
            reply.stop_children(self.tools.as_ref());
            history::close_tool_calls(&mut self.history, &reply.tools_pending);
            history::truncate_to_heard(&mut self.history, reply.history_from, 0, &reply.ledger);
            self.replies.dropped(&reply);
        }
    }

    /// Cuts the reply short: a barge-in (`detected`) or a client's request (`None`).
    pub(super) fn interrupt_reply(&mut self, detected: Option<BargeInDetected>) {
        let Some(reply) = self.replies.end() else {
            return;
        };
        if reply.audio_started {
            self.clear_client(reply.id);
        }
        let cleared_at = Instant::now();
        reply.stop_children(self.tools.as_ref());
        self.barge_in.disarm();
        let played = reply.ledger.words_played_at(cleared_at);
        let record = match detected {
            Some(d) => {
                let late = self.caller.lateness(d.decided_ms, d.decided_at);
                barge_in_record(&d, late, &reply.ledger, played, cleared_at)
            }
            None => BargeInRecord {
                detection_ms: 0,
                stop_ms: 0,
                bleed_through: String::new(),
                requested: true,
            },
        };
        history::close_tool_calls(&mut self.history, &reply.tools_pending);
        history::truncate_to_heard(&mut self.history, reply.history_from, played, &reply.ledger);
        self.totals.interruptions += 1;
        let text = reply.ledger.words_between(0, played);
        self.finish_agent_turn(&reply, text, true, None, Some(record));
    }

    /// The session ended while the reply was playing: the agent's turn is recorded as
    /// interrupted, with the words played by now.
    pub(super) fn finish_cut_off_reply(&mut self, reply: &Reply) {
        let played = reply.ledger.words_played_at(Instant::now());
        let text = reply.ledger.words_between(0, played);
        self.finish_agent_turn(reply, text, true, None, None);
    }

    /// The reply failed: stop it, record the failure, apologise (unless the apology failed).
    fn fail_reply(&mut self, error: TurnError, ctx: &mut Context<Self>) {
        let Some(reply) = self.replies.end() else {
            return;
        };
        if reply.audio_started {
            self.clear_client(reply.id);
        }
        reply.stop_children(self.tools.as_ref());
        self.barge_in.disarm();
        let played = reply.ledger.words_played_at(Instant::now());
        history::close_tool_calls(&mut self.history, &reply.tools_pending);
        history::truncate_to_heard(&mut self.history, reply.history_from, played, &reply.ledger);
        self.emit(SessionEvent::Error {
            code: error.code(),
            message: error.to_string(),
        });
        let text = reply.ledger.words_between(0, played);
        let message = format!("{}: {}", error.code(), error);
        self.finish_agent_turn(&reply, text, false, Some(message), None);
        self.state = TurnState::Listening;
        self.tracker.reset();
        if reply.kind != ReplyKind::Apology {
            let apology = self.config.apology_text.clone();
            self.start_fixed_reply(ReplyKind::Apology, &apology, ctx);
        }
    }

    /// Completes the reply if the model is done, all audio was sent and has played (or
    /// `force`, when the last mark is overdue).
    fn maybe_complete(&mut self, force: bool, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let ready = self
            .replies
            .get()
            .is_some_and(|r| r.is_complete(force, now));
        if !ready {
            return;
        }
        let Some(reply) = self.replies.end() else {
            return;
        };
        self.barge_in.disarm();
        let text = reply.ledger.queued_text();
        self.finish_agent_turn(&reply, text, false, None, None);
        if let Some(ending) = reply.ends_session {
            let reason = match ending {
                SessionEnding::Conversation => EndReason::AgentEnded,
                SessionEnding::Transfer => EndReason::Transferred,
                SessionEnding::Redirect => EndReason::Redirected,
            };
            self.end(reason, ctx);
            return;
        }
        if self.state != TurnState::UserSpeaking {
            self.state = TurnState::Listening;
            self.tracker.reset();
        }
    }

    fn finish_agent_turn(
        &mut self,
        reply: &Reply,
        text: String,
        interrupted: bool,
        error: Option<String>,
        barge_in: Option<BargeInRecord>,
    ) {
        let now = Instant::now();
        if reply.audio_started {
            self.emit(SessionEvent::AgentAudioEnd {
                response_id: reply.id,
                interrupted: interrupted || error.is_some(),
            });
        }
        let start = reply.first_audio_at.unwrap_or(reply.started_at);
        let turn = TurnRecord {
            index: self.next_turn_index(),
            speaker: Speaker::Agent,
            response_id: Some(reply.id),
            text,
            start_ms: self.session_ms(start),
            end_ms: self.session_ms(now),
            stt_ms: reply.timing.map_or(0, |t| t.stt_ms),
            llm_ms: reply.llm_ms,
            tts_ms: reply.tts_ms(),
            interrupted,
            error,
            latency: reply.latency,
            barge_in,
            endpoint: None,
        };
        self.record_turn(turn);
    }
}

impl Handler<AgentTextDelta> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: AgentTextDelta, _: &mut Self::Context) {
        if self.replies.is_current(msg.response_id) {
            self.emit(SessionEvent::AgentTextDelta {
                response_id: msg.response_id,
                text: msg.text,
            });
        }
    }
}

impl Handler<SentenceReady> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: SentenceReady, _: &mut Self::Context) {
        let Some(reply) = self.replies.with_id(msg.response_id) else {
            return;
        };
        reply.sentence_ready(Instant::now());
        reply.tts.do_send(Speak(msg.text));
    }
}

impl Handler<LlmFinished> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: LlmFinished, ctx: &mut Self::Context) {
        let max_steps = self.config.agent.max_steps;
        let Some(reply) = self.replies.with_id(msg.response_id) else {
            return;
        };
        let now = Instant::now();
        reply.end_round(now);
        if msg.tool_calls.is_empty() {
            reply.llm_done = true;
            reply.tts.do_send(EndOfResponse);
            if !msg.content.trim().is_empty() {
                self.history
                    .push(ChatMessage::new(Role::Assistant, msg.content.trim()));
            }
            // A history the caller's next turn would cut is cut now, and the model reads what
            // is kept while the answer plays, not after the caller has spoken. Not for an
            // agent with knowledge: the embedded model reads each turn's facts in its system
            // turn, so what it would read ahead is not the start of the next prompt.
            if !self.replies.answer_owed()
                && history::cut_before_next_turn(&mut self.history, self.replies.history_from_mut())
                && self.engines.knowledge.is_none()
            {
                self.engines.llm.warm(self.model_request(None));
            }
            self.maybe_complete(false, ctx);
            self.answer_if_waiting(ctx);
            return;
        }
        if reply.steps >= max_steps {
            self.fail_reply(TurnError::ToolStepLimit(max_steps), ctx);
            return;
        }
        reply.start_tools(msg.tool_calls.clone(), now);
        let response_id = reply.id;
        let mut message = ChatMessage::new(Role::Assistant, msg.content.trim());
        message.tool_calls = msg.tool_calls.clone();
        self.history.push(message);
        for call in &msg.tool_calls {
            self.emit(SessionEvent::ToolCall(call.clone()));
        }
        if let Some(tools) = self.tools.as_ref() {
            tools.do_send(RunTools {
                response_id,
                calls: msg.tool_calls,
            });
        }
    }
}

impl Handler<LlmFailed> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: LlmFailed, ctx: &mut Self::Context) {
        if self.replies.is_current(msg.response_id) {
            self.fail_reply(msg.error, ctx);
        }
    }
}

impl Handler<ToolsFinished> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: ToolsFinished, ctx: &mut Self::Context) {
        let Some(reply) = self.replies.with_id(msg.response_id) else {
            return;
        };
        reply.finish_tools(&msg.outcomes, Instant::now());
        for outcome in msg.outcomes {
            self.totals.tool_executions += 1;
            self.observer
                .tool_executed(&self.config.session_id, &outcome);
            self.emit(SessionEvent::ToolResult {
                call_id: outcome.call.id.clone(),
                name: outcome.call.name.clone(),
                output: outcome.output.clone(),
                is_error: outcome.is_error,
                duration_ms: outcome.duration_ms,
            });
            let mut answer = ChatMessage::new(Role::Tool, outcome.output);
            answer.tool_call_id = Some(outcome.call.id);
            self.history.push(answer);
        }
        self.start_llm_round(ctx);
    }
}

impl Handler<PlaybackStarted> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: PlaybackStarted, _: &mut Self::Context) {
        let Some(reply) = self.replies.with_id(msg.response_id) else {
            return;
        };
        reply.start_playback(msg.at);
        let id = reply.id;
        if self.state != TurnState::UserSpeaking {
            self.state = TurnState::AgentSpeaking;
            self.tracker.reset();
        }
        self.barge_in.arm(id);
        self.emit(SessionEvent::AgentAudioStart { response_id: id });
    }
}

impl Handler<SegmentQueued> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: SegmentQueued, _: &mut Self::Context) {
        if let Some(reply) = self.replies.with_id(msg.response_id) {
            reply.ledger.queued(msg.mark, msg.text, msg.duration_ms);
        }
    }
}

impl Handler<PlaybackMark> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: PlaybackMark, ctx: &mut Self::Context) {
        if self.liveness.ended {
            return;
        }
        // Marks of replies already cleared or finished were discarded, not played: only the
        // current reply's ledger listens.
        let now = Instant::now();
        let matched = self
            .replies
            .get_mut()
            .is_some_and(|r| r.ledger.acked(&msg.name, now));
        if matched {
            self.maybe_complete(false, ctx);
            self.answer_if_waiting(ctx);
        }
    }
}

impl Handler<PlaybackDrained> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: PlaybackDrained, ctx: &mut Self::Context) {
        let grace = u64::from(self.config.pacing.mark_grace_ms);
        let Some(reply) = self.replies.with_id(msg.response_id) else {
            return;
        };
        reply.drained = true;
        let remaining = reply.unplayed_ms(Instant::now());
        let id = reply.id;
        ctx.run_later(Duration::from_millis(remaining + grace), move |act, ctx| {
            if act.replies.is_current(id) {
                act.maybe_complete(true, ctx);
                act.answer_if_waiting(ctx);
            }
        });
        if remaining > 0 {
            // In clock mode nothing else will wake the session when the audio has played.
            ctx.run_later(Duration::from_millis(remaining), move |act, ctx| {
                if act.replies.is_current(id) {
                    act.maybe_complete(false, ctx);
                    act.answer_if_waiting(ctx);
                }
            });
        }
        self.maybe_complete(false, ctx);
        self.answer_if_waiting(ctx);
    }
}

impl Handler<TtsFailed> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: TtsFailed, ctx: &mut Self::Context) {
        if self.replies.is_current(msg.response_id) {
            self.fail_reply(msg.error, ctx);
        }
    }
}

impl CallSession {
    /// The caller interrupted: cut the reply short and start the caller's turn at the onset.
    pub(super) fn barged_in(&mut self, msg: BargeInDetected) {
        if self.liveness.ended || !self.replies.is_current(msg.response_id) {
            return;
        }
        self.interrupt_reply(Some(msg));
        // The interrupted turn was just recorded: if the speech that interrupted it yields no
        // words, the interruption was a false one.
        let interrupted_turn = self.next_turn_index().checked_sub(1);
        self.caller.interrupted(interrupted_turn);
        // The interrupting speech is the start of the caller's next turn: put the tracker in
        // the speaking state from the onset and send the audio since the caller's voice began
        // (words too soft for the echo gate included) to the recognizer.
        self.tracker.reset();
        let sustained = msg.decided_ms.saturating_sub(msg.onset_ms).max(1) as u32;
        let onset_ms = self.config.turn.speech_onset_ms.max(sustained);
        self.tracker.update(msg.onset_ms, onset_ms, true);
        self.user_started(msg.speech_began_ms);
    }

    /// Starts the answer to a caller turn that came in while a reply was still finishing.
    fn answer_if_waiting(&mut self, ctx: &mut Context<Self>) {
        if self.replies.answer_due()
            && !self.caller.awaits_transcript()
            && self.state == TurnState::Listening
        {
            self.start_answer(ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A reply whose playback child is an address nobody reads.
    fn reply(id: u64, kind: ReplyKind, acks: PlaybackAcks, now: Instant) -> Reply {
        let (unread, _) = actix::dev::channel::channel::<TtsPlayback>(1);
        Reply::new(id, kind, Addr::new(unread), acks, 0, now)
    }

    fn answer(id: u64) -> Reply {
        reply(id, ReplyKind::Answer, PlaybackAcks::Marks, Instant::now())
    }

    fn timing(speech_end_at: Instant) -> AnswerTiming {
        AnswerTiming {
            speech_end_at,
            endpoint_ms: 600,
            stt_ms: 200,
        }
    }

    fn outcome(id: &str, ends_session: Option<SessionEnding>) -> ToolOutcome {
        ToolOutcome {
            call: ToolCall {
                id: id.into(),
                name: "tool".into(),
                arguments: "{}".into(),
            },
            output: "ok".into(),
            is_error: false,
            duration_ms: 5,
            ends_session,
        }
    }

    #[test]
    fn reply_ids_count_from_one_and_never_repeat() {
        let mut replies = Replies::new();
        assert_eq!(
            (replies.next_id(), replies.next_id(), replies.next_id()),
            (1, 2, 3)
        );
    }

    #[test]
    fn only_the_reply_in_progress_is_found_and_only_its_audio_passes_the_gate() {
        let mut replies = Replies::new();
        assert!(!replies.is_replying());
        replies.begin(answer(2));
        assert!(replies.is_replying());
        assert!(replies.is_current(2) && !replies.is_current(1));
        assert!(replies.with_id(1).is_none());
        assert_eq!(replies.with_id(2).map(|r| r.id), Some(2));
        assert!(replies.gate.is_open_for(2) && !replies.gate.is_open_for(1));
        assert_eq!(replies.end().map(|r| r.id), Some(2));
        assert!(!replies.gate.is_open_for(2));
        assert!(!replies.is_current(2) && replies.with_id(2).is_none());
        assert!(replies.end().is_none());
    }

    #[test]
    fn a_reply_is_silent_until_its_audio_starts() {
        let mut replies = Replies::new();
        assert!(!replies.is_silent());
        replies.begin(answer(1));
        assert!(replies.is_silent());
        if let Some(reply) = replies.get_mut() {
            reply.start_playback(Instant::now());
        }
        assert!(!replies.is_silent());
        assert!(replies.is_replying());
    }

    #[test]
    fn an_answer_is_due_while_a_caller_turn_waits_and_no_reply_is_in_progress() {
        let mut replies = Replies::new();
        assert!(!replies.answer_due());
        let heard = Instant::now();
        replies.await_answer(Some(timing(heard)));
        assert!(replies.answer_due());
        // A reply still finishing holds the answer back.
        replies.begin(reply(1, ReplyKind::Greeting, PlaybackAcks::Marks, heard));
        assert!(!replies.answer_due());
        replies.end();
        assert!(replies.answer_due());
        replies.answering();
        assert!(!replies.answer_due());
        assert_eq!(
            replies.take_answer_timing().map(|t| t.speech_end_at),
            Some(heard)
        );
        assert!(replies.take_answer_timing().is_none());
        // Typed text has no timing.
        replies.await_answer(None);
        assert!(replies.answer_due() && replies.take_answer_timing().is_none());
    }

    #[test]
    fn a_dropped_answer_leaves_its_caller_turn_unanswered() {
        let mut replies = Replies::new();
        replies.dropped(&reply(
            1,
            ReplyKind::Greeting,
            PlaybackAcks::Marks,
            Instant::now(),
        ));
        replies.dropped(&reply(
            2,
            ReplyKind::Apology,
            PlaybackAcks::Marks,
            Instant::now(),
        ));
        assert!(!replies.answer_due());
        replies.dropped(&answer(3));
        assert!(replies.answer_due());
    }

    #[test]
    fn the_history_position_of_the_reply_in_progress_can_be_moved() {
        let mut replies = Replies::new();
        assert!(replies.history_from_mut().is_none());
        let mut reply = answer(1);
        reply.history_from = 12;
        replies.begin(reply);
        if let Some(from) = replies.history_from_mut() {
            *from -= 10;
        }
        assert_eq!(replies.get().map(|r| r.history_from), Some(2));
    }

    #[test]
    fn model_time_runs_to_each_rounds_first_sentence_or_its_end() {
        let t0 = Instant::now();
        let mut reply = reply(1, ReplyKind::Answer, PlaybackAcks::Marks, t0);
        reply.start_round(t0);
        reply.sentence_ready(t0 + ms(300));
        reply.sentence_ready(t0 + ms(500));
        reply.end_round(t0 + ms(900));
        assert_eq!(reply.llm_ms, 300);
        assert_eq!(reply.first_sentence_at, Some(t0 + ms(300)));
        // A round that only calls tools counts whole.
        reply.start_round(t0 + ms(1_000));
        reply.end_round(t0 + ms(1_400));
        assert_eq!(reply.llm_ms, 700);
        assert_eq!(reply.steps, 2);
        assert_eq!(reply.first_sentence_at, Some(t0 + ms(300)));
    }

    #[test]
    fn tool_time_runs_from_the_calls_to_their_outcomes() {
        let t0 = Instant::now();
        let mut reply = reply(1, ReplyKind::Answer, PlaybackAcks::Marks, t0);
        let calls = vec![outcome("c1", None).call];
        reply.start_tools(calls.clone(), t0 + ms(100));
        assert_eq!(reply.tools_pending, calls);
        reply.finish_tools(&[outcome("c1", None)], t0 + ms(350));
        assert_eq!(reply.tool_ms, 250);
        assert!(reply.tools_pending.is_empty());
        // Outcomes without calls started add no time.
        reply.finish_tools(&[], t0 + ms(900));
        assert_eq!(reply.tool_ms, 250);
    }

    #[test]
    fn the_first_tool_that_ends_the_session_decides_how() {
        let mut reply = answer(1);
        reply.finish_tools(&[outcome("c1", None)], Instant::now());
        assert_eq!(reply.ends_session, None);
        reply.finish_tools(
            &[
                outcome("c2", None),
                outcome("c3", Some(SessionEnding::Transfer)),
                outcome("c4", Some(SessionEnding::Conversation)),
            ],
            Instant::now(),
        );
        assert_eq!(reply.ends_session, Some(SessionEnding::Transfer));
        reply.finish_tools(
            &[outcome("c5", Some(SessionEnding::Redirect))],
            Instant::now(),
        );
        assert_eq!(reply.ends_session, Some(SessionEnding::Transfer));
    }

    #[test]
    fn latency_parts_add_up_to_the_total_with_the_rest_the_platforms() {
        let t0 = Instant::now();
        let latency = timing(t0).latency(t0 + ms(2_000), 700, 100, 250);
        assert_eq!(
            latency,
            TurnLatency {
                total_ms: 2_000,
                endpoint_ms: 600,
                stt_ms: 200,
                llm_ms: 700,
                tool_ms: 100,
                tts_ms: 250,
                platform_ms: 150,
            }
        );
        // Parts measured on other clocks may exceed the total: the platform's share is 0.
        assert_eq!(
            timing(t0)
                .latency(t0 + ms(1_000), 700, 100, 250)
                .platform_ms,
            0
        );
    }

    #[test]
    fn an_answers_first_audio_fixes_its_latency() {
        let t0 = Instant::now();
        let mut reply = reply(1, ReplyKind::Answer, PlaybackAcks::Marks, t0);
        reply.timing = Some(timing(t0));
        reply.start_round(t0 + ms(800));
        reply.sentence_ready(t0 + ms(1_500));
        reply.start_playback(t0 + ms(1_800));
        assert!(reply.audio_started);
        assert_eq!(reply.tts_ms(), 300);
        assert_eq!(reply.ledger.started_at(), Some(t0 + ms(1_800)));
        let latency = reply
            .latency
            .map(|l| (l.total_ms, l.llm_ms, l.tts_ms, l.platform_ms));
        assert_eq!(latency, Some((1_800, 700, 300, 0)));
        // A greeting answers nothing: no latency.
        let mut greeting = self::reply(2, ReplyKind::Greeting, PlaybackAcks::Marks, t0);
        greeting.start_playback(t0 + ms(500));
        assert!(greeting.latency.is_none());
        assert_eq!(greeting.tts_ms(), 0);
    }

    #[test]
    fn a_reply_completes_once_the_model_is_done_and_its_audio_sent_and_played() {
        let t0 = Instant::now();
        let mut reply = reply(1, ReplyKind::Answer, PlaybackAcks::Clock, t0);
        reply.ledger.queued("m1".into(), "one two".into(), 1_000);
        assert_eq!(reply.unplayed_ms(t0), 1_000);
        reply.start_playback(t0);
        assert_eq!(reply.unplayed_ms(t0 + ms(300)), 700);
        assert_eq!(reply.unplayed_ms(t0 + ms(1_500)), 0);
        let late = t0 + ms(5_000);
        assert!(!reply.is_complete(true, late));
        reply.llm_done = true;
        assert!(!reply.is_complete(true, late));
        reply.drained = true;
        assert!(!reply.is_complete(false, t0 + ms(999)));
        assert!(reply.is_complete(true, t0 + ms(999)));
        assert!(reply.is_complete(false, t0 + ms(1_000)));
    }

    #[test]
    fn a_barge_in_is_timed_as_the_caller_lived_it() {
        let t0 = Instant::now();
        let mut ledger = PlaybackLedger::new(PlaybackAcks::Clock);
        ledger.started(t0);
        ledger.queued("m1".into(), "one two three four".into(), 1_000);
        ledger.queued("m2".into(), "five six seven eight".into(), 1_000);
        let detected = BargeInDetected {
            response_id: 1,
            onset_ms: 5_100,
            decided_ms: 5_300,
            speech_began_ms: 5_000,
            decided_at: t0 + ms(1_500),
        };
        let cleared_at = t0 + ms(1_560);
        let played = ledger.words_played_at(cleared_at);
        assert_eq!(played, 6);
        // Heard 100 ms late: the caller's voice began 400 ms before the decision.
        let record = barge_in_record(&detected, ms(100), &ledger, played, cleared_at);
        assert_eq!(
            record,
            BargeInRecord {
                detection_ms: 400,
                stop_ms: 60,
                bleed_through: "five six".into(),
                requested: false,
            }
        );
        // On time: the talking time alone, and what played since the voice began.
        let record = barge_in_record(&detected, Duration::ZERO, &ledger, played, cleared_at);
        assert_eq!(record.detection_ms, 300);
        assert_eq!(record.bleed_through, "five six");
        let record = barge_in_record(&detected, ms(700), &ledger, played, cleared_at);
        assert_eq!(record.detection_ms, 1_000);
        assert_eq!(record.bleed_through, "three four five six");
    }
}
