//! When a caller's turn ends, beyond the silence timer: [`EndOfTurn`] keeps the turn's audio
//! and asks the session's end-of-turn model about each pause ([`TurnDetection::Smart`]).
//!
//! The session's [`SpeechTracker`] still ends every turn after its silence
//! ([`TurnTiming::endpoint_silence_ms`](super::config::TurnTiming)): that is the fallback when
//! no verdict comes in time. Once the caller has paused for `pause_ms`, the model gets the
//! turn's audio so far; a verdict at or above the threshold ends the turn at the pause's start,
//! one below it lets the pause run to `incomplete_silence_ms` instead. Speech that resumes
//! forgets the pause, its verdict (even one still to come) and any longer wait. A plain struct,
//! so the decisions are tested here without a session.

use std::sync::Arc;

use crate::audio::{SpeechEvent, SpeechTracker};
use crate::engine::{EngineError, TurnAudio, TurnEndModel};

use super::config::{SmartTurn, TurnDetection};

/// How much of a turn is kept for the model: it reads the last 8 s.
const KEPT_MS: usize = 8_000;

/// A pause to put to the model: ask it about `audio`, and hand its answer to
/// [`EndOfTurn::verdict`] with `pause`.
pub struct PauseQuestion {
    pub pause: u64,
    pub audio: TurnAudio,
    pub model: Arc<dyn TurnEndModel>,
}

/// What a verdict means for the turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// The turn is over: it ended at this event's time.
    EndNow(SpeechEvent),
    /// The caller is expected to go on: the pause may last longer.
    WaitLonger,
    /// The verdict is about a pause that is over, or there was none: nothing changes.
    Stale,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pause {
    /// The caller is not pausing, or the pause is too short to ask about yet.
    None,
    /// The model has been asked about this pause.
    Asked,
    /// The model said the caller will go on: the longer silence applies.
    Incomplete,
}

/// A session's end-of-turn judgement (see the module docs).
pub struct EndOfTurn {
    smart: Option<(SmartTurn, Arc<dyn TurnEndModel>)>,
    /// The silence that ends a turn without a verdict.
    silence_ms: u32,
    rate: u32,
    audio: Vec<Arc<[i16]>>,
    samples: usize,
    pause: Pause,
    /// Counts pauses, so a verdict is only taken for the pause it was asked about.
    pause_seq: u64,
}

impl EndOfTurn {
    /// The judgement for `detection`, with the silence timer `silence_ms` as its fallback and
    /// the turn's audio captured at `rate`. Smart detection without a model is the timer.
    pub fn new(
        detection: TurnDetection,
        model: Option<Arc<dyn TurnEndModel>>,
        silence_ms: u32,
        rate: u32,
    ) -> Self {
        let smart = match (detection, model) {
            (TurnDetection::Smart(settings), Some(model)) => Some((settings, model)),
            _ => None,
        };
        Self {
            smart,
            silence_ms,
            rate,
            audio: Vec::new(),
            samples: 0,
            pause: Pause::None,
            pause_seq: 0,
        }
    }

    /// Whether pauses are put to a model.
    pub fn is_smart(&self) -> bool {
        self.smart.is_some()
    }

    /// A chunk of the turn's audio as it is captured. Only the last seconds the model reads
    /// are kept: chunks are shared with the recognizer, never copied.
    pub fn heard(&mut self, chunk: &Arc<[i16]>) {
        if self.smart.is_none() {
            return;
        }
        self.samples += chunk.len();
        self.audio.push(Arc::clone(chunk));
        let keep = KEPT_MS * self.rate as usize / 1_000;
        while self.audio.len() > 1 && self.samples - self.audio[0].len() >= keep {
            self.samples -= self.audio.remove(0).len();
        }
    }

    /// Whether the pause the caller is in at stream time `now_ms` is to be put to the model
    /// now. The caller then hands the capture's last audio to [`heard`](Self::heard) and
    /// calls [`ask`](Self::ask).
    pub fn should_ask(&mut self, tracker: &mut SpeechTracker, now_ms: u64) -> bool {
        let Some((settings, _)) = &self.smart else {
            return false;
        };
        match tracker.pause_ms(now_ms) {
            None => {
                if self.pause != Pause::None {
                    // The caller spoke again: that pause and its verdict are forgotten.
                    self.pause = Pause::None;
                    self.pause_seq += 1;
                    tracker.set_end_silence_ms(self.silence_ms);
                }
                false
            }
            Some(paused) => self.pause == Pause::None && paused >= u64::from(settings.pause_ms),
        }
    }

    /// The question about the current pause.
    pub fn ask(&mut self) -> Option<PauseQuestion> {
        let (settings, model) = self.smart.as_ref()?;
        self.pause = Pause::Asked;
        let useful_ms = self.silence_ms.saturating_sub(settings.pause_ms);
        Some(PauseQuestion {
            pause: self.pause_seq,
            audio: TurnAudio {
                chunks: self.audio.clone(),
                rate: self.rate,
                answer_within: std::time::Duration::from_millis(u64::from(useful_ms)),
            },
            model: Arc::clone(model),
        })
    }

    /// Takes the model's answer about pause `pause`.
    pub fn verdict(
        &mut self,
        pause: u64,
        answer: Result<f32, EngineError>,
        tracker: &mut SpeechTracker,
    ) -> Verdict {
        let Some((settings, _)) = &self.smart else {
            return Verdict::Stale;
        };
        if pause != self.pause_seq || self.pause != Pause::Asked {
            return Verdict::Stale;
        }
        match answer {
            Ok(p) if p >= settings.complete_threshold => match tracker.end_pause() {
                Some(event) => Verdict::EndNow(event),
                None => Verdict::Stale,
            },
            Ok(_) => {
                self.pause = Pause::Incomplete;
                tracker.set_end_silence_ms(settings.incomplete_silence_ms.max(self.silence_ms));
                Verdict::WaitLonger
            }
            Err(e) => {
                // The timer decides this pause.
                tracing::debug!(error = %e, "no end-of-turn verdict; the silence timer decides");
                Verdict::Stale
            }
        }
    }

    /// The turn ended (or a new one starts): its audio and pauses are forgotten, and the
    /// tracker's silence is the timer's again.
    pub fn reset(&mut self, tracker: &mut SpeechTracker) {
        self.audio.clear();
        self.samples = 0;
        if self.pause != Pause::None {
            self.pause = Pause::None;
            tracker.set_end_silence_ms(self.silence_ms);
        }
        self.pause_seq += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::{SpeechTrackerConfig, Voice};
    use crate::engine::EngineFuture;

    struct Never;
    impl TurnEndModel for Never {
        fn complete_probability(&self, _: TurnAudio) -> EngineFuture<f32> {
            Box::pin(std::future::pending())
        }
    }

    fn smart() -> (EndOfTurn, SpeechTracker) {
        let settings = SmartTurn {
            pause_ms: 200,
            complete_threshold: 0.5,
            incomplete_silence_ms: 1_500,
        };
        let turn = EndOfTurn::new(
            TurnDetection::Smart(settings),
            Some(Arc::new(Never)),
            600,
            16_000,
        );
        let tracker = SpeechTracker::new(SpeechTrackerConfig {
            onset_ms: 100,
            end_silence_ms: 600,
        });
        (turn, tracker)
    }

    /// Feeds 20 ms frames from `from_ms` to `to_ms`, speech or not, returning the first event
    /// and asking whenever the judgement says so (the questions asked are counted).
    fn frames(
        turn: &mut EndOfTurn,
        tracker: &mut SpeechTracker,
        range: std::ops::Range<u64>,
        speech: bool,
        asked: &mut Vec<u64>,
    ) -> Option<SpeechEvent> {
        let voice = if speech { Voice::Speech } else { Voice::Quiet };
        for at in range.step_by(20) {
            let event = tracker.update(at, 20, voice);
            if turn.should_ask(tracker, at + 20) {
                asked.push(turn.ask().unwrap().pause);
            }
            if matches!(event, Some(SpeechEvent::SpeechEnded { .. })) {
                return event;
            }
        }
        None
    }

    #[test]
    fn a_pause_is_asked_about_once_and_a_confident_verdict_ends_the_turn_at_its_start() {
        let (mut turn, mut tracker) = smart();
        let mut asked = Vec::new();
        assert_eq!(
            frames(&mut turn, &mut tracker, 0..1_000, true, &mut asked),
            None
        );
        assert_eq!(
            frames(&mut turn, &mut tracker, 1_000..1_400, false, &mut asked),
            None
        );
        assert_eq!(asked.len(), 1, "one question per pause");
        let verdict = turn.verdict(asked[0], Ok(0.9), &mut tracker);
        assert_eq!(
            verdict,
            Verdict::EndNow(SpeechEvent::SpeechEnded { at_ms: 1_000 })
        );
        assert!(!tracker.is_speaking());
    }

    #[test]
    fn an_incomplete_verdict_lets_the_pause_run_longer_and_resumed_speech_restores_the_timer() {
        let (mut turn, mut tracker) = smart();
        let mut asked = Vec::new();
        frames(&mut turn, &mut tracker, 0..1_000, true, &mut asked);
        frames(&mut turn, &mut tracker, 1_000..1_220, false, &mut asked);
        assert_eq!(
            turn.verdict(asked[0], Ok(0.1), &mut tracker),
            Verdict::WaitLonger
        );
        // 600 ms of silence no longer ends the turn; 1,500 ms would.
        assert_eq!(
            frames(&mut turn, &mut tracker, 1_220..2_200, false, &mut asked),
            None
        );
        // The caller goes on: the next pause ends on the timer again if nobody answers.
        frames(&mut turn, &mut tracker, 2_200..3_000, true, &mut asked);
        assert_eq!(asked.len(), 1);
        let ended = frames(&mut turn, &mut tracker, 3_000..4_000, false, &mut asked);
        assert_eq!(ended, Some(SpeechEvent::SpeechEnded { at_ms: 3_000 }));
        assert_eq!(asked.len(), 2, "the new pause was asked about");
    }

    #[test]
    fn a_verdict_about_a_pause_that_is_over_changes_nothing() {
        let (mut turn, mut tracker) = smart();
        let mut asked = Vec::new();
        frames(&mut turn, &mut tracker, 0..1_000, true, &mut asked);
        frames(&mut turn, &mut tracker, 1_000..1_220, false, &mut asked);
        frames(&mut turn, &mut tracker, 1_220..1_400, true, &mut asked);
        assert_eq!(
            turn.verdict(asked[0], Ok(0.99), &mut tracker),
            Verdict::Stale
        );
        assert!(tracker.is_speaking());
        assert_eq!(
            turn.verdict(asked[0], Err(EngineError::internal("x")), &mut tracker),
            Verdict::Stale
        );
    }

    #[test]
    fn no_verdict_leaves_the_silence_timer_in_charge() {
        let (mut turn, mut tracker) = smart();
        let mut asked = Vec::new();
        frames(&mut turn, &mut tracker, 0..1_000, true, &mut asked);
        let ended = frames(&mut turn, &mut tracker, 1_000..2_000, false, &mut asked);
        assert_eq!(ended, Some(SpeechEvent::SpeechEnded { at_ms: 1_000 }));
        let mut silence = EndOfTurn::new(TurnDetection::Silence, Some(Arc::new(Never)), 600, 8_000);
        assert!(!silence.is_smart());
        assert!(!silence.should_ask(&mut tracker, 5_000));
        // Smart detection without a model is the timer too.
        let settings = SmartTurn::default();
        assert!(!EndOfTurn::new(TurnDetection::Smart(settings), None, 600, 8_000).is_smart());
    }

    #[test]
    fn only_the_last_eight_seconds_are_kept() {
        let (mut turn, _) = smart();
        for i in 0..120 {
            turn.heard(&Arc::from(vec![i as i16; 1_600]));
        }
        let question = turn.ask().unwrap();
        assert_eq!(question.audio.len(), 8 * 16_000);
        assert_eq!(question.audio.chunks.last().unwrap()[0], 119);
        let mut tracker = SpeechTracker::default();
        turn.reset(&mut tracker);
        assert!(turn.ask().unwrap().audio.is_empty());
    }
}
