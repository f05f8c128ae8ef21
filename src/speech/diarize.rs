//! Who spoke when, and how the voices of a multi-channel recording become one transcript.
//! Two methods, chosen by the audio:
//! - Channels that carry different voices (a call recording with the caller on one channel
//!   and the agent on the other; `super::channels` decides): each voice is transcribed on its
//!   own and merged with [`merge_voices`]; with diarization each voice is one speaker,
//!   `speaker_1` for the first channel's.
//! - One voice (mono, or channels that carry the same voice): each transcript segment's voice
//!   pitch (median fundamental frequency of its voiced frames) is measured and the segments
//!   are split into two speakers by 1-D k-means on log pitch, but only when the two groups
//!   are clearly apart (at least [`MIN_SEPARATION_SEMITONES`]); otherwise every segment is
//!   `speaker_1`. This separates voices of different pitch (often a man and a woman); two
//!   similar voices stay one speaker.

use switchboard_actors::engine::{Transcript, TranscriptSegment};

/// Two pitch groups closer than this are taken as one voice.
pub const MIN_SEPARATION_SEMITONES: f32 = 4.0;
/// A speaker's own pause this long ends their utterance even without a sentence end.
pub const MAX_UTTERANCE_PAUSE_SECONDS: f32 = 3.0;

/// The label of the `index`-th speaker (0-based).
pub fn speaker_label(index: usize) -> String {
    format!("speaker_{}", index + 1)
}

/// Merges the transcripts of the voices of one recording (in channel order) into one.
/// Segments and words are in time order, each segment labelled with its voice's speaker when
/// `label` (diarization), else `None`. The text is built from whole utterances, a voice's
/// consecutive segments up to a sentence end (or a pause of
/// [`MAX_UTTERANCE_PAUSE_SECONDS`]), ordered by when each utterance starts, so one speaker's
/// sentence is never cut by the other's words spoken over it.
pub fn merge_voices(per_voice: Vec<Transcript>, duration: f32, label: bool) -> Transcript {
    let (language, language_probability) = per_voice
        .iter()
        .find(|t| !t.text.trim().is_empty())
        .or(per_voice.first())
        .map(|t| (t.language.clone(), t.language_probability))
        .unwrap_or_default();
    let mut segments = Vec::new();
    let mut words = Vec::new();
    let mut utterances: Vec<(f32, usize, String)> = Vec::new();
    for (index, transcript) in per_voice.into_iter().enumerate() {
        for (start, text) in utterances_of(&transcript.segments) {
            utterances.push((start, index, text));
        }
        for mut segment in transcript.segments {
            segment.speaker = label.then(|| speaker_label(index));
            segments.push(segment);
        }
        words.extend(transcript.words);
    }
    segments.sort_by(|a, b| a.start.total_cmp(&b.start));
    words.sort_by(|a, b| a.start.total_cmp(&b.start));
    utterances.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let text = utterances
        .into_iter()
        .map(|(_, _, text)| text)
        .collect::<Vec<_>>()
        .join(" ");
    Transcript {
        text,
        segments,
        words,
        language,
        language_probability,
        duration,
    }
}

/// One voice's segments joined into utterances: (start, text).
fn utterances_of(segments: &[TranscriptSegment]) -> Vec<(f32, String)> {
    let mut utterances = Vec::new();
    let mut current: Option<(f32, f32, String)> = None;
    for segment in segments {
        let text = segment.text.trim();
        if text.is_empty() {
            continue;
        }
        current = Some(match current.take() {
            Some((start, end, mut joined)) if segment.start - end < MAX_UTTERANCE_PAUSE_SECONDS => {
                joined.push(' ');
                joined.push_str(text);
                (start, segment.end.max(end), joined)
            }
            Some((start, _, joined)) => {
                utterances.push((start, joined));
                (segment.start, segment.end, text.to_string())
            }
            None => (segment.start, segment.end, text.to_string()),
        });
        if ends_sentence(text) {
            if let Some((start, _, joined)) = current.take() {
                utterances.push((start, joined));
            }
        }
    }
    if let Some((start, _, joined)) = current {
        utterances.push((start, joined));
    }
    utterances
}

/// Whether `text` ends a sentence (closing quotes and brackets aside).
fn ends_sentence(text: &str) -> bool {
    text.trim_end_matches(['"', '\'', ')', ']', '»', '”', '’'])
        .ends_with(['.', '?', '!', '…', '。', '？', '！'])
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

    fn spoken(start: f32, end: f32, text: &str) -> TranscriptSegment {
        TranscriptSegment {
            text: text.into(),
            ..segment(start, end)
        }
    }

    fn transcript(segments: Vec<TranscriptSegment>) -> Transcript {
        Transcript {
            text: String::new(),
            segments,
            words: vec![],
            language: "en".into(),
            language_probability: None,
            duration: 6.0,
        }
    }

    #[test]
    fn a_sentence_spoken_over_stays_whole_in_the_merged_text() {
        let left = transcript(vec![
            spoken(
                0.0,
                2.5,
                "He began a confused complaint against the wizard who",
            ),
            spoken(2.5, 5.0, "had vanished behind the curtain on the left."),
            spoken(5.2, 6.0, "Then he left."),
        ]);
        let right = transcript(vec![spoken(
            1.8,
            3.4,
            "The horizon seems extremely distant.",
        )]);
        let merged = merge_voices(vec![left, right], 6.0, true);
        assert_eq!(
            merged.text,
            "He began a confused complaint against the wizard who had vanished behind the \
             curtain on the left. The horizon seems extremely distant. Then he left."
        );
        let order: Vec<_> = merged
            .segments
            .iter()
            .map(|s| (s.start, s.speaker.as_deref().unwrap()))
            .collect();
        assert_eq!(
            order,
            [
                (0.0, "speaker_1"),
                (1.8, "speaker_2"),
                (2.5, "speaker_1"),
                (5.2, "speaker_1")
            ]
        );
        let unlabelled = merge_voices(
            vec![
                transcript(vec![]),
                transcript(vec![spoken(1.0, 2.0, "Hi.")]),
            ],
            6.0,
            false,
        );
        assert_eq!(unlabelled.text, "Hi.");
        assert!(unlabelled.segments.iter().all(|s| s.speaker.is_none()));
    }

    #[test]
    fn a_long_pause_ends_an_utterance_without_a_sentence_end() {
        let utterances = utterances_of(&[
            spoken(0.0, 1.0, "so what I mean is"),
            spoken(1.2, 2.0, "we could"),
            spoken(6.0, 7.0, "anyway"),
        ]);
        assert_eq!(
            utterances,
            [
                (0.0, "so what I mean is we could".into()),
                (6.0, "anyway".into())
            ]
        );
        assert!(ends_sentence("Really?\"") && !ends_sentence("the wizard, who"));
    }
}
