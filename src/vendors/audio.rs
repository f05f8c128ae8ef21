//! Audio as vendors take and give it: whole clips for file transcription (16 kHz WAV
//! uploads), and raw PCM16 or µ-law bytes turned into speech chunks as they stream in (an odd
//! byte left over waits for the next).

use std::future::Future;
use std::sync::Arc;

use switchboard_actors::audio::mulaw;
use switchboard_actors::engine::{
    EngineError, EngineFuture, SpeechChunk, TranscribeOptions, Transcript, STT_SAMPLE_RATE,
};

use super::http::Endpoint;

/// A whole clip for a vendor's file transcription: 16 kHz mono samples in [-1, 1].
pub struct Clip {
    samples: Arc<[f32]>,
}

impl Clip {
    /// Its length in seconds.
    pub fn seconds(&self) -> f32 {
        self.samples.len() as f32 / STT_SAMPLE_RATE as f32
    }

    /// The clip as a 16 kHz WAV file.
    pub fn wav(&self) -> Vec<u8> {
        wav_16k(&self.samples)
    }
}

/// A file transcription as `SpeechToText::transcribe` answers it: `recognize` run with its
/// own copy of the endpoint, the clip and the options.
pub fn transcribe_clip<F, Fut>(
    endpoint: &Endpoint,
    samples: Arc<[f32]>,
    options: TranscribeOptions,
    recognize: F,
) -> EngineFuture<Transcript>
where
    F: FnOnce(Endpoint, Clip, TranscribeOptions) -> Fut,
    Fut: Future<Output = Result<Transcript, EngineError>> + Send + 'static,
{
    Box::pin(recognize(endpoint.clone(), Clip { samples }, options))
}

/// `SpeechToText` for a vendor adapter (a struct with a public `endpoint`) whose whole clips go
/// through `$recognize`, an `async fn(Endpoint, Clip, TranscribeOptions)` (see
/// [`transcribe_clip`]); the trait's other methods it overrides (a live recogniser's) follow
/// in braces.
macro_rules! clip_recognizer {
    ($adapter:ty, $recognize:expr $(, { $($more:tt)* })?) => {
        impl switchboard_actors::engine::SpeechToText for $adapter {
            fn provider(&self) -> &str {
                &self.endpoint.vendor
            }

            fn transcribe(
                &self,
                audio: std::sync::Arc<[f32]>,
                options: switchboard_actors::engine::TranscribeOptions,
            ) -> switchboard_actors::engine::EngineFuture<switchboard_actors::engine::Transcript> {
                $crate::vendors::audio::transcribe_clip(&self.endpoint, audio, options, $recognize)
            }

            $($($more)*)?
        }
    };
}
pub(crate) use clip_recognizer;

/// The multipart `file` part of a WAV upload: `audio.wav`, `audio/wav`.
pub fn wav_part(wav: Vec<u8>) -> reqwest::multipart::Part {
    reqwest::multipart::Part::bytes(wav)
        .file_name("audio.wav")
        .mime_str("audio/wav")
        .expect("a valid media type")
}

/// A RIFF WAVE file, PCM 16-bit mono at 16 kHz, of `samples` in [-1, 1].
pub fn wav_16k(samples: &[f32]) -> Vec<u8> {
    let data_len = (samples.len() * 2) as u32;
    let mut wav = Vec::with_capacity(44 + samples.len() * 2);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&STT_SAMPLE_RATE.to_le_bytes());
    wav.extend_from_slice(&(STT_SAMPLE_RATE * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    // Sized once and filled in place: pushing two bytes at a time checked the capacity for
    // every sample and kept the loop from being vectorised (a whole utterance per turn).
    let header = wav.len();
    wav.resize(header + samples.len() * 2, 0);
    for (out, &sample) in wav[header..].chunks_exact_mut(2).zip(samples) {
        let value = (sample.clamp(-1.0, 1.0) * i16::MAX as f32) as i16;
        out.copy_from_slice(&value.to_le_bytes());
    }
    wav
}

/// How a vendor's raw audio bytes are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawEncoding {
    /// Signed 16-bit little-endian.
    Pcm16,
    /// G.711 µ-law, one byte a sample.
    Mulaw,
}

/// What to ask a vendor for: µ-law 8 kHz on a phone call (played as it comes, nothing
/// resampled), else PCM16 at the playback rate when the vendor offers it (`pcm_rates`), else
/// PCM16 at `default_rate`.
pub fn output_for(rate: Option<u32>, pcm_rates: &[u32], default_rate: u32) -> (RawEncoding, u32) {
    match rate {
        Some(8_000) => (RawEncoding::Mulaw, 8_000),
        Some(rate) if pcm_rates.contains(&rate) => (RawEncoding::Pcm16, rate),
        _ => (RawEncoding::Pcm16, default_rate),
    }
}

/// [`output_for`] a vendor that offers the usual rates: PCM16 at 16, 22.05, 44.1 or 48 kHz,
/// else at 24 kHz (µ-law 8 kHz on a phone call).
pub fn usual_output(rate: Option<u32>) -> (RawEncoding, u32) {
    output_for(rate, &[16_000, 22_050, 44_100, 48_000], 24_000)
}

/// Turns a raw audio byte stream into speech chunks of at least `min_samples` each.
pub struct RawAudioChunker {
    encoding: RawEncoding,
    sample_rate: u32,
    min_samples: usize,
    odd_byte: Option<u8>,
    samples: Vec<f32>,
    text: Option<String>,
}

impl RawAudioChunker {
    /// `text` goes with the first chunk (the words this audio speaks).
    pub fn new(encoding: RawEncoding, sample_rate: u32, text: String) -> Self {
        RawAudioChunker {
            encoding,
            sample_rate,
            // The first chunk goes as soon as one 20 ms phone frame is in, so the vendor's first
            // audio is not held back; later ones gather 100 ms to keep the overhead low.
            min_samples: (sample_rate as usize / 50).max(1),
            odd_byte: None,
            samples: Vec::new(),
            text: Some(text),
        }
    }

    /// Adds bytes; answers a chunk when enough audio has gathered.
    pub fn push(&mut self, bytes: &[u8]) -> Option<SpeechChunk> {
        match self.encoding {
            RawEncoding::Mulaw => self
                .samples
                .extend(bytes.iter().map(|&b| mulaw::decode(b) as f32 / 32768.0)),
            RawEncoding::Pcm16 => {
                let mut bytes = bytes;
                if let Some(low) = self.odd_byte.take() {
                    if let Some((&high, rest)) = bytes.split_first() {
                        self.samples
                            .push(i16::from_le_bytes([low, high]) as f32 / 32768.0);
                        bytes = rest;
                    } else {
                        self.odd_byte = Some(low);
                    }
                }
                let pairs = bytes.chunks_exact(2);
                if let [last] = pairs.remainder() {
                    self.odd_byte = Some(*last);
                }
                self.samples.extend(
                    pairs.map(|pair| i16::from_le_bytes([pair[0], pair[1]]) as f32 / 32768.0),
                );
            }
        }
        (self.samples.len() >= self.min_samples).then(|| self.take())
    }

    /// The words this audio speaks, for a stream that makes its chunks itself.
    pub fn into_text(self) -> String {
        self.text.unwrap_or_default()
    }

    /// The audio still held when the stream ends.
    pub fn finish(mut self) -> Option<SpeechChunk> {
        (!self.samples.is_empty()).then(|| self.take())
    }

    fn take(&mut self) -> SpeechChunk {
        self.min_samples = (self.sample_rate as usize / 10).max(1);
        SpeechChunk {
            samples: std::mem::take(&mut self.samples),
            sample_rate: self.sample_rate,
            text: self.text.take().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcm_split_mid_sample_is_reassembled() {
        let samples: Vec<i16> = (0..4000).map(|i| (i * 7) as i16).collect();
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        let mut chunker = RawAudioChunker::new(RawEncoding::Pcm16, 24_000, "hi".into());
        let mut out = Vec::new();
        for piece in bytes.chunks(333) {
            out.extend(chunker.push(piece));
        }
        out.extend(chunker.finish());
        assert_eq!(out[0].text, "hi");
        assert!(out[1..].iter().all(|c| c.text.is_empty()));
        let back: Vec<i16> = out
            .iter()
            .flat_map(|c| c.samples.iter().map(|s| (s * 32768.0).round() as i16))
            .collect();
        assert_eq!(back, samples);
    }

    #[test]
    fn wav_header_describes_16k_mono_pcm() {
        let wav = wav_16k(&[0.0, 0.5, -0.5]);
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 16_000);
        assert_eq!(wav.len(), 44 + 6);
        assert_eq!(
            u32::from_le_bytes(wav[40..44].try_into().unwrap()),
            6,
            "data size"
        );
    }

    #[test]
    fn wav_samples_are_scaled_clamped_little_endian() {
        let wav = wav_16k(&[0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 1e-6]);
        let samples: Vec<i16> = wav[44..]
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(
            samples,
            [0, 16_383, -16_383, 32_767, -32_767, 32_767, -32_767, 0]
        );
    }
}
