//! The answer evaluation: three small businesses (`tests/evaluation/businesses.json`, a
//! dental clinic, a bicycle shop and a utility), each a knowledge document, ten caller
//! questions answered in it and five that are not. Each business is provisioned through the
//! public API of a real server (agent, collection, document) and every question asked
//! through `POST /v1/agents/{id}/chat`, as a new conversation. A reply is scored
//! automatically:
//!
//! - **invented**: it states a number, price, date, email or web address that is neither in
//!   the business's knowledge, its instructions nor the question (read by [`invented`],
//!   written apart from the server's own guard so it checks that guard rather than repeat
//!   it);
//! - **correct**: nothing invented, and for an answerable question every expected fact is in
//!   the reply; for an unanswerable one, the reply says it does not know;
//! - **wrong**: anything else.
//!
//! CI runs the embedded default model (SmolLM2-135M) on a subset ([`CI_SUBSET`]) and the
//! vendor path on the whole set, each against its pass line in `docs/evaluation.md`. The whole
//! table for both: `cargo test --release --workspace --test evaluation -- --ignored
//! --nocapture`.
//!
//! The vendor path is measured with the stand-in's `*-extract` chat model
//! (`common::vendor_mock`), a reader that answers with the fact sentence sharing the most
//! words with the question: it shows whether retrieval put the answer into the prompt a vendor
//! model gets and what the guard lets through, not how well any real vendor model reads.

mod common;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::fmt::Write as _;

use common::*;
use serde::Deserialize;
use serde_json::json;
use vendor_mock::VendorMock;

/// Answerable and unanswerable questions of each business asked in CI on the embedded model.
const CI_SUBSET: (usize, usize) = (4, 2);
/// Pass lines, from the measurements written in `docs/evaluation.md`: the least share of
/// correct replies, in percent.
const EMBEDDED_CI_PASS_PERCENT: usize = 50;
const VENDOR_PASS_PERCENT: usize = 60;

#[derive(Deserialize)]
struct Set {
    businesses: Vec<Business>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Business {
    name: String,
    system_prompt: String,
    document: String,
    answerable: Vec<Question>,
    unanswerable: Vec<Question>,
}

#[derive(Deserialize, Clone)]
struct Question {
    question: String,
    #[serde(default)]
    expect: Vec<String>,
}

fn set() -> Set {
    serde_json::from_str(include_str!("evaluation/businesses.json"))
        .expect("the evaluation set is valid JSON")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Correct,
    Wrong,
    Invented,
}

/// One business's counts.
#[derive(Debug, Default, Clone)]
struct Tally {
    name: String,
    correct: usize,
    wrong: usize,
    invented: usize,
    /// The replies that were not correct, for the report.
    misses: Vec<String>,
    /// The best search score of each question, answerable ones and the others.
    scores: (Vec<f64>, Vec<f64>),
}

impl Tally {
    fn total(&self) -> usize {
        self.correct + self.wrong + self.invented
    }
}

/// Whether `needle` stands in `haystack` as a word of its own (case-insensitive).
fn has_word(haystack: &str, needle: &str) -> bool {
    let (haystack, needle) = (haystack.to_lowercase(), needle.to_lowercase());
    haystack.match_indices(&needle).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + needle.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Numbers of `text` as digit strings (thousands commas dropped, `.00` cents dropped, runs of
/// zeros alone skipped), month names, and email or web addresses.
fn claims(text: &str) -> Vec<String> {
    const MONTHS: [&str; 11] = [
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let mut found = Vec::new();
    let cleaned = text.replace(".00", "");
    let chars: Vec<char> = cleaned.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let mut number = String::new();
            while i < chars.len() {
                if chars[i].is_ascii_digit() {
                    number.push(chars[i]);
                } else if (chars[i] == ',' || chars[i] == '.')
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                {
                    if chars[i] == '.' {
                        number.push('.');
                    }
                } else {
                    break;
                }
                i += 1;
            }
            if number.chars().any(|c| c != '0' && c != '.') {
                found.push(number);
            }
        } else {
            i += 1;
        }
    }
    for word in text.split_whitespace() {
        let word = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if MONTHS.contains(&word.as_str())
            || word.contains('@')
            || word.starts_with("www.")
            || word.starts_with("http")
            || word.ends_with(".com")
            || word.ends_with(".org")
            || word.ends_with(".net")
        {
            found.push(word);
        }
    }
    found
}

/// The claims of `reply` found in none of `sources`.
fn invented(reply: &str, sources: &[&str]) -> Vec<String> {
    let known: Vec<String> = sources.iter().flat_map(|s| claims(s)).collect();
    claims(reply)
        .into_iter()
        .filter(|claim| !known.contains(claim))
        .collect()
}

/// Whether `reply` says the agent does not know.
fn admits_not_knowing(reply: &str) -> bool {
    let reply = reply.to_lowercase().replace('’', "'");
    [
        "don't have",
        "do not have",
        "don't know",
        "do not know",
        "not sure",
        "no information",
        "not able to",
        "unable to",
        "can't",
        "cannot",
        "take a message",
        "not available",
    ]
    .iter()
    .any(|phrase| reply.contains(phrase))
}

fn score(business: &Business, question: &Question, answerable: bool, reply: &str) -> Verdict {
    let made_up = invented(
        reply,
        &[
            &business.document,
            &business.system_prompt,
            &question.question,
        ],
    );
    if !made_up.is_empty() {
        return Verdict::Invented;
    }
    let right = if answerable {
        question.expect.iter().all(|fact| {
            fact.split('|')
                .any(|alternative| has_word(reply, alternative))
        })
    } else {
        admits_not_knowing(reply)
    };
    if right {
        Verdict::Correct
    } else {
        Verdict::Wrong
    }
}

/// Provisions `business` with `llm_provider` and asks it `questions` (answerable first);
/// returns its tally.
async fn evaluate(
    server: &Server,
    key: &str,
    business: &Business,
    llm_provider: &str,
    counts: (usize, usize),
) -> Tally {
    let (status, provisioned) = call(server.post(
        "/v1/agents/provision",
        key,
        json!({
            "name": business.name,
            "systemPrompt": business.system_prompt,
            "llmProvider": llm_provider,
            "collection": {"name": business.name},
            "initialContent": [{"content": business.document, "contentType": "text"}]
        }),
    ))
    .await;
    assert_eq!(status, 201, "{provisioned}");
    let agent = provisioned["agent"]["id"].as_str().unwrap().to_string();
    let collection = provisioned["collection"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut tally = Tally {
        name: business.name.clone(),
        ..Tally::default()
    };
    let asked = business
        .answerable
        .iter()
        .take(counts.0)
        .map(|q| (q, true))
        .chain(
            business
                .unanswerable
                .iter()
                .take(counts.1)
                .map(|q| (q, false)),
        );
    for (question, answerable) in asked {
        let (status, found) = call(server.post(
            &format!("/v1/collections/{collection}/search"),
            key,
            json!({"query": question.question, "limit": 1, "threshold": 0}),
        ))
        .await;
        assert_eq!(status, 200, "{found}");
        let best = found["results"][0]["score"].as_f64().unwrap_or(0.0);
        if answerable {
            tally.scores.0.push(best);
        } else {
            tally.scores.1.push(best);
        }
        let (status, answer) = call(server.post(
            &format!("/v1/agents/{agent}/chat"),
            key,
            json!({"message": question.question}),
        ))
        .await;
        assert_eq!(status, 200, "{answer}");
        let reply = answer["reply"].as_str().unwrap_or_default().to_string();
        let verdict = score(business, question, answerable, &reply);
        match verdict {
            Verdict::Correct => tally.correct += 1,
            Verdict::Wrong => tally.wrong += 1,
            Verdict::Invented => tally.invented += 1,
        }
        if verdict != Verdict::Correct {
            tally
                .misses
                .push(format!("{verdict:?}: {} → {reply}", question.question));
        }
    }
    tally
}

/// The whole table for one model: a row per business and the total.
fn table(model: &str, tallies: &[Tally]) -> String {
    let mut out = format!(
        "\n{model}\n| business | correct | wrong | invented | asked |\n|---|---|---|---|---|\n"
    );
    let mut total = Tally::default();
    for t in tallies {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            t.name,
            t.correct,
            t.wrong,
            t.invented,
            t.total()
        );
        total.correct += t.correct;
        total.wrong += t.wrong;
        total.invented += t.invented;
    }
    let _ = writeln!(
        out,
        "| all | {} ({}%) | {} | {} | {} |",
        total.correct,
        percent(&total),
        total.wrong,
        total.invented,
        total.total()
    );
    let range = |scores: &mut dyn Iterator<Item = f64>| {
        let all: Vec<f64> = scores.collect();
        let low = all.iter().copied().fold(f64::INFINITY, f64::min);
        let high = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{low:.2}-{high:.2}")
    };
    let _ = writeln!(
        out,
        "best search score (cosine) of answerable questions {}, of the others {}",
        range(&mut tallies.iter().flat_map(|t| t.scores.0.iter().copied())),
        range(&mut tallies.iter().flat_map(|t| t.scores.1.iter().copied())),
    );
    for t in tallies {
        for miss in &t.misses {
            let _ = writeln!(out, "  {}: {miss}", t.name);
        }
    }
    out
}

fn percent(t: &Tally) -> usize {
    (100 * t.correct).checked_div(t.total()).unwrap_or(0)
}

fn sum(tallies: &[Tally]) -> Tally {
    tallies.iter().fold(Tally::default(), |mut all, t| {
        all.correct += t.correct;
        all.wrong += t.wrong;
        all.invented += t.invented;
        all
    })
}

async fn run(server: &Server, llm_provider: &str, counts: Option<(usize, usize)>) -> Vec<Tally> {
    let key = server.key().to_string();
    let mut tallies = Vec::new();
    for business in &set().businesses {
        let counts = counts.unwrap_or((business.answerable.len(), business.unanswerable.len()));
        tallies.push(evaluate(server, &key, business, llm_provider, counts).await);
    }
    tallies
}

/// A server whose `openai` chat model is the stand-in's fact reader.
async fn vendor_server(vendors: &VendorMock) -> Server {
    vendors
        .server(&[("SWITCHBOARD__VENDORS__OPENAI__API_KEY", "platform-extract")])
        .await
}

#[test]
fn the_scorer_tells_correct_wrong_and_invented_apart() {
    let business = &set().businesses[0];
    let price = business.answerable[0].clone();
    assert_eq!(
        score(business, &price, true, "A check-up with cleaning is $95."),
        Verdict::Correct
    );
    assert_eq!(
        score(
            business,
            &price,
            true,
            "It is $95.00, see www.brightsmile.com."
        ),
        Verdict::Invented
    );
    assert_eq!(
        score(business, &price, true, "It costs $35 to $40."),
        Verdict::Invented
    );
    assert_eq!(
        score(business, &price, true, "It costs 1,200 less than $950."),
        Verdict::Invented
    );
    assert_eq!(
        score(business, &price, true, "Please ask the front desk."),
        Verdict::Wrong
    );
    let unknown = business.unanswerable[0].clone();
    assert_eq!(
        score(
            business,
            &unknown,
            false,
            "I'm sorry, I don't have that information."
        ),
        Verdict::Correct
    );
    assert_eq!(
        score(
            business,
            &unknown,
            false,
            "Implants cost about $2,000 in March."
        ),
        Verdict::Invented
    );
    assert_eq!(
        score(business, &unknown, false, "A cleaning costs $95."),
        Verdict::Wrong
    );
    assert!(has_word("open 9 am to 1 pm", "1") && !has_word("$95", "9"));
    assert!(!has_word("I don't know", "no"));
}

#[tokio::test]
async fn the_embedded_model_answers_the_ci_subset_at_its_pass_line() {
    let server = Server::start().await;
    let tallies = run(&server, "default", Some(CI_SUBSET)).await;
    println!("{}", table("embedded (SmolLM2-135M), CI subset", &tallies));
    let all = sum(&tallies);
    assert!(
        percent(&all) >= EMBEDDED_CI_PASS_PERCENT,
        "{}",
        table("embedded", &tallies)
    );
    assert_eq!(all.invented, 0, "{}", table("embedded", &tallies));
}

#[tokio::test]
async fn the_vendor_path_answers_the_whole_set_at_its_pass_line() {
    let vendors = VendorMock::start();
    let server = vendor_server(&vendors).await;
    let tallies = run(&server, "openai", None).await;
    println!("{}", table("vendor path (fact-reader stand-in)", &tallies));
    let all = sum(&tallies);
    assert!(
        percent(&all) >= VENDOR_PASS_PERCENT,
        "{}",
        table("vendor", &tallies)
    );
    assert_eq!(all.invented, 0, "{}", table("vendor", &tallies));
}

#[tokio::test]
async fn a_number_the_model_was_not_given_never_reaches_the_caller() {
    let vendors = VendorMock::start();
    let server = vendors
        .server(&[("SWITCHBOARD__VENDORS__OPENAI__API_KEY", "platform-invent")])
        .await;
    let key = server.key().to_string();
    let business = &set().businesses[0];
    let (status, agent) = call(server.post(
        "/v1/agents",
        &key,
        json!({"name": "Inventor", "systemPrompt": business.system_prompt, "llmProvider": "openai"}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    let id = agent["id"].as_str().unwrap();
    let (status, answer) = call(server.post(
        &format!("/v1/agents/{id}/chat"),
        &key,
        json!({"message": "My tooth hurts and it is 10 pm, who do I call?"}),
    ))
    .await;
    assert_eq!(status, 200, "{answer}");
    // The model's first sentence stands; the clause with the invented number becomes the
    // honest answer, which ends the reply.
    assert_eq!(
        answer["reply"],
        "Thanks for asking, happy to help with that. I'm sorry, I don't have that information. \
         I can take a message so someone gets back to you."
    );
    assert!(invented(answer["reply"].as_str().unwrap(), &[]).is_empty());
}

/// The whole set on both paths, printed as the table in `docs/evaluation.md`.
#[tokio::test]
#[ignore = "the whole set on the embedded model takes minutes; run it with --ignored"]
async fn evaluation_table() {
    let server = Server::start().await;
    let embedded = run(&server, "default", None).await;
    let vendors = VendorMock::start();
    let vendor_server = vendor_server(&vendors).await;
    let vendor = run(&vendor_server, "openai", None).await;
    println!("{}", table("embedded (SmolLM2-135M)", &embedded));
    println!("{}", table("vendor path (fact-reader stand-in)", &vendor));
}
