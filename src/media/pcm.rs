//! What decoding makes and what bounds it: [`DecodedAudio`] (PCM per channel), the limits a
//! file must keep to ([`MAX_CHANNELS`], [`MAX_DURATION_SECONDS`]) and [`MediaError`], shared
//! by the decoder, the PCM sink and the encoders.

/// At most this many channels are accepted; more is not speech audio.
pub const MAX_CHANNELS: usize = 8;
/// Longest audio accepted, so a small compressed file cannot expand into gigabytes of PCM.
pub const MAX_DURATION_SECONDS: u64 = 4 * 60 * 60;

/// Why audio could not be read (or written).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MediaError {
    /// The bytes are not a container or codec we can read.
    #[error("the audio could not be decoded: {0}")]
    Unsupported(String),
    /// The container was recognised but the data is damaged or empty.
    #[error("the audio file is damaged or empty: {0}")]
    Corrupt(String),
    /// The header declares a sample rate or channel count no recording has.
    #[error("the audio file declares {0}")]
    Implausible(String),
    #[error("the audio is longer than the {MAX_DURATION_SECONDS} s limit")]
    TooLong,
    /// Encoding failed (an encoder library refused its input).
    #[error("the audio could not be encoded: {0}")]
    Encode(String),
}

/// Decoded PCM: one f32 vector per channel, all the same length.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedAudio {
    pub sample_rate: u32,
    pub channels: Vec<Vec<f32>>,
}

impl DecodedAudio {
    pub fn frames(&self) -> usize {
        self.channels.first().map_or(0, Vec::len)
    }

    pub fn duration_seconds(&self) -> f32 {
        if self.sample_rate == 0 {
            return 0.0;
        }
        self.frames() as f32 / self.sample_rate as f32
    }

    /// The channels averaged into one.
    pub fn mono(&self) -> Vec<f32> {
        match self.channels.as_slice() {
            [] => Vec::new(),
            [only] => only.clone(),
            channels => {
                let scale = 1.0 / channels.len() as f32;
                (0..self.frames())
                    .map(|i| channels.iter().map(|c| c[i]).sum::<f32>() * scale)
                    .collect()
            }
        }
    }
}
