//! Speech-to-text on the embedded Whisper engine, models loaded: fast mode (tiny.en, greedy)
//! on a 3.5 s utterance and on the 11 s JFK clip, and accurate mode (base, beam 5, language
//! detected) on the JFK clip; then the same 3.5 s utterance as a live caller turn (the encoder
//! reads the turn and 10 s, not a padded 30 s window), in both modes, against the full window
//! in accurate mode, and greedy on the multilingual model. Each iteration is one whole transcription, mel to text.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use switchboard::engines::pool::WorkerPool;
use switchboard::engines::whisper::{audio::decode_file, WhisperEngine};
use switchboard_actors::engine::{SttMode, TranscribeOptions};

fn stt(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let jfk = decode_file(&root.join("../shared/fixtures/audio/jfk.flac"))
        .expect("jfk.flac in shared/fixtures/audio")
        .mono_16k();
    let short = jfk[..16_000 * 7 / 2].to_vec();
    let engine = WhisperEngine::new(root.join("models"), WorkerPool::new(1, 1));
    engine
        .preload()
        .expect("Whisper models installed (scripts/fetch-models)");
    let fast = TranscribeOptions {
        language: Some("en".into()),
        mode: SttMode::Fast,
        ..Default::default()
    };
    let accurate = TranscribeOptions {
        language: None,
        mode: SttMode::Accurate,
        ..Default::default()
    };
    let live = |options: &TranscribeOptions| TranscribeOptions {
        live_turn: true,
        ..options.clone()
    };
    let (live_fast, live_accurate) = (live(&fast), live(&accurate));
    // Greedy on the multilingual model, the language detected: fast mode without a language.
    let live_greedy = live(&TranscribeOptions {
        language: None,
        ..fast.clone()
    });
    let cases: [(&str, &[f32], &TranscribeOptions); 7] = [
        ("fast_3.5s", &short, &fast),
        ("fast_jfk_11s", &jfk, &fast),
        ("accurate_jfk_11s", &jfk, &accurate),
        ("live_turn_fast_3.5s", &short, &live_fast),
        ("accurate_3.5s", &short, &accurate),
        ("live_turn_accurate_3.5s", &short, &live_accurate),
        ("live_turn_base_greedy_3.5s", &short, &live_greedy),
    ];
    let mut group = c.benchmark_group("stt");
    group.sample_size(10);
    for (name, audio, options) in cases {
        group.bench_function(name, |b| {
            b.iter(|| {
                engine
                    .transcribe_blocking(audio, options)
                    .expect("transcribes")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, stt);
criterion_main!(benches);
