//! The tokenizer and Whisper's special tokens: start of transcript, language and task tokens,
//! no-speech, no-timestamps and the timestamp tokens, and the languages a model knows.
//!
//! Ids are looked up by name in each model's `tokenizer.json`, because English-only and
//! multilingual vocabularies number them differently. Timestamp tokens (`<|0.00|>` ...) follow
//! `<|notimestamps|>` and are not always in the tokenizer file; they are never decoded to text.

use std::path::Path;

use tokenizers::Tokenizer;

use crate::speech::languages;

/// Seconds per timestamp token step.
pub const TIME_PRECISION: f32 = 0.02;

/// A model's tokenizer with the ids of its special tokens.
pub struct Vocab {
    tokenizer: Tokenizer,
    pub eot: u32,
    pub sot: u32,
    pub transcribe: u32,
    /// `<|translate|>`: multilingual models write the speech in English after it.
    pub translate: Option<u32>,
    pub sot_prev: u32,
    pub no_speech: u32,
    pub no_timestamps: u32,
    /// `<|0.00|>`; every id at or above it is a timestamp.
    pub timestamp_begin: u32,
    /// The language tokens this model has, by code.
    pub languages: Vec<(&'static str, u32)>,
    /// Multilingual models take language and task tokens after the start token.
    pub multilingual: bool,
    /// The id of `" "`, suppressed as a first token.
    pub space: Option<u32>,
}

impl Vocab {
    /// Loads `tokenizer.json` and resolves the special tokens. `n_vocab` is the model's
    /// vocabulary size (multilingual models have at least 51865 tokens).
    pub fn load(path: &Path, n_vocab: usize) -> Result<Self, String> {
        let tokenizer = Tokenizer::from_file(path)
            .map_err(|err| format!("cannot load {}: {err}", path.display()))?;
        let id = |name: &str| {
            tokenizer
                .token_to_id(name)
                .ok_or_else(|| format!("{} has no token {name}", path.display()))
        };
        let no_timestamps = id("<|notimestamps|>")?;
        let no_speech = id("<|nospeech|>").or_else(|_| id("<|nocaptions|>"))?;
        let multilingual = n_vocab >= 51_865;
        let languages = if multilingual {
            // The multilingual models' 99 languages, in the order of their tokens.
            languages::codes()
                .filter_map(|code| {
                    tokenizer
                        .token_to_id(&format!("<|{code}|>"))
                        .map(|id| (code, id))
                })
                .collect()
        } else {
            Vec::new()
        };
        let vocab = Self {
            eot: id("<|endoftext|>")?,
            sot: id("<|startoftranscript|>")?,
            transcribe: id("<|transcribe|>")?,
            translate: tokenizer.token_to_id("<|translate|>"),
            sot_prev: id("<|startofprev|>")?,
            no_speech,
            no_timestamps,
            timestamp_begin: no_timestamps + 1,
            languages,
            multilingual,
            space: tokenizer.token_to_id("Ġ"),
            tokenizer,
        };
        if vocab.timestamp_begin as usize + 1501 > n_vocab {
            return Err(format!(
                "{}: the vocabulary has no room for timestamp tokens",
                path.display()
            ));
        }
        Ok(vocab)
    }

    /// The token of a language code, if this model knows it.
    pub fn language_token(&self, code: &str) -> Option<u32> {
        self.languages
            .iter()
            .find(|(c, _)| *c == code)
            .map(|&(_, id)| id)
    }

    /// The tokens that start a transcription: `<|startoftranscript|>`, and for multilingual
    /// models the language and `<|transcribe|>`.
    pub fn sot_sequence(&self, language: Option<&str>) -> Vec<u32> {
        self.sot_sequence_for(language, false)
    }

    /// [`sot_sequence`](Self::sot_sequence), or with `translate` the one that has a
    /// multilingual model write the speech in English (`<|translate|>` for the task). An
    /// English-only model has no task token and always writes what it hears.
    pub fn sot_sequence_for(&self, language: Option<&str>, translate: bool) -> Vec<u32> {
        let mut seq = vec![self.sot];
        if self.multilingual {
            if let Some(lang) = language.and_then(|l| self.language_token(l)) {
                seq.push(lang);
            }
            let task = match (translate, self.translate) {
                (true, Some(token)) => token,
                _ => self.transcribe,
            };
            seq.push(task);
        }
        seq
    }

    /// Text tokens to text (timestamps and special tokens are dropped).
    pub fn decode(&self, tokens: &[u32]) -> String {
        let text: Vec<u32> = tokens.iter().copied().filter(|&t| t < self.eot).collect();
        self.tokenizer.decode(&text, false).unwrap_or_default()
    }

    /// Text to text tokens (for prompts).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.tokenizer
            .encode(text, false)
            .map(|enc| enc.get_ids().to_vec())
            .unwrap_or_default()
    }

    /// Whether a text token begins with a space, i.e. starts a new word in languages that
    /// separate words with spaces (byte-level BPE writes the space as `Ġ`).
    pub fn starts_word(&self, token: u32) -> bool {
        self.tokenizer
            .id_to_token(token)
            .is_some_and(|piece| piece.starts_with('Ġ'))
    }

    /// Whether a token is a timestamp.
    pub fn is_timestamp(&self, token: u32) -> bool {
        token >= self.timestamp_begin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn models() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
    }

    #[test]
    fn special_tokens_differ_between_english_and_multilingual() {
        let en = Vocab::load(&models().join("whisper-tiny.en/tokenizer.json"), 51_864).unwrap();
        assert_eq!(
            (en.eot, en.sot, en.timestamp_begin),
            (50_256, 50_257, 50_363)
        );
        assert!(!en.multilingual && en.languages.is_empty());
        assert_eq!(en.sot_sequence(Some("en")), vec![50_257]);
        let base = Vocab::load(&models().join("whisper-base/tokenizer.json"), 51_865).unwrap();
        assert_eq!(
            (base.eot, base.sot, base.timestamp_begin),
            (50_257, 50_258, 50_364)
        );
        assert_eq!(base.languages.len(), 99);
        assert_eq!(base.language_token("de"), Some(50_261));
        assert_eq!(base.sot_sequence(Some("de")), vec![50_258, 50_261, 50_359]);
        let tokens = base.encode(" Hello world");
        assert_eq!(base.decode(&tokens), " Hello world");
    }
}
