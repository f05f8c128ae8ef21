//! The prompt of a conversation turn. The system prompt is the agent's prompt with the
//! instance's `{{variables}}` filled in, the instance's context and the grounding rule (no
//! number, price, date or address the model was not given): it is the same at every turn.
//! The knowledge retrieved for the turn, within a character budget and with a short
//! instruction to answer from it, is a system message of its own placed right before the
//! caller's latest words ([`knowledge_section`]). So the conversation before it is the same
//! prefix from one turn to the next: the embedded model's prompt cache, and a vendor's prefix
//! cache, keep it, and a turn re-reads only the last exchange and its own knowledge, not the
//! whole history behind a changed system prompt.
//!
//! For a model that is offered no tools, [`without_tool_mentions`] takes the sentences that
//! name the agent's tools out of its prompt: a model told to "use the check_availability
//! tool" that cannot call it tells the caller to.

use serde_json::{Map, Value};

use crate::registry::search::KnowledgeHit;

/// Used when an agent has no system prompt of its own.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful voice assistant. Answer briefly and clearly.";
/// Most characters of retrieved knowledge put into one prompt.
pub const KNOWLEDGE_BUDGET_CHARS: usize = 2_400;
/// Ends every system prompt: what the model may state as fact. `conversation::grounding`
/// enforces it on the reply, whatever the model does. (The rules hold no number, so they
/// allow none.)
pub const GROUNDING_RULE: &str = "Never make up a number, price, date, time, phone number, \
    address or website: say it only if it is written here or the caller said it. If you do \
    not know, say you don't have that information and offer to take a message.";
/// Follows the retrieved knowledge, closest to the caller's words.
pub const FACTS_RULE: &str =
    "Answer the caller from these facts, briefly. If they do not answer the question, say \
     you don't have that information.";

/// Replaces `{{name}}` (spaces inside the braces allowed) with the variable's value: strings
/// as they are, other values as JSON. Unknown names are left as written.
pub fn substitute(template: &str, variables: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = after[..end].trim();
                match variables.get(name) {
                    Some(Value::String(text)) => out.push_str(text),
                    Some(other) => out.push_str(&other.to_string()),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Builds the system prompt of a conversation (the same at every turn).
pub fn system_prompt(
    agent_prompt: Option<&str>,
    variables: &Map<String, Value>,
    instance_context: Option<&str>,
) -> String {
    let mut prompt = substitute(
        agent_prompt
            .filter(|p| !p.trim().is_empty())
            .unwrap_or(DEFAULT_SYSTEM_PROMPT),
        variables,
    );
    if let Some(context) = instance_context.filter(|c| !c.trim().is_empty()) {
        prompt.push_str("\n\nAbout this caller: ");
        prompt.push_str(&substitute(context.trim(), variables));
    }
    prompt.push_str("\n\n");
    prompt.push_str(GROUNDING_RULE);
    prompt
}

/// The system message that hands the model the knowledge retrieved for a turn, best hits
/// first within [`KNOWLEDGE_BUDGET_CHARS`], to be placed right before the caller's latest
/// words; `None` when no hit fits.
pub fn knowledge_section(knowledge: &[KnowledgeHit]) -> Option<String> {
    let mut budget = KNOWLEDGE_BUDGET_CHARS;
    let mut facts = Vec::new();
    for hit in knowledge {
        let length = hit.content.chars().count();
        if length > budget {
            break;
        }
        budget -= length;
        facts.push(hit.content.trim());
    }
    if facts.is_empty() {
        return None;
    }
    let mut section = String::from("Facts:");
    for fact in facts {
        section.push_str("\n- ");
        section.push_str(fact);
    }
    section.push_str("\n\n");
    section.push_str(FACTS_RULE);
    Some(section)
}

/// `prompt` without the sentences that name one of `tools` (a name counts where it stands
/// as a word of its own, in any case), for a model that cannot call them.
pub fn without_tool_mentions(prompt: &str, tools: &[&str]) -> String {
    if tools.is_empty() {
        return prompt.to_string();
    }
    let mut out = String::with_capacity(prompt.len());
    for sentence in sentences(prompt) {
        if !tools.iter().any(|tool| names(sentence, tool)) {
            out.push_str(sentence);
        }
    }
    out
}

/// `text` cut after each sentence's terminator and the whitespace that follows it; the
/// pieces put together are `text`.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let bytes = rest.as_bytes();
        let mut end = rest.len();
        for (i, &b) in bytes.iter().enumerate() {
            let terminator = b == b'\n'
                || (matches!(b, b'.' | b'!' | b'?')
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace));
            if terminator {
                end = i + 1;
                while end < bytes.len() && bytes[end].is_ascii_whitespace() {
                    end += 1;
                }
                break;
            }
        }
        let (sentence, after) = rest.split_at(end);
        rest = after;
        Some(sentence)
    })
}

/// Whether `sentence` names `tool` as a word of its own.
fn names(sentence: &str, tool: &str) -> bool {
    let lower = sentence.to_ascii_lowercase();
    let tool = tool.to_ascii_lowercase();
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    lower.match_indices(&tool).any(|(at, _)| {
        let before = lower.as_bytes()[..at].last().copied();
        let after = lower.as_bytes().get(at + tool.len()).copied();
        !before.is_some_and(word_byte) && !after.is_some_and(word_byte)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn variables_are_filled_and_unknown_ones_kept() {
        let v = vars(json!({"store": "Downtown", "open": 9, "tier": {"name": "gold"}}));
        assert_eq!(
            substitute(
                "Welcome to {{store}}, open at {{ open }}; {{missing}} {{tier}}",
                &v
            ),
            "Welcome to Downtown, open at 9; {{missing}} {\"name\":\"gold\"}"
        );
        assert_eq!(substitute("unclosed {{store", &v), "unclosed {{store");
    }

    #[test]
    fn knowledge_is_added_within_its_budget() {
        let hit = |text: &str| KnowledgeHit {
            content: text.into(),
            score: 0.9,
            metadata: None,
            document_id: "d".into(),
            chunk_index: 0,
        };
        let long = "x".repeat(KNOWLEDGE_BUDGET_CHARS);
        let prompt = system_prompt(
            Some("You help {{name}}."),
            &vars(json!({"name": "Ana"})),
            Some("Gold member"),
        );
        assert_eq!(
            prompt,
            format!("You help Ana.\n\nAbout this caller: Gold member\n\n{GROUNDING_RULE}")
        );
        assert_eq!(
            system_prompt(None, &Map::new(), None),
            format!("{DEFAULT_SYSTEM_PROMPT}\n\n{GROUNDING_RULE}")
        );
        let section = knowledge_section(&[hit("Returns within 30 days."), hit(&long)])
            .expect("the first hit fits");
        assert_eq!(
            section,
            format!("Facts:\n- Returns within 30 days.\n\n{FACTS_RULE}"),
            "over-budget knowledge is left out"
        );
        assert_eq!(knowledge_section(&[]), None);
    }

    #[test]
    fn sentences_naming_a_tool_are_left_out() {
        let prompt = "You book visits for Bright Smile. Use the check_availability tool \
                      before offering a time.\nAlways be kind! Call transfer_call for billing. \
                      Check availability with care.";
        assert_eq!(
            without_tool_mentions(prompt, &["check_availability", "transfer_call"]),
            "You book visits for Bright Smile. Always be kind! Check availability with care."
        );
        assert_eq!(
            without_tool_mentions("Use check_availability_v2 here.", &["check_availability"]),
            "Use check_availability_v2 here."
        );
        assert_eq!(without_tool_mentions(prompt, &[]), prompt);
    }
}
