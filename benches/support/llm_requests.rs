//! Requests to the embedded language model for its benchmarks: a greedy request, and one
//! streamed to its end with the time to its first text.

use std::time::{Duration, Instant};

use switchboard::engines::llm::LocalLlm;
use switchboard_actors::engine::{ChatMessage, ChatRequest, LanguageModel, LlmEvent};

/// A greedy request of `messages`, answered within `max_tokens`, in `conversation`.
pub fn request(
    messages: Vec<ChatMessage>,
    max_tokens: u32,
    conversation: Option<&str>,
) -> ChatRequest {
    ChatRequest {
        model: None,
        messages,
        tools: Vec::new(),
        temperature: 0.0,
        max_tokens,
        conversation: conversation.map(str::to_owned),
    }
}

/// Streams `request`; returns the time to the first text and the whole answer.
pub async fn timed(llm: &LocalLlm, request: ChatRequest) -> (Duration, String) {
    let started = Instant::now();
    let mut rx = llm.stream(request).expect("stream starts");
    let mut first = None;
    let mut text = String::new();
    while let Some(event) = rx.recv().await {
        match event.expect("no engine error") {
            LlmEvent::TextDelta(delta) => {
                first.get_or_insert_with(|| started.elapsed());
                text.push_str(&delta);
            }
            LlmEvent::ToolCall(_) => {}
            LlmEvent::Done { .. } => break,
        }
    }
    (first.unwrap_or_else(|| started.elapsed()), text)
}
