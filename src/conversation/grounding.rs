//! The last guard before a reply reaches the caller: a number, price, date, phone number,
//! address, email or web address the model says must appear in what it was given (its
//! instructions, the retrieved knowledge, tool results, or the conversation). A piece of the
//! reply that states one that does not is dropped, and the caller hears an honest answer
//! instead ("I don't have that information", with what the agent can do), which ends the
//! reply.
//!
//! [`GroundedModel`] wraps any [`LanguageModel`], embedded or vendor, so chat turns and voice
//! sessions get the same guard without knowing of it. It holds streamed text back to the end
//! of each clause (a sentence, or from [`CLAUSE_MIN_CHARS`] a comma), checks it, and passes
//! it on: the voice starts on the first clause as before, at most a clause later.
//!
//! What counts as a claim ([`claims`]): a run of digits (`1,200` and `95.00` normalised to
//! `1200` and `95`; runs of zeros alone, as in `9:00`, are free), a number written in words
//! from ten up or with a currency after it (`ninety-five dollars` is `95`), a month's name,
//! and an email or web address. The allowed set is built once per model request from every
//! message of it; the check per clause allocates nothing but the clause it passes on.
//!
//! What it cannot see: a wrong fact made of allowed parts ("closed on Saturday" when the
//! knowledge says open), numbers spelled digit by digit in words ("five five five"), and
//! street names without a number.

use std::collections::HashSet;
use std::sync::Arc;

use switchboard_actors::engine::{ChatRequest, EngineError, EngineStream, LanguageModel, LlmEvent};
use tokio::sync::mpsc;

/// What the caller hears in place of a clause that states something unsupported.
pub const NOT_KNOWN: &str = "I'm sorry, I don't have that information.";
/// What the agent offers after [`NOT_KNOWN`] when it cannot hand the call to a person.
pub const OFFER_MESSAGE: &str = "I can take a message so someone gets back to you.";
/// What the agent offers after [`NOT_KNOWN`] when it can hand the call to a person.
pub const OFFER_TRANSFER: &str = "I can take a message or transfer you to someone who can help.";
/// A comma ends a checked piece once this much text is held: enough to hold a price or a
/// phone number whole, short enough that the first words reach the voice early.
pub const CLAUSE_MIN_CHARS: usize = 24;
/// Text without a clause end is passed on (checked) at its last space once this much is
/// held, so a model that never punctuates still reaches the voice as it speaks.
pub const MAX_HELD_CHARS: usize = 200;

/// What a reply may say: the claims found in everything the model was given.
#[derive(Debug, Default)]
pub struct Allowed {
    numbers: HashSet<String>,
    /// Bit `m` set: month `m` (0 = January) is named.
    months: u16,
    /// Every message, lowercased, for email and web addresses.
    text: String,
}

impl Allowed {
    /// The claims of `texts`, every number they write counted (small ones in words too).
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Allowed {
        let mut allowed = Allowed::default();
        let mut buffer = String::new();
        for text in texts {
            claims(text, true, &mut buffer, |claim| {
                match claim {
                    Claim::Number(n) => {
                        if !allowed.numbers.contains(n) {
                            allowed.numbers.insert(n.to_string());
                        }
                    }
                    Claim::Month(m) => allowed.months |= 1 << m,
                    Claim::Address(_) => {}
                }
                true
            });
            allowed.text.push_str(&text.to_lowercase());
            allowed.text.push('\n');
        }
        allowed
    }

    /// Everything `request` hands the model: system prompt, history, tool results.
    pub fn from_request(request: &ChatRequest) -> Allowed {
        Allowed::from_texts(request.messages.iter().map(|m| m.content.as_str()))
    }

    /// The first claim of `text` that nothing allows, if any. `buffer` is scratch space the
    /// caller keeps between calls.
    pub fn unsupported(&self, text: &str, buffer: &mut String) -> Option<String> {
        let mut found = None;
        claims(text, false, buffer, |claim| {
            let backed = match claim {
                Claim::Number(n) => self.numbers.contains(n),
                Claim::Month(m) => self.months & (1 << m) != 0,
                Claim::Address(address) => self.text.contains(&address.to_lowercase()),
            };
            if !backed {
                found = Some(match claim {
                    Claim::Number(n) => n.to_string(),
                    Claim::Month(m) => MONTHS[m as usize].to_string(),
                    Claim::Address(a) => a.to_string(),
                });
            }
            backed
        });
        found
    }
}

/// One checkable claim of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim<'a> {
    /// A number, normalised: digits only, thousands separators dropped, a decimal part
    /// without trailing zeros.
    Number(&'a str),
    /// A month, 0 = January.
    Month(u8),
    /// An email or web address as written.
    Address(&'a str),
}

/// Month names claimed by a text ("May" is left out: it is a verb far more often).
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Endings that make a dotted word a web address.
const DOMAINS: [&str; 12] = [
    ".com", ".org", ".net", ".io", ".co", ".us", ".uk", ".ca", ".gov", ".edu", ".info", ".biz",
];

/// Calls `found` with each claim of `text` in order until it returns false. `all_numbers`
/// also counts numbers in words under ten without a currency (for the allowed side, which
/// should be generous). `buffer` holds the normalised number being reported.
pub fn claims(
    text: &str,
    all_numbers: bool,
    buffer: &mut String,
    mut found: impl FnMut(Claim<'_>) -> bool,
) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_digit() {
            let end = digits(bytes, i, buffer);
            // A digit run inside an address is the address's business.
            if !buffer.is_empty() && !found(Claim::Number(buffer.as_str())) {
                return;
            }
            i = end;
        } else if b.is_ascii_alphabetic() {
            let end = word_end(bytes, i);
            let word = &text[i..end];
            if let Some(address) = address_at(text, i) {
                if !found(Claim::Address(address)) {
                    return;
                }
                i += address.len();
                continue;
            }
            if let Some((value, next)) = number_words(text, i, all_numbers) {
                buffer.clear();
                push_u64(buffer, value);
                if !found(Claim::Number(buffer.as_str())) {
                    return;
                }
                i = next;
                continue;
            }
            if let Some(month) = month(word) {
                if !found(Claim::Month(month)) {
                    return;
                }
            }
            i = end;
        } else {
            i += 1;
        }
    }
}

/// Reads the number starting at `start` into `buffer` (left empty for zeros alone); returns
/// where it ends.
fn digits(bytes: &[u8], start: usize, buffer: &mut String) -> usize {
    buffer.clear();
    let mut i = start;
    let mut fraction_at = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_digit() {
            buffer.push(b as char);
            i += 1;
        } else if b == b','
            && fraction_at.is_none()
            && run_of_digits(bytes, i + 1) == 3
            && !buffer.is_empty()
        {
            // A thousands separator: 1,200.
            i += 1;
        } else if b == b'.' && fraction_at.is_none() && run_of_digits(bytes, i + 1) > 0 {
            fraction_at = Some(buffer.len());
            buffer.push('.');
            i += 1;
        } else {
            break;
        }
    }
    if let Some(dot) = fraction_at {
        while buffer.ends_with('0') && buffer.len() > dot + 1 {
            buffer.pop();
        }
        if buffer.len() == dot + 1 {
            buffer.pop();
        }
    }
    if buffer.bytes().all(|b| b == b'0') {
        buffer.clear();
    }
    i
}

fn run_of_digits(bytes: &[u8], from: usize) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

fn word_end(bytes: &[u8], start: usize) -> usize {
    start
        + bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count()
}

fn push_u64(buffer: &mut String, value: u64) {
    use std::fmt::Write;
    let _ = write!(buffer, "{value}");
}

fn month(word: &str) -> Option<u8> {
    if word.len() < 3 || word.len() > 9 {
        return None;
    }
    let index = MONTHS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(word))
        .or_else(|| word.eq_ignore_ascii_case("sept").then_some(8))?;
    // "may" is a verb far more often than a month.
    (index != 4).then_some(index as u8)
}

/// The email or web address starting at `start`, if the word there begins one: the
/// whitespace-delimited token, its trailing punctuation cut, holding an `@`, starting with
/// `www.` or `http`, or ending in a known domain.
fn address_at(text: &str, start: usize) -> Option<&str> {
    if start > 0
        && !text.as_bytes()[start - 1].is_ascii_whitespace()
        && !matches!(text.as_bytes()[start - 1], b'(' | b'"' | b'\'')
    {
        return None;
    }
    let rest = &text[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | '"' | '!' | '?'))
        .unwrap_or(rest.len());
    let token = rest[..end].trim_end_matches(['.', ':']);
    if !token.contains('.') {
        return None;
    }
    let lower_ends = |suffix: &str| {
        token.len() > suffix.len()
            && token.as_bytes()[token.len() - suffix.len()..]
                .eq_ignore_ascii_case(suffix.as_bytes())
    };
    let is_address = token.contains('@')
        || token
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case("www."))
        || token
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case("http"))
        || DOMAINS.iter().any(|d| lower_ends(d));
    is_address.then_some(token)
}

/// The value of number words starting at `start` (`ninety-five`, `two hundred and fifty`)
/// and where they end, when they count as a claim: from ten up, after a currency word, or
/// always with `all`.
fn number_words(text: &str, start: usize, all: bool) -> Option<(u64, usize)> {
    let bytes = text.as_bytes();
    let (mut total, mut current, mut any) = (0u64, 0u64, false);
    let mut i = start;
    let mut end = start;
    loop {
        let word_stop = word_end(bytes, i);
        if word_stop == i {
            break;
        }
        let word = &text[i..word_stop];
        match word_value(word) {
            Some(Word::Unit(v)) => {
                current += v;
                any = true;
            }
            Some(Word::Scale(s)) => {
                // "a hundred": a scale alone counts one of it.
                any = true;
                if s == 100 {
                    current = current.max(1) * 100;
                } else {
                    total += current.max(1) * s;
                    current = 0;
                }
            }
            _ if any && word.eq_ignore_ascii_case("and") => {
                // "two hundred and fifty": only if a number follows.
                let after = skip_separators(bytes, word_stop);
                if !matches!(
                    word_value(&text[after..word_end(bytes, after)]),
                    Some(Word::Unit(_))
                ) {
                    break;
                }
                i = after;
                continue;
            }
            _ => break,
        }
        end = word_stop;
        i = skip_separators(bytes, word_stop);
    }
    if !any {
        return None;
    }
    let value = total + current;
    let after = skip_separators(bytes, end);
    let currency = is_currency(&text[after..word_end(bytes, after)]);
    (all || value >= 10 || currency).then_some((value, end))
}

/// Skips one run of spaces or a hyphen between number words.
fn skip_separators(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'-') {
        i += 1;
    }
    i
}

enum Word {
    Unit(u64),
    Scale(u64),
}

fn word_value(word: &str) -> Option<Word> {
    const UNITS: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = [
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    if word.len() > 9 {
        return None;
    }
    if let Some(v) = UNITS.iter().position(|u| u.eq_ignore_ascii_case(word)) {
        return Some(Word::Unit(v as u64));
    }
    if let Some(v) = TENS.iter().position(|t| t.eq_ignore_ascii_case(word)) {
        return Some(Word::Unit(20 + 10 * v as u64));
    }
    if word.eq_ignore_ascii_case("hundred") {
        return Some(Word::Scale(100));
    }
    if word.eq_ignore_ascii_case("thousand") {
        return Some(Word::Scale(1_000));
    }
    if word.eq_ignore_ascii_case("million") {
        return Some(Word::Scale(1_000_000));
    }
    None
}

fn is_currency(word: &str) -> bool {
    [
        "dollar", "dollars", "cent", "cents", "bucks", "percent", "pound", "pounds", "euro",
        "euros",
    ]
    .iter()
    .any(|c| c.eq_ignore_ascii_case(word))
}

/// Holds streamed text back to the end of each clause and lets through only what
/// [`Allowed`] backs; the first unsupported clause becomes the honest answer, which ends the
/// reply (a model that made one thing up is not trusted with the rest of it).
pub struct ClauseGate {
    allowed: Allowed,
    honest: String,
    held: String,
    scratch: String,
    /// Something has been passed on that did not end in whitespace (the honest answer then
    /// starts with a space).
    needs_space: bool,
    /// The honest answer has been given.
    replaced: bool,
}

impl ClauseGate {
    /// A gate for one answer; `offer` is what the agent can do when it does not know.
    pub fn new(allowed: Allowed, offer: &str) -> ClauseGate {
        ClauseGate {
            allowed,
            honest: format!("{NOT_KNOWN} {offer}"),
            held: String::new(),
            scratch: String::new(),
            needs_space: false,
            replaced: false,
        }
    }

    /// Takes a piece of streamed text; calls `out` with each checked clause it completes.
    pub fn push(&mut self, delta: &str, mut out: impl FnMut(String)) {
        if self.replaced {
            return;
        }
        self.held.push_str(delta);
        while let Some(end) = clause_end(&self.held) {
            let rest = self.held.split_off(end);
            let clause = std::mem::replace(&mut self.held, rest);
            if let Some(passed) = self.check(clause) {
                out(passed);
            }
            if self.replaced {
                self.held.clear();
                return;
            }
        }
    }

    /// The end of the answer: checks and passes on what is still held.
    pub fn finish(&mut self) -> Option<String> {
        if self.replaced || self.held.trim().is_empty() {
            self.held.clear();
            return None;
        }
        let clause = std::mem::take(&mut self.held);
        self.check(clause)
    }

    /// Whether some clause was replaced.
    pub fn replaced(&self) -> bool {
        self.replaced
    }

    fn check(&mut self, clause: String) -> Option<String> {
        match self.allowed.unsupported(&clause, &mut self.scratch) {
            None => {
                if !clause.is_empty() {
                    self.needs_space = !clause.ends_with(char::is_whitespace);
                }
                Some(clause)
            }
            Some(claim) => {
                tracing::info!(%claim, "a reply stated something it was not given; replaced");
                self.replaced = true;
                // Said as a sentence of its own, whatever comes before or after it.
                let space = if self.needs_space { " " } else { "" };
                self.needs_space = false;
                Some(format!("{space}{} ", self.honest))
            }
        }
    }
}

/// Where the first complete clause of `held` ends (after its terminator and the whitespace
/// that shows it was one), if it is complete.
fn clause_end(held: &str) -> Option<usize> {
    let bytes = held.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let sentence = matches!(b, b'.' | b'!' | b'?' | b'\n');
        let clause = matches!(b, b',' | b';' | b':') && i + 1 >= CLAUSE_MIN_CHARS;
        if !(sentence || clause) {
            continue;
        }
        if b == b'\n' {
            return Some(i + 1);
        }
        match bytes.get(i + 1) {
            Some(next) if next.is_ascii_whitespace() => return Some(i + 2),
            _ => {}
        }
    }
    if bytes.len() >= MAX_HELD_CHARS {
        return bytes
            .iter()
            .rposition(|b| *b == b' ')
            .filter(|&space| space > 0)
            .map(|space| space + 1);
    }
    None
}

/// A language model whose text answers pass through a [`ClauseGate`].
pub struct GroundedModel {
    inner: Arc<dyn LanguageModel>,
    offer: &'static str,
}

impl GroundedModel {
    /// Guards `inner`; `can_transfer` says whether the agent can hand the call to a person.
    pub fn new(inner: Arc<dyn LanguageModel>, can_transfer: bool) -> GroundedModel {
        GroundedModel {
            inner,
            offer: if can_transfer {
                OFFER_TRANSFER
            } else {
                OFFER_MESSAGE
            },
        }
    }
}

impl LanguageModel for GroundedModel {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn warm(&self, request: ChatRequest) {
        self.inner.warm(request);
    }

    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError> {
        let allowed = Allowed::from_request(&request);
        let mut upstream = self.inner.stream(request)?;
        let mut gate = ClauseGate::new(allowed, self.offer);
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    // The reader hung up: dropping `upstream` stops the model.
                    _ = tx.closed() => return,
                    event = upstream.recv() => event,
                };
                let mut pieces = Vec::new();
                let passing = match event {
                    None => {
                        if let Some(rest) = gate.finish() {
                            let _ = tx.send(Ok(LlmEvent::TextDelta(rest))).await;
                        }
                        return;
                    }
                    // After the honest answer the rest of the text is read (its token
                    // counts still arrive) and dropped.
                    Some(Ok(LlmEvent::TextDelta(delta))) => {
                        gate.push(&delta, |clause| pieces.push(clause));
                        None
                    }
                    Some(other) => {
                        // Anything else closes the text so far.
                        pieces.extend(gate.finish());
                        Some(other)
                    }
                };
                for piece in pieces {
                    if tx.send(Ok(LlmEvent::TextDelta(piece))).await.is_err() {
                        return;
                    }
                }
                if let Some(event) = passing {
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(text: &str, all: bool) -> Vec<String> {
        let mut found = Vec::new();
        let mut buffer = String::new();
        claims(text, all, &mut buffer, |claim| {
            found.push(match claim {
                Claim::Number(n) => n.to_string(),
                Claim::Month(m) => format!("month {m}"),
                Claim::Address(a) => format!("address {a}"),
            });
            true
        });
        found
    }

    #[test]
    fn claims_are_read_in_their_normal_form() {
        assert_eq!(
            numbers("A cleaning is $95.00, or 1,200 for ten.", false),
            ["95", "1200", "10"]
        );
        assert_eq!(
            numbers("Call 950-328-7644 at 9:00 am.", false),
            ["950", "328", "7644", "9"]
        );
        assert_eq!(numbers("It costs $9.50 or 12.", false), ["9.5", "12"]);
        assert_eq!(
            numbers(
                "ninety-five dollars, two hundred and fifty, one moment, five cents",
                false
            ),
            ["95", "250", "5"]
        );
        assert_eq!(numbers("one moment", true), ["1"]);
        assert_eq!(
            numbers("Open in March, may I help? Sept 3rd", false),
            ["month 2", "month 8", "3"]
        );
        assert_eq!(
            numbers(
                "Write to help@brightsmile.com or see www.brightsmile.com.",
                false
            ),
            [
                "address help@brightsmile.com",
                "address www.brightsmile.com"
            ]
        );
        assert!(numbers("Yes, we do. Thanks!", false).is_empty());
    }

    #[test]
    fn only_what_the_model_was_given_is_allowed() {
        let allowed = Allowed::from_texts([
            "A cleaning costs $95. Call (555) 201-3344. Open Monday to Saturday, closed in August. \
             Email front@brightsmile.com. Open seven days a week.",
            "Is a cleaning under a hundred dollars?",
        ]);
        let mut scratch = String::new();
        let mut check = |text: &str| allowed.unsupported(text, &mut scratch);
        assert_eq!(check("A cleaning is ninety-five dollars."), None);
        assert_eq!(check("Call 555-201-3344 at 9:00."), Some("9".into()));
        assert_eq!(check("It is $95.00, under 100."), None);
        assert_eq!(check("It costs $35 to $40."), Some("35".into()));
        assert_eq!(check("Call 950-328-7644 now."), Some("950".into()));
        assert_eq!(check("We close in August."), None);
        assert_eq!(check("We close in December."), Some("december".into()));
        assert_eq!(check("Email FRONT@brightsmile.com."), None);
        assert_eq!(
            check("Visit www.brightsmiledental.com today."),
            Some("www.brightsmiledental.com".into())
        );
        assert_eq!(check("We are open seven days, may I help?"), None);
    }

    fn gate_output(allowed: &str, deltas: &[&str]) -> (Vec<String>, bool) {
        let mut gate = ClauseGate::new(Allowed::from_texts([allowed]), OFFER_MESSAGE);
        let mut out = Vec::new();
        for delta in deltas {
            gate.push(delta, |clause| out.push(clause));
        }
        out.extend(gate.finish());
        (out, gate.replaced())
    }

    #[test]
    fn a_clause_with_an_invented_number_becomes_the_honest_answer() {
        let (out, replaced) = gate_output(
            "A cleaning costs $95.",
            &[
                "A clean",
                "ing costs $95. ",
                "Call us at 950",
                "-328-7644 any time. ",
                "Bye. ",
                "See 12 of us.",
            ],
        );
        assert!(replaced);
        // The honest answer ends the reply.
        assert_eq!(
            out,
            [
                "A cleaning costs $95. ".to_string(),
                format!("{NOT_KNOWN} {OFFER_MESSAGE} "),
            ]
        );
        // Decimals and a last sentence without a terminator pass through whole.
        let (out, replaced) = gate_output("It is $9.50.", &["It is $9", ".50 only"]);
        assert!(!replaced);
        assert_eq!(out, ["It is $9.50 only"]);
        // An answer that opens with an invented price is only the honest answer.
        let (out, _) = gate_output("Prices vary.", &["It costs $40."]);
        assert_eq!(out, [format!("{NOT_KNOWN} {OFFER_MESSAGE} ")]);
    }

    #[test]
    fn long_sentences_pass_on_at_their_commas() {
        let (out, _) = gate_output(
            "",
            &[
                "Thank you for calling the clinic today, ",
                "how can I help?",
            ],
        );
        assert_eq!(
            out,
            [
                "Thank you for calling the clinic today, ",
                "how can I help?"
            ]
        );
        let (out, _) = gate_output("", &["Hi, there. ", "Ok"]);
        assert_eq!(out, ["Hi, there. ", "Ok"]);
        // Text that never ends a clause goes on at its last space once enough is held.
        let words = "word ".repeat(MAX_HELD_CHARS / 5 + 1);
        let (out, _) = gate_output("", &[&words, "end"]);
        assert_eq!(out, [words.clone(), "end".to_string()]);
    }
}
