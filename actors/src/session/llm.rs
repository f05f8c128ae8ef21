//! [`LlmStream`]: the child actor that runs one model round of a reply. It streams the
//! model's tokens, forwards them as text deltas, cuts them into speakable sentences as they
//! arrive ([`SentenceSplitter`]) so synthesis can start early, collects tool calls, and
//! reports the end of the round. One actor per round; stopping it drops the engine stream,
//! which is how a barge-in stops generation.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use crate::engine::{ChatRequest, EngineError, FinishReason, LanguageModel, LlmEvent, ToolCall};

use super::error::TurnError;
use super::liveness::LiveGuard;
use super::messages::Shutdown;
use super::sentences::SentenceSplitter;
use super::stream::receiver_stream;

/// How often the stall check runs.
const STALL_CHECK: Duration = Duration::from_millis(100);

/// New answer text from the model.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AgentTextDelta {
    /// The reply.
    pub response_id: u64,
    /// The new text.
    pub text: String,
}

/// A speakable sentence (or clause) of the answer is complete.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SentenceReady {
    /// The reply.
    pub response_id: u64,
    /// The sentence, trimmed.
    pub text: String,
}

/// The model finished its round.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct LlmFinished {
    /// The reply.
    pub response_id: u64,
    /// Everything the model wrote this round.
    pub content: String,
    /// Tool calls it asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub reason: FinishReason,
}

/// The model round failed.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct LlmFailed {
    /// The reply.
    pub response_id: u64,
    /// What went wrong.
    pub error: TurnError,
}

/// Where a model round reports: the session's handlers of the four messages above. All four
/// lead to the same mailbox, so they arrive in the order they were sent.
#[derive(Clone)]
pub struct LlmLinks {
    /// New answer text.
    pub delta: Recipient<AgentTextDelta>,
    /// A speakable sentence.
    pub sentence: Recipient<SentenceReady>,
    /// The end of the round.
    pub finished: Recipient<LlmFinished>,
    /// The round's failure.
    pub failed: Recipient<LlmFailed>,
}

impl LlmLinks {
    /// The links to one actor that handles all four messages.
    pub fn to<A>(actor: &Addr<A>) -> Self
    where
        A: Actor<Context = Context<A>>
            + Handler<AgentTextDelta>
            + Handler<SentenceReady>
            + Handler<LlmFinished>
            + Handler<LlmFailed>,
    {
        Self {
            delta: actor.clone().recipient(),
            sentence: actor.clone().recipient(),
            finished: actor.clone().recipient(),
            failed: actor.clone().recipient(),
        }
    }
}

/// One model round (see the module docs).
pub struct LlmStream {
    response_id: u64,
    engine: Arc<dyn LanguageModel>,
    request: Option<ChatRequest>,
    links: LlmLinks,
    splitter: SentenceSplitter,
    content: String,
    tool_calls: Vec<ToolCall>,
    timeout: Duration,
    last_event: Instant,
    done: bool,
    _live: LiveGuard,
}

impl LlmStream {
    /// A round of reply `response_id` that sends `request`, failing if the model is silent for
    /// `timeout`.
    pub fn new(
        response_id: u64,
        engine: Arc<dyn LanguageModel>,
        request: ChatRequest,
        links: LlmLinks,
        timeout: Duration,
        live: LiveGuard,
    ) -> Self {
        Self {
            response_id,
            engine,
            request: Some(request),
            links,
            splitter: SentenceSplitter::default(),
            content: String::new(),
            tool_calls: Vec::new(),
            timeout,
            last_event: Instant::now(),
            done: false,
            _live: live,
        }
    }

    fn sentence(&self, text: String) {
        self.links.sentence.do_send(SentenceReady {
            response_id: self.response_id,
            text,
        });
    }

    fn finish(&mut self, reason: FinishReason, ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        self.done = true;
        if let Some(rest) = self.splitter.flush() {
            self.sentence(rest);
        }
        self.links.finished.do_send(LlmFinished {
            response_id: self.response_id,
            content: std::mem::take(&mut self.content),
            tool_calls: std::mem::take(&mut self.tool_calls),
            reason,
        });
        ctx.stop();
    }

    fn fail(&mut self, error: TurnError, ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        self.done = true;
        self.links.failed.do_send(LlmFailed {
            response_id: self.response_id,
            error,
        });
        ctx.stop();
    }
}

impl Actor for LlmStream {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let Some(request) = self.request.take() else {
            return;
        };
        self.last_event = Instant::now();
        match self.engine.stream(request) {
            Ok(rx) => {
                ctx.add_stream(receiver_stream(rx));
                ctx.run_interval(STALL_CHECK, |act, ctx| {
                    if act.last_event.elapsed() > act.timeout {
                        let ms = act.timeout.as_millis() as u64;
                        act.fail(TurnError::LlmTimeout(ms), ctx);
                    }
                });
            }
            Err(error) => self.fail(TurnError::Llm(error), ctx),
        }
    }
}

impl StreamHandler<Result<LlmEvent, EngineError>> for LlmStream {
    fn handle(&mut self, item: Result<LlmEvent, EngineError>, ctx: &mut Self::Context) {
        if self.done {
            return;
        }
        self.last_event = Instant::now();
        match item {
            Ok(LlmEvent::TextDelta(text)) => {
                self.content.push_str(&text);
                for sentence in self.splitter.push(&text) {
                    self.sentence(sentence);
                }
                self.links.delta.do_send(AgentTextDelta {
                    response_id: self.response_id,
                    text,
                });
            }
            Ok(LlmEvent::ToolCall(call)) => self.tool_calls.push(call),
            Ok(LlmEvent::Done { reason, .. }) => self.finish(reason, ctx),
            Err(error) => self.fail(TurnError::Llm(error), ctx),
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        // A stream that ends without `Done` still delivered a whole answer.
        let reason = if self.tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        self.finish(reason, ctx);
    }
}

impl Handler<Shutdown> for LlmStream {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        self.done = true;
        ctx.stop();
    }
}
