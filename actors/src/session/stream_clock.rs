//! How late the session hears the caller's audio. Callers send their audio in real time, so a
//! frame is due at a fixed offset from its stream time: the earliest any frame was handled,
//! less its stream time (its "anchor"), is that offset, and a frame handled later than its due
//! time by the offset waited somewhere on the way in (a socket backlog on a busy machine, a
//! stalled process, frames read together). Timing a barge-in with that makes its detection
//! time and bleed-through what the caller lived.
//!
//! A caller that stops sending for a while (a client that sends nothing while muted) moves the
//! offset: after such a pause frames come paced again, each at about the same later anchor,
//! while a backlog comes as a burst whose anchors fall back towards the old offset. After
//! [`PACED_FRAMES`] frames paced at a later anchor, the offset moves there; a sender running
//! ahead of real time reads as late (live callers do not do that).

use std::time::Duration;

use tokio::time::Instant;

/// Anchors this close count as the same: jitter, not lateness.
pub const TOLERANCE: Duration = Duration::from_millis(40);
/// Frames at about one later anchor that show the caller paused rather than the session fell
/// behind.
pub const PACED_FRAMES: u32 = 5;

/// See the module docs.
#[derive(Debug, Default)]
pub struct StreamClock {
    /// The offset: when stream time 0 was due.
    base: Option<Instant>,
    /// Frames later than the offset allows: a pause's new offset or a backlog, not yet told
    /// apart.
    later: Option<Later>,
}

#[derive(Debug)]
struct Later {
    /// The anchor of the first of them.
    first: Instant,
    /// The earliest anchor since.
    earliest: Instant,
    /// Frames since at about `first`'s anchor.
    paced: u32,
}

fn anchor_of(stream_ms: u64, at: Instant) -> Instant {
    at.checked_sub(Duration::from_millis(stream_ms))
        .unwrap_or(at)
}

impl StreamClock {
    /// A frame ending at stream time `stream_ms` was handled at `at`.
    pub fn observe(&mut self, stream_ms: u64, at: Instant) {
        let anchor = anchor_of(stream_ms, at);
        let Some(base) = self.base else {
            self.base = Some(anchor);
            return;
        };
        if anchor <= base + TOLERANCE {
            // On time: the session keeps up (or has caught up).
            self.base = Some(base.min(anchor));
            self.later = None;
            return;
        }
        match &mut self.later {
            None => {
                self.later = Some(Later {
                    first: anchor,
                    earliest: anchor,
                    paced: 0,
                })
            }
            Some(later) => {
                later.earliest = later.earliest.min(anchor);
                if anchor + TOLERANCE >= later.first {
                    later.paced += 1;
                    if later.paced >= PACED_FRAMES {
                        // The caller paused: their audio is due at the later offset now.
                        self.base = Some(later.earliest);
                        self.later = None;
                    }
                }
            }
        }
    }

    /// How late the frame ending at `stream_ms`, handled at `at`, was heard.
    pub fn lateness(&self, stream_ms: u64, at: Instant) -> Duration {
        self.base.map_or(Duration::ZERO, |base| {
            anchor_of(stream_ms, at).saturating_duration_since(base)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn real_time(
        clock: &mut StreamClock,
        start: Instant,
        frames: std::ops::RangeInclusive<u64>,
        delay: u64,
    ) {
        for frame in frames {
            clock.observe(frame * 20, start + ms(delay + frame * 20));
        }
    }

    #[test]
    fn frames_in_real_time_are_on_time_and_a_stall_shows_as_lateness() {
        let start = Instant::now();
        let mut clock = StreamClock::default();
        real_time(&mut clock, start, 1..=50, 0);
        assert_eq!(clock.lateness(1000, start + ms(1000)), Duration::ZERO);
        // The session stalls for 600 ms: the frames of that time are handled in a burst.
        let resumed = start + ms(1600);
        for frame in 51..=80u64 {
            clock.observe(frame * 20, resumed);
        }
        assert_eq!(clock.lateness(1020, resumed), ms(580));
        assert_eq!(clock.lateness(1600, resumed), Duration::ZERO);
        // Caught up, it stays on time.
        real_time(&mut clock, start, 81..=100, 0);
        assert_eq!(clock.lateness(2000, start + ms(2000)), Duration::ZERO);
    }

    #[test]
    fn frames_read_together_are_late_by_their_wait_and_never_rebase_the_clock() {
        let start = Instant::now();
        let mut clock = StreamClock::default();
        // Seven frames a message, each message when its last frame is due.
        for batch in 0..20u64 {
            let at = start + ms((batch + 1) * 140);
            for frame in 1..=7u64 {
                clock.observe(batch * 140 + frame * 20, at);
            }
        }
        let at = start + ms(20 * 140);
        assert_eq!(clock.lateness(19 * 140 + 20, at), ms(120));
        assert_eq!(clock.lateness(20 * 140, at), Duration::ZERO);
    }

    #[test]
    fn a_pause_in_the_stream_is_not_lateness() {
        let start = Instant::now();
        let mut clock = StreamClock::default();
        real_time(&mut clock, start, 1..=50, 0);
        // The caller sends nothing for 2 s, then goes on in real time.
        real_time(&mut clock, start, 51..=100, 2000);
        assert_eq!(clock.lateness(2000, start + ms(4000)), Duration::ZERO);
        assert_eq!(StreamClock::default().lateness(0, start), Duration::ZERO);
    }
}
