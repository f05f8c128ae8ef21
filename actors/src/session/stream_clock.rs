//! How late the session hears the caller's audio. Callers send their audio in real time, so a
//! session that keeps up handles each frame about one frame's length after the one before.
//! When it falls behind (a busy machine, a stalled process), frames wait in the socket and are
//! then handled in a burst, more stream time than wall time: a frame is late by how much more
//! stream time the session got through than wall time passed since the burst began. Timing a
//! barge-in with that makes its detection time and bleed-through what the caller lived.
//!
//! A pause in the caller's stream (a client that sends nothing while muted) is no lateness:
//! the frames after it come at real-time pace again. A sender that runs ahead of real time
//! (a file streamed faster than it plays) reads as late; live callers do not do that.
//!
//! Each frame's anchor is when stream time 0 was due by it (handled at, less its stream
//! time); lateness is the latest anchor of the last [`WINDOW`] less the current frame's.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// How far back, in wall time, a burst's start is looked for.
pub const WINDOW: Duration = Duration::from_secs(5);

/// See the module docs.
#[derive(Debug, Default)]
pub struct StreamClock {
    /// (handled at, anchor), anchors decreasing from front to back: the front is the latest
    /// anchor of the window.
    anchors: VecDeque<(Instant, Instant)>,
}

fn anchor_of(stream_ms: u64, at: Instant) -> Instant {
    at.checked_sub(Duration::from_millis(stream_ms))
        .unwrap_or(at)
}

impl StreamClock {
    /// A frame ending at stream time `stream_ms` was handled at `at`.
    pub fn observe(&mut self, stream_ms: u64, at: Instant) {
        let anchor = anchor_of(stream_ms, at);
        while self.anchors.back().is_some_and(|&(_, a)| a <= anchor) {
            self.anchors.pop_back();
        }
        self.anchors.push_back((at, anchor));
        while self
            .anchors
            .front()
            .is_some_and(|&(handled, _)| at.saturating_duration_since(handled) > WINDOW)
        {
            self.anchors.pop_front();
        }
    }

    /// How late the frame ending at `stream_ms`, handled at `at`, was heard.
    pub fn lateness(&self, stream_ms: u64, at: Instant) -> Duration {
        let Some(&(_, latest)) = self.anchors.front() else {
            return Duration::ZERO;
        };
        latest.saturating_duration_since(anchor_of(stream_ms, at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn frames_in_real_time_are_on_time_and_a_stall_shows_as_lateness() {
        let start = Instant::now();
        let mut clock = StreamClock::default();
        for frame in 1..=50u64 {
            clock.observe(frame * 20, start + ms(frame * 20));
        }
        assert_eq!(clock.lateness(1000, start + ms(1000)), Duration::ZERO);
        // The session stalls for 600 ms: the frames of that time are handled in a burst.
        let resumed = start + ms(1600);
        for frame in 51..=80u64 {
            clock.observe(frame * 20, resumed);
        }
        // The frame at 1,600 ms of stream time was handled at 1,600 ms; the burst began with
        // the frame of 1,020 ms: the last frame is 580 ms late.
        assert_eq!(clock.lateness(1600, resumed), ms(580));
    }

    #[test]
    fn a_pause_in_the_stream_is_not_lateness() {
        let start = Instant::now();
        let mut clock = StreamClock::default();
        for frame in 1..=50u64 {
            clock.observe(frame * 20, start + ms(frame * 20));
        }
        // The caller sends nothing for 2 s, then goes on in real time.
        for frame in 51..=100u64 {
            clock.observe(frame * 20, start + ms(2000 + frame * 20));
        }
        assert_eq!(clock.lateness(2000, start + ms(4000)), Duration::ZERO);
        assert_eq!(StreamClock::default().lateness(0, start), Duration::ZERO);
    }
}
