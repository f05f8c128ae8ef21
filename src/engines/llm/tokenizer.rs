//! The language model's tokenizer, rebuilt from the vocabulary and merges stored in the GGUF
//! file, and the incremental UTF-8 decoder used to stream generated text.
//!
//! SmolLM2 splits digits one by one and then applies GPT-2's byte-level BPE *without* a
//! leading space (`pre = "smollm"` in llama.cpp terms). A generic GGUF tokenizer would add the
//! GPT-2 prefix space, so `decode(encode(x))` would not give `x` back and prompts would differ
//! from the ones the model was trained on; this module builds the pipeline explicitly.
//!
//! Text is always encoded without special-token parsing: `<|im_start|>` typed by a user stays
//! plain text. The chat template inserts control tokens by id.

use std::collections::HashMap;

use candle_core::quantized::gguf_file;
use switchboard_actors::engine::EngineError;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::Tokenizer;

/// GGUF token types (llama.cpp's `llama_token_type`).
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;

/// Byte-level BPE tokenizer of the local language model.
pub struct LlmTokenizer {
    tokenizer: Tokenizer,
    /// The raw bytes each token stands for (control tokens: their text).
    token_bytes: Vec<Vec<u8>>,
    control: Vec<bool>,
    by_text: HashMap<String, u32>,
    eos: Option<u32>,
}

/// GPT-2's reversible byte-to-character table: printable bytes map to themselves, the others
/// to code points from U+0100 on. Returns the inverse (character to byte).
fn unicode_to_byte() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut next = 256u32;
    for byte in 0u32..=255 {
        let printable = (33..=126).contains(&byte)
            || (161..=172).contains(&byte)
            || (174..=255).contains(&byte);
        let ch = if printable {
            byte
        } else {
            let ch = next;
            next += 1;
            ch
        };
        if let Some(ch) = char::from_u32(ch) {
            map.insert(ch, byte as u8);
        }
    }
    map
}

fn string_array(content: &gguf_file::Content, key: &str) -> Result<Vec<String>, EngineError> {
    let values = content
        .metadata
        .get(key)
        .and_then(|v| v.to_vec().ok())
        .ok_or_else(|| EngineError::internal(format!("the GGUF file has no `{key}` array")))?;
    values
        .iter()
        .map(|v| {
            v.to_string().cloned().map_err(|_| {
                EngineError::internal(format!("`{key}` holds a value that is not a string"))
            })
        })
        .collect()
}

fn integer(value: &gguf_file::Value) -> Option<i64> {
    use gguf_file::Value;
    match value {
        Value::U8(v) => Some(i64::from(*v)),
        Value::I8(v) => Some(i64::from(*v)),
        Value::U16(v) => Some(i64::from(*v)),
        Value::I16(v) => Some(i64::from(*v)),
        Value::U32(v) => Some(i64::from(*v)),
        Value::I32(v) => Some(i64::from(*v)),
        Value::U64(v) => i64::try_from(*v).ok(),
        Value::I64(v) => Some(*v),
        _ => None,
    }
}

impl LlmTokenizer {
    /// Builds the tokenizer from `tokenizer.ggml.*` metadata of a `gpt2`-model GGUF.
    pub fn from_gguf(content: &gguf_file::Content) -> Result<Self, EngineError> {
        let model = content
            .metadata
            .get("tokenizer.ggml.model")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if model != "gpt2" {
            return Err(EngineError::internal(format!(
                "the language model's tokenizer is `{model}`; only byte-level BPE (`gpt2`) is supported"
            )));
        }
        let tokens = string_array(content, "tokenizer.ggml.tokens")?;
        let merges = string_array(content, "tokenizer.ggml.merges")?
            .into_iter()
            .map(|merge| {
                merge
                    .split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| EngineError::internal(format!("malformed BPE merge `{merge}`")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let types: Vec<i64> = content
            .metadata
            .get("tokenizer.ggml.token_type")
            .and_then(|v| v.to_vec().ok())
            .map(|values| values.iter().map(|v| integer(v).unwrap_or(1)).collect())
            .unwrap_or_default();
        let eos = content
            .metadata
            .get("tokenizer.ggml.eos_token_id")
            .and_then(integer)
            .and_then(|id| u32::try_from(id).ok());

        let inverse = unicode_to_byte();
        let mut token_bytes = Vec::with_capacity(tokens.len());
        let mut control = Vec::with_capacity(tokens.len());
        let mut vocab = tokenizers::models::bpe::Vocab::default();
        let mut by_text = HashMap::new();
        for (id, token) in tokens.iter().enumerate() {
            let id =
                u32::try_from(id).map_err(|_| EngineError::internal("vocabulary too large"))?;
            let kind = types.get(id as usize).copied().unwrap_or(1);
            let special = kind == TOKEN_TYPE_CONTROL || kind == TOKEN_TYPE_USER_DEFINED;
            control.push(kind == TOKEN_TYPE_CONTROL);
            if special {
                token_bytes.push(token.as_bytes().to_vec());
                by_text.insert(token.clone(), id);
            } else {
                let mut bytes = Vec::with_capacity(token.len());
                for ch in token.chars() {
                    match inverse.get(&ch) {
                        Some(byte) => bytes.push(*byte),
                        None => {
                            let mut buf = [0u8; 4];
                            bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                    }
                }
                token_bytes.push(bytes);
            }
            vocab.insert(token.clone(), id);
        }

        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|err| EngineError::internal(format!("building the BPE model: {err}")))?;
        let mut tokenizer = Tokenizer::new(bpe);
        tokenizer.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
            PreTokenizerWrapper::Digits(Digits::new(true)),
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
        ]))));
        Ok(Self {
            tokenizer,
            token_bytes,
            control,
            by_text,
            eos,
        })
    }

    /// Token ids of `text`, with any special-token text kept as plain text.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let encoding = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|err| EngineError::internal(format!("tokenizing the prompt: {err}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The text of `ids`; invalid UTF-8 (a sequence cut mid-character) becomes U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            bytes.extend_from_slice(self.token_bytes(id));
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The bytes token `id` stands for (empty for an unknown id).
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.token_bytes
            .get(id as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The id of a special token such as `<|im_start|>`.
    pub fn special(&self, text: &str) -> Option<u32> {
        self.by_text.get(text).copied()
    }

    /// True for control tokens (`<|im_end|>`, `<|endoftext|>`, ...), which end generation.
    pub fn is_control(&self, id: u32) -> bool {
        self.control.get(id as usize).copied().unwrap_or(false) || Some(id) == self.eos
    }

    /// Tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.token_bytes.len()
    }
}

/// Turns a stream of token bytes into text pieces that never split a UTF-8 character: bytes
/// of an incomplete character wait for the next token.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds the bytes of one token; returns the text now complete (possibly empty).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(err) => {
                    let valid = err.valid_up_to();
                    // The prefix is valid UTF-8 by construction.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match err.error_len() {
                        // An invalid sequence will never complete: replace it and go on.
                        Some(len) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + len);
                        }
                        // An incomplete character at the end: wait for more bytes.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }

    /// Flushes what is left at the end of generation (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stream_never_splits_a_character() {
        let text = "é 日本 🎉!";
        let mut stream = Utf8Stream::default();
        let mut pieces = Vec::new();
        for byte in text.as_bytes() {
            pieces.push(stream.push(std::slice::from_ref(byte)));
        }
        pieces.push(stream.finish());
        assert_eq!(pieces.concat(), text);
        // Every piece is whole characters: the 4-byte emoji arrives in one piece.
        assert!(pieces.iter().any(|p| p == "🎉"));
        assert!(pieces
            .iter()
            .all(|p| !p.contains(char::REPLACEMENT_CHARACTER)));
    }

    #[test]
    fn utf8_stream_replaces_invalid_bytes() {
        let mut stream = Utf8Stream::default();
        assert_eq!(stream.push(&[b'a', 0xff, b'b']), "a\u{fffd}b");
        assert_eq!(stream.push(&[0xe6]), "");
        assert_eq!(stream.finish(), "\u{fffd}");
    }

    #[test]
    fn byte_table_is_a_bijection() {
        let table = unicode_to_byte();
        assert_eq!(table.len(), 256);
        assert_eq!(table.get(&'Ġ'), Some(&b' '));
        assert_eq!(table.get(&'Ċ'), Some(&b'\n'));
        assert_eq!(table.get(&'a'), Some(&b'a'));
    }
}
