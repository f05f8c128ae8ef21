//! The agent side of a session's audio: [`OutputEncoder`] turns synthesized speech (f32 at
//! whatever rate the voice produces) into 20 ms frames of the transport's output format —
//! mu-law 8 kHz, PCM16 little-endian or Opus — and measures each frame's level for the
//! barge-in echo gate. Runs per sentence, off the listening hot path.

use bytes::{Bytes, BytesMut};
use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

use crate::audio::{mulaw, pcm, AudioError, FrameBuffer, FrameDuration, OpusEncoder};

use super::audio_in::FRAME_MS;
use super::config::AudioFormat;

/// One encoded output frame.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedFrame {
    /// The frame in the output format.
    pub bytes: Bytes,
    /// RMS level of the frame in dBFS (-100 for digital silence).
    pub level_dbfs: f32,
}

/// Encodes synthesized speech for one transport.
pub struct OutputEncoder {
    format: AudioFormat,
    rate_hz: u32,
    frame_len: usize,
    pending: FrameBuffer<i16>,
    resamplers: Vec<(u32, Fft<f32>)>,
    opus: Option<OpusEncoder>,
    scratch: Vec<i16>,
    /// Where µ-law and PCM16 frames are encoded: each frame is split off it, so the frames of
    /// a batch share one allocation instead of one each.
    arena: BytesMut,
}

/// Frames' worth of room the encoding arena takes at a time.
const ARENA_FRAMES: usize = 16;

impl std::fmt::Debug for OutputEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputEncoder")
            .field("format", &self.format)
            .field("pending", &self.pending.pending())
            .finish()
    }
}

impl OutputEncoder {
    /// An encoder for `format`.
    pub fn new(format: AudioFormat) -> Result<Self, AudioError> {
        let rate = format.sample_rate();
        let frame_len = pcm::frame_samples(rate, FrameDuration::Ms20);
        let opus = match format {
            AudioFormat::Opus { rate } => Some(OpusEncoder::new(rate)?),
            AudioFormat::Mulaw8k | AudioFormat::Pcm16 { .. } => None,
        };
        Ok(Self {
            format,
            rate_hz: rate.hz(),
            frame_len,
            pending: FrameBuffer::new(frame_len),
            resamplers: Vec::new(),
            opus,
            scratch: vec![0; frame_len],
            arena: BytesMut::new(),
        })
    }

    /// Milliseconds of audio per frame.
    pub fn frame_ms(&self) -> u32 {
        FRAME_MS
    }

    /// Adds synthesized samples at `sample_rate`; appends the frames they complete to `out`.
    pub fn push(
        &mut self,
        samples: &[f32],
        sample_rate: u32,
        out: &mut Vec<EncodedFrame>,
    ) -> Result<(), AudioError> {
        if samples.is_empty() {
            return Ok(());
        }
        if sample_rate == 0 {
            return Err(AudioError::Unsupported("synthesized audio at 0 Hz"));
        }
        let converted: Vec<i16> = if sample_rate == self.rate_hz {
            samples.iter().map(|&s| pcm::f32_to_i16_sample(s)).collect()
        } else {
            let resampled = self.resample(samples, sample_rate)?;
            resampled
                .iter()
                .map(|&s| pcm::f32_to_i16_sample(s))
                .collect()
        };
        self.pending.push(&converted);
        self.drain(out)
    }

    /// Ends a sentence: pads the last partial frame with silence, adds `gap_ms` of silence,
    /// and appends the frames to `out`.
    pub fn finish(&mut self, gap_ms: u32, out: &mut Vec<EncodedFrame>) -> Result<(), AudioError> {
        let partial = self.pending.pending() % self.frame_len;
        if partial > 0 {
            let pad = vec![0i16; self.frame_len - partial];
            self.pending.push(&pad);
        }
        let gap_frames = gap_ms.div_ceil(FRAME_MS) as usize;
        if gap_frames > 0 {
            let silence = vec![0i16; gap_frames * self.frame_len];
            self.pending.push(&silence);
        }
        self.drain(out)
    }

    fn resample(&mut self, samples: &[f32], from_hz: u32) -> Result<Vec<f32>, AudioError> {
        let to_hz = self.rate_hz;
        let index = match self.resamplers.iter().position(|(hz, _)| *hz == from_hz) {
            Some(i) => i,
            None => {
                let fft =
                    Fft::<f32>::new(from_hz as usize, to_hz as usize, 1_024, 1, FixedSync::Input)
                        .map_err(|e| AudioError::Resample(e.to_string()))?;
                self.resamplers.push((from_hz, fft));
                self.resamplers.len() - 1
            }
        };
        let fft = &mut self.resamplers[index].1;
        let input = InterleavedSlice::new(samples, 1, samples.len())
            .map_err(|e| AudioError::Resample(e.to_string()))?;
        let out = fft
            .process_all(&input, samples.len(), None)
            .map_err(|e| AudioError::Resample(e.to_string()))?;
        Ok(out.take_data())
    }

    fn drain(&mut self, out: &mut Vec<EncodedFrame>) -> Result<(), AudioError> {
        while let Some(frame) = self.pending.pop_frame() {
            self.scratch.copy_from_slice(frame);
            let level_dbfs = level_dbfs(&self.scratch);
            let bytes = match self.format {
                AudioFormat::Mulaw8k => {
                    let b = arena_frame(&mut self.arena, self.frame_len);
                    mulaw::encode_into(&self.scratch, b)?;
                    self.arena.split().freeze()
                }
                AudioFormat::Pcm16 { .. } => {
                    let b = arena_frame(&mut self.arena, self.frame_len * 2);
                    pcm::i16_to_pcm16le(&self.scratch, b)?;
                    self.arena.split().freeze()
                }
                AudioFormat::Opus { .. } => {
                    let encoder = self
                        .opus
                        .as_mut()
                        .expect("an Opus encoder exists for the Opus format");
                    Bytes::copy_from_slice(encoder.encode(&self.scratch)?)
                }
            };
            out.push(EncodedFrame { bytes, level_dbfs });
        }
        Ok(())
    }
}

/// `len` zeroed bytes at the end of the (empty) arena, taking room for [`ARENA_FRAMES`]
/// frames whenever it has none left.
fn arena_frame(arena: &mut BytesMut, len: usize) -> &mut [u8] {
    if arena.capacity() < len {
        arena.reserve(len * ARENA_FRAMES);
    }
    arena.resize(len, 0);
    &mut arena[..]
}

/// RMS level of a frame in dBFS, floored at -100.
pub fn level_dbfs(frame: &[i16]) -> f32 {
    if frame.is_empty() {
        return -100.0;
    }
    let sum: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    let rms = (sum / frame.len() as f64).sqrt() / 32_768.0;
    if rms <= 0.0 {
        -100.0
    } else {
        (20.0 * rms.log10()).max(-100.0) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::SampleRate;

    fn tone(rate: u32, ms: u32) -> Vec<f32> {
        (0..rate * ms / 1000)
            .map(|n| 0.3 * (2.0 * std::f32::consts::PI * 440.0 * n as f32 / rate as f32).sin())
            .collect()
    }

    #[test]
    fn speech_at_any_rate_becomes_whole_mulaw_frames() {
        let mut enc = OutputEncoder::new(AudioFormat::Mulaw8k).expect("builds");
        let mut out = Vec::new();
        enc.push(&tone(22_050, 500), 22_050, &mut out)
            .expect("encodes");
        enc.finish(0, &mut out).expect("encodes");
        assert!((24..=26).contains(&out.len()), "{} frames", out.len());
        assert!(out.iter().all(|f| f.bytes.len() == 160));
        let loud = out[10].level_dbfs;
        assert!(loud > -15.0 && loud < -9.0, "{loud} dBFS");
    }

    #[test]
    fn pcm_and_opus_outputs() {
        let mut enc = OutputEncoder::new(AudioFormat::Pcm16 {
            rate: SampleRate::Hz16000,
        })
        .expect("builds");
        let mut out = Vec::new();
        enc.push(&tone(16_000, 100), 16_000, &mut out)
            .expect("encodes");
        enc.finish(40, &mut out).expect("encodes");
        assert_eq!(out.len(), 7);
        assert!(out.iter().all(|f| f.bytes.len() == 640));
        assert_eq!(out[6].level_dbfs, -100.0);
        let mut enc = OutputEncoder::new(AudioFormat::Opus {
            rate: SampleRate::Hz48000,
        })
        .expect("builds");
        let mut out = Vec::new();
        enc.push(&tone(24_000, 100), 24_000, &mut out)
            .expect("encodes");
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn frames_sharing_a_buffer_each_keep_their_own_samples() {
        // A ramp, so every frame differs; more frames than one buffer holds, all kept alive.
        let samples: Vec<f32> = (0..8_000 * 3)
            .map(|i| ((i % 4_000) as f32 / 4_000.0 - 0.5) * 0.8)
            .collect();
        let expected: Vec<i16> = samples.iter().map(|&s| pcm::f32_to_i16_sample(s)).collect();
        let mut enc = OutputEncoder::new(AudioFormat::Mulaw8k).expect("builds");
        let mut out = Vec::new();
        for piece in samples.chunks(800) {
            enc.push(piece, 8_000, &mut out).expect("encodes");
        }
        assert_eq!(out.len(), 150);
        for (frame, want) in out.iter().zip(expected.chunks(160)) {
            let want: Vec<u8> = want.iter().map(|&s| mulaw::encode(s)).collect();
            assert_eq!(frame.bytes[..], want[..]);
        }
        let mut enc = OutputEncoder::new(AudioFormat::Pcm16 {
            rate: SampleRate::Hz8000,
        })
        .expect("builds");
        let mut out = Vec::new();
        enc.push(&samples, 8_000, &mut out).expect("encodes");
        assert_eq!(out.len(), 150);
        for (frame, want) in out.iter().zip(expected.chunks(160)) {
            let want: Vec<u8> = want.iter().flat_map(|s| s.to_le_bytes()).collect();
            assert_eq!(frame.bytes[..], want[..]);
        }
    }
}
