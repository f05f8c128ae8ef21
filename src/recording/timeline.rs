//! The two-track timeline of a recording: caller audio on the left, agent audio on the right,
//! each placed at the moment it crossed the transport, so the channels line up as the caller
//! heard the call.
//!
//! - Caller audio arrives in real time and is laid end to end; only a real pause in the stream
//!   (a gap of more than [`GAP_SECONDS`] between where the audio ends and when the next frame
//!   arrives) moves it forward to the arrival time.
//! - Agent audio is sent up to the pacing lead ahead of playback and plays in order, so a frame
//!   starts where the previous one ends, or when it is sent if the agent was silent.
//! - A clear (barge-in) drops the agent audio not yet played at that moment.
//!
//! Samples are written out once they are [`HOLD_SECONDS`] old, when no later clear or late
//! caller frame can change them any more; at most [`MAX_PENDING_SECONDS`] are held, so memory
//! stays small however long the call.

use std::collections::VecDeque;

/// A caller stream pause longer than this is kept as silence.
pub const GAP_SECONDS: f64 = 0.5;
/// How old samples are before they are final.
pub const HOLD_SECONDS: f64 = 0.5;
/// Most audio held in memory before it is written regardless.
pub const MAX_PENDING_SECONDS: f64 = 10.0;

/// Interleaved stereo samples ready to be written.
pub type Frames = Vec<[i16; 2]>;

#[derive(Debug)]
pub struct Timeline {
    rate: u32,
    /// Samples already handed out.
    written: u64,
    /// Pending samples of each channel from `written` on.
    left: VecDeque<i16>,
    right: VecDeque<i16>,
    caller_end: u64,
    agent_end: u64,
    /// Whether any caller audio arrived yet (the first frame is placed where it arrived).
    caller_started: bool,
}

impl Timeline {
    pub fn new(rate: u32) -> Timeline {
        Timeline {
            rate,
            written: 0,
            left: VecDeque::new(),
            right: VecDeque::new(),
            caller_end: 0,
            agent_end: 0,
            caller_started: false,
        }
    }

    fn seconds(&self, seconds: f64) -> u64 {
        (seconds * self.rate as f64) as u64
    }

    /// Samples written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Caller audio that arrived at sample position `at` (its end).
    pub fn caller(&mut self, samples: &[i16], at: u64) {
        let len = samples.len() as u64;
        let mut start = self.caller_end;
        if !self.caller_started || at > start + len + self.seconds(GAP_SECONDS) {
            start = at.saturating_sub(len);
        }
        self.caller_started = true;
        let start = start.max(self.written);
        put(&mut self.left, (start - self.written) as usize, samples);
        self.caller_end = start + len;
    }

    /// Agent audio sent at sample position `at`.
    pub fn agent(&mut self, samples: &[i16], at: u64) {
        let start = self.agent_end.max(at).max(self.written);
        put(&mut self.right, (start - self.written) as usize, samples);
        self.agent_end = start + samples.len() as u64;
    }

    /// The agent's queued audio was dropped at `at`: what had not played by then never will.
    pub fn clear(&mut self, at: u64) {
        let end = self.agent_end.min(at).max(self.written);
        self.right.truncate((end - self.written) as usize);
        self.agent_end = end;
    }

    /// The samples that are final by position `now`.
    pub fn commit(&mut self, now: u64) -> Frames {
        let pending = self.left.len().max(self.right.len()) as u64;
        let by_age = now.saturating_sub(self.seconds(HOLD_SECONDS));
        let by_size = (self.written + pending).saturating_sub(self.seconds(MAX_PENDING_SECONDS));
        self.take(by_age.max(by_size))
    }

    /// Everything left, up to the end of the later channel.
    pub fn finish(&mut self) -> Frames {
        let end = self.caller_end.max(self.agent_end);
        self.take(end)
    }

    fn take(&mut self, until: u64) -> Frames {
        if until <= self.written {
            return Vec::new();
        }
        let count = (until - self.written) as usize;
        let mut frames = vec![[0, 0]; count];
        interleave(&mut self.left, &mut frames, 0);
        interleave(&mut self.right, &mut frames, 1);
        self.written = until;
        self.caller_end = self.caller_end.max(until);
        self.agent_end = self.agent_end.max(until);
        frames
    }
}

/// Writes `samples` into `track` from `offset`, padding with silence: what overlaps the
/// pending samples replaces them, the rest is appended.
fn put(track: &mut VecDeque<i16>, offset: usize, samples: &[i16]) {
    if track.len() < offset {
        track.resize(offset, 0);
    }
    let overlap = (track.len() - offset).min(samples.len());
    for (slot, &s) in track.range_mut(offset..offset + overlap).zip(samples) {
        *slot = s;
    }
    track.extend(&samples[overlap..]);
}

/// Moves the first `frames.len()` samples of `track` (fewer if it holds fewer; the frames
/// keep their silence there) into channel `channel` of `frames`.
fn interleave(track: &mut VecDeque<i16>, frames: &mut [[i16; 2]], channel: usize) {
    let n = track.len().min(frames.len());
    let (front, back) = track.as_slices();
    let from_front = front.len().min(n);
    let (head, tail) = frames[..n].split_at_mut(from_front);
    for (frame, &s) in head.iter_mut().zip(front) {
        frame[channel] = s;
    }
    for (frame, &s) in tail.iter_mut().zip(back) {
        frame[channel] = s;
    }
    track.drain(..n);
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 8_000;

    fn frame(value: i16) -> Vec<i16> {
        vec![value; 160]
    }

    #[test]
    fn caller_frames_are_laid_end_to_end_and_agent_audio_where_it_was_sent() {
        let mut t = Timeline::new(RATE);
        for i in 0..50u64 {
            // Arrivals jitter by a few ms; the caller track stays contiguous.
            t.caller(&frame(1), (i + 1) * 160 + (i % 3) * 16);
        }
        // The agent answers at 0.5 s, sending 0.3 s ahead in one burst.
        for _ in 0..15 {
            t.agent(&frame(2), 4_000);
        }
        let mut out = t.commit(9_000);
        out.extend(t.finish());
        assert_eq!(out.len(), 8_000, "1 s of caller audio");
        assert!(out[..4_000].iter().all(|f| f[1] == 0));
        assert!(
            out[4_000..6_400].iter().all(|f| f[1] == 2),
            "agent from 0.5 s"
        );
        assert!(out[6_400..].iter().all(|f| f[1] == 0));
        assert!(out.iter().all(|f| f[0] == 1));
    }

    #[test]
    fn a_clear_drops_the_agent_audio_not_yet_played() {
        let mut t = Timeline::new(RATE);
        for _ in 0..50 {
            t.agent(&frame(3), 0); // 1 s queued at once
        }
        t.clear(4_000); // barge-in at 0.5 s
        t.caller(&frame(1), 8_000);
        let out = t.finish();
        assert_eq!(out.len(), 8_000);
        assert!(out[..4_000].iter().all(|f| f[1] == 3));
        assert!(out[4_000..].iter().all(|f| f[1] == 0));
        // The caller frame that arrived at 1 s after a long pause sits where it arrived.
        assert!(out[7_840..].iter().all(|f| f[0] == 1));
        assert!(out[..7_840].iter().all(|f| f[0] == 0));
    }

    #[test]
    fn pending_samples_are_overwritten_and_interleaved_across_the_deque_wrapping() {
        let mut track: VecDeque<i16> = VecDeque::with_capacity(8);
        track.extend([1, 2, 3, 4, 5, 6]);
        track.drain(..4);
        track.extend([7, 8, 9, 10, 11]);
        assert!(!track.as_slices().1.is_empty(), "the pending samples wrap");
        // Overlaps the last two pending samples and runs one past them.
        put(&mut track, 5, &[20, 21, 22]);
        assert!(track.iter().eq(&[5, 6, 7, 8, 9, 20, 21, 22]));
        let mut frames = vec![[0, 0]; 10];
        interleave(&mut track, &mut frames, 1);
        let right: Vec<i16> = frames.iter().map(|f| f[1]).collect();
        assert_eq!(right, [5, 6, 7, 8, 9, 20, 21, 22, 0, 0]);
        assert!(
            frames.iter().all(|f| f[0] == 0),
            "the other channel is untouched"
        );
        assert!(track.is_empty());
        // Past the end: silence up to the offset.
        put(&mut track, 3, &[4]);
        assert!(track.iter().eq(&[0, 0, 0, 4]));
    }

    #[test]
    fn only_old_enough_samples_are_committed_and_memory_stays_bounded() {
        let mut t = Timeline::new(RATE);
        t.caller(&frame(1), 160);
        assert!(t.commit(160).is_empty(), "held for HOLD_SECONDS");
        assert_eq!(t.commit(160 + 4_000).len(), 160);
        // A caller sending far faster than real time is still written out past 10 s pending.
        for _ in 0..1_000 {
            t.caller(&frame(1), 0);
        }
        let out = t.commit(0);
        assert!(t.left.len() as u64 <= (MAX_PENDING_SECONDS * RATE as f64) as u64);
        assert!(!out.is_empty());
    }
}
