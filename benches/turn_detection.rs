//! End-of-turn evaluation on recorded speech: when would a session decide that the caller's
//! turn is over, with the silence timer alone and with smart detection (the real Smart Turn
//! model), and how often does each answer inside a pause in the middle of a turn?
//!
//! ```text
//! cargo bench --bench turn_detection
//! ```
//!
//! The recordings, each a caller's side of a call with its turn ends known in advance:
//! - the shared fixtures (jfk.flac; each channel of stereo_diarization.wav): one turn each,
//!   ending where the recording's speech ends;
//! - a real two-person conversation (pyannote.audio's sample, fetched by scripts/fetch-models
//!   into `models/turn-eval/`) with its reference speaker turns: each speaker in turn is the
//!   caller (the other one's speech masked out, as a call's separate channels would be), and
//!   the end of each of their turns is a turn end.
//!
//! Every recording goes through the session's own audio path, frame by frame: the phone
//! line (8 kHz mu-law, the GMM VAD) and the wideband socket (16 kHz PCM, the neural VAD),
//! with the session's own [`SpeechTracker`] and [`EndOfTurn`] deciding. A detected end is
//! a turn end when it falls within 400 ms of one (its wait: from the caller's last speech
//! frame to the decision, the model's inference time included), and an answer inside a
//! mid-turn pause otherwise.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use switchboard::engines::pool::WorkerPool;
use switchboard::engines::turn::SmartTurn;
use switchboard::engines::whisper::audio::decode_file;
use switchboard_actors::audio::vad::DEFAULT_THRESHOLD;
use switchboard_actors::audio::{
    mulaw, FrameDuration, SampleRate, SpeechEvent, SpeechTracker, SpeechTrackerConfig,
    StreamResampler, VadModel,
};
use switchboard_actors::engine::TurnAudio;
use switchboard_actors::session::end_of_turn::{EndOfTurn, Verdict};
use switchboard_actors::session::{
    AudioFormat, CallerAudio, SmartTurn as SmartSettings, TurnDetection, TurnTiming,
};

/// A caller's side of a call with its known turn ends.
struct Recording {
    name: String,
    audio_16k: Vec<f32>,
    turn_ends_ms: Vec<u64>,
}

#[derive(Clone, Copy, PartialEq)]
enum Line {
    Phone,
    Wideband,
}

/// What one policy did on one recording.
#[derive(Default)]
struct Outcome {
    waits_ms: Vec<u64>,
    cut_mid_turn: usize,
    missed: usize,
    judgements: usize,
    /// (stream ms of the pause's start, probability) of every judgement.
    probabilities: Vec<(u64, f32)>,
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let models = std::env::var_os("SWITCHBOARD_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("models"));
    let model = SmartTurn::new(&models, WorkerPool::new(1, 8));
    model
        .preload()
        .expect("the end-of-turn model loads (scripts/fetch-models)");
    let recordings = recordings(root, &models);
    let inference_ms = inference_cost(&model, &recordings[0]);
    let settings = SmartSettings::default();
    println!(
        "smart: pause {} ms, threshold {}, incomplete wait {} ms; one judgement {:.1} ms",
        settings.pause_ms,
        settings.complete_threshold,
        settings.incomplete_silence_ms,
        inference_ms
    );
    println!(
        "\n{:<9} {:<8} {:>9} {:>9} {:>9} {:>11} {:>7} {:>10}",
        "path",
        "policy",
        "turn ends",
        "wait p50",
        "wait max",
        "cut mid-turn",
        "missed",
        "judgements"
    );
    for line in [Line::Phone, Line::Wideband] {
        for (label, detection) in [
            ("silence", TurnDetection::Silence),
            ("smart", TurnDetection::Smart(settings)),
        ] {
            let mut total = Outcome::default();
            let mut ends = 0;
            for recording in &recordings {
                let outcome = simulate(recording, line, detection, &model, inference_ms);
                ends += recording.turn_ends_ms.len();
                if std::env::var_os("TURN_EVAL_DETAIL").is_some() {
                    println!(
                        "  {} {label}: waits {:?} cut {} missed {} p {:?}",
                        recording.name,
                        outcome.waits_ms,
                        outcome.cut_mid_turn,
                        outcome.missed,
                        outcome.probabilities
                    );
                }
                total.waits_ms.extend(outcome.waits_ms);
                total.cut_mid_turn += outcome.cut_mid_turn;
                total.missed += outcome.missed;
                total.judgements += outcome.judgements;
            }
            total.waits_ms.sort_unstable();
            let p50 = total
                .waits_ms
                .get(total.waits_ms.len() / 2)
                .copied()
                .unwrap_or(0);
            let max = total.waits_ms.last().copied().unwrap_or(0);
            println!(
                "{:<9} {:<8} {:>9} {:>6} ms {:>6} ms {:>11} {:>7} {:>10}",
                if line == Line::Phone {
                    "phone"
                } else {
                    "wideband"
                },
                label,
                ends,
                p50,
                max,
                total.cut_mid_turn,
                total.missed,
                total.judgements
            );
        }
    }
}

/// The mean time of one judgement alone, and per turn in a batch of 16.
fn inference_cost(model: &SmartTurn, recording: &Recording) -> f64 {
    let turn = turn_audio(&recording.audio_16k);
    model
        .judge_now(std::slice::from_ref(&turn))
        .expect("judges");
    let started = Instant::now();
    for _ in 0..10 {
        model
            .judge_now(std::slice::from_ref(&turn))
            .expect("judges");
    }
    let alone = started.elapsed().as_secs_f64() * 100.0;
    let batch = vec![turn; 16];
    let started = Instant::now();
    for _ in 0..3 {
        model.judge_now(&batch).expect("judges");
    }
    let per_turn = started.elapsed().as_secs_f64() * 1_000.0 / 48.0;
    println!("inference: {alone:.1} ms alone, {per_turn:.1} ms per turn in a batch of 16");
    alone
}

fn turn_audio(audio_16k: &[f32]) -> TurnAudio {
    let pcm: Vec<i16> = audio_16k
        .iter()
        .map(|s| (s * 32_767.0).clamp(-32_768.0, 32_767.0) as i16)
        .collect();
    TurnAudio {
        chunks: pcm.chunks(1_600).map(Arc::<[i16]>::from).collect(),
        rate: 16_000,
        answer_within: std::time::Duration::from_secs(60),
    }
}

fn recordings(root: &Path, models: &Path) -> Vec<Recording> {
    let fixtures = root.join("../shared/fixtures/audio");
    let mut out = Vec::new();
    let whole = |name: &str, audio: Vec<f32>| Recording {
        name: name.to_owned(),
        turn_ends_ms: vec![last_speech_ms(&audio)],
        audio_16k: audio,
    };
    let jfk = decode_file(&fixtures.join("jfk.flac")).expect("jfk.flac");
    out.push(whole("jfk", jfk.mono_16k()));
    let stereo = decode_file(&fixtures.join("stereo_diarization.wav")).expect("stereo");
    out.push(whole("stereo-left", stereo.channel_16k(0).expect("left")));
    out.push(whole("stereo-right", stereo.channel_16k(1).expect("right")));
    let conversation = models.join("turn-eval/conversation.wav");
    let rttm = std::fs::read_to_string(models.join("turn-eval/conversation.rttm"))
        .expect("models/turn-eval (scripts/fetch-models)");
    let mixed = decode_file(&conversation).expect("conversation").mono_16k();
    let mut segments: Vec<(String, f64, f64)> = rttm
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some((
                f.get(7)?.to_string(),
                f.get(3)?.parse().ok()?,
                f.get(4)?.parse().ok()?,
            ))
        })
        .collect();
    segments.sort_by(|a, b| a.1.total_cmp(&b.1));
    let length_s = mixed.len() as f64 / 16_000.0;
    let mut speakers: Vec<String> = segments.iter().map(|s| s.0.clone()).collect();
    speakers.dedup();
    speakers.sort();
    speakers.dedup();
    for speaker in speakers {
        let mut audio = vec![0f32; mixed.len()];
        let mut ends = Vec::new();
        for (_, start, duration) in segments.iter().filter(|s| s.0 == speaker) {
            let (a, b) = (
                (start * 16_000.0) as usize,
                ((start + duration) * 16_000.0) as usize,
            );
            audio[a..b.min(mixed.len())].copy_from_slice(&mixed[a..b.min(mixed.len())]);
            // A turn cut by the end of the recording has no known end.
            if start + duration < length_s - 0.5 {
                ends.push(((start + duration) * 1_000.0) as u64);
            }
        }
        out.push(Recording {
            name: format!("conversation-{speaker}"),
            audio_16k: audio,
            turn_ends_ms: ends,
        });
    }
    out
}

/// Where the recording's last sound above -40 dBFS ends, in ms (20 ms frames).
fn last_speech_ms(audio: &[f32]) -> u64 {
    let loud = audio.chunks(320).rposition(|frame| {
        let rms = (frame.iter().map(|s| s * s).sum::<f32>() / frame.len() as f32).sqrt();
        rms > 0.01
    });
    loud.map_or(0, |i| (i as u64 + 1) * 20)
}

/// The caller's audio as the transport's payloads, with the matching audio pipeline.
fn caller_side(recording: &Recording, line: Line) -> (CallerAudio, Vec<Vec<u8>>) {
    let pcm: Vec<i16> = recording
        .audio_16k
        .iter()
        .map(|s| (s * 32_767.0).clamp(-32_768.0, 32_767.0) as i16)
        .collect();
    match line {
        Line::Phone => {
            let mut down =
                StreamResampler::new(SampleRate::Hz16000, SampleRate::Hz8000, FrameDuration::Ms20)
                    .expect("16k to 8k");
            let mut narrow = [0i16; 160];
            let payloads = pcm
                .chunks_exact(320)
                .map(|chunk| {
                    down.process_i16(chunk, &mut narrow).expect("frame");
                    let mut frame = vec![0u8; 160];
                    mulaw::encode_into(&narrow, &mut frame).expect("frame");
                    frame
                })
                .collect();
            let audio = CallerAudio::new(
                AudioFormat::Mulaw8k,
                VadModel::Gmm,
                DEFAULT_THRESHOLD,
                8_000,
            )
            .expect("phone pipeline");
            (audio, payloads)
        }
        Line::Wideband => {
            let payloads = pcm
                .chunks_exact(320)
                .map(|chunk| chunk.iter().flat_map(|s| s.to_le_bytes()).collect())
                .collect();
            let format = AudioFormat::Pcm16 {
                rate: SampleRate::Hz16000,
            };
            let audio = CallerAudio::new(format, VadModel::Neural, DEFAULT_THRESHOLD, 16_000)
                .expect("wideband pipeline");
            (audio, payloads)
        }
    }
}

/// Runs one recording through the session's audio path and turn decisions.
fn simulate(
    recording: &Recording,
    line: Line,
    detection: TurnDetection,
    model: &SmartTurn,
    inference_ms: f64,
) -> Outcome {
    let timing = TurnTiming::default();
    let (mut audio, payloads) = caller_side(recording, line);
    let mut tracker = SpeechTracker::new(SpeechTrackerConfig {
        onset_ms: timing.speech_onset_ms,
        end_silence_ms: timing.endpoint_silence_ms,
    });
    let mut end_of_turn = EndOfTurn::new(
        detection,
        Some(Arc::new(model.clone())),
        timing.endpoint_silence_ms,
        audio.capture_rate(),
    );
    // (the speech's end, when the end was decided) of every turn end the session took.
    let mut ends: Vec<(u64, f64)> = Vec::new();
    let mut outcome = Outcome::default();
    let mut speaking = false;
    // Two seconds of silence after the recording, so its last turn can end.
    let silence = payloads[0].iter().map(|_| {
        if line == Line::Phone {
            mulaw::SILENCE
        } else {
            0
        }
    });
    let silence: Vec<u8> = silence.collect();
    for payload in payloads.iter().chain(std::iter::repeat_n(&silence, 100)) {
        audio.push(payload);
        while let Ok(Some(frame)) = audio.next_frame() {
            let now_ms = frame.start_ms + 20;
            let event = tracker.update(frame.start_ms, 20, frame.vad.voice());
            if audio.is_capturing() {
                if let Some(chunk) = audio.take_capture(100) {
                    end_of_turn.heard(&chunk);
                }
            }
            match event {
                Some(SpeechEvent::SpeechStarted { at_ms }) => {
                    speaking = true;
                    end_of_turn.reset(&mut tracker);
                    audio.start_capture(at_ms.saturating_sub(u64::from(timing.stt_preroll_ms)));
                }
                Some(SpeechEvent::SpeechEnded { at_ms }) => {
                    speaking = false;
                    ends.push((at_ms, now_ms as f64));
                    audio.stop_capture();
                    end_of_turn.reset(&mut tracker);
                }
                None if speaking => {
                    if !end_of_turn.should_ask(&mut tracker, now_ms) {
                        continue;
                    }
                    if let Some(chunk) = audio.take_capture(0) {
                        end_of_turn.heard(&chunk);
                    }
                    let question = end_of_turn.ask().expect("smart");
                    let p = model.judge_now(&[question.audio]).expect("judges")[0];
                    outcome.judgements += 1;
                    let pause_start = now_ms - tracker.pause_ms(now_ms).unwrap_or(0);
                    outcome
                        .probabilities
                        .push((pause_start, (p * 100.0).round() / 100.0));
                    if let Verdict::EndNow(SpeechEvent::SpeechEnded { at_ms }) =
                        end_of_turn.verdict(question.pause, Ok(p), &mut tracker)
                    {
                        speaking = false;
                        ends.push((at_ms, now_ms as f64 + inference_ms));
                        audio.stop_capture();
                        end_of_turn.reset(&mut tracker);
                    }
                }
                None => {}
            }
        }
    }
    let mut matched = vec![false; recording.turn_ends_ms.len()];
    for (speech_end, decided) in ends {
        let near = recording
            .turn_ends_ms
            .iter()
            .enumerate()
            .find(|(i, &e)| !matched[*i] && speech_end.abs_diff(e) <= 400);
        match near {
            Some((i, _)) => {
                matched[i] = true;
                outcome
                    .waits_ms
                    .push((decided - speech_end as f64).round() as u64);
            }
            None => outcome.cut_mid_turn += 1,
        }
    }
    outcome.missed = matched.iter().filter(|m| !**m).count();
    outcome
}
