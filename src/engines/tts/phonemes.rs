//! From text to the phoneme ids a Piper voice reads, the way Piper builds them.
//!
//! eSpeak NG phonemizes the text clause by clause (IPA). Its plain IPA output drops
//! punctuation, which the voices were trained with, so the punctuation that ended each clause
//! is put back: `.`, `?`, `!` as they are, `,`, `:`, `;` followed by a space. Language-switch
//! flags such as `(fr)` are removed, the string is decomposed (Unicode NFD, so `ç` becomes
//! `c` + combining cedilla), the voice's `phoneme_map` is applied, and each phoneme is mapped
//! through its `phoneme_id_map`: BOS `^`, then pad `_`, then every phoneme followed by a pad,
//! then EOS `$`. Phonemes missing from the map are skipped (and logged).
//!
//! One deliberate difference from Piper: a full stop eSpeak treats as a clause end after an
//! abbreviation or an initial (`Dr.`, `J.`) becomes a word space instead of a sentence stop,
//! since this engine splits sentences itself and keeps such words inside the sentence.

use std::collections::{BTreeMap, HashMap};

use switchboard_actors::engine::EngineError;
use unicode_normalization::UnicodeNormalization;

use super::espeak::{Espeak, PhonemeClause};
use super::text::is_abbreviation_dot;

/// The padding symbol put after every phoneme.
pub const PAD: &str = "_";
/// The beginning-of-sentence symbol.
pub const BOS: &str = "^";
/// The end-of-sentence symbol.
pub const EOS: &str = "$";

/// A voice's `phoneme_id_map`: phoneme (one or more code points) to ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhonemeIdMap {
    ids: HashMap<String, Vec<i64>>,
    /// The longest key, in code points (1 unless the voice has multi-code-point phonemes).
    longest: usize,
}

impl PhonemeIdMap {
    /// Checks that the map has the pad, BOS and EOS symbols.
    pub fn new(ids: HashMap<String, Vec<i64>>) -> Result<Self, EngineError> {
        for symbol in [PAD, BOS, EOS] {
            if ids.get(symbol).is_none_or(Vec::is_empty) {
                return Err(EngineError::internal(format!(
                    "the voice's phoneme_id_map has no id for `{symbol}`"
                )));
            }
        }
        let longest = ids.keys().map(|k| k.chars().count()).max().unwrap_or(1);
        Ok(Self { ids, longest })
    }

    /// The ids of one phoneme, if the voice knows it.
    pub fn get(&self, phoneme: &str) -> Option<&[i64]> {
        self.ids.get(phoneme).map(Vec::as_slice)
    }

    /// Splits a phoneme string into the map's phonemes: code points, merging runs that form a
    /// longer key (the longest match wins).
    pub fn tokens(&self, phonemes: &str) -> Vec<String> {
        let chars: Vec<char> = phonemes.chars().collect();
        let mut tokens = Vec::with_capacity(chars.len());
        let mut i = 0;
        while i < chars.len() {
            let mut taken = 1;
            for length in (2..=self.longest.min(chars.len() - i)).rev() {
                let candidate: String = chars[i..i + length].iter().collect();
                if self.ids.contains_key(&candidate) {
                    taken = length;
                    break;
                }
            }
            tokens.push(chars[i..i + taken].iter().collect());
            i += taken;
        }
        tokens
    }

    /// The ids of a phoneme sequence framed as Piper frames them: `^ _ (phoneme _)* $`.
    /// Returns the ids and the phonemes the map lacks, with their counts.
    pub fn ids(&self, phonemes: &[String]) -> (Vec<i64>, BTreeMap<String, usize>) {
        let pad = self.get(PAD).unwrap_or(&[]);
        let mut ids = Vec::with_capacity(phonemes.len() * 2 + 3);
        let mut missing = BTreeMap::new();
        ids.extend_from_slice(self.get(BOS).unwrap_or(&[]));
        ids.extend_from_slice(pad);
        for phoneme in phonemes {
            match self.get(phoneme) {
                Some(found) => {
                    ids.extend_from_slice(found);
                    ids.extend_from_slice(pad);
                }
                None => *missing.entry(phoneme.clone()).or_insert(0) += 1,
            }
        }
        ids.extend_from_slice(self.get(EOS).unwrap_or(&[]));
        (ids, missing)
    }
}

/// How a voice turns text into phonemes (`phoneme_type` in its configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhonemeType {
    /// eSpeak NG IPA phonemes with the given eSpeak voice (`en-us`).
    Espeak { voice: String },
    /// The text's own code points, lower-cased.
    Text,
}

/// Everything needed to turn text into a voice's phoneme ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phonemizer {
    pub kind: PhonemeType,
    /// Replacements applied to single phonemes after decomposition.
    pub phoneme_map: HashMap<String, Vec<String>>,
    pub id_map: PhonemeIdMap,
}

impl Phonemizer {
    /// The phoneme string of `text`, punctuation kept, before decomposition.
    pub fn phonemes(&self, text: &str) -> Result<String, EngineError> {
        match &self.kind {
            PhonemeType::Espeak { voice } => {
                let mut espeak = Espeak::lock()?;
                espeak.set_voice(voice).map_err(|_| {
                    EngineError::unavailable(format!(
                        "the voice needs the eSpeak NG voice `{voice}`, which is not installed"
                    ))
                })?;
                let clauses = espeak.phonemize(text)?;
                drop(espeak);
                Ok(join_clauses(text, &clauses))
            }
            PhonemeType::Text => Ok(text.to_lowercase()),
        }
    }

    /// The phoneme ids of `text`, framed with BOS, pads and EOS.
    pub fn phoneme_ids(&self, text: &str) -> Result<Vec<i64>, EngineError> {
        let phonemes = self.phonemes(text)?;
        let tokens = self.id_map.tokens(&phonemes.nfd().collect::<String>());
        let tokens: Vec<String> = if self.phoneme_map.is_empty() {
            tokens
        } else {
            tokens
                .into_iter()
                .flat_map(|token| match self.phoneme_map.get(&token) {
                    Some(mapped) => mapped.clone(),
                    None => vec![token],
                })
                .collect()
        };
        let (ids, missing) = self.id_map.ids(&tokens);
        if !missing.is_empty() {
            tracing::debug!(
                ?missing,
                "phonemes missing from the voice's id map were skipped"
            );
        }
        Ok(ids)
    }
}

/// Joins eSpeak's clauses into one phoneme string, putting back the punctuation that ended
/// each clause and dropping language-switch flags.
pub fn join_clauses(text: &str, clauses: &[PhonemeClause]) -> String {
    let mut out = String::new();
    let last = clauses.len().saturating_sub(1);
    for (index, clause) in clauses.iter().enumerate() {
        push_without_flags(&mut out, &clause.phonemes);
        let Some((position, mark)) = terminator(text, clause) else {
            if index != last && !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            continue;
        };
        match mark {
            '.' if is_abbreviation_dot(text, position) => {
                if index != last {
                    out.push(' ');
                }
            }
            '.' | '?' | '!' => {
                out.push(mark);
                if index != last {
                    out.push(' ');
                }
            }
            _ => {
                out.push(mark);
                out.push(' ');
            }
        }
    }
    out
}

/// The punctuation that ended a clause (its last non-space character), normalised to the
/// six marks Piper voices know, with its byte position in `text`.
fn terminator(text: &str, clause: &PhonemeClause) -> Option<(usize, char)> {
    let consumed = text.get(clause.text.clone())?;
    let (offset, last) = consumed
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_whitespace())?;
    let mark = match last {
        '.' | '。' | '…' | '।' | '۔' => '.',
        '?' | '？' | '؟' | '\u{037E}' => '?',
        '!' | '！' => '!',
        ',' | '，' | '、' | '،' => ',',
        ':' | '：' => ':',
        ';' | '；' | '؛' => ';',
        _ => return None,
    };
    Some((clause.text.start + offset, mark))
}

/// Appends eSpeak phonemes without the `(xx)` flags that surround words of another language.
fn push_without_flags(out: &mut String, phonemes: &str) {
    let mut in_flag = false;
    for c in phonemes.chars() {
        match c {
            '(' if !in_flag => in_flag = true,
            ')' if in_flag => in_flag = false,
            _ if in_flag => {}
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joe_like_map() -> PhonemeIdMap {
        let symbols = [
            "_", "^", "$", " ", "!", "'", "(", ")", ",", "-", ".", ":", ";", "?", "a", "b", "c",
            "d", "e", "f", "h", "i", "j", "k", "l", "m", "n", "o", "p", "s", "t", "u", "w", "z",
            "ə", "ɛ", "ɪ", "ɹ", "ʊ", "ˈ", "ˌ", "ː", "ð", "θ", "\u{327}",
        ];
        PhonemeIdMap::new(
            symbols
                .iter()
                .enumerate()
                .map(|(i, s)| (s.to_string(), vec![i as i64]))
                .collect(),
        )
        .unwrap()
    }

    fn clause(phonemes: &str, text: std::ops::Range<usize>) -> PhonemeClause {
        PhonemeClause {
            phonemes: phonemes.into(),
            text,
        }
    }

    #[test]
    fn puts_clause_punctuation_back() {
        let text = "Hello, world! Dr. Who? ok";
        let clauses = [
            clause("həlˈoʊ", 0..7),
            clause("wˈɜːld", 7..14),
            clause("dˈɑːktɚ", 14..18),
            clause("hˈuː", 18..23),
            clause("(en)ˌoʊkˈeɪ(fr)", 23..25),
        ];
        assert_eq!(
            join_clauses(text, &clauses),
            "həlˈoʊ, wˈɜːld! dˈɑːktɚ hˈuː? ˌoʊkˈeɪ"
        );
    }

    #[test]
    fn ids_are_framed_and_padded() {
        let map = joe_like_map();
        let tokens = map.tokens("ab c");
        let (ids, missing) = map.ids(&tokens);
        let id = |s: &str| map.get(s).unwrap()[0];
        assert_eq!(
            ids,
            vec![
                id("^"),
                id("_"),
                id("a"),
                id("_"),
                id("b"),
                id("_"),
                id(" "),
                id("_"),
                id("c"),
                id("_"),
                id("$")
            ]
        );
        assert!(missing.is_empty());
        let (_, missing) = map.ids(&map.tokens("aqa"));
        assert_eq!(missing.get("q"), Some(&1));
    }

    #[test]
    fn multi_code_point_keys_match_longest_first() {
        let mut ids: HashMap<String, Vec<i64>> =
            [("_", 0), ("^", 1), ("$", 2), ("a", 3), ("ɪ", 4), ("aɪ", 5)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), vec![v]))
                .collect();
        ids.insert("t".into(), vec![6]);
        let map = PhonemeIdMap::new(ids).unwrap();
        assert_eq!(map.tokens("taɪa"), vec!["t", "aɪ", "a"]);
    }

    #[test]
    fn a_map_without_pad_is_refused() {
        let ids = [("^", vec![1]), ("$", vec![2])]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert!(PhonemeIdMap::new(ids).is_err());
    }

    #[test]
    fn espeak_phonemes_keep_punctuation_and_decompose() {
        let phonemizer = Phonemizer {
            kind: PhonemeType::Espeak {
                voice: "en-us".into(),
            },
            phoneme_map: HashMap::new(),
            id_map: joe_like_map(),
        };
        let phonemes = phonemizer
            .phonemes("Hello, this is a test. Is it?")
            .unwrap();
        assert!(phonemes.starts_with("həlˈoʊ, "), "{phonemes}");
        assert!(phonemes.contains("tˈɛst. "), "{phonemes}");
        assert!(phonemes.ends_with('?'), "{phonemes}");
        // NFD splits precomposed letters so the map's combining marks apply.
        let tokens = phonemizer.id_map.tokens(&"ç".nfd().collect::<String>());
        assert_eq!(tokens, vec!["c", "\u{327}"]);
    }
}
