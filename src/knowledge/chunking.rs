//! Splitting a document into chunks for embedding. Boundaries are tried in order: paragraph,
//! then sentence, then word, so a chunk holds whole paragraphs when they fit, whole sentences
//! when a paragraph does not, and whole words otherwise. A chunk never exceeds `size`
//! characters (Unicode scalar values) and never cuts a word, except a single "word" longer
//! than `size` on its own (a long URL or token), which is split at `size`. Each chunk after
//! the first starts with up to `overlap` characters of the previous chunk's end, cut at a word
//! boundary. Transcripts keep each speaker line whole where it fits.

/// How the text is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Prose: paragraphs separated by blank lines.
    Text,
    /// One speaker turn per line (`Agent: ...`, `Caller: ...`).
    Transcript,
}

/// A piece of the text that is never split further unless it alone exceeds the size.
#[derive(Debug)]
struct Unit {
    text: String,
    /// Joins this unit to the next one inside a chunk.
    separator: &'static str,
}

/// Splits `text` into chunks of at most `size` characters with about `overlap` characters
/// carried over between neighbours. `overlap` must be smaller than `size`.
pub fn chunk(text: &str, layout: Layout, size: usize, overlap: usize) -> Vec<String> {
    let size = size.max(1);
    let overlap = overlap.min(size.saturating_sub(1));
    let mut units = Vec::new();
    let blocks: Vec<&str> = match layout {
        Layout::Text => split_paragraphs(text),
        Layout::Transcript => text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect(),
    };
    let block_separator = match layout {
        Layout::Text => "\n\n",
        Layout::Transcript => "\n",
    };
    for block in blocks {
        split_block(block, size, block_separator, &mut units);
    }
    pack(units, size, overlap)
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

fn split_paragraphs(text: &str) -> Vec<&str> {
    let mut paragraphs = Vec::new();
    let mut start = 0;
    let mut blank_run = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let is_blank = line.trim().is_empty();
        if is_blank && !blank_run {
            let paragraph = text[start..offset].trim();
            if !paragraph.is_empty() {
                paragraphs.push(paragraph);
            }
        }
        if is_blank {
            start = offset + line.len();
        }
        blank_run = is_blank;
        offset += line.len();
    }
    let last = text[start.min(text.len())..].trim();
    if !last.is_empty() {
        paragraphs.push(last);
    }
    paragraphs
}

/// Adds one paragraph or line as units: whole if it fits, else its sentences, else words.
fn split_block(block: &str, size: usize, separator: &'static str, units: &mut Vec<Unit>) {
    let block = collapse_spaces(block);
    if chars(&block) <= size {
        units.push(Unit {
            text: block,
            separator,
        });
        return;
    }
    let sentences = split_sentences(&block);
    let count = sentences.len();
    for (index, sentence) in sentences.into_iter().enumerate() {
        let last = index + 1 == count;
        if chars(sentence) <= size {
            units.push(Unit {
                text: sentence.to_string(),
                separator: if last { separator } else { " " },
            });
            continue;
        }
        let words: Vec<&str> = sentence.split_whitespace().collect();
        let word_count = words.len();
        for (w, word) in words.into_iter().enumerate() {
            let sep = if last && w + 1 == word_count {
                separator
            } else {
                " "
            };
            if chars(word) <= size {
                units.push(Unit {
                    text: word.to_string(),
                    separator: sep,
                });
            } else {
                // A single token longer than a chunk: the only case that is cut.
                let pieces: Vec<char> = word.chars().collect();
                let parts = pieces.chunks(size).count();
                for (p, piece) in pieces.chunks(size).enumerate() {
                    units.push(Unit {
                        text: piece.iter().collect(),
                        separator: if p + 1 == parts { sep } else { "" },
                    });
                }
            }
        }
    }
}

/// Runs of spaces and tabs inside a line become one space; line breaks stay.
fn collapse_spaces(text: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Sentences end at `.`, `!` or `?` (with closing quotes or brackets) followed by whitespace,
/// but not after common abbreviations or single initials, and never inside a number.
fn split_sentences(text: &str) -> Vec<&str> {
    const ABBREVIATIONS: [&str; 16] = [
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "no", "inc",
        "ltd", "co",
    ];
    let mut sentences = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if matches!(c, b'.' | b'!' | b'?') {
            let mut end = i + 1;
            while end < bytes.len()
                && matches!(bytes[end], b'"' | b'\'' | b')' | b']' | b'.' | b'!' | b'?')
            {
                end += 1;
            }
            let followed_by_space = end >= bytes.len() || bytes[end].is_ascii_whitespace();
            let word_before = text[start..i]
                .rsplit(|ch: char| ch.is_whitespace())
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            let abbreviation = c == b'.'
                && (ABBREVIATIONS.contains(&word_before.as_str())
                    || word_before.contains('.')
                    || (word_before.chars().count() == 1
                        && word_before.chars().all(char::is_alphabetic)));
            if followed_by_space && !abbreviation {
                let sentence = text[start..end].trim();
                if !sentence.is_empty() {
                    sentences.push(sentence);
                }
                start = end;
            }
            i = end;
            continue;
        }
        i += 1;
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        sentences.push(rest);
    }
    sentences
}

/// Packs units greedily into chunks of at most `size` characters, each new chunk starting
/// with the previous one's last words (at most `overlap` characters) when they fit.
fn pack(units: Vec<Unit>, size: usize, overlap: usize) -> Vec<String> {
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    let mut pending_separator = "";
    // True while the chunk holds nothing of its own yet.
    let mut fresh = true;
    for unit in units {
        let unit_len = chars(&unit.text);
        let joined = current_len + chars(pending_separator) + unit_len;
        if current_len > 0 && joined > size {
            if !fresh {
                chunks.push(current.clone());
            }
            let carried = tail_words(&current, overlap);
            let carried_len = chars(&carried);
            if !carried.is_empty() && carried_len + 1 + unit_len <= size {
                current = carried;
                current_len = carried_len;
                pending_separator = " ";
            } else {
                current.clear();
                current_len = 0;
                pending_separator = "";
            }
        }
        if current_len > 0 {
            current.push_str(pending_separator);
            current_len += chars(pending_separator);
        }
        current.push_str(&unit.text);
        current_len += unit_len;
        pending_separator = unit.separator;
        fresh = false;
    }
    if !fresh && !current.trim().is_empty() {
        chunks.push(current);
    }
    chunks
}

/// The last whole words of `text` that fit in `limit` characters.
fn tail_words(text: &str, limit: usize) -> String {
    if limit == 0 {
        return String::new();
    }
    let mut taken: Vec<&str> = Vec::new();
    let mut length = 0;
    for word in text.split_whitespace().rev() {
        let extra = chars(word) + usize::from(!taken.is_empty());
        if length + extra > limit {
            break;
        }
        length += extra;
        taken.push(word);
    }
    taken.reverse();
    taken.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_of(text: &str) -> Vec<&str> {
        text.split_whitespace().collect()
    }

    const FAQ: &str = "Our store opens at 9 a.m. and closes at 6 p.m. on weekdays. On Saturdays we open at 10.\n\n\
Returns are accepted within 30 days of purchase. Items must be unused and in their original packaging. \
Refunds go back to the original payment method within 5 business days.\n\n\
Dr. Smith leads the repair team. Repairs cost $49.99 for a diagnosis, which is waived if you go ahead with the repair.";

    #[test]
    fn whole_paragraphs_stay_together_when_they_fit() {
        let chunks = chunk(FAQ, Layout::Text, 1000, 0);
        assert_eq!(chunks.len(), 1);
        let chunks = chunk(FAQ, Layout::Text, 200, 0);
        assert!(chunks.iter().all(|c| chars(c) <= 200), "{chunks:#?}");
        assert!(chunks[0].starts_with("Our store opens"));
        assert!(chunks[0].ends_with("we open at 10."), "{chunks:#?}");
    }

    #[test]
    fn no_chunk_exceeds_the_size_and_no_word_is_cut() {
        let original: Vec<&str> = words_of(FAQ);
        for size in [100, 137, 250, 400] {
            for overlap in [0, 20, 60] {
                let chunks = chunk(FAQ, Layout::Text, size, overlap);
                for c in &chunks {
                    assert!(chars(c) <= size, "size {size}: {} chars: {c}", chars(c));
                    for word in words_of(c) {
                        assert!(original.contains(&word), "cut word {word:?} at size {size}");
                    }
                }
                // Without overlap, the chunks are the document's words, in order, once.
                if overlap == 0 {
                    let joined: Vec<&str> = chunks.iter().flat_map(|c| words_of(c)).collect();
                    assert_eq!(joined, original, "size {size}");
                }
            }
        }
    }

    #[test]
    fn sentences_are_not_split_at_abbreviations_or_decimals() {
        let sentences =
            split_sentences("Dr. Smith charges $49.99 today. See you at 9 a.m. tomorrow! Bye.");
        assert_eq!(
            sentences,
            [
                "Dr. Smith charges $49.99 today.",
                "See you at 9 a.m. tomorrow!",
                "Bye."
            ]
        );
    }

    #[test]
    fn neighbours_overlap_by_whole_words() {
        let text = (1..=200)
            .map(|i| format!("word{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let chunks = chunk(&text, Layout::Text, 100, 30);
        assert!(chunks.len() > 5);
        for pair in chunks.windows(2) {
            let previous_tail = words_of(&pair[0]);
            let first_next = words_of(&pair[1])[0];
            assert!(previous_tail.contains(&first_next), "no overlap: {pair:?}");
            let carried: usize = words_of(&pair[1])
                .iter()
                .take_while(|w| previous_tail.contains(w))
                .map(|w| w.len() + 1)
                .sum();
            assert!(carried <= 31, "overlap of {carried} chars");
        }
    }

    #[test]
    fn a_token_longer_than_a_chunk_is_the_only_thing_cut() {
        let url = format!("https://example.com/{}", "a".repeat(250));
        let chunks = chunk(&format!("See {url} now."), Layout::Text, 100, 0);
        assert!(chunks.iter().all(|c| chars(c) <= 100));
        let rejoined: String = chunks.concat();
        assert!(rejoined.replace(' ', "").contains(&url));
    }

    #[test]
    fn transcripts_keep_speaker_lines_whole() {
        let transcript = "Agent: Thanks for calling, how can I help?\nCaller: My order has not arrived yet.\nAgent: Let me look that up for you.\nCaller: It was order 5521.";
        let chunks = chunk(transcript, Layout::Transcript, 90, 0);
        for c in &chunks {
            for line in c.lines() {
                assert!(
                    line.starts_with("Agent:") || line.starts_with("Caller:"),
                    "{c:?}"
                );
                assert!(
                    transcript.lines().any(|l| l == line),
                    "a line was split: {line:?}"
                );
            }
        }
    }

    #[test]
    fn blank_input_gives_no_chunks() {
        assert!(chunk("   \n\n  ", Layout::Text, 100, 10).is_empty());
    }
}
