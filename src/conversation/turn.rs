//! One conversation turn: the language model answers, calling tools for up to `max_steps`
//! rounds (each round's tool results are fed back), and the last round is asked for text
//! only so a turn always ends with a reply.

use std::sync::Arc;

use serde::Serialize;
use switchboard_actors::engine::{
    ChatMessage, ChatRequest, EngineError, LanguageModel, LlmEvent, Role, ToolCall,
};
use utoipa::ToSchema;

use super::tools::AgentTools;

/// A tool call as the chat response reports it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    /// The arguments the model gave, as JSON.
    #[schema(value_type = Object)]
    pub arguments: serde_json::Value,
    pub result: String,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a turn produced.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub reply: String,
    pub tool_calls: Vec<ToolCallRecord>,
    /// The messages the turn added after the user's: assistant tool-call messages, tool
    /// results, and the final reply.
    pub added: Vec<ChatMessage>,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// A tool ended the conversation.
    pub ended: bool,
}

/// The model's settings for a turn.
#[derive(Debug, Clone)]
pub struct TurnSettings {
    pub temperature: f32,
    pub max_tokens: u32,
    pub max_steps: u32,
    /// Offer the tools to the model. Off for models that cannot call tools: the tool
    /// instructions only confuse them (retrieval then happens before the model instead).
    pub offer_tools: bool,
    /// The conversation the turn continues (see [`ChatRequest::conversation`]).
    pub conversation: Option<String>,
}

/// Runs a turn on `messages` (system prompt, history, the user's message).
pub async fn run_turn(
    llm: Arc<dyn LanguageModel>,
    tools: &AgentTools,
    mut messages: Vec<ChatMessage>,
    settings: TurnSettings,
) -> Result<TurnOutcome, EngineError> {
    let first_added = messages.len();
    let mut outcome = TurnOutcome {
        reply: String::new(),
        tool_calls: Vec::new(),
        added: Vec::new(),
        input_tokens: 0,
        output_tokens: 0,
        ended: false,
    };
    let specs = if settings.offer_tools {
        tools.specs()
    } else {
        Vec::new()
    };
    for step in 1..=settings.max_steps.max(1) {
        // The last round offers no tools, so the model must answer in words.
        let offered = if step < settings.max_steps && !outcome.ended {
            specs.clone()
        } else {
            Vec::new()
        };
        let mut stream = llm.stream(ChatRequest {
            model: None,
            messages: messages.clone(),
            tools: offered,
            temperature: settings.temperature,
            max_tokens: settings.max_tokens,
            conversation: settings.conversation.clone(),
        })?;
        let mut text = String::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        while let Some(event) = stream.recv().await {
            match event? {
                LlmEvent::TextDelta(delta) => text.push_str(&delta),
                LlmEvent::ToolCall(call) => calls.push(call),
                LlmEvent::Done {
                    prompt_tokens,
                    completion_tokens,
                    ..
                } => {
                    outcome.input_tokens += prompt_tokens;
                    outcome.output_tokens += completion_tokens;
                }
            }
        }
        if calls.is_empty() {
            outcome.reply = text.trim().to_string();
            messages.push(ChatMessage::new(Role::Assistant, outcome.reply.clone()));
            break;
        }
        let mut assistant = ChatMessage::new(Role::Assistant, text.trim());
        assistant.tool_calls = calls.clone();
        messages.push(assistant);
        for call in calls {
            let result = tools.run(&call).await;
            outcome.ended |= result.ends_conversation;
            let mut message = ChatMessage::new(Role::Tool, result.result.clone());
            message.tool_call_id = Some(call.id.clone());
            messages.push(message);
            outcome.tool_calls.push(ToolCallRecord {
                arguments: serde_json::from_str(&call.arguments)
                    .unwrap_or(serde_json::Value::String(call.arguments.clone())),
                id: call.id,
                name: call.name,
                result: result.result,
                duration_ms: result.duration_ms,
                error: result.error,
            });
        }
    }
    outcome.added = messages.split_off(first_added);
    Ok(outcome)
}
