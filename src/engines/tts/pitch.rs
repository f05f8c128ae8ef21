//! Pitch shifting for the neural voices, which have no pitch control of their own, keeping
//! the duration.
//!
//! Method: time-stretch, then resample. A WSOLA time stretch (waveform-similarity overlap-add:
//! Hann frames of 25 ms at 50 % overlap, each frame's input position searched within ±12.5 ms
//! of its nominal place for the best normalised cross-correlation with the natural
//! continuation of the previous frame) lengthens the audio by the pitch factor without
//! changing its pitch. Resampling the result by the same factor (a windowed-sinc interpolator
//! read from a precomputed table, its cut-off lowered when shifting up so nothing aliases)
//! brings it back to the original length with every frequency multiplied by the factor.
//!
//! Formants move with the pitch (there is no spectral-envelope correction), so large shifts
//! sound like a different-sized speaker; that is the usual trade-off of this method. A factor
//! of 1.0 returns the samples untouched.

/// The pitch factors accepted; anything outside is clamped.
pub const PITCH_RANGE: (f32, f32) = (0.5, 2.0);

/// Multiplies the pitch of `samples` by `factor`, keeping their number.
pub fn shift_pitch(samples: Vec<f32>, sample_rate: u32, factor: f32) -> Vec<f32> {
    let factor = if factor.is_finite() {
        factor.clamp(PITCH_RANGE.0, PITCH_RANGE.1)
    } else {
        1.0
    };
    if (factor - 1.0).abs() < 1e-3 || samples.len() < 4 {
        return samples;
    }
    let length = samples.len();
    let stretched = time_stretch(&samples, sample_rate, factor);
    resample(&stretched, factor, length)
}

/// Changes the duration of `samples` by `stretch` (2.0 = twice as long) keeping the pitch,
/// with WSOLA.
pub fn time_stretch(samples: &[f32], sample_rate: u32, stretch: f32) -> Vec<f32> {
    let hop = ((sample_rate as f32 * 0.0125).round() as usize).max(16);
    let frame = hop * 2;
    let tolerance = hop;
    let out_len = (samples.len() as f64 * f64::from(stretch)).round() as usize;
    let window: Vec<f32> = (0..frame)
        .map(|i| {
            let phase = std::f32::consts::TAU * i as f32 / frame as f32;
            0.5 - 0.5 * phase.cos()
        })
        .collect();
    let at = |index: isize| -> f32 {
        if index < 0 {
            0.0
        } else {
            samples.get(index as usize).copied().unwrap_or(0.0)
        }
    };
    let mut out = vec![0.0f32; out_len + frame];
    let mut weight = vec![0.0f32; out_len + frame];
    let mut previous: isize = 0;
    let mut k = 0usize;
    while k * hop < out_len {
        let nominal = ((k * hop) as f64 / f64::from(stretch)).round() as isize;
        let position = if k == 0 {
            0
        } else {
            let target = previous + hop as isize;
            let lowest = (nominal - tolerance as isize).max(0);
            let highest = (nominal + tolerance as isize).min(samples.len() as isize);
            let mut best = nominal.clamp(lowest, highest.max(lowest));
            let mut best_score = f32::MIN;
            // The overlap region is compared, every other sample: plenty for speech.
            for candidate in lowest..=highest.max(lowest) {
                let mut dot = 0.0f32;
                let mut energy = 1e-9f32;
                for j in (0..hop as isize).step_by(2) {
                    let a = at(candidate + j);
                    dot += a * at(target + j);
                    energy += a * a;
                }
                let score = dot / energy.sqrt();
                if score > best_score {
                    best_score = score;
                    best = candidate;
                }
            }
            best
        };
        let start = k * hop;
        for (j, w) in window.iter().enumerate() {
            out[start + j] += at(position + j as isize) * w;
            weight[start + j] += w;
        }
        previous = position;
        k += 1;
    }
    out.truncate(out_len);
    for (sample, w) in out.iter_mut().zip(&weight) {
        // Inside the signal the Hann frames sum to one; only the first half frame fades in.
        *sample /= w.max(0.5);
    }
    out
}

/// Reads `samples` at positions `n * step` for `n` in `0..length` with a windowed-sinc
/// interpolator whose cut-off is lowered to `1 / step` when `step > 1` (anti-aliasing).
pub fn resample(samples: &[f32], step: f32, length: usize) -> Vec<f32> {
    const HALF_TAPS: f32 = 12.0;
    const TABLE_STEPS: f32 = 256.0;
    let cutoff = if step > 1.0 { 1.0 / step } else { 1.0 };
    // The kernel spans HALF_TAPS zero crossings of the (possibly lowered) cut-off each side.
    let reach = HALF_TAPS / cutoff;
    let table_len = (reach * TABLE_STEPS).ceil() as usize + 2;
    let table: Vec<f32> = (0..table_len)
        .map(|i| {
            let x = i as f32 / TABLE_STEPS;
            if x >= reach {
                return 0.0;
            }
            let arg = std::f32::consts::PI * cutoff * x;
            let sinc = if arg.abs() < 1e-6 {
                1.0
            } else {
                arg.sin() / arg
            };
            // Blackman window over [-reach, reach].
            let r = x / reach;
            let window = 0.42
                + 0.5 * (std::f32::consts::PI * r).cos()
                + 0.08 * (std::f32::consts::TAU * r).cos();
            cutoff * sinc * window
        })
        .collect();
    let kernel = |distance: f32| -> f32 {
        let position = distance.abs() * TABLE_STEPS;
        let index = position as usize;
        if index + 1 >= table.len() {
            return 0.0;
        }
        let fraction = position - index as f32;
        table[index] + (table[index + 1] - table[index]) * fraction
    };
    let span = reach.ceil() as isize;
    (0..length)
        .map(|n| {
            let t = n as f64 * f64::from(step);
            let centre = t.floor() as isize;
            let fraction = (t - centre as f64) as f32;
            let mut sum = 0.0f32;
            for offset in -span..=span {
                let index = centre + offset;
                if index < 0 || index as usize >= samples.len() {
                    continue;
                }
                sum += samples[index as usize] * kernel(offset as f32 - fraction);
            }
            sum
        })
        .collect()
}

/// The fundamental frequency of the most periodic loud stretches of `samples`, by
/// normalised autocorrelation over 40 ms frames (median of the voiced ones), in Hz.
#[cfg(test)]
pub(crate) fn estimate_f0(samples: &[f32], sample_rate: u32) -> Option<f32> {
    let frame = (sample_rate as f32 * 0.04) as usize;
    let min_lag = (sample_rate / 500) as usize;
    let max_lag = (sample_rate / 60) as usize;
    let loudest = samples
        .chunks(frame)
        .map(|c| c.iter().map(|s| s * s).sum::<f32>() / c.len() as f32)
        .fold(0.0f32, f32::max);
    let mut estimates = Vec::new();
    for start in (0..samples.len().saturating_sub(frame + max_lag)).step_by(frame / 2) {
        let window = &samples[start..start + frame];
        let energy: f32 = window.iter().map(|s| s * s).sum::<f32>() / frame as f32;
        if energy < loudest * 0.2 {
            continue;
        }
        let correlation = |lag: usize| -> f32 {
            let other = &samples[start + lag..start + lag + frame];
            let dot: f32 = window.iter().zip(other).map(|(a, b)| a * b).sum();
            let norm: f32 = other.iter().map(|s| s * s).sum::<f32>() * energy * frame as f32;
            dot / norm.sqrt().max(1e-9)
        };
        let scores: Vec<f32> = (min_lag..=max_lag).map(correlation).collect();
        let best = scores.iter().copied().fold(f32::MIN, f32::max);
        if best < 0.6 {
            continue;
        }
        // The first local peak close to the best avoids picking a multiple of the period.
        let lag = (1..scores.len().saturating_sub(1))
            .find(|&i| {
                scores[i] >= 0.9 * best && scores[i] >= scores[i - 1] && scores[i] >= scores[i + 1]
            })
            .map_or(0, |i| i + min_lag);
        if lag > 0 {
            estimates.push(sample_rate as f32 / lag as f32);
        }
    }
    if estimates.is_empty() {
        return None;
    }
    estimates.sort_by(f32::total_cmp);
    Some(estimates[estimates.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 22_050;

    /// A buzzy tone (first five harmonics) at `f0`, like a sustained vowel.
    fn tone(f0: f32, seconds: f32) -> Vec<f32> {
        (0..(RATE as f32 * seconds) as usize)
            .map(|n| {
                let t = n as f32 / RATE as f32;
                (1..=5)
                    .map(|h| (std::f32::consts::TAU * f0 * h as f32 * t).sin() / h as f32)
                    .sum::<f32>()
                    * 0.3
            })
            .collect()
    }

    #[test]
    fn factor_one_leaves_samples_untouched() {
        let input = tone(120.0, 0.5);
        assert_eq!(shift_pitch(input.clone(), RATE, 1.0), input);
    }

    #[test]
    fn shifting_changes_f0_and_keeps_length() {
        let input = tone(130.0, 1.0);
        let f0 = estimate_f0(&input, RATE).unwrap();
        assert!((f0 - 130.0).abs() < 3.0, "{f0}");
        for (factor, expected) in [(2.0, 260.0), (0.5, 65.0), (1.5, 195.0)] {
            let shifted = shift_pitch(input.clone(), RATE, factor);
            assert_eq!(shifted.len(), input.len());
            let f0 = estimate_f0(&shifted[2000..], RATE).unwrap();
            assert!(
                (f0 - expected).abs() < expected * 0.05,
                "factor {factor}: {f0} Hz"
            );
            // The level is kept (no gaps or doubled overlap).
            let rms = |s: &[f32]| (s.iter().map(|x| x * x).sum::<f32>() / s.len() as f32).sqrt();
            let ratio = rms(&shifted[2000..20000]) / rms(&input[2000..20000]);
            assert!(
                (0.8..1.2).contains(&ratio),
                "factor {factor}: level {ratio}"
            );
        }
    }

    #[test]
    fn time_stretch_keeps_pitch() {
        let input = tone(150.0, 1.0);
        let stretched = time_stretch(&input, RATE, 1.7);
        assert_eq!(stretched.len(), (input.len() as f32 * 1.7).round() as usize);
        let f0 = estimate_f0(&stretched[2000..], RATE).unwrap();
        assert!((f0 - 150.0).abs() < 5.0, "{f0}");
    }
}
