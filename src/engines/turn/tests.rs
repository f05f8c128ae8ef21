//! The end-of-turn model on recorded speech (release builds; `models/` must hold it), held
//! against the reference implementation: pipecat 1.14's `LocalSmartTurnAnalyzerV3` (its
//! numpy features and ONNX Runtime 1.22) gave the probabilities written here for the same
//! cuts of the same fixtures.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use switchboard_actors::engine::{TurnAudio, TurnEndModel};

use super::{normalised, window_16k, SmartTurn, WINDOW_SAMPLES};
use crate::engines::pool::WorkerPool;
use crate::engines::whisper::audio::decode_file;
use crate::engines::whisper::FIXTURES_DIR;

fn model() -> &'static SmartTurn {
    static MODEL: OnceLock<SmartTurn> = OnceLock::new();
    MODEL.get_or_init(|| {
        let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models");
        SmartTurn::new(&models, WorkerPool::new(1, 8))
    })
}

fn fixture(name: &str, channel: Option<usize>) -> Vec<f32> {
    let audio = decode_file(&Path::new(FIXTURES_DIR).join(name)).expect("fixture decodes");
    match channel {
        Some(c) => audio.channel_16k(c).expect("channel"),
        None => audio.mono_16k(),
    }
}

/// The first `ms` of `audio` as a session captures it: 100 ms chunks of 16-bit samples.
fn turn_until(audio: &[f32], ms: usize, rate: u32) -> TurnAudio {
    let samples: Vec<f32> = audio[..(ms * 16).min(audio.len())].to_vec();
    let samples = if rate == 16_000 {
        samples
    } else {
        crate::engines::whisper::audio::resample(&samples, 16_000, rate)
    };
    let pcm: Vec<i16> = samples
        .iter()
        .map(|s| (s * 32_767.0).clamp(-32_768.0, 32_767.0) as i16)
        .collect();
    TurnAudio {
        chunks: pcm
            .chunks(rate as usize / 10)
            .map(Arc::<[i16]>::from)
            .collect(),
        rate,
        answer_within: std::time::Duration::from_secs(60),
    }
}

/// Cuts of jfk.flac 200 ms into its pauses, and the reference's probability at each.
const JFK_CUTS: [(usize, f32, &str); 5] = [
    (2_320, 0.786, "And so my fellow Americans, |"),
    (3_900, 0.006, "… ask not |"),
    (4_500, 0.028, "… what your country can do for you, |"),
    (7_760, 0.040, "… ask what you can do |"),
    (10_600, 0.959, "… for your country. |"),
];

#[test]
fn probabilities_match_the_reference_on_recorded_speech() {
    let jfk = fixture("jfk.flac", None);
    let turns: Vec<TurnAudio> = JFK_CUTS
        .iter()
        .map(|(ms, _, _)| turn_until(&jfk, *ms, 16_000))
        .collect();
    let got = model().judge_now(&turns).unwrap();
    for ((ms, want, text), p) in JFK_CUTS.iter().zip(&got) {
        // The fixture is resampled from 44.1 kHz by another resampler than the reference's.
        assert!(
            (p - want).abs() < 0.05,
            "{text} at {ms} ms: {p}, reference {want}"
        );
    }
    // Two speakers, one per channel of a 16 kHz recording, each saying one whole sentence.
    let left = fixture("stereo_diarization.wav", Some(0));
    let right = fixture("stereo_diarization.wav", Some(1));
    let got = model()
        .judge_now(&[
            turn_until(&left, 5_000, 16_000),
            turn_until(&right, 2_660, 16_000),
        ])
        .unwrap();
    assert!((got[0] - 0.978).abs() < 0.02, "left channel: {}", got[0]);
    assert!((got[1] - 0.976).abs() < 0.02, "right channel: {}", got[1]);
}

#[test]
fn a_batch_answers_each_turn_as_it_would_alone() {
    let jfk = fixture("jfk.flac", None);
    let turns: Vec<TurnAudio> = [4_500, 10_600, 2_320]
        .iter()
        .map(|ms| turn_until(&jfk, *ms, 16_000))
        .collect();
    let together = model().judge_now(&turns).unwrap();
    for (turn, p) in turns.iter().zip(&together) {
        let alone = model().judge_now(std::slice::from_ref(turn)).unwrap()[0];
        assert!((alone - p).abs() < 1e-4, "alone {alone}, in a batch {p}");
    }
}

#[test]
fn a_phone_line_at_8_khz_is_judged_like_wideband_speech() {
    let jfk = fixture("jfk.flac", None);
    let got = model()
        .judge_now(&[
            turn_until(&jfk, 4_500, 8_000),
            turn_until(&jfk, 10_600, 8_000),
        ])
        .unwrap();
    assert!(
        got[0] < 0.2,
        "mid-sentence pause on a phone line: {}",
        got[0]
    );
    assert!(
        got[1] > 0.8,
        "finished sentence on a phone line: {}",
        got[1]
    );
}

#[test]
fn the_window_is_the_turns_last_eight_seconds_with_silence_in_front() {
    let short = TurnAudio {
        chunks: vec![Arc::from(vec![16_384i16; 1_600])],
        rate: 16_000,
        answer_within: std::time::Duration::from_secs(60),
    };
    let window = window_16k(&short);
    assert_eq!(window.len(), WINDOW_SAMPLES);
    assert!(window[..WINDOW_SAMPLES - 1_600].iter().all(|&v| v == 0.0));
    assert!(window[WINDOW_SAMPLES - 1_600..].iter().all(|&v| v == 0.5));
    // Ten seconds in 100 ms chunks, each louder than the last: the window ends with the
    // turn's last sample.
    let long = TurnAudio {
        chunks: (0..100i16)
            .map(|i| Arc::from(vec![i * 300; 1_600]))
            .collect(),
        rate: 16_000,
        answer_within: std::time::Duration::from_secs(60),
    };
    let window = window_16k(&long);
    assert_eq!(window.len(), WINDOW_SAMPLES);
    assert_eq!(window[0], 6_000.0 / 32_768.0);
    assert_eq!(window[WINDOW_SAMPLES - 1], 29_700.0 / 32_768.0);
    let normal = normalised(window);
    let mean = normal.iter().map(|&v| f64::from(v)).sum::<f64>() / normal.len() as f64;
    let var = normal.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / normal.len() as f64;
    assert!(
        mean.abs() < 1e-4 && (var - 1.0).abs() < 1e-3,
        "{mean} {var}"
    );
}

#[tokio::test]
async fn requests_from_many_sessions_are_answered_each_with_its_own() {
    let jfk = fixture("jfk.flac", None);
    let asks: Vec<_> = (0..6)
        .map(|i| {
            let ms = if i % 2 == 0 { 4_500 } else { 10_600 };
            model().complete_probability(turn_until(&jfk, ms, 16_000))
        })
        .collect();
    for (i, ask) in asks.into_iter().enumerate() {
        let p = ask.await.unwrap();
        if i % 2 == 0 {
            assert!(p < 0.1, "request {i}: {p}");
        } else {
            assert!(p > 0.9, "request {i}: {p}");
        }
    }
}

#[test]
fn a_missing_model_is_reported_not_guessed() {
    let turn = SmartTurn::new(Path::new("/nonexistent"), WorkerPool::new(1, 2));
    assert_eq!(turn.status().as_str(), "missing");
    let error = turn
        .judge_now(&[turn_until(&[0.0; 16_000], 1_000, 16_000)])
        .unwrap_err();
    assert!(error.message.contains("scripts/fetch-models"), "{error}");
}

#[tokio::test]
async fn a_question_whose_answer_would_come_too_late_is_skipped() {
    let jfk = fixture("jfk.flac", None);
    let mut turn = turn_until(&jfk, 4_500, 16_000);
    turn.answer_within = std::time::Duration::ZERO;
    let error = model().complete_probability(turn).await.unwrap_err();
    assert_eq!(
        error.kind,
        switchboard_actors::engine::EngineErrorKind::Overloaded
    );
    // The next question in time is answered.
    let p = model()
        .complete_probability(turn_until(&jfk, 10_600, 16_000))
        .await
        .unwrap();
    assert!(p > 0.9, "{p}");
}
