//! Smart turn detection in a whole call: recorded speech (the shared fixtures at 8 kHz mu-law)
//! into a `CallSession` whose end-of-turn model is scripted, against the same call with the
//! silence timer alone. Time is tokio's paused clock.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use support::*;
use switchboard_actors::session::{
    AgentProfile, EndpointSource, SessionConfig, SessionOutput, SmartTurn, Speaker, TurnDetection,
    TurnPreferences,
};

fn config(detection: TurnDetection) -> SessionConfig {
    SessionConfig::twilio(
        "CA-turns",
        AgentProfile {
            turn: TurnPreferences {
                detection: Some(detection),
                ..TurnPreferences::default()
            },
            ..AgentProfile::default()
        },
    )
}

fn smart() -> TurnDetection {
    TurnDetection::Smart(SmartTurn::default())
}

fn is_event(name: &'static str) -> impl Fn(&SessionOutput) -> bool {
    move |o| matches!(o, SessionOutput::Event(e) if e.name() == name)
}

fn engines(model: Option<Arc<ScriptedTurnEnd>>) -> Scripted {
    let mut engines = Scripted::new(
        &["first words", "second words"],
        vec![
            LlmTurn::Say("Understood.".into()),
            LlmTurn::Say("Understood again.".into()),
        ],
    );
    engines.turn_end = model.map(|m| m as _);
    engines
}

/// The caller's turns as the session recorded them.
fn caller_turns(h: &Harness) -> Vec<switchboard_actors::session::TurnRecord> {
    h.turns()
        .into_iter()
        .filter(|t| t.speaker == Speaker::User)
        .collect()
}

/// The left speaker, a pause, then the right speaker, then silence: said by a caller who
/// pauses mid-turn. With the silence at the end of the one recording and the start of the
/// other, the pause lasts some 1.3 s. Returns the session's caller turns and the model's questions.
async fn paused_turn(detection: TurnDetection, model: Option<Arc<ScriptedTurnEnd>>) -> Harness {
    let (first, second) = caller_utterances_mulaw();
    let mut h = Harness::start(config(detection), engines(model));
    h.speak(&mulaw_silence(400), 160).await;
    h.speak(&first, 160).await;
    h.speak(&mulaw_silence(300), 160).await;
    h.speak(&second, 160).await;
    h.speak(&mulaw_silence(2_000), 160).await;
    h.wait_for(
        "an answer",
        Duration::from_secs(10),
        is_event("agent.audio.start"),
    )
    .await;
    h
}

#[actix::test]
async fn a_pause_the_model_calls_mid_sentence_does_not_cut_the_caller_off() {
    tokio::time::pause();
    let (first, _) = caller_utterances_mulaw();
    // Complete only once the second sentence has been going for a second (in ms of audio:
    // the capture is at the recognizer's rate).
    let complete_after_ms = first.len() / 8 + 300 + 1_000;
    let model = ScriptedTurnEnd::new(
        move |audio| {
            if audio.len() * 1_000 / audio.rate as usize >= complete_after_ms {
                0.95
            } else {
                0.05
            }
        },
        Duration::from_millis(20),
    );
    let h = paused_turn(smart(), Some(model.clone())).await;
    assert_eq!(
        h.engines.stt.utterances.load(Ordering::SeqCst),
        1,
        "the pause did not end the turn"
    );
    let turns = caller_turns(&h);
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(turns[0].endpoint, Some(EndpointSource::Model));
    assert!(
        model.heard.lock().unwrap().len() >= 2,
        "asked at the pause and at the end"
    );

    // The 600 ms timer answers inside the same pause.
    let h = paused_turn(TurnDetection::Silence, None).await;
    assert_eq!(h.engines.stt.utterances.load(Ordering::SeqCst), 2);
    assert_eq!(caller_turns(&h)[0].endpoint, Some(EndpointSource::Vad));
}

/// One finished sentence and silence; the endpoint wait of the caller's turn.
async fn finished_sentence(detection: TurnDetection, model: Option<Arc<ScriptedTurnEnd>>) -> u64 {
    let (first, _) = caller_utterances_mulaw();
    let h = answered_turn(config(detection), engines(model), &first).await;
    answer_latency(&h).endpoint_ms
}

#[actix::test]
async fn a_finished_sentence_is_answered_sooner_than_the_timer_would() {
    tokio::time::pause();
    let model = ScriptedTurnEnd::new(|_| 0.97, Duration::from_millis(20));
    let smart_wait = finished_sentence(smart(), Some(model)).await;
    let timer_wait = finished_sentence(TurnDetection::Silence, None).await;
    // The model is asked at 200 ms of silence and answers in 20 ms.
    assert!((200..350).contains(&smart_wait), "smart: {smart_wait} ms");
    assert!((580..700).contains(&timer_wait), "silence: {timer_wait} ms");
}

#[actix::test]
async fn without_a_verdict_in_time_the_timer_decides() {
    tokio::time::pause();
    // A model that takes longer than the silence timer, and one that is not there.
    let slow = ScriptedTurnEnd::new(|_| 0.97, Duration::from_secs(3));
    let waited = finished_sentence(smart(), Some(slow)).await;
    assert!((580..700).contains(&waited), "slow model: {waited} ms");
    let waited = finished_sentence(smart(), None).await;
    assert!((580..700).contains(&waited), "no model: {waited} ms");
}

/// Engines whose recognizer takes 500 ms and starts on a caller's pause, and a session that
/// tells it of pauses from `early_ms` (0: never).
fn early_start(early_ms: u32) -> (SessionConfig, Scripted) {
    let config = SessionConfig::twilio(
        "CA-early",
        AgentProfile {
            turn: TurnPreferences {
                detection: Some(TurnDetection::Silence),
                early_recognition_ms: Some(early_ms),
                ..TurnPreferences::default()
            },
            ..AgentProfile::default()
        },
    );
    let mut engines = engines(None);
    let stt = Arc::get_mut(&mut engines.stt).expect("fresh");
    stt.delay = Duration::from_millis(500);
    stt.starts_early = true;
    // Every recognition, thrown away or not, hears the same words.
    *stt.script.lock().unwrap() = std::iter::repeat_n("the words".to_string(), 20).collect();
    (config, engines)
}

/// The caller's turn `speech` (8 kHz mu-law) and silence after it, answered: the session.
async fn answered_turn(config: SessionConfig, engines: Scripted, speech: &[u8]) -> Harness {
    let mut h = Harness::start(config, engines);
    h.speak(&mulaw_silence(400), 160).await;
    h.speak(speech, 160).await;
    h.speak(&mulaw_silence(2_000), 160).await;
    h.wait_for(
        "an answer",
        Duration::from_secs(10),
        is_event("agent.audio.start"),
    )
    .await;
    h.speak(&mulaw_silence(3_000), 160).await;
    h.wait_for(
        "turn metrics",
        Duration::from_secs(10),
        is_event("turn.metrics"),
    )
    .await;
    h
}

fn recognition_wait_ms(h: &Harness) -> u64 {
    answer_latency(h).stt_ms
}

/// How long the agent's first answer took, stage by stage.
fn answer_latency(h: &Harness) -> switchboard_actors::session::TurnLatency {
    h.turns()
        .into_iter()
        .find(|t| t.speaker == Speaker::Agent)
        .expect("an agent turn")
        .latency
        .expect("latency")
}

#[actix::test]
async fn a_recognition_started_at_the_pause_is_ready_sooner_after_the_end_of_the_turn() {
    tokio::time::pause();
    // "The horizon seems extremely distant.": no pause inside it.
    let (_, sentence) = caller_utterances_mulaw();
    let (config, engines) = early_start(200);
    let h = answered_turn(config, engines, &sentence).await;
    let early_wait = recognition_wait_ms(&h);
    assert_eq!(h.engines.stt.utterances.load(Ordering::SeqCst), 1);
    assert_eq!(caller_turns(&h)[0].text, "the words");

    let (config, engines) = early_start(0);
    let h = answered_turn(config, engines, &sentence).await;
    let late_wait = recognition_wait_ms(&h);
    assert_eq!(h.engines.stt.utterances.load(Ordering::SeqCst), 1);
    // Started 200 ms into the 600 ms pause, the 500 ms recognition has some 100 ms left
    // when the turn ends; started at the end, all of it.
    assert!(early_wait < 200, "started early: {early_wait} ms");
    assert!(late_wait >= 480, "started at the end: {late_wait} ms");
}

/// `speech` (16 kHz) without the quiet before its first and after its last 20 ms of sound.
fn trimmed(speech: &[i16]) -> Vec<i16> {
    let loud = |w: &[i16]| w.iter().any(|s| s.unsigned_abs() > 1_000);
    let windows: Vec<&[i16]> = speech.chunks(320).collect();
    let first = windows.iter().position(|w| loud(w)).expect("speech");
    let last = windows.iter().rposition(|w| loud(w)).expect("speech");
    windows[first..=last].concat()
}

#[actix::test]
async fn speech_after_a_short_pause_is_recognised_with_the_whole_turn() {
    tokio::time::pause();
    let (left, right) = two_speakers_16k();
    let (left, right) = (trimmed(&left), trimmed(&right));
    // Two sentences with 400 ms between them: longer than the pause that starts the
    // recognition, shorter than the one that ends the turn.
    let mut speech = left.clone();
    speech.extend(std::iter::repeat_n(0i16, 16 * 400));
    speech.extend_from_slice(&right);
    let (config, engines) = early_start(200);
    let h = answered_turn(config, engines, &to_mulaw_8k(&speech)).await;
    assert_eq!(caller_turns(&h).len(), 1, "{:?}", caller_turns(&h));
    let clips = h.engines.stt.clips.lock().unwrap().clone();
    let whole = left.len() + right.len();
    assert!(
        clips.len() >= 2,
        "started at the pause and again: {clips:?}"
    );
    assert!(
        clips[0] < whole,
        "the first start had only the first sentence: {clips:?}, whole {whole}"
    );
    assert!(
        *clips.last().unwrap() >= whole,
        "the transcript is of the whole turn: {clips:?}, whole {whole}"
    );
}
