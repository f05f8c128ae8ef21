//! Session costs.
//!
//! - `session_listening/…`: one 20 ms caller frame while the session listens: the inbound
//!   audio path and endpoint tracker alone (`caller_audio_frame`), and a whole `AudioIn`
//!   message through a live `CallSession` actor, mailbox included (`audio_in_message`).
//! - `session_turn/platform_overhead`: with scripted engines that answer instantly, the time
//!   from the last caller frame of a turn (speech then enough silence to end it) to the first
//!   agent audio frame at the transport. Engine time is zero, so this is the platform's own
//!   turn overhead: VAD of the final frames, message hops through the recognizer, the model
//!   and the voice children, sentence splitting, resampling and mu-law encoding of the first
//!   sentence.

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use support::*;
use switchboard_actors::audio::{mulaw, SpeechTracker, VadModel};
use switchboard_actors::engine::STT_SAMPLE_RATE;
use switchboard_actors::session::{
    AgentProfile, AudioFormat, AudioIn, CallerAudio, GetSnapshot, Hangup, SessionConfig,
    SessionOutput,
};

fn config() -> SessionConfig {
    SessionConfig::twilio("bench", AgentProfile::default())
}

fn bench(c: &mut Criterion) {
    let (left, _) = two_speakers_16k();
    let speech = to_mulaw_8k(&left);
    let speech_frames: Vec<&[u8]> = speech.chunks_exact(160).collect();

    let mut g = c.benchmark_group("session_listening");
    let mut audio = CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5, STT_SAMPLE_RATE)
        .expect("builds");
    let mut tracker = SpeechTracker::default();
    let mut i = 0usize;
    g.bench_function("caller_audio_frame_speech", |b| {
        b.iter(|| {
            audio.push(speech_frames[i % speech_frames.len()]);
            i += 1;
            let f = audio.next_frame().expect("decodes").expect("a frame");
            black_box(tracker.update(f.start_ms, 20, f.vad.voice()));
        })
    });
    // A frame of speech while it is captured for the recognizer: at 16 kHz (the embedded and
    // batch recognizers) and at the line's own 8 kHz (a live vendor).
    for (name, recognizer_rate) in [
        ("caller_audio_frame_capturing_16k", STT_SAMPLE_RATE),
        ("caller_audio_frame_capturing_8k", 8_000),
    ] {
        let mut audio = CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5, recognizer_rate)
            .expect("builds");
        audio.start_capture(0);
        let mut i = 0usize;
        g.bench_function(name, |b| {
            b.iter(|| {
                audio.push(speech_frames[i % speech_frames.len()]);
                i += 1;
                black_box(audio.next_frame().expect("decodes").expect("a frame"));
                // Handed over every 100 ms, as the session does.
                if i.is_multiple_of(5) {
                    black_box(audio.take_capture(100));
                }
            })
        });
    }
    let silence = [mulaw::SILENCE; 160];
    g.bench_function("caller_audio_frame_silence", |b| {
        b.iter(|| {
            audio.push(&silence);
            let f = audio.next_frame().expect("decodes").expect("a frame");
            black_box(tracker.update(f.start_ms, 20, f.vad.voice()));
        })
    });
    g.bench_function("audio_in_message_silence", |b| {
        b.iter_custom(|iters| {
            actix::System::new().block_on(async move {
                let h = Harness::start(config(), Scripted::instant(&[], vec![]));
                let frame = Bytes::from_static(&[mulaw::SILENCE; 160]);
                let start = Instant::now();
                for _ in 0..iters {
                    h.session
                        .addr()
                        .send(AudioIn(frame.clone()))
                        .await
                        .expect("session alive");
                }
                let took = start.elapsed();
                h.session.addr().do_send(Hangup);
                took
            })
        })
    });
    g.finish();

    let mut g = c.benchmark_group("session_turn");
    g.sample_size(20);
    // Speech and most of the endpoint silence first; the last frames end the turn.
    let mut turn_audio = speech.clone();
    turn_audio.extend(mulaw_silence(560));
    let turn_end = mulaw_silence(140);
    for (name, voice_hz) in [
        ("platform_overhead_voice_22k", 22_050),
        ("platform_overhead_voice_8k", 8_000),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let turn_audio = turn_audio.clone();
                let turn_end = turn_end.clone();
                actix::System::new().block_on(async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut engines =
                            Scripted::instant(&["Hello."], vec![LlmTurn::Say("Hi there.".into())]);
                        std::sync::Arc::get_mut(&mut engines.tts)
                            .expect("fresh")
                            .sample_rate = voice_hz;
                        let mut h = Harness::start(config(), engines);
                        for chunk in turn_audio.chunks(160) {
                            h.session
                                .addr()
                                .do_send(AudioIn(Bytes::copy_from_slice(chunk)));
                        }
                        // Every frame has been handled once the snapshot answers.
                        h.session.addr().send(GetSnapshot).await.expect("alive");
                        let start = Instant::now();
                        for chunk in turn_end.chunks(160) {
                            h.session
                                .addr()
                                .do_send(AudioIn(Bytes::copy_from_slice(chunk)));
                        }
                        loop {
                            let out = h.outputs.recv().await.expect("transport open");
                            if matches!(out.output, SessionOutput::Audio(_)) {
                                break;
                            }
                        }
                        total += start.elapsed();
                        h.session.addr().do_send(Hangup);
                    }
                    total
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
