//! Timestamps: segments from the timestamp tokens of a window (and how far the next window
//! starts), and word timestamps by aligning the text tokens to audio frames.
//!
//! Word alignment follows openai-whisper: the decoder is run once more over the window's
//! text tokens, the pre-softmax cross-attention scores of the model's alignment heads
//! (listed in its `config.json`) are kept, softmaxed over the audio frames actually present,
//! standardised per frame across tokens, median-filtered over time (width 7) and averaged
//! over heads; dynamic time warping on the negated matrix gives a monotonic token-to-frame
//! path, and each word starts where the path first reaches its first token and ends where
//! it reaches the first token of the next word. Times are then kept inside the window and in
//! order, and a word at a sentence's end (or starting the next) that the path stretched over
//! the pause after it is cut to twice the median word's length (at most 1.4 s), as the
//! reference implementations do. Words are not held inside their segment's timestamp tokens:
//! on some audio the model writes those on whole seconds only, and a segment's times are then
//! taken from its words instead ([`segment_span`]).

use candle_core::Result;

use super::model::{CrossKv, KvCache, WhisperModel};
use super::vocab::{Vocab, TIME_PRECISION};

/// Seconds per encoder frame (two mel frames).
const SECONDS_PER_AUDIO_FRAME: f32 = 0.02;
/// Width of the median filter over the attention weights.
const MEDIAN_WIDTH: usize = 7;

/// A segment of one window: absolute times and its text tokens (no timestamps).
#[derive(Debug, Clone, PartialEq)]
pub struct RawSegment {
    pub start: f32,
    pub end: f32,
    pub tokens: Vec<u32>,
}

/// A word with absolute times.
#[derive(Debug, Clone, PartialEq)]
pub struct WordTiming {
    pub start: f32,
    pub end: f32,
    pub tokens: Vec<u32>,
}

/// Splits a window's sampled tokens into segments at pairs of consecutive timestamps.
/// Returns the segments and how many mel frames to advance: to the last closing timestamp
/// when the window ends inside speech, else the whole window (`window_frames`).
pub fn split_segments(
    vocab: &Vocab,
    tokens: &[u32],
    time_offset: f32,
    window_frames: usize,
) -> (Vec<RawSegment>, usize) {
    let ts = |t: u32| vocab.is_timestamp(t);
    let time = |t: u32| time_offset + (t - vocab.timestamp_begin) as f32 * TIME_PRECISION;
    let window_end = time_offset + window_frames as f32 / 100.0;
    let text_of =
        |slice: &[u32]| -> Vec<u32> { slice.iter().copied().filter(|&t| !ts(t)).collect() };
    let single_ending =
        tokens.len() >= 2 && !ts(tokens[tokens.len() - 2]) && ts(tokens[tokens.len() - 1]);
    let mut boundaries: Vec<usize> = (1..tokens.len())
        .filter(|&i| ts(tokens[i - 1]) && ts(tokens[i]))
        .collect();
    let mut segments = Vec::new();
    let advance;
    if !boundaries.is_empty() {
        if single_ending {
            boundaries.push(tokens.len());
        }
        let mut last = 0;
        for &cut in &boundaries {
            let slice = &tokens[last..cut];
            if let (Some(&first), Some(&end)) = (slice.first(), slice.last()) {
                let start = if ts(first) { time(first) } else { time_offset };
                let end = if ts(end) { time(end) } else { window_end };
                let text = text_of(slice);
                if !text.is_empty() {
                    segments.push(RawSegment {
                        start: start.min(window_end),
                        end: end.max(start).min(window_end),
                        tokens: text,
                    });
                }
            }
            last = cut;
        }
        advance = if single_ending {
            window_frames
        } else {
            // Resume at the last closing timestamp: the rest of the window is decoded again.
            let last_ts = tokens[last - 1] - vocab.timestamp_begin;
            ((last_ts as usize) * 2).clamp(1, window_frames)
        };
    } else {
        let text = text_of(tokens);
        let mut end = window_end;
        if let Some(&last_ts) = tokens.iter().rev().find(|&&t| ts(t)) {
            if last_ts != vocab.timestamp_begin {
                end = time(last_ts).min(window_end);
            }
        }
        let start = tokens
            .first()
            .filter(|&&t| ts(t))
            .map_or(time_offset, |&t| time(t).min(end));
        if !text.is_empty() {
            segments.push(RawSegment {
                start,
                end,
                tokens: text,
            });
        }
        advance = window_frames;
    }
    (segments, advance)
}

/// Groups a segment's text tokens into words: a token starting with a space starts a word,
/// other tokens (word pieces, punctuation) join the previous one. For languages written
/// without spaces every token is its own word.
pub fn group_words(vocab: &Vocab, tokens: &[u32], spaced: bool) -> Vec<Vec<u32>> {
    let mut words: Vec<Vec<u32>> = Vec::new();
    for &t in tokens {
        match words.last_mut() {
            Some(word) if spaced && !vocab.starts_word(t) => word.push(t),
            _ => words.push(vec![t]),
        }
    }
    words
}

/// Word timings for every segment of one window (one list per segment), none starting before
/// `not_before` (where the words of the windows before ended).
#[allow(clippy::too_many_arguments)]
pub fn align_words(
    model: &WhisperModel,
    vocab: &Vocab,
    cross: &CrossKv,
    sot_sequence: &[u32],
    segments: &[RawSegment],
    heads: &[(usize, usize)],
    time_offset: f32,
    not_before: f32,
    window_frames: usize,
    spaced: bool,
) -> Result<Vec<Vec<WordTiming>>> {
    let per_segment: Vec<Vec<Vec<u32>>> = segments
        .iter()
        .map(|s| group_words(vocab, &s.tokens, spaced))
        .collect();
    let text: Vec<u32> = segments
        .iter()
        .flat_map(|s| s.tokens.iter().copied())
        .collect();
    if text.is_empty() || heads.is_empty() {
        return Ok(segments.iter().map(|_| Vec::new()).collect());
    }
    let n_ctx = model.dims.n_text_ctx;
    let mut input: Vec<u32> = sot_sequence.to_vec();
    input.push(vocab.no_timestamps);
    input.extend_from_slice(&text);
    input.push(vocab.eot);
    if input.len() > n_ctx {
        return Ok(segments.iter().map(|_| Vec::new()).collect());
    }
    let mut captured = Vec::new();
    model.decode(
        &[input.clone()],
        &mut KvCache::default(),
        cross,
        heads,
        &mut captured,
    )?;
    let frames = (window_frames / 2).clamp(1, model.dims.n_audio_ctx);
    let rows = input.len();
    // Average over heads of the standardised, median-filtered attention weights.
    let mut matrix = vec![0f32; rows * frames];
    for scores in &captured {
        let scores = scores.narrow(1, 0, frames)?.contiguous()?;
        let mut w = candle_nn::ops::softmax_last_dim(&scores)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        standardise_columns(&mut w, rows, frames);
        for r in 0..rows {
            let filtered = median_filter(&w[r * frames..(r + 1) * frames], MEDIAN_WIDTH);
            for (m, f) in matrix[r * frames..(r + 1) * frames]
                .iter_mut()
                .zip(filtered)
            {
                *m += f / captured.len() as f32;
            }
        }
    }
    // Rows from <|notimestamps|> (which predicts the first text token) to the last text token.
    let first_row = sot_sequence.len();
    let n = text.len() + 1;
    let cost: Vec<f32> = matrix[first_row * frames..(first_row + n) * frames]
        .iter()
        .map(|v| -v)
        .collect();
    let (text_idx, time_idx) = dtw(&cost, n, frames);
    // The time at which the path first reaches each token row.
    let mut jump_times = vec![0f32; n];
    let mut seen = vec![false; n];
    for (&r, &c) in text_idx.iter().zip(&time_idx) {
        if !seen[r] {
            seen[r] = true;
            jump_times[r] = time_offset + c as f32 * SECONDS_PER_AUDIO_FRAME;
        }
    }
    let window_end = time_offset + frames as f32 * SECONDS_PER_AUDIO_FRAME;
    let mut out = Vec::with_capacity(segments.len());
    let mut token_pos = 0;
    let mut previous_end = not_before.max(time_offset);
    for words in per_segment {
        let mut timed = Vec::with_capacity(words.len());
        for word in words {
            let first = token_pos;
            token_pos += word.len();
            let start = jump_times[first.min(n - 1)];
            let end = jump_times[token_pos.min(n - 1)];
            // Inside the window, in order, never negative in length.
            let start = start.max(previous_end).min(window_end);
            let end = end.min(window_end).max(start);
            previous_end = end;
            timed.push(WordTiming {
                start,
                end,
                tokens: word,
            });
        }
        out.push(timed);
    }
    let sentence_end = |tokens: &[u32]| {
        vocab
            .decode(tokens)
            .trim_end()
            .ends_with(['.', '!', '?', '。', '！', '？'])
    };
    trim_long_words_at_sentence_ends(&mut out, sentence_end);
    Ok(out)
}

/// Cuts words the alignment stretched over the pause at a sentence's end: a word longer than
/// twice the median word (the median taken at most 0.7 s) that ends a sentence keeps its start,
/// and one that follows a sentence's end keeps its end. What is cut is the pause, which the
/// path crossed on one token.
fn trim_long_words_at_sentence_ends(
    words: &mut [Vec<WordTiming>],
    sentence_end: impl Fn(&[u32]) -> bool,
) {
    let mut durations: Vec<f32> = words
        .iter()
        .flatten()
        .map(|w| w.end - w.start)
        .filter(|d| *d > 0.0)
        .collect();
    if durations.is_empty() {
        return;
    }
    durations.sort_by(f32::total_cmp);
    let median = durations[durations.len() / 2].min(0.7);
    let longest = 2.0 * median;
    let mut after_sentence = false;
    for word in words.iter_mut().flatten() {
        let ends_sentence = sentence_end(&word.tokens);
        if word.end - word.start > longest {
            if ends_sentence {
                word.end = word.start + longest;
            } else if after_sentence {
                word.start = word.end - longest;
            }
        }
        after_sentence = ends_sentence;
    }
}

/// The span of a segment whose words were timed: from its first word's start to its last
/// word's end, kept after `previous_end` (the segment before it). A segment without words
/// keeps its timestamp tokens' span, moved no earlier than `previous_end`.
pub fn segment_span(segment: &RawSegment, words: &[WordTiming], previous_end: f32) -> (f32, f32) {
    let (start, end) = match (words.first(), words.last()) {
        (Some(first), Some(last)) => (first.start, last.end),
        _ => (segment.start, segment.end),
    };
    let start = start.max(previous_end);
    (start, end.max(start))
}

/// Standardises every column of a row-major `(rows, cols)` matrix (zero mean, unit variance
/// across rows).
fn standardise_columns(w: &mut [f32], rows: usize, cols: usize) {
    for c in 0..cols {
        let mean = (0..rows).map(|r| w[r * cols + c]).sum::<f32>() / rows as f32;
        let var = (0..rows)
            .map(|r| (w[r * cols + c] - mean).powi(2))
            .sum::<f32>()
            / rows as f32;
        let std = var.sqrt().max(1e-8);
        for r in 0..rows {
            w[r * cols + c] = (w[r * cols + c] - mean) / std;
        }
    }
}

/// A running median of odd `width` with reflected edges.
fn median_filter(x: &[f32], width: usize) -> Vec<f32> {
    let half = width / 2;
    if x.len() <= half {
        return x.to_vec();
    }
    let at = |i: isize| -> f32 {
        let n = x.len() as isize;
        let i = if i < 0 {
            -i
        } else if i >= n {
            2 * (n - 1) - i
        } else {
            i
        };
        x[i.clamp(0, n - 1) as usize]
    };
    let mut window = vec![0f32; width];
    (0..x.len() as isize)
        .map(|i| {
            for (k, w) in window.iter_mut().enumerate() {
                *w = at(i + k as isize - half as isize);
            }
            window.sort_by(f32::total_cmp);
            window[half]
        })
        .collect()
}

/// Dynamic time warping over a row-major `(n, m)` cost matrix: the cheapest monotonic path
/// from `(0, 0)` to `(n-1, m-1)`, as (row, column) index lists.
fn dtw(cost: &[f32], n: usize, m: usize) -> (Vec<usize>, Vec<usize>) {
    let w = m + 1;
    let mut acc = vec![f32::INFINITY; (n + 1) * w];
    let mut trace = vec![0u8; (n + 1) * w];
    acc[0] = 0.0;
    for j in 1..=m {
        for i in 1..=n {
            let c0 = acc[(i - 1) * w + j - 1];
            let c1 = acc[(i - 1) * w + j];
            let c2 = acc[i * w + j - 1];
            let (best, t) = if c0 < c1 && c0 < c2 {
                (c0, 0)
            } else if c1 < c0 && c1 < c2 {
                (c1, 1)
            } else {
                (c2, 2)
            };
            acc[i * w + j] = cost[(i - 1) * m + (j - 1)] + best;
            trace[i * w + j] = t;
        }
    }
    let (mut i, mut j) = (n, m);
    let mut rows = Vec::with_capacity(n + m);
    let mut cols = Vec::with_capacity(n + m);
    while i > 0 || j > 0 {
        if i == 0 {
            j -= 1;
            continue;
        }
        if j == 0 {
            i -= 1;
            continue;
        }
        rows.push(i - 1);
        cols.push(j - 1);
        match trace[i * w + j] {
            0 => {
                i -= 1;
                j -= 1;
            }
            1 => i -= 1,
            _ => j -= 1,
        }
    }
    rows.reverse();
    cols.reverse();
    (rows, cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocab {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/whisper-tiny.en/tokenizer.json");
        Vocab::load(&path, 51_864).unwrap()
    }

    #[test]
    fn segments_split_at_timestamp_pairs_and_seek_to_the_last_one() {
        let v = vocab();
        let tb = v.timestamp_begin;
        // <|0.00|> a <|1.00|><|1.00|> b <|2.50|><|2.50|> c   (ends inside speech)
        let tokens = [tb, 64, tb + 50, tb + 50, 65, tb + 125, tb + 125, 66];
        let (segments, advance) = split_segments(&v, &tokens, 10.0, 3000);
        assert_eq!(segments.len(), 2);
        assert_eq!((segments[0].start, segments[0].end), (10.0, 11.0));
        assert_eq!(segments[1].tokens, vec![65]);
        assert!((segments[1].end - 12.5).abs() < 1e-4);
        assert_eq!(advance, 250);
        // A single closing timestamp at the end: the whole window is consumed.
        let tokens = [tb, 64, tb + 50, tb + 50, 65, tb + 125];
        let (segments, advance) = split_segments(&v, &tokens, 0.0, 1100);
        assert_eq!(segments.len(), 2);
        assert_eq!(advance, 1100);
    }

    #[test]
    fn dtw_follows_the_diagonal() {
        // Cheap cells on a staircase: row r is cheap at columns 2r and 2r+1.
        let (n, m) = (3, 6);
        let mut cost = vec![1.0f32; n * m];
        for r in 0..n {
            cost[r * m + 2 * r] = 0.0;
            cost[r * m + 2 * r + 1] = 0.0;
        }
        let (rows, cols) = dtw(&cost, n, m);
        assert_eq!(rows, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(cols, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn median_filter_removes_spikes() {
        let x = [0.0, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0, 0.0];
        assert!(median_filter(&x, 7).iter().all(|&v| v == 0.0));
    }

    /// Words as (start, end, token), the token 1 standing for a word that ends a sentence.
    fn timed(words: &[(f32, f32, u32)]) -> Vec<Vec<WordTiming>> {
        vec![words
            .iter()
            .map(|&(start, end, token)| WordTiming {
                start,
                end,
                tokens: vec![token],
            })
            .collect()]
    }

    fn spans(words: &[Vec<WordTiming>]) -> Vec<(f32, f32)> {
        words.iter().flatten().map(|w| (w.start, w.end)).collect()
    }

    #[test]
    fn words_stretched_over_a_sentences_pause_are_cut_to_twice_the_median() {
        // Median word 0.3 s, so at most 0.6 s: "there." ran on over the pause after it and
        // "Okay" was reached early; "long" is long but inside a sentence, and stays.
        let mut words = timed(&[
            (0.0, 0.3, 0),
            (0.3, 0.6, 0),
            (0.6, 0.9, 0),
            (0.9, 1.2, 0),
            (1.2, 1.5, 0),
            (1.5, 1.8, 0),
            (1.8, 2.6, 0),
            (2.6, 4.2, 1),
            (4.2, 5.7, 0),
            (5.7, 6.0, 0),
        ]);
        trim_long_words_at_sentence_ends(&mut words, |tokens| tokens == [1]);
        let expected = [
            (0.0, 0.3),
            (0.3, 0.6),
            (0.6, 0.9),
            (0.9, 1.2),
            (1.2, 1.5),
            (1.5, 1.8),
            (1.8, 2.6),
            (2.6, 3.2),
            (5.1, 5.7),
            (5.7, 6.0),
        ];
        for ((start, end), (want_start, want_end)) in spans(&words).into_iter().zip(expected) {
            assert!(
                (start - want_start).abs() < 1e-5 && (end - want_end).abs() < 1e-5,
                "{:?}",
                spans(&words)
            );
        }
    }

    #[test]
    fn a_segment_spans_its_words_and_follows_the_one_before() {
        let segment = RawSegment {
            start: 12.0,
            end: 13.0,
            tokens: vec![],
        };
        let words = &timed(&[(12.66, 13.02, 0), (13.7, 14.12, 1)])[0];
        assert_eq!(segment_span(&segment, words, 11.0), (12.66, 14.12));
        assert_eq!(segment_span(&segment, words, 12.8), (12.8, 14.12));
        // Without words: its tokens' span, no earlier than the segment before.
        assert_eq!(segment_span(&segment, &[], 11.0), (12.0, 13.0));
        assert_eq!(segment_span(&segment, &[], 13.5), (13.5, 13.5));
    }
}
