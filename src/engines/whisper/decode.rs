//! Decoding one 30 s window: greedy search (optionally sampled at a temperature) and beam
//! search, under Whisper's logit rules: suppressed tokens, no blank first token, and the
//! timestamp rules (timestamps come in pairs and never go backwards, the first token is a
//! timestamp no later than 1 s, and a timestamp is forced when the timestamps together are
//! likelier than any single text token). Also reports the no-speech probability: the
//! probability of `<|nospeech|>` at the start-of-transcript position.

use candle_core::{Device, Result, Tensor};

use super::model::{log_softmax_in_place, CrossKv, KvCache, WhisperModel};
use super::vocab::Vocab;

/// The latest timestamp allowed as the first token, in timestamp steps (1 s).
const MAX_INITIAL_TIMESTAMP_STEPS: u32 = 50;

/// What to decode and how.
pub struct DecodeRequest<'a> {
    /// Every token before the first sampled one: optional previous text, then the start of
    /// transcript sequence.
    pub prompt: Vec<u32>,
    /// Where `<|startoftranscript|>` is in the prompt.
    pub sot_index: usize,
    /// 1 is greedy search.
    pub beam_size: usize,
    /// 0 picks the likeliest token; above 0 greedy search samples (beam search ignores it).
    pub temperature: f32,
    /// The most tokens to sample.
    pub max_new_tokens: usize,
    /// Tokens never sampled.
    pub suppress: &'a [u32],
    /// Set when nobody waits for the result any more: decoding stops at the next token.
    pub abandoned: &'a std::sync::atomic::AtomicBool,
}

/// The best hypothesis of a window.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// Sampled tokens (text and timestamps), without the end of text.
    pub tokens: Vec<u32>,
    /// Mean log-probability per sampled token (the end of text counted).
    pub avg_logprob: f32,
    pub no_speech_prob: f32,
}

struct Hypothesis {
    tokens: Vec<u32>,
    logprob: f32,
}

/// Decodes one window whose cross-attention keys and values are `cross`.
pub fn decode_window(
    model: &WhisperModel,
    vocab: &Vocab,
    cross: &CrossKv,
    request: &DecodeRequest<'_>,
) -> Result<Decoded> {
    let n_ctx = model.dims.n_text_ctx;
    let max_new = request
        .max_new_tokens
        .min(n_ctx.saturating_sub(request.prompt.len()));
    let beam_size = request.beam_size.max(1);
    let mut cache = KvCache::default();
    let hidden = model.decode(
        std::slice::from_ref(&request.prompt),
        &mut cache,
        cross,
        &[],
        &mut Vec::new(),
    )?;
    let last = request.prompt.len() - 1;
    let rows = Tensor::new(&[request.sot_index as u32, last as u32], &Device::Cpu)?;
    let picked = hidden.squeeze(0)?.index_select(&rows, 0)?;
    let mut logits = model.logits(&picked)?.to_vec2::<f32>()?;
    let no_speech_prob = {
        let mut sot_row = logits[0].clone();
        log_softmax_in_place(&mut sot_row);
        sot_row
            .get(vocab.no_speech as usize)
            .map_or(0.0, |lp| lp.exp())
    };
    let mut step_logits = vec![logits.swap_remove(1)];

    let mut live = vec![Hypothesis {
        tokens: Vec::new(),
        logprob: 0.0,
    }];
    let mut finished: Vec<Hypothesis> = Vec::new();
    for step in 0..max_new {
        if request.abandoned.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let mut candidates: Vec<(f32, usize, u32, f32)> = Vec::new();
        for (index, (hyp, row)) in live.iter().zip(step_logits.iter_mut()).enumerate() {
            apply_rules(vocab, request.suppress, &hyp.tokens, row);
            let sampled = if beam_size == 1 && request.temperature > 0.0 {
                sample(row, request.temperature)
            } else {
                None
            };
            log_softmax_in_place(row);
            if let Some(token) = sampled {
                candidates.push((hyp.logprob + row[token as usize], index, token, 0.0));
                continue;
            }
            for token in top_k(row, if beam_size == 1 { 1 } else { beam_size + 1 }) {
                candidates.push((hyp.logprob + row[token as usize], index, token, 0.0));
            }
        }
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut next = Vec::with_capacity(beam_size);
        let mut sources = Vec::with_capacity(beam_size);
        for &(logprob, source, token, _) in &candidates {
            if !logprob.is_finite() {
                continue;
            }
            if token == vocab.eot {
                if finished.len() < beam_size {
                    finished.push(Hypothesis {
                        tokens: live[source].tokens.clone(),
                        logprob,
                    });
                }
            } else {
                let mut tokens = live[source].tokens.clone();
                tokens.push(token);
                next.push(Hypothesis { tokens, logprob });
                sources.push(source as u32);
            }
            if next.len() == beam_size {
                break;
            }
        }
        if finished.len() >= beam_size || next.is_empty() || step + 1 == max_new {
            live = next;
            break;
        }
        cache.reorder(&sources)?;
        let inputs: Vec<Vec<u32>> = next
            .iter()
            .map(|h| vec![*h.tokens.last().unwrap_or(&vocab.eot)])
            .collect();
        let hidden = model.decode(&inputs, &mut cache, cross, &[], &mut Vec::new())?;
        let hidden = WhisperModel::at_position(&hidden, 0)?;
        step_logits = model.logits(&hidden)?.to_vec2::<f32>()?;
        live = next;
    }
    if finished.is_empty() {
        finished = live;
    }
    // Rank by mean log-probability per token, as openai-whisper does without a length penalty.
    let score = |h: &Hypothesis| h.logprob / (h.tokens.len().max(1)) as f32;
    let best = finished
        .into_iter()
        .max_by(|a, b| score(a).total_cmp(&score(b)))
        .unwrap_or(Hypothesis {
            tokens: Vec::new(),
            logprob: 0.0,
        });
    Ok(Decoded {
        avg_logprob: best.logprob / (best.tokens.len() + 1) as f32,
        tokens: best.tokens,
        no_speech_prob,
    })
}

/// The indices of the `k` largest values.
fn top_k(row: &[f32], k: usize) -> Vec<u32> {
    if k == 1 {
        let best = row
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i);
        return vec![best as u32];
    }
    let mut indices: Vec<u32> = (0..row.len() as u32).collect();
    let k = k.min(indices.len());
    if k == 0 {
        return indices;
    }
    indices.select_nth_unstable_by(k - 1, |&a, &b| row[b as usize].total_cmp(&row[a as usize]));
    indices.truncate(k);
    indices
}

/// Draws a token from `softmax(logits / temperature)`.
fn sample(logits: &[f32], temperature: f32) -> Option<u32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return None;
    }
    let weights: Vec<f32> = logits
        .iter()
        .map(|&v| ((v - max) / temperature).exp())
        .collect();
    let total: f32 = weights.iter().sum();
    let mut target = rand::random::<f32>() * total;
    for (i, w) in weights.iter().enumerate() {
        target -= w;
        if target <= 0.0 && *w > 0.0 {
            return Some(i as u32);
        }
    }
    weights.iter().rposition(|&w| w > 0.0).map(|i| i as u32)
}

/// Whisper's logit rules for the next token after `sampled` (this window's tokens so far).
pub fn apply_rules(vocab: &Vocab, suppress: &[u32], sampled: &[u32], logits: &mut [f32]) {
    let n = logits.len();
    let tb = (vocab.timestamp_begin as usize).min(n);
    let mut ban = |id: u32| {
        if let Some(v) = logits.get_mut(id as usize) {
            *v = f32::NEG_INFINITY;
        }
    };
    for &id in suppress {
        ban(id);
    }
    ban(vocab.no_timestamps);
    if sampled.is_empty() {
        // No blank start, and no end before anything was said.
        ban(vocab.eot);
        if let Some(space) = vocab.space {
            ban(space);
        }
    }
    let is_ts = |t: u32| vocab.is_timestamp(t);
    let last_was_ts = sampled.last().is_some_and(|&t| is_ts(t));
    let penultimate_was_ts = sampled.len() < 2 || is_ts(sampled[sampled.len() - 2]);
    if last_was_ts {
        if penultimate_was_ts {
            // A closed pair: text (or the end) must follow.
            logits[tb..].fill(f32::NEG_INFINITY);
        } else {
            // An open timestamp: another timestamp or the end must follow.
            let eot = vocab.eot as usize;
            logits[..eot.min(tb)].fill(f32::NEG_INFINITY);
        }
    }
    if let Some(&last_ts) = sampled.iter().rev().find(|&&t| is_ts(t)) {
        // Timestamps never go backwards; a new pair starts strictly later.
        let floor = if last_was_ts && !penultimate_was_ts {
            last_ts
        } else {
            last_ts + 1
        } as usize;
        logits[tb..floor.min(n)].fill(f32::NEG_INFINITY);
    }
    if sampled.is_empty() {
        logits[..tb].fill(f32::NEG_INFINITY);
        let last_allowed = tb + MAX_INITIAL_TIMESTAMP_STEPS as usize;
        if last_allowed + 1 < n {
            logits[last_allowed + 1..].fill(f32::NEG_INFINITY);
        }
    }
    // Force a timestamp when all timestamps together beat the likeliest text token.
    let text_max = logits[..tb]
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    let ts_max = logits[tb..]
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    if ts_max.is_finite() && text_max.is_finite() {
        let ts_lse = ts_max
            + logits[tb..]
                .iter()
                .map(|&v| (v - ts_max).exp())
                .sum::<f32>()
                .ln();
        if ts_lse > text_max {
            logits[..tb].fill(f32::NEG_INFINITY);
        }
    }
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
    fn the_first_token_is_an_early_timestamp() {
        let v = vocab();
        let mut logits = vec![0.0f32; 51_864];
        logits[100] = 10.0;
        logits[v.timestamp_begin as usize + 200] = 20.0;
        apply_rules(&v, &[], &[], &mut logits);
        let best = top_k(&logits, 1)[0];
        assert!(v.is_timestamp(best));
        assert!(best <= v.timestamp_begin + MAX_INITIAL_TIMESTAMP_STEPS);
    }

    #[test]
    fn timestamps_pair_up_and_never_go_back() {
        let v = vocab();
        let tb = v.timestamp_begin;
        // After <|0.00|> text: an earlier timestamp is banned, text and later ones allowed.
        let mut logits = vec![0.0f32; 51_864];
        apply_rules(&v, &[], &[tb + 10, 300], &mut logits);
        assert!(logits[(tb + 5) as usize].is_infinite());
        assert!(logits[(tb + 10) as usize].is_infinite());
        assert!(logits[(tb + 11) as usize].is_finite());
        // An open timestamp after text: text is banned, the end and later timestamps are not.
        let mut logits = vec![0.0f32; 51_864];
        logits[v.eot as usize] = 10.0;
        apply_rules(&v, &[], &[tb, 300, tb + 40], &mut logits);
        assert!(logits[300].is_infinite());
        assert!(logits[v.eot as usize].is_finite());
        assert!(logits[(tb + 40) as usize].is_finite());
        // A closed pair: no third timestamp.
        let mut logits = vec![0.0f32; 51_864];
        logits[300] = 5.0;
        apply_rules(&v, &[], &[tb, 300, tb + 40, tb + 40], &mut logits);
        assert!(logits[(tb + 60) as usize].is_infinite());
        assert!(logits[300].is_finite());
    }

    #[test]
    fn top_k_finds_the_largest() {
        let row = [0.1, 5.0, -1.0, 3.0, 4.0];
        let mut best = top_k(&row, 3);
        best.sort_unstable();
        assert_eq!(best, vec![1, 3, 4]);
    }
}
