#![no_main]
//! The knowledge chunker (`knowledge::chunking::chunk`) against the invariants docs/api.md
//! documents: no chunk exceeds `chunkSize` characters, no word is cut (except a single token
//! longer than a chunk, cut into pieces of `chunkSize`), and each chunk after the first starts
//! with at most `chunkOverlap` characters of whole words from the previous chunk's end, after
//! which the document's words continue in order, none lost or repeated.
//!
//! Input: the layout (bit 0 of the first byte), the size (next two bytes, 1 to 4000), the
//! overlap (next two bytes, below the size), then the text.

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use switchboard::knowledge::chunking::{chunk, Layout};

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// The document's words as they may appear in chunks: whole, or cut into `size` pieces
/// when longer than a chunk.
fn expected_words(text: &str, size: usize) -> Vec<String> {
    let mut words = Vec::new();
    for word in text.split_whitespace() {
        if chars(word) <= size {
            words.push(word.to_string());
        } else {
            let letters: Vec<char> = word.chars().collect();
            words.extend(letters.chunks(size).map(|piece| piece.iter().collect()));
        }
    }
    words
}

fuzz_target!(|data: &[u8]| {
    let [layout, s0, s1, o0, o1, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let layout = if layout & 1 == 0 {
        Layout::Text
    } else {
        Layout::Transcript
    };
    let size = 1 + usize::from(u16::from_le_bytes([*s0, *s1])) % 4000;
    let overlap = usize::from(u16::from_le_bytes([*o0, *o1])) % size;
    let chunks = chunk(text, layout, size, overlap);

    let expected = expected_words(text, size);
    // Where the document may continue after each chunk: repeated words can make the carried
    // part ambiguous, so every reading is followed.
    let mut positions = BTreeSet::from([0usize]);
    let mut previous: Vec<&str> = Vec::new();
    for (index, piece) in chunks.iter().enumerate() {
        assert!(
            chars(piece) <= size,
            "chunk {index} has {} characters, more than {size}: {piece:?}",
            chars(piece)
        );
        let words: Vec<&str> = piece.split_whitespace().collect();
        assert!(!words.is_empty(), "chunk {index} is blank: {piece:?}");
        let mut following = BTreeSet::new();
        // `carried` words from the previous chunk's end, then at least one of its own.
        for carried in 0..words.len().min(previous.len() + 1) {
            if words[..carried] != previous[previous.len() - carried..] {
                continue;
            }
            let carried_chars = words[..carried].iter().map(|w| chars(w)).sum::<usize>()
                + carried.saturating_sub(1);
            if carried_chars > overlap {
                continue;
            }
            let fresh = &words[carried..];
            for &next in &positions {
                if expected.len() - next >= fresh.len()
                    && fresh.iter().zip(&expected[next..]).all(|(a, b)| a == b)
                {
                    following.insert(next + fresh.len());
                }
            }
        }
        assert!(
            !following.is_empty(),
            "chunk {index} does not continue the document after at most {overlap} characters \
             of the previous chunk (size {size}): {piece:?}"
        );
        positions = following;
        previous = words;
    }
    assert!(
        positions.contains(&expected.len()),
        "words were lost: the chunks end at word {positions:?} of {}",
        expected.len()
    );
});
