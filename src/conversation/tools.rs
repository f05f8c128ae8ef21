//! The tools an agent's language model may call: the built-in `search_knowledge` (the agent's
//! collection) and `end_conversation`, plus the developer's HTTP tools declared in the agent's
//! `metadata.tools` as `{name, description, parameters, url, method, timeoutMs, secret,
//! headers}`. HTTP tools go through the same address guard as every fetch (operators allow
//! internal hosts in `fetch.allow`), carry the developer's own `headers` and the call's context
//! in `Switchboard-*` headers ([`CallContext`]) and, when the tool has a `secret`, a
//! `Switchboard-Signature` made as the webhooks' is. Secrets and header values are stored
//! sealed ([`crate::registry::tool_secrets`]) and opened for the call.
//!
//! On a phone call the agent also acts on the call ([`CallControl`]): `end_call` (in place of
//! `end_conversation`), `send_dtmf` and, when the agent lists people to hand over to,
//! `transfer_call`. Each ends the session once the agent's last words have played, and the
//! call then does what was asked.

use crate::ids::{AgentId, CollectionId, DeveloperId, InstanceId, SessionId};
use crate::registry::Supervised;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard_actors::engine::{EngineError, EngineFuture, ToolCall, ToolExecutor, ToolSpec};

use super::transfer::TransferTarget;
use crate::engines::embeddings::Embedder;
use crate::fetch::{Fetcher, ToolRequest};
use crate::registry::knowledge::KnowledgeIndex;
use crate::registry::search::search_collection;
use crate::registry::tool_secrets::{SecretValue, ToolSecrets};
use switchboard_actors::engine::SessionEnding;

pub const SEARCH_KNOWLEDGE: &str = "search_knowledge";
pub const END_CONVERSATION: &str = "end_conversation";
pub const END_CALL: &str = "end_call";
pub const TRANSFER_CALL: &str = "transfer_call";
pub const SEND_DTMF: &str = "send_dtmf";
/// Names the developer's HTTP tools may not take.
const BUILT_IN: [&str; 5] = [
    SEARCH_KNOWLEDGE,
    END_CONVERSATION,
    END_CALL,
    TRANSFER_CALL,
    SEND_DTMF,
];
/// Most keys one `send_dtmf` call presses.
pub const MAX_DIGITS: usize = 32;
/// Longest an HTTP tool may take when it does not say.
const DEFAULT_TIMEOUT_MS: u64 = 5_000;
const MAX_TIMEOUT_MS: u64 = 30_000;
/// Most bytes of an HTTP tool's answer handed to the model.
const MAX_RESULT_BYTES: usize = 16 * 1024;
/// Lengths a tool's signing secret may have.
const SECRET_CHARS: std::ops::RangeInclusive<usize> = 16..=256;
/// Most headers of its own one tool sends, and the longest value of one.
const MAX_HEADERS: usize = 20;
const MAX_HEADER_VALUE_BYTES: usize = 4096;
/// Headers a tool cannot set: the ones the request's framing and the connection own, and the
/// `Switchboard-` ones this server sends.
const RESERVED_HEADERS: [&str; 11] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
];

/// A developer-defined HTTP tool.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub url: String,
    pub method: String,
    pub timeout: Duration,
    /// Keys the request's `Switchboard-Signature`, when set (sealed as stored).
    pub secret: Option<SecretValue>,
    /// The developer's own headers, sent with every call (values sealed as stored).
    pub headers: Vec<(String, SecretValue)>,
}

/// Who a tool is called for: sent with every HTTP tool call as `Switchboard-Session-Id`,
/// `Switchboard-Agent-Id`, `Switchboard-Call-Sid`, `Switchboard-From`, `Switchboard-To` and
/// `Switchboard-Instance-Id`, each when known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallContext {
    pub session_id: Option<SessionId>,
    pub agent_id: Option<AgentId>,
    pub call_sid: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub instance_id: Option<InstanceId>,
}

impl CallContext {
    /// The headers that carry it.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        [
            (
                "Switchboard-Session-Id",
                self.session_id.as_ref().map(SessionId::as_str),
            ),
            (
                "Switchboard-Agent-Id",
                self.agent_id.as_ref().map(AgentId::as_str),
            ),
            ("Switchboard-Call-Sid", self.call_sid.as_deref()),
            ("Switchboard-From", self.from.as_deref()),
            ("Switchboard-To", self.to.as_deref()),
            (
                "Switchboard-Instance-Id",
                self.instance_id.as_ref().map(InstanceId::as_str),
            ),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|value| (name, value.to_string())))
        .collect()
    }
}

/// Reads the HTTP tools of an agent's metadata (`metadata.tools`). Entries without a name or
/// url, or with a name of a built-in tool, are refused with the reason.
pub fn http_tools(metadata: &Value) -> Result<Vec<HttpTool>, String> {
    let Some(entries) = metadata.get("tools") else {
        return Ok(Vec::new());
    };
    let entries = entries
        .as_array()
        .ok_or("metadata.tools must be an array of tool definitions")?;
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
            let name = text("name").ok_or(format!("metadata.tools[{i}] needs a name"))?;
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                || name.is_empty()
                || name.len() > 64
            {
                return Err(format!(
                    "metadata.tools[{i}].name must be 1-64 letters, digits, _ or -"
                ));
            }
            if BUILT_IN.contains(&name.as_str()) {
                return Err(format!(
                    "metadata.tools[{i}].name '{name}' is a built-in tool"
                ));
            }
            let url = text("url").ok_or(format!("metadata.tools[{i}] needs a url"))?;
            let secret = match entry.get("secret") {
                None | Some(Value::Null) => None,
                Some(value) => Some(
                    SecretValue::read(value)
                        .filter(|secret| match secret {
                            SecretValue::Plain(text) => {
                                SECRET_CHARS.contains(&text.chars().count())
                            }
                            _ => true,
                        })
                        .ok_or_else(|| {
                            format!(
                                "metadata.tools[{i}].secret must be a string of {} to {} \
                                 characters (or the {{\"hint\"}} read back, to keep the stored one)",
                                SECRET_CHARS.start(),
                                SECRET_CHARS.end()
                            )
                        })?,
                ),
            };
            let headers = tool_headers(i, entry.get("headers"))?;
            let timeout = entry
                .get("timeoutMs")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_TIMEOUT_MS)
                .clamp(1, MAX_TIMEOUT_MS);
            Ok(HttpTool {
                description: text("description").unwrap_or_default(),
                parameters: entry
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                method: text("method")
                    .unwrap_or_else(|| "POST".into())
                    .to_ascii_uppercase(),
                timeout: Duration::from_millis(timeout),
                secret,
                headers,
                url,
                name,
            })
        })
        .collect()
}

/// Reads a tool's own `headers`: an object of at most [`MAX_HEADERS`] names, none reserved
/// or `Switchboard-…`, each with a value of at most [`MAX_HEADER_VALUE_BYTES`] visible
/// characters (or the `{"hint"}` read back, to keep the stored one).
fn tool_headers(i: usize, headers: Option<&Value>) -> Result<Vec<(String, SecretValue)>, String> {
    let headers = match headers {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(format!(
                "metadata.tools[{i}].headers must be an object of header names and values"
            ))
        }
    };
    if headers.len() > MAX_HEADERS {
        return Err(format!(
            "metadata.tools[{i}].headers has {} headers; at most {MAX_HEADERS}",
            headers.len()
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    headers
        .iter()
        .map(|(name, value)| {
            let lower = name.to_ascii_lowercase();
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(format!(
                    "metadata.tools[{i}].headers: '{name}' is not a header name"
                ));
            }
            if RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("switchboard-") {
                return Err(format!(
                    "metadata.tools[{i}].headers.{name} is set by the server, not by a tool"
                ));
            }
            if seen.contains(&lower) {
                return Err(format!(
                    "metadata.tools[{i}].headers names {name} twice (names ignore case)"
                ));
            }
            seen.push(lower);
            let value = SecretValue::read(value)
                .filter(|value| match value {
                    SecretValue::Plain(text) => {
                        text.len() <= MAX_HEADER_VALUE_BYTES
                            && reqwest::header::HeaderValue::from_str(text).is_ok()
                    }
                    _ => true,
                })
                .ok_or_else(|| {
                    format!(
                        "metadata.tools[{i}].headers.{name} must be a string of at most \
                         {MAX_HEADER_VALUE_BYTES} visible characters, without line breaks \
                         (or the {{\"hint\"}} read back, to keep the stored one)"
                    )
                })?;
            Ok((name.clone(), value))
        })
        .collect()
}

/// The names of every tool an agent with HTTP tools `http` may be offered: the built-in
/// ones and its own.
pub fn tool_names(http: &[HttpTool]) -> Vec<&str> {
    let mut names: Vec<&str> = BUILT_IN.to_vec();
    names.extend(http.iter().map(|t| t.name.as_str()));
    names
}

/// What one tool call did.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// Handed back to the model (for an error, a short explanation of it).
    pub result: String,
    pub error: Option<String>,
    pub duration_ms: u64,
    /// The call asked to end the conversation.
    pub ends_conversation: bool,
}

/// What the agent asks of the phone call it is on, done once its last words have played.
#[derive(Debug, Clone, PartialEq)]
pub enum CallAction {
    /// Hang up (`end_call`).
    HangUp,
    /// Hand the call to `target`, telling them `summary` first on a warm transfer
    /// (`transfer_call`).
    Transfer {
        target: TransferTarget,
        summary: String,
    },
    /// Press `digits` (0-9, `*`, `#`, `w` for half a second's pause) on the line, then come
    /// back to the agent (`send_dtmf`).
    Keypad { digits: String },
}

/// The phone call a session's agent is on, for the tools that act on it.
pub trait CallControl: Send + Sync + 'static {
    /// The people the agent may hand the call to.
    fn targets(&self) -> &[TransferTarget];

    /// Asks for `action` once the agent's last words have played. `Err` says why not (the
    /// call has something asked of it already).
    fn request(&self, action: CallAction) -> Result<(), String>;
}

/// The tools of one agent. Cheap to clone.
#[derive(Clone)]
pub struct AgentTools {
    embedder: Arc<dyn Embedder>,
    knowledge: Supervised<KnowledgeIndex>,
    fetcher: Fetcher,
    collection_id: Option<CollectionId>,
    http: Arc<Vec<HttpTool>>,
    /// Opens the HTTP tools' sealed secrets and headers, for the agent's owner.
    secrets: Arc<(ToolSecrets, DeveloperId)>,
    call: Option<Arc<dyn CallControl>>,
    context: Arc<CallContext>,
}

/// What an agent's tools are made of: its HTTP tools, and what opens their sealed values for
/// the agent's owner.
pub struct HttpTools {
    pub tools: Vec<HttpTool>,
    pub secrets: ToolSecrets,
    pub developer_id: DeveloperId,
}

impl AgentTools {
    pub fn new(
        embedder: Arc<dyn Embedder>,
        knowledge: Supervised<KnowledgeIndex>,
        fetcher: Fetcher,
        collection_id: Option<CollectionId>,
        http: HttpTools,
    ) -> Self {
        Self {
            embedder,
            knowledge,
            fetcher,
            collection_id,
            http: Arc::new(http.tools),
            secrets: Arc::new((http.secrets, http.developer_id)),
            call: None,
            context: Arc::default(),
        }
    }

    /// The same tools, calling HTTP tools for `context`.
    pub fn for_context(self, context: CallContext) -> Self {
        Self {
            context: Arc::new(context),
            ..self
        }
    }

    /// The tools of an agent on phone call `call`, which its tools may act on.
    pub fn on_call(self, call: Arc<dyn CallControl>) -> Self {
        Self {
            call: Some(call),
            ..self
        }
    }

    /// The tool list offered to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        if self.collection_id.is_some() {
            specs.push(ToolSpec {
                name: SEARCH_KNOWLEDGE.into(),
                description: "Search the knowledge base for facts that answer the user's question."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"query": {"type": "string", "description": "What to look for"}},
                    "required": ["query"]
                })
                .to_string(),
            });
        }
        match &self.call {
            None => specs.push(ToolSpec {
                name: END_CONVERSATION.into(),
                description:
                    "End the conversation when the user says goodbye or has what they need.".into(),
                parameters: json!({"type": "object", "properties": {}}).to_string(),
            }),
            Some(call) => specs.extend(call_specs(call.targets())),
        }
        specs.extend(self.http.iter().map(|tool| ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.to_string(),
        }));
        specs
    }

    /// Runs one call. Failures become results the model can read, never a failed turn.
    pub async fn run(&self, call: &ToolCall) -> ToolOutcome {
        let started = Instant::now();
        let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let outcome: Result<(String, bool), String> = match call.name.as_str() {
            SEARCH_KNOWLEDGE => self.search(&arguments).await.map(|r| (r, false)),
            END_CONVERSATION => Ok(("The conversation is over.".into(), true)),
            END_CALL | TRANSFER_CALL | SEND_DTMF => {
                self.act_on_call(&call.name, &arguments).map(|r| (r, true))
            }
            name => match self.http.iter().find(|t| t.name == name) {
                Some(tool) => self.call_http(tool, &arguments).await.map(|r| (r, false)),
                None => Err(format!("there is no tool named '{name}'")),
            },
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok((result, ends_conversation)) => ToolOutcome {
                result,
                error: None,
                duration_ms,
                ends_conversation,
            },
            Err(error) => ToolOutcome {
                result: format!("The tool failed: {error}"),
                error: Some(error),
                duration_ms,
                ends_conversation: false,
            },
        }
    }

    /// Asks the call for what `tool` wants, to be done once the agent's last words have played.
    fn act_on_call(&self, tool: &str, arguments: &Value) -> Result<String, String> {
        let call = self
            .call
            .as_ref()
            .ok_or(format!("{tool} works on phone calls only"))?;
        let (action, result) = match tool {
            END_CALL => (
                CallAction::HangUp,
                "The call will end once your last words have played.".to_string(),
            ),
            SEND_DTMF => {
                let digits = arguments
                    .get("digits")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                check_digits(&digits)?;
                let result = format!(
                    "The keys {digits} will be pressed once your last words have played; then you will hear the line again."
                );
                (CallAction::Keypad { digits }, result)
            }
            _ => {
                let name = arguments
                    .get("target")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let target = call
                    .targets()
                    .iter()
                    .find(|t| t.name.eq_ignore_ascii_case(name.trim()))
                    .cloned()
                    .ok_or_else(|| {
                        let names: Vec<&str> =
                            call.targets().iter().map(|t| t.name.as_str()).collect();
                        format!(
                            "there is no one named '{name}' to transfer to (one of: {})",
                            names.join(", ")
                        )
                    })?;
                let summary: String = arguments
                    .get("summary")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .trim()
                    .chars()
                    .take(MAX_SUMMARY_CHARS)
                    .collect();
                let result = format!(
                    "The call will be handed to {} once your last words have played.",
                    target.name
                );
                (CallAction::Transfer { target, summary }, result)
            }
        };
        call.request(action)?;
        Ok(result)
    }

    async fn search(&self, arguments: &Value) -> Result<String, String> {
        let collection = self
            .collection_id
            .as_ref()
            .ok_or("this agent has no knowledge collection")?;
        let query = arguments
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
            .ok_or("search_knowledge needs a query")?;
        let hits = search_collection(
            self.embedder.as_ref(),
            &self.knowledge,
            collection,
            query.chars().take(2000).collect(),
            super::retrieval::RETRIEVED_CHUNKS,
            super::retrieval::RETRIEVAL_FLOOR,
        )
        .await
        .map_err(|e| e.to_string())?;
        if hits.is_empty() {
            return Ok("Nothing in the knowledge base matches.".into());
        }
        Ok(hits
            .iter()
            .map(|h| h.content.trim())
            .collect::<Vec<_>>()
            .join("\n---\n"))
    }

    /// Calls an HTTP tool within its `timeoutMs`. Running out of time is said as such (the
    /// developer set that bound, and the call's `durationMs` shows it anyway); every other
    /// failure to reach the URL reads as the fetch guard words it.
    async fn call_http(&self, tool: &HttpTool, arguments: &Value) -> Result<String, String> {
        // The client's own bound is a backstop a little later, so running out of time is
        // always seen here first.
        let (secrets, developer) = &*self.secrets;
        let unusable =
            |what: &str, why: String| format!("{} cannot be called: its {what}: {why}", tool.name);
        let secret = match &tool.secret {
            Some(value) => Some(
                secrets
                    .open(developer, value)
                    .map_err(|why| unusable("secret", why))?,
            ),
            None => None,
        };
        let mut headers = Vec::with_capacity(tool.headers.len() + 6);
        for (name, value) in &tool.headers {
            let value = secrets
                .open(developer, value)
                .map_err(|why| unusable(&format!("header {name}"), why))?;
            headers.push((name.clone(), value));
        }
        headers.extend(
            self.context
                .headers()
                .into_iter()
                .map(|(name, value)| (name.to_string(), value)),
        );
        let request = ToolRequest {
            method: &tool.method,
            url: &tool.url,
            headers: &headers,
            secret: secret.as_deref(),
        };
        let call = self.fetcher.call_json(
            &request,
            arguments,
            tool.timeout + Duration::from_secs(1),
            MAX_RESULT_BYTES,
        );
        let answer = tokio::time::timeout(tool.timeout, call)
            .await
            .map_err(|_| {
                format!(
                    "{} did not answer in time ({} ms)",
                    tool.name,
                    tool.timeout.as_millis()
                )
            })?
            .map_err(|e| e.to_string())?;
        if !(200..300).contains(&answer.status) {
            return Err(format!("{} answered HTTP {}", tool.name, answer.status));
        }
        Ok(answer.body)
    }
}

/// Most characters of the summary a warm transfer tells the person.
pub const MAX_SUMMARY_CHARS: usize = 1000;

/// Checks keys for the keypad: 1 to [`MAX_DIGITS`] of 0-9, `*`, `#` and `w` (a pause).
pub fn check_digits(digits: &str) -> Result<(), String> {
    if digits.is_empty()
        || digits.len() > MAX_DIGITS
        || !digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '*' | '#' | 'w'))
    {
        return Err(format!(
            "digits must be 1-{MAX_DIGITS} of 0-9, *, # and w (a half-second pause), not '{digits}'"
        ));
    }
    Ok(())
}

/// The tools that act on a phone call, offered to its agent.
fn call_specs(targets: &[TransferTarget]) -> Vec<ToolSpec> {
    let mut specs = vec![
        ToolSpec {
            name: END_CALL.into(),
            description: "Hang up the phone call, after saying goodbye, when the caller has what they need or says goodbye.".into(),
            parameters: json!({"type": "object", "properties": {}}).to_string(),
        },
        ToolSpec {
            name: SEND_DTMF.into(),
            description: "Press keys on the phone line, for example to choose an option in an automated phone menu. Digits 0-9, * and #; w waits half a second.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"digits": {"type": "string", "pattern": "^[0-9*#w]{1,32}$", "description": "The keys to press, in order"}},
                "required": ["digits"]
            })
            .to_string(),
        },
    ];
    if !targets.is_empty() {
        let listed: Vec<String> = targets
            .iter()
            .map(|t| match t.description.trim() {
                "" => t.name.clone(),
                description => format!("{} ({description})", t.name),
            })
            .collect();
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        specs.push(ToolSpec {
            name: TRANSFER_CALL.into(),
            description: format!(
                "Hand the call to a person when the caller asks for one or needs what only they can do. Say that you are transferring them first. People: {}.",
                listed.join("; ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "target": {"type": "string", "enum": names, "description": "Who to hand the call to"},
                    "summary": {"type": "string", "description": "One or two sentences for the person: who is calling and what they need"}
                },
                "required": ["target", "summary"]
            })
            .to_string(),
        });
    }
    specs
}

impl ToolExecutor for AgentTools {
    fn execute(&self, call: ToolCall) -> EngineFuture<String> {
        let tools = self.clone();
        Box::pin(async move {
            let outcome = tools.run(&call).await;
            match outcome.error {
                // A call action that was not taken must not end the session.
                Some(error) if tools.ends_session(&call).is_some() => {
                    Err(EngineError::invalid(error))
                }
                _ => Ok(outcome.result),
            }
        })
    }

    fn ends_session(&self, call: &ToolCall) -> Option<SessionEnding> {
        match call.name.as_str() {
            END_CONVERSATION | END_CALL => Some(SessionEnding::Conversation),
            TRANSFER_CALL => Some(SessionEnding::Transfer),
            SEND_DTMF => Some(SessionEnding::Redirect),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_tools_are_read_from_agent_metadata() {
        let metadata = json!({"tools": [
            {"name": "order_status", "description": "Look up an order", "url": "https://shop.example/status",
             "parameters": {"type": "object", "properties": {"orderId": {"type": "string"}}}, "timeoutMs": 2000},
            {"name": "weather", "url": "https://api.example/weather", "method": "get"}
        ]});
        let tools = http_tools(&metadata).unwrap();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].timeout, Duration::from_millis(2000));
        assert_eq!(tools[1].method, "GET");
        assert_eq!(tools[1].timeout, Duration::from_millis(DEFAULT_TIMEOUT_MS));
        assert!(http_tools(&json!({})).unwrap().is_empty());
        assert!(http_tools(&json!({"tools": [{"name": "x"}]}))
            .unwrap_err()
            .contains("url"));
        assert!(
            http_tools(&json!({"tools": [{"name": "search_knowledge", "url": "https://a"}]}))
                .unwrap_err()
                .contains("built-in")
        );
        assert!(http_tools(&json!({"tools": "nope"})).is_err());
    }
}
