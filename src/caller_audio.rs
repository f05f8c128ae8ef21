//! Caller audio as the real-time transports read it from their sockets: messages that have
//! already arrived are read together and their audio reaches the session (and the recording)
//! as one [`AudioIn`], so a loaded server wakes a session once for a burst of frames instead
//! of once a frame. Both the Twilio media stream and the direct socket use it.

use std::task::Poll;

use actix::Addr;
use actix_ws::AggregatedMessageStream;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use switchboard_actors::session::{AudioIn, CallSession};

use crate::realtime_socket::Incoming;
use crate::recording::RecordingTap;

/// The next message of the stream if it has already arrived; `None` when reading it would
/// wait. Polled with the task's own waker, so a `None` leaves the task woken by the next one.
async fn arrived(messages: &mut AggregatedMessageStream) -> Option<Incoming> {
    std::future::poll_fn(|cx| match messages.poll_next_unpin(cx) {
        Poll::Ready(message) => Poll::Ready(Some(message)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

/// At most this many caller frames (320 ms of 20 ms frames) go to the session in one message.
pub const BATCH_FRAMES: usize = 16;

/// Caller audio read from the socket in one go, forwarded to the session (and the recording)
/// as one `AudioIn`. A loaded server reads a call's socket after several frames have queued
/// in it; forwarding them together wakes the session once for all of them instead of once a
/// frame. The session re-frames whatever length it is given, so this changes nothing it
/// hears, and frames that arrive alone still go on at once.
pub struct CallerBatch {
    /// The first frame, forwarded as it is when nothing joins it.
    first: Option<Bytes>,
    /// The frames so far, copied together once a second one arrives.
    joined: BytesMut,
    frames: usize,
    limit: usize,
}

impl Default for CallerBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl CallerBatch {
    /// A batch of up to [`BATCH_FRAMES`] frames, for audio the session may re-frame.
    pub fn new() -> Self {
        Self::of_at_most(BATCH_FRAMES)
    }

    /// A batch of at most `limit` messages: 1 where each message must reach the session on
    /// its own (an Opus packet per message).
    pub fn of_at_most(limit: usize) -> Self {
        Self {
            first: None,
            joined: BytesMut::new(),
            frames: 0,
            limit: limit.max(1),
        }
    }

    /// Adds the audio of one message.
    pub fn push(&mut self, audio: Bytes) {
        self.frames += 1;
        match self.first.take() {
            None if self.joined.is_empty() => self.first = Some(audio),
            first => {
                if let Some(first) = first {
                    self.joined.extend_from_slice(&first);
                }
                self.joined.extend_from_slice(&audio);
            }
        }
    }

    /// Whether the next message must wait for what is gathered to be forwarded.
    fn is_full(&self) -> bool {
        self.frames >= self.limit
    }

    /// The next message to read into this batch: one that has already arrived, unless the
    /// batch is full. `None` means forward what is gathered now.
    pub async fn next_arrived(&self, messages: &mut AggregatedMessageStream) -> Option<Incoming> {
        if self.is_full() {
            return None;
        }
        arrived(messages).await
    }

    /// Everything gathered since the last take, in order; `None` when nothing was.
    fn take(&mut self) -> Option<Bytes> {
        self.frames = 0;
        match self.first.take() {
            Some(audio) => Some(audio),
            None if !self.joined.is_empty() => Some(self.joined.split().freeze()),
            None => None,
        }
    }

    /// Sends what is gathered to the session, the recording first.
    pub fn forward(&mut self, tap: Option<&RecordingTap>, session: &Addr<CallSession>) {
        let Some(audio) = self.take() else { return };
        if let Some(tap) = tap {
            tap.caller(&audio);
        }
        session.do_send(AudioIn(audio));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_together_are_forwarded_as_one_in_order() {
        let mut batch = CallerBatch::new();
        assert_eq!(batch.take(), None);
        let one = Bytes::from_static(&[1; 160]);
        batch.push(one.clone());
        let taken = batch.take().unwrap();
        assert_eq!(taken, one);
        assert_eq!(taken.as_ptr(), one.as_ptr(), "a frame alone is not copied");
        assert_eq!(batch.take(), None);

        for byte in 2..=BATCH_FRAMES as u8 + 1 {
            assert!(!batch.is_full());
            batch.push(Bytes::from(vec![byte; 160]));
        }
        assert!(batch.is_full());
        let expected: Vec<u8> = (2..=BATCH_FRAMES as u8 + 1)
            .flat_map(|byte| [byte; 160])
            .collect();
        assert_eq!(batch.take().unwrap(), expected);
        assert!(!batch.is_full());
        assert_eq!(batch.take(), None);
        batch.push(Bytes::from_static(&[7; 3]));
        batch.push(Bytes::from_static(&[8; 2]));
        assert_eq!(batch.take().unwrap(), [7, 7, 7, 8, 8][..]);
    }

    #[test]
    fn a_batch_of_one_forwards_every_message_alone() {
        let mut batch = CallerBatch::of_at_most(1);
        let packet = Bytes::from_static(&[9; 40]);
        batch.push(packet.clone());
        assert!(batch.is_full());
        assert_eq!(batch.take().unwrap().as_ptr(), packet.as_ptr());
        assert!(!batch.is_full());
    }
}
