//! The caller's side of a turn: audio frames through the VAD, speech onset and endpointing
//! (VAD silence or the recognizer's own final), audio to the recognizer, transcripts into the
//! history, and recognizer failures.
//!
//! Transcripts are matched to utterances in order: the recognizer's stream answers them one
//! after another. An utterance whose transcript is overdue (or lost with a failed stream) is
//! failed, and the recognizer gets a new stream, given again the utterances spoken after it;
//! the old stream's late answer can then never be taken for a later utterance's transcript.
//! Only audio spoken while an earlier utterance awaits its transcript is kept for that: in the
//! usual turn, nothing is.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use crate::audio::SpeechEvent;
use crate::engine::SttInput;

use super::super::audio_in::{CallerFrame, FRAME_MS};
use super::super::barge_in::{AgentAudioLevel, CallerVoice};
use super::super::end_of_turn::Verdict;
use super::super::error::TurnError;
use super::super::messages::{AudioIn, SessionEvent};
use super::super::observer::{EndReason, EndpointSource, Speaker, TurnRecord, UnrecognisedSpeech};
use super::super::stt::{SttFailed, SttFeed, SttRestart, TranscriptFinal, TranscriptPartial};
use super::reply::AnswerTiming;
use super::{CallSession, PendingUtterance, TurnState};

/// Captured caller audio is sent to the recognizer in chunks of this length.
const STT_CHUNK_MS: u32 = 100;

/// The longest caller turn, in stream milliseconds: a turn that goes on without a pause this
/// long is ended here and recognised, and speech that goes on starts the next turn. Whisper
/// reads at most 30 s at a time, and a line whose noise the VAD takes for speech must not
/// grow a capture (and the recording of a turn) for as long as the call lasts.
pub const MAX_UTTERANCE_MS: u64 = 30_000;

impl CallSession {
    /// Wall-clock instant of caller stream time `stream_ms`, from the frame just processed.
    fn stream_instant(&self, stream_ms: u64, now: Instant) -> Instant {
        let behind = self.audio.now_ms().saturating_sub(stream_ms);
        now.checked_sub(Duration::from_millis(behind))
            .unwrap_or(now)
    }

    fn on_frame(&mut self, frame: CallerFrame, ctx: &mut Context<Self>) {
        if frame.vad.is_speech {
            self.last_speech_end_ms = frame.start_ms + u64::from(FRAME_MS);
        }
        self.barge_in.speech(frame.start_ms, frame.vad.is_speech);
        if self.state == TurnState::AgentSpeaking {
            let voice = CallerVoice {
                start_ms: frame.start_ms,
                voice: frame.vad.voice(),
                energy_dbfs: frame.vad.energy_dbfs,
            };
            if let Some(detected) = self.barge_in.hear(voice, Instant::now()) {
                self.barged_in(detected, ctx);
            }
            return;
        }
        let event = self
            .tracker
            .update(frame.start_ms, FRAME_MS, frame.vad.voice());
        if self.audio.is_capturing() {
            if let Some(chunk) = self.audio.take_capture(STT_CHUNK_MS) {
                self.feed_audio(chunk);
            }
        }
        match event {
            Some(SpeechEvent::SpeechStarted { at_ms }) => self.user_started(at_ms),
            Some(SpeechEvent::SpeechEnded { at_ms }) => {
                self.user_stopped(at_ms, EndpointSource::Vad, ctx)
            }
            None => {
                let now_ms = frame.start_ms + u64::from(FRAME_MS);
                self.cut_overlong_turn(now_ms, ctx);
                self.recognize_early(now_ms);
                self.judge_pause(now_ms, ctx);
            }
        }
    }

    /// Tells the recognizer when the caller's pause reaches
    /// [`early_recognition_ms`](super::super::config::TurnTiming::early_recognition_ms) (it
    /// may start on the turn so far) and when the caller speaks again after that.
    fn recognize_early(&mut self, now_ms: u64) {
        if self.state != TurnState::UserSpeaking {
            return;
        }
        let after_ms = u64::from(self.config.turn.early_recognition_ms);
        match self.tracker.pause_ms(now_ms) {
            Some(pause) if after_ms > 0 && pause >= after_ms && !self.recognizing_early => {
                // The recognition starts on everything heard up to now.
                if let Some(chunk) = self.audio.take_capture(0) {
                    self.feed_audio(chunk);
                }
                self.feed_stt(SttInput::Paused);
                self.recognizing_early = true;
            }
            None if self.recognizing_early => {
                self.feed_stt(SttInput::Resumed);
                self.recognizing_early = false;
            }
            _ => {}
        }
    }

    /// Puts the caller's pause to the end-of-turn model once it is long enough (smart turn
    /// detection, see [`EndOfTurn`](super::super::end_of_turn::EndOfTurn)); the verdict
    /// comes back to [`Self::pause_judged`]. Nothing here waits for it.
    fn judge_pause(&mut self, now_ms: u64, ctx: &mut Context<Self>) {
        if self.state != TurnState::UserSpeaking
            || !self.end_of_turn.should_ask(&mut self.tracker, now_ms)
        {
            return;
        }
        // The model hears the turn up to now, so the capture's last audio goes out first.
        if let Some(chunk) = self.audio.take_capture(0) {
            self.feed_audio(chunk);
        }
        let Some(question) = self.end_of_turn.ask() else {
            return;
        };
        let pause = question.pause;
        let verdict = question.model.complete_probability(question.audio);
        ctx.spawn(
            verdict
                .into_actor(self)
                .map(move |answer, session, ctx| session.pause_judged(pause, answer, ctx)),
        );
    }

    /// The end-of-turn model's answer about pause `pause`.
    fn pause_judged(
        &mut self,
        pause: u64,
        answer: Result<f32, crate::engine::EngineError>,
        ctx: &mut Context<Self>,
    ) {
        if self.liveness.ended || self.state != TurnState::UserSpeaking {
            return;
        }
        if let Verdict::EndNow(SpeechEvent::SpeechEnded { at_ms }) =
            self.end_of_turn.verdict(pause, answer, &mut self.tracker)
        {
            self.user_stopped(at_ms, EndpointSource::Model, ctx);
        }
    }

    /// Ends the caller's turn at stream time `now_ms` if it has lasted [`MAX_UTTERANCE_MS`].
    fn cut_overlong_turn(&mut self, now_ms: u64, ctx: &mut Context<Self>) {
        let Some(onset_ms) = self.utterance_onset_ms else {
            return;
        };
        if self.state != TurnState::UserSpeaking
            || now_ms.saturating_sub(onset_ms) < MAX_UTTERANCE_MS
        {
            return;
        }
        // The caller is still talking: the next turn starts here (with the recognizer's
        // pre-roll again, so a word cut in two is heard whole in one of them), and the agent
        // waits for its end as for any turn.
        self.user_stopped(now_ms, EndpointSource::MaxLength, ctx);
        self.user_started(now_ms);
    }

    fn feed_stt(&self, input: SttInput) {
        if let Some(stt) = self.stt.as_ref() {
            stt.do_send(SttFeed(input));
        }
    }

    /// Gives the recognizer a chunk of the utterance being captured, keeping it for a restart
    /// while an earlier utterance awaits its transcript.
    fn feed_audio(&mut self, chunk: Arc<[i16]>) {
        self.end_of_turn.heard(&chunk);
        if let Some(replay) = self.replay.as_mut() {
            replay.push(chunk.clone());
        }
        self.feed_stt(SttInput::Audio(chunk));
    }

    /// Gives the recognizer a new stream (see the module docs), fed again the utterances still
    /// awaiting their transcripts and the one being captured, as far as their audio was kept.
    fn restart_recognizer(&mut self) {
        let Some(stt) = self.stt.as_ref() else {
            return;
        };
        let mut inputs = Vec::new();
        for utterance in &self.pending {
            inputs.extend(utterance.replay.iter().cloned().map(SttInput::Audio));
            inputs.push(SttInput::EndOfUtterance);
        }
        if let Some(current) = self.replay.as_ref() {
            inputs.extend(current.iter().cloned().map(SttInput::Audio));
        }
        stt.do_send(SttRestart(inputs));
        // The new stream started nothing early.
        self.recognizing_early = false;
        if self.pending.is_empty() {
            // Nothing before the utterance being captured can fail any more.
            self.replay = None;
        }
    }

    /// The caller started speaking at stream time `onset_ms`: capture for the recognizer.
    pub(super) fn user_started(&mut self, onset_ms: u64) {
        if self.replies.is_silent() {
            // The caller went on talking before the agent said anything: the reply is stale.
            self.drop_silent_reply();
        }
        self.state = TurnState::UserSpeaking;
        self.end_of_turn.reset(&mut self.tracker);
        self.recognizing_early = false;
        self.utterance_onset_ms = Some(onset_ms);
        self.replay = (!self.pending.is_empty()).then(Vec::new);
        let preroll = u64::from(self.config.turn.stt_preroll_ms);
        self.audio.start_capture(onset_ms.saturating_sub(preroll));
    }

    /// The caller's turn ended at stream time `end_ms` (VAD silence, or the length limit).
    fn user_stopped(&mut self, end_ms: u64, source: EndpointSource, ctx: &mut Context<Self>) {
        let now = Instant::now();
        if let Some(chunk) = self.audio.stop_capture() {
            self.feed_audio(chunk);
        }
        self.end_of_turn.reset(&mut self.tracker);
        // What started early, if anything, is this utterance's recognition.
        self.recognizing_early = false;
        self.feed_stt(SttInput::EndOfUtterance);
        let replay = self.replay.take().unwrap_or_default();
        let onset_ms = self.utterance_onset_ms.take().unwrap_or(end_ms);
        let seq = self.next_utterance_seq;
        self.next_utterance_seq += 1;
        let onset_at = self.stream_instant(onset_ms, now);
        let speech_end_at = self.stream_instant(end_ms, now);
        let timeout = self.config.timeouts.stt;
        let handle = ctx.run_later(timeout, move |act, ctx| {
            if act.pending.front().is_some_and(|p| p.seq == seq) {
                act.pending.pop_front();
                act.restart_recognizer();
                let error = TurnError::SttTimeout(timeout.as_millis() as u64);
                act.caller_turn_failed(error, ctx);
            }
        });
        self.pending.push_back(PendingUtterance {
            seq,
            replay,
            timeout: Some(handle),
            source,
            start_ms: self.session_ms(onset_at),
            end_ms: self.session_ms(speech_end_at),
            speech_end_at,
            end_of_utterance_at: now,
        });
        self.state = TurnState::Thinking;
    }

    /// Takes the oldest utterance waiting for its transcript, cancelling its timeout.
    fn take_pending(&mut self, ctx: &mut Context<Self>) -> Option<PendingUtterance> {
        let pending = self.pending.pop_front()?;
        if let Some(timeout) = pending.timeout {
            ctx.cancel_future(timeout);
        }
        Some(pending)
    }

    /// A caller turn could not be transcribed: record it, apologise, go on.
    fn caller_turn_failed(&mut self, error: TurnError, ctx: &mut Context<Self>) {
        // Whether the lost utterance held words is unknown: no false barge-in is claimed.
        self.barge_in_turn = None;
        let now_ms = self.session_ms(Instant::now());
        let turn = TurnRecord {
            index: self.next_turn_index(),
            speaker: Speaker::User,
            response_id: None,
            text: String::new(),
            start_ms: now_ms,
            end_ms: now_ms,
            stt_ms: 0,
            llm_ms: 0,
            tts_ms: 0,
            interrupted: false,
            error: Some(format!("{}: {}", error.code(), error)),
            latency: None,
            barge_in: None,
            endpoint: None,
        };
        self.record_turn(turn);
        self.emit(SessionEvent::Error {
            code: error.code(),
            message: error.to_string(),
        });
        if !self.replies.is_replying() && self.state != TurnState::UserSpeaking {
            let apology = self.config.apology_text.clone();
            self.start_fixed_reply(super::reply::ReplyKind::Apology, &apology, ctx);
        }
    }

    /// Typed text or a DTMF digit: a complete caller turn.
    pub(super) fn typed_turn(&mut self, text: String, ctx: &mut Context<Self>) {
        let text = text.trim().to_owned();
        if text.is_empty() {
            return;
        }
        if self.replies.is_replying() {
            self.interrupt_reply(None, ctx);
        }
        let now_ms = self.session_ms(Instant::now());
        self.emit(SessionEvent::TranscriptFinal { text: text.clone() });
        let turn = TurnRecord {
            index: self.next_turn_index(),
            speaker: Speaker::User,
            response_id: None,
            text: text.clone(),
            start_ms: now_ms,
            end_ms: now_ms,
            stt_ms: 0,
            llm_ms: 0,
            tts_ms: 0,
            interrupted: false,
            error: None,
            latency: None,
            barge_in: None,
            endpoint: Some(EndpointSource::Text),
        };
        self.record_turn(turn);
        self.push_caller_turn(text);
        self.replies.await_answer(None);
        if self.state != TurnState::UserSpeaking && self.pending.is_empty() {
            self.start_answer(ctx);
        }
    }
}

impl Handler<AudioIn> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: AudioIn, ctx: &mut Self::Context) {
        if self.liveness.ended {
            return;
        }
        let now = Instant::now();
        self.liveness.caller_heard(now);
        self.audio.push(&msg.0);
        loop {
            match self.audio.next_frame() {
                Ok(Some(frame)) => {
                    self.stream_clock
                        .observe(frame.start_ms + u64::from(FRAME_MS), now);
                    self.on_frame(frame, ctx)
                }
                Ok(None) => break,
                Err(error) => {
                    self.bad_frames += 1;
                    if self.bad_frames == 1 {
                        self.emit(SessionEvent::Error {
                            code: "bad_audio",
                            message: error.to_string(),
                        });
                    }
                    break;
                }
            }
        }
    }
}

impl Handler<AgentAudioLevel> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: AgentAudioLevel, _: &mut Self::Context) {
        self.barge_in.agent_level(msg.level_dbfs, msg.sent_at);
    }
}

impl Handler<TranscriptPartial> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: TranscriptPartial, _: &mut Self::Context) {
        if !self.liveness.ended {
            self.emit(SessionEvent::TranscriptPartial { text: msg.0 });
        }
    }
}

impl Handler<TranscriptFinal> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: TranscriptFinal, ctx: &mut Self::Context) {
        if self.liveness.ended {
            return;
        }
        let now = Instant::now();
        let pending = match self.take_pending(ctx) {
            Some(p) => {
                if self.pending.is_empty() {
                    // Nothing before the utterance being captured (if any) can fail any more.
                    self.replay = None;
                }
                p
            }
            None => {
                // The recognizer decided the end of the utterance itself.
                if let Some(chunk) = self.audio.stop_capture() {
                    self.feed_stt(SttInput::Audio(chunk));
                }
                self.replay = None;
                let onset_ms = self
                    .utterance_onset_ms
                    .take()
                    .unwrap_or(self.last_speech_end_ms);
                self.tracker.reset();
                if self.state == TurnState::UserSpeaking {
                    self.state = TurnState::Thinking;
                }
                let onset_at = self.stream_instant(onset_ms, now);
                let speech_end_at = self.stream_instant(self.last_speech_end_ms, now);
                PendingUtterance {
                    seq: 0,
                    replay: Vec::new(),
                    timeout: None,
                    source: EndpointSource::Stt,
                    start_ms: self.session_ms(onset_at),
                    end_ms: self.session_ms(speech_end_at),
                    speech_end_at,
                    end_of_utterance_at: now,
                }
            }
        };
        let endpoint = pending.source;
        let stt_ms = now
            .saturating_duration_since(pending.end_of_utterance_at)
            .as_millis() as u64;
        let endpoint_ms = pending
            .end_of_utterance_at
            .saturating_duration_since(pending.speech_end_at)
            .as_millis() as u64;
        let text = msg.0.trim().to_owned();
        let interrupted_turn = self.barge_in_turn.take();
        if text.is_empty() {
            self.observer.speech_unrecognised(
                &self.config.session_id,
                &UnrecognisedSpeech {
                    start_ms: pending.start_ms,
                    end_ms: pending.end_ms,
                    interrupted_turn,
                },
            );
        } else {
            self.emit(SessionEvent::TranscriptFinal { text: text.clone() });
            let turn = TurnRecord {
                index: self.next_turn_index(),
                speaker: Speaker::User,
                response_id: None,
                text: text.clone(),
                start_ms: pending.start_ms,
                end_ms: pending.end_ms,
                stt_ms,
                llm_ms: 0,
                tts_ms: 0,
                interrupted: false,
                error: None,
                latency: None,
                barge_in: None,
                endpoint: Some(endpoint),
            };
            self.record_turn(turn);
            self.push_caller_turn(text);
            self.replies.await_answer(Some(AnswerTiming {
                speech_end_at: pending.speech_end_at,
                endpoint_ms,
                stt_ms,
            }));
        }
        if self.pending.is_empty() && self.state != TurnState::UserSpeaking {
            if self.replies.answer_due() {
                self.start_answer(ctx);
            } else if !self.replies.is_replying() {
                self.state = TurnState::Listening;
            }
        }
    }
}

impl Handler<SttFailed> for CallSession {
    type Result = ();

    fn handle(&mut self, msg: SttFailed, ctx: &mut Self::Context) {
        if self.liveness.ended {
            return;
        }
        if msg.fatal {
            let error = super::super::error::SessionError::SttUnavailable(msg.error);
            self.end(
                EndReason::Fatal {
                    code: error.code(),
                    message: error.to_string(),
                },
                ctx,
            );
            return;
        }
        // The oldest utterance in flight is lost with the stream; the ones after it, and the
        // one being captured, go to the new stream when their audio was kept.
        let lost_pending = self.take_pending(ctx).is_some();
        let lost_capture = self.state == TurnState::UserSpeaking && self.replay.is_none();
        if lost_capture {
            // The stream had this utterance's start and nothing else has.
            self.audio.stop_capture();
            self.utterance_onset_ms = None;
            self.tracker.reset();
            self.state = TurnState::Listening;
        } else if self.state == TurnState::Thinking
            && self.pending.is_empty()
            && !self.replies.is_replying()
        {
            self.state = TurnState::Listening;
        }
        self.restart_recognizer();
        if lost_pending || lost_capture {
            self.caller_turn_failed(TurnError::Stt(msg.error), ctx);
        } else {
            tracing::debug!(
                session = %self.config.session_id,
                "the recognizer's stream failed between utterances ({}); a new one is open",
                msg.error
            );
        }
    }
}
