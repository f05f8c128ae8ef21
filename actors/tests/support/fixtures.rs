//! Real speech from the shared fixtures, converted to the session's wire formats with the
//! crate's own resampler and mu-law encoder.

use switchboard_actors::audio::{mulaw, pcm, FrameDuration, SampleRate, StreamResampler};

fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/audio")
        .join(name)
}

/// The two channels of the two-speaker fixture (16 kHz): left then right speaker.
pub fn two_speakers_16k() -> (Vec<i16>, Vec<i16>) {
    let mut reader =
        hound::WavReader::open(fixture_path("stereo_diarization.wav")).expect("fixture present");
    let samples: Vec<i16> = reader
        .samples::<i16>()
        .collect::<Result<_, _>>()
        .expect("fixture decodes");
    let left = samples.iter().step_by(2).copied().collect();
    let right = samples.iter().skip(1).step_by(2).copied().collect();
    (left, right)
}

/// 16 kHz speech as 8 kHz mu-law (whole 20 ms frames).
pub fn to_mulaw_8k(speech_16k: &[i16]) -> Vec<u8> {
    let mut down =
        StreamResampler::new(SampleRate::Hz16000, SampleRate::Hz8000, FrameDuration::Ms20)
            .expect("16k->8k is supported");
    let mut narrow = [0i16; 160];
    let mut frame = [0u8; 160];
    let mut out = Vec::with_capacity(speech_16k.len() / 2);
    for chunk in speech_16k.chunks_exact(320) {
        down.process_i16(chunk, &mut narrow).expect("frame sized");
        mulaw::encode_into(&narrow, &mut frame).expect("frame sized");
        out.extend_from_slice(&frame);
    }
    out
}

/// 16 kHz speech as PCM16 little-endian bytes.
pub fn to_pcm16le(speech: &[i16]) -> Vec<u8> {
    let mut out = vec![0u8; speech.len() * 2];
    pcm::i16_to_pcm16le(speech, &mut out).expect("sized");
    out
}

/// `ms` of mu-law silence.
pub fn mulaw_silence(ms: usize) -> Vec<u8> {
    vec![mulaw::SILENCE; ms * 8]
}

/// `ms` of PCM16 silence at 16 kHz.
pub fn pcm_silence_16k(ms: usize) -> Vec<u8> {
    vec![0u8; ms * 32]
}

/// Left speaker then right speaker as 8 kHz mu-law, each followed by silence.
pub fn caller_utterances_mulaw() -> (Vec<u8>, Vec<u8>) {
    let (left, right) = two_speakers_16k();
    (to_mulaw_8k(&left), to_mulaw_8k(&right))
}
