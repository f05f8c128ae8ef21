//! How long a request body may take to arrive. Every request's body is read through
//! [`TimedBody`] ([`limit`], a middleware): a body must start arriving within a grace period
//! and then keep coming at a minimum average rate ([`BodyDeadline`], from `[server]`
//! `body_read_timeout_seconds` and `body_min_bytes_per_second`). Past that the body ends in an
//! error for whatever reads it (a JSON body, a form, an upload, a webhook), and the answer is
//! replaced by 408 `request_timeout`, whichever extractor or handler read it: a client that
//! announces a body and never sends it, or sends it a byte at a time, holds no connection for
//! ever.

use std::cell::Cell;
use std::future::Future as _;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{HttpMessage as _, ResponseError};
use futures_util::Stream;
use tokio::time::{Instant, Sleep};

use crate::error::ApiError;

/// How long a body may take: `grace` for its first bytes, then `min_bytes_per_second` on
/// average since it was first asked for. Registered in the app's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyDeadline {
    pub grace: Duration,
    /// 0 = no rate: then only the wait between two pieces of the body is limited (`grace`).
    pub min_bytes_per_second: u64,
}

impl BodyDeadline {
    /// The deadline `[server]` sets.
    pub fn from_config(server: &crate::config::ServerConfig) -> BodyDeadline {
        BodyDeadline {
            grace: Duration::from_secs(server.body_read_timeout_seconds.max(1)),
            min_bytes_per_second: server.body_min_bytes_per_second,
        }
    }

    /// When the body is cut off, having received `received` bytes since `started`, the last
    /// of them at `last`.
    fn due(&self, started: Instant, last: Instant, received: u64) -> Instant {
        match self.min_bytes_per_second {
            0 => last + self.grace,
            rate => {
                let earned = Duration::from_secs_f64(received as f64 / rate as f64);
                started + self.grace + earned
            }
        }
    }

    fn error(&self) -> ApiError {
        let message = match self.min_bytes_per_second {
            0 => format!(
                "the request body stopped arriving: nothing came for {} s",
                self.grace.as_secs()
            ),
            rate => format!(
                "the request body arrived too slowly: it must start within {} s and then come \
                 at {rate} bytes/s or more",
                self.grace.as_secs()
            ),
        };
        ApiError::RequestTimeout(message)
    }
}

/// Middleware: reads the request's body through a [`TimedBody`] and answers 408 when it ran
/// out of time (see the module docs).
pub async fn limit(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(deadline) = req.app_data::<BodyDeadline>().copied() else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    let payload = req.take_payload();
    if matches!(payload, Payload::None) {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let timed_out = Rc::new(Cell::new(false));
    req.set_payload(Payload::Stream {
        payload: Box::pin(TimedBody::new(payload, deadline, timed_out.clone())),
    });
    let response = next.call(req).await?;
    if !timed_out.get() {
        return Ok(response.map_into_boxed_body());
    }
    let (request, _) = response.into_parts();
    Ok(ServiceResponse::new(
        request,
        deadline.error().error_response(),
    ))
}

/// A request body that fails with a time-out once it is overdue ([`BodyDeadline`]).
struct TimedBody {
    inner: Payload,
    deadline: BodyDeadline,
    /// When the body was first asked for, when its last bytes came, and how many came.
    started: Option<Instant>,
    last: Instant,
    received: u64,
    timer: Option<Pin<Box<Sleep>>>,
    timed_out: Rc<Cell<bool>>,
}

impl TimedBody {
    fn new(inner: Payload, deadline: BodyDeadline, timed_out: Rc<Cell<bool>>) -> Self {
        Self {
            inner,
            deadline,
            started: None,
            last: Instant::now(),
            received: 0,
            timer: None,
            timed_out,
        }
    }
}

impl Stream for TimedBody {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.timed_out.get() {
            return Poll::Ready(None);
        }
        let now = Instant::now();
        let started = *this.started.get_or_insert_with(|| {
            this.last = now;
            now
        });
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                this.received += bytes.len() as u64;
                this.last = now;
                return Poll::Ready(Some(Ok(bytes)));
            }
            Poll::Ready(other) => return Poll::Ready(other),
            Poll::Pending => {}
        }
        let due = this.deadline.due(started, this.last, this.received);
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if timer.deadline() != due {
            timer.as_mut().reset(due);
        }
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.timed_out.set(true);
        Poll::Ready(Some(Err(PayloadError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the request body did not arrive in time",
        )))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_earns_time_at_the_minimum_rate_after_the_grace_period() {
        let deadline = BodyDeadline {
            grace: Duration::from_secs(30),
            min_bytes_per_second: 1000,
        };
        let start = Instant::now();
        let later = start + Duration::from_secs(5);
        assert_eq!(
            deadline.due(start, later, 0),
            start + Duration::from_secs(30)
        );
        assert_eq!(
            deadline.due(start, later, 10_000),
            start + Duration::from_secs(40)
        );
        let no_rate = BodyDeadline {
            min_bytes_per_second: 0,
            ..deadline
        };
        assert_eq!(
            no_rate.due(start, later, 10_000),
            later + Duration::from_secs(30)
        );
    }
}
