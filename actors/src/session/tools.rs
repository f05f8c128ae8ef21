//! [`ToolRunner`]: the child actor that executes the model's tool calls for a reply, all calls
//! of a round concurrently, each under the configured timeout. A failed or timed-out call is
//! not a failed turn: its error text goes back to the model as the tool's answer, so the model
//! can tell the caller. Cancelling a reply drops its running calls.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::join_all;
use tokio::time::Instant;

use crate::engine::{ToolCall, ToolExecutor};

use super::liveness::LiveGuard;
use super::messages::Shutdown;
use super::observer::ToolOutcome;

/// Execute the tool calls of one model round of reply `response_id`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RunTools {
    /// The reply.
    pub response_id: u64,
    /// The calls, answered in this order.
    pub calls: Vec<ToolCall>,
}

/// Drop the running calls of reply `response_id`.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct CancelTools {
    /// The reply.
    pub response_id: u64,
}

/// Every call of a round has answered.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ToolsFinished {
    /// The reply.
    pub response_id: u64,
    /// One outcome per call, in call order.
    pub outcomes: Vec<ToolOutcome>,
}

/// Executes tool calls (see the module docs).
pub struct ToolRunner {
    executor: Arc<dyn ToolExecutor>,
    timeout: Duration,
    finished: Recipient<ToolsFinished>,
    running: Vec<(u64, SpawnHandle)>,
    _live: LiveGuard,
}

impl ToolRunner {
    /// A runner reporting each round to `finished` (the session), giving each call `timeout`.
    pub fn new(
        executor: Arc<dyn ToolExecutor>,
        timeout: Duration,
        finished: Recipient<ToolsFinished>,
        live: LiveGuard,
    ) -> Self {
        Self {
            executor,
            timeout,
            finished,
            running: Vec::new(),
            _live: live,
        }
    }
}

impl Actor for ToolRunner {
    type Context = Context<Self>;
}

impl Handler<RunTools> for ToolRunner {
    type Result = ();

    fn handle(&mut self, msg: RunTools, ctx: &mut Self::Context) {
        let response_id = msg.response_id;
        let timeout = self.timeout;
        let calls = msg.calls.into_iter().map(|call| {
            let started = Instant::now();
            let ends_session = self.executor.ends_session(&call);
            let work = self.executor.execute(call.clone());
            async move {
                let (output, is_error) = match tokio::time::timeout(timeout, work).await {
                    Ok(Ok(output)) => (output, false),
                    Ok(Err(error)) => (format!("error: {error}"), true),
                    Err(_) => (
                        format!(
                            "error: the tool did not answer within {} ms",
                            timeout.as_millis()
                        ),
                        true,
                    ),
                };
                ToolOutcome {
                    call,
                    output,
                    is_error,
                    duration_ms: started.elapsed().as_millis() as u64,
                    ends_session: ends_session.filter(|_| !is_error),
                }
            }
        });
        let all = join_all(calls.collect::<Vec<_>>());
        let handle = ctx.spawn(all.into_actor(self).map(move |outcomes, act, _| {
            act.running.retain(|(id, _)| *id != response_id);
            act.finished.do_send(ToolsFinished {
                response_id,
                outcomes,
            });
        }));
        self.running.push((response_id, handle));
    }
}

impl Handler<CancelTools> for ToolRunner {
    type Result = ();

    fn handle(&mut self, msg: CancelTools, ctx: &mut Self::Context) {
        let mut keep = Vec::with_capacity(self.running.len());
        for (id, handle) in self.running.drain(..) {
            if id == msg.response_id {
                ctx.cancel_future(handle);
            } else {
                keep.push((id, handle));
            }
        }
        self.running = keep;
    }
}

impl Handler<Shutdown> for ToolRunner {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
