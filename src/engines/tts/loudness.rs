//! Loudness of synthesized speech: each sentence a neural voice renders is scaled so its
//! speech sits at one level, whatever the model's own output level. Piper's models come out
//! quiet and uneven (piper-tts scales each sentence's peak to full scale for that reason);
//! here the measure is the speech's RMS, so sentences match each other, with a ceiling on the
//! peak so nothing clips.
//!
//! The level is measured over 20 ms frames within [`GATE_DB`] of the sentence's loudest frame
//! (the model's lead-in and trailing silence and the pauses between words do not count), and
//! a gain above [`MAX_GAIN_DB`] is never applied, so near-silence is not raised into noise.
//!
//! A long first sentence is rendered clause by clause, so its first audio comes sooner; the
//! model puts its own silence before and after each piece, which at a comma would add up to
//! a pause no speaker makes. [`trim_silence`] keeps only a comma's worth of it.

/// Frames quieter than the loudest one by more than this are not speech.
pub const GATE_DB: f32 = 30.0;
/// The most a sentence is amplified.
pub const MAX_GAIN_DB: f32 = 24.0;
/// Where the peak may reach at most.
pub const PEAK_CEILING_DBFS: f32 = -1.0;

fn gain_of(db: f32) -> f32 {
    10f32.powf(db / 20.0)
}

/// The RMS, in dBFS, of the speech in `samples` at `sample_rate` (frames within [`GATE_DB`]
/// of the loudest); `None` for silence.
pub fn speech_level_dbfs(samples: &[f32], sample_rate: u32) -> Option<f32> {
    let frame = (sample_rate as usize / 50).max(1);
    let energies: Vec<f32> = samples
        .chunks(frame)
        .map(|chunk| chunk.iter().map(|s| s * s).sum::<f32>() / chunk.len() as f32)
        .collect();
    let loudest = energies.iter().copied().fold(0.0f32, f32::max);
    if loudest <= f32::EPSILON {
        return None;
    }
    let floor = loudest / gain_of(GATE_DB).powi(2);
    let (sum, count) = energies
        .iter()
        .filter(|&&e| e >= floor)
        .fold((0.0f32, 0usize), |(sum, n), e| (sum + e, n + 1));
    Some(10.0 * (sum / count as f32).log10())
}

/// Scales `samples` so their speech is at `target_dbfs` RMS, the peak at most
/// [`PEAK_CEILING_DBFS`] and the gain at most [`MAX_GAIN_DB`]. Silence is left as it is.
pub fn normalize(samples: &mut [f32], sample_rate: u32, target_dbfs: f32) {
    let Some(level) = speech_level_dbfs(samples, sample_rate) else {
        return;
    };
    let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let gain = gain_of(target_dbfs - level)
        .min(gain_of(PEAK_CEILING_DBFS) / peak)
        .min(gain_of(MAX_GAIN_DB));
    for sample in samples.iter_mut() {
        *sample *= gain;
    }
}

/// Samples quieter than the loudest one by more than this count as silence when trimming.
const TRIM_BELOW_DB: f32 = 40.0;

/// Cuts the silence at the start of `samples` to at most `keep_lead` samples and at the end
/// to at most `keep_trail` (`None`: that end is left as it is), silence being anything
/// [`TRIM_BELOW_DB`] under the peak.
pub fn trim_silence(samples: &mut Vec<f32>, keep_lead: Option<usize>, keep_trail: Option<usize>) {
    let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    if peak <= f32::EPSILON {
        return;
    }
    let floor = peak / gain_of(TRIM_BELOW_DB);
    if let Some(keep) = keep_trail {
        let last = samples.iter().rposition(|s| s.abs() > floor).unwrap_or(0);
        samples.truncate((last + 1 + keep).min(samples.len()));
    }
    if let Some(keep) = keep_lead {
        let first = samples.iter().position(|s| s.abs() > floor).unwrap_or(0);
        samples.drain(..first.saturating_sub(keep));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 22_050;

    /// A tone of `amplitude` for `seconds`, between two stretches of silence.
    fn tone(amplitude: f32, seconds: f32) -> Vec<f32> {
        let silence = vec![0.0; RATE as usize / 4];
        let tone = (0..(seconds * RATE as f32) as usize)
            .map(|i| amplitude * (i as f32 * 220.0 * std::f32::consts::TAU / RATE as f32).sin());
        silence
            .iter()
            .copied()
            .chain(tone)
            .chain(silence.iter().copied())
            .collect()
    }

    #[test]
    fn quiet_and_loud_sentences_come_out_at_the_same_level() {
        for amplitude in [0.05, 0.2, 0.6] {
            let mut samples = tone(amplitude, 1.0);
            normalize(&mut samples, RATE, -20.0);
            let level = speech_level_dbfs(&samples, RATE).unwrap();
            assert!((level + 20.0).abs() < 0.2, "{amplitude}: {level} dBFS");
            assert_eq!(samples[0], 0.0, "the silence stays silent");
        }
    }

    #[test]
    fn silence_is_cut_to_what_is_kept_at_either_end() {
        // A square wave (every sample loud, half a second) between two 250 ms silences.
        let quarter = RATE as usize / 4;
        // An even count, so the wave ends on its negative half.
        let speech = 11_000;
        let mut samples: Vec<f32> = std::iter::repeat_n(0.0, quarter)
            .chain((0..speech).map(|i| if i % 2 == 0 { 0.3 } else { -0.3 }))
            .chain(std::iter::repeat_n(0.0, quarter))
            .collect();
        trim_silence(&mut samples, Some(100), Some(300));
        assert_eq!(samples.len(), speech + 100 + 300);
        assert!(samples[..100].iter().all(|s| *s == 0.0));
        assert_eq!(samples[100], 0.3);
        assert_eq!(samples[100 + speech - 1], -0.3);
        // Less silence than asked to keep stays as it is.
        let before = samples.clone();
        trim_silence(&mut samples, Some(1000), Some(1000));
        assert_eq!(samples, before);
    }

    #[test]
    fn the_peak_is_held_under_the_ceiling_and_near_silence_is_not_raised_to_noise() {
        // A sine's crest factor is 3 dB: asked for -2 dBFS RMS, its peak would pass 0 dBFS.
        let mut samples = tone(0.1, 1.0);
        normalize(&mut samples, RATE, -2.0);
        let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!((peak - gain_of(PEAK_CEILING_DBFS)).abs() < 1e-3, "{peak}");

        let mut hiss = tone(1e-4, 1.0);
        normalize(&mut hiss, RATE, -20.0);
        let peak = hiss.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!(peak <= 1e-4 * gain_of(MAX_GAIN_DB) * 1.001, "{peak}");

        let mut silence = vec![0.0f32; 1000];
        normalize(&mut silence, RATE, -20.0);
        assert!(silence.iter().all(|s| *s == 0.0));
    }
}
