//! The caller side of a session's audio: [`CallerAudio`] re-frames transport payloads into
//! 20 ms frames, decodes them (mu-law, PCM16 or Opus), brings them to 16 kHz, runs the VAD
//! (on the decoded frame when it is at the model's own rate, else on the 16 kHz one),
//! and keeps the last second in a ring so that speech can be sent to the recognizer from just
//! before its detected onset.
//!
//! While the caller is silent (the listening hot path) a frame costs a decode, a resample and a
//! VAD call on buffers allocated up front: nothing is allocated. Only while speech is being
//! captured for the recognizer does audio get copied out, in chunks of the 16-bit samples
//! themselves (a live recognizer streams them as they are). The capture gives back what it
//! grew beyond [`CAPTURE_KEEP_SAMPLES`] when the utterance ends, so a thousand idle calls
//! do not each hold their longest utterance's buffer.

use std::sync::Arc;

use crate::audio::{
    mulaw, pcm, AudioError, FrameBuffer, FrameDuration, OpusDecoder, SampleRate, StreamResampler,
    VadConfig, VadDecision, VadModel, VoiceActivityDetector, WIDEBAND_FRAME_SAMPLES,
};

use super::config::AudioFormat;

/// Milliseconds per frame throughout the session.
pub const FRAME_MS: u32 = 20;

/// Length of the ring of recent 16 kHz audio.
const RING_MS: usize = 1_000;
const RING_SAMPLES: usize = RING_MS * 16;

/// Capture capacity kept between utterances: half a second of 16 kHz audio (16 KB).
pub const CAPTURE_KEEP_SAMPLES: usize = 8_000;

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
    /// Whether the VAD reads the decoded frame (its model's own rate) rather than the 16 kHz one.
    vad_reads_input: bool,
    frames: u64,
    ring: Box<[i16]>,
    ring_written: u64,
    capturing: bool,
    capture: Vec<i16>,
}

impl CallerAudio {
    /// A pipeline for `format` input, scored by `vad_model` with the given threshold.
    pub fn new(
        format: AudioFormat,
        vad_model: VadModel,
        vad_threshold: f32,
    ) -> Result<Self, AudioError> {
        let rate = format.sample_rate();
        let vad_reads_input = vad_model.native_rate() == rate;
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
            frames: 0,
            ring: vec![0; RING_SAMPLES].into_boxed_slice(),
            ring_written: 0,
            capturing: false,
            capture: Vec::with_capacity(CAPTURE_KEEP_SAMPLES),
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
        let n = self.to_16k.process_i16(&self.pcm_in, &mut self.pcm16k)?;
        let vad = if self.vad_reads_input {
            self.vad.process(&self.pcm_in)?
        } else {
            self.vad.process(&self.pcm16k[..n])?
        };
        self.remember(n);
        let start_ms = self.frames * u64::from(FRAME_MS);
        self.frames += 1;
        Ok(Some(CallerFrame { start_ms, vad }))
    }

    /// Stream time at the end of the last frame processed, in ms.
    pub fn now_ms(&self) -> u64 {
        self.frames * u64::from(FRAME_MS)
    }

    /// Starts copying audio for the recognizer, beginning at stream time `from_ms` (as far back
    /// as the ring reaches).
    pub fn start_capture(&mut self, from_ms: u64) {
        self.capture.clear();
        self.capturing = true;
        let from_sample = from_ms * 16;
        let oldest = self.ring_written.saturating_sub(RING_SAMPLES as u64);
        let first = from_sample.clamp(oldest, self.ring_written);
        for s in first..self.ring_written {
            self.capture
                .push(self.ring[(s % RING_SAMPLES as u64) as usize]);
        }
    }

    /// Whether audio is being captured for the recognizer.
    pub fn is_capturing(&self) -> bool {
        self.capturing
    }

    /// Captured audio, once at least `min_ms` has accumulated.
    pub fn take_capture(&mut self, min_ms: u32) -> Option<Arc<[i16]>> {
        if self.capture.len() < min_ms as usize * 16 || self.capture.is_empty() {
            return None;
        }
        let chunk = Arc::from(self.capture.as_slice());
        self.capture.clear();
        Some(chunk)
    }

    /// Stops capturing; returns what was not taken yet.
    pub fn stop_capture(&mut self) -> Option<Arc<[i16]>> {
        let rest = self.take_capture(0);
        self.capturing = false;
        self.capture.shrink_to(CAPTURE_KEEP_SAMPLES);
        rest
    }

    /// Appends the frame just decoded to the ring, in at most two copies (a frame is far
    /// shorter than the ring, so it wraps at most once).
    fn remember(&mut self, n: usize) {
        let frame = &self.pcm16k[..n];
        let at = (self.ring_written % RING_SAMPLES as u64) as usize;
        let before_wrap = n.min(RING_SAMPLES - at);
        self.ring[at..at + before_wrap].copy_from_slice(&frame[..before_wrap]);
        self.ring[..n - before_wrap].copy_from_slice(&frame[before_wrap..]);
        self.ring_written += n as u64;
        if self.capturing {
            self.capture.extend_from_slice(&self.pcm16k[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_of_any_length_are_reframed() {
        let mut audio = CallerAudio::new(AudioFormat::Mulaw8k, VadModel::Gmm, 0.5).expect("builds");
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
        )
        .expect("builds");
        // 1.3 s of a ramp, so the ring (1 s) has wrapped and every sample says where it was.
        let samples: Vec<i16> = (0..20_800).map(|i| (i % 30_000) as i16).collect();
        for frame in samples.chunks(320) {
            let bytes: Vec<u8> = frame.iter().flat_map(|v| v.to_le_bytes()).collect();
            audio.push(&bytes);
            audio.next_frame().expect("decodes").expect("a frame");
        }
        // From 0.5 s back: the part before the wrap point and the part after it, in order.
        audio.start_capture(800);
        let captured = audio.stop_capture().expect("captured");
        assert_eq!(*captured, samples[12_800..]);
        // Further back than the ring holds: the oldest second it still has.
        audio.start_capture(0);
        let captured = audio.stop_capture().expect("captured");
        assert_eq!(captured.len(), RING_SAMPLES);
        assert_eq!(*captured, samples[20_800 - RING_SAMPLES..]);
    }

    #[test]
    fn a_long_utterance_gives_its_buffer_back_when_it_ends() {
        let mut audio = CallerAudio::new(
            AudioFormat::Pcm16 {
                rate: SampleRate::Hz16000,
            },
            VadModel::Neural,
            0.5,
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
        assert!(audio.capture.capacity() <= CAPTURE_KEEP_SAMPLES);
    }
}
