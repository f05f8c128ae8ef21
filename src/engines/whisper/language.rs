//! Spoken-language identification with a multilingual model: one decoder step on
//! `<|startoftranscript|>` over a window's audio, restricted to the language tokens.

use candle_core::Result;

use super::model::{log_softmax_in_place, CrossKv, KvCache, WhisperModel};
use super::vocab::Vocab;

/// How much likelier than the conversation's language ([`TranscribeOptions::language_hint`])
/// another must be for a window to be read in it. In a study of 198 short English turns and
/// 118 German ones (1-8 words, 16 kHz and through an 8 kHz phone line), 5 English turns were
/// detected as another language (Thai, Portuguese, German, Chinese), 4 of them with that
/// language less than twice as likely as English: at 3× only 1 stays wrong, and of the 91
/// German turns detected right, 85 still switch under an English hint (the 6 held back are
/// of 1-3 words).
///
/// [`TranscribeOptions::language_hint`]: switchboard_actors::engine::TranscribeOptions::language_hint
pub const SWITCH_ODDS: f32 = 3.0;

/// The likeliest language of one encoded window and its probability; with a `hint` (the
/// conversation's language), the hint unless another is [`SWITCH_ODDS`] times as likely.
pub fn detect(
    model: &WhisperModel,
    vocab: &Vocab,
    cross: &CrossKv,
    hint: Option<&str>,
) -> Result<(&'static str, f32)> {
    if vocab.languages.is_empty() {
        return Ok(("en", 1.0));
    }
    let mut cache = KvCache::default();
    let hidden = model.decode(&[vec![vocab.sot]], &mut cache, cross, &[], &mut Vec::new())?;
    let logits = model.logits(&WhisperModel::at_position(&hidden, 0)?)?;
    let row = logits.squeeze(0)?.to_vec1::<f32>()?;
    let mut scores: Vec<f32> = vocab
        .languages
        .iter()
        .map(|&(_, id)| row.get(id as usize).copied().unwrap_or(f32::NEG_INFINITY))
        .collect();
    log_softmax_in_place(&mut scores);
    let hinted = hint.and_then(|code| vocab.languages.iter().position(|&(c, _)| c == code));
    let chosen = choose(&scores, hinted);
    Ok((vocab.languages[chosen].0, scores[chosen].exp()))
}

/// The index of the language to read a window in, from log-probabilities: the likeliest, or
/// `hinted` unless the likeliest is [`SWITCH_ODDS`] times as likely.
fn choose(log_probs: &[f32], hinted: Option<usize>) -> usize {
    let best = log_probs
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i);
    match hinted.filter(|&h| h < log_probs.len()) {
        Some(h) if log_probs[best] - log_probs[h] < SWITCH_ODDS.ln() => h,
        _ => best,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(probs: &[f32]) -> Vec<f32> {
        probs.iter().map(|p| p.ln()).collect()
    }

    #[test]
    fn the_conversations_language_holds_until_another_is_clearly_likelier() {
        // Thai a little likelier than English, as on a short phone-band turn.
        let unsure = log(&[0.19, 0.31, 0.5]);
        assert_eq!(choose(&unsure, None), 2);
        assert_eq!(choose(&unsure, Some(0)), 0, "0.5 is under 3 × 0.19");
        // German clearly spoken under an English hint.
        let german = log(&[0.02, 0.95, 0.03]);
        assert_eq!(choose(&german, Some(0)), 1);
        // Just past the odds the switch is made, and just short of them it is not.
        assert_eq!(choose(&log(&[0.19, 0.6, 0.21]), Some(0)), 1);
        assert_eq!(choose(&log(&[0.21, 0.6, 0.19]), Some(0)), 0);
        // A hint that is the likeliest, or out of range, changes nothing.
        assert_eq!(choose(&german, Some(1)), 1);
        assert_eq!(choose(&unsure, Some(7)), 2);
        // An impossible hinted language never holds.
        let never = [f32::NEG_INFINITY, 0.0];
        assert_eq!(choose(&never, Some(0)), 1);
    }
}
