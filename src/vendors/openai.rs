//! OpenAI and OpenAI-compatible servers (vLLM, LM Studio, Ollama, Groq-style hosts): chat
//! completions streamed over server-sent events with tool-call deltas, audio transcriptions
//! (multipart, `verbose_json`), and speech (raw 24 kHz PCM, streamed). Wire format:
//! reference/protocols.md §4; https://platform.openai.com/docs/api-reference.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};
use switchboard_actors::engine::{
    ChatMessage, ChatRequest, EngineError, EngineErrorKind, EngineStream, FinishReason,
    LanguageModel, LlmEvent, Role, SpeechChunk, SpeechRequest, TextToSpeech, ToolCall, ToolSpec,
    TranscribeOptions, Transcript, TranscriptSegment, TranscriptWord,
};

use super::audio::{clip_recognizer, wav_part, Clip, RawAudioChunker, RawEncoding};
use super::http::{trimmed_str, Endpoint, SseEvent};
use super::streaming::{schema_json, spawn_chat_stream, ChatProtocol, Step};
use crate::speech::languages::language_code;

/// What a vendor speaking this protocol uses when neither the request nor the config names a
/// model or voice: OpenAI's own; Groq's hosted Llama and Whisper
/// (https://console.groq.com/docs/openai); Kokoro-FastAPI's voice
/// (https://github.com/remsky/Kokoro-FastAPI, `/v1/audio/speech`).
struct Defaults {
    llm_model: &'static str,
    stt_model: &'static str,
    tts_model: &'static str,
    voice: &'static str,
}

fn defaults(vendor: &str) -> Defaults {
    match vendor {
        "groq" => Defaults {
            llm_model: "llama-3.3-70b-versatile",
            stt_model: "whisper-large-v3-turbo",
            tts_model: "",
            voice: "",
        },
        "kokoro" => Defaults {
            llm_model: "",
            stt_model: "",
            tts_model: "kokoro",
            voice: "af_bella",
        },
        _ => Defaults {
            llm_model: "gpt-4o-mini",
            stt_model: "whisper-1",
            tts_model: "tts-1",
            voice: "alloy",
        },
    }
}
/// `response_format: pcm` is 24 kHz mono 16-bit little-endian.
const PCM_RATE: u32 = 24_000;

// ---------------------------------------------------------------------------------------------
// Chat completions
// ---------------------------------------------------------------------------------------------

pub struct OpenAiChat {
    pub endpoint: Endpoint,
}

impl LanguageModel for OpenAiChat {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError> {
        let endpoint = self.endpoint.clone();
        let model = endpoint.llm_model(&request.model, defaults(&endpoint.vendor).llm_model);
        let body = chat_body(&model, &request)
            .map_err(|e| EngineError::internal(format!("cannot write the chat request: {e}")))?;
        let build = endpoint.post_serialized("/chat/completions", body);
        Ok(spawn_chat_stream(
            endpoint.clone(),
            build,
            ChatCompletionStream::new(endpoint.vendor.clone()),
        ))
    }
}

/// The request body: our conversation and tools in chat-completions terms, written straight
/// from the conversation (a call's whole history goes out with every turn, so it is not
/// copied into a JSON tree first).
pub fn chat_body(model: &str, request: &ChatRequest) -> serde_json::Result<Bytes> {
    let body = ChatBody {
        model,
        messages: request.messages.iter().map(WireMessage).collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        tools: request.tools.iter().map(WireTool::of).collect(),
    };
    serde_json::to_vec(&body).map(Bytes::from)
}

#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    temperature: f32,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One message of the conversation as chat completions take it.
struct WireMessage<'a>(&'a ChatMessage);

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let message = self.0;
        let calls = !message.tool_calls.is_empty();
        let mut map = serializer.serialize_map(None)?;
        match message.role {
            Role::System => map.serialize_entry("role", "system")?,
            Role::User => map.serialize_entry("role", "user")?,
            Role::Assistant => map.serialize_entry("role", "assistant")?,
            Role::Tool => {
                map.serialize_entry("role", "tool")?;
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                map.serialize_entry("tool_call_id", id)?;
            }
        }
        if matches!(message.role, Role::Assistant) && calls {
            // An assistant turn that only calls tools has no content.
            let content = Some(message.content.as_str()).filter(|c| !c.is_empty());
            map.serialize_entry("content", &content)?;
            let calls: Vec<WireToolCall> =
                message.tool_calls.iter().map(WireToolCall::of).collect();
            map.serialize_entry("tool_calls", &calls)?;
        } else {
            map.serialize_entry("content", &message.content)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> WireToolCall<'a> {
    fn of(call: &'a ToolCall) -> Self {
        WireToolCall {
            id: &call.id,
            kind: "function",
            function: WireFunctionCall {
                name: &call.name,
                arguments: &call.arguments,
            },
        }
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Value,
}

impl<'a> WireTool<'a> {
    fn of(tool: &'a ToolSpec) -> Self {
        WireTool {
            kind: "function",
            function: WireFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: schema_json(&tool.parameters),
            },
        }
    }
}

/// Protocol state of one streamed chat completion: tool calls gathered by their `index`.
struct ChatCompletionStream {
    vendor: String,
    calls: BTreeMap<u64, ToolCall>,
    finish: Option<FinishReason>,
    prompt_tokens: u32,
    completion_tokens: u32,
}

impl ChatCompletionStream {
    fn new(vendor: String) -> Self {
        ChatCompletionStream {
            vendor,
            calls: BTreeMap::new(),
            finish: None,
            prompt_tokens: 0,
            completion_tokens: 0,
        }
    }

    fn done(&mut self) -> Vec<LlmEvent> {
        let mut events: Vec<LlmEvent> = std::mem::take(&mut self.calls)
            .into_values()
            .map(|mut call| {
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".into();
                }
                LlmEvent::ToolCall(call)
            })
            .collect();
        let reason = match self.finish {
            Some(reason) => reason,
            None if !events.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        events.push(LlmEvent::Done {
            reason,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
        });
        events
    }

    fn upstream(&self, message: impl std::fmt::Display) -> EngineError {
        EngineError::new(
            EngineErrorKind::Upstream,
            format!("{}: {message}", self.vendor),
        )
    }
}

impl ChatProtocol for ChatCompletionStream {
    fn on_event(&mut self, event: SseEvent) -> Result<Step, EngineError> {
        let data = event.data.trim();
        if data.starts_with("[DONE]") {
            return Ok(Step::Finished(self.done()));
        }
        if data.is_empty() {
            return Ok(Step::More(Vec::new()));
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|_| self.upstream("sent a stream event that is not JSON"))?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("an error in the middle of the stream");
            return Err(self.upstream(message));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0) as u32;
            self.prompt_tokens = count("prompt_tokens");
            self.completion_tokens = count("completion_tokens");
        }
        let mut events = Vec::new();
        for choice in chunk
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                if !text.is_empty() {
                    events.push(LlmEvent::TextDelta(text.to_string()));
                }
            }
            for fragment in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = fragment.get("index").and_then(Value::as_u64).unwrap_or(0);
                let call = self.calls.entry(index).or_insert_with(|| ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                if let Some(id) = fragment.get("id").and_then(Value::as_str) {
                    call.id = id.to_string();
                }
                if let Some(function) = fragment.get("function") {
                    if let Some(name) = function.get("name").and_then(Value::as_str) {
                        call.name.push_str(name);
                    }
                    if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                        call.arguments.push_str(arguments);
                    }
                }
            }
            match choice.get("finish_reason").and_then(Value::as_str) {
                Some("length") => self.finish = Some(FinishReason::Length),
                Some("tool_calls") | Some("function_call") => {
                    self.finish = Some(FinishReason::ToolCalls)
                }
                Some(_) => self.finish = Some(FinishReason::Stop),
                None => {}
            }
        }
        Ok(Step::More(events))
    }

    fn on_eof(&mut self) -> Result<Vec<LlmEvent>, EngineError> {
        // Some compatible servers never send `[DONE]`; a finish reason is then the end. A
        // stream with neither was cut off.
        if self.finish.is_some() {
            Ok(self.done())
        } else {
            Err(self.upstream("the stream ended before the answer was complete"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Transcriptions
// ---------------------------------------------------------------------------------------------

pub struct OpenAiTranscription {
    pub endpoint: Endpoint,
}

clip_recognizer!(OpenAiTranscription, transcribe_verbose);

/// One clip through `POST /audio/transcriptions`, answered as `verbose_json`.
async fn transcribe_verbose(
    endpoint: Endpoint,
    clip: Clip,
    options: TranscribeOptions,
) -> Result<Transcript, EngineError> {
    let wav = clip.wav();
    let model = endpoint.stt_model_or(defaults(&endpoint.vendor).stt_model);
    let url = endpoint.url("/audio/transcriptions");
    let build = || {
        let mut form = reqwest::multipart::Form::new()
            .part("file", wav_part(wav.clone()))
            .text("model", model.clone())
            .text("response_format", "verbose_json")
            .text("temperature", options.temperature.to_string())
            .text("timestamp_granularities[]", "segment");
        if options.word_timestamps {
            form = form.text("timestamp_granularities[]", "word");
        }
        if let Some(language) = &options.language {
            form = form.text("language", language.clone());
        }
        if let Some(prompt) = &options.prompt {
            form = form.text("prompt", prompt.clone());
        }
        endpoint
            .authorize(endpoint.client.post(&url))
            .multipart(form)
    };
    let json = endpoint.fetch_json(build).await?;
    Ok(transcript_from_verbose(&json, &options, clip.seconds()))
}

/// Our transcript from a `verbose_json` (or plain `json`) transcription.
pub fn transcript_from_verbose(
    json: &Value,
    options: &TranscribeOptions,
    clip_seconds: f32,
) -> Transcript {
    let text = trimmed_str(json, "text");
    let duration = json
        .get("duration")
        .and_then(Value::as_f64)
        .map_or(clip_seconds, |d| d as f32);
    let time =
        |value: &Value, field: &str| value.get(field).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let mut segments: Vec<TranscriptSegment> = json
        .get("segments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|segment| TranscriptSegment {
            start: time(segment, "start"),
            end: time(segment, "end"),
            text: trimmed_str(segment, "text"),
            speaker: None,
            language: None,
        })
        .collect();
    if segments.is_empty() && !text.is_empty() {
        segments.push(TranscriptSegment {
            start: 0.0,
            end: duration,
            text: text.clone(),
            speaker: None,
            language: None,
        });
    }
    let words = json
        .get("words")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|word| TranscriptWord {
            start: time(word, "start"),
            end: time(word, "end"),
            word: trimmed_str(word, "word"),
        })
        .collect();
    let language = json
        .get("language")
        .and_then(Value::as_str)
        .and_then(language_code)
        .map(str::to_string)
        .or_else(|| options.language.clone())
        .unwrap_or_else(|| "en".to_string());
    Transcript {
        text,
        segments,
        words,
        language,
        language_probability: None,
        duration,
    }
}

// ---------------------------------------------------------------------------------------------
// Speech
// ---------------------------------------------------------------------------------------------

pub struct OpenAiSpeech {
    pub endpoint: Endpoint,
}

impl TextToSpeech for OpenAiSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let built_in = defaults(&endpoint.vendor);
        let voice = endpoint.voice(&request.voice, built_in.voice);
        let body = json!({
            "model": endpoint.tts_model(&request.model, built_in.tts_model),
            "input": request.text,
            "voice": voice,
            "response_format": "pcm",
            "speed": request.speed.clamp(0.25, 4.0),
        });
        let build = endpoint.post_json("/audio/speech", body);
        Ok(super::speech::spawn_raw_speech(
            endpoint,
            build,
            RawAudioChunker::new(RawEncoding::Pcm16, PCM_RATE, request.text),
        ))
    }
}

/// The cheapest authenticated call: the model list.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/models").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chat_body_is_the_conversation_in_chat_completions_terms() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "lookup_order".into(),
            arguments: r#"{"order":"A1"}"#.into(),
        };
        let mut asks = ChatMessage::new(Role::Assistant, "");
        asks.tool_calls = vec![call.clone()];
        let mut says_and_asks = ChatMessage::new(Role::Assistant, "One moment.");
        says_and_asks.tool_calls = vec![call];
        let mut answer = ChatMessage::new(Role::Tool, "shipped");
        answer.tool_call_id = Some("call_1".into());
        let request = ChatRequest {
            model: None,
            messages: vec![
                ChatMessage::new(Role::System, "Be brief. \"Quoted\" \u{1} é"),
                ChatMessage::new(Role::User, "Where is my order?"),
                asks,
                says_and_asks,
                answer,
                ChatMessage::new(Role::Assistant, "It has shipped."),
                ChatMessage::new(Role::Tool, "no id"),
            ],
            tools: vec![
                ToolSpec {
                    name: "lookup_order".into(),
                    description: "Finds an order.".into(),
                    parameters: r#"{"type":"object","properties":{"order":{"type":"string"}}}"#
                        .into(),
                },
                ToolSpec {
                    name: "broken".into(),
                    description: "Its schema is not JSON.".into(),
                    parameters: "{not json".into(),
                },
            ],
            temperature: 0.5,
            max_tokens: 40,
            conversation: None,
        };
        let body: Value = serde_json::from_slice(&chat_body("gpt-4o-mini", &request).unwrap())
            .expect("the body is JSON");
        let tool_call = json!({"id": "call_1", "type": "function",
                               "function": {"name": "lookup_order", "arguments": "{\"order\":\"A1\"}"}});
        assert_eq!(
            body,
            json!({
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": "Be brief. \"Quoted\" \u{1} é"},
                    {"role": "user", "content": "Where is my order?"},
                    {"role": "assistant", "content": null, "tool_calls": [tool_call]},
                    {"role": "assistant", "content": "One moment.", "tool_calls": [tool_call]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "shipped"},
                    {"role": "assistant", "content": "It has shipped."},
                    {"role": "tool", "tool_call_id": "", "content": "no id"},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": 0.5,
                "max_tokens": 40,
                "tools": [
                    {"type": "function", "function": {"name": "lookup_order", "description": "Finds an order.",
                        "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}}},
                    {"type": "function", "function": {"name": "broken", "description": "Its schema is not JSON.",
                        "parameters": {"type": "object", "properties": {}}}},
                ],
            })
        );

        // Without tools the field is left out, as before.
        let plain = ChatRequest {
            tools: Vec::new(),
            ..request
        };
        let body: Value =
            serde_json::from_slice(&chat_body("m", &plain).unwrap()).expect("the body is JSON");
        assert!(body.get("tools").is_none(), "{body}");
    }
}
