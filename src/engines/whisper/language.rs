//! Spoken-language identification with a multilingual model: one decoder step on
//! `<|startoftranscript|>` over a window's audio, restricted to the language tokens.

use candle_core::Result;

use super::model::{log_softmax_in_place, CrossKv, KvCache, WhisperModel};
use super::vocab::{Vocab, LANGUAGES};

/// Every language code the engine accepts (the multilingual model's 99).
pub fn supported_languages() -> &'static [&'static str] {
    &LANGUAGES
}

/// The likeliest language of one encoded window and its probability.
pub fn detect(model: &WhisperModel, vocab: &Vocab, cross: &CrossKv) -> Result<(&'static str, f32)> {
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
    let (best, logprob) = scores
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or((0, 0.0), |(i, &lp)| (i, lp));
    Ok((vocab.languages[best].0, logprob.exp()))
}
