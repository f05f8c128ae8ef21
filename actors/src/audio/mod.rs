//! The real-time audio path: codecs (G.711 mu-law, Opus), PCM framing and conversion,
//! streaming resampling, voice activity detection, and [`InboundAudio`], the per-call
//! telephony pipeline that ties them together on the hot path.
//!
//! Everything here works on caller-provided or preallocated buffers: building a stage
//! allocates, processing a frame does not.

pub mod error;
pub mod halfband;
pub mod mulaw;
pub mod opus;
pub mod pcm;
pub mod resample;
pub mod vad;

pub use error::AudioError;
pub use opus::{OpusDecoder, OpusEncoder};
pub use pcm::{frame_bytes, frame_samples, FrameBuffer, FrameDuration, SampleRate};
pub use resample::StreamResampler;
pub use vad::{
    SpeechEvent, SpeechTracker, SpeechTrackerConfig, VadConfig, VadDecision, VadModel, Voice,
    VoiceActivityDetector, MAX_ONSET_LEAD_MS,
};

/// Telephony frame: 20 ms of 8 kHz mu-law, one byte per sample.
pub const TELEPHONY_FRAME_BYTES: usize = frame_samples(SampleRate::Hz8000, FrameDuration::Ms20);

/// Samples in one 20 ms frame at 16 kHz, the rate speech models consume.
pub const WIDEBAND_FRAME_SAMPLES: usize = frame_samples(SampleRate::Hz16000, FrameDuration::Ms20);

/// One processed inbound frame: wideband PCM for speech recognition and the VAD verdict.
#[derive(Debug)]
pub struct InboundFrame<'a> {
    /// 20 ms of 16 kHz mono PCM, delayed by [`InboundAudio::delay_us`].
    pub pcm16k: &'a [i16],
    /// Voice activity verdict for this frame.
    pub vad: VadDecision,
}

/// Per-call inbound telephony pipeline: 20 ms mu-law frames at 8 kHz in, 16 kHz PCM and a VAD
/// decision out.
///
/// mu-law → PCM16 (table lookup) → 8→16 kHz resampling, and the GMM VAD ([`VadModel::Gmm`])
/// on the 8 kHz samples, through buffers allocated in
/// [`new`](Self::new). [`process`](Self::process) allocates nothing. Media streams that do not
/// deliver exactly 160-byte payloads can be re-chunked with a [`FrameBuffer<u8>`] first.
#[derive(Debug)]
pub struct InboundAudio {
    pcm8k: [i16; TELEPHONY_FRAME_BYTES],
    pcm16k: [i16; WIDEBAND_FRAME_SAMPLES],
    upsampler: StreamResampler,
    vad: VoiceActivityDetector,
}

impl InboundAudio {
    /// A fresh pipeline for one call.
    pub fn new() -> Result<Self, AudioError> {
        Ok(Self {
            pcm8k: [0; TELEPHONY_FRAME_BYTES],
            pcm16k: [0; WIDEBAND_FRAME_SAMPLES],
            upsampler: StreamResampler::new(
                SampleRate::Hz8000,
                SampleRate::Hz16000,
                FrameDuration::Ms20,
            )?,
            vad: VoiceActivityDetector::with_config(
                SampleRate::Hz8000,
                FrameDuration::Ms20,
                VadConfig {
                    model: VadModel::Gmm,
                    ..VadConfig::default()
                },
            )?,
        })
    }

    /// Sets the VAD speech threshold (see [`vad::DEFAULT_THRESHOLD`]).
    pub fn with_vad_threshold(mut self, threshold: f32) -> Self {
        self.vad = self.vad.with_threshold(threshold);
        self
    }

    /// Processes one 160-byte mu-law frame. Payloads of any other length are rejected with
    /// [`AudioError::FrameLength`] and leave the pipeline state untouched.
    pub fn process(&mut self, mulaw_frame: &[u8]) -> Result<InboundFrame<'_>, AudioError> {
        error::check_frame_len(TELEPHONY_FRAME_BYTES, mulaw_frame.len())?;
        mulaw::decode_into(mulaw_frame, &mut self.pcm8k)?;
        let n = self.upsampler.process_i16(&self.pcm8k, &mut self.pcm16k)?;
        let vad = self.vad.process(&self.pcm8k)?;
        Ok(InboundFrame {
            pcm16k: &self.pcm16k[..n],
            vad,
        })
    }

    /// Delay of the 16 kHz output behind the mu-law input, in microseconds (the resampler's).
    pub fn delay_us(&self) -> u64 {
        self.upsampler.delay_us()
    }

    /// Forgets all history, as at the start of a new call.
    pub fn reset(&mut self) {
        self.upsampler.reset();
        self.vad.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture_left_8k_mulaw() -> Vec<u8> {
        fixture_8k_mulaw(0)
    }

    /// One channel of the two-speaker fixture, downsampled to 8 kHz and mu-law encoded.
    fn fixture_8k_mulaw(channel: usize) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/audio/stereo_diarization.wav");
        let mut reader = hound::WavReader::open(path).expect("fixture present");
        let samples: Vec<i16> = reader
            .samples::<i16>()
            .collect::<Result<_, _>>()
            .expect("fixture decodes");
        let left: Vec<i16> = samples.iter().skip(channel).step_by(2).copied().collect();
        let mut down =
            StreamResampler::new(SampleRate::Hz16000, SampleRate::Hz8000, FrameDuration::Ms20)
                .expect("supported");
        let mut narrow = [0i16; 160];
        let mut bytes = Vec::new();
        let mut frame = [0u8; 160];
        for chunk in left.chunks_exact(320) {
            down.process_i16(chunk, &mut narrow).expect("frame sized");
            mulaw::encode_into(&narrow, &mut frame).expect("frame sized");
            bytes.extend_from_slice(&frame);
        }
        bytes
    }

    #[test]
    fn phone_call_speech_is_detected_and_tracked() {
        let mut bytes = fixture_left_8k_mulaw();
        // One second of mu-law silence after the speech.
        bytes.extend(std::iter::repeat_n(mulaw::SILENCE, 8_000));
        let mut inbound = InboundAudio::new().expect("pipeline builds");
        let mut tracker = SpeechTracker::default();
        let mut events = Vec::new();
        let mut speech_frames = 0;
        for (i, frame) in bytes.chunks_exact(TELEPHONY_FRAME_BYTES).enumerate() {
            let out = inbound.process(frame).expect("160-byte frame");
            assert_eq!(out.pcm16k.len(), WIDEBAND_FRAME_SAMPLES);
            speech_frames += usize::from(out.vad.is_speech);
            events.extend(tracker.update(i as u64 * 20, 20, out.vad.voice()));
        }
        assert!(speech_frames > 60, "{speech_frames} speech frames");
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(matches!(events[0], SpeechEvent::SpeechStarted { .. }));
        assert!(matches!(events[1], SpeechEvent::SpeechEnded { .. }));
    }

    /// The right channel of the two-speaker fixture at 8 kHz mu-law ("The horizon seems
    /// extremely distant."), the benchmark caller's utterance.
    fn fixture_right_8k_mulaw() -> Vec<u8> {
        fixture_8k_mulaw(1)
    }

    #[test]
    fn barge_in_speech_is_decided_within_a_quarter_second_of_its_start() {
        // The caller is silent, then talks: the first frame sent is the one before the first
        // frame within 26 dB of the utterance's loudest, as a load-test caller sends it.
        let speech = fixture_right_8k_mulaw();
        let levels: Vec<f64> = speech
            .chunks_exact(TELEPHONY_FRAME_BYTES)
            .map(|f| {
                f.iter()
                    .map(|&c| (f64::from(mulaw::decode(c)) / 32768.0).powi(2))
                    .sum::<f64>()
            })
            .collect();
        let loudest = levels.iter().copied().fold(0.0, f64::max);
        let first = levels
            .iter()
            .position(|&e| e > loudest * 0.0025)
            .expect("the fixture has speech");
        let mut bytes = vec![mulaw::SILENCE; 8_000];
        bytes.extend_from_slice(&speech[first.saturating_sub(1) * TELEPHONY_FRAME_BYTES..]);
        let talk_starts_ms = 1_000;

        let mut inbound = InboundAudio::new().expect("pipeline builds");
        let mut tracker = SpeechTracker::default();
        let decided = bytes
            .chunks_exact(TELEPHONY_FRAME_BYTES)
            .enumerate()
            .find_map(|(i, frame)| {
                let out = inbound.process(frame).expect("160-byte frame");
                let at = i as u64 * 20;
                tracker
                    .update(at, 20, out.vad.voice())
                    .map(|e| (at + 20, e))
            });
        let Some((decided_ms, SpeechEvent::SpeechStarted { at_ms })) = decided else {
            panic!("no speech start: {decided:?}");
        };
        assert!(
            at_ms >= talk_starts_ms,
            "onset {at_ms} before the caller talked"
        );
        // 200 ms of sustained speech, counted from the first frames of the words: the GMM hears
        // them at once, so the decision leaves at most one frame for the detector.
        assert!(
            decided_ms <= talk_starts_ms + 220,
            "decided {decided_ms} ms, {} ms after the caller started",
            decided_ms - talk_starts_ms
        );
        assert_eq!(decided_ms - at_ms, 200);
    }

    #[test]
    fn silence_in_gives_silence_out() {
        let mut inbound = InboundAudio::new().expect("pipeline builds");
        for _ in 0..50 {
            let out = inbound
                .process(&[mulaw::SILENCE; 160])
                .expect("160-byte frame");
            assert!(out.pcm16k.iter().all(|&s| s == 0));
            assert!(!out.vad.is_speech);
        }
    }

    #[test]
    fn bad_payload_length_is_rejected() {
        let mut inbound = InboundAudio::new().expect("pipeline builds");
        assert!(matches!(
            inbound.process(&[0xFF; 161]),
            Err(AudioError::FrameLength {
                expected: 160,
                actual: 161
            })
        ));
        assert!(inbound.process(&[]).is_err());
        // The half-band upsampler: 32 samples at 16 kHz.
        assert_eq!(inbound.delay_us(), 2_000);
    }
}
