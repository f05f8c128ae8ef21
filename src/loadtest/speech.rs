//! The caller's voice: an audio file decoded once, mixed to mono and converted to what each
//! transport sends, cut into 20 ms frames that every session shares.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context as _};
use switchboard_actors::audio::mulaw;

use crate::media::{decode, resample};

/// One frame of caller audio is 20 ms.
pub const FRAME_MS: u64 = 20;

/// How the caller's audio travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// 8 kHz mu-law, as Twilio sends it.
    Mulaw8k,
    /// PCM16 little-endian mono at the given rate, as the direct socket takes it.
    Pcm16(u32),
}

impl Encoding {
    fn sample_rate(self) -> u32 {
        match self {
            Encoding::Mulaw8k => 8_000,
            Encoding::Pcm16(rate) => rate,
        }
    }

    /// Bytes in one 20 ms frame.
    pub fn frame_bytes(self) -> usize {
        let samples = (self.sample_rate() as u64 * FRAME_MS / 1000) as usize;
        match self {
            Encoding::Mulaw8k => samples,
            Encoding::Pcm16(_) => samples * 2,
        }
    }

    /// Milliseconds of audio in `bytes` of this encoding.
    pub fn ms_of(self, bytes: usize) -> f64 {
        let samples = match self {
            Encoding::Mulaw8k => bytes,
            Encoding::Pcm16(_) => bytes / 2,
        };
        samples as f64 * 1000.0 / self.sample_rate() as f64
    }

    fn silence(self) -> Vec<u8> {
        match self {
            Encoding::Mulaw8k => vec![mulaw::SILENCE; self.frame_bytes()],
            Encoding::Pcm16(_) => vec![0; self.frame_bytes()],
        }
    }
}

/// The utterance every simulated caller speaks, ready to send.
#[derive(Debug, Clone)]
pub struct CallerSpeech {
    /// The utterance in 20 ms frames: the first is quiet, the speech begins with the second
    /// (the last frame is padded with silence).
    pub frames: Arc<Vec<Vec<u8>>>,
    /// One 20 ms frame of silence.
    pub silence: Arc<Vec<u8>>,
}

impl CallerSpeech {
    /// Decodes `path` (any container the speech endpoints take) for `encoding`.
    pub fn load(path: &Path, encoding: Encoding) -> anyhow::Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let extension = path.extension().and_then(|e| e.to_str());
        let audio = decode(&bytes, extension)
            .map_err(|e| anyhow::anyhow!("decoding {}: {e}", path.display()))?;
        if audio.frames() == 0 {
            bail!("{} holds no audio", path.display());
        }
        let samples = resample(&audio.mono(), audio.sample_rate, encoding.sample_rate());
        let rate = encoding.sample_rate();
        let speech = trim_silence(&samples, (rate as u64 * FRAME_MS / 1000) as usize);
        if speech.is_empty() {
            bail!("{} holds only silence", path.display());
        }
        Ok(Self::from_samples(&speech, encoding))
    }

    /// Frames of `samples` (mono, -1..1, already at the encoding's rate).
    pub fn from_samples(samples: &[f32], encoding: Encoding) -> Self {
        let pcm: Vec<i16> = samples
            .iter()
            .map(|s| (s.clamp(-1.0, 1.0) * 32767.0) as i16)
            .collect();
        let bytes: Vec<u8> = match encoding {
            Encoding::Mulaw8k => pcm.iter().map(|&s| mulaw::encode(s)).collect(),
            Encoding::Pcm16(_) => pcm.iter().flat_map(|s| s.to_le_bytes()).collect(),
        };
        let silence = encoding.silence();
        let frames = bytes
            .chunks(encoding.frame_bytes())
            .map(|chunk| {
                let mut frame = chunk.to_vec();
                frame.extend_from_slice(&silence[chunk.len()..]);
                frame
            })
            .collect();
        Self {
            frames: Arc::new(frames),
            silence: Arc::new(silence),
        }
    }

    /// Length of the utterance in ms.
    pub fn duration_ms(&self) -> u64 {
        self.frames.len() as u64 * FRAME_MS
    }
}

/// The utterance without the silence before and after it, one frame of margin kept each
/// side: the caller's turn ends when its speech does, as it would on a phone. Speech from the
/// very first sample gets a frame of silence before it, so the first frame is always quiet: a
/// caller sends each frame at the start of its slot, so the speech begins on the caller's
/// side when that first frame is due, which is when a barge-in is timed from.
fn trim_silence(samples: &[f32], frame: usize) -> Vec<f32> {
    let energy: Vec<f32> = samples
        .chunks(frame)
        .map(|c| c.iter().map(|s| s * s).sum::<f32>() / c.len() as f32)
        .collect();
    let loudest = energy.iter().copied().fold(0.0, f32::max);
    // 26 dB under the loudest frame, and never below a floor that room noise stays under.
    let threshold = (loudest * 0.0025).max(1e-6);
    let Some(first) = energy.iter().position(|&e| e > threshold) else {
        return Vec::new();
    };
    let last = energy.iter().rposition(|&e| e > threshold).unwrap_or(first);
    let start = first.saturating_sub(1) * frame;
    let end = ((last + 2) * frame).min(samples.len());
    let mut trimmed = Vec::with_capacity(frame + end - start);
    if first == 0 {
        trimmed.resize(frame, 0.0);
    }
    trimmed.extend_from_slice(&samples[start..end]);
    trimmed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_around_the_utterance_is_trimmed() {
        let mut samples = vec![0.0f32; 1_600];
        samples.extend((0..1_600).map(|i| (i as f32 * 0.3).sin() * 0.5));
        samples.extend(vec![0.0005f32; 3_200]);
        let speech = trim_silence(&samples, 160);
        // One 20 ms frame of margin either side of the 200 ms of tone.
        assert_eq!(speech.len(), 1_600 + 320);
        assert!(trim_silence(&[0.0; 800], 160).is_empty());
        // Speech from the first sample: a frame of silence is put before it.
        let speech = trim_silence(&samples[1_600..], 160);
        assert_eq!(speech.len(), 160 + 1_600 + 160);
        assert!(speech[..160].iter().all(|&s| s == 0.0));
        assert_eq!(&speech[160..1_760], &samples[1_600..3_200]);
    }

    #[test]
    fn frames_are_twenty_milliseconds_and_the_tail_is_padded() {
        let samples = vec![0.25f32; 8_000 + 100];
        let speech = CallerSpeech::from_samples(&samples, Encoding::Mulaw8k);
        assert_eq!(speech.frames.len(), 51);
        assert!(speech.frames.iter().all(|f| f.len() == 160));
        assert_eq!(speech.frames[50][99], mulaw::encode(8191));
        assert_eq!(speech.frames[50][100], mulaw::SILENCE);

        let speech = CallerSpeech::from_samples(&vec![0.0; 16_000], Encoding::Pcm16(16_000));
        assert_eq!(speech.frames.len(), 50);
        assert!(speech.frames.iter().all(|f| f.len() == 640));
        assert_eq!(Encoding::Pcm16(16_000).ms_of(640), 20.0);
        assert_eq!(Encoding::Mulaw8k.ms_of(160), 20.0);
    }
}
