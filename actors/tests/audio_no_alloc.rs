//! Proves the audio hot path's central promise: once a stage is built, processing frames
//! performs no heap allocation. A counting global allocator tallies allocations made by the
//! current thread while frames flow through each stage. (Allocations inside libopus's C code
//! bypass Rust's allocator and are not seen here.)

use switchboard_actors::audio::{
    mulaw, pcm, FrameBuffer, FrameDuration, InboundAudio, OpusDecoder, OpusEncoder, SampleRate,
    SpeechTracker, StreamResampler, VadConfig, VadModel, VoiceActivityDetector,
};

#[path = "support/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::allocations_during;

/// A 20 ms, 8 kHz test frame: a tone loud enough to open the VAD gate when `loud`.
fn tone_frame(index: usize, loud: bool) -> [i16; 160] {
    let amp = if loud { 12_000.0 } else { 30.0 };
    let mut frame = [0i16; 160];
    for (n, s) in frame.iter_mut().enumerate() {
        let t = (index * 160 + n) as f32 / 8_000.0;
        *s = (amp * (2.0 * std::f32::consts::PI * 220.0 * t).sin()) as i16;
    }
    frame
}

#[test]
fn the_counter_sees_allocations() {
    let n = allocations_during(|| {
        std::hint::black_box(vec![0u8; 16]);
    });
    assert_eq!(n, 1);
}

#[test]
fn inbound_pipeline_does_not_allocate_per_frame() {
    let frames: Vec<[u8; 160]> = (0..200)
        .map(|i| {
            // Alternate quiet and loud stretches so the VAD pauses and resumes inference.
            let pcm = tone_frame(i, (i / 40) % 2 == 1);
            let mut bytes = [0u8; 160];
            mulaw::encode_into(&pcm, &mut bytes).expect("frame sized");
            bytes
        })
        .collect();
    let mut inbound = InboundAudio::new().expect("pipeline builds");
    let mut tracker = SpeechTracker::default();
    let n = allocations_during(|| {
        for (i, frame) in frames.iter().enumerate() {
            let out = inbound.process(frame).expect("160-byte frame");
            std::hint::black_box(out.pcm16k);
            std::hint::black_box(tracker.update(i as u64 * 20, 20, out.vad.voice()));
        }
        assert!(inbound.process(&frames[0][..100]).is_err());
    });
    assert_eq!(n, 0);
}

#[test]
fn resamplers_and_vad_do_not_allocate_per_frame() {
    for from in SampleRate::ALL {
        for to in SampleRate::ALL {
            let mut r = StreamResampler::new(from, to, FrameDuration::Ms20).expect("supported");
            let input = vec![0.25f32; r.input_frame_len()];
            let mut out = vec![0f32; r.output_frame_len()];
            let input_i16 = vec![1000i16; r.input_frame_len()];
            let mut out_i16 = vec![0i16; r.output_frame_len()];
            let n = allocations_during(|| {
                for _ in 0..20 {
                    r.process_f32(&input, &mut out).expect("frame sized");
                    r.process_i16(&input_i16, &mut out_i16)
                        .expect("frame sized");
                }
            });
            assert_eq!(n, 0, "{from:?} -> {to:?}");
        }
    }
    let frames: Vec<[i16; 160]> = (0..100).map(|i| tone_frame(i, i >= 50)).collect();
    for rate in [SampleRate::Hz8000, SampleRate::Hz16000] {
        for model in [VadModel::Gmm, VadModel::Neural] {
            let config = VadConfig {
                model,
                ..VadConfig::default()
            };
            let mut vad = VoiceActivityDetector::with_config(rate, FrameDuration::Ms10, config)
                .expect("supported");
            let len = vad.frame_len();
            let n = allocations_during(|| {
                for f in &frames {
                    std::hint::black_box(vad.process(&f[..len]).expect("frame sized"));
                }
            });
            assert_eq!(n, 0, "{rate:?} {model:?}");
        }
    }
}

#[test]
fn codecs_and_framing_do_not_allocate_per_frame() {
    let mut enc = OpusEncoder::new(SampleRate::Hz48000).expect("valid");
    let mut dec = OpusDecoder::new(SampleRate::Hz48000).expect("valid");
    let pcm48: Vec<i16> = (0..960).map(|n| ((n * 37) % 2000) as i16 - 1000).collect();
    let mut packet = [0u8; 4000];
    let mut mu = [0u8; 960];
    let mut lin = [0i16; 960];
    let mut bytes = [0u8; 1920];
    let mut floats = [0f32; 960];
    let mut fb = FrameBuffer::<u8>::new(320);
    let n = allocations_during(|| {
        for _ in 0..20 {
            let p = enc.encode(&pcm48).expect("frame sized");
            let len = p.len();
            packet[..len].copy_from_slice(p);
            std::hint::black_box(dec.decode(&packet[..len]).expect("our packet"));
            std::hint::black_box(dec.conceal_lost().expect("concealment"));
            mulaw::encode_into(&pcm48, &mut mu).expect("sized");
            mulaw::decode_into(&mu, &mut lin).expect("sized");
            pcm::i16_to_pcm16le(&lin, &mut bytes).expect("sized");
            pcm::pcm16le_to_i16(&bytes, &mut lin).expect("sized");
            pcm::i16_to_f32(&lin, &mut floats).expect("sized");
            pcm::f32_to_i16(&floats, &mut lin).expect("sized");
            fb.push(&bytes[..500]);
            while let Some(frame) = fb.pop_frame() {
                std::hint::black_box(frame);
            }
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn pipeline_types_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<InboundAudio>();
    assert_send::<StreamResampler>();
    assert_send::<VoiceActivityDetector>();
    assert_send::<OpusEncoder>();
    assert_send::<OpusDecoder>();
    assert_send::<SpeechTracker>();
}

#[test]
fn session_listening_path_does_not_allocate_per_frame() {
    use switchboard_actors::engine::STT_SAMPLE_RATE;
    use switchboard_actors::session::{AudioFormat, CallerAudio};

    let mulaw_frames: Vec<[u8; 160]> = (0..200)
        .map(|i| {
            let pcm = tone_frame(i, (i / 40) % 2 == 1);
            let mut bytes = [0u8; 160];
            mulaw::encode_into(&pcm, &mut bytes).expect("frame sized");
            bytes
        })
        .collect();
    for format in [
        AudioFormat::Mulaw8k,
        AudioFormat::Pcm16 {
            rate: SampleRate::Hz16000,
        },
        AudioFormat::Pcm16 {
            rate: SampleRate::Hz48000,
        },
    ] {
        for model in [VadModel::Gmm, VadModel::Neural] {
            let mut audio = CallerAudio::new(format, model, 0.5, STT_SAMPLE_RATE).expect("builds");
            let payload_len = match format {
                AudioFormat::Pcm16 { rate } => rate.hz() as usize / 50 * 2,
                _ => 160,
            };
            let payloads: Vec<Vec<u8>> = mulaw_frames
                .iter()
                .map(|f| f.iter().cycle().take(payload_len).copied().collect())
                .collect();
            let mut tracker = SpeechTracker::default();
            // Warm up: the framing buffer reaches its working size.
            audio.push(&payloads[0]);
            while audio.next_frame().expect("decodes").is_some() {}
            let n = allocations_during(|| {
                for payload in &payloads {
                    audio.push(payload);
                    while let Some(f) = audio.next_frame().expect("decodes") {
                        std::hint::black_box(tracker.update(f.start_ms, 20, f.vad.voice()));
                    }
                }
            });
            assert_eq!(n, 0, "{format:?} {model:?}");
        }
    }
}
