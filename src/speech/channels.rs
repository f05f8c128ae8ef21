//! Which channels of a recording carry the same voice. A file saved as stereo from one
//! microphone (the two channels near-identical, or one a delayed or quieter copy of the other)
//! is one voice and is transcribed once; a call recording with one party per channel is two
//! voices and each is transcribed on its own.
//!
//! The decision is made on the channels' loudness envelopes, not their samples: the level of
//! each 20 ms frame in dB, compared by correlation while allowing one channel to lag the other
//! by up to 100 ms. Two channels whose envelopes match at [`SAME_VOICE_MATCH`] or better are
//! one voice (the stereo JFK recording matches at 0.9999, the two readers of the stereo
//! diarization recording at 0.21). A channel more than [`SILENT_BELOW_DB`] quieter than the
//! loudest is taken as silent and belongs to no voice.

/// Frames of this many milliseconds make the loudness envelope.
pub const FRAME_MS: u32 = 20;
/// How far one channel may lag the other and still be the same voice.
pub const MAX_LAG_MS: u32 = 100;
/// Envelope correlation from which two channels are one voice.
pub const SAME_VOICE_MATCH: f32 = 0.8;
/// A channel this many dB below the loudest one is silent.
pub const SILENT_BELOW_DB: f32 = 40.0;
/// Frames are floored this many dB under their channel's loudest frame, so the noise floor
/// of quiet passages (or digital silence) does not weigh in the correlation.
const ENVELOPE_RANGE_DB: f32 = 60.0;
/// Below this level (dBFS) a whole recording is silence: nothing to tell apart.
const DIGITAL_SILENCE_DB: f32 = -100.0;
/// Fewer frames than this (100 ms) are too short to tell voices apart.
const MIN_FRAMES: usize = 5;

/// The channels grouped by voice: each group lists channel indices in order, the groups in the
/// order of their first channel. A recording with one voice (or none) is one group of every
/// channel that is not silent; with several voices, silent channels are in no group.
/// `channels` are the decoded channels at `sample_rate`, all the same length.
pub fn voices(channels: &[Vec<f32>], sample_rate: u32) -> Vec<Vec<usize>> {
    let all = || vec![(0..channels.len()).collect::<Vec<_>>()];
    if channels.len() < 2 {
        return all();
    }
    let levels: Vec<f32> = channels.iter().map(|c| level_db(c)).collect();
    let loudest = levels.iter().copied().fold(f32::MIN, f32::max);
    if loudest < DIGITAL_SILENCE_DB {
        return all();
    }
    let audible: Vec<usize> = (0..channels.len())
        .filter(|&i| levels[i] >= loudest - SILENT_BELOW_DB)
        .collect();
    let frame = (sample_rate * FRAME_MS / 1000).max(1) as usize;
    let max_lag = (MAX_LAG_MS / FRAME_MS) as usize;
    let envelopes: Vec<Vec<f32>> = audible
        .iter()
        .map(|&i| envelope(&channels[i], frame))
        .collect();
    if envelopes.first().map_or(0, Vec::len) < MIN_FRAMES {
        return vec![audible];
    }
    // Each channel joins the first voice whose first channel it matches, else starts one.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (position, &channel) in audible.iter().enumerate() {
        let joined = groups.iter_mut().find(|group| {
            let first = audible.iter().position(|&c| c == group[0]).unwrap_or(0);
            envelope_match(&envelopes[first], &envelopes[position], max_lag) >= SAME_VOICE_MATCH
        });
        match joined {
            Some(group) => group.push(channel),
            None => groups.push(vec![channel]),
        }
    }
    groups
}

/// The whole channel's level in dBFS (mean power).
fn level_db(samples: &[f32]) -> f32 {
    let power = samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32;
    10.0 * power.max(1e-15).log10()
}

/// The level of each `frame`-sample frame in dB, floored [`ENVELOPE_RANGE_DB`] under the
/// loudest frame.
pub fn envelope(samples: &[f32], frame: usize) -> Vec<f32> {
    let mut levels: Vec<f32> = samples.chunks_exact(frame.max(1)).map(level_db).collect();
    let peak = levels.iter().copied().fold(f32::MIN, f32::max);
    for level in &mut levels {
        *level = level.max(peak - ENVELOPE_RANGE_DB);
    }
    levels
}

/// The best correlation of two envelopes with `b` shifted by up to `max_lag` frames either
/// way (1 for envelopes that differ only by a gain and a delay).
pub fn envelope_match(a: &[f32], b: &[f32], max_lag: usize) -> f32 {
    let n = a.len().min(b.len());
    let max_lag = max_lag.min(n.saturating_sub(MIN_FRAMES));
    let mut best = f32::MIN;
    for lag in 0..=max_lag {
        // `b` later than `a`, then earlier.
        best = best.max(correlation(&a[..n - lag], &b[lag..n]));
        best = best.max(correlation(&a[lag..n], &b[..n - lag]));
    }
    best
}

/// Pearson correlation; two flat envelopes are the same, one flat and one not are unrelated.
fn correlation(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    if n == 0 {
        return 0.0;
    }
    let mean = |x: &[f32]| x[..n].iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
    let (mean_a, mean_b) = (mean(a), mean(b));
    let (mut cov, mut var_a, mut var_b) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a[..n].iter().zip(&b[..n]) {
        let (dx, dy) = (f64::from(x) - mean_a, f64::from(y) - mean_b);
        cov += dx * dy;
        var_a += dx * dx;
        var_b += dy * dy;
    }
    const FLAT: f64 = 1e-6;
    match (var_a / n as f64 <= FLAT, var_b / n as f64 <= FLAT) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        (false, false) => (cov / (var_a * var_b).sqrt()) as f32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 16_000;

    /// Syllable-like bursts: a tone switched on and off with a pseudo-random rhythm drawn
    /// from `seed`, so two seeds speak at different times.
    fn talker(seed: u64, hz: f32, seconds: f32) -> Vec<f32> {
        let mut state = seed;
        let mut on = false;
        let mut left = 0usize;
        (0..(RATE as f32 * seconds) as usize)
            .map(|i| {
                if left == 0 {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    on = !on;
                    left = RATE as usize / 20 + (state >> 33) as usize % (RATE as usize / 3);
                }
                left -= 1;
                let t = i as f32 / RATE as f32;
                if on {
                    (2.0 * std::f32::consts::PI * hz * t).sin() * 0.3
                } else {
                    0.0
                }
            })
            .collect()
    }

    fn delayed(samples: &[f32], by: usize, gain: f32) -> Vec<f32> {
        let mut out = vec![0.0; by];
        out.extend(samples[..samples.len() - by].iter().map(|s| s * gain));
        out
    }

    #[test]
    fn a_copy_quieter_and_late_by_up_to_100_ms_is_the_same_voice() {
        let voice = talker(7, 180.0, 4.0);
        // 60 ms late and 12 dB quieter.
        let copy = delayed(&voice, RATE as usize * 60 / 1000, 0.25);
        let score = envelope_match(&envelope(&voice, 320), &envelope(&copy, 320), 5);
        assert!(score > 0.95, "{score}");
        assert_eq!(voices(&[voice, copy], RATE), vec![vec![0, 1]]);
    }

    #[test]
    fn two_people_talking_at_different_times_are_two_voices() {
        let (left, right) = (talker(1, 120.0, 4.0), talker(2, 220.0, 4.0));
        let score = envelope_match(&envelope(&left, 320), &envelope(&right, 320), 5);
        assert!(score < SAME_VOICE_MATCH, "{score}");
        assert_eq!(voices(&[left, right], RATE), vec![vec![0], vec![1]]);
    }

    #[test]
    fn a_silent_or_far_quieter_channel_is_ignored() {
        let voice = talker(3, 150.0, 2.0);
        assert_eq!(
            voices(&[vec![0.0; voice.len()], voice.clone()], RATE),
            vec![vec![1]]
        );
        // Another voice 50 dB down is hum, not a party to the call.
        let faint: Vec<f32> = talker(4, 300.0, 2.0).iter().map(|s| s * 0.003).collect();
        assert_eq!(voices(&[voice, faint], RATE), vec![vec![0]]);
    }

    #[test]
    fn mono_silence_and_short_files_stay_one_group() {
        assert_eq!(voices(&[talker(5, 100.0, 1.0)], RATE), vec![vec![0]]);
        assert_eq!(
            voices(&[vec![0.0; 16_000], vec![0.0; 16_000]], RATE),
            vec![vec![0, 1]]
        );
        let (a, b) = (talker(1, 120.0, 0.05), talker(2, 220.0, 0.05));
        assert_eq!(voices(&[a, b], RATE), vec![vec![0, 1]]);
    }

    /// The fixtures' two channels at 16 kHz, as transcription decodes them.
    fn fixture_channels(name: &str) -> Vec<Vec<f32>> {
        let path = std::path::Path::new(crate::engines::whisper::FIXTURES_DIR).join(name);
        let bytes = std::fs::read(&path).unwrap();
        let target = crate::speech::transcription::TRANSCRIPTION_TARGET;
        crate::media::decode_to(&bytes, None, target)
            .unwrap()
            .channels
    }

    #[test]
    fn the_recorded_fixtures_are_one_voice_and_two() {
        let max_lag = (MAX_LAG_MS / FRAME_MS) as usize;
        let frame = (RATE * FRAME_MS / 1000) as usize;
        let score = |channels: &[Vec<f32>]| {
            envelope_match(
                &envelope(&channels[0], frame),
                &envelope(&channels[1], frame),
                max_lag,
            )
        };
        // One speaker saved as stereo.
        let jfk = fixture_channels("jfk.flac");
        let same = score(&jfk);
        assert!(same > 0.99, "jfk.flac: {same}");
        assert_eq!(voices(&jfk, RATE), vec![vec![0, 1]]);
        // One reader per channel.
        let call = fixture_channels("stereo_diarization.wav");
        let apart = score(&call);
        assert!(apart < 0.5, "stereo_diarization.wav: {apart}");
        assert_eq!(voices(&call, RATE), vec![vec![0], vec![1]]);
        eprintln!("envelope match: jfk.flac {same:.4}, stereo_diarization.wav {apart:.4}");
    }

    #[test]
    fn several_channels_are_grouped_by_voice() {
        let (a, b) = (talker(11, 120.0, 4.0), talker(12, 200.0, 4.0));
        let a_copy = delayed(&a, 80, 0.5);
        assert_eq!(
            voices(&[a, b.clone(), a_copy, b], RATE),
            vec![vec![0, 2], vec![1, 3]]
        );
    }
}
