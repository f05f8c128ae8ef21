//! Splitting text into the pieces synthesized one at a time: sentences, and long sentences
//! further at clause punctuation so that the first audio is ready quickly (the first sentence
//! is split from a lower length than the others).
//!
//! A sentence ends at `.`, `!`, `?`, `…` and their equivalents in other scripts (`。！？`,
//! `؟`, `।`, ...), together with any closing quotes or brackets after them. A full stop does
//! not end a sentence after an abbreviation (`Dr.`, `e.g.`), an initial (`J. R. R.`), inside
//! a number (`3.5`) or before a lower-case word. Numbers, symbols and the rest of text
//! normalisation are left to eSpeak NG.

/// A sentence longer than this (in characters) is split at clause punctuation.
pub const LONG_SENTENCE_CHARS: usize = 100;
/// A clause split off a long sentence has at least this many characters.
pub const MIN_CLAUSE_CHARS: usize = 24;

/// One piece of text to synthesize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The text, trimmed.
    pub text: String,
    /// True when the piece ends a sentence (not a clause of a longer one).
    pub ends_sentence: bool,
}

/// Abbreviations whose full stop does not end a sentence (compared without case).
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "mx", "dr", "prof", "st", "jr", "sr", "vs", "e.g", "i.e", "cf", "inc",
    "ltd", "co", "corp", "fig", "figs", "approx", "mt", "ave", "capt", "sgt", "lt", "dept", "univ",
    "vol", "pp", "jan", "feb", "apr", "aug", "sep", "sept", "oct", "nov", "dec", "a.m", "p.m",
    "u.s", "u.k", "z.b", "bzw", "usw", "nr", "hr", "fr", "mme", "mlle", "sra", "av",
];

/// Closing quotes and brackets that belong to the sentence before them.
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '}' | '»' | '”' | '’' | '›' | '」' | '』' | '）' | '】'
    )
}

/// Sentence terminators that need no space after them (scripts written without spaces).
fn is_spaceless_terminator(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '｡')
}

fn is_terminator(c: char) -> bool {
    matches!(
        c,
        '.' | '!'
            | '?'
            | '…'
            | '‼'
            | '⁇'
            | '⁈'
            | '⁉'
            | '؟'
            | '۔'
            | '।'
            | '॥'
            | '։'
            | '።'
            | '\u{037E}'
    ) || is_spaceless_terminator(c)
}

/// Clause punctuation a long sentence may be split at.
fn is_clause_mark(c: char) -> bool {
    matches!(
        c,
        ',' | ';' | ':' | '—' | '–' | '،' | '，' | '、' | '；' | '：'
    )
}

/// True when the full stop at byte `dot` of `text` ends an abbreviation or an initial.
pub fn is_abbreviation_dot(text: &str, dot: usize) -> bool {
    let before = &text[..dot];
    let word_start = before
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace() || matches!(c, '(' | '"' | '“' | '\''))
        .map_or(0, |(index, c)| index + c.len_utf8());
    let word = &before[word_start..];
    if word.is_empty() {
        return false;
    }
    let mut letters = word.chars();
    // A single capital letter: an initial (J. R. R. Tolkien).
    if let (Some(first), None) = (letters.next(), letters.next()) {
        if first.is_uppercase() {
            return true;
        }
    }
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

/// The first sentence is split at clauses from this length on, so the first audio comes
/// sooner.
pub const LONG_FIRST_SENTENCE_CHARS: usize = 50;

/// Splits text into sentences, and long sentences into clauses. Empty pieces are dropped.
pub fn split(text: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    for (index, sentence) in sentences(text).into_iter().enumerate() {
        let limit = if index == 0 {
            LONG_FIRST_SENTENCE_CHARS
        } else {
            LONG_SENTENCE_CHARS
        };
        if sentence.chars().count() > limit {
            let clauses = clauses(&sentence);
            let last = clauses.len().saturating_sub(1);
            segments.extend(
                clauses
                    .into_iter()
                    .enumerate()
                    .map(|(index, text)| Segment {
                        text,
                        ends_sentence: index == last,
                    }),
            );
        } else {
            segments.push(Segment {
                text: sentence,
                ends_sentence: true,
            });
        }
    }
    segments
}

/// Splits text into trimmed, non-empty sentences.
pub fn sentences(text: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut sentences = Vec::new();
    let mut start = 0usize;
    let mut i = 0usize;
    while i < chars.len() {
        let (index, c) = chars[i];
        // Paragraph breaks end a sentence even without punctuation.
        if c == '\n' && chars.get(i + 1).is_some_and(|&(_, next)| next == '\n') {
            push_trimmed(&mut sentences, &text[start..index]);
            start = index;
            i += 1;
            continue;
        }
        if !is_terminator(c) {
            i += 1;
            continue;
        }
        // A run of terminators ("?!", "...") and the closers after it.
        let mut end = i + 1;
        while end < chars.len() && is_terminator(chars[end].1) {
            end += 1;
        }
        while end < chars.len() && is_closer(chars[end].1) {
            end += 1;
        }
        let end_byte = chars.get(end).map_or(text.len(), |&(b, _)| b);
        let followed_by_space = chars.get(end).is_none_or(|&(_, next)| next.is_whitespace());
        let ends = if is_spaceless_terminator(c) {
            true
        } else if !followed_by_space {
            false
        } else if c == '.' && end == i + 1 + trailing_closers(&chars, i + 1) {
            // A single full stop: not after an abbreviation, nor before a lower-case word.
            !is_abbreviation_dot(text, index) && !next_word_is_lowercase(&chars, end)
        } else {
            true
        };
        if ends {
            push_trimmed(&mut sentences, &text[start..end_byte]);
            start = end_byte;
        }
        i = end;
    }
    push_trimmed(&mut sentences, &text[start..]);
    sentences
}

fn trailing_closers(chars: &[(usize, char)], from: usize) -> usize {
    chars[from.min(chars.len())..]
        .iter()
        .take_while(|(_, c)| is_closer(*c))
        .count()
}

fn next_word_is_lowercase(chars: &[(usize, char)], from: usize) -> bool {
    chars[from.min(chars.len())..]
        .iter()
        .map(|&(_, c)| c)
        .find(|c| !c.is_whitespace())
        .is_some_and(char::is_lowercase)
}

fn push_trimmed(out: &mut Vec<String>, piece: &str) {
    let piece = piece.trim();
    if piece.chars().any(char::is_alphanumeric) {
        out.push(piece.to_owned());
    } else if let Some(previous) = out.last_mut().filter(|_| !piece.is_empty()) {
        // Stray punctuation (a lone quote or bracket) stays with the sentence before it.
        previous.push(' ');
        previous.push_str(piece);
    }
}

/// Splits one long sentence at clause punctuation followed by a space, into pieces of at
/// least [`MIN_CLAUSE_CHARS`] characters (a short tail joins the piece before it).
pub fn clauses(sentence: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = sentence.char_indices().collect();
    let mut pieces: Vec<String> = Vec::new();
    let mut start = 0usize;
    let mut length = 0usize;
    for (i, &(index, c)) in chars.iter().enumerate() {
        length += 1;
        let next_is_space = chars.get(i + 1).is_some_and(|&(_, n)| n.is_whitespace());
        let wide = matches!(c, '，' | '、' | '；' | '：');
        if is_clause_mark(c) && (next_is_space || wide) && length >= MIN_CLAUSE_CHARS {
            let end = index + c.len_utf8();
            let piece = sentence[start..end].trim();
            if !piece.is_empty() {
                pieces.push(piece.to_owned());
            }
            start = end;
            length = 0;
        }
    }
    let tail = sentence[start..].trim();
    if !tail.is_empty() {
        match pieces.last_mut() {
            Some(last) if tail.chars().count() < MIN_CLAUSE_CHARS => {
                last.push(' ');
                last.push_str(tail);
            }
            _ => pieces.push(tail.to_owned()),
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sentences_at_terminators() {
        assert_eq!(
            sentences("Hello there. How are you? Fine!  Good…"),
            vec!["Hello there.", "How are you?", "Fine!", "Good…"]
        );
    }

    #[test]
    fn keeps_abbreviations_decimals_and_initials_inside() {
        assert_eq!(
            sentences("Dr. Smith paid 3.5 dollars, e.g. to J. R. R. Tolkien. Then he left."),
            vec![
                "Dr. Smith paid 3.5 dollars, e.g. to J. R. R. Tolkien.",
                "Then he left."
            ]
        );
        assert_eq!(
            sentences("It costs approx. five euros. Version 2.0.1 is out."),
            vec!["It costs approx. five euros.", "Version 2.0.1 is out."]
        );
    }

    #[test]
    fn closing_quotes_stay_with_their_sentence() {
        assert_eq!(
            sentences("He said \"stop!\" Then silence. (Really.) Yes?!"),
            vec!["He said \"stop!\"", "Then silence.", "(Really.)", "Yes?!"]
        );
    }

    #[test]
    fn splits_scripts_without_spaces() {
        assert_eq!(
            sentences("你好。我很好！谢谢"),
            vec!["你好。", "我很好！", "谢谢"]
        );
    }

    #[test]
    fn text_without_words_gives_nothing() {
        assert!(sentences("   ").is_empty());
        assert!(sentences("...").is_empty());
        assert_eq!(sentences("Wait... what?"), vec!["Wait...", "what?"]);
    }

    #[test]
    fn long_sentences_split_at_clauses() {
        let long = "When the meeting finally ended late in the evening, everybody went home, \
                    and the building, which had been noisy all day, was quiet at last; nobody \
                    stayed behind.";
        let segments = split(long);
        assert!(segments.len() >= 3, "{segments:?}");
        assert!(segments[..segments.len() - 1]
            .iter()
            .all(|s| !s.ends_sentence && s.text.chars().count() >= MIN_CLAUSE_CHARS));
        assert!(segments.last().unwrap().ends_sentence);
        let joined: Vec<&str> = segments.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            joined.join(" "),
            long.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        // Thousands separators are not clause marks.
        assert_eq!(
            clauses("It cost 1,000,000 dollars in total, said the treasurer of the club"),
            vec![
                "It cost 1,000,000 dollars in total,",
                "said the treasurer of the club"
            ]
        );
    }

    #[test]
    fn short_sentences_are_not_split() {
        let segments = split("Yes, of course, I can.");
        assert_eq!(segments.len(), 1);
        assert!(segments[0].ends_sentence);
    }

    #[test]
    fn the_first_sentence_splits_earlier() {
        let sentence = "Thanks for waiting on the line, I have found your booking.";
        let segments = split(&format!("{sentence} {sentence}"));
        let texts: Vec<&str> = segments.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "Thanks for waiting on the line,",
                "I have found your booking.",
                sentence
            ]
        );
        assert!(!segments[0].ends_sentence && segments[1].ends_sentence);
    }
}
