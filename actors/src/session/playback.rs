//! What the caller has actually heard of a reply. [`PlaybackLedger`] records every sentence
//! queued to the transport (its mark name, text and audio length) and when its mark came back,
//! and answers how many words had played at any instant: the basis for truncating the history
//! on barge-in and for measuring the words spoken over the caller (bleed-through).
//!
//! With [`PlaybackAcks::Marks`] a sentence has played when its mark is echoed; the sentence
//! after the last echoed one is partly played, in proportion to the time since that echo. Marks
//! outstanding when the session clears the transport are discarded, never played: the session
//! stops consulting the ledger for that reply at the moment it sends `Clear`. With
//! [`PlaybackAcks::Clock`] audio counts as played at real-time pace from the first frame sent.

use tokio::time::Instant;

use super::config::PlaybackAcks;

#[derive(Debug, Clone)]
struct Segment {
    mark: String,
    text: String,
    words: usize,
    duration_ms: u64,
    acked_at: Option<Instant>,
}

/// Playback record of one reply.
#[derive(Debug, Clone)]
pub struct PlaybackLedger {
    acks: PlaybackAcks,
    started_at: Option<Instant>,
    segments: Vec<Segment>,
}

impl PlaybackLedger {
    /// An empty ledger.
    pub fn new(acks: PlaybackAcks) -> Self {
        Self {
            acks,
            started_at: None,
            segments: Vec::new(),
        }
    }

    /// The first audio frame of the reply was sent at `at`.
    pub fn started(&mut self, at: Instant) {
        self.started_at.get_or_insert(at);
    }

    /// When the first audio frame was sent.
    pub fn started_at(&self) -> Option<Instant> {
        self.started_at
    }

    /// A sentence's audio was queued, followed by `mark`.
    pub fn queued(&mut self, mark: String, text: String, duration_ms: u64) {
        let words = text.split_whitespace().count();
        self.segments.push(Segment {
            mark,
            text,
            words,
            duration_ms,
            acked_at: None,
        });
    }

    /// The transport echoed `mark` at `at`. Returns whether the mark belongs to this reply.
    pub fn acked(&mut self, mark: &str, at: Instant) -> bool {
        match self.segments.iter_mut().find(|s| s.mark == mark) {
            Some(s) => {
                s.acked_at.get_or_insert(at);
                true
            }
            None => false,
        }
    }

    /// Total audio queued, in ms.
    pub fn queued_ms(&self) -> u64 {
        self.segments.iter().map(|s| s.duration_ms).sum()
    }

    /// Whether every queued sentence has played by `now`.
    pub fn all_played(&self, now: Instant) -> bool {
        match self.acks {
            PlaybackAcks::Marks => self.segments.iter().all(|s| s.acked_at.is_some()),
            PlaybackAcks::Clock => self.started_at.is_some_and(|t| {
                now.saturating_duration_since(t).as_millis() as u64 >= self.queued_ms()
            }),
        }
    }

    /// Words of the reply that had played by `at`.
    pub fn words_played_at(&self, at: Instant) -> usize {
        let Some(start) = self.started_at else {
            return 0;
        };
        let mut words = 0;
        match self.acks {
            PlaybackAcks::Marks => {
                let mut prev = start;
                for s in &self.segments {
                    match s.acked_at {
                        Some(t) if t <= at => {
                            words += s.words;
                            prev = t;
                        }
                        _ => {
                            words +=
                                partial(s, at.saturating_duration_since(prev).as_millis() as u64);
                            break;
                        }
                    }
                }
            }
            PlaybackAcks::Clock => {
                let mut left = at.saturating_duration_since(start).as_millis() as u64;
                for s in &self.segments {
                    if left >= s.duration_ms {
                        words += s.words;
                        left -= s.duration_ms;
                    } else {
                        words += partial(s, left);
                        break;
                    }
                }
            }
        }
        words
    }

    /// All queued text, sentences joined by spaces.
    pub fn queued_text(&self) -> String {
        let texts: Vec<&str> = self.segments.iter().map(|s| s.text.as_str()).collect();
        texts.join(" ")
    }

    /// Words `from..to` (by index) of the queued text, joined by spaces.
    pub fn words_between(&self, from: usize, to: usize) -> String {
        let words: Vec<&str> = self
            .segments
            .iter()
            .flat_map(|s| s.text.split_whitespace())
            .skip(from)
            .take(to.saturating_sub(from))
            .collect();
        words.join(" ")
    }
}

/// Words of `s` played after `elapsed_ms` of its audio.
fn partial(s: &Segment, elapsed_ms: u64) -> usize {
    if s.duration_ms == 0 {
        return 0;
    }
    let played = (elapsed_ms.min(s.duration_ms) as f64 / s.duration_ms as f64) * s.words as f64;
    (played.floor() as usize).min(s.words)
}

/// The first `words` words of `text`, joined by single spaces.
pub fn first_words(text: &str, words: usize) -> String {
    let kept: Vec<&str> = text.split_whitespace().take(words).collect();
    kept.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ledger(acks: PlaybackAcks, t0: Instant) -> PlaybackLedger {
        let mut l = PlaybackLedger::new(acks);
        l.started(t0);
        l.queued("m1".into(), "one two three four".into(), 1_000);
        l.queued("m2".into(), "five six seven eight".into(), 1_000);
        l
    }

    #[test]
    fn marks_decide_what_played_and_the_rest_is_estimated() {
        let t0 = Instant::now();
        let mut l = ledger(PlaybackAcks::Marks, t0);
        assert_eq!(l.words_played_at(t0), 0);
        // Half of the first sentence by the clock, no mark yet.
        assert_eq!(l.words_played_at(t0 + Duration::from_millis(500)), 2);
        assert!(l.acked("m1", t0 + Duration::from_millis(1_100)));
        assert!(!l.acked("other", t0));
        assert_eq!(l.words_played_at(t0 + Duration::from_millis(1_100)), 4);
        // A quarter of the second sentence after its predecessor's echo.
        assert_eq!(l.words_played_at(t0 + Duration::from_millis(1_350)), 5);
        assert!(!l.all_played(t0 + Duration::from_secs(5)));
        assert_eq!(l.words_between(3, 5), "four five");
    }

    #[test]
    fn clock_mode_counts_real_time() {
        let t0 = Instant::now();
        let l = ledger(PlaybackAcks::Clock, t0);
        assert_eq!(l.words_played_at(t0 + Duration::from_millis(1_500)), 6);
        assert!(l.all_played(t0 + Duration::from_millis(2_000)));
        assert_eq!(first_words("a  b c", 2), "a b");
    }
}
