//! The caller's side of a real-time socket as the session reads it: [`CallerSide`] is the
//! stream of [`CallerInput`] a session started with
//! [`CallSession::start_reading`](switchboard_actors::session::CallSession::start_reading)
//! polls on its own turn. The transport's protocol ([`CallerProtocol`]) reads each text or
//! binary message; caller audio goes to the recording as it is read. What needs a write (a
//! pong, an answer to a bad message, the answer to the socket's end) cannot be written from
//! the session's turn without waiting, so it goes to the socket loop as a [`SocketDuty`]. At
//! most [`MAX_OWED`] duties wait for the loop: past that the caller's side is not read until
//! it catches up, so a client that floods the socket and never reads the answers is held by
//! its own connection, as when the loop read and answered it itself.
//!
//! Before, the socket loop read the caller's messages and posted them to the session, so a
//! caller frame woke two tasks (the loop, then the session), each after every other task
//! queued on the worker. Both transports use this.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use bytestring::ByteString;
use futures_util::task::AtomicWaker;
use futures_util::{Stream, StreamExt};
use switchboard_actors::session::CallerInput;
use tokio::sync::mpsc;

use crate::recording::RecordingTap;
use crate::transports::socket::{ClientMessage, Incoming, Messages};

/// What the transport's protocol made of one message.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// Something for the session.
    Input(CallerInput),
    /// An answer to write to the client (an error event for a message it got wrong).
    Reply(String),
    /// Nothing to do (an event the session does not need, or a message logged and skipped).
    Nothing,
}

/// A transport's reading of the caller's messages.
pub trait CallerProtocol: Unpin + 'static {
    /// Reads a text message.
    fn text(&mut self, text: &ByteString) -> Read;
    /// Reads a binary message.
    fn binary(&mut self, bytes: Bytes) -> Read;
}

/// A write the socket loop owes the caller's side.
#[derive(Debug)]
pub enum SocketDuty {
    /// Answer a ping.
    Pong(Bytes),
    /// Write this text (see [`Read::Reply`]).
    Reply(String),
    /// The caller's side ended like this (a `Close`, a protocol error, the connection gone):
    /// answer it ([`close_after`](super::close_after)). The
    /// session has heard of it as the end of its input.
    Ended(Incoming),
}

/// Most duties owed to the socket loop before the caller's side waits for it.
pub const MAX_OWED: usize = 32;

/// Duties sent and not yet taken by the loop, and the reader waiting for them to drop.
#[derive(Default)]
struct Owed {
    count: AtomicUsize,
    reader: AtomicWaker,
}

/// The caller's side of one socket (see the module docs).
pub struct CallerSide<P> {
    messages: Messages,
    protocol: P,
    tap: Option<Arc<RecordingTap>>,
    duties: mpsc::UnboundedSender<SocketDuty>,
    owed: Arc<Owed>,
    ended: bool,
}

impl<P: CallerProtocol> CallerSide<P> {
    /// The caller's side of `messages`, read by `protocol`, its audio recorded to `tap`; and
    /// the duties it leaves the socket loop.
    pub fn new(messages: Messages, protocol: P, tap: Option<Arc<RecordingTap>>) -> (Self, Duties) {
        let (duties, rx) = mpsc::unbounded_channel();
        let owed = Arc::new(Owed::default());
        let side = Self {
            messages,
            protocol,
            tap,
            duties,
            owed: owed.clone(),
            ended: false,
        };
        (side, Duties { rx: Some(rx), owed })
    }

    fn owe(&self, duty: SocketDuty) {
        self.owed.count.fetch_add(1, Ordering::AcqRel);
        // The loop is gone only once the socket is being closed: nothing is left to write.
        let _ = self.duties.send(duty);
    }

    /// Whether the loop is [`MAX_OWED`] duties behind; if so, the task is woken when it
    /// takes one.
    fn owes_too_much(&self, cx: &Context<'_>) -> bool {
        if self.owed.count.load(Ordering::Acquire) < MAX_OWED {
            return false;
        }
        self.owed.reader.register(cx.waker());
        self.owed.count.load(Ordering::Acquire) >= MAX_OWED
    }
}

impl<P: CallerProtocol> Stream for CallerSide<P> {
    type Item = CallerInput;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CallerInput>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            if this.owes_too_much(cx) {
                return Poll::Pending;
            }
            let read = match this.messages.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(ClientMessage::Text(text)))) => this.protocol.text(&text),
                Poll::Ready(Some(Ok(ClientMessage::Binary(bytes)))) => this.protocol.binary(bytes),
                Poll::Ready(Some(Ok(ClientMessage::Ping(bytes)))) => {
                    this.owe(SocketDuty::Pong(bytes));
                    Read::Nothing
                }
                Poll::Ready(Some(Ok(ClientMessage::Pong(_)))) => Read::Nothing,
                Poll::Ready(ending) => {
                    this.ended = true;
                    this.owe(SocketDuty::Ended(ending));
                    return Poll::Ready(None);
                }
            };
            match read {
                Read::Input(input) => {
                    if let (CallerInput::Audio(audio), Some(tap)) = (&input, &this.tap) {
                        tap.caller(audio);
                    }
                    return Poll::Ready(Some(input));
                }
                Read::Reply(text) => this.owe(SocketDuty::Reply(text)),
                Read::Nothing => {}
            }
        }
    }
}

/// The socket loop's end of a [`CallerSide`]: the writes it owes.
pub struct Duties {
    rx: Option<mpsc::UnboundedReceiver<SocketDuty>>,
    owed: Arc<Owed>,
}

impl Duties {
    /// The next duty. Once the caller's side is gone (the session stopped reading it), this
    /// never completes, so a `select!` over it goes on with its other branches.
    pub async fn next(&mut self) -> SocketDuty {
        if let Some(rx) = self.rx.as_mut() {
            if let Some(duty) = rx.recv().await {
                self.owed.count.fetch_sub(1, Ordering::AcqRel);
                self.owed.reader.wake();
                return duty;
            }
            self.rx = None;
        }
        std::future::pending().await
    }
}
