//! On the direct socket a caller's speakers can feed the agent's voice back into the
//! microphone. The echo gate must keep that echo from interrupting the agent; without the gate
//! the same echo does interrupt it (so the test would notice a gate that does nothing).

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::*;
use switchboard_actors::audio::SampleRate;
use switchboard_actors::session::{AgentProfile, SessionConfig, SessionOutput};

async fn call_with_echo(gate: bool) -> Harness {
    let mut config = SessionConfig::direct("echo", AgentProfile::default(), SampleRate::Hz16000);
    if !gate {
        config.echo_gate = None;
    }
    let (left, right) = two_speakers_16k();
    let mut engines = Scripted::new(
        &["Tell me something."],
        vec![LlmTurn::Say(
            "The horizon seems extremely distant today, and the weather is fine.".into(),
        )],
    );
    {
        let tts = Arc::get_mut(&mut engines.tts).expect("fresh");
        tts.sample_rate = 16_000;
        // The agent speaks with a real voice, so its echo looks like speech to the VAD.
        tts.voice = Some(right.iter().map(|&s| f32::from(s) / 32_768.0).collect());
    }
    let mut h = Harness::start_with(
        config,
        engines,
        FakeTransportConfig {
            no_marks: false,
            echo_db: Some(20.0),
        },
    );
    h.speak(&to_pcm16le(&left), 640).await;
    h.speak(&pcm_silence_16k(800), 640).await;
    h.wait_for(
        "agent audio",
        Duration::from_secs(5),
        |o| matches!(o, SessionOutput::Event(e) if e.name() == "agent.audio.start"),
    )
    .await;
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
