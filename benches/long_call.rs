//! A long call on the embedded language model: the time to the first word of each answer
//! over 30 caller turns, with the history's cut made when the caller's turn comes in or ahead
//! of it, and with knowledge.
//!
//! ```text
//! cargo bench --bench long_call
//! ```
//!
//! The call is the evaluation set's dental clinic (`tests/evaluation/businesses.json`): its
//! fifteen caller questions, asked twice over, each answered by the model (greedy, up to 48
//! tokens) before the next. The history keeps its latest half past 40 messages, as a
//! session's does.
//!
//! - `cut at the turn`: the history is cut when the caller's turn comes in, so that turn's
//!   prompt shares only the system prompt with the model's cached state.
//! - `cut ahead`: the cut is made as the answer before it ends and the kept history is read
//!   ahead ([`LanguageModel::warm`]) while that answer would play, as a session does now. The
//!   read ahead is timed apart: it is not on the caller's wait.
//! - `with knowledge`: each turn also gets the three paragraphs of the clinic's document that
//!   share the most words with its question (a stand-in for retrieval that, like it, changes
//!   from turn to turn), sent before the question as a session sends them; the embedded model
//!   reads them in its system turn, so each turn reads its history again: as much of it as
//!   the engine's default budget (`knowledge_history_tokens`) holds.
//! - `knowledge, all history`: the same, reading the whole history at every turn.
//!
//! Each row prints the time to the first answer text per turn (p50, p90, max), the prompt
//! tokens the model read per turn (mean, max), from the engine's own counters, and how many
//! of the answers to the questions the document answers hold every expected fact (the
//! evaluation's `expect`, read as plain words: a rough check, to compare the rows).

#[path = "support/llm_requests.rs"]
mod llm_requests;

use std::path::PathBuf;
use std::time::Duration;

use llm_requests::{request, timed};
use serde_json::Value;
use switchboard::engines::llm::{LlmOptions, LocalLlm, MODEL_FILE};
use switchboard::engines::pool::WorkerPool;
use switchboard_actors::engine::{ChatMessage, Role};

/// Messages a session keeps before it cuts the history to its latest half.
const HISTORY_MESSAGES: usize = 40;
const TURNS: usize = 30;
/// The call's conversation, for the model's prompt cache.
const CONVERSATION: &str = "long-call";

#[derive(Clone, Copy, PartialEq)]
enum Layout {
    CutAtTheTurn,
    CutAhead,
    WithKnowledge,
}

struct Clinic {
    prompt: String,
    paragraphs: Vec<String>,
    questions: Vec<Question>,
}

struct Question {
    text: String,
    /// Facts a right answer holds, each with its alternatives split by `|`; none for a
    /// question the document does not answer.
    expect: Vec<String>,
}

impl Question {
    fn answered_by(&self, answer: &str) -> bool {
        let answer = answer.to_lowercase();
        self.expect.iter().all(|fact| {
            fact.split('|')
                .any(|alternative| answer.contains(&alternative.to_lowercase()))
        })
    }
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let models = std::env::var_os("SWITCHBOARD_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("models"));
    let clinic = clinic(&root);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    println!(
        "{:<24} {:>9} {:>9} {:>9} {:>11} {:>10} {:>12} {:>7}",
        "layout",
        "ttft p50",
        "ttft p90",
        "ttft max",
        "read/turn",
        "read max",
        "read ahead",
        "right"
    );
    for (label, layout, knowledge_history_tokens) in [
        ("cut at the turn", Layout::CutAtTheTurn, None),
        ("cut ahead", Layout::CutAhead, None),
        ("with knowledge", Layout::WithKnowledge, None),
        (
            "knowledge, all history",
            Layout::WithKnowledge,
            Some(usize::MAX),
        ),
    ] {
        // A fresh engine per row: nothing cached from another.
        let defaults = LlmOptions::default();
        let llm = LocalLlm::new(
            models.join(MODEL_FILE),
            WorkerPool::new(1, 8),
            LlmOptions {
                knowledge_history_tokens: knowledge_history_tokens
                    .unwrap_or(defaults.knowledge_history_tokens),
                ..defaults
            },
        );
        llm.encode("load")
            .expect("the model loads (scripts/fetch-models)");
        runtime.block_on(call(&llm, &clinic, layout, label));
    }
}

/// One call of [`TURNS`] caller turns; prints its row.
async fn call(llm: &LocalLlm, clinic: &Clinic, layout: Layout, label: &str) {
    let mut history: Vec<ChatMessage> = Vec::new();
    let mut waits = Vec::new();
    let mut read = Vec::new();
    let mut read_ahead = Duration::ZERO;
    let (mut right, mut answerable) = (0, 0);
    for turn in 0..TURNS {
        let asked = &clinic.questions[turn % clinic.questions.len()];
        let question = &asked.text;
        history.push(ChatMessage::new(Role::User, question.clone()));
        // With the cut made ahead, the caller's turn has nothing left to cut.
        cut(&mut history, 0);
        let mut messages = vec![ChatMessage::new(Role::System, clinic.prompt.clone())];
        messages.extend(history[..history.len() - 1].iter().cloned());
        if layout == Layout::WithKnowledge {
            messages.push(ChatMessage::new(Role::System, facts(clinic, question)));
        }
        messages.push(history[history.len() - 1].clone());
        let before = llm.counters().prompt_tokens_fed;
        let (wait, answer) = timed(llm, request(messages, 48, Some(CONVERSATION))).await;
        waits.push(wait);
        read.push(llm.counters().prompt_tokens_fed - before);
        if !asked.expect.is_empty() {
            answerable += 1;
            right += usize::from(asked.answered_by(&answer));
        }
        history.push(ChatMessage::new(Role::Assistant, answer.trim()));
        if layout == Layout::CutAhead && cut(&mut history, 1) {
            let mut messages = vec![ChatMessage::new(Role::System, clinic.prompt.clone())];
            messages.extend(history.iter().cloned());
            read_ahead += timed(llm, request(messages, 1, Some(CONVERSATION))).await.0;
        }
    }
    waits.sort_unstable();
    let at = |q: f64| waits[((waits.len() - 1) as f64 * q).round() as usize].as_millis();
    let mean = read.iter().sum::<u64>() / read.len() as u64;
    println!(
        "{label:<24} {:>6} ms {:>6} ms {:>6} ms {:>11} {:>10} {:>9} ms {:>7}",
        at(0.5),
        at(0.9),
        at(1.0),
        mean,
        read.iter().max().copied().unwrap_or(0),
        read_ahead.as_millis(),
        format!("{right}/{answerable}")
    );
}

/// Keeps the latest half of `history` once it and `incoming` messages are past
/// [`HISTORY_MESSAGES`], from a caller turn (the session's rule). True when it cut.
fn cut(history: &mut Vec<ChatMessage>, incoming: usize) -> bool {
    let length = history.len() + incoming;
    if length <= HISTORY_MESSAGES {
        return false;
    }
    let earliest = (length - HISTORY_MESSAGES / 2).min(history.len());
    match history[earliest..]
        .iter()
        .position(|m| m.role == Role::User)
    {
        Some(at) => {
            history.drain(..earliest + at);
            true
        }
        None => false,
    }
}

/// The three paragraphs sharing the most words with `question`, as the facts message.
fn facts(clinic: &Clinic, question: &str) -> String {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 3)
            .map(str::to_lowercase)
            .collect()
    };
    let asked = words(question);
    let mut ranked: Vec<(usize, &String)> = clinic
        .paragraphs
        .iter()
        .map(|p| (words(p).iter().filter(|w| asked.contains(w)).count(), p))
        .collect();
    ranked.sort_by_key(|&(shared, _)| std::cmp::Reverse(shared));
    let mut out = String::from("Facts:");
    for (_, paragraph) in ranked.iter().take(3) {
        out.push_str("\n- ");
        out.push_str(paragraph);
    }
    out.push_str(
        "\n\nAnswer the caller from these facts, briefly. If they do not answer the question, \
         say you don't have that information.",
    );
    out
}

fn clinic(root: &std::path::Path) -> Clinic {
    let set: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/evaluation/businesses.json"))
            .expect("the evaluation set"),
    )
    .expect("valid JSON");
    let business = &set["businesses"][0];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let questions = ["answerable", "unanswerable"]
        .iter()
        .flat_map(|kind| business[kind].as_array().cloned().unwrap_or_default())
        .map(|q| Question {
            text: text(&q["question"]),
            expect: q["expect"]
                .as_array()
                .map(|facts| facts.iter().map(text).collect())
                .unwrap_or_default(),
        })
        .collect();
    Clinic {
        prompt: text(&business["systemPrompt"]),
        paragraphs: text(&business["document"])
            .split("\n\n")
            .map(str::to_string)
            .collect(),
        questions,
    }
}
