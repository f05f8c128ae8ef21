//! When the caller's audio was due, in wall time. Callers send their audio in real time, so
//! the earliest any recent frame reached the session, less its stream time, is when stream
//! time 0 was due; a frame handled later than that waited somewhere on the way in (a socket
//! buffer, a busy machine). Measuring from when speech was due, not from when the session got
//! round to it, makes a barge-in's detection time and bleed-through what the caller lived,
//! with a busy machine's delay in them.
//!
//! The estimate keeps to the last [`WINDOW_MS`] of stream time, so a sender whose clock runs a
//! little fast, or that sends ahead of real time, does not carry an old anchor forward.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Stream time over which the earliest arrival is looked for.
pub const WINDOW_MS: u64 = 5_000;

/// See the module docs.
#[derive(Debug, Default)]
pub struct StreamClock {
    /// (stream ms, when stream time 0 was due by that frame), each entry due earlier than
    /// every later one: the front is the window's earliest.
    anchors: VecDeque<(u64, Instant)>,
}

impl StreamClock {
    /// A frame ending at stream time `stream_ms` was handled at `at`.
    pub fn observe(&mut self, stream_ms: u64, at: Instant) {
        let anchor = at
            .checked_sub(Duration::from_millis(stream_ms))
            .unwrap_or(at);
        while self.anchors.back().is_some_and(|&(_, a)| a >= anchor) {
            self.anchors.pop_back();
        }
        self.anchors.push_back((stream_ms, anchor));
        while self
            .anchors
            .front()
            .is_some_and(|&(ms, _)| ms + WINDOW_MS < stream_ms)
        {
            self.anchors.pop_front();
        }
    }

    /// When stream time `stream_ms` was due; `None` before any frame came.
    pub fn due_at(&self, stream_ms: u64) -> Option<Instant> {
        let &(_, anchor) = self.anchors.front()?;
        Some(anchor + Duration::from_millis(stream_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn frames_in_real_time_are_due_when_they_came_and_a_stall_shows_as_lateness() {
        let start = Instant::now();
        let mut clock = StreamClock::default();
        for frame in 1..=50u64 {
            clock.observe(frame * 20, start + ms(frame * 20));
        }
        assert_eq!(clock.due_at(1000), Some(start + ms(1000)));
        // The session stalls for 600 ms: the next frames are handled in a burst, late.
        let resumed = start + ms(1600);
        for frame in 51..=80u64 {
            clock.observe(frame * 20, resumed);
        }
        let onset = 1100;
        let late = resumed.duration_since(clock.due_at(onset).unwrap());
        assert_eq!(
            late,
            ms(500),
            "the onset was due 500 ms before it was handled"
        );
    }

    #[test]
    fn an_old_anchor_is_forgotten_after_the_window() {
        let start = Instant::now();
        let mut clock = StreamClock::default();
        // A sender 2% ahead of real time: each second of audio comes in 980 ms.
        for frame in 1..=1000u64 {
            clock.observe(frame * 20, start + ms(frame * 20 * 98 / 100));
        }
        let now = start + ms(20_000 * 98 / 100);
        let due = clock.due_at(20_000).unwrap();
        // Anchored to the window's earliest arrival, not the call's start (400 ms off).
        assert!(
            due >= now && due.duration_since(now) <= ms(101),
            "{:?}",
            due.duration_since(now)
        );
        assert_eq!(StreamClock::default().due_at(0), None);
    }
}
