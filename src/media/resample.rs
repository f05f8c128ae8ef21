//! Whole-clip sample-rate conversion between any two rates (22.05 kHz voices to 24 kHz
//! responses, 44.1 kHz uploads to the 16 kHz recognisers), with rubato's FFT resampler.

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

/// Input block length for the FFT resampler; long enough for a sharp anti-aliasing filter.
const CHUNK: usize = 1024;

/// Resamples mono `samples` from `from` Hz to `to` Hz. The output is aligned with the input
/// (the resampler's delay is trimmed) and has `len * to / from` samples, rounded up.
pub fn resample(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || samples.is_empty() || from == 0 || to == 0 {
        return samples.to_vec();
    }
    let resampled = Fft::<f32>::new(from as usize, to as usize, CHUNK, 1, FixedSync::Input)
        .ok()
        .and_then(|mut resampler| {
            let input = InterleavedSlice::new(samples, 1, samples.len()).ok()?;
            resampler
                .process_all(&input, samples.len(), None)
                .ok()
                .map(|out| out.take_data())
        });
    // Construction only fails for zero or absurd rates, which callers never pass; linear
    // interpolation keeps the function total if it ever does.
    resampled.unwrap_or_else(|| linear(samples, from, to))
}

fn linear(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    let out_len = (samples.len() as u64 * to as u64).div_ceil(from as u64) as usize;
    let step = from as f64 / to as f64;
    (0..out_len)
        .map(|i| {
            let position = i as f64 * step;
            let index = position as usize;
            let frac = (position - index as f64) as f32;
            let a = samples[index.min(samples.len() - 1)];
            let b = samples[(index + 1).min(samples.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(hz: f32, rate: u32, seconds: f32) -> Vec<f32> {
        (0..(rate as f32 * seconds) as usize)
            .map(|i| (2.0 * std::f32::consts::PI * hz * i as f32 / rate as f32).sin() * 0.5)
            .collect()
    }

    /// Frequency estimate from zero crossings: good enough to tell a tone survived.
    fn zero_crossing_hz(samples: &[f32], rate: u32) -> f32 {
        let crossings = samples
            .windows(2)
            .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
            .count();
        crossings as f32 / 2.0 / (samples.len() as f32 / rate as f32)
    }

    #[test]
    fn keeps_length_and_pitch_across_odd_rates() {
        for (from, to) in [
            (22_050, 24_000),
            (44_100, 16_000),
            (16_000, 48_000),
            (8_000, 22_050),
        ] {
            let input = tone(440.0, from, 1.0);
            let output = resample(&input, from, to);
            let expected = (input.len() as u64 * to as u64).div_ceil(from as u64) as i64;
            assert!(
                (output.len() as i64 - expected).abs() <= 1,
                "{from}->{to}: {} samples, expected {expected}",
                output.len()
            );
            let hz = zero_crossing_hz(&output[1000..output.len() - 1000], to);
            assert!(
                (hz - 440.0).abs() < 5.0,
                "{from}->{to}: tone came out at {hz} Hz"
            );
        }
    }

    #[test]
    fn equal_rates_and_empty_input_are_copies() {
        assert_eq!(resample(&[0.1, 0.2], 16_000, 16_000), vec![0.1, 0.2]);
        assert!(resample(&[], 44_100, 16_000).is_empty());
    }
}
