//! Running a vendor's language-model stream: sends the request, feeds the server-sent events
//! to the adapter's protocol state, and forwards what it yields to the caller as it arrives.
//! The caller dropping its receiver (a barge-in) drops the HTTP response at once, which
//! closes the connection to the vendor. An answer that ends with the protocol's own marker
//! (`[DONE]`, `message_stop`) is forwarded at once and its body then read to its end, briefly
//! and in the background, so the connection goes back to the pool for the next turn instead
//! of being closed: the chunked body's terminator often arrives in a read of its own, and a
//! body dropped before it costs a new connection (a TCP and TLS handshake with a real vendor).
//! Also what the request bodies of vendors with their own message format share: the system
//! prompt apart, turns of one role merged, tool calls' arguments and tool declarations as JSON.

use serde_json::{json, Value};
use switchboard_actors::engine::{
    ChatMessage, ChatRequest, EngineError, EngineStream, LlmEvent, Role, ToolCall, ToolSpec,
};
use tokio::sync::mpsc;

use super::http::{BodyReader, Endpoint, SseDecoder, SseEvent};

/// What one server-sent event means to a protocol.
pub enum Step {
    /// Events to forward; the stream goes on.
    More(Vec<LlmEvent>),
    /// Events to forward; the answer is complete.
    Finished(Vec<LlmEvent>),
}

/// A vendor's streaming chat protocol, fed one event at a time.
pub trait ChatProtocol: Send + 'static {
    fn on_event(&mut self, event: SseEvent) -> Result<Step, EngineError>;

    /// The stream ended without the protocol's own end marker.
    fn on_eof(&mut self) -> Result<Vec<LlmEvent>, EngineError>;
}

/// Starts the request made by `build` and streams the answer through `protocol`.
pub fn spawn_chat_stream<P: ChatProtocol>(
    endpoint: Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder + Send + Sync + 'static,
    protocol: P,
) -> EngineStream<LlmEvent> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let watcher = tx.clone();
        let rest = tokio::select! {
            _ = watcher.closed() => None,
            result = run(&endpoint, build, protocol, &tx) => match result {
                Ok(rest) => rest,
                Err(err) => {
                    let _ = tx.send(Err(err)).await;
                    None
                }
            }
        };
        // The caller's stream ends here, before the drain.
        drop((tx, watcher));
        if let Some(body) = rest {
            body.drain().await;
        }
    });
    rx
}

/// Streams the answer; on the protocol's end marker, gives back the body still to be read.
async fn run<'a, P: ChatProtocol>(
    endpoint: &'a Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder,
    mut protocol: P,
    tx: &mpsc::Sender<Result<LlmEvent, EngineError>>,
) -> Result<Option<BodyReader<'a>>, EngineError> {
    let response = endpoint.send(build).await?;
    let mut body = endpoint.body(response);
    let mut decoder = SseDecoder::default();
    loop {
        let events = match body.next().await? {
            Some(chunk) => decoder.push(&chunk),
            None => {
                let mut tail = Vec::new();
                if let Some(event) = decoder.finish() {
                    match protocol.on_event(event)? {
                        Step::More(events) => tail.extend(events),
                        Step::Finished(events) => {
                            forward(tx, events).await;
                            return Ok(None);
                        }
                    }
                }
                tail.extend(protocol.on_eof()?);
                forward(tx, tail).await;
                return Ok(None);
            }
        };
        for event in events {
            match protocol.on_event(event)? {
                Step::More(events) => {
                    if !forward(tx, events).await {
                        return Ok(None);
                    }
                }
                Step::Finished(events) => {
                    forward(tx, events).await;
                    return Ok(Some(body));
                }
            }
        }
    }
}

async fn forward(tx: &mpsc::Sender<Result<LlmEvent, EngineError>>, events: Vec<LlmEvent>) -> bool {
    for event in events {
        if tx.send(Ok(event)).await.is_err() {
            return false;
        }
    }
    true
}

/// The system messages' text, joined by blank lines (`None` when there is none), for vendors
/// that take the system prompt apart from the turns.
pub fn system_prompt(request: &ChatRequest) -> Option<String> {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    (!system.is_empty()).then(|| system.join("\n\n"))
}

/// The conversation as turns of alternating roles: each message other than a system one
/// becomes a role and its content blocks (`turn`), empty ones are left out, and consecutive
/// turns of one role are merged.
pub fn merged_turns(
    request: &ChatRequest,
    mut turn: impl FnMut(&ChatMessage) -> (&'static str, Vec<Value>),
) -> Vec<(&'static str, Vec<Value>)> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in request.messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = turn(message);
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
}

/// A tool call's arguments as JSON (an empty object when they do not parse).
pub fn arguments_json(call: &ToolCall) -> Value {
    serde_json::from_str::<Value>(&call.arguments).unwrap_or_else(|_| json!({}))
}

/// The tools as `{name, description, <schema_key>: schema}` declarations.
pub fn tool_declarations(tools: &[ToolSpec], schema_key: &str) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut declaration = json!({"name": tool.name, "description": tool.description});
            declaration[schema_key] = schema_json(&tool.parameters);
            declaration
        })
        .collect()
}

/// A tool's JSON Schema text as a value (an empty object schema when it does not parse).
pub fn schema_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!({"type": "object", "properties": {}}))
}
