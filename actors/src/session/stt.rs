//! [`SttStream`]: the child actor that feeds caller speech to the speech-to-text engine's
//! stream and reports partial and final transcripts to the session. One per session, alive for
//! the whole call; if the engine breaks its stream, the actor reports the failure and opens a
//! new one.

use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::mpsc;

use crate::engine::{
    EngineError, EngineErrorKind, SpeechToText, SttEvent, SttInput, TranscribeOptions,
};

use super::call::CallSession;
use super::liveness::LiveGuard;
use super::stream::receiver_stream;

/// Consecutive failed (re)opens after which the recognizer counts as gone.
const MAX_REOPENS: u32 = 3;

/// Audio or an end-of-utterance for the recognizer.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SttFeed(pub SttInput);

/// A hypothesis from the recognizer.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct TranscriptPartial(pub String);

/// The final transcript of one utterance.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct TranscriptFinal(pub String);

/// The recognizer failed. `fatal` when no stream could be opened again.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SttFailed {
    /// What went wrong.
    pub error: EngineError,
    /// The recognizer cannot be used any more in this session.
    pub fatal: bool,
}

/// Stops a child actor.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// Streams caller audio to the recognizer (see the module docs).
pub struct SttStream {
    engine: Arc<dyn SpeechToText>,
    options: TranscribeOptions,
    session: Addr<CallSession>,
    input: Option<mpsc::Sender<SttInput>>,
    events: Option<SpawnHandle>,
    failures: u32,
    _live: LiveGuard,
}

impl SttStream {
    /// A recognizer child for `session`.
    pub fn new(
        engine: Arc<dyn SpeechToText>,
        options: TranscribeOptions,
        session: Addr<CallSession>,
        live: LiveGuard,
    ) -> Self {
        Self {
            engine,
            options,
            session,
            input: None,
            events: None,
            failures: 0,
            _live: live,
        }
    }

    fn open(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.events.take() {
            ctx.cancel_future(handle);
        }
        self.input = None;
        match self.engine.clone().stream(self.options.clone()) {
            Ok((input, events)) => {
                self.input = Some(input);
                self.events = Some(ctx.add_stream(receiver_stream(events)));
            }
            Err(error) => self.failed(error, ctx),
        }
    }

    fn failed(&mut self, error: EngineError, ctx: &mut Context<Self>) {
        self.failures += 1;
        let fatal = self.failures > MAX_REOPENS;
        self.session.do_send(SttFailed { error, fatal });
        if fatal {
            ctx.stop();
        } else {
            self.open(ctx);
        }
    }
}

impl Actor for SttStream {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.open(ctx);
    }
}

impl Handler<SttFeed> for SttStream {
    type Result = ();

    fn handle(&mut self, msg: SttFeed, ctx: &mut Self::Context) {
        let Some(input) = self.input.as_ref() else {
            return;
        };
        match input.try_send(msg.0) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.session.do_send(SttFailed {
                error: EngineError::new(
                    EngineErrorKind::Overloaded,
                    "the recognizer is not keeping up with the caller's audio",
                ),
                fatal: false,
            }),
            Err(mpsc::error::TrySendError::Closed(_)) => self.failed(
                EngineError::new(EngineErrorKind::Upstream, "the recognizer closed its input"),
                ctx,
            ),
        }
    }
}

impl StreamHandler<Result<SttEvent, EngineError>> for SttStream {
    fn handle(&mut self, item: Result<SttEvent, EngineError>, ctx: &mut Self::Context) {
        match item {
            Ok(SttEvent::Partial(text)) => self.session.do_send(TranscriptPartial(text)),
            Ok(SttEvent::Final(transcript)) => {
                self.failures = 0;
                self.session.do_send(TranscriptFinal(transcript.text));
            }
            Err(error) => self.failed(error, ctx),
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        self.events = None;
        self.failed(
            EngineError::new(EngineErrorKind::Upstream, "the recognizer ended its stream"),
            ctx,
        );
    }
}

impl Handler<Shutdown> for SttStream {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
