//! Per-frame cost of the inbound telephony path: one 20 ms frame through each stage (each VAD
//! model at the rate it reads) and through the whole [`InboundAudio`] pipeline. Frames are real speech from the shared
//! fixtures, so the VAD and resampler see realistic input; a second pipeline case feeds a
//! quiet line, where the VAD's energy gate skips inference.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use switchboard_actors::audio::{
    mulaw, FrameDuration, InboundAudio, SampleRate, StreamResampler, VadConfig, VadModel,
    VoiceActivityDetector, TELEPHONY_FRAME_BYTES,
};

/// Left channel of the two-speaker fixture as 8 kHz mu-law frames and 16 kHz PCM frames.
fn speech_frames() -> (Vec<[u8; 160]>, Vec<[i16; 320]>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/audio/stereo_diarization.wav");
    let mut reader =
        hound::WavReader::open(path).expect("fixture present in shared/fixtures/audio");
    let samples: Vec<i16> = reader
        .samples::<i16>()
        .collect::<Result<_, _>>()
        .expect("fixture decodes");
    let left: Vec<i16> = samples.iter().step_by(2).copied().collect();
    let mut down =
        StreamResampler::new(SampleRate::Hz16000, SampleRate::Hz8000, FrameDuration::Ms20)
            .expect("16k->8k is supported");
    let mut narrow = [0i16; 160];
    let mut mulaw_frames = Vec::new();
    let mut wide_frames = Vec::new();
    for chunk in left.chunks_exact(320) {
        let mut wide = [0i16; 320];
        wide.copy_from_slice(chunk);
        wide_frames.push(wide);
        down.process_i16(chunk, &mut narrow).expect("frame sized");
        let mut frame = [0u8; TELEPHONY_FRAME_BYTES];
        mulaw::encode_into(&narrow, &mut frame).expect("frame sized");
        mulaw_frames.push(frame);
    }
    (mulaw_frames, wide_frames)
}

fn bench(c: &mut Criterion) {
    let (mulaw_frames, wide_frames) = speech_frames();
    let mut pcm8k = [0i16; 160];
    let mut pcm16k = [0i16; 320];
    let mut g = c.benchmark_group("audio_frame_20ms");

    let mut i = 0;
    g.bench_function("mulaw_decode_160", |b| {
        b.iter(|| {
            i = (i + 1) % mulaw_frames.len();
            mulaw::decode_into(black_box(&mulaw_frames[i]), &mut pcm8k).expect("frame sized");
            black_box(&pcm8k);
        })
    });

    let narrow: Vec<[i16; 160]> = mulaw_frames
        .iter()
        .map(|f| {
            let mut out = [0i16; 160];
            mulaw::decode_into(f, &mut out).expect("frame sized");
            out
        })
        .collect();
    let mut up = StreamResampler::new(SampleRate::Hz8000, SampleRate::Hz16000, FrameDuration::Ms20)
        .expect("8k->16k is supported");
    let mut i = 0;
    g.bench_function("resample_8k_to_16k", |b| {
        b.iter(|| {
            i = (i + 1) % narrow.len();
            up.process_i16(black_box(&narrow[i]), &mut pcm16k)
                .expect("frame sized");
            black_box(&pcm16k);
        })
    });

    // Each model on its own, at the rate it reads: the network on 16 kHz frames (the direct
    // socket), the GMM on the line's 8 kHz frames (the telephony pipeline).
    for (name, model, rate) in [
        ("vad_16k_neural", VadModel::Neural, SampleRate::Hz16000),
        ("vad_8k_gmm", VadModel::Gmm, SampleRate::Hz8000),
    ] {
        let config = VadConfig {
            model,
            ..VadConfig::default()
        };
        let mut vad = VoiceActivityDetector::with_config(rate, FrameDuration::Ms20, config)
            .expect("VAD builds");
        let frames: Vec<&[i16]> = match rate {
            SampleRate::Hz8000 => narrow.iter().map(|f| &f[..]).collect(),
            _ => wide_frames.iter().map(|f| &f[..]).collect(),
        };
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % frames.len();
                black_box(vad.process(black_box(frames[i])).expect("frame sized"));
            })
        });
    }

    let mut inbound = InboundAudio::new().expect("pipeline builds");
    let mut i = 0;
    g.bench_function("inbound_pipeline", |b| {
        b.iter(|| {
            i = (i + 1) % mulaw_frames.len();
            let out = inbound
                .process(black_box(&mulaw_frames[i]))
                .expect("160-byte frame");
            black_box(out.vad);
            black_box(out.pcm16k);
        })
    });

    // A quiet phone line between utterances: the energy gate stays closed, so the VAD skips
    // inference and the frame costs decode + resample + gate.
    let mut state = 0x2545_F491u32;
    let line_noise: Vec<[u8; TELEPHONY_FRAME_BYTES]> = (0..50)
        .map(|_| {
            let mut pcm = [0i16; 160];
            for s in pcm.iter_mut() {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                *s = (state % 401) as i16 - 200;
            }
            let mut frame = [0u8; TELEPHONY_FRAME_BYTES];
            mulaw::encode_into(&pcm, &mut frame).expect("frame sized");
            frame
        })
        .collect();
    let mut inbound = InboundAudio::new().expect("pipeline builds");
    let mut i = 0;
    g.bench_function("inbound_pipeline_line_noise", |b| {
        b.iter(|| {
            i = (i + 1) % line_noise.len();
            let out = inbound
                .process(black_box(&line_noise[i]))
                .expect("160-byte frame");
            black_box(out.vad);
            black_box(out.pcm16k);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
