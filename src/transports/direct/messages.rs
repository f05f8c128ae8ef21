//! The direct socket's JSON messages: what a client may send (decoded, bounded, never
//! trusted) and the session events the server sends, as documented in docs/realtime.md.

use serde_json::{json, Value};
use switchboard_actors::session::SessionEvent;

/// Longest typed turn, in characters: the limit of a chat message.
const MAX_TEXT_CHARS: usize = 10_000;

/// One JSON text message from the client, as the socket acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessage {
    /// `{"type": "text"}`: a typed turn of 1 to [`MAX_TEXT_CHARS`] characters.
    Text(String),
    Interrupt,
    Mark(String),
    End,
}

/// Why a client message was refused; the client is told with an `error` event and the
/// session goes on as if the message had not been sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientMessageError {
    #[error("messages must be JSON objects")]
    NotJson,
    #[error("unknown message type '{0}'")]
    UnknownType(String),
    /// A known type without what it needs, or with too much of it.
    #[error("{0}")]
    Invalid(String),
}

impl ClientMessageError {
    /// The `code` of the `error` event sent back.
    pub fn code(&self) -> &'static str {
        match self {
            ClientMessageError::NotJson | ClientMessageError::Invalid(_) => "bad_message",
            ClientMessageError::UnknownType(_) => "unknown_message",
        }
    }
}

/// Decodes one text message from the client. Never panics on any input: this is what the
/// socket runs on every text frame.
pub fn parse_client_message(text: &str) -> Result<ClientMessage, ClientMessageError> {
    let message: Value = serde_json::from_str(text).map_err(|_| ClientMessageError::NotJson)?;
    if !message.is_object() {
        return Err(ClientMessageError::NotJson);
    }
    let invalid = |why: &str| ClientMessageError::Invalid(why.to_string());
    let parsed = match message["type"].as_str().unwrap_or("") {
        "text" => {
            let text = message["text"]
                .as_str()
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| invalid("a text message needs a non-blank string `text`"))?;
            let chars = text.chars().count();
            if chars > MAX_TEXT_CHARS {
                return Err(ClientMessageError::Invalid(format!(
                    "`text` is {chars} characters; at most {MAX_TEXT_CHARS}"
                )));
            }
            ClientMessage::Text(text.to_string())
        }
        "interrupt" => ClientMessage::Interrupt,
        "mark" => match message["name"].as_str() {
            Some(name) => ClientMessage::Mark(name.to_string()),
            None => return Err(invalid("a mark needs a string `name`")),
        },
        "end" => ClientMessage::End,
        other => return Err(ClientMessageError::UnknownType(other.to_string())),
    };
    Ok(parsed)
}

/// A session event as the direct socket sends it.
pub fn event_json(event: &SessionEvent) -> Value {
    let name = event.name();
    match event {
        SessionEvent::SessionStarted { session_id } => {
            json!({"type": name, "sessionId": session_id})
        }
        SessionEvent::TranscriptPartial { text } | SessionEvent::TranscriptFinal { text } => {
            json!({"type": name, "text": text})
        }
        SessionEvent::AgentTextDelta { response_id, text } => {
            json!({"type": name, "responseId": response_id, "text": text})
        }
        SessionEvent::AgentAudioStart { response_id }
        | SessionEvent::AgentCancelled { response_id }
        | SessionEvent::AudioClear { response_id } => {
            json!({"type": name, "responseId": response_id})
        }
        SessionEvent::AgentAudioEnd {
            response_id,
            interrupted,
        } => json!({"type": name, "responseId": response_id, "interrupted": interrupted}),
        SessionEvent::ToolCall(call) => json!({
            "type": name, "id": call.id, "name": call.name,
            "arguments": serde_json::from_str::<Value>(&call.arguments).unwrap_or(Value::Null),
        }),
        SessionEvent::ToolResult {
            call_id,
            name: tool,
            output,
            is_error,
            duration_ms,
        } => {
            json!({"type": name, "id": call_id, "name": tool, "output": output, "isError": is_error, "durationMs": duration_ms})
        }
        SessionEvent::TurnMetrics(turn) => {
            let mut metrics = json!({
                "type": name, "index": turn.index, "speaker": turn.speaker.as_str(), "text": turn.text,
                "startMs": turn.start_ms, "endMs": turn.end_ms, "sttMs": turn.stt_ms, "llmMs": turn.llm_ms,
                "ttsMs": turn.tts_ms, "interrupted": turn.interrupted, "error": turn.error,
                "latencyMs": turn.latency.map(|l| l.total_ms),
            });
            if let Some(id) = turn.response_id {
                metrics["responseId"] = id.into();
            }
            // Where an answer's latency went, for clients that chart it.
            if let Some(l) = turn.latency {
                metrics["endpointMs"] = l.endpoint_ms.into();
                metrics["toolMs"] = l.tool_ms.into();
                metrics["platformMs"] = l.platform_ms.into();
            }
            metrics
        }
        SessionEvent::Error { code, message } => {
            json!({"type": name, "code": code, "message": message})
        }
        SessionEvent::SessionEnded(summary) => json!({
            "type": name, "totalDurationMs": summary.total_duration_ms,
            "avgTurnLatencyMs": (summary.avg_turn_latency_ms > 0).then_some(summary.avg_turn_latency_ms),
            "turns": summary.turns,
            "toolExecutions": summary.tool_executions,
            "reason": crate::observability::recorder::end_reason(&summary.reason),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_client_messages_decode() {
        assert_eq!(
            parse_client_message(r#"{"type": "text", "text": "hello"}"#),
            Ok(ClientMessage::Text("hello".into()))
        );
        assert_eq!(
            parse_client_message(r#"{"type": "interrupt"}"#),
            Ok(ClientMessage::Interrupt)
        );
        assert_eq!(
            parse_client_message(r#"{"type": "mark", "name": "m1"}"#),
            Ok(ClientMessage::Mark("m1".into()))
        );
        assert_eq!(
            parse_client_message(r#"{"type": "end"}"#),
            Ok(ClientMessage::End)
        );
        let longest = format!(r#"{{"type": "text", "text": "{}"}}"#, "é".repeat(10_000));
        let Ok(ClientMessage::Text(kept)) = parse_client_message(&longest) else {
            panic!("10,000 characters are a text message");
        };
        assert_eq!(kept.chars().count(), MAX_TEXT_CHARS);
    }

    #[test]
    fn bad_messages_are_told_apart() {
        let not_json = parse_client_message("hello").unwrap_err();
        assert_eq!(not_json.code(), "bad_message");
        let unknown = parse_client_message(r#"{"type": "dance"}"#).unwrap_err();
        assert_eq!(unknown.code(), "unknown_message");
        assert_eq!(unknown.to_string(), "unknown message type 'dance'");
        for not_an_object in ["[]", "5", r#""text""#, "null"] {
            assert_eq!(
                parse_client_message(not_an_object),
                Err(ClientMessageError::NotJson),
                "{not_an_object}"
            );
        }
        assert_eq!(
            parse_client_message(r#"{"text": "no type"}"#),
            Err(ClientMessageError::UnknownType(String::new()))
        );
        let too_long = format!(r#"{{"type": "text", "text": "{}"}}"#, "é".repeat(10_001));
        let refused = parse_client_message(&too_long).unwrap_err();
        assert_eq!(refused.code(), "bad_message");
        assert_eq!(
            refused.to_string(),
            "`text` is 10001 characters; at most 10000"
        );
        for (incomplete, why) in [
            (
                r#"{"type": "text", "text": "  "}"#,
                "non-blank string `text`",
            ),
            (r#"{"type": "text"}"#, "non-blank string `text`"),
            (r#"{"type": "text", "text": 7}"#, "non-blank string `text`"),
            (r#"{"type": "mark"}"#, "string `name`"),
        ] {
            let refused = parse_client_message(incomplete).unwrap_err();
            assert_eq!(refused.code(), "bad_message", "{incomplete}");
            assert!(refused.to_string().contains(why), "{incomplete}: {refused}");
        }
    }
}
