//! The caller's side of a turn: audio frames through the VAD, speech onset and endpointing
//! (VAD silence or the recognizer's own final), audio to the recognizer, transcripts into the
//! history, and recognizer failures. [`CallerSide`] keeps the bookkeeping between frames (the
//! utterance being captured, those awaiting their transcripts, what is kept to replay them, how
//! the caller's audio arrives) as a plain struct tested here; the session's handlers below do
//! the actor's part (timers, messages, events) around it.
//!
//! Transcripts are matched to utterances in order: the recognizer's stream answers them one
//! after another. An utterance whose transcript is overdue (or lost with a failed stream) is
//! failed, and the recognizer gets a new stream, given again the utterances spoken after it;
//! the old stream's late answer can then never be taken for a later utterance's transcript.
//! Only audio spoken while an earlier utterance awaits its transcript is kept for that: in the
//! usual turn, nothing is.

use std::collections::VecDeque;
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
use super::super::stream_clock::StreamClock;
use super::super::stt::{SttFailed, SttFeed, SttRestart, TranscriptFinal, TranscriptPartial};
use super::reply::AnswerTiming;
use super::{ms_between, CallSession, TurnState};

/// Captured caller audio is sent to the recognizer in chunks of this length.
const STT_CHUNK_MS: u32 = 100;

/// The longest caller turn, in stream milliseconds: a turn that goes on without a pause this
/// long is ended here and recognised, and speech that goes on starts the next turn. Whisper
/// reads at most 30 s at a time, and a line whose noise the VAD takes for speech must not
/// grow a capture (and the recording of a turn) for as long as the call lasts.
pub const MAX_UTTERANCE_MS: u64 = 30_000;

/// When a caller utterance was spoken and how it ended.
#[derive(Debug, Clone, Copy)]
struct SpokenUtterance {
    /// What ended it: VAD silence, the end-of-turn model, the length limit or the recognizer.
    source: EndpointSource,
    /// Its onset, in ms since the session started.
    start_ms: u64,
    /// The end of its speech, in ms since the session started.
    end_ms: u64,
    /// When its speech ended.
    speech_end_at: Instant,
    /// When its end was decided (and the recognizer told).
    end_of_utterance_at: Instant,
}

impl SpokenUtterance {
    /// The timing of the caller turn whose transcript arrived at `transcript_at`: the wait
    /// for the endpoint after the speech, and the recognizer's time after that.
    fn answer_timing(&self, transcript_at: Instant) -> AnswerTiming {
        AnswerTiming {
            speech_end_at: self.speech_end_at,
            endpoint_ms: ms_between(self.speech_end_at, self.end_of_utterance_at),
            stt_ms: ms_between(self.end_of_utterance_at, transcript_at),
        }
    }
}

/// A caller utterance whose transcript is awaited.
#[derive(Debug)]
struct PendingUtterance {
    seq: u64,
    /// The audio the recognizer was given for it, kept when it was spoken while an earlier
    /// utterance still awaited its transcript: should the recognizer be restarted for that one,
    /// this one is given to the new stream again.
    replay: Vec<Arc<[i16]>>,
    /// The recognizer's timeout for this utterance, cancelled when its transcript (or failure)
    /// arrives: a timer left in the context is polled on every caller frame until it fires.
    timeout: Option<SpawnHandle>,
    spoken: SpokenUtterance,
}

/// What the session keeps of the caller's side between frames (see the module docs).
#[derive(Debug, Default)]
pub(super) struct CallerSide {
    /// Stream time of the current caller utterance's onset, while it is being captured.
    onset_ms: Option<u64>,
    /// Stream time at the end of the last caller speech frame.
    last_speech_end_ms: u64,
    /// Utterances awaiting their transcripts, oldest first.
    pending: VecDeque<PendingUtterance>,
    /// The audio given to the recognizer for the utterance being captured, kept while an
    /// earlier one awaits its transcript (see [`PendingUtterance::replay`]).
    replay: Option<Vec<Arc<[i16]>>>,
    /// The number of the next utterance to await a transcript (from 1).
    next_seq: u64,
    /// The recognizer was told the caller paused ([`SttInput::Paused`]) and not yet that they
    /// spoke again.
    recognizing_early: bool,
    /// The agent turn the caller's current utterance interrupted (a barge-in), until that
    /// utterance's transcript arrives.
    barge_in_turn: Option<u32>,
    /// When each moment of the caller's audio was due (see [`StreamClock`]).
    stream_clock: StreamClock,
    /// Caller audio that could not be read as frames.
    bad_frames: u64,
}

impl CallerSide {
    /// Nothing heard yet.
    pub(super) fn new() -> Self {
        Self {
            next_seq: 1,
            ..Self::default()
        }
    }

    /// A caller frame ending at stream time `end_ms` was read at `at`.
    fn frame_read(&mut self, end_ms: u64, at: Instant) {
        self.stream_clock.observe(end_ms, at);
    }

    /// How late the caller's frame ending at stream time `stream_ms`, handled at `at`, was
    /// heard (see [`StreamClock::lateness`]).
    pub(super) fn lateness(&self, stream_ms: u64, at: Instant) -> Duration {
        self.stream_clock.lateness(stream_ms, at)
    }

    /// Caller audio could not be read as a frame: whether it is the first that could not.
    fn bad_frame(&mut self) -> bool {
        self.bad_frames += 1;
        self.bad_frames == 1
    }

    /// The frame starting at stream time `start_ms` held speech.
    fn speech_heard(&mut self, start_ms: u64) {
        self.last_speech_end_ms = start_ms + u64::from(FRAME_MS);
    }

    /// A caller utterance began at stream time `onset_ms`. Its audio is kept for a restart
    /// when an earlier utterance still awaits its transcript.
    fn utterance_started(&mut self, onset_ms: u64) {
        self.recognizing_early = false;
        self.onset_ms = Some(onset_ms);
        self.replay = (!self.pending.is_empty()).then(Vec::new);
    }

    /// A chunk of the utterance being captured went to the recognizer.
    fn fed(&mut self, chunk: &Arc<[i16]>) {
        if let Some(replay) = self.replay.as_mut() {
            replay.push(Arc::clone(chunk));
        }
    }

    /// Whether the utterance begun at the onset has lasted [`MAX_UTTERANCE_MS`] by stream time
    /// `now_ms`.
    fn is_overlong(&self, now_ms: u64) -> bool {
        self.onset_ms
            .is_some_and(|onset_ms| now_ms.saturating_sub(onset_ms) >= MAX_UTTERANCE_MS)
    }

    /// What to tell the recognizer of the caller's pause, `pause_ms` long (`None` while they
    /// speak), when it may start on a pause of `after_ms` (0: never): that the caller paused,
    /// once the pause is long enough, and that they spoke again after that.
    fn early_recognition(&mut self, pause_ms: Option<u64>, after_ms: u64) -> Option<SttInput> {
        match pause_ms {
            Some(pause) if after_ms > 0 && pause >= after_ms && !self.recognizing_early => {
                self.recognizing_early = true;
                Some(SttInput::Paused)
            }
            None if self.recognizing_early => {
                self.recognizing_early = false;
                Some(SttInput::Resumed)
            }
            _ => None,
        }
    }

    /// The utterance being captured ended at stream time `end_ms`: where it began (`end_ms`
    /// if that is unknown). What started early, if anything, was its recognition.
    fn end_capture(&mut self, end_ms: u64) -> u64 {
        self.recognizing_early = false;
        self.onset_ms.take().unwrap_or(end_ms)
    }

    /// The recognizer ended the utterance being captured itself: where it began and where its
    /// speech ended, in stream time (its onset, if unknown, is the end of the last speech).
    fn ended_by_recognizer(&mut self) -> (u64, u64) {
        let onset_ms = self.onset_ms.take().unwrap_or(self.last_speech_end_ms);
        (onset_ms, self.last_speech_end_ms)
    }

    /// The capture was given up: no utterance is being captured.
    fn capture_dropped(&mut self) {
        self.onset_ms = None;
    }

    /// Whether the utterance being captured, if any, is lost with a failed recognizer stream:
    /// the stream had its start and nothing else has.
    fn capture_lost_with_stream(&self) -> bool {
        self.replay.is_none()
    }

    /// Awaits the transcript of `spoken` with the audio kept for it; `timer` starts its timeout
    /// for the utterance's number, which is returned.
    fn await_transcript(
        &mut self,
        spoken: SpokenUtterance,
        timer: impl FnOnce(u64) -> SpawnHandle,
    ) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending.push_back(PendingUtterance {
            seq,
            replay: self.replay.take().unwrap_or_default(),
            timeout: Some(timer(seq)),
            spoken,
        });
        seq
    }

    /// Whether an utterance still awaits its transcript.
    pub(super) fn awaits_transcript(&self) -> bool {
        !self.pending.is_empty()
    }

    /// A transcript arrived: the utterance it is for, the oldest awaited (`None`: the
    /// recognizer ended the one being captured itself). With none left to wait for, nothing
    /// before the utterance being captured can fail any more, so its audio is no longer kept.
    fn transcript_arrived(&mut self) -> Option<PendingUtterance> {
        let oldest = self.pending.pop_front();
        if self.pending.is_empty() {
            self.replay = None;
        }
        oldest
    }

    /// The recognizer's stream failed: the oldest utterance in flight is lost with it.
    fn lost_with_stream(&mut self) -> Option<PendingUtterance> {
        self.pending.pop_front()
    }

    /// Utterance `seq`'s transcript is overdue: it is taken if it is still the oldest awaited.
    fn overdue(&mut self, seq: u64) -> Option<PendingUtterance> {
        if self.pending.front().is_some_and(|p| p.seq == seq) {
            self.pending.pop_front()
        } else {
            None
        }
    }

    /// What a new recognizer stream is given: the utterances still awaiting their transcripts,
    /// each with its end, then the one being captured, as far as their audio was kept. The new
    /// stream started nothing early; with nothing awaited, nothing before the utterance being
    /// captured can fail any more.
    fn restart_inputs(&mut self) -> Vec<SttInput> {
        let mut inputs = Vec::new();
        for utterance in &self.pending {
            inputs.extend(utterance.replay.iter().cloned().map(SttInput::Audio));
            inputs.push(SttInput::EndOfUtterance);
        }
        if let Some(current) = self.replay.as_ref() {
            inputs.extend(current.iter().cloned().map(SttInput::Audio));
        }
        self.recognizing_early = false;
        if self.pending.is_empty() {
            self.replay = None;
        }
        inputs
    }

    /// The caller's utterance now being captured interrupted agent turn `turn`.
    pub(super) fn interrupted(&mut self, turn: Option<u32>) {
        self.barge_in_turn = turn;
    }

    /// The utterance being captured was lost: whether it held words is unknown, so no false
    /// interruption is claimed.
    fn forget_interruption(&mut self) {
        self.barge_in_turn = None;
    }

    /// The agent turn the utterance just transcribed interrupted, if it did.
    fn take_interrupted_turn(&mut self) -> Option<u32> {
        self.barge_in_turn.take()
    }
}

impl PendingUtterance {
    /// Its timeout, stopped: the transcript (or failure) came first.
    fn cancel_timeout(&self, ctx: &mut Context<CallSession>) {
        if let Some(timeout) = self.timeout {
            ctx.cancel_future(timeout);
        }
    }
}

impl CallSession {
    /// Wall-clock instant of caller stream time `stream_ms`, from the frame just processed.
    fn stream_instant(&self, stream_ms: u64, now: Instant) -> Instant {
        let behind = self.audio.now_ms().saturating_sub(stream_ms);
        now.checked_sub(Duration::from_millis(behind))
            .unwrap_or(now)
    }

    fn on_frame(&mut self, frame: CallerFrame, ctx: &mut Context<Self>) {
        if frame.vad.is_speech {
            self.caller.speech_heard(frame.start_ms);
        }
        self.barge_in.speech(frame.start_ms, frame.vad.is_speech);
        if self.state == TurnState::AgentSpeaking {
            let voice = CallerVoice {
                start_ms: frame.start_ms,
                voice: frame.vad.voice(),
                energy_dbfs: frame.vad.energy_dbfs,
            };
            if let Some(detected) = self.barge_in.hear(voice, Instant::now()) {
                self.barged_in(detected);
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
        let pause_ms = self.tracker.pause_ms(now_ms);
        match self.caller.early_recognition(pause_ms, after_ms) {
            Some(SttInput::Paused) => {
                // The recognition starts on everything heard up to now.
                if let Some(chunk) = self.audio.take_capture(0) {
                    self.feed_audio(chunk);
                }
                self.feed_stt(SttInput::Paused);
            }
            Some(input) => self.feed_stt(input),
            None => {}
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
        if self.state != TurnState::UserSpeaking || !self.caller.is_overlong(now_ms) {
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
        self.caller.fed(&chunk);
        self.feed_stt(SttInput::Audio(chunk));
    }

    /// Gives the recognizer a new stream (see the module docs), fed again the utterances still
    /// awaiting their transcripts and the one being captured, as far as their audio was kept.
    fn restart_recognizer(&mut self) {
        let Some(stt) = self.stt.as_ref() else {
            return;
        };
        stt.do_send(SttRestart(self.caller.restart_inputs()));
    }

    /// The caller started speaking at stream time `onset_ms`: capture for the recognizer.
    pub(super) fn user_started(&mut self, onset_ms: u64) {
        if self.replies.is_silent() {
            // The caller went on talking before the agent said anything: the reply is stale.
            self.drop_silent_reply();
        }
        self.state = TurnState::UserSpeaking;
        self.end_of_turn.reset(&mut self.tracker);
        self.caller.utterance_started(onset_ms);
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
        let onset_ms = self.caller.end_capture(end_ms);
        self.feed_stt(SttInput::EndOfUtterance);
        let onset_at = self.stream_instant(onset_ms, now);
        let speech_end_at = self.stream_instant(end_ms, now);
        let spoken = SpokenUtterance {
            source,
            start_ms: self.session_ms(onset_at),
            end_ms: self.session_ms(speech_end_at),
            speech_end_at,
            end_of_utterance_at: now,
        };
        let timeout = self.config.timeouts.stt;
        self.caller.await_transcript(spoken, |seq| {
            ctx.run_later(timeout, move |act, ctx| {
                if act.caller.overdue(seq).is_some() {
                    act.restart_recognizer();
                    let error = TurnError::SttTimeout(timeout.as_millis() as u64);
                    act.caller_turn_failed(error, ctx);
                }
            })
        });
        self.state = TurnState::Thinking;
    }

    /// A caller turn could not be transcribed: record it, apologise, go on.
    fn caller_turn_failed(&mut self, error: TurnError, ctx: &mut Context<Self>) {
        self.caller.forget_interruption();
        let turn = self.caller_turn_now(
            String::new(),
            Some(format!("{}: {}", error.code(), error)),
            None,
        );
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

    /// A caller turn that takes no time, recorded as of now: typed text, or a turn that
    /// failed before it had words.
    fn caller_turn_now(
        &self,
        text: String,
        error: Option<String>,
        endpoint: Option<EndpointSource>,
    ) -> TurnRecord {
        let now_ms = self.session_ms(Instant::now());
        TurnRecord {
            index: self.next_turn_index(),
            speaker: Speaker::User,
            response_id: None,
            text,
            start_ms: now_ms,
            end_ms: now_ms,
            stt_ms: 0,
            llm_ms: 0,
            tts_ms: 0,
            interrupted: false,
            error,
            latency: None,
            barge_in: None,
            endpoint,
        }
    }

    /// Typed text or a DTMF digit: a complete caller turn.
    pub(super) fn typed_turn(&mut self, text: String, ctx: &mut Context<Self>) {
        let text = text.trim().to_owned();
        if text.is_empty() {
            return;
        }
        if self.replies.is_replying() {
            self.interrupt_reply(None);
        }
        self.emit(SessionEvent::TranscriptFinal { text: text.clone() });
        let turn = self.caller_turn_now(text.clone(), None, Some(EndpointSource::Text));
        self.record_turn(turn);
        self.push_caller_turn(text);
        self.replies.await_answer(None);
        if self.state != TurnState::UserSpeaking && !self.caller.awaits_transcript() {
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
                    self.caller
                        .frame_read(frame.start_ms + u64::from(FRAME_MS), now);
                    self.on_frame(frame, ctx)
                }
                Ok(None) => break,
                Err(error) => {
                    if self.caller.bad_frame() {
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
        let spoken = match self.caller.transcript_arrived() {
            Some(pending) => {
                pending.cancel_timeout(ctx);
                pending.spoken
            }
            None => {
                // The recognizer decided the end of the utterance itself.
                if let Some(chunk) = self.audio.stop_capture() {
                    self.feed_stt(SttInput::Audio(chunk));
                }
                let (onset_ms, end_ms) = self.caller.ended_by_recognizer();
                self.tracker.reset();
                if self.state == TurnState::UserSpeaking {
                    self.state = TurnState::Thinking;
                }
                let onset_at = self.stream_instant(onset_ms, now);
                let speech_end_at = self.stream_instant(end_ms, now);
                SpokenUtterance {
                    source: EndpointSource::Stt,
                    start_ms: self.session_ms(onset_at),
                    end_ms: self.session_ms(speech_end_at),
                    speech_end_at,
                    end_of_utterance_at: now,
                }
            }
        };
        let timing = spoken.answer_timing(now);
        let text = msg.0.trim().to_owned();
        let interrupted_turn = self.caller.take_interrupted_turn();
        if text.is_empty() {
            self.observer.speech_unrecognised(
                &self.config.session_id,
                &UnrecognisedSpeech {
                    start_ms: spoken.start_ms,
                    end_ms: spoken.end_ms,
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
                start_ms: spoken.start_ms,
                end_ms: spoken.end_ms,
                stt_ms: timing.stt_ms,
                llm_ms: 0,
                tts_ms: 0,
                interrupted: false,
                error: None,
                latency: None,
                barge_in: None,
                endpoint: Some(spoken.source),
            };
            self.record_turn(turn);
            self.push_caller_turn(text);
            self.replies.await_answer(Some(timing));
        }
        if !self.caller.awaits_transcript() && self.state != TurnState::UserSpeaking {
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
        let lost_pending = match self.caller.lost_with_stream() {
            Some(pending) => {
                pending.cancel_timeout(ctx);
                true
            }
            None => false,
        };
        let lost_capture =
            self.state == TurnState::UserSpeaking && self.caller.capture_lost_with_stream();
        if lost_capture {
            self.audio.stop_capture();
            self.caller.capture_dropped();
            self.tracker.reset();
            self.state = TurnState::Listening;
        } else if self.state == TurnState::Thinking
            && !self.caller.awaits_transcript()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spoken(start_ms: u64) -> SpokenUtterance {
        let at = Instant::now();
        SpokenUtterance {
            source: EndpointSource::Vad,
            start_ms,
            end_ms: start_ms + 500,
            speech_end_at: at,
            end_of_utterance_at: at,
        }
    }

    fn no_timer(_: u64) -> SpawnHandle {
        SpawnHandle::default()
    }

    fn chunk(sample: i16) -> Arc<[i16]> {
        Arc::from(vec![sample; 4])
    }

    /// Speaks an utterance from `onset_ms` whose audio is `chunks`, and ends it.
    fn speak(caller: &mut CallerSide, onset_ms: u64, chunks: &[Arc<[i16]>]) -> u64 {
        caller.utterance_started(onset_ms);
        for c in chunks {
            caller.fed(c);
        }
        let onset = caller.end_capture(onset_ms + 500);
        assert_eq!(onset, onset_ms);
        caller.await_transcript(spoken(onset), no_timer)
    }

    fn starts(pending: Option<PendingUtterance>) -> Option<u64> {
        pending.map(|p| p.spoken.start_ms)
    }

    #[test]
    fn utterances_are_numbered_from_one_and_transcripts_matched_oldest_first() {
        let mut caller = CallerSide::new();
        assert!(!caller.awaits_transcript());
        assert_eq!(speak(&mut caller, 1_000, &[]), 1);
        assert_eq!(speak(&mut caller, 3_000, &[]), 2);
        assert_eq!(speak(&mut caller, 5_000, &[]), 3);
        assert!(caller.awaits_transcript());
        assert_eq!(starts(caller.transcript_arrived()), Some(1_000));
        assert_eq!(starts(caller.transcript_arrived()), Some(3_000));
        assert_eq!(starts(caller.transcript_arrived()), Some(5_000));
        assert!(!caller.awaits_transcript());
        // A transcript with nothing awaited is the recognizer ending an utterance itself.
        assert!(caller.transcript_arrived().is_none());
        assert_eq!(speak(&mut caller, 7_000, &[]), 4);
    }

    #[test]
    fn the_timer_is_started_for_the_utterance_it_times() {
        let mut caller = CallerSide::new();
        speak(&mut caller, 0, &[]);
        let mut timed = None;
        let seq = caller.await_transcript(spoken(1_000), |seq| {
            timed = Some(seq);
            SpawnHandle::default().next()
        });
        assert_eq!((seq, timed), (2, Some(2)));
        caller.transcript_arrived();
        let pending = caller.transcript_arrived().map(|p| p.timeout);
        assert_eq!(pending, Some(Some(SpawnHandle::default().next())));
    }

    #[test]
    fn audio_is_kept_only_while_an_earlier_utterance_awaits_its_transcript() {
        let mut caller = CallerSide::new();
        // Nothing awaited: the first utterance's audio is the recognizer's alone.
        speak(&mut caller, 0, &[chunk(1), chunk(2)]);
        assert_eq!(caller.restart_inputs(), vec![SttInput::EndOfUtterance]);
        // Spoken while the first awaits its transcript: kept.
        caller.utterance_started(2_000);
        caller.fed(&chunk(3));
        assert!(!caller.capture_lost_with_stream());
        // The first's transcript leaves nothing awaited: the capture is no longer kept.
        caller.transcript_arrived();
        assert!(caller.capture_lost_with_stream());
        caller.fed(&chunk(4));
        assert_eq!(caller.restart_inputs(), Vec::<SttInput>::new());
    }

    #[test]
    fn a_restart_replays_only_what_was_spoken_after_the_lost_utterance() {
        let mut caller = CallerSide::new();
        speak(&mut caller, 0, &[chunk(1)]);
        speak(&mut caller, 2_000, &[chunk(2), chunk(3)]);
        caller.utterance_started(4_000);
        caller.fed(&chunk(4));
        // The first utterance is lost with the stream.
        assert_eq!(starts(caller.lost_with_stream()), Some(0));
        assert_eq!(
            caller.restart_inputs(),
            vec![
                SttInput::Audio(chunk(2)),
                SttInput::Audio(chunk(3)),
                SttInput::EndOfUtterance,
                SttInput::Audio(chunk(4)),
            ]
        );
        // The second still awaits its transcript: the capture stays kept for another restart.
        assert!(!caller.capture_lost_with_stream());
        caller.fed(&chunk(5));
        assert_eq!(
            caller.restart_inputs(),
            vec![
                SttInput::Audio(chunk(2)),
                SttInput::Audio(chunk(3)),
                SttInput::EndOfUtterance,
                SttInput::Audio(chunk(4)),
                SttInput::Audio(chunk(5)),
            ]
        );
        // Once nothing is awaited, a restart gives up the capture's audio.
        assert_eq!(starts(caller.lost_with_stream()), Some(2_000));
        assert_eq!(
            caller.restart_inputs(),
            vec![SttInput::Audio(chunk(4)), SttInput::Audio(chunk(5))]
        );
        assert!(caller.capture_lost_with_stream());
    }

    #[test]
    fn an_overdue_transcript_is_taken_only_while_it_is_the_oldest_awaited() {
        let mut caller = CallerSide::new();
        let first = speak(&mut caller, 0, &[]);
        let second = speak(&mut caller, 2_000, &[]);
        assert!(caller.overdue(second).is_none());
        assert_eq!(starts(caller.overdue(first)), Some(0));
        // Taken once: its timer cannot fail it again.
        assert!(caller.overdue(first).is_none());
        // The next transcript is the second utterance's.
        assert_eq!(starts(caller.transcript_arrived()), Some(2_000));
        assert!(caller.overdue(second).is_none());
    }

    #[test]
    fn the_recognizer_is_told_of_a_long_pause_once_and_of_speech_after_it() {
        let mut caller = CallerSide::new();
        caller.utterance_started(0);
        assert_eq!(caller.early_recognition(None, 300), None);
        assert_eq!(caller.early_recognition(Some(299), 300), None);
        assert_eq!(
            caller.early_recognition(Some(300), 300),
            Some(SttInput::Paused)
        );
        assert_eq!(caller.early_recognition(Some(500), 300), None);
        assert_eq!(caller.early_recognition(None, 300), Some(SttInput::Resumed));
        assert_eq!(caller.early_recognition(None, 300), None);
        // Off when the setting is 0.
        assert_eq!(caller.early_recognition(Some(10_000), 0), None);
    }

    #[test]
    fn a_new_utterance_stream_or_end_forgets_the_early_start() {
        let forgetting: [fn(&mut CallerSide); 3] = [
            |c: &mut CallerSide| c.utterance_started(5_000),
            |c: &mut CallerSide| {
                c.restart_inputs();
            },
            |c: &mut CallerSide| {
                c.end_capture(5_000);
            },
        ];
        for forget in forgetting {
            let mut caller = CallerSide::new();
            caller.utterance_started(0);
            assert_eq!(
                caller.early_recognition(Some(400), 300),
                Some(SttInput::Paused)
            );
            forget(&mut caller);
            assert_eq!(caller.early_recognition(None, 300), None);
        }
    }

    #[test]
    fn an_utterance_is_overlong_at_the_limit_from_its_onset() {
        let mut caller = CallerSide::new();
        assert!(!caller.is_overlong(MAX_UTTERANCE_MS * 2));
        caller.utterance_started(1_000);
        assert!(!caller.is_overlong(1_000 + MAX_UTTERANCE_MS - 1));
        assert!(caller.is_overlong(1_000 + MAX_UTTERANCE_MS));
        caller.capture_dropped();
        assert!(!caller.is_overlong(1_000 + MAX_UTTERANCE_MS));
    }

    #[test]
    fn an_utterance_the_recognizer_ended_runs_from_its_onset_to_the_last_speech() {
        let mut caller = CallerSide::new();
        caller.utterance_started(1_000);
        caller.speech_heard(2_380);
        assert_eq!(caller.ended_by_recognizer(), (1_000, 2_400));
        // The onset was used: an utterance without one starts where its speech ended.
        caller.speech_heard(3_000);
        assert_eq!(caller.ended_by_recognizer(), (3_020, 3_020));
        // A capture ended without an onset ends where it ends.
        assert_eq!(caller.end_capture(4_000), 4_000);
    }

    #[test]
    fn an_interruption_is_claimed_by_the_next_transcript_only() {
        let mut caller = CallerSide::new();
        caller.interrupted(Some(3));
        assert_eq!(caller.take_interrupted_turn(), Some(3));
        assert_eq!(caller.take_interrupted_turn(), None);
        caller.interrupted(Some(5));
        caller.forget_interruption();
        assert_eq!(caller.take_interrupted_turn(), None);
    }

    #[test]
    fn only_the_first_bad_frame_is_reported() {
        let mut caller = CallerSide::new();
        assert!(caller.bad_frame());
        assert!(!caller.bad_frame());
        assert!(!caller.bad_frame());
    }

    #[test]
    fn caller_audio_read_late_shows_as_lateness() {
        let start = Instant::now();
        let mut caller = CallerSide::new();
        for frame in 1..=10u64 {
            caller.frame_read(frame * 20, start + Duration::from_millis(frame * 20));
        }
        let stalled = start + Duration::from_millis(700);
        caller.frame_read(220, stalled);
        assert_eq!(caller.lateness(220, stalled), Duration::from_millis(480));
        assert_eq!(
            caller.lateness(200, start + Duration::from_millis(200)),
            Duration::ZERO
        );
    }

    #[test]
    fn a_turn_is_timed_from_the_end_of_speech_through_the_endpoint_to_the_transcript() {
        let speech_end_at = Instant::now();
        let utterance = SpokenUtterance {
            source: EndpointSource::Vad,
            start_ms: 0,
            end_ms: 1_000,
            speech_end_at,
            end_of_utterance_at: speech_end_at + Duration::from_millis(600),
        };
        let timing = utterance.answer_timing(speech_end_at + Duration::from_millis(850));
        assert_eq!(timing.speech_end_at, speech_end_at);
        assert_eq!((timing.endpoint_ms, timing.stt_ms), (600, 250));
        // A transcript that came before the end was decided took no recognizer time.
        assert_eq!(utterance.answer_timing(speech_end_at).stt_ms, 0);
    }
}
