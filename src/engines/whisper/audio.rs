//! Audio files to what the recogniser takes: any container and codec symphonia reads,
//! decoded to f32, down-mixed (or split by channel) and resampled to 16 kHz with a
//! windowed-sinc polyphase filter. Used by the `transcribe` command, the tests and the
//! benchmarks.

use std::path::Path;

use crate::media::pcm::{MediaError, MAX_DURATION_SECONDS};
use crate::media::sink::check_format;
use switchboard_actors::engine::{EngineError, STT_SAMPLE_RATE};
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;

/// Zero crossings of the sinc kernel on each side (at the output rate when downsampling).
const SINC_ZERO_CROSSINGS: usize = 24;
/// Passband edge as a fraction of the lower Nyquist frequency.
const CUTOFF: f64 = 0.94;
/// Polyphase tables larger than this many phases are computed on the fly instead.
const MAX_PHASES: usize = 4096;

/// Decoded audio: one sample vector per channel, at `sample_rate`.
pub struct DecodedAudio {
    pub channels: Vec<Vec<f32>>,
    pub sample_rate: u32,
}

impl DecodedAudio {
    /// The channels averaged into one, at 16 kHz.
    pub fn mono_16k(&self) -> Vec<f32> {
        let frames = self.channels.iter().map(Vec::len).min().unwrap_or(0);
        let count = self.channels.len().max(1) as f32;
        let mono: Vec<f32> = (0..frames)
            .map(|i| self.channels.iter().map(|c| c[i]).sum::<f32>() / count)
            .collect();
        resample(&mono, self.sample_rate, STT_SAMPLE_RATE)
    }

    /// One channel at 16 kHz.
    pub fn channel_16k(&self, channel: usize) -> Option<Vec<f32>> {
        self.channels
            .get(channel)
            .map(|c| resample(c, self.sample_rate, STT_SAMPLE_RATE))
    }
}

fn invalid(path: &Path, err: impl std::fmt::Display) -> EngineError {
    EngineError::invalid(format!("cannot decode {}: {err}", path.display()))
}

/// Decodes the default audio track of a file. Sample rates and channel counts are checked
/// as uploads' are (`media::sink::check_format`), and so is the duration cap.
pub fn decode_file(path: &Path) -> Result<DecodedAudio, EngineError> {
    let file = std::fs::File::open(path).map_err(|err| invalid(path, err))?;
    let stream = MediaSourceStream::new(Box::new(file), Default::default());
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    let mut format = symphonia::default::get_probe()
        .probe(
            &hint,
            stream,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|err| invalid(path, err))?;
    let track = format
        .default_track(TrackType::Audio)
        .ok_or_else(|| invalid(path, "no audio track"))?;
    let track_id = track.id;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .ok_or_else(|| invalid(path, "the track has no audio parameters"))?
        .clone();
    // Implausible headers are refused before a decoder or resampler is sized from them.
    if let Some(rate) = params.sample_rate {
        let count = params.channels.as_ref().map_or(1, |c| c.count());
        check_format(rate, count).map_err(|err| invalid(path, err))?;
    }
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|err| invalid(path, err))?;
    let mut channels: Vec<Vec<f32>> = Vec::new();
    let mut sample_rate = params.sample_rate.unwrap_or(0);
    let mut planes: Vec<Vec<f32>> = Vec::new();
    loop {
        let packet = match format.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            Err(SymphoniaError::IoError(err))
                if err.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                break
            }
            Err(err) => return Err(invalid(path, err)),
        };
        if packet.track_id != track_id {
            continue;
        }
        match decoder.decode(&packet) {
            Ok(buffer) => {
                sample_rate = buffer.spec().rate();
                check_format(sample_rate, buffer.spec().channels().count())
                    .map_err(|err| invalid(path, err))?;
                buffer.copy_to_vecs_planar::<f32>(&mut planes);
                if channels.len() < planes.len() {
                    channels.resize(planes.len(), Vec::new());
                }
                for (all, plane) in channels.iter_mut().zip(&planes) {
                    all.extend_from_slice(plane);
                }
                if channels.first().map_or(0, Vec::len) as u64
                    > MAX_DURATION_SECONDS * sample_rate as u64
                {
                    return Err(invalid(path, MediaError::TooLong));
                }
            }
            // A damaged packet is skipped, as players do.
            Err(SymphoniaError::DecodeError(_)) => continue,
            Err(err) => return Err(invalid(path, err)),
        }
    }
    if sample_rate == 0 || channels.is_empty() {
        return Err(invalid(path, "no audio decoded"));
    }
    Ok(DecodedAudio {
        channels,
        sample_rate,
    })
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Resamples with a Blackman-windowed sinc low-pass at 94% of the lower Nyquist frequency.
pub fn resample(input: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || input.is_empty() || from == 0 || to == 0 {
        return input.to_vec();
    }
    let g = gcd(from as u64, to as u64);
    let (up, down) = (to as u64 / g, from as u64 / g);
    let ratio = to as f64 / from as f64;
    let cutoff = CUTOFF * ratio.min(1.0);
    // Half-width of the kernel in input samples.
    let half = (SINC_ZERO_CROSSINGS as f64 / cutoff).ceil() as i64;
    let kernel = |x: f64| -> f64 {
        let t = x / half as f64;
        if t.abs() >= 1.0 {
            return 0.0;
        }
        let window = 0.42
            + 0.5 * (std::f64::consts::PI * t).cos()
            + 0.08 * (2.0 * std::f64::consts::PI * t).cos();
        let arg = std::f64::consts::PI * cutoff * x;
        let sinc = if arg.abs() < 1e-12 {
            1.0
        } else {
            arg.sin() / arg
        };
        cutoff * sinc * window
    };
    let taps = (2 * half + 1) as usize;
    let table: Option<Vec<f32>> = (up as usize <= MAX_PHASES).then(|| {
        let mut t = vec![0f32; up as usize * taps];
        for phase in 0..up as usize {
            let frac = phase as f64 / up as f64;
            for k in 0..taps {
                t[phase * taps + k] = kernel(frac - (k as i64 - half) as f64) as f32;
            }
        }
        t
    });
    let out_len = (input.len() as u64 * up).div_ceil(down) as usize;
    let n = input.len() as i64;
    (0..out_len)
        .map(|j| {
            let pos = j as u64 * down;
            let centre = (pos / up) as i64;
            let phase = (pos % up) as usize;
            let frac = phase as f64 / up as f64;
            let lo = centre - half;
            if let (Some(t), true) = (&table, lo >= 0 && lo + taps as i64 <= n) {
                // Interior samples: a plain dot product the compiler vectorises.
                let lo = lo as usize;
                return dot(&input[lo..lo + taps], &t[phase * taps..(phase + 1) * taps]);
            }
            let mut acc = 0f32;
            for k in 0..taps {
                let idx = lo + k as i64;
                if idx < 0 || idx >= n {
                    continue;
                }
                let weight = match &table {
                    Some(t) => t[phase * taps + k],
                    None => kernel(frac - (k as i64 - half) as f64) as f32,
                };
                acc += input[idx as usize] * weight;
            }
            acc
        })
        .collect()
}

/// A dot product in eight independent lanes.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(freq: f32, rate: u32, seconds: f32) -> Vec<f32> {
        (0..(rate as f32 * seconds) as usize)
            .map(|i| (2.0 * std::f32::consts::PI * freq * i as f32 / rate as f32).sin())
            .collect()
    }

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
    }

    #[test]
    fn resampling_keeps_the_passband_and_removes_aliases() {
        // 1 kHz passes from 44.1 kHz to 16 kHz at unchanged level.
        let out = resample(&tone(1000.0, 44_100, 1.0), 44_100, 16_000);
        assert_eq!(out.len(), 16_000);
        let level = rms(&out[1000..15_000]);
        assert!(
            (level - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.01,
            "{level}"
        );
        // 12 kHz is above the new Nyquist frequency and must vanish.
        let out = resample(&tone(12_000.0, 44_100, 1.0), 44_100, 16_000);
        assert!(rms(&out[1000..15_000]) < 0.01);
    }

    #[test]
    fn decodes_the_fixtures() {
        let dir = Path::new(crate::engines::whisper::FIXTURES_DIR);
        let jfk = decode_file(&dir.join("jfk.flac")).unwrap();
        assert_eq!(jfk.sample_rate, 44_100);
        assert_eq!(jfk.channels.len(), 2);
        let mono = jfk.mono_16k();
        assert!((mono.len() as f32 / 16_000.0 - 11.0).abs() < 0.1);
        let err = decode_file(&dir.join("README.md")).err().unwrap();
        assert_eq!(
            err.kind,
            switchboard_actors::engine::EngineErrorKind::InvalidInput
        );
    }
}
