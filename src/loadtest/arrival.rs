//! When a caller's socket received what the caller read: the kernel's receive timestamp
//! (`SO_TIMESTAMPNS`) of the last segment each read took. A busy load generator reads a
//! server message some time after it arrived; timing the server by the arrival keeps the
//! generator's own lateness in reading out of the server's numbers, as the callers' lag in
//! sending is kept out of them already.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// When the bytes of a [`StampedTcp`]'s latest read reached its socket, shared with whoever
/// reads the messages in them.
#[derive(Debug, Default)]
pub struct Arrivals {
    /// Nanoseconds since the Unix epoch; 0 before the first stamped read.
    last_ns: AtomicU64,
}

impl Arrivals {
    /// The arrival of the latest read's last segment on tokio's clock, `None` when no read
    /// was stamped (the platform does not stamp, or no read came after the kernel turned
    /// stamping on, a moment after the first socket asked). A message parsed from that read
    /// or an earlier one arrived no later than this.
    pub fn last(&self) -> Option<Instant> {
        let ns = self.last_ns.load(Ordering::Relaxed);
        if ns == 0 {
            return None;
        }
        let arrived = UNIX_EPOCH + Duration::from_nanos(ns);
        let (wall, now) = (SystemTime::now(), Instant::now());
        let ago = wall.duration_since(arrived).unwrap_or_default();
        Some(now.checked_sub(ago).unwrap_or(now))
    }

    fn record(&self, at: TimeSpec) {
        let ns = u64::try_from(at.tv_sec())
            .unwrap_or(0)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::try_from(at.tv_nsec()).unwrap_or(0));
        self.last_ns.store(ns, Ordering::Relaxed);
    }
}

/// A TCP stream whose reads record the kernel's receive timestamp in its [`Arrivals`].
pub struct StampedTcp {
    stream: TcpStream,
    arrivals: Arc<Arrivals>,
    /// Room for one timestamp's control message, reused by every read.
    control: Vec<u8>,
}

impl StampedTcp {
    /// Wraps a connected stream and asks the kernel to stamp what it receives (Linux; other
    /// platforms read unstamped).
    pub fn new(stream: TcpStream) -> io::Result<(Self, Arc<Arrivals>)> {
        #[cfg(target_os = "linux")]
        nix::sys::socket::setsockopt(
            &stream,
            nix::sys::socket::sockopt::ReceiveTimestampns,
            &true,
        )
        .map_err(io::Error::from)?;
        let arrivals = Arc::new(Arrivals::default());
        let stamped = Self {
            stream,
            arrivals: arrivals.clone(),
            control: nix::cmsg_space!(TimeSpec),
        };
        Ok((stamped, arrivals))
    }
}

impl AsyncRead for StampedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.stream.poll_read_ready(cx))?;
            let fd = this.stream.as_raw_fd();
            let control = &mut this.control;
            let room = buf.initialize_unfilled();
            let read = this.stream.try_io(Interest::READABLE, || {
                let mut iov = [IoSliceMut::new(room)];
                let message = recvmsg::<()>(
                    fd,
                    &mut iov,
                    Some(control.as_mut_slice()),
                    MsgFlags::empty(),
                )
                .map_err(io::Error::from)?;
                let stamp = message.cmsgs().ok().and_then(|mut messages| {
                    messages.find_map(|m| match m {
                        ControlMessageOwned::ScmTimestampns(at) => Some(at),
                        _ => None,
                    })
                });
                Ok((message.bytes, stamp))
            });
            match read {
                Ok((n, stamp)) => {
                    buf.advance(n);
                    if let Some(at) = stamp {
                        this.arrivals.record(at);
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for StampedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A stamped client socket and the server's end of it, on loopback.
    async fn stamped_pair() -> (StampedTcp, Arc<Arrivals>, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        let (stamped, arrivals) = StampedTcp::new(client.unwrap()).expect("a stamped socket");
        (stamped, arrivals, accepted.unwrap().0)
    }

    /// Sends bytes across until a read is stamped: the kernel turns receive stamping on for
    /// the machine a moment after the first socket asks for it (deferred work), and segments
    /// that arrive before then carry none.
    async fn until_stamping_is_on(
        stamped: &mut StampedTcp,
        arrivals: &Arrivals,
        server: &mut TcpStream,
    ) {
        let mut byte = [0u8; 1];
        for _ in 0..200 {
            server.write_all(b".").await.unwrap();
            stamped.read_exact(&mut byte).await.unwrap();
            if arrivals.last().is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the kernel stamped no read in 2 s");
    }

    /// A read records when its bytes arrived, not when they were read: bytes that waited in
    /// the socket for 300 ms carry a stamp from before the wait.
    #[tokio::test]
    async fn a_read_carries_the_arrival_of_its_bytes_not_the_moment_of_reading() {
        let (mut stamped, arrivals, mut server) = stamped_pair().await;
        assert!(arrivals.last().is_none(), "nothing read yet");
        until_stamping_is_on(&mut stamped, &arrivals, &mut server).await;
        server.write_all(b"clear").await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut bytes = [0u8; 16];
        let n = stamped.read(&mut bytes).await.unwrap();
        assert_eq!(&bytes[..n], b"clear");
        let waited = Instant::now() - arrivals.last().expect("the read was stamped");
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
            "the bytes waited {waited:?} in the socket"
        );
    }

    #[tokio::test]
    async fn writes_and_the_end_of_the_stream_pass_through() {
        let (mut stamped, _, mut server) = stamped_pair().await;
        stamped.write_all(b"media").await.unwrap();
        stamped.shutdown().await.unwrap();
        let mut got = Vec::new();
        server.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"media");
        drop(server);
        let mut rest = Vec::new();
        assert_eq!(stamped.read_to_end(&mut rest).await.unwrap(), 0);
    }
}
