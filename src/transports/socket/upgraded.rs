//! A real-time socket the server reads and writes itself. Once the HTTP layer has written the
//! handshake's `101` it hands the connection over ([`Handoff::connect`], from
//! [`crate::http::upgrade`]): the session then reads the caller's frames straight from the
//! connection on its own turn ([`Reader`]), and what the server sends goes straight onto it
//! ([`Writer`]), a barge-in's clear from the session's turn without a wait.
//!
//! Through the HTTP layer's dispatcher instead, a caller frame woke the connection's task,
//! which read it into a payload and woke the session's; and everything sent went through a
//! channel to that task to be written. Each hop waits behind every other task queued on the
//! worker, and under load that wait is most of a barge-in's latency past its 200 ms.
//!
//! Frames are read and written by actix-http's WebSocket codec (RFC 6455 framing, masking,
//! control frames); fragmented messages are put together here. The codec checks a frame's
//! size only once all of its declared payload has arrived, so each frame's header is checked
//! here first ([`check_header`]): a frame declaring more than the socket's limit is refused as
//! soon as its header is read, and the connection is read only up to the end of the frame in
//! progress, so a socket never holds more than one frame's worth of the client's bytes. A
//! frame that does not arrive whole in time, and a client that sends nothing for too long,
//! are refused too ([`SocketLimits`]).

use std::cell::RefCell;
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use actix_codec::{Decoder, Encoder};
use actix_http::ws::{Codec, Frame, Item, Message, ProtocolError};
use bytes::{Buf, Bytes, BytesMut};
use bytestring::ByteString;
use futures_util::Stream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use bytes::BufMut;
use tokio::time::{Instant, Sleep};

use super::{ClientMessage, Refusal, SocketLimits, FRAGMENTS_TOO_LARGE};

/// Bytes read from the connection at a time, at most.
const READ_CHUNK: usize = 8 * 1024;

/// Longest frame header a client sends: 2 bytes, a 64-bit length and the mask (RFC 6455 §5.2).
const MAX_HEADER: usize = 14;

/// Longest payload of a control frame (RFC 6455 §5.5).
const MAX_CONTROL_PAYLOAD: usize = 125;

/// Checks the header of the frame `buf` starts with, as far as it has arrived: no reserved bit
/// set, a control frame's payload at most 125 bytes, and no payload over `max` bytes. A frame
/// that fails is refused before its payload is waited for.
fn check_header(buf: &[u8], max: usize) -> Result<(), ProtocolError> {
    let (Some(&first), Some(&second)) = (buf.first(), buf.get(1)) else {
        return Ok(());
    };
    if first & 0x70 != 0 {
        return Err(Refusal::ReservedBits.error());
    }
    let control = first & 0x08 != 0;
    let length = match second & 0x7f {
        126 => match buf.get(2..4) {
            Some(b) => u64::from(u16::from_be_bytes([b[0], b[1]])),
            None => return Ok(()),
        },
        127 => match buf.get(2..10) {
            Some(b) => u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            None => return Ok(()),
        },
        short => u64::from(short),
    };
    if control && length > MAX_CONTROL_PAYLOAD as u64 {
        return Err(ProtocolError::InvalidLength(
            usize::try_from(length).unwrap_or(usize::MAX),
        ));
    }
    if length > max as u64 {
        return Err(ProtocolError::Overflow);
    }
    Ok(())
}

/// Put in an upgrade request's extensions by the HTTP layer, which then hands the connection
/// over to the socket [`super::accept`] leaves here, once the `101` is written.
#[derive(Clone, Default)]
pub struct Takeover(Rc<RefCell<Option<(Handoff, InUse)>>>);

impl Takeover {
    pub(super) fn leave(&self, handoff: Handoff, in_use: InUse) {
        *self.0.borrow_mut() = Some((handoff, in_use));
    }

    /// The socket accepted on the request, if one was.
    pub fn take(&self) -> Option<(Handoff, InUse)> {
        self.0.borrow_mut().take()
    }
}

/// The socket's side of a handover: the connection goes to its reader and writer.
pub struct Handoff {
    reader: Option<oneshot::Sender<(OwnedReadHalf, BytesMut)>>,
    writer: Arc<Mutex<WriteState>>,
}

/// Until both the reader and the writer are gone: what the HTTP layer waits on, so that the
/// connection counts as open on its worker for as long as it is.
pub struct InUse(mpsc::Receiver<()>);

impl InUse {
    pub async fn ended(mut self) {
        let _ = self.0.recv().await;
    }
}

/// A socket whose connection is still to be handed over: its reader, writer and handoff, and
/// what tells when it is no longer used.
pub fn socket(limits: SocketLimits) -> (Reader, Writer, Handoff, InUse) {
    let (in_use, ended) = mpsc::channel(1);
    let (to_reader, reader_io) = oneshot::channel();
    let writer = Arc::new(Mutex::new(WriteState {
        io: None,
        waiting: Vec::new(),
        buf: BytesMut::new(),
        codec: Codec::new(),
        broken: false,
        closed: false,
        _in_use: in_use.clone(),
    }));
    let reader = Reader {
        io: ReadIo::Waiting(reader_io),
        buf: BytesMut::new(),
        codec: Codec::new().max_size(limits.max_message),
        fragments: None,
        limits,
        partial_since: None,
        last_message: Instant::now(),
        timer: None,
        _in_use: in_use,
    };
    let handoff = Handoff {
        reader: Some(to_reader),
        writer: writer.clone(),
    };
    (reader, Writer { state: writer }, handoff, InUse(ended))
}

impl Handoff {
    /// Gives the socket its connection, with what the HTTP layer read past the handshake.
    pub fn connect(mut self, stream: TcpStream, read_ahead: BytesMut) {
        let (read, write) = stream.into_split();
        if let Some(reader) = self.reader.take() {
            let _ = reader.send((read, read_ahead));
        }
        let mut state = lock(&self.writer);
        state.io = Some(write);
        state.wake_all();
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        // Never connected (the handshake could not be written): what waits to write, fails.
        if self.reader.is_some() {
            let mut state = lock(&self.writer);
            state.broken = true;
            state.wake_all();
        }
    }
}

fn lock(state: &Mutex<WriteState>) -> MutexGuard<'_, WriteState> {
    // A panic while the lock was held leaves bytes, never a broken invariant: go on.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The client is gone, or the socket was closed: nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

struct WriteState {
    io: Option<OwnedWriteHalf>,
    /// Tasks waiting for the buffer to be written.
    waiting: Vec<Waker>,
    /// Encoded frames not yet written.
    buf: BytesMut,
    codec: Codec,
    /// A write failed (or the connection never came): the client is gone.
    broken: bool,
    /// A Close was sent: nothing goes after it.
    closed: bool,
    _in_use: mpsc::Sender<()>,
}

impl WriteState {
    fn wake_all(&mut self) {
        for waker in self.waiting.drain(..) {
            waker.wake();
        }
    }

    fn queue(&mut self, message: Message) -> Result<(), Closed> {
        if self.closed || self.broken {
            return Err(Closed);
        }
        self.closed = matches!(message, Message::Close(_));
        self.codec
            .encode(message, &mut self.buf)
            .map_err(|_| Closed)
    }

    /// Writes what the socket takes now, without waiting: whether all of it went.
    fn write_now(&mut self) -> Result<bool, Closed> {
        if self.buf.is_empty() {
            return Ok(true);
        }
        let Some(io) = self.io.as_ref() else {
            return if self.broken { Err(Closed) } else { Ok(false) };
        };
        while !self.buf.is_empty() {
            match io.try_write(&self.buf) {
                Ok(0) => return Err(self.break_off()),
                Ok(n) => self.buf.advance(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(_) => return Err(self.break_off()),
            }
        }
        Ok(true)
    }

    fn break_off(&mut self) -> Closed {
        self.broken = true;
        self.buf.clear();
        self.io = None;
        self.wake_all();
        Closed
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Closed>> {
        loop {
            if self.write_now()? {
                self.wake_all();
                if self.closed {
                    // The Close is out: the client's side of the connection ends here.
                    self.io = None;
                }
                return Poll::Ready(Ok(()));
            }
            let ready = match self.io.as_ref() {
                Some(io) => io.as_ref().poll_write_ready(cx),
                None => Poll::Pending,
            };
            match ready {
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(_)) => return Poll::Ready(Err(self.break_off())),
                Poll::Pending => {
                    // Whoever is woken writes for all: each waiter is woken once it is out.
                    if !self.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                        self.waiting.push(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

/// The sending half (see the module docs). Clones write to the same connection, in order.
#[derive(Clone)]
pub struct Writer {
    state: Arc<Mutex<WriteState>>,
}

impl Writer {
    /// Sends `message`, waiting until the connection has taken it.
    pub async fn send(&self, message: Message) -> Result<(), Closed> {
        lock(&self.state).queue(message)?;
        self.flush().await
    }

    /// Sends `message` without waiting: false when the client is gone or the socket closed.
    /// What the connection does not take at once goes out with the next write or
    /// [`flush`](Self::flush), ahead of it.
    pub fn send_now(&self, message: Message) -> bool {
        let mut state = lock(&self.state);
        state.queue(message).is_ok() && state.write_now().is_ok()
    }

    /// Waits until everything sent has been written.
    pub async fn flush(&self) -> Result<(), Closed> {
        std::future::poll_fn(|cx| lock(&self.state).poll_flush(cx)).await
    }
}

enum ReadIo {
    Waiting(oneshot::Receiver<(OwnedReadHalf, BytesMut)>),
    Open(OwnedReadHalf),
    Ended,
}

/// The receiving half (see the module docs): the client's messages, fragments put together
/// up to [`SocketLimits::max_message`]. Ends when the client's connection does.
pub struct Reader {
    io: ReadIo,
    /// What was read of the connection and not yet decoded: at most the frame in progress.
    buf: BytesMut,
    codec: Codec,
    /// A fragmented message being put together: whether it is text, and its bytes so far.
    fragments: Option<(bool, BytesMut)>,
    limits: SocketLimits,
    /// When the first bytes of a frame not yet whole were read.
    partial_since: Option<Instant>,
    /// When the last text or binary message came (or the socket opened).
    last_message: Instant,
    /// Wakes the reader at the nearest of its deadlines.
    timer: Option<Pin<Box<Sleep>>>,
    _in_use: mpsc::Sender<()>,
}

impl Reader {
    /// The largest message (and frame) the client may send now.
    pub fn max_message(&self) -> usize {
        self.limits.max_message
    }

    /// Sets the largest message (and frame) the client may send from now on: a transport that
    /// expects only small messages for a while holds less.
    pub fn set_max_message(&mut self, max: usize) {
        self.limits.max_message = max;
        // The codec keeps its state (a fragmented message in progress).
        let codec = std::mem::replace(&mut self.codec, Codec::new());
        self.codec = codec.max_size(max);
    }

    /// The refusal due now, if a deadline passed; otherwise the timer is set to wake the task
    /// at the nearest one.
    fn overdue(&mut self, cx: &mut Context<'_>) -> Option<Refusal> {
        let frame = self.partial_since.map(|since| {
            let limit = self.limits.frame_timeout;
            (since + limit, Refusal::FrameTimedOut(limit))
        });
        let idle = self
            .limits
            .idle_timeout
            .map(|limit| (self.last_message + limit, Refusal::Idle(limit)));
        let (deadline, refusal) = match (frame, idle) {
            (Some(f), Some(i)) => {
                if f.0 <= i.0 {
                    f
                } else {
                    i
                }
            }
            (Some(due), None) | (None, Some(due)) => due,
            (None, None) => return None,
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        timer.as_mut().poll(cx).is_ready().then_some(refusal)
    }

    /// What `frame` completes, if anything.
    fn message(&mut self, frame: Frame) -> Option<Result<ClientMessage, ProtocolError>> {
        let (text, last) = match frame {
            Frame::Text(bytes) => return Some(text_message(bytes)),
            Frame::Binary(bytes) => return Some(Ok(ClientMessage::Binary(bytes))),
            Frame::Ping(bytes) => return Some(Ok(ClientMessage::Ping(bytes))),
            Frame::Pong(bytes) => return Some(Ok(ClientMessage::Pong(bytes))),
            Frame::Close(reason) => return Some(Ok(ClientMessage::Close(reason))),
            Frame::Continuation(Item::FirstText(bytes)) => {
                self.fragments = Some((true, BytesMut::new()));
                (bytes, false)
            }
            Frame::Continuation(Item::FirstBinary(bytes)) => {
                self.fragments = Some((false, BytesMut::new()));
                (bytes, false)
            }
            Frame::Continuation(Item::Continue(bytes)) => (bytes, false),
            Frame::Continuation(Item::Last(bytes)) => (bytes, true),
        };
        // The codec refuses continuations out of order, so a message is being put together.
        let (is_text, so_far) = self
            .fragments
            .get_or_insert_with(|| (false, BytesMut::new()));
        if so_far.len() + text.len() > self.limits.max_message {
            self.fragments = None;
            return Some(Err(ProtocolError::Io(io::Error::other(
                FRAGMENTS_TOO_LARGE,
            ))));
        }
        so_far.extend_from_slice(&text);
        if !last {
            return None;
        }
        let is_text = *is_text;
        let whole = std::mem::take(so_far).freeze();
        self.fragments = None;
        Some(if is_text {
            text_message(whole)
        } else {
            Ok(ClientMessage::Binary(whole))
        })
    }

    /// Reads more of the connection: `Ready(Ok(false))` at its end.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        loop {
            match &mut self.io {
                ReadIo::Waiting(handover) => match Pin::new(handover).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok((io, read_ahead))) => {
                        self.io = ReadIo::Open(io);
                        if !read_ahead.is_empty() {
                            self.buf.extend_from_slice(&read_ahead);
                            return Poll::Ready(Ok(true));
                        }
                    }
                    Poll::Ready(Err(_)) => self.io = ReadIo::Ended,
                },
                ReadIo::Open(io) => {
                    // Never past the end of the largest frame: the header was checked, so
                    // what is held is part of one frame the client may send.
                    let room = (self.limits.max_message + MAX_HEADER)
                        .saturating_sub(self.buf.len())
                        .min(READ_CHUNK);
                    if room == 0 {
                        return Poll::Ready(Err(io::Error::other(
                            "a frame is larger than this socket accepts",
                        )));
                    }
                    self.buf.reserve(room);
                    match io.try_read_buf(&mut (&mut self.buf).limit(room)) {
                        Ok(0) => self.io = ReadIo::Ended,
                        Ok(_) => return Poll::Ready(Ok(true)),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            match io.as_ref().poll_read_ready(cx) {
                                Poll::Ready(Ok(())) => continue,
                                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                                Poll::Pending => return Poll::Pending,
                            }
                        }
                        Err(e) => return Poll::Ready(Err(e)),
                    }
                }
                ReadIo::Ended => return Poll::Ready(Ok(false)),
            }
        }
    }
}

fn text_message(bytes: Bytes) -> Result<ClientMessage, ProtocolError> {
    ByteString::try_from(bytes)
        .map(ClientMessage::Text)
        .map_err(|e| ProtocolError::Io(io::Error::new(io::ErrorKind::InvalidData, e)))
}

impl Stream for Reader {
    type Item = Result<ClientMessage, ProtocolError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if matches!(this.io, ReadIo::Ended) && this.buf.is_empty() {
                return Poll::Ready(None);
            }
            let decoded = check_header(&this.buf, this.limits.max_message)
                .and_then(|()| this.codec.decode(&mut this.buf));
            match decoded {
                Ok(Some(frame)) => {
                    this.partial_since = None;
                    match this.message(frame) {
                        Some(message) => {
                            if matches!(
                                message,
                                Ok(ClientMessage::Text(_) | ClientMessage::Binary(_))
                            ) {
                                this.last_message = Instant::now();
                            }
                            return Poll::Ready(Some(message));
                        }
                        None => continue,
                    }
                }
                Ok(None) => {
                    if this.buf.is_empty() {
                        this.partial_since = None;
                    } else if this.partial_since.is_none() {
                        this.partial_since = Some(Instant::now());
                    }
                }
                Err(e) => {
                    this.io = ReadIo::Ended;
                    this.buf.clear();
                    return Poll::Ready(Some(Err(e)));
                }
            }
            match this.poll_read(cx) {
                Poll::Ready(Ok(true)) => continue,
                Poll::Ready(Ok(false)) => {
                    // The connection ended: a frame cut short with it is dropped.
                    this.buf.clear();
                    return Poll::Ready(None);
                }
                Poll::Ready(Err(e)) => {
                    this.io = ReadIo::Ended;
                    this.buf.clear();
                    return Poll::Ready(Some(Err(ProtocolError::Io(e))));
                }
                Poll::Pending => {
                    if let Some(refusal) = this.overdue(cx) {
                        this.io = ReadIo::Ended;
                        this.buf.clear();
                        return Poll::Ready(Some(Err(refusal.error())));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::StreamExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// Both ends of a loopback connection: the server's, then the client's.
    async fn connection() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (accepted.expect("accept").0, client.expect("connect"))
    }

    /// `messages` as a client sends them (masked), one after another on `codec`.
    fn from_client(codec: &mut Codec, messages: Vec<Message>) -> BytesMut {
        let mut bytes = BytesMut::new();
        for message in messages {
            codec.encode(message, &mut bytes).expect("encodes");
        }
        bytes
    }

    #[tokio::test]
    async fn bytes_read_past_the_handshake_come_first_and_fragments_are_put_together() {
        let (server, mut client) = connection().await;
        let (mut reader, _writer, handoff, _in_use) = socket(SocketLimits::default());
        let mut client_codec = Codec::new().client_mode();
        let mut sent = from_client(
            &mut client_codec,
            vec![
                Message::Continuation(Item::FirstText(Bytes::from_static(b"{\"event\":"))),
                Message::Continuation(Item::Continue(Bytes::from_static(b"\"media\""))),
            ],
        );
        let read_ahead = sent.split_to(7);
        handoff.connect(server, read_ahead);
        client.write_all(&sent).await.expect("write");
        let rest = from_client(
            &mut client_codec,
            vec![
                Message::Continuation(Item::Last(Bytes::from_static(b"}"))),
                Message::Ping(Bytes::from_static(b"p")),
                Message::Text(ByteString::from_static("ok")),
            ],
        );
        client.write_all(&rest).await.expect("write");
        let next = reader
            .next()
            .await
            .expect("a message")
            .expect("well formed");
        assert_eq!(next, ClientMessage::Text("{\"event\":\"media\"}".into()));
        let next = reader
            .next()
            .await
            .expect("a message")
            .expect("well formed");
        assert_eq!(next, ClientMessage::Ping(Bytes::from_static(b"p")));
        let next = reader
            .next()
            .await
            .expect("a message")
            .expect("well formed");
        assert_eq!(next, ClientMessage::Text("ok".into()));
        // A frame cut short by the end of the connection is dropped; the stream ends.
        let partial = from_client(&mut client_codec, vec![Message::Text("cut".into())]);
        client.write_all(&partial[..4]).await.expect("write");
        drop(client);
        assert!(reader.next().await.is_none());
    }

    #[tokio::test]
    async fn text_that_is_not_utf8_and_fragments_over_the_limit_are_errors() {
        let (server, mut client) = connection().await;
        let (mut reader, _writer, handoff, _in_use) = socket(SocketLimits::default());
        handoff.connect(server, BytesMut::new());
        let chunk = Bytes::from(vec![
            b'a';
            crate::transports::socket::MAX_MESSAGE_BYTES / 2 + 1
        ]);
        let too_large = from_client(
            &mut Codec::new().client_mode(),
            vec![
                Message::Continuation(Item::FirstBinary(chunk.clone())),
                Message::Continuation(Item::Last(chunk)),
            ],
        );
        client.write_all(&too_large).await.expect("write");
        match reader.next().await {
            Some(Err(ProtocolError::Io(e))) => assert_eq!(e.to_string(), FRAGMENTS_TOO_LARGE),
            other => panic!("{other:?}"),
        }

        let (server, mut client) = connection().await;
        let (mut reader, _writer, handoff, _in_use) = socket(SocketLimits::default());
        handoff.connect(server, BytesMut::new());
        let mut codec = Codec::new().client_mode();
        let mut garbled = BytesMut::new();
        codec
            .encode(
                Message::Binary(Bytes::from_static(&[0xff, 0xfe])),
                &mut garbled,
            )
            .expect("encodes");
        // The same frame as a text frame: the opcode is the low bits of the first byte.
        garbled[0] = (garbled[0] & 0xf0) | 0x1;
        client.write_all(&garbled).await.expect("write");
        match reader.next().await {
            Some(Err(ProtocolError::Io(e))) => {
                assert_eq!(e.kind(), io::ErrorKind::InvalidData)
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn what_a_client_does_not_take_at_once_waits_and_goes_out_in_order() {
        let (server, mut client) = connection().await;
        let (_reader, writer, handoff, in_use) = socket(SocketLimits::default());
        handoff.connect(server, BytesMut::new());
        // Written without a wait until the connection's buffers are full.
        let message = "x".repeat(16 * 1024);
        let mut sent = 0;
        while writer.send_now(Message::Text(message.clone().into())) {
            sent += 1;
            if !lock(&writer.state).buf.is_empty() {
                break;
            }
            assert!(sent < 10_000, "the connection never filled up");
        }
        assert!(!lock(&writer.state).buf.is_empty());
        let flushed = tokio::time::timeout(Duration::from_millis(100), writer.flush()).await;
        assert!(
            flushed.is_err(),
            "nothing can be written while the client reads nothing"
        );
        let last = writer.clone();
        let sending = tokio::spawn(async move { last.send(Message::Text("last".into())).await });

        let mut received = BytesMut::new();
        let mut codec = Codec::new().client_mode();
        let mut texts = Vec::new();
        while texts.last().map(String::as_str) != Some("last") {
            let mut chunk = [0u8; 64 * 1024];
            let n = client.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the connection ended early");
            received.extend_from_slice(&chunk[..n]);
            while let Some(frame) = codec.decode(&mut received).expect("frames") {
                match frame {
                    Frame::Text(text) => {
                        texts.push(String::from_utf8(text.to_vec()).expect("utf-8"))
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(sending.await.expect("joined"), Ok(()));
        assert_eq!(texts.len(), sent + 1);
        assert!(texts[..sent].iter().all(|t| *t == message));

        // A Close ends the connection's sending side; nothing goes after it.
        writer.send(Message::Close(None)).await.expect("sent");
        assert!(!writer.send_now(Message::Text("after".into())));
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).await.expect("read");
        let mut rest = BytesMut::from(&rest[..]);
        assert!(matches!(
            codec.decode(&mut rest),
            Ok(Some(Frame::Close(None)))
        ));
        assert!(rest.is_empty());
        drop((writer, _reader));
        tokio::time::timeout(Duration::from_secs(1), in_use.ended())
            .await
            .expect("no longer in use");
    }

    #[tokio::test]
    async fn a_socket_whose_connection_never_comes_fails_its_writes_and_ends() {
        let (mut reader, writer, handoff, _in_use) = socket(SocketLimits::default());
        let waiting = writer.clone();
        let flush = tokio::spawn(async move { waiting.send(Message::Text("hi".into())).await });
        tokio::task::yield_now().await;
        drop(handoff);
        assert_eq!(flush.await.expect("joined"), Err(Closed));
        assert!(reader.next().await.is_none());
    }
}
