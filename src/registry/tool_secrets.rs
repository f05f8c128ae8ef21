//! The secrets in an agent's HTTP tools, kept sealed at rest like provider keys: each tool's
//! `secret` (which signs its calls) and the values of its `headers` (an `Authorization` for
//! the developer's API, say).
//!
//! Three forms of one value:
//! - written by the developer: a string (the value itself), or the `{"hint": …}` object an
//!   earlier read gave back, which keeps what is stored for the same tool and header;
//! - stored: `{"sealed": "v1:…", "hint": "…"}`, AES-256-GCM under the server's master key with
//!   the developer's id as associated data (a copy in another account does not open);
//! - read back: `{"hint": "…"}`, the value's last characters ([`hint`]), never the value.
//!
//! Rows written before sealing hold plain strings; they keep working, read back as hints and
//! are sealed when the agent's metadata is next written.

use serde_json::{json, Map, Value};

use crate::ids::DeveloperId;
use crate::vendors::sealing::{hint, KeySealer};

/// Associated data beside the developer's id, so a tool secret never opens as a provider key.
const PURPOSE: &str = "agent-tool-secret";

/// One tool secret or header value, in any of its forms.
#[derive(Debug, Clone, PartialEq)]
pub enum SecretValue {
    /// The value itself: as written, or in a row stored before sealing.
    Plain(String),
    /// Sealed at rest, with the hint shown for it.
    Sealed { sealed: String, hint: String },
    /// "Keep what is stored" (a hint sent back on a write).
    Keep,
}

impl SecretValue {
    /// Reads a value's JSON form; `None` for anything that is not one.
    pub fn read(value: &Value) -> Option<SecretValue> {
        match value {
            Value::String(text) => Some(SecretValue::Plain(text.clone())),
            Value::Object(map) => match (map.get("sealed"), map.get("hint")) {
                (Some(Value::String(sealed)), Some(Value::String(hint))) if map.len() == 2 => {
                    Some(SecretValue::Sealed {
                        sealed: sealed.clone(),
                        hint: hint.clone(),
                    })
                }
                (None, Some(Value::String(_))) if map.len() == 1 => Some(SecretValue::Keep),
                _ => None,
            },
            _ => None,
        }
    }

    /// How a read shows it: `{"hint": …}`.
    fn shown(&self) -> Value {
        match self {
            SecretValue::Plain(text) => json!({ "hint": hint(text) }),
            SecretValue::Sealed { hint, .. } => json!({ "hint": hint }),
            SecretValue::Keep => json!({ "hint": "" }),
        }
    }
}

/// Seals and opens one developer's tool secrets.
#[derive(Clone)]
pub struct ToolSecrets {
    sealer: KeySealer,
}

impl std::fmt::Debug for ToolSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolSecrets")
    }
}

impl ToolSecrets {
    pub fn new(sealer: KeySealer) -> Self {
        Self { sealer }
    }

    /// The value behind `value` for `developer`: `Err` names why it cannot be used (sealed
    /// under another master key or for another account, or a keep with nothing behind it).
    pub fn open(&self, developer: &DeveloperId, value: &SecretValue) -> Result<String, String> {
        match value {
            SecretValue::Plain(text) => Ok(text.clone()),
            SecretValue::Sealed { sealed, .. } => {
                self.sealer.open(developer, PURPOSE, sealed).ok_or_else(|| {
                    "its stored value does not open under this server's master key; write it again"
                        .to_string()
                })
            }
            SecretValue::Keep => Err("it has no stored value".to_string()),
        }
    }

    /// The metadata to store for `developer`: every tool secret and header value in
    /// `metadata` (JSON text, checked already) sealed, and each `{"hint"}` replaced by what
    /// `previous` (the stored metadata, on an update) holds for the same tool name and header.
    /// `Err` names the value that asked to keep something that is not stored.
    pub fn seal_metadata(
        &self,
        developer: &DeveloperId,
        metadata: &str,
        previous: Option<&str>,
    ) -> Result<String, String> {
        let mut metadata: Value = serde_json::from_str(metadata).map_err(|e| e.to_string())?;
        let previous: Value = previous
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null);
        let Some(tools) = metadata.get_mut("tools").and_then(Value::as_array_mut) else {
            return Ok(metadata.to_string());
        };
        for (i, tool) in tools.iter_mut().enumerate() {
            let Some(tool) = tool.as_object_mut() else {
                continue;
            };
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let before = stored_tool(&previous, name);
            if let Some(value) = tool.get("secret").filter(|v| !v.is_null()) {
                let kept = before.and_then(|t| t.get("secret"));
                let sealed = self
                    .seal_value(developer, value, kept)
                    .map_err(|why| format!("metadata.tools[{i}].secret: {why}"))?;
                tool.insert("secret".into(), sealed);
            }
            if let Some(Value::Object(headers)) = tool.get("headers").cloned() {
                let kept = before
                    .and_then(|t| t.get("headers"))
                    .and_then(Value::as_object);
                let mut sealed = Map::new();
                for (header, value) in headers {
                    let old = kept.and_then(|map| {
                        map.iter()
                            .find(|(name, _)| name.eq_ignore_ascii_case(&header))
                            .map(|(_, v)| v)
                    });
                    let value = self
                        .seal_value(developer, &value, old)
                        .map_err(|why| format!("metadata.tools[{i}].headers.{header}: {why}"))?;
                    sealed.insert(header, value);
                }
                tool.insert("headers".into(), Value::Object(sealed));
            }
        }
        Ok(metadata.to_string())
    }

    fn seal_value(
        &self,
        developer: &DeveloperId,
        value: &Value,
        kept: Option<&Value>,
    ) -> Result<Value, String> {
        let value = match SecretValue::read(value).ok_or("must be a string")? {
            SecretValue::Keep => kept.and_then(SecretValue::read),
            written => Some(written),
        };
        match value {
            Some(SecretValue::Plain(text)) => Ok(json!({
                "sealed": self.sealer.seal(developer, PURPOSE, &text),
                "hint": hint(&text),
            })),
            Some(SecretValue::Sealed { sealed, hint }) => {
                Ok(json!({"sealed": sealed, "hint": hint}))
            }
            Some(SecretValue::Keep) | None => {
                Err("there is no stored value to keep: send the value itself".into())
            }
        }
    }
}

/// The tool named `name` in stored metadata.
fn stored_tool<'a>(metadata: &'a Value, name: &str) -> Option<&'a Map<String, Value>> {
    metadata
        .get("tools")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name))
}

/// Stored metadata as a read shows it: every tool secret and header value as its hint.
pub fn shown(metadata: &Value) -> Value {
    let mut metadata = metadata.clone();
    let Some(tools) = metadata.get_mut("tools").and_then(Value::as_array_mut) else {
        return metadata;
    };
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        if let Some(secret) = tool.get_mut("secret") {
            if let Some(value) = SecretValue::read(secret) {
                *secret = value.shown();
            }
        }
        if let Some(Value::Object(headers)) = tool.get_mut("headers") {
            for value in headers.values_mut() {
                if let Some(secret) = SecretValue::read(value) {
                    *value = secret.shown();
                }
            }
        }
    }
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> ToolSecrets {
        ToolSecrets::new(KeySealer::new(&[3u8; 32]))
    }

    fn tools(secret: Value, headers: Value) -> String {
        json!({"tools": [{"name": "orders", "url": "https://a.example", "secret": secret,
                          "headers": headers}]})
        .to_string()
    }

    #[test]
    fn values_are_stored_sealed_and_read_back_as_hints() {
        let secrets = secrets();
        let written = tools(
            json!("signing-secret-0001"),
            json!({"Authorization": "Bearer live-key-9876"}),
        );
        let stored = secrets
            .seal_metadata(&"dev_a".into(), &written, None)
            .unwrap();
        assert!(!stored.contains("signing-secret"), "{stored}");
        assert!(!stored.contains("live-key"), "{stored}");
        let stored: Value = serde_json::from_str(&stored).unwrap();
        let header = SecretValue::read(&stored["tools"][0]["headers"]["Authorization"]).unwrap();
        assert_eq!(
            secrets.open(&"dev_a".into(), &header).unwrap(),
            "Bearer live-key-9876"
        );
        assert!(
            secrets.open(&"dev_b".into(), &header).is_err(),
            "another account"
        );
        let shown = shown(&stored);
        assert_eq!(shown["tools"][0]["secret"], json!({"hint": "0001"}));
        assert_eq!(
            shown["tools"][0]["headers"]["Authorization"],
            json!({"hint": "9876"})
        );
        assert_eq!(shown["tools"][0]["url"], "https://a.example");
    }

    #[test]
    fn a_hint_sent_back_keeps_the_stored_value_and_a_new_value_replaces_it() {
        let secrets = secrets();
        let first = secrets
            .seal_metadata(
                &"dev_a".into(),
                &tools(json!("signing-secret-0001"), json!({"X-Key": "first"})),
                None,
            )
            .unwrap();
        // What a read gave back, sent again with the header's name in another case.
        let again = tools(json!({"hint": "0001"}), json!({"x-key": {"hint": "t"}}));
        let second = secrets
            .seal_metadata(&"dev_a".into(), &again, Some(&first))
            .unwrap();
        let second: Value = serde_json::from_str(&second).unwrap();
        let open =
            |value: &Value| secrets.open(&"dev_a".into(), &SecretValue::read(value).unwrap());
        assert_eq!(
            open(&second["tools"][0]["secret"]).unwrap(),
            "signing-secret-0001"
        );
        assert_eq!(
            open(&second["tools"][0]["headers"]["x-key"]).unwrap(),
            "first"
        );

        let replaced = secrets
            .seal_metadata(
                &"dev_a".into(),
                &tools(json!("signing-secret-0002"), json!({"X-Key": "second"})),
                Some(&first),
            )
            .unwrap();
        let replaced: Value = serde_json::from_str(&replaced).unwrap();
        assert_eq!(
            open(&replaced["tools"][0]["headers"]["X-Key"]).unwrap(),
            "second"
        );
    }

    #[test]
    fn a_hint_with_nothing_stored_is_refused_naming_the_value() {
        let secrets = secrets();
        let err = secrets
            .seal_metadata(
                &"dev_a".into(),
                &tools(
                    json!("signing-secret-0001"),
                    json!({"X-Key": {"hint": "abc"}}),
                ),
                None,
            )
            .unwrap_err();
        assert!(err.starts_with("metadata.tools[0].headers.X-Key:"), "{err}");
        assert!(SecretValue::read(&json!({"sealed": "v1:x"})).is_none());
        assert!(SecretValue::read(&json!(42)).is_none());
    }

    #[test]
    fn plain_values_of_older_rows_still_open_and_are_hidden_on_read() {
        let secrets = secrets();
        let old: Value =
            serde_json::from_str(&tools(json!("signing-secret-0001"), json!({}))).unwrap();
        let value = SecretValue::read(&old["tools"][0]["secret"]).unwrap();
        assert_eq!(
            secrets.open(&"dev_a".into(), &value).unwrap(),
            "signing-secret-0001"
        );
        assert_eq!(shown(&old)["tools"][0]["secret"], json!({"hint": "0001"}));
    }
}
