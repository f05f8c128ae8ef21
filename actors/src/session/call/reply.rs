//! The agent's side of a turn: a reply is the greeting, an answer (model rounds, tools,
//! sentences to speech) or an apology. Here the session starts replies, routes their
//! children's messages, tracks what was played, and ends them: completed, interrupted by the
//! caller (barge-in) or failed.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use crate::engine::{ChatMessage, ChatRequest, KnowledgeRetriever, Role, SessionEnding, ToolCall};

use super::super::barge_in::BargeInDetected;
use super::super::error::TurnError;
use super::super::llm::{
    AgentTextDelta, LlmFailed, LlmFinished, LlmLinks, LlmStream, SentenceReady,
};
use super::super::messages::Shutdown;
use super::super::messages::{PlaybackMark, SessionEvent};
use super::super::observer::{BargeInRecord, EndReason, Speaker, TurnLatency, TurnRecord};
use super::super::playback::PlaybackLedger;
use super::super::sentences::split_text;
use super::super::tools::{CancelTools, RunTools, ToolRunner, ToolsFinished};
use super::super::tts::{
    EndOfResponse, PlaybackDrained, PlaybackLinks, PlaybackStarted, SegmentQueued, Speak,
    TtsFailed, TtsPlayback, Voice,
};
use super::{history, AnswerTiming, CallSession, TurnState};

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
    steps: u32,
    llm_done: bool,
    drained: bool,
    ledger: PlaybackLedger,
    pub(super) history_from: usize,
    pub(super) audio_started: bool,
    started_at: Instant,
    timing: Option<AnswerTiming>,
    round_started: Instant,
    round_spoke: bool,
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

    fn tts_ms(&self) -> u64 {
        match (self.first_sentence_at, self.first_audio_at) {
            (Some(s), Some(a)) => a.saturating_duration_since(s).as_millis() as u64,
            _ => 0,
        }
    }
}

fn ms_between(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_millis() as u64
}

impl CallSession {
    fn current_reply(&mut self, response_id: u64) -> Option<&mut Reply> {
        self.reply.as_mut().filter(|r| r.id == response_id)
    }

    /// Starts a reply whose playback child is ready; `None` if it could not be built.
    fn new_reply(&mut self, kind: ReplyKind, ctx: &mut Context<Self>) -> Option<Reply> {
        let id = self.next_reply_id;
        self.next_reply_id += 1;
        let me = ctx.address();
        let links = PlaybackLinks {
            started: me.clone().recipient(),
            drained: me.clone().recipient(),
            failed: me.clone().recipient(),
            queued: me.clone().recipient(),
            output: self.output.clone(),
            // Agent levels only matter to an echo gate; without one they are not sent.
            echo_levels: self.barge_in.wants_agent_levels().then(|| me.recipient()),
            gate: self.gate.clone(),
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
        self.gate.open(id);
        let now = Instant::now();
        Some(Reply {
            id,
            kind,
            llm: None,
            tts,
            steps: 0,
            llm_done: false,
            drained: false,
            ledger: PlaybackLedger::new(self.config.pacing.acks),
            history_from: self.history.len(),
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
        })
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
        self.reply = Some(reply);
        if self.state != TurnState::UserSpeaking {
            self.state = TurnState::Thinking;
        }
    }

    /// Answers the caller turns in the history.
    pub(super) fn start_answer(&mut self, ctx: &mut Context<Self>) {
        self.awaiting_answer = false;
        let Some(mut reply) = self.new_reply(ReplyKind::Answer, ctx) else {
            return;
        };
        reply.timing = self.answer_timing.take();
        let response_id = reply.id;
        self.reply = Some(reply);
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
            let Some(reply) = session.current_reply(response_id) else {
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

    /// The model's request for the conversation so far: the system prompt (with what the
    /// knowledge base said, if anything) and the history.
    pub(super) fn model_request(&self, knowledge: Option<&str>) -> ChatRequest {
        let agent = &self.config.agent;
        let mut system = agent.system_prompt.clone();
        if let Some(knowledge) = knowledge {
            system.push_str(knowledge);
        }
        let mut messages = Vec::with_capacity(self.history.len() + 1);
        messages.push(ChatMessage::new(Role::System, system));
        messages.extend(self.history.iter().cloned());
        ChatRequest {
            model: agent.model.clone(),
            messages,
            tools: agent.tools.clone(),
            temperature: agent.temperature,
            max_tokens: agent.max_tokens,
        }
    }

    fn start_llm_round(&mut self, ctx: &mut Context<Self>) {
        let knowledge = self.reply.as_ref().and_then(|r| r.knowledge.as_deref());
        let request = self.model_request(knowledge);
        let engine = self.engines.llm.clone();
        let timeout = self.config.timeouts.llm;
        let guard = self.live.guard();
        let me = ctx.address();
        let Some(reply) = self.reply.as_mut() else {
            return;
        };
        reply.steps += 1;
        reply.round_started = Instant::now();
        reply.round_spoke = false;
        let links = LlmLinks::to(&me);
        reply.llm = Some(LlmStream::new(reply.id, engine, request, links, timeout, guard).start());
    }

    /// The caller spoke again before the reply made a sound: drop it without a record.
    pub(super) fn drop_silent_reply(&mut self) {
        if let Some(reply) = self.reply.take() {
            self.gate.close();
            self.emit(SessionEvent::AgentCancelled {
                response_id: reply.id,
            });
            reply.stop_children(self.tools.as_ref());
            history::close_tool_calls(&mut self.history, &reply.tools_pending);
            history::truncate_to_heard(&mut self.history, reply.history_from, 0, &reply.ledger);
            if reply.kind == ReplyKind::Answer {
                // The caller turn it answered is still unanswered.
                self.awaiting_answer = true;
            }
        }
    }

    /// Cuts the reply short: a barge-in (`detected`) or a client's request (`None`).
    pub(super) fn interrupt_reply(
        &mut self,
        detected: Option<BargeInDetected>,
        _ctx: &mut Context<Self>,
    ) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        self.gate.close();
        if reply.audio_started {
            self.clear_client(reply.id);
        }
        let cleared_at = Instant::now();
        reply.stop_children(self.tools.as_ref());
        self.barge_in.disarm();
        let played = reply.ledger.words_played_at(cleared_at);
        let record = match detected {
            Some(d) => {
                // Timed as the caller lived it: the frame that decided was heard late by
                // however far the session had fallen behind (a busy machine, a backlog in the
                // socket), and the caller's voice began before that frame was due by the
                // sustain, and by the soft words the echo gate did not count before it.
                let talking_ms = d.decided_ms.saturating_sub(d.speech_began_ms);
                let late = self.stream_clock.lateness(d.decided_ms, d.decided_at);
                let onset_at = d
                    .decided_at
                    .checked_sub(late + Duration::from_millis(talking_ms))
                    .unwrap_or(d.decided_at);
                let before = reply.ledger.words_played_at(onset_at);
                BargeInRecord {
                    detection_ms: ms_between(onset_at, d.decided_at).max(talking_ms),
                    stop_ms: ms_between(d.decided_at, cleared_at),
                    bleed_through: reply.ledger.words_between(before, played),
                    requested: false,
                }
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
        let Some(reply) = self.reply.take() else {
            return;
        };
        self.gate.close();
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
            .reply
            .as_ref()
            .is_some_and(|r| r.llm_done && r.drained && (force || r.ledger.all_played(now)));
        if !ready {
            return;
        }
        let Some(reply) = self.reply.take() else {
            return;
        };
        self.gate.close();
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
        if self.current_reply(msg.response_id).is_some() {
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
        let Some(reply) = self.current_reply(msg.response_id) else {
            return;
        };
        let now = Instant::now();
        if !reply.round_spoke {
            reply.round_spoke = true;
            reply.llm_ms += ms_between(reply.round_started, now);
        }
        reply.first_sentence_at.get_or_insert(now);
        reply.tts.do_send(Speak(msg.text));
    }
}

impl Handler<LlmFinished> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: LlmFinished, ctx: &mut Self::Context) {
        let max_steps = self.config.agent.max_steps;
        let Some(reply) = self.current_reply(msg.response_id) else {
            return;
        };
        let now = Instant::now();
        if !reply.round_spoke {
            reply.llm_ms += ms_between(reply.round_started, now);
        }
        reply.llm = None;
        if msg.tool_calls.is_empty() {
            reply.llm_done = true;
            reply.tts.do_send(EndOfResponse);
            if !msg.content.trim().is_empty() {
                self.history
                    .push(ChatMessage::new(Role::Assistant, msg.content.trim()));
            }
            self.maybe_complete(false, ctx);
            self.answer_if_waiting(ctx);
            return;
        }
        if reply.steps >= max_steps {
            self.fail_reply(TurnError::ToolStepLimit(max_steps), ctx);
            return;
        }
        reply.tools_started = Some(now);
        reply.tools_pending = msg.tool_calls.clone();
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
        if self.current_reply(msg.response_id).is_some() {
            self.fail_reply(msg.error, ctx);
        }
    }
}

impl Handler<ToolsFinished> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: ToolsFinished, ctx: &mut Self::Context) {
        let Some(reply) = self.current_reply(msg.response_id) else {
            return;
        };
        if let Some(started) = reply.tools_started.take() {
            reply.tool_ms += ms_between(started, Instant::now());
        }
        reply.tools_pending.clear();
        reply.ends_session = reply
            .ends_session
            .or(msg.outcomes.iter().find_map(|o| o.ends_session));
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
        let Some(reply) = self.current_reply(msg.response_id) else {
            return;
        };
        reply.audio_started = true;
        reply.first_audio_at = Some(msg.at);
        reply.ledger.started(msg.at);
        if let Some(timing) = reply.timing {
            let total_ms = ms_between(timing.speech_end_at, msg.at);
            let tts_ms = reply.tts_ms();
            let parts = timing.endpoint_ms + timing.stt_ms + reply.llm_ms + reply.tool_ms + tts_ms;
            reply.latency = Some(TurnLatency {
                total_ms,
                endpoint_ms: timing.endpoint_ms,
                stt_ms: timing.stt_ms,
                llm_ms: reply.llm_ms,
                tool_ms: reply.tool_ms,
                tts_ms,
                platform_ms: total_ms.saturating_sub(parts),
            });
        }
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
        if let Some(reply) = self.current_reply(msg.response_id) {
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
            .reply
            .as_mut()
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
        let Some(reply) = self.current_reply(msg.response_id) else {
            return;
        };
        reply.drained = true;
        let now = Instant::now();
        let played_ms = reply.ledger.started_at().map_or(0, |t| ms_between(t, now));
        let remaining = reply.ledger.queued_ms().saturating_sub(played_ms);
        let id = reply.id;
        ctx.run_later(Duration::from_millis(remaining + grace), move |act, ctx| {
            if act.reply.as_ref().is_some_and(|r| r.id == id) {
                act.maybe_complete(true, ctx);
                act.answer_if_waiting(ctx);
            }
        });
        if remaining > 0 {
            // In clock mode nothing else will wake the session when the audio has played.
            ctx.run_later(Duration::from_millis(remaining), move |act, ctx| {
                if act.reply.as_ref().is_some_and(|r| r.id == id) {
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
        if self.current_reply(msg.response_id).is_some() {
            self.fail_reply(msg.error, ctx);
        }
    }
}

impl CallSession {
    /// The caller interrupted: cut the reply short and start the caller's turn at the onset.
    pub(super) fn barged_in(&mut self, msg: BargeInDetected, ctx: &mut Context<Self>) {
        if self.liveness.ended || self.current_reply(msg.response_id).is_none() {
            return;
        }
        self.interrupt_reply(Some(msg), ctx);
        // The interrupted turn was just recorded: if the speech that interrupted it yields no
        // words, the interruption was a false one.
        self.barge_in_turn = self.next_turn_index().checked_sub(1);
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
        if self.reply.is_none()
            && self.awaiting_answer
            && self.pending.is_empty()
            && self.state == TurnState::Listening
        {
            self.start_answer(ctx);
        }
    }
}
