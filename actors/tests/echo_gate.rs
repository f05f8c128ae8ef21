//! On the direct socket a caller's speakers can feed the agent's voice back into the
//! microphone. The echo gate must keep that echo from interrupting the agent; without the gate
//! the same echo does interrupt it (so the test would notice a gate that does nothing). A
//! caller who starts softly over the agent is heard from their first word once their voice
//! does interrupt.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::*;
use switchboard_actors::audio::SampleRate;
use switchboard_actors::session::{AgentProfile, SessionConfig, SessionOutput};

/// A direct call whose agent speaks with a real voice (the stereo fixture's right speaker, so
/// its echo looks like speech to the VAD), on `transport`, once the caller (the left speaker)
/// has asked and the answer has started playing. The second transcript is for a next turn.
async fn answer_playing(config: SessionConfig, transport: FakeTransportConfig) -> Harness {
    let (left, right) = two_speakers_16k();
    let mut engines = Scripted::new(
        &["Tell me something.", "Wait, one more question."],
        vec![
            LlmTurn::Say(
                "The horizon seems extremely distant today, and the weather is fine.".into(),
            ),
            LlmTurn::Say("Of course.".into()),
        ],
    );
    {
        let tts = Arc::get_mut(&mut engines.tts).expect("fresh");
        tts.sample_rate = 16_000;
        tts.voice = Some(right.iter().map(|&s| f32::from(s) / 32_768.0).collect());
    }
    let mut h = Harness::start_with(config, engines, transport);
    h.speak(&to_pcm16le(&left), 640).await;
    h.speak(&pcm_silence_16k(800), 640).await;
    h.wait_for(
        "agent audio",
        Duration::from_secs(5),
        |o| matches!(o, SessionOutput::Event(e) if e.name() == "agent.audio.start"),
    )
    .await;
    h
}

async fn call_with_echo(gate: bool) -> Harness {
    let mut config = SessionConfig::direct("echo", AgentProfile::default(), SampleRate::Hz16000);
    if !gate {
        config.echo_gate = None;
    }
    let echo = FakeTransportConfig {
        no_marks: false,
        echo_db: Some(20.0),
    };
    let mut h = answer_playing(config, echo).await;
    // From here only the echo reaches the microphone.
    h.drain_for(Duration::from_secs(5)).await;
    h
}

#[actix::test]
async fn the_agents_own_echo_does_not_interrupt_it() {
    tokio::time::pause();
    let h = call_with_echo(true).await;
    assert_eq!(h.count(|o| matches!(o, SessionOutput::Clear { .. })), 0);
    let agent = h
        .turns()
        .into_iter()
        .last()
        .expect("the answer was recorded");
    assert!(!agent.interrupted, "{agent:?}");
}

#[actix::test]
async fn without_the_gate_the_echo_interrupts() {
    tokio::time::pause();
    let h = call_with_echo(false).await;
    assert_eq!(h.count(|o| matches!(o, SessionOutput::Clear { .. })), 1);
}

/// `speech` with every sample scaled by `db` decibels.
fn gained(speech: &[i16], db: f32) -> Vec<i16> {
    let gain = 10f32.powf(db / 20.0);
    speech
        .iter()
        .map(|&s| (f32::from(s) * gain).clamp(-32_768.0, 32_767.0) as i16)
        .collect()
}

#[actix::test]
async fn a_caller_who_starts_softly_over_the_agent_is_heard_from_the_first_word() {
    tokio::time::pause();
    let config = SessionConfig::direct("soft", AgentProfile::default(), SampleRate::Hz16000);
    let mut h = answer_playing(config, FakeTransportConfig::default()).await;
    let stt = h.engines.stt.clone();
    let (left, _) = two_speakers_16k();
    // Into the agent's voice: the caller's first 600 ms 10 dB under their recorded level
    // (under the gate, which passes only what is within 12 dB of the agent's loudest), the
    // rest 8 dB over it.
    h.speak(&pcm_silence_16k(400), 640).await;
    let soft_samples = 9_600;
    let mut speech = gained(&left[..soft_samples], -10.0);
    speech.extend(gained(&left[soft_samples..], 8.0));
    h.speak(&to_pcm16le(&speech), 640).await;
    h.speak(&pcm_silence_16k(1_500), 640).await;
    h.drain_for(Duration::from_secs(3)).await;

    assert_eq!(
        h.count(|o| matches!(o, SessionOutput::Clear { .. })),
        1,
        "the caller interrupted"
    );
    // The interruption is timed from the caller's first (soft) word, not from the first frame
    // loud enough for the gate: at least the soft 600 ms and the 200 ms sustain.
    let interrupted = h
        .turns()
        .into_iter()
        .find(|t| t.interrupted)
        .expect("the interrupted answer was recorded");
    let detection = interrupted.barge_in.expect("barged in").detection_ms;
    assert!(detection >= 700, "detection {detection} ms");
    let clips = stt.clips.lock().expect("not poisoned").clone();
    assert_eq!(clips.len(), 2, "{clips:?}");
    // The second turn holds the soft start: all the caller said, not only what passed the gate
    // (which would be at least the soft 9,600 samples shorter).
    assert!(
        clips[1] >= speech.len() - 1_600,
        "the interrupting turn's audio is {} samples for {} of speech",
        clips[1],
        speech.len()
    );
}
