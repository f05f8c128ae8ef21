//! Speech synthesis latency and throughput: time to the first audio of a ten-word sentence
//! with the neural voice, the real-time factor of a paragraph on one thread (and on two, for
//! comparison), and one sentence with an eSpeak NG voice.
//!
//! Criterion reports wall-clock time, which other processes on a busy machine inflate. The
//! summary printed at the end also gives each figure in CPU time of the synthesizing thread
//! (Linux `/proc/thread-self/schedstat`): what a dedicated core would take.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use switchboard::engines::pool::WorkerPool;
use switchboard::engines::tts::engine::repository_models_dir;
use switchboard::engines::tts::{TtsEngine, TtsOptions};
use switchboard_actors::engine::SpeechRequest;

const TEN_WORDS: &str = "The quick brown fox jumps over the lazy sleeping dog.";
const PARAGRAPH: &str = "Thank you for calling the city library. Our opening hours are nine in \
    the morning to six in the evening, Monday to Saturday. You can renew your loans online, by \
    phone, or at any branch. If you have a question about a reservation, please stay on the \
    line and a librarian will be with you shortly. We appreciate your patience.";

fn request(voice: &str, text: &str) -> SpeechRequest {
    SpeechRequest::new(text, voice)
}

fn engine(intra_threads: usize) -> TtsEngine {
    let engine = TtsEngine::with_options(
        repository_models_dir(),
        WorkerPool::new(1, 4),
        TtsOptions {
            intra_threads,
            ..TtsOptions::default()
        },
    );
    engine
        .preload()
        .expect("the joe voice and ONNX Runtime; run scripts/fetch-models");
    engine
}

/// CPU time of the calling thread so far, in seconds (`None` off Linux).
fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(nanos / 1e9)
}

/// Median over `runs` syntheses on this thread: (seconds of audio, wall seconds, CPU seconds
/// of this thread, which does all the work with one intra-op thread).
fn measure(engine: &TtsEngine, voice: &str, text: &str, runs: usize) -> (f64, f64, f64) {
    let mut results: Vec<(f64, f64, f64)> = (0..runs)
        .map(|_| {
            let cpu = thread_cpu_seconds().unwrap_or(0.0);
            let started = Instant::now();
            let (_, chunks) = engine
                .synthesize_blocking(request(voice, text))
                .expect("synthesis");
            let wall = started.elapsed().as_secs_f64();
            let cpu = thread_cpu_seconds().unwrap_or(0.0) - cpu;
            let audio: f64 = chunks
                .iter()
                .map(|c| c.samples.len() as f64 / f64::from(c.sample_rate))
                .sum();
            (audio, wall, cpu)
        })
        .collect();
    results.sort_by(|a, b| a.2.total_cmp(&b.2));
    results[results.len() / 2]
}

fn tts(c: &mut Criterion) {
    let one_thread = engine(1);
    let mut group = c.benchmark_group("tts");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));

    group.bench_function("neural_first_audio_10_words", |b| {
        b.iter(|| {
            let mut synthesis = one_thread
                .start(request("default", TEN_WORDS))
                .expect("start");
            let chunk = synthesis
                .stream
                .blocking_recv()
                .expect("a chunk")
                .expect("audio");
            assert!(!chunk.samples.is_empty());
        })
    });

    group.bench_function("neural_paragraph_1_thread", |b| {
        b.iter(|| {
            one_thread
                .synthesize_blocking(request("default", PARAGRAPH))
                .expect("synthesis")
        })
    });

    group.bench_function("espeak_sentence", |b| {
        b.iter(|| {
            one_thread
                .synthesize_blocking(request("espeak-en-us", TEN_WORDS))
                .expect("synthesis")
        })
    });
    group.finish();

    let (audio, wall, cpu) = measure(&one_thread, "default", TEN_WORDS, 9);
    println!(
        "tts/neural 10 words: {audio:.2} s of audio in {:.0} ms wall, {:.0} ms thread CPU",
        wall * 1e3,
        cpu * 1e3
    );
    let (audio, wall, cpu) = measure(&one_thread, "default", PARAGRAPH, 5);
    println!(
        "tts/neural paragraph, 1 intra-op thread: {audio:.1} s of audio; real-time factor \
         {:.1}x wall, {:.1}x thread CPU",
        audio / wall,
        audio / cpu
    );
    let two_threads = engine(2);
    let (audio, wall, _) = measure(&two_threads, "default", PARAGRAPH, 5);
    println!(
        "tts/neural paragraph, 2 intra-op threads: real-time factor {:.1}x wall",
        audio / wall
    );
    let (audio, wall, cpu) = measure(&one_thread, "espeak-en-us", TEN_WORDS, 9);
    println!(
        "tts/espeak 10 words: {audio:.2} s of audio in {:.1} ms wall, {:.1} ms thread CPU",
        wall * 1e3,
        cpu * 1e3
    );
}

criterion_group!(benches, tts);
criterion_main!(benches);
