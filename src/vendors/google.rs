//! Google Gemini, streamed: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` with
//! the key in `x-goog-api-key`. Each server-sent event is a whole `GenerateContentResponse`
//! whose candidate parts carry text or complete `functionCall`s; the stream ends at EOF.
//! Tool results go back as `functionResponse` parts naming the function. Reference:
//! https://ai.google.dev/api (generateContent, streamGenerateContent, function calling).

use std::collections::HashMap;

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

const DEFAULT_MODEL: &str = "gemini-3.5-flash";

pub struct GeminiChat {
    pub endpoint: Endpoint,
}

impl LanguageModel for GeminiChat {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError> {
        let model = self.endpoint.llm_model(&request.model, DEFAULT_MODEL);
        let model: String = url::form_urlencoded::byte_serialize(model.as_bytes()).collect();
        let path = format!("/v1beta/models/{model}:streamGenerateContent?alt=sse");
        let build = self.endpoint.post_json(&path, contents_body(&request));
        Ok(spawn_chat_stream(
            self.endpoint.clone(),
            build,
            GeminiStream::new(self.endpoint.vendor.clone()),
        ))
    }
}

/// The request body: system messages as `systemInstruction`, the conversation as `contents`
/// (roles `user` and `model`, consecutive turns of one role merged), tools as
/// `functionDeclarations`.
pub fn contents_body(request: &ChatRequest) -> Value {
    // Function responses name the function; our tool messages name the call.
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    let contents = merged_turns(request, |message| match message.role {
        // Left out (merged_turns passes none): the system prompt goes apart.
        Role::System => ("user", Vec::new()),
        Role::User => ("user", vec![json!({"text": message.content})]),
        Role::Tool => {
            let id = message.tool_call_id.as_deref().unwrap_or_default();
            let result = serde_json::from_str::<Value>(&message.content)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({"result": message.content}));
            let name = names.get(id).copied().unwrap_or(id);
            (
                "user",
                vec![json!({"functionResponse": {"name": name, "response": result}})],
            )
        }
        Role::Assistant => {
            let mut parts = Vec::new();
            if !message.content.is_empty() {
                parts.push(json!({"text": message.content}));
            }
            for call in &message.tool_calls {
                let args = arguments_json(call);
                parts.push(json!({"functionCall": {"name": call.name, "args": args}}));
            }
            ("model", parts)
        }
    });
    let mut body = json!({
        "contents": contents
            .into_iter()
            .map(|(role, parts)| json!({"role": role, "parts": parts}))
            .collect::<Vec<_>>(),
        "generationConfig": {
            "temperature": request.temperature,
            "maxOutputTokens": request.max_tokens.max(1),
        },
    });
    if let Some(system) = system_prompt(request) {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !request.tools.is_empty() {
        let declarations = tool_declarations(&request.tools, "parameters");
        body["tools"] = json!([{"functionDeclarations": declarations}]);
    }
    body
}

/// Protocol state of one streamed answer.
struct GeminiStream {
    vendor: String,
    calls: usize,
    reason: Option<FinishReason>,
    prompt_tokens: u32,
    completion_tokens: u32,
}

impl GeminiStream {
    fn new(vendor: String) -> Self {
        GeminiStream {
            vendor,
            calls: 0,
            reason: None,
            prompt_tokens: 0,
            completion_tokens: 0,
        }
    }

    fn upstream(&self, message: impl std::fmt::Display) -> EngineError {
        EngineError::new(
            EngineErrorKind::Upstream,
            format!("{}: {message}", self.vendor),
        )
    }
}

impl ChatProtocol for GeminiStream {
    fn on_event(&mut self, event: SseEvent) -> Result<Step, EngineError> {
        if event.data.trim().is_empty() {
            return Ok(Step::More(Vec::new()));
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|_| self.upstream("sent a stream event that is not JSON"))?;
        if let Some(message) = chunk.pointer("/error/message").and_then(Value::as_str) {
            return Err(self.upstream(message));
        }
        if let Some(usage) = chunk.get("usageMetadata") {
            let count = |f: &str| usage.get(f).and_then(Value::as_u64).unwrap_or(0) as u32;
            self.prompt_tokens = count("promptTokenCount");
            self.completion_tokens = count("candidatesTokenCount");
        }
        let candidate = chunk.pointer("/candidates/0").unwrap_or(&Value::Null);
        let mut events = Vec::new();
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                if !text.is_empty() && part.get("thought") != Some(&Value::Bool(true)) {
                    events.push(LlmEvent::TextDelta(text.to_string()));
                }
            }
            if let Some(call) = part.get("functionCall") {
                self.calls += 1;
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("call_{}", self.calls), str::to_string);
                events.push(LlmEvent::ToolCall(ToolCall {
                    id,
                    name: call
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    arguments: call.get("args").unwrap_or(&json!({})).to_string(),
                }));
            }
        }
        match candidate.get("finishReason").and_then(Value::as_str) {
            Some("MAX_TOKENS") => self.reason = Some(FinishReason::Length),
            Some(_) => self.reason = Some(FinishReason::Stop),
            None => {}
        }
        if let Some(blocked) = chunk
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            return Err(self.upstream(format!("blocked the prompt ({blocked})")));
        }
        Ok(Step::More(events))
    }

    fn on_eof(&mut self) -> Result<Vec<LlmEvent>, EngineError> {
        // Gemini's stream has no end marker: a finish reason means the answer is whole.
        let Some(reason) = self.reason else {
            return Err(self.upstream("the stream ended before the answer was complete"));
        };
        let reason = if self.calls > 0 {
            FinishReason::ToolCalls
        } else {
            reason
        };
        Ok(vec![LlmEvent::Done {
            reason,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
        }])
    }
}

/// The cheapest authenticated call: the model list.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/v1beta/models").await
}
