//! The people an agent may hand a phone call to: the agent's `transfer` field, an array of
//! `{name, number, description, mode}` (at most [`MAX_TARGETS`]), read and checked here for
//! both the agent's REST writes and the live call's `transfer_call` tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::telephony::is_e164;

/// Most transfer targets an agent may list.
pub const MAX_TARGETS: usize = 10;
const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 500;

/// How a call is handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TransferMode {
    /// The call is redirected to the person's number; the agent leaves it.
    #[default]
    Cold,
    /// The caller is held while the person is called and told what the call is about, then
    /// the two are joined.
    Warm,
}

impl TransferMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TransferMode::Cold => "cold",
            TransferMode::Warm => "warm",
        }
    }
}

/// A person the agent may hand the call to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransferTarget {
    /// How the agent names them (`billing`, `Dr. Lee`): unique within the agent.
    pub name: String,
    /// E.164.
    pub number: String,
    /// When to hand over to them, for the agent's language model.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub mode: TransferMode,
}

/// Reads and checks an agent's `transfer` value: `null` or an array of targets. `Err` says
/// what is wrong, naming the entry.
pub fn targets(value: &Value) -> Result<Vec<TransferTarget>, String> {
    if value.is_null() {
        return Ok(Vec::new());
    }
    let entries = value
        .as_array()
        .ok_or("transfer must be an array of {name, number, description, mode}")?;
    if entries.len() > MAX_TARGETS {
        return Err(format!(
            "transfer lists {} targets; at most {MAX_TARGETS} are allowed",
            entries.len()
        ));
    }
    let mut targets: Vec<TransferTarget> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let target: TransferTarget = serde_json::from_value(entry.clone()).map_err(|e| {
            format!("transfer[{i}] must be {{name, number, description, mode: cold|warm}}: {e}")
        })?;
        let name = target.name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(format!(
                "transfer[{i}].name must be 1-{MAX_NAME_CHARS} characters"
            ));
        }
        if targets.iter().any(|t| t.name.eq_ignore_ascii_case(name)) {
            return Err(format!("transfer[{i}].name '{name}' is listed twice"));
        }
        if !is_e164(&target.number) {
            return Err(format!(
                "transfer[{i}].number '{}' is not an E.164 number such as +14155550100",
                target.number
            ));
        }
        if target.description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(format!(
                "transfer[{i}].description is longer than {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
        targets.push(TransferTarget {
            name: name.to_string(),
            ..target
        });
    }
    Ok(targets)
}

/// The targets of an agent's stored `transfer` JSON; a row that no longer reads has none.
pub fn stored_targets(stored: &str) -> Vec<TransferTarget> {
    serde_json::from_str::<Value>(stored)
        .ok()
        .and_then(|value| targets(&value).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_are_read_with_cold_as_the_default_mode() {
        let read = targets(&json!([
            {"name": "billing", "number": "+14155550100", "description": "Invoices and refunds"},
            {"name": "Dr. Lee", "number": "+442071838750", "mode": "warm"}
        ]))
        .unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].mode, TransferMode::Cold);
        assert_eq!(read[1].mode, TransferMode::Warm);
        assert_eq!(read[1].description, "");
        assert!(targets(&Value::Null).unwrap().is_empty());
    }

    #[test]
    fn bad_targets_say_which_entry_is_wrong() {
        let bad = |value: Value| targets(&value).unwrap_err();
        assert!(bad(json!({"name": "x"})).contains("array"));
        assert!(bad(json!([{"name": "a", "number": "4155550100"}])).contains("transfer[0].number"));
        assert!(bad(json!([{"name": " ", "number": "+14155550100"}])).contains("transfer[0].name"));
        assert!(
            bad(json!([{"name": "a", "number": "+14155550100", "mode": "hot"}]))
                .contains("transfer[0]")
        );
        assert!(bad(json!([
            {"name": "Sales", "number": "+14155550100"},
            {"name": "sales", "number": "+14155550101"}
        ]))
        .contains("twice"));
        let eleven: Vec<Value> = (0..11)
            .map(|i| json!({"name": format!("p{i}"), "number": "+14155550100"}))
            .collect();
        assert!(bad(Value::Array(eleven)).contains("at most 10"));
        assert!(stored_targets("not json").is_empty());
    }
}
