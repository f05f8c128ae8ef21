//! [`SttStream`]: the child actor that feeds caller speech to the speech-to-text engine's
//! stream and reports partial and final transcripts to the session. One per session, alive for
//! the whole call. When the engine breaks its stream, or falls behind, the actor drops that
//! stream and reports the failure; the session answers with [`SttRestart`]: a new stream,
//! given again the audio of the utterances still owed a transcript. The session restarts the
//! stream too when an utterance's transcript is overdue, so that a late answer, which the
//! dropped stream can no longer deliver, is never taken for a later utterance's.

use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::mpsc;

use crate::engine::{
    EngineError, EngineErrorKind, SpeechToText, SttEvent, SttInput, TranscribeOptions,
};

use super::liveness::LiveGuard;
use super::messages::Shutdown;
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

/// The recognizer failed and its stream was dropped; unless `fatal`, the session answers with
/// [`SttRestart`].
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SttFailed {
    /// What went wrong.
    pub error: EngineError,
    /// The recognizer cannot be used any more in this session.
    pub fatal: bool,
}

/// Opens a new recognizer stream, dropping the current one with whatever it still owed, and
/// feeds it these inputs first: the audio (and ends) of the utterances the session still
/// awaits a transcript for, in order.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SttRestart(pub Vec<SttInput>);

/// Where a recognizer reports: the session's handlers of its transcripts and failures. All
/// lead to the same mailbox, so they arrive in the order they were sent.
#[derive(Clone)]
pub struct SttLinks {
    /// A hypothesis.
    pub partial: Recipient<TranscriptPartial>,
    /// An utterance's final transcript.
    pub final_text: Recipient<TranscriptFinal>,
    /// A failed stream.
    pub failed: Recipient<SttFailed>,
}

impl SttLinks {
    /// The links to one actor that handles all three messages.
    pub fn to<A>(actor: &Addr<A>) -> Self
    where
        A: Actor<Context = Context<A>>
            + Handler<TranscriptPartial>
            + Handler<TranscriptFinal>
            + Handler<SttFailed>,
    {
        Self {
            partial: actor.clone().recipient(),
            final_text: actor.clone().recipient(),
            failed: actor.clone().recipient(),
        }
    }
}

/// Streams caller audio to the recognizer (see the module docs).
pub struct SttStream {
    engine: Arc<dyn SpeechToText>,
    options: TranscribeOptions,
    links: SttLinks,
    input: Option<mpsc::Sender<SttInput>>,
    events: Option<SpawnHandle>,
    failures: u32,
    /// The current stream's input was found full and that was reported: once per stream.
    overload_reported: bool,
    _live: LiveGuard,
}

impl SttStream {
    /// A recognizer child reporting through `links`.
    pub fn new(
        engine: Arc<dyn SpeechToText>,
        options: TranscribeOptions,
        links: SttLinks,
        live: LiveGuard,
    ) -> Self {
        Self {
            engine,
            options,
            links,
            input: None,
            events: None,
            failures: 0,
            overload_reported: false,
            _live: live,
        }
    }

    /// Opens a new stream and feeds it `replay`; false when it could not be opened (the
    /// failure is reported).
    fn open(&mut self, replay: Vec<SttInput>, ctx: &mut Context<Self>) -> bool {
        self.drop_stream(ctx);
        match self.engine.clone().stream(self.options.clone()) {
            Ok((input, events)) => {
                self.input = Some(input);
                self.events = Some(ctx.add_stream(receiver_stream(events)));
                replay.into_iter().all(|input| self.feed(input, ctx))
            }
            Err(error) => {
                self.failed(error, ctx);
                false
            }
        }
    }

    /// Drops the current stream: nothing it would still have said reaches the session.
    fn drop_stream(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.events.take() {
            ctx.cancel_future(handle);
        }
        self.input = None;
        self.overload_reported = false;
    }

    /// Feeds `input` to the current stream; false when the stream failed on it.
    fn feed(&mut self, input: SttInput, ctx: &mut Context<Self>) -> bool {
        let Some(stream) = self.input.as_ref() else {
            return false;
        };
        match stream.try_send(input) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.overload_reported {
                    self.overload_reported = true;
                    self.links.failed.do_send(SttFailed {
                        error: EngineError::new(
                            EngineErrorKind::Overloaded,
                            "the recognizer is not keeping up with the caller's audio",
                        ),
                        fatal: false,
                    });
                }
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.failed(
                    EngineError::new(EngineErrorKind::Upstream, "the recognizer closed its input"),
                    ctx,
                );
                false
            }
        }
    }

    /// The stream failed: drop it and tell the session, which restarts it unless the failures
    /// have run past [`MAX_REOPENS`].
    fn failed(&mut self, error: EngineError, ctx: &mut Context<Self>) {
        self.drop_stream(ctx);
        self.failures += 1;
        let fatal = self.failures > MAX_REOPENS;
        self.links.failed.do_send(SttFailed { error, fatal });
        if fatal {
            ctx.stop();
        }
    }
}

impl Actor for SttStream {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.open(Vec::new(), ctx);
    }
}

impl Handler<SttFeed> for SttStream {
    type Result = ();

    fn handle(&mut self, msg: SttFeed, ctx: &mut Self::Context) {
        self.feed(msg.0, ctx);
    }
}

impl Handler<SttRestart> for SttStream {
    type Result = ();

    fn handle(&mut self, msg: SttRestart, ctx: &mut Self::Context) {
        self.open(msg.0, ctx);
    }
}

impl StreamHandler<Result<SttEvent, EngineError>> for SttStream {
    fn handle(&mut self, item: Result<SttEvent, EngineError>, ctx: &mut Self::Context) {
        match item {
            Ok(SttEvent::Partial(text)) => self.links.partial.do_send(TranscriptPartial(text)),
            Ok(SttEvent::Final(transcript)) => {
                self.failures = 0;
                self.links
                    .final_text
                    .do_send(TranscriptFinal(transcript.text));
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
