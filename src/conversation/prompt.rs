//! The system prompt of a conversation turn: the agent's prompt with the instance's
//! `{{variables}}` filled in, the instance's context, and the knowledge retrieved for the turn
//! within a character budget.

use serde_json::{Map, Value};

use crate::registry::search::KnowledgeHit;

/// Used when an agent has no system prompt of its own.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful voice assistant. Answer briefly and clearly.";
/// Most characters of retrieved knowledge put into one prompt.
pub const KNOWLEDGE_BUDGET_CHARS: usize = 2_400;

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

/// Builds the system prompt for one turn.
pub fn system_prompt(
    agent_prompt: Option<&str>,
    variables: &Map<String, Value>,
    instance_context: Option<&str>,
    knowledge: &[KnowledgeHit],
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
    if let Some(section) = knowledge_section(knowledge) {
        prompt.push_str(&section);
    }
    prompt
}

/// The part of a system prompt that hands the model the retrieved knowledge, best hits first
/// within [`KNOWLEDGE_BUDGET_CHARS`]; `None` when no hit fits.
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
    let mut section = String::from(
        "\n\nUse the following facts from the knowledge base to answer. If they do not cover \
         the question, say you do not know.",
    );
    for fact in facts {
        section.push_str("\n- ");
        section.push_str(fact);
    }
    Some(section)
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
            &[hit("Returns within 30 days."), hit(&long)],
        );
        assert!(prompt.starts_with("You help Ana."));
        assert!(prompt.contains("About this caller: Gold member"));
        assert!(prompt.contains("- Returns within 30 days."));
        assert!(!prompt.contains(&long), "over-budget knowledge is left out");
        assert_eq!(
            system_prompt(None, &Map::new(), None, &[]),
            DEFAULT_SYSTEM_PROMPT
        );
    }
}
