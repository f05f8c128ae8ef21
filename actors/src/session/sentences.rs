//! Cutting a model's token stream into speakable pieces as it arrives, so synthesis can start
//! on the first sentence while the model is still writing the rest.
//!
//! A piece ends at `.`, `!` or `?` followed by whitespace (closing quotes and brackets stay
//! with it), or at a line break. Once a run has grown past a clause threshold it may also end
//! at `,`, `;` or `:` followed by whitespace. A full stop is not an end inside a number
//! (`3.5`: no whitespace follows), after a known abbreviation (`Dr.`, `e.g.`) or after a
//! single-letter initial (`J. Smith`). A terminator at the very end of the buffer waits for
//! the next token, which may turn `3.` into `3.5`.

/// Abbreviations (lower case, without the final dot) after which a full stop does not end a
/// sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "inc", "ltd",
    "co", "corp", "mt", "ave", "approx", "dept", "est", "fig", "no", "vol", "u.s", "a.m", "p.m",
];

/// Characters that may follow a terminator and still belong to the sentence.
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '.' | '!' | '?' | '"' | '\'' | ')' | ']' | '}' | '\u{201D}' | '\u{2019}' | '\u{2026}'
    )
}

/// Default length (in bytes) after which a run may be cut at a clause mark.
pub const DEFAULT_CLAUSE_MIN_LEN: usize = 60;

/// Incremental sentence splitter for streamed text.
#[derive(Debug, Clone)]
pub struct SentenceSplitter {
    buf: String,
    clause_min_len: usize,
}

impl Default for SentenceSplitter {
    fn default() -> Self {
        Self::new(DEFAULT_CLAUSE_MIN_LEN)
    }
}

impl SentenceSplitter {
    /// A splitter that cuts at clause marks once a run is `clause_min_len` bytes long.
    pub fn new(clause_min_len: usize) -> Self {
        Self {
            buf: String::new(),
            clause_min_len,
        }
    }

    /// Appends streamed text; returns the pieces it completes, trimmed, in order.
    pub fn push(&mut self, delta: &str) -> Vec<String> {
        self.buf.push_str(delta);
        let mut out = Vec::new();
        while let Some(end) = self.find_boundary() {
            let piece = self.buf[..end].trim().to_owned();
            self.buf.drain(..end);
            if !piece.is_empty() {
                out.push(piece);
            }
        }
        out
    }

    /// Returns whatever is left at the end of the stream.
    pub fn flush(&mut self) -> Option<String> {
        let rest = self.buf.trim().to_owned();
        self.buf.clear();
        (!rest.is_empty()).then_some(rest)
    }

    fn find_boundary(&self) -> Option<usize> {
        let buf = self.buf.as_str();
        let mut chars = buf.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '\n' if !buf[..i].trim().is_empty() => return Some(i + 1),
                '.' | '!' | '?' | '\u{2026}' => {
                    let mut end = i + c.len_utf8();
                    while let Some(&(j, next)) = chars.peek() {
                        if is_closer(next) {
                            end = j + next.len_utf8();
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    match buf[end..].chars().next() {
                        // The next token decides (`3.` may become `3.5`).
                        None => return None,
                        Some(next) if next.is_whitespace() => {
                            if c == '.' && ends_with_abbreviation(&buf[..i]) {
                                continue;
                            }
                            return Some(end);
                        }
                        Some(_) => continue,
                    }
                }
                ',' | ';' | ':' if i >= self.clause_min_len => match buf[i + 1..].chars().next() {
                    None => return None,
                    Some(next) if next.is_whitespace() => return Some(i + 1),
                    Some(_) => continue,
                },
                _ => {}
            }
        }
        None
    }
}

/// Whether the word before a full stop at the end of `before` is an abbreviation or an
/// initial, so the stop does not end the sentence.
fn ends_with_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(' || c == '"')
        .next()
        .unwrap_or("");
    if word.is_empty() {
        return false;
    }
    let mut letters = word.chars();
    if let (Some(first), None) = (letters.next(), letters.next()) {
        // A single capital letter: an initial (`J. Smith`).
        return first.is_uppercase();
    }
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

/// Splits a whole text into the same pieces the streaming splitter would produce.
pub fn split_text(text: &str) -> Vec<String> {
    let mut s = SentenceSplitter::default();
    let mut out = s.push(text);
    out.extend(s.flush());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tokens: &[&str]) -> Vec<String> {
        let mut s = SentenceSplitter::default();
        let mut out = Vec::new();
        for t in tokens {
            out.extend(s.push(t));
        }
        out.extend(s.flush());
        out
    }

    #[test]
    fn sentences_are_cut_as_tokens_arrive() {
        let mut s = SentenceSplitter::default();
        assert!(s.push("Hello there").is_empty());
        assert!(s.push("! How").is_empty() || s.push("").is_empty());
        let got = s.push(" are you? I");
        assert_eq!(got, vec!["How are you?"]);
        assert_eq!(s.flush().as_deref(), Some("I"));
    }

    #[test]
    fn first_piece_is_released_when_whitespace_follows() {
        let mut s = SentenceSplitter::default();
        assert!(s.push("Hello there!").is_empty());
        assert_eq!(s.push(" How"), vec!["Hello there!"]);
    }

    #[test]
    fn numbers_and_abbreviations_do_not_end_sentences() {
        assert_eq!(
            stream(&[
                "It costs 3",
                ".",
                "5 dollars. Dr",
                ". Smith said so, e.g. today. ",
                "J. Doe agrees."
            ]),
            vec![
                "It costs 3.5 dollars.",
                "Dr. Smith said so, e.g. today.",
                "J. Doe agrees."
            ]
        );
    }

    #[test]
    fn long_runs_are_cut_at_clause_marks() {
        let text = "When you arrive at the station on the north side of the river, \
                    take the second exit; then walk for 1,000 meters: the office is there";
        let got = split_text(text);
        assert_eq!(
            got,
            vec![
                "When you arrive at the station on the north side of the river,",
                "take the second exit; then walk for 1,000 meters: the office is there"
            ]
        );
    }

    #[test]
    fn short_runs_keep_their_commas() {
        assert_eq!(split_text("Yes, sure. Bye."), vec!["Yes, sure.", "Bye."]);
    }

    #[test]
    fn closers_and_line_breaks() {
        assert_eq!(
            split_text("He said \"stop!\" Then he left.\nNext line"),
            vec!["He said \"stop!\"", "Then he left.", "Next line"]
        );
        assert_eq!(split_text("Wait... what?"), vec!["Wait...", "what?"]);
    }
}
