//! The caller side of a session's audio: [`CallerAudio`] re-frames transport payloads into
//! 20 ms frames, decodes them (mu-law, PCM16 or Opus), runs the VAD (on the decoded frame when
//! it is at the model's own rate, else on a 16 kHz copy), and keeps the last second in a ring
//! so that speech can be sent to the recognizer, at 16 kHz, from just before its detected onset.
//! A live recognizer that takes the caller's own rate (a vendor, on a phone line) gets the
//! decoded frames themselves instead, when the ring holds them: nothing is resampled for it.
//!
//! The ring holds the signal the VAD reads. When that is the decoded frame itself (a phone
//! call's 8 kHz line, scored by the GMM), nothing else needs 16 kHz while the caller is silent,
//! so the 16 kHz copy is only made while speech is captured: the capture starts by bringing
//! the ring's pre-roll up to 16 kHz through a freshly reset resampler, and goes on frame by
//! frame. Otherwise (the network VAD, which reads 16 kHz) every frame is resampled and the
//! ring holds the 16 kHz copy.
//!
//! While the caller is silent (the listening hot path) a frame costs a decode, at most one
//! resample and a VAD call on buffers allocated up front: nothing is allocated. Only while
//! speech is being captured for the recognizer does audio get copied out, in chunks of the
//! 16-bit samples themselves (a live recognizer streams them as they are). The capture buffer
//! is allocated when an utterance starts and given back when it ends, so a thousand idle calls
//! hold none.

use std::sync::Arc;

use crate::audio::{
    mulaw, pcm, AudioError, FrameBuffer, FrameDuration, OpusDecoder, SampleRate, StreamResampler,
    VadConfig, VadDecision, VadModel, VoiceActivityDetector, WIDEBAND_FRAME_SAMPLES,
};

use super::config::AudioFormat;

/// Milliseconds per frame throughout the session.
pub const FRAME_MS: u32 = 20;

/// Length of the ring of recent audio: the recognizer's pre-roll, and a caller's speech from
/// where their voice began when an interruption is decided late (soft words under the echo
/// gate: see [`super::barge_in::BargeInDetected::speech_began_ms`]).
pub(super) const RING_MS: usize = 1_500;

/// One caller frame after decoding: its position in the caller's stream and the VAD verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallerFrame {
    /// Stream time of the frame's start, in ms (frames counted since the session started).
    pub start_ms: u64,
    /// Voice activity verdict.
    pub vad: VadDecision,
}

#[derive(Debug)]
enum Decoder {
    Mulaw,
    Pcm16,
    Opus(Box<OpusDecoder>),
}

/// Per-session inbound audio pipeline (see the module docs).
#[derive(Debug)]
pub struct CallerAudio {
    decoder: Decoder,
    bytes: FrameBuffer<u8>,
    packet: Vec<u8>,
    packet_ready: bool,
    frame_len: usize,
    pcm_in: Vec<i16>,
    to_16k: StreamResampler,
    pcm16k: [i16; WIDEBAND_FRAME_SAMPLES],
    vad: VoiceActivityDetector,
    /// Whether the VAD reads the decoded frame (its model's own rate) rather than the 16 kHz
    /// one. The ring then holds decoded frames too, and the 16 kHz copy is made only while
    /// capturing.
    vad_reads_input: bool,
    /// Whether the capture is of the decoded frames themselves, at the caller's rate, rather
    /// than of their 16 kHz copy.
    capture_decoded: bool,
    /// Samples per ms in the capture.
    capture_per_ms: usize,
    frames: u64,
    /// The last [`RING_MS`] of the signal the VAD reads, a whole number of frames long.
    ring: Box<[i16]>,
    /// Samples per ms in the ring.
    ring_per_ms: u64,
    ring_written: u64,
    capturing: bool,
    capture: Vec<i16>,
}

impl CallerAudio {
    /// A pipeline for `format` input, scored by `vad_model` with the given threshold, that
    /// captures speech for a recognizer wanting it at `recognizer_rate` (see
    /// [`capture_rate`](Self::capture_rate)).
    pub fn new(
        format: AudioFormat,
        vad_model: VadModel,
        vad_threshold: f32,
        recognizer_rate: u32,
    ) -> Result<Self, AudioError> {
        let rate = format.sample_rate();
        let vad_reads_input = vad_model.native_rate() == rate;
        let capture_decoded = vad_reads_input && recognizer_rate == rate.hz();
        let capture_rate = if capture_decoded {
            rate
        } else {
            SampleRate::Hz16000
        };
        let vad_rate = if vad_reads_input {
            rate
        } else {
            SampleRate::Hz16000
        };
        let vad_config = VadConfig {
            model: vad_model,
            ..VadConfig::default()
        };
        let frame_len = pcm::frame_samples(rate, FrameDuration::Ms20);
        let (decoder, frame_bytes) = match format {
            AudioFormat::Mulaw8k => (Decoder::Mulaw, frame_len),
            AudioFormat::Pcm16 { .. } => (Decoder::Pcm16, frame_len * 2),
            AudioFormat::Opus { rate } => (Decoder::Opus(Box::new(OpusDecoder::new(rate)?)), 1),
        };
        Ok(Self {
            decoder,
            bytes: FrameBuffer::with_capacity(frame_bytes, frame_bytes * 16),
            packet: Vec::with_capacity(1_500),
            packet_ready: false,
            frame_len,
            pcm_in: vec![0; frame_len],
            to_16k: StreamResampler::new(rate, SampleRate::Hz16000, FrameDuration::Ms20)?,
            pcm16k: [0; WIDEBAND_FRAME_SAMPLES],
            vad: VoiceActivityDetector::with_config(vad_rate, FrameDuration::Ms20, vad_config)?
                .with_threshold(vad_threshold),
            vad_reads_input,
            capture_decoded,
            capture_per_ms: capture_rate.samples_per_ms(),
            frames: 0,
            ring: vec![0; RING_MS * vad_rate.hz() as usize / 1_000].into_boxed_slice(),
            ring_per_ms: u64::from(vad_rate.hz() / 1_000),
            ring_written: 0,
            capturing: false,
            capture: Vec::new(),
        })
    }

    /// Accepts one transport payload. PCM and mu-law payloads may have any length; an Opus
    /// payload must be one whole packet (call [`next_frame`](Self::next_frame) until it
    /// returns `None` before pushing the next).
    pub fn push(&mut self, payload: &[u8]) {
        match self.decoder {
            Decoder::Opus(_) => {
                self.packet.clear();
                self.packet.extend_from_slice(payload);
                self.packet_ready = true;
            }
            Decoder::Mulaw | Decoder::Pcm16 => self.bytes.push(payload),
        }
    }

    /// Decodes and scores the next complete frame, if one is pending.
    pub fn next_frame(&mut self) -> Result<Option<CallerFrame>, AudioError> {
        match &mut self.decoder {
            Decoder::Mulaw => {
                let Some(frame) = self.bytes.pop_frame() else {
                    return Ok(None);
                };
                mulaw::decode_into(frame, &mut self.pcm_in)?;
            }
            Decoder::Pcm16 => {
                let Some(frame) = self.bytes.pop_frame() else {
                    return Ok(None);
                };
                pcm::pcm16le_to_i16(frame, &mut self.pcm_in)?;
            }
            Decoder::Opus(decoder) => {
                if !self.packet_ready {
                    return Ok(None);
                }
                self.packet_ready = false;
                let decoded = decoder.decode(&self.packet)?;
                if decoded.len() != self.frame_len {
                    return Err(AudioError::FrameLength {
                        expected: self.frame_len,
                        actual: decoded.len(),
                    });
                }
                self.pcm_in.copy_from_slice(decoded);
            }
        }
        // The 16 kHz copy: for the VAD when it reads 16 kHz, else only for a 16 kHz capture.
        let n = if !self.vad_reads_input || (self.capturing && !self.capture_decoded) {
            self.to_16k.process_i16(&self.pcm_in, &mut self.pcm16k)?
        } else {
            0
        };
        let scored: &[i16] = if self.vad_reads_input {
            &self.pcm_in
        } else {
            &self.pcm16k[..n]
        };
        let vad = self.vad.process(scored)?;
        remember(&mut self.ring, &mut self.ring_written, scored);
        if self.capturing {
            let captured = if self.capture_decoded {
                &self.pcm_in
            } else {
                &self.pcm16k[..n]
            };
            self.capture.extend_from_slice(captured);
        }
        let start_ms = self.frames * u64::from(FRAME_MS);
        self.frames += 1;
        Ok(Some(CallerFrame { start_ms, vad }))
    }

    /// Sample rate of the captured audio: the caller's own when the recognizer asked for it and
    /// the ring holds the decoded frames (the VAD reads them), else 16 kHz.
    pub fn capture_rate(&self) -> u32 {
        self.capture_per_ms as u32 * 1_000
    }

    /// Stream time at the end of the last frame processed, in ms.
    pub fn now_ms(&self) -> u64 {
        self.frames * u64::from(FRAME_MS)
    }

    /// Starts copying audio for the recognizer, beginning at stream time `from_ms` (as far back
    /// as the ring reaches; when the ring holds decoded frames, from the start of the frame
    /// that holds `from_ms`).
    pub fn start_capture(&mut self, from_ms: u64) {
        self.capture.clear();
        self.capturing = true;
        let ring_len = self.ring.len() as u64;
        let oldest = self.ring_written.saturating_sub(ring_len);
        let first = (from_ms * self.ring_per_ms).clamp(oldest, self.ring_written);
        if self.vad_reads_input && !self.capture_decoded {
            // Whole decoded frames through a resampler started afresh: its history holds
            // frames skipped while the caller was silent.
            let frame_len = self.pcm_in.len() as u64;
            let first = first - first % frame_len;
            let frames = (self.ring_written - first) / frame_len;
            self.capture
                .reserve(frames as usize * self.to_16k.output_frame_len());
            self.to_16k.reset();
            for frame in 0..frames {
                let at = ((first + frame * frame_len) % ring_len) as usize;
                let input = &self.ring[at..at + frame_len as usize];
                // The frame length was checked when the resampler was built for it.
                if let Ok(n) = self.to_16k.process_i16(input, &mut self.pcm16k) {
                    self.capture.extend_from_slice(&self.pcm16k[..n]);
                }
            }
        } else {
            // The ring holds what is captured: decoded frames (from the start of the frame that
            // holds `from_ms`) or 16 kHz copies.
            let first = if self.vad_reads_input {
                let frame_len = self.pcm_in.len() as u64;
                first - first % frame_len
            } else {
                first
            };
            self.capture.reserve((self.ring_written - first) as usize);
            for s in first..self.ring_written {
                self.capture.push(self.ring[(s % ring_len) as usize]);
            }
        }
    }

    /// Whether audio is being captured for the recognizer.
    pub fn is_capturing(&self) -> bool {
        self.capturing
    }

    /// Captured audio (at [`capture_rate`](Self::capture_rate)), once at least `min_ms` has
    /// accumulated.
    pub fn take_capture(&mut self, min_ms: u32) -> Option<Arc<[i16]>> {
        if self.capture.len() < min_ms as usize * self.capture_per_ms || self.capture.is_empty() {
            return None;
        }
        let chunk = Arc::from(self.capture.as_slice());
        self.capture.clear();
        Some(chunk)
    }

    /// Stops capturing; returns what was not taken yet. The capture buffer is given back.
    pub fn stop_capture(&mut self) -> Option<Arc<[i16]>> {
        let rest = self.take_capture(0);
        self.capturing = false;
        self.capture = Vec::new();
        rest
    }
}

/// Appends one frame to `ring`, in at most two copies (a frame is far shorter than the ring,
/// so it wraps at most once).
fn remember(ring: &mut [i16], written: &mut u64, frame: &[i16]) {
    let n = frame.len();
    let at = (*written % ring.len() as u64) as usize;
    let before_wrap = n.min(ring.len() - at);
    ring[at..at + before_wrap].copy_from_slice(&frame[..before_wrap]);
    ring[..n - before_wrap].copy_from_slice(&frame[before_wrap..]);
    *written += n as u64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::STT_SAMPLE_RATE;

    #[test]
    fn payloads_of_any_length_are_reframed() {
        let mut audio = CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5, STT_SAMPLE_RATE)
            .expect("builds");
        audio.push(&[mulaw::SILENCE; 100]);
        assert!(audio.next_frame().expect("decodes").is_none());
        audio.push(&[mulaw::SILENCE; 240]);
        let f = audio.next_frame().expect("decodes").expect("a frame");
        assert_eq!(f.start_ms, 0);
        assert!(!f.vad.is_speech);
        assert_eq!(
            audio
                .next_frame()
                .expect("decodes")
                .expect("a frame")
                .start_ms,
            20
        );
        assert!(audio.next_frame().expect("decodes").is_none());
    }

    #[test]
    fn capture_starts_from_the_ring() {
        let mut audio = CallerAudio::new(
            AudioFormat::Pcm16 {
                rate: SampleRate::Hz16000,
            },
            VadModel::Neural,
            0.5,
            STT_SAMPLE_RATE,
        )
        .expect("builds");
        audio.push(&[0u8; 640 * 10]);
        while audio.next_frame().expect("decodes").is_some() {}
        assert_eq!(audio.now_ms(), 200);
        audio.start_capture(100);
        assert_eq!(audio.take_capture(0).expect("captured").len(), 1_600);
        audio.push(&[0u8; 640]);
        audio.next_frame().expect("decodes");
        assert!(audio.take_capture(40).is_none());
        assert_eq!(audio.stop_capture().expect("rest").len(), 320);
        assert!(!audio.is_capturing());
    }

    #[test]
    fn capture_reaches_back_across_the_ring_wrap() {
        let mut audio = CallerAudio::new(
            AudioFormat::Pcm16 {
                rate: SampleRate::Hz16000,
            },
            VadModel::Neural,
            0.5,
            STT_SAMPLE_RATE,
        )
        .expect("builds");
        // The ring's length and 0.3 s more of a ramp, so the ring has wrapped and every sample
        // says where it was.
        let ring = RING_MS * 16;
        let total = ring + 4_800;
        let samples: Vec<i16> = (0..total).map(|i| (i % 30_000) as i16).collect();
        for frame in samples.chunks(320) {
            let bytes: Vec<u8> = frame.iter().flat_map(|v| v.to_le_bytes()).collect();
            audio.push(&bytes);
            audio.next_frame().expect("decodes").expect("a frame");
        }
        // From 0.5 s back: the part before the wrap point and the part after it, in order.
        audio.start_capture((total as u64 / 16) - 500);
        let captured = audio.stop_capture().expect("captured");
        assert_eq!(*captured, samples[total - 8_000..]);
        // Further back than the ring holds: the oldest audio it still has.
        audio.start_capture(0);
        let captured = audio.stop_capture().expect("captured");
        assert_eq!(captured.len(), ring);
        assert_eq!(*captured, samples[total - ring..]);
    }

    #[test]
    fn a_phone_calls_capture_is_its_pre_roll_and_speech_at_16_khz() {
        // A 400 Hz tone on the 8 kHz line: the ring keeps the line's own samples and the
        // capture brings them, and what follows, up to 16 kHz.
        let tone = |i: usize| {
            (8_000.0 * (i as f32 * 400.0 * std::f32::consts::TAU / 8_000.0).sin()) as i16
        };
        let line: Vec<u8> = (0..8_000 * 2).map(|i| mulaw::encode(tone(i))).collect();
        let mut audio = CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5, STT_SAMPLE_RATE)
            .expect("builds");
        let mut reference =
            StreamResampler::new(SampleRate::Hz8000, SampleRate::Hz16000, FrameDuration::Ms20)
                .expect("builds");
        let (mut decoded, mut upsampled) = ([0i16; 160], [0i16; 320]);
        let mut expected = Vec::new();
        for (index, frame) in line.chunks(160).enumerate() {
            audio.push(frame);
            audio.next_frame().expect("decodes").expect("a frame");
            if index == 59 {
                // 1.2 s in, speech is found to have started 300 ms ago (the 15th frame back).
                audio.start_capture(1_200 - 300);
                assert!(audio.is_capturing());
                let pre_roll = audio.take_capture(0).expect("the pre-roll");
                assert_eq!(pre_roll.len(), 15 * 320);
                // The same frames through a resampler started at the first of them.
                for earlier in line[45 * 160..60 * 160].chunks(160) {
                    mulaw::decode_into(earlier, &mut decoded).expect("decodes");
                    reference
                        .process_i16(&decoded, &mut upsampled)
                        .expect("resamples");
                    expected.extend_from_slice(&upsampled);
                }
                assert_eq!(*pre_roll, expected[..]);
                expected.clear();
            } else if index > 59 {
                mulaw::decode_into(frame, &mut decoded).expect("decodes");
                reference
                    .process_i16(&decoded, &mut upsampled)
                    .expect("resamples");
                expected.extend_from_slice(&upsampled);
            }
        }
        let speech = audio.stop_capture().expect("the rest of the speech");
        assert_eq!(
            *speech,
            expected[..],
            "frames after the onset go on from the pre-roll"
        );
        assert_eq!(audio.capture.capacity(), 0);
        // Further back than the ring reaches: the frames it holds, again through a resampler
        // started afresh at the first of them.
        let ring_frames = RING_MS / FRAME_MS as usize;
        audio.start_capture(0);
        let mut reference =
            StreamResampler::new(SampleRate::Hz8000, SampleRate::Hz16000, FrameDuration::Ms20)
                .expect("builds");
        expected.clear();
        for earlier in line[(100 - ring_frames) * 160..].chunks(160) {
            mulaw::decode_into(earlier, &mut decoded).expect("decodes");
            reference
                .process_i16(&decoded, &mut upsampled)
                .expect("resamples");
            expected.extend_from_slice(&upsampled);
        }
        assert_eq!(*audio.stop_capture().expect("captured"), expected[..]);
    }

    #[test]
    fn a_recognizer_that_takes_the_lines_rate_captures_the_decoded_frames_themselves() {
        let tone = |i: usize| {
            (8_000.0 * (i as f32 * 400.0 * std::f32::consts::TAU / 8_000.0).sin()) as i16
        };
        let line: Vec<u8> = (0..8_000 * 2).map(|i| mulaw::encode(tone(i))).collect();
        let mut decoded = vec![0i16; line.len()];
        mulaw::decode_into(&line, &mut decoded).expect("decodes");
        let mut audio =
            CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5, 8_000).expect("builds");
        assert_eq!(audio.capture_rate(), 8_000);
        for (index, frame) in line.chunks(160).enumerate() {
            audio.push(frame);
            audio.next_frame().expect("decodes").expect("a frame");
            if index == 59 {
                // The onset 300 ms back, from 10 ms into a frame: from that frame's start.
                audio.start_capture(1_200 - 310);
                let pre_roll = audio.take_capture(0).expect("the pre-roll");
                assert_eq!(*pre_roll, decoded[44 * 160..60 * 160]);
                // 100 ms at 8 kHz is 800 samples: not there after one more frame.
            } else if index == 60 {
                assert!(audio.take_capture(100).is_none());
            }
        }
        let speech = audio.stop_capture().expect("the rest of the speech");
        assert_eq!(
            *speech,
            decoded[60 * 160..],
            "bit for bit, nothing resampled"
        );
        // Further back than the ring reaches: the frames it holds.
        audio.start_capture(0);
        assert_eq!(
            *audio.stop_capture().expect("captured"),
            decoded[(100 - RING_MS / FRAME_MS as usize) * 160..]
        );

        // Where the ring holds 16 kHz copies (the neural VAD reads them), or the recognizer
        // wants 16 kHz, the capture is at 16 kHz as before.
        let neural =
            CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Neural, 0.5, 8_000).expect("builds");
        assert_eq!(neural.capture_rate(), 16_000);
        let batch = CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5, STT_SAMPLE_RATE)
            .expect("builds");
        assert_eq!(batch.capture_rate(), 16_000);
    }

    #[test]
    fn a_long_utterance_gives_its_buffer_back_when_it_ends() {
        let mut audio = CallerAudio::new(
            AudioFormat::Pcm16 {
                rate: SampleRate::Hz16000,
            },
            VadModel::Neural,
            0.5,
            STT_SAMPLE_RATE,
        )
        .expect("builds");
        audio.start_capture(0);
        // Ten seconds of speech, captured in full for a recognizer that takes it at the end.
        for _ in 0..500 {
            audio.push(&[0x10u8; 640]);
            audio.next_frame().expect("decodes").expect("a frame");
        }
        assert!(audio.capture.capacity() >= 160_000);
        let utterance = audio.stop_capture().expect("the utterance");
        assert_eq!(utterance.len(), 160_000);
        assert!(utterance.iter().all(|&s| s == 0x1010));
        assert_eq!(audio.capture.capacity(), 0);
    }
}
