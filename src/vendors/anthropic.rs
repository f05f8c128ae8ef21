//! Anthropic Messages API, streamed: named server-sent events, text and tool-use content
//! blocks (tool input JSON gathered from `input_json_delta` fragments per block index).
//! Wire format: reference/protocols.md §6; https://docs.anthropic.com/en/api/messages-streaming.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use switchboard_actors::engine::{
    ChatRequest, EngineError, EngineErrorKind, EngineStream, FinishReason, LanguageModel, LlmEvent,
    Role, ToolCall,
};

use super::http::{Endpoint, SseEvent};
use super::streaming::{
    arguments_json, merged_turns, spawn_chat_stream, system_prompt, tool_declarations,
    ChatProtocol, Step,
};

const DEFAULT_MODEL: &str = "claude-haiku-4-5";

pub struct AnthropicMessages {
    pub endpoint: Endpoint,
}

impl LanguageModel for AnthropicMessages {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError> {
        let endpoint = self.endpoint.clone();
        let model = endpoint.llm_model(&request.model, DEFAULT_MODEL);
        let build = endpoint.post_json("/v1/messages", messages_body(&model, &request));
        Ok(spawn_chat_stream(
            endpoint.clone(),
            build,
            MessageStream::new(endpoint.vendor.clone()),
        ))
    }
}

/// The request body. System messages become `system`; tool results become `tool_result`
/// blocks of a user turn; consecutive turns of one role are merged, as the API requires
/// alternating roles.
pub fn messages_body(model: &str, request: &ChatRequest) -> Value {
    let turns = merged_turns(request, |message| match message.role {
        Role::User => (
            "user",
            vec![json!({"type": "text", "text": message.content})],
        ),
        Role::Tool => (
            "user",
            vec![json!({
                "type": "tool_result",
                "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                "content": message.content,
            })],
        ),
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !message.content.is_empty() {
                blocks.push(json!({"type": "text", "text": message.content}));
            }
            for call in &message.tool_calls {
                blocks.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": arguments_json(call),
                }));
            }
            ("assistant", blocks)
        }
        // Left out (merged_turns passes none): the system prompt goes apart.
        Role::System => ("user", Vec::new()),
    });
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens.max(1),
        "messages": messages,
        "stream": true,
        "temperature": request.temperature.clamp(0.0, 1.0),
    });
    if let Some(system) = system_prompt(request) {
        body["system"] = json!(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = json!(tool_declarations(&request.tools, "input_schema"));
    }
    body
}

/// Protocol state of one streamed message: tool-use blocks by their index.
struct MessageStream {
    vendor: String,
    tools: BTreeMap<u64, ToolCall>,
    reason: Option<FinishReason>,
    input_tokens: u32,
    output_tokens: u32,
}

impl MessageStream {
    fn new(vendor: String) -> Self {
        MessageStream {
            vendor,
            tools: BTreeMap::new(),
            reason: None,
            input_tokens: 0,
            output_tokens: 0,
        }
    }

    fn upstream(&self, message: impl std::fmt::Display) -> EngineError {
        EngineError::new(
            EngineErrorKind::Upstream,
            format!("{}: {message}", self.vendor),
        )
    }

    fn done(&self) -> LlmEvent {
        LlmEvent::Done {
            reason: self.reason.unwrap_or(FinishReason::Stop),
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
        }
    }
}

impl ChatProtocol for MessageStream {
    fn on_event(&mut self, event: SseEvent) -> Result<Step, EngineError> {
        if event.data.trim().is_empty() {
            return Ok(Step::More(Vec::new()));
        }
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|_| self.upstream("sent a stream event that is not JSON"))?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str())
            .to_string();
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        let mut events = Vec::new();
        match kind.as_str() {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    let count = |f: &str| usage.get(f).and_then(Value::as_u64).unwrap_or(0) as u32;
                    self.input_tokens = count("input_tokens")
                        + count("cache_read_input_tokens")
                        + count("cache_creation_input_tokens");
                    self.output_tokens = count("output_tokens");
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let text = |f: &str| {
                            block
                                .get(f)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string()
                        };
                        self.tools.insert(
                            index,
                            ToolCall {
                                id: text("id"),
                                name: text("name"),
                                arguments: String::new(),
                            },
                        );
                    }
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str) {
                            if !text.is_empty() {
                                events.push(LlmEvent::TextDelta(text.to_string()));
                            }
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(text) = delta.get("text").and_then(Value::as_str) {
                            if !text.is_empty() {
                                events.push(LlmEvent::TextDelta(text.to_string()));
                            }
                        }
                    }
                    Some("input_json_delta") => {
                        if let (Some(call), Some(part)) = (
                            self.tools.get_mut(&index),
                            delta.get("partial_json").and_then(Value::as_str),
                        ) {
                            call.arguments.push_str(part);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(mut call) = self.tools.remove(&index) {
                    if call.arguments.trim().is_empty() {
                        call.arguments = "{}".into();
                    }
                    events.push(LlmEvent::ToolCall(call));
                }
            }
            "message_delta" => {
                if let Some(output) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.output_tokens = output as u32;
                }
                self.reason = match data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    Some("tool_use") => Some(FinishReason::ToolCalls),
                    Some("max_tokens") | Some("model_context_window_exceeded") => {
                        Some(FinishReason::Length)
                    }
                    Some(_) => Some(FinishReason::Stop),
                    None => self.reason,
                };
            }
            "message_stop" => return Ok(Step::Finished(vec![self.done()])),
            "error" => {
                let kind = data
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error in the middle of the stream");
                return Err(self.upstream(format!("{kind}: {message}")));
            }
            _ => {}
        }
        Ok(Step::More(events))
    }

    fn on_eof(&mut self) -> Result<Vec<LlmEvent>, EngineError> {
        Err(self.upstream("the stream ended before message_stop"))
    }
}

/// The cheapest authenticated call: the model list.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/v1/models").await
}
