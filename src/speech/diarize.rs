//! Who spoke when. Two methods, chosen by the audio:
//! - Several channels that differ (a call recording with the caller on one channel and the
//!   agent on the other): each channel is one speaker, `speaker_1` for the first channel.
//!   The caller transcribes each channel on its own and merges with [`merge_channels`].
//! - One channel: each transcript segment's voice pitch (median fundamental frequency of its
//!   voiced frames) is measured and the segments are split into two speakers by 1-D k-means on
//!   log pitch, but only when the two groups are clearly apart (at least
//!   [`MIN_SEPARATION_SEMITONES`]); otherwise every segment is `speaker_1`. This separates
//!   voices of different pitch (often a man and a woman); two similar voices stay one speaker.

use switchboard_actors::engine::{Transcript, TranscriptSegment};

/// Two pitch groups closer than this are taken as one voice.
pub const MIN_SEPARATION_SEMITONES: f32 = 4.0;
/// Channels whose samples differ by less than this (mean absolute difference) are copies.
const SAME_CHANNEL_TOLERANCE: f32 = 1e-3;

/// The label of the `index`-th speaker (0-based).
pub fn speaker_label(index: usize) -> String {
    format!("speaker_{}", index + 1)
}

/// True when the channels carry different signals (not a mono recording saved as stereo).
pub fn channels_differ(channels: &[Vec<f32>]) -> bool {
    let Some(first) = channels.first() else {
        return false;
    };
    channels[1..].iter().any(|other| {
        let n = first.len().min(other.len()).max(1);
        let diff: f32 = first.iter().zip(other).map(|(a, b)| (a - b).abs()).sum();
        diff / n as f32 > SAME_CHANNEL_TOLERANCE
    })
}

/// Merges per-channel transcripts into one, each segment labelled with its channel's speaker
/// and all segments and words in time order.
pub fn merge_channels(per_channel: Vec<Transcript>, duration: f32) -> Transcript {
    let (language, language_probability) = per_channel
        .iter()
        .find(|t| !t.text.trim().is_empty())
        .or(per_channel.first())
        .map(|t| (t.language.clone(), t.language_probability))
        .unwrap_or_default();
    let mut segments = Vec::new();
    let mut words = Vec::new();
    for (index, transcript) in per_channel.into_iter().enumerate() {
        for mut segment in transcript.segments {
            segment.speaker = Some(speaker_label(index));
            segments.push(segment);
        }
        words.extend(transcript.words);
    }
    segments.sort_by(|a, b| a.start.total_cmp(&b.start));
    words.sort_by(|a, b| a.start.total_cmp(&b.start));
    let text = join_text(&segments);
    Transcript {
        text,
        segments,
        words,
        language,
        language_probability,
        duration,
    }
}

/// Labels the segments of a mono transcript by voice pitch (see the module docs).
pub fn label_by_pitch(transcript: &mut Transcript, samples: &[f32], sample_rate: u32) {
    let pitches: Vec<Option<f32>> = transcript
        .segments
        .iter()
        .map(|segment| {
            let start = ((segment.start.max(0.0)) * sample_rate as f32) as usize;
            let end = ((segment.end.max(segment.start)) * sample_rate as f32) as usize;
            let slice = &samples[start.min(samples.len())..end.min(samples.len())];
            median_pitch(slice, sample_rate)
        })
        .collect();
    let groups = two_groups(&pitches);
    for (segment, group) in transcript.segments.iter_mut().zip(groups) {
        segment.speaker = Some(speaker_label(group));
    }
}

fn join_text(segments: &[TranscriptSegment]) -> String {
    segments
        .iter()
        .map(|s| s.text.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits segments into group 0 and 1 by log pitch, or all 0 when not clearly two voices.
/// Segments with no measurable pitch join the group of the segment before them.
fn two_groups(pitches: &[Option<f32>]) -> Vec<usize> {
    let logs: Vec<f32> = pitches.iter().flatten().map(|p| p.log2() * 12.0).collect();
    let all_one = vec![0; pitches.len()];
    if logs.len() < 2 {
        return all_one;
    }
    let (mut low, mut high) = logs
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    for _ in 0..20 {
        let (mut sum_low, mut n_low, mut sum_high, mut n_high) = (0.0, 0, 0.0, 0);
        for &v in &logs {
            if (v - low).abs() <= (v - high).abs() {
                sum_low += v;
                n_low += 1;
            } else {
                sum_high += v;
                n_high += 1;
            }
        }
        if n_low == 0 || n_high == 0 {
            return all_one;
        }
        low = sum_low / n_low as f32;
        high = sum_high / n_high as f32;
    }
    if high - low < MIN_SEPARATION_SEMITONES {
        return all_one;
    }
    // The first voice heard is speaker_1.
    let first_is_low = logs[0] - low <= high - logs[0];
    let mut previous = 0;
    pitches
        .iter()
        .map(|pitch| {
            let group = match pitch {
                Some(p) => {
                    let v = p.log2() * 12.0;
                    let is_low = (v - low).abs() <= (v - high).abs();
                    usize::from(is_low != first_is_low)
                }
                None => previous,
            };
            previous = group;
            group
        })
        .collect()
}

/// Median fundamental frequency over 40 ms frames with clear periodicity (normalised
/// autocorrelation peak above 0.5 in the 70-400 Hz range of speaking voices).
pub fn median_pitch(samples: &[f32], sample_rate: u32) -> Option<f32> {
    let frame = (sample_rate as usize * 40) / 1000;
    let hop = frame / 2;
    let min_lag = (sample_rate / 400) as usize;
    let max_lag = (sample_rate / 70) as usize;
    if frame == 0 || samples.len() < frame || max_lag >= frame {
        return None;
    }
    let mut found = Vec::new();
    let mut start = 0;
    while start + frame <= samples.len() {
        let window = &samples[start..start + frame];
        let energy: f32 = window.iter().map(|s| s * s).sum();
        if energy / frame as f32 > 1e-5 {
            let mut best = (0.0f32, 0usize);
            for lag in min_lag..=max_lag {
                let (mut num, mut e1, mut e2) = (0.0f32, 0.0f32, 0.0f32);
                for i in 0..frame - lag {
                    num += window[i] * window[i + lag];
                    e1 += window[i] * window[i];
                    e2 += window[i + lag] * window[i + lag];
                }
                let r = num / (e1 * e2).sqrt().max(1e-9);
                if r > best.0 {
                    best = (r, lag);
                }
            }
            if best.0 > 0.5 {
                found.push(sample_rate as f32 / best.1 as f32);
            }
        }
        start += hop;
    }
    if found.len() < 3 {
        return None;
    }
    found.sort_by(f32::total_cmp);
    Some(found[found.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voice(hz: f32, rate: u32, seconds: f32) -> Vec<f32> {
        // A buzzy periodic signal with harmonics, like a voiced vowel.
        (0..(rate as f32 * seconds) as usize)
            .map(|i| {
                let t = i as f32 / rate as f32;
                (1..6)
                    .map(|h| (2.0 * std::f32::consts::PI * hz * h as f32 * t).sin() / h as f32)
                    .sum::<f32>()
                    * 0.2
            })
            .collect()
    }

    fn segment(start: f32, end: f32) -> TranscriptSegment {
        TranscriptSegment {
            start,
            end,
            text: "words".into(),
            speaker: None,
            language: None,
        }
    }

    #[test]
    fn pitch_is_measured_on_voiced_audio() {
        let hz = median_pitch(&voice(120.0, 16_000, 1.0), 16_000).unwrap();
        assert!((hz - 120.0).abs() < 4.0, "{hz}");
        assert_eq!(median_pitch(&vec![0.0; 16_000], 16_000), None);
    }

    #[test]
    fn two_clearly_different_voices_become_two_speakers() {
        let rate = 16_000;
        let mut audio = voice(110.0, rate, 1.0);
        audio.extend(voice(220.0, rate, 1.0));
        audio.extend(voice(112.0, rate, 1.0));
        let mut transcript = Transcript {
            text: String::new(),
            segments: vec![segment(0.0, 1.0), segment(1.0, 2.0), segment(2.0, 3.0)],
            words: vec![],
            language: "en".into(),
            language_probability: None,
            duration: 3.0,
        };
        label_by_pitch(&mut transcript, &audio, rate);
        let speakers: Vec<_> = transcript
            .segments
            .iter()
            .map(|s| s.speaker.clone().unwrap())
            .collect();
        assert_eq!(speakers, ["speaker_1", "speaker_2", "speaker_1"]);
    }

    #[test]
    fn similar_voices_stay_one_speaker() {
        let rate = 16_000;
        let mut audio = voice(120.0, rate, 1.0);
        audio.extend(voice(130.0, rate, 1.0));
        let mut transcript = Transcript {
            text: String::new(),
            segments: vec![segment(0.0, 1.0), segment(1.0, 2.0)],
            words: vec![],
            language: "en".into(),
            language_probability: None,
            duration: 2.0,
        };
        label_by_pitch(&mut transcript, &audio, rate);
        assert!(transcript
            .segments
            .iter()
            .all(|s| s.speaker.as_deref() == Some("speaker_1")));
    }

    #[test]
    fn identical_channels_are_not_two_speakers() {
        let a = voice(120.0, 8_000, 0.5);
        assert!(!channels_differ(&[a.clone(), a.clone()]));
        assert!(channels_differ(&[a, voice(200.0, 8_000, 0.5)]));
    }
}
