//! A call, end to end in process: real speech (the shared fixtures, converted to 8 kHz mu-law
//! by the crate's own resampler and encoder) streamed in 20 ms frames into a `CallSession`
//! with scripted engines and a fake Twilio that plays audio and echoes marks. Time is tokio's
//! paused clock, so pacing is real-time but the tests run fast.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use support::*;
use switchboard_actors::engine::{Role, ToolCall};
use switchboard_actors::session::{
    frames_sent_in_process, AgentProfile, BargeInRecord, CallSession, CallerInput, EndReason,
    EndpointSource, GetSnapshot, Hangup, OutputQueue, SessionConfig, SessionEvent, SessionHandle,
    SessionOutput, SessionOutputs, SessionStatus, Speaker, TextIn, TransportClosed,
    HISTORY_MESSAGES,
};

fn config(first_message: &str) -> SessionConfig {
    SessionConfig::twilio(
        "CA-test",
        AgentProfile {
            first_message: first_message.into(),
            ..AgentProfile::default()
        },
    )
}

fn is_event(name: &'static str) -> impl Fn(&SessionOutput) -> bool {
    move |o| matches!(o, SessionOutput::Event(e) if e.name() == name)
}

fn is_audio(o: &SessionOutput) -> bool {
    matches!(o, SessionOutput::Audio(_))
}

async fn wait_until_listening(h: &mut Harness) {
    h.wait_for(
        "agent.audio.end",
        Duration::from_secs(30),
        is_event("agent.audio.end"),
    )
    .await;
    h.wait_for(
        "turn.metrics",
        Duration::from_secs(5),
        is_event("turn.metrics"),
    )
    .await;
}

/// Ends the call and checks that every actor and engine stream is gone.
async fn hang_up_and_check_all_stopped(h: &mut Harness) {
    h.session.addr().do_send(Hangup);
    h.wait_for("ended", Duration::from_secs(5), |o| {
        matches!(o, SessionOutput::Ended)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.session.live_actors(), 0, "actors still alive");
    assert_eq!(
        h.engines.active_streams(),
        0,
        "engine streams still running"
    );
}

#[actix::test]
async fn greeting_audio_arrives_first_and_quickly() {
    tokio::time::pause();
    let mut h = Harness::start(
        config("Hello! How can I help you today?"),
        Scripted::new(&[], vec![]),
    );
    let first = h
        .wait_for("first output", Duration::from_secs(1), |_| true)
        .await;
    assert!(matches!(
        &first.output,
        SessionOutput::Event(SessionEvent::SessionStarted { .. })
    ));
    let audio = h
        .wait_for("greeting audio", Duration::from_secs(2), is_audio)
        .await;
    let waited = audio.at - h.start;
    // Only the scripted voice's 40 ms first-chunk delay stands between start and audio.
    assert!(
        waited < Duration::from_millis(100),
        "greeting after {waited:?}"
    );
    assert_eq!(h.count(|o| matches!(o, SessionOutput::Mark(_))), 0);
    wait_until_listening(&mut h).await;
    let turns = h.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].speaker, Speaker::Agent);
    assert_eq!(turns[0].text, "Hello! How can I help you today?");
    assert!(!turns[0].interrupted);
    hang_up_and_check_all_stopped(&mut h).await;
}

/// Frames leave ahead of their time to play; a playback that could not run for most of a
/// second (its thread stalled) sends the frame after the gap late, and that is counted once.
#[actix::test]
async fn playback_that_falls_behind_counts_the_frame_sent_late() {
    tokio::time::pause();
    // 50 ms of speech a character: several seconds of greeting.
    let mut h = Harness::start(
        config("Hello! Thanks for calling, how can I help you today?"),
        Scripted::new(&[], vec![]),
    );
    h.wait_for("greeting audio", Duration::from_secs(2), is_audio)
        .await;
    let (sent_before, late_before) = frames_sent_in_process();
    h.drain_for(Duration::from_millis(600)).await;
    let (sent, late) = frames_sent_in_process();
    assert!(sent >= sent_before + 25, "{sent_before} then {sent}");
    assert_eq!(
        late, late_before,
        "playback that keeps up sends nothing late"
    );

    // The session's thread makes no progress for 700 ms: well past the 300 ms lead.
    tokio::time::advance(Duration::from_millis(700)).await;
    h.drain_for(Duration::from_millis(300)).await;
    let (_, late_after) = frames_sent_in_process();
    assert_eq!(
        late_after,
        late + 1,
        "the first frame after the gap is late"
    );
    hang_up_and_check_all_stopped(&mut h).await;
}

#[actix::test]
async fn a_multi_turn_conversation_keeps_both_sides_in_history() {
    tokio::time::pause();
    let engines = Scripted::new(
        &[
            "He began a confused complaint against the wizard.",
            "The horizon seems extremely distant.",
        ],
        vec![
            LlmTurn::Say("I am sorry to hear that. What did the wizard do?".into()),
            LlmTurn::Say("It does look far away, Dr. Smith said 3.5 miles.".into()),
        ],
    );
    let mut h = Harness::start(config("Hi, this is the front desk."), engines);
    wait_until_listening(&mut h).await;
    let (first, second) = caller_utterances_mulaw();
    h.speak(&first, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for(
        "first transcript",
        Duration::from_secs(5),
        is_event("transcript.final"),
    )
    .await;
    h.wait_for(
        "agent audio",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    // The model read the system prompt and the greeting while the greeting played, and the
    // first answer's request starts with exactly those messages.
    let warmed = h.engines.llm.warmed.lock().unwrap().clone();
    assert_eq!(warmed.len(), 1, "read ahead once, at the start");
    assert_eq!(warmed[0].messages.len(), 2);
    assert_eq!(warmed[0].messages[0].role, Role::System);
    assert_eq!(warmed[0].messages[1].content, "Hi, this is the front desk.");
    let first_request = h.engines.llm.requests.lock().unwrap()[0].clone();
    assert_eq!(first_request.messages[..2], warmed[0].messages[..]);
    // Keep the line open (silence) while the agent talks.
    wait_until_listening(&mut h).await;
    h.speak(&second, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for(
        "second answer",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    h.speak(&mulaw_silence(4_000), 160).await;
    wait_until_listening(&mut h).await;

    let snapshot = h
        .session
        .addr()
        .send(GetSnapshot)
        .await
        .expect("session alive");
    let roles: Vec<Role> = snapshot.history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
    assert_eq!(
        snapshot.history[1].content,
        "He began a confused complaint against the wizard."
    );
    assert_eq!(
        snapshot.history[4].content,
        "It does look far away, Dr. Smith said 3.5 miles."
    );
    // The model saw the system prompt and the whole history.
    let requests = h.engines.llm.requests.lock().expect("not poisoned").clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages[0].role, Role::System);
    assert_eq!(requests[1].messages.len(), 5);
    // Synthesis got the answer sentence by sentence, the abbreviation and number intact.
    let spoken = h.engines.tts.requests.lock().expect("not poisoned").clone();
    assert!(
        spoken.contains(&"I am sorry to hear that.".to_owned()),
        "{spoken:?}"
    );
    assert!(
        spoken.contains(&"It does look far away, Dr. Smith said 3.5 miles.".to_owned()),
        "{spoken:?}"
    );
    // Marks followed the audio and were echoed.
    assert!(h.count(|o| matches!(o, SessionOutput::Mark(_))) >= 3);

    let turns = h.turns();
    let speakers: Vec<Speaker> = turns.iter().map(|t| t.speaker).collect();
    assert_eq!(
        speakers,
        vec![
            Speaker::Agent,
            Speaker::User,
            Speaker::Agent,
            Speaker::User,
            Speaker::Agent
        ]
    );
    for t in &turns {
        assert!(t.end_ms >= t.start_ms, "{t:?}");
        assert!(t.error.is_none() && !t.interrupted, "{t:?}");
    }
    assert!(turns[1].stt_ms >= 80, "{:?}", turns[1]);
    let latency = turns[2].latency.expect("answers carry latency");
    // End of speech -> 600 ms endpoint silence -> 80 ms STT -> 60 ms first token -> voice.
    assert!(
        latency.endpoint_ms >= 580 && latency.endpoint_ms <= 700,
        "{latency:?}"
    );
    assert!(latency.stt_ms >= 80, "{latency:?}");
    assert!(latency.llm_ms >= 60, "{latency:?}");
    assert!(latency.tts_ms >= 40, "{latency:?}");
    assert!(
        latency.total_ms >= latency.endpoint_ms + latency.stt_ms + latency.llm_ms,
        "{latency:?}"
    );
    assert_eq!(h.engines.stt.utterances.load(Ordering::SeqCst), 2);

    hang_up_and_check_all_stopped(&mut h).await;
    let summary = h.summary().expect("summary reported");
    assert_eq!(summary.status, SessionStatus::Completed);
    assert_eq!(summary.reason, EndReason::Hangup);
    assert_eq!(summary.turns, 5);
    assert!(summary.avg_turn_latency_ms > 0);
}

#[actix::test]
async fn caller_speech_over_the_agent_clears_and_truncates_history() {
    tokio::time::pause();
    interrupt_with_caller_frames_in_messages_of(1).await;
}

/// A transport that read several caller frames at once forwards them in one message: the
/// interruption is decided as for frames one by one, at the same point of the speech, and the
/// frames of a message that waited for its last one were heard that much later (at most a
/// message's length, 140 ms).
#[actix::test]
async fn caller_speech_over_the_agent_in_multi_frame_messages_clears_the_same() {
    tokio::time::pause();
    let one_by_one = interrupt_with_caller_frames_in_messages_of(1).await;
    let together = interrupt_with_caller_frames_in_messages_of(7).await;
    // The 200 ms sustain, plus under the clock's 40 ms tolerance one by one, plus up to a
    // message's wait together.
    assert!(
        (200..240).contains(&one_by_one.detection_ms)
            && (200..200 + 140 + 40).contains(&together.detection_ms),
        "{together:?} against {one_by_one:?}"
    );
}

/// Interrupts a long answer with caller speech sent `frames` frames a message; answers what
/// the session recorded of the interruption.
async fn interrupt_with_caller_frames_in_messages_of(frames: usize) -> BargeInRecord {
    let long_answer = "Our opening hours are from nine in the morning until six in the evening. \
        On Saturdays we open at ten and close at four. On Sundays and public holidays the \
        office stays closed, but the hotline answers calls all day long. You can also write \
        to us at any time and we will answer within one working day.";
    let engines = Scripted::new(
        &["When are you open?", "Thanks, that is all."],
        vec![
            LlmTurn::Say(long_answer.into()),
            LlmTurn::Say("Goodbye.".into()),
        ],
    );
    // A slow model: still writing when the caller interrupts.
    let mut engines = engines;
    std::sync::Arc::get_mut(&mut engines.llm)
        .expect("fresh")
        .token_delay = Duration::from_millis(60);
    let mut h = Harness::start(config(""), engines);
    let (first, second) = caller_utterances_mulaw();
    h.speak(&first, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for(
        "agent audio",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    h.speak(&mulaw_silence(1_500), 160).await;
    // Barge in.
    h.speak_paced(&second, 160 * frames, 20 * frames as u64)
        .await;
    h.wait_for("clear", Duration::from_secs(1), |o| {
        matches!(o, SessionOutput::Clear { .. })
    })
    .await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for(
        "reply to the interruption",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    h.speak(&mulaw_silence(1_500), 160).await;

    let (llm_cancelled, tts_cancelled) = h.engines.cancelled();
    assert!(
        llm_cancelled + tts_cancelled >= 1,
        "no engine saw the cancellation"
    );
    assert!(
        llm_cancelled >= 1,
        "the model was still streaming and must be cancelled"
    );

    let turns = h.turns();
    let interrupted = turns
        .iter()
        .find(|t| t.interrupted)
        .expect("an interrupted agent turn");
    let barge = interrupted.barge_in.clone().expect("barge-in record");
    assert!(
        barge.detection_ms >= 200 && barge.detection_ms < 400,
        "{barge:?}"
    );
    assert!(barge.stop_ms < 50, "{barge:?}");
    assert!(!barge.requested);
    let heard = interrupted.text.clone();
    assert!(!heard.is_empty(), "about 1.5 s of audio had played");
    assert!(
        long_answer.starts_with(heard.trim_end_matches(['.', ','])),
        "{heard}"
    );
    assert!(heard.split_whitespace().count() < long_answer.split_whitespace().count());

    let snapshot = h
        .session
        .addr()
        .send(GetSnapshot)
        .await
        .expect("session alive");
    let assistant = &snapshot.history[1];
    assert_eq!(assistant.role, Role::Assistant);
    assert_eq!(
        assistant.content, heard,
        "history keeps only what was played"
    );
    assert_eq!(snapshot.history[2].content, "Thanks, that is all.");
    hang_up_and_check_all_stopped(&mut h).await;
    assert_eq!(h.summary().expect("summary").interruptions, 1);
    barge
}

/// The caller says `utterance`; its turn fails (a turn of `speaker`'s stored with an error
/// starting `code`), an error event goes out and the caller hears the apology.
async fn apology_for_a_failed_turn(
    h: &mut Harness,
    utterance: &[u8],
    speaker: Speaker,
    code: &str,
) {
    h.speak(utterance, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for("error event", Duration::from_secs(5), is_event("error"))
        .await;
    h.wait_for(
        "apology audio",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    let spoken = h.engines.tts.requests.lock().expect("not poisoned").clone();
    assert!(
        spoken
            .iter()
            .any(|s| s.starts_with("Sorry, I had a problem")),
        "{spoken:?}"
    );
    let failed = h
        .turns()
        .into_iter()
        .find(|t| t.error.is_some())
        .expect("a failed turn");
    assert_eq!(failed.speaker, speaker);
    assert!(
        failed.error.as_deref().is_some_and(|e| e.starts_with(code)),
        "{failed:?}"
    );
}

#[actix::test]
async fn an_engine_failure_apologises_and_the_call_goes_on() {
    tokio::time::pause();
    let engines = Scripted::new(
        &["First question.", "Second question."],
        vec![LlmTurn::Fail, LlmTurn::Say("Here is the answer.".into())],
    );
    let mut h = Harness::start(config(""), engines);
    let (first, second) = caller_utterances_mulaw();
    apology_for_a_failed_turn(&mut h, &first, Speaker::Agent, "llm_failed").await;
    h.speak(&mulaw_silence(4_000), 160).await;

    h.speak(&second, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for(
        "answer",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    h.speak(&mulaw_silence(3_000), 160).await;
    let snapshot = h
        .session
        .addr()
        .send(GetSnapshot)
        .await
        .expect("session alive");
    assert_eq!(
        snapshot.history.last().map(|m| m.content.as_str()),
        Some("Here is the answer.")
    );
    hang_up_and_check_all_stopped(&mut h).await;
    assert_eq!(h.summary().expect("summary").failed_turns, 1);
}

#[actix::test]
async fn a_recognizer_that_does_not_answer_in_time_fails_the_turn_and_the_call_goes_on() {
    tokio::time::pause();
    let mut engines = Scripted::new(
        &["First question.", "Second question."],
        vec![
            LlmTurn::Say("First answer.".into()),
            LlmTurn::Say("Second answer.".into()),
        ],
    );
    Arc::get_mut(&mut engines.stt).expect("fresh").delay = Duration::from_secs(3);
    let mut cfg = config("");
    cfg.timeouts.stt = Duration::from_secs(1);
    let mut h = Harness::start(cfg, engines);
    let (first, _) = caller_utterances_mulaw();
    apology_for_a_failed_turn(&mut h, &first, Speaker::User, "stt_timeout").await;
    h.speak(&mulaw_silence(4_000), 160).await;
    hang_up_and_check_all_stopped(&mut h).await;
}

/// Waits for the next final transcript and checks it reads `expected`.
async fn next_transcript_is(h: &mut Harness, expected: &str) {
    let heard = h
        .wait_for(
            "a final transcript",
            Duration::from_secs(5),
            is_event("transcript.final"),
        )
        .await;
    assert!(
        matches!(&heard.output, SessionOutput::Event(SessionEvent::TranscriptFinal { text }) if text == expected),
        "{:?}",
        heard.output
    );
}

#[actix::test]
async fn a_transcript_that_comes_after_its_timeout_is_never_taken_for_a_later_utterance() {
    tokio::time::pause();
    let engines = Scripted::new(
        &["First question.", "Second question."],
        vec![LlmTurn::Say("Second answer.".into())],
    );
    // The first utterance is recognised 10 s after it ends, 5 s past its timeout; the caller
    // speaks again at once and has finished before that timeout.
    *engines.stt.delays.lock().expect("not poisoned") = [Duration::from_secs(10)].into();
    let mut cfg = config("");
    cfg.timeouts.stt = Duration::from_secs(5);
    let mut h = Harness::start(cfg, engines);
    let (first, second) = caller_utterances_mulaw();
    h.speak(&first, 160).await;
    h.speak(&mulaw_silence(600), 160).await;
    h.speak(&second, 160).await;
    h.wait_for("the timeout", Duration::from_secs(5), is_event("error"))
        .await;
    // The second utterance, spoken while the first awaited its transcript, is recognised on
    // the recognizer's new stream.
    next_transcript_is(&mut h, "Second question.").await;
    // Well past the moment the first utterance's transcript would have come.
    h.speak(&mulaw_silence(12_000), 160).await;

    let user_turns: Vec<_> = h
        .turns()
        .into_iter()
        .filter(|t| t.speaker == Speaker::User)
        .map(|t| (t.text, t.error.map(|e| e.starts_with("stt_timeout"))))
        .collect();
    assert_eq!(
        user_turns,
        vec![
            (String::new(), Some(true)),
            ("Second question.".to_string(), None)
        ]
    );
    let spoken = h.engines.tts.requests.lock().expect("not poisoned").clone();
    assert_eq!(
        spoken,
        [
            "Sorry, I had a problem there.",
            "Could you say that again?",
            "Second answer."
        ]
    );
    let snapshot = h.session.addr().send(GetSnapshot).await.expect("alive");
    assert!(
        !snapshot
            .history
            .iter()
            .any(|m| m.content.contains("First question")),
        "{:?}",
        snapshot.history
    );
    hang_up_and_check_all_stopped(&mut h).await;
}

#[actix::test]
async fn a_recognizer_that_fails_apologises_and_hears_the_next_utterance_on_a_new_stream() {
    tokio::time::pause();
    let engines = Scripted::new(
        &["Second question."],
        vec![LlmTurn::Say("Second answer.".into())],
    );
    engines.stt.failing.store(1, Ordering::SeqCst);
    let mut h = Harness::start(config(""), engines);
    let (first, second) = caller_utterances_mulaw();
    apology_for_a_failed_turn(&mut h, &first, Speaker::User, "stt_failed").await;
    h.speak(&mulaw_silence(3_000), 160).await;
    h.speak(&second, 160).await;
    next_transcript_is(&mut h, "Second question.").await;
    h.wait_for(
        "the answer",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    h.speak(&mulaw_silence(2_000), 160).await;
    assert_eq!(h.engines.stt.utterances.load(Ordering::SeqCst), 2);
    hang_up_and_check_all_stopped(&mut h).await;
}

#[actix::test]
async fn a_tool_call_round_trip() {
    tokio::time::pause();
    let call = ToolCall {
        id: "call-1".into(),
        name: "get_weather".into(),
        arguments: "{\"city\": \"Paris\"}".into(),
    };
    let engines = Scripted::new(
        &["What is the weather in Paris?"],
        vec![
            LlmTurn::CallTool {
                say: String::new(),
                call: call.clone(),
            },
            LlmTurn::Say("It is sunny and 21 degrees in Paris.".into()),
        ],
    );
    let mut h = Harness::start(config(""), engines);
    let (first, _) = caller_utterances_mulaw();
    h.speak(&first, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for("tool.call", Duration::from_secs(5), is_event("tool.call"))
        .await;
    let result = h
        .wait_for(
            "tool.result",
            Duration::from_secs(5),
            is_event("tool.result"),
        )
        .await;
    if let SessionOutput::Event(SessionEvent::ToolResult { is_error, name, .. }) = &result.output {
        assert!(!is_error);
        assert_eq!(name, "get_weather");
    }
    h.wait_for(
        "answer audio",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    h.speak(&mulaw_silence(3_000), 160).await;
    let snapshot = h
        .session
        .addr()
        .send(GetSnapshot)
        .await
        .expect("session alive");
    let h2 = &snapshot.history;
    assert_eq!(h2[1].tool_calls, vec![call]);
    assert_eq!(h2[2].role, Role::Tool);
    assert_eq!(h2[2].tool_call_id.as_deref(), Some("call-1"));
    assert_eq!(h2[3].content, "It is sunny and 21 degrees in Paris.");
    let requests = h.engines.llm.requests.lock().expect("not poisoned").clone();
    assert_eq!(
        requests.len(),
        2,
        "one round for the call, one for the answer"
    );
    hang_up_and_check_all_stopped(&mut h).await;
    assert_eq!(h.summary().expect("summary").tool_executions, 1);
}

#[actix::test]
async fn idle_timeout_ends_the_session() {
    tokio::time::pause();
    let mut cfg = config("Hello.");
    cfg.idle_timeout = Duration::from_secs(3);
    let mut h = Harness::start(cfg, Scripted::new(&[], vec![]));
    h.wait_for("ended", Duration::from_secs(10), |o| {
        matches!(o, SessionOutput::Ended)
    })
    .await;
    let ended_after = h.seen.last().expect("seen").at - h.start;
    assert!(ended_after >= Duration::from_secs(3) && ended_after < Duration::from_secs(4));
    let summary = h.summary().expect("summary");
    assert_eq!(summary.reason, EndReason::IdleTimeout);
    assert_eq!(summary.status, SessionStatus::Completed);
    assert!(h.count(is_event("session.ended")) == 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(h.session.live_actors(), 0);
}

#[actix::test]
async fn a_session_ends_when_its_transport_stops_reading_even_with_nothing_to_send() {
    tokio::time::pause();
    let engines = Scripted::new(&[], vec![]);
    let observer = Arc::new(RecordingObserver::default());
    let (output, outputs) = OutputQueue::new();
    // No greeting and no caller: once started, the session has nothing to send.
    let session = CallSession::start(config(""), engines.session(), output, observer.clone())
        .expect("valid configuration");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(observer.summary.lock().expect("not poisoned").is_none());
    drop(outputs);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let summary = observer.summary.lock().expect("not poisoned").clone();
    let summary = summary.expect("the session ended without waiting for its idle timeout");
    assert_eq!(summary.reason, EndReason::TransportClosed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(session.live_actors(), 0);
}

/// A session with no greeting that reads `caller_side` itself, with the socket writer's
/// failure already in its mailbox before it has polled that side once. Answers the session,
/// its observer and the queue's receiver (kept, so only the failure ends the call).
fn reading_session_whose_writer_failed(
    caller_side: impl futures_util::Stream<Item = CallerInput> + 'static,
) -> (SessionHandle, Arc<RecordingObserver>, SessionOutputs) {
    let engines = Scripted::new(&[], vec![]);
    let observer = Arc::new(RecordingObserver::default());
    let (output, outputs) = OutputQueue::new();
    let session = CallSession::start_reading(
        config(""),
        engines.session(),
        output,
        observer.clone(),
        caller_side,
    )
    .expect("valid configuration");
    session.addr().do_send(TransportClosed);
    (session, observer, outputs)
}

fn ending(observer: &RecordingObserver) -> Option<EndReason> {
    let summary = observer.summary.lock().expect("not poisoned");
    summary.as_ref().map(|s| s.reason.clone())
}

/// A caller hangs up (Twilio's `stop`) and closes its socket at once, and a write to the
/// closed socket fails before the session has read as far as the `stop`: under load the
/// writer's failure reaches the session first. The caller hung up, and the record says so.
#[actix::test]
async fn a_hangup_sent_before_the_socket_closed_ends_the_call_as_hangup() {
    tokio::time::pause();
    let caller_side =
        futures_util::stream::iter([CallerInput::Hangup]).chain(futures_util::stream::pending());
    let (session, observer, _outputs) = reading_session_whose_writer_failed(caller_side);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(ending(&observer), Some(EndReason::Hangup));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(session.live_actors(), 0);
}

/// The writing side failed but the caller's side stays open (a client that stopped reading
/// and still sends): the session keeps reading for a grace of two seconds, then ends.
#[actix::test]
async fn a_failed_transport_whose_caller_side_stays_open_ends_after_a_grace() {
    tokio::time::pause();
    let (session, observer, _outputs) =
        reading_session_whose_writer_failed(futures_util::stream::pending());
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(ending(&observer), None);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(ending(&observer), Some(EndReason::TransportClosed));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(session.live_actors(), 0);
}

#[actix::test]
async fn hangup_mid_answer_stops_everything() {
    tokio::time::pause();
    let engines = Scripted::new(
        &["Tell me a long story."],
        vec![LlmTurn::Say(
            "Once upon a time there was a very long story that went on and on. ".repeat(5),
        )],
    );
    let mut engines = engines;
    std::sync::Arc::get_mut(&mut engines.llm)
        .expect("fresh")
        .token_delay = Duration::from_millis(50);
    let mut h = Harness::start(config(""), engines);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        h.session.live_actors(),
        4,
        "session, recognizer, tools, liveness ticks"
    );
    let (first, _) = caller_utterances_mulaw();
    h.speak(&first, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for(
        "agent audio",
        Duration::from_secs(5),
        is_event("agent.audio.start"),
    )
    .await;
    assert!(h.session.live_actors() >= 4, "a reply is running");
    assert!(h.engines.active_streams() >= 1);
    hang_up_and_check_all_stopped(&mut h).await;
    assert!(h.engines.cancelled().0 >= 1, "the model stream was dropped");
}

#[actix::test]
async fn a_hundred_concurrent_sessions() {
    tokio::time::pause();
    let (first, _) = caller_utterances_mulaw();
    let mut calls = Vec::new();
    for i in 0..100 {
        let mut cfg = config("Hello.");
        cfg.session_id = format!("CA-{i}");
        let engines = Scripted::new(&["Hi."], vec![LlmTurn::Say(format!("Hello caller {i}."))]);
        calls.push(Harness::start(cfg, engines));
    }
    // Interleave the callers' frames as a transport would.
    let mut audio = first.clone();
    audio.extend(mulaw_silence(3_000));
    for chunk in audio.chunks(160) {
        for h in &calls {
            h.session
                .addr()
                .do_send(switchboard_actors::session::AudioIn(
                    bytes::Bytes::copy_from_slice(chunk),
                ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (i, h) in calls.iter_mut().enumerate() {
        h.drain_for(Duration::from_millis(1)).await;
        let snapshot = h
            .session
            .addr()
            .send(GetSnapshot)
            .await
            .expect("session alive");
        assert_eq!(
            snapshot.history.last().map(|m| m.content.clone()),
            Some(format!("Hello caller {i}.")),
            "session {i}"
        );
        h.session.addr().do_send(Hangup);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for h in &calls {
        assert_eq!(h.session.live_actors(), 0);
        assert_eq!(h.engines.active_streams(), 0);
    }
}

/// Knowledge found for the caller's words goes to the model right before them; a lookup that
/// misses its deadline leaves the prompt as it was and the answer still comes.
#[actix::test]
async fn knowledge_is_looked_up_before_the_model_answers() {
    tokio::time::pause();
    for (delay, expect_knowledge) in [
        (Duration::from_millis(20), true),
        (Duration::from_secs(5), false),
    ] {
        let mut engines = Scripted::new(
            &["What are your opening hours?"],
            vec![LlmTurn::Say("We open at nine.".into())],
        );
        let facts = "\n\nFacts:\n- The shop opens at nine and closes at six.";
        engines.knowledge = Some(ScriptedKnowledge::new(Some(facts), delay));
        let mut h = Harness::start(config(""), engines);
        let (first, _) = caller_utterances_mulaw();
        h.speak(&first, 160).await;
        h.speak(&mulaw_silence(800), 160).await;
        h.wait_for(
            "answer audio",
            Duration::from_secs(10),
            is_event("agent.audio.start"),
        )
        .await;
        let queries = h
            .engines
            .knowledge
            .as_ref()
            .expect("set")
            .queries
            .lock()
            .unwrap()
            .clone();
        assert_eq!(queries, vec!["What are your opening hours?".to_string()]);
        let requests = h.engines.llm.requests.lock().expect("not poisoned").clone();
        assert_eq!(requests.len(), 1);
        let messages = &requests[0].messages;
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        // The knowledge is a system message of its own, right before the caller's words;
        // the system prompt stays as the agent wrote it.
        let expected_roles = if expect_knowledge {
            vec![Role::System, Role::System, Role::User]
        } else {
            vec![Role::System, Role::User]
        };
        assert_eq!(
            roles, expected_roles,
            "lookup delay {delay:?}: {messages:?}"
        );
        assert!(!messages[0].content.contains("opens at nine"));
        assert_eq!(
            messages[messages.len() - 2]
                .content
                .contains("opens at nine and closes at six"),
            expect_knowledge,
            "lookup delay {delay:?}: {messages:?}"
        );
        hang_up_and_check_all_stopped(&mut h).await;
    }
}

#[actix::test]
async fn a_long_call_keeps_its_latest_exchanges_and_sends_the_model_no_more() {
    tokio::time::pause();
    let mut h = Harness::start(config("Hello!"), Scripted::new(&[], vec![]));
    wait_until_listening(&mut h).await;
    let turns = HISTORY_MESSAGES + 10;
    for i in 0..turns {
        h.session
            .addr()
            .do_send(TextIn(format!("Question number {i}?")));
        wait_until_listening(&mut h).await;
    }
    let snapshot = h.session.addr().send(GetSnapshot).await.expect("alive");
    assert!(
        snapshot.history.len() <= HISTORY_MESSAGES,
        "{} messages kept",
        snapshot.history.len()
    );
    assert_eq!(
        snapshot.history[0].role,
        Role::User,
        "starts at a caller turn"
    );
    // The latest exchanges are whole and in order.
    let kept = snapshot.history.len() / 2;
    for (n, pair) in snapshot.history.chunks(2).enumerate() {
        let question = turns - kept + n;
        assert_eq!(pair[0].content, format!("Question number {question}?"));
        assert_eq!(pair[1].role, Role::Assistant);
    }
    let requests = h.engines.llm.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), turns);
    // The history is cut by half at a time, so the prompt's start (what a prompt cache keys
    // on) changes once every ten exchanges, not every turn.
    let mut starts: Vec<&str> = requests
        .iter()
        .map(|r| r.messages[1].content.as_str())
        .collect();
    starts.dedup();
    assert!(
        starts.len() <= 5,
        "the prompt's start changed {} times",
        starts.len() - 1
    );
    // Each cut is made as the answer before it ends, and the model is asked to read the kept
    // history then (after the start's read of the greeting): the caller's next turn only adds
    // to what it read.
    let warmed = h.engines.llm.warmed.lock().unwrap().clone();
    assert_eq!(warmed.len(), starts.len(), "one read ahead per cut");
    for ahead in &warmed[1..] {
        let read = ahead.messages.len();
        let next = requests
            .iter()
            .find(|r| r.messages.len() > read && r.messages[..read] == ahead.messages[..])
            .expect("a later turn begins with what was read ahead");
        assert_eq!(next.messages[1].role, Role::User);
        assert_eq!(ahead.conversation, next.conversation);
    }
    assert_eq!(warmed[1].conversation.as_deref(), Some("CA-test"));
    let last = requests.last().unwrap();
    assert!(
        last.messages.len() <= HISTORY_MESSAGES + 1,
        "system prompt + history"
    );
    assert_eq!(last.messages[0].role, Role::System);
    assert_eq!(
        last.messages.last().unwrap().content,
        format!("Question number {}?", turns - 1)
    );
    // Every turn is still recorded for the call's transcript.
    assert_eq!(h.turns().len(), 1 + 2 * turns);
    hang_up_and_check_all_stopped(&mut h).await;
}

/// A caller who talks for 40 s without pausing (or a line whose noise the VAD takes for
/// speech) is not held in one turn: the turn is cut at 30 s and recognised, and the speech
/// that goes on is the next turn.
#[actix::test]
async fn a_turn_without_a_pause_is_cut_at_the_longest_turn() {
    tokio::time::pause();
    let engines = Scripted::new(
        &["The first thirty seconds.", "And the rest."],
        vec![LlmTurn::Say("I see.".into())],
    );
    let stt = engines.stt.clone();
    let mut h = Harness::start(config("Hello."), engines);
    wait_until_listening(&mut h).await;

    // The left speaker's speech with every pause cut to 200 ms, repeated to 40 s: no silence
    // the endpointing (600 ms) could take for the end of the turn.
    let (left, _) = two_speakers_16k();
    let mut quiet_run = 0;
    let unpaused: Vec<i16> = left
        .chunks_exact(320)
        .filter(|frame| {
            let energy = frame.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / 320.0;
            quiet_run = if energy.sqrt() < 500.0 {
                quiet_run + 1
            } else {
                0
            };
            quiet_run <= 10
        })
        .flatten()
        .copied()
        .collect();
    let talking: Vec<i16> = unpaused.iter().copied().cycle().take(16_000 * 40).collect();
    h.speak(&to_mulaw_8k(&talking), 160).await;
    h.speak(&mulaw_silence(1_000), 160).await;
    h.wait_for(
        "the answer",
        Duration::from_secs(10),
        is_event("agent.audio.start"),
    )
    .await;

    let callers: Vec<_> = h
        .turns()
        .into_iter()
        .filter(|t| t.speaker == Speaker::User)
        .collect();
    assert_eq!(callers.len(), 2, "{callers:?}");
    assert_eq!(callers[0].endpoint, Some(EndpointSource::MaxLength));
    assert_eq!(callers[0].text, "The first thirty seconds.");
    let first_ms = callers[0].end_ms - callers[0].start_ms;
    assert!(
        (29_000..=30_100).contains(&first_ms),
        "the first turn lasted {first_ms} ms"
    );
    assert_eq!(callers[1].endpoint, Some(EndpointSource::Vad));
    // The second turn goes straight on (its start is read off the wall clock when it ends,
    // and the harness's 20 ms sleeps run about 1 ms long each: up to half a second apart).
    let gap_ms = callers[1].start_ms.abs_diff(callers[0].end_ms);
    assert!(
        gap_ms < 1_000,
        "{gap_ms} ms between the two turns: {callers:?}"
    );
    // The agent waited for the caller to finish: its answer follows the second turn and was
    // not talked over.
    let agents: Vec<_> = h
        .turns()
        .into_iter()
        .filter(|t| t.speaker == Speaker::Agent)
        .collect();
    assert_eq!(
        agents.len(),
        1,
        "only the greeting has ended so far: {agents:?}"
    );
    assert!(!h.turns().iter().any(|t| t.interrupted), "{:?}", h.turns());
    assert_eq!(stt.utterances.load(Ordering::SeqCst), 2);
    // What the recognizer heard is the 40 s, with at most the pre-roll of each turn again.
    let heard_s = stt.samples.load(Ordering::SeqCst) as f64 / 16_000.0;
    assert!(
        (39.0..=41.0).contains(&heard_s),
        "{heard_s} s sent to the recognizer"
    );
}

/// Waits for the next `event` about a reply; its `responseId`.
async fn reply_of(h: &mut Harness, event: &'static str) -> u64 {
    let seen = h
        .wait_for(event, Duration::from_secs(10), is_event(event))
        .await;
    match seen.output {
        SessionOutput::Event(
            SessionEvent::AgentTextDelta { response_id, .. }
            | SessionEvent::AgentCancelled { response_id }
            | SessionEvent::AgentAudioStart { response_id },
        ) => response_id,
        other => panic!("{event} names no reply: {}", describe(&other)),
    }
}

#[actix::test]
async fn an_answer_the_caller_talks_over_before_it_is_heard_is_cancelled_and_metrics_name_their_reply(
) {
    tokio::time::pause();
    let mut engines = Scripted::new(
        &["He began a confused complaint.", "Against the wizard."],
        vec![
            LlmTurn::Say("Tell me more about it.".into()),
            LlmTurn::Say("I understand now.".into()),
        ],
    );
    // The voice is slow to start: the caller goes on talking before the answer is heard.
    Arc::get_mut(&mut engines.tts)
        .expect("fresh")
        .first_chunk_delay = Duration::from_millis(1_500);
    let mut h = Harness::start(config("Hello."), engines);
    wait_until_listening(&mut h).await;
    let (left, _) = caller_utterances_mulaw();
    h.speak(&left, 160).await;
    h.speak(&mulaw_silence(900), 160).await;
    let first = reply_of(&mut h, "agent.text.delta").await;
    h.speak(&left, 160).await;
    assert_eq!(reply_of(&mut h, "agent.cancelled").await, first);
    h.speak(&mulaw_silence(900), 160).await;
    let second = reply_of(&mut h, "agent.audio.start").await;
    assert_ne!(second, first);
    wait_until_listening(&mut h).await;
    // The cancelled answer was never spoken: no turn of its own, no audio of its own.
    let agents: Vec<_> = h
        .turns()
        .into_iter()
        .filter(|t| t.speaker == Speaker::Agent)
        .collect();
    assert_eq!(
        agents.iter().map(|t| t.response_id).collect::<Vec<_>>(),
        vec![agents[0].response_id, Some(second)],
        "{agents:?}"
    );
    assert!(agents.iter().all(|t| t.response_id != Some(first)));
    assert!(h
        .turns()
        .iter()
        .filter(|t| t.speaker == Speaker::User)
        .all(|t| t.response_id.is_none()));
    hang_up_and_check_all_stopped(&mut h).await;
}
