//! Tool calls in the generated text: a streaming parser for the Hermes / Qwen
//! `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` form.
//!
//! A 135M-parameter model does not call tools reliably. The engine offers them (see
//! [`super::template`]) and accepts a call only when the model writes one in the strict form
//! above, names one of the offered tools and gives an arguments object. Anything else, a
//! malformed or unknown call included, reaches the caller as plain text, unchanged.
//!
//! While tools are offered, text that could be the start of `<tool_call>` is held back until
//! it is known not to be; without tools the parser passes text straight through.

use switchboard_actors::engine::ToolCall;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// What the parser lets through: text for the caller, or a complete, validated tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Text(String),
    Call(ToolCall),
}

/// Splits streamed text into plain text and tool calls.
#[derive(Debug)]
pub struct ToolCallParser {
    tools: Vec<String>,
    buffer: String,
    in_call: bool,
    calls: usize,
}

impl ToolCallParser {
    /// A parser accepting calls to the named tools (none: everything is text).
    pub fn new(tools: Vec<String>) -> Self {
        Self {
            tools,
            buffer: String::new(),
            in_call: false,
            calls: 0,
        }
    }

    /// Valid tool calls seen so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// Adds generated text; returns what can be passed on now.
    pub fn push(&mut self, text: &str) -> Vec<Parsed> {
        let mut out = Vec::new();
        if self.tools.is_empty() {
            if !text.is_empty() {
                out.push(Parsed::Text(text.to_string()));
            }
            return out;
        }
        self.buffer.push_str(text);
        loop {
            if self.in_call {
                let Some(end) = self.buffer.find(CLOSE) else {
                    return out;
                };
                let body = self.buffer[..end].to_string();
                self.buffer.drain(..end + CLOSE.len());
                self.in_call = false;
                out.push(self.close_call(&body, true));
            } else if let Some(start) = self.buffer.find(OPEN) {
                if start > 0 {
                    out.push(Parsed::Text(self.buffer[..start].to_string()));
                }
                self.buffer.drain(..start + OPEN.len());
                self.in_call = true;
            } else {
                // Keep back the longest tail that could still grow into `<tool_call>`.
                let keep = partial_suffix(&self.buffer, OPEN);
                let emit = self.buffer.len() - keep;
                if emit > 0 {
                    out.push(Parsed::Text(self.buffer[..emit].to_string()));
                    self.buffer.drain(..emit);
                }
                return out;
            }
        }
    }

    /// Flushes at the end of generation: an unclosed call is still accepted when its body is
    /// a complete, valid call (the model often stops right after the JSON).
    pub fn finish(&mut self) -> Vec<Parsed> {
        let rest = std::mem::take(&mut self.buffer);
        if self.in_call {
            self.in_call = false;
            return vec![self.close_call(&rest, false)];
        }
        if rest.is_empty() {
            Vec::new()
        } else {
            vec![Parsed::Text(rest)]
        }
    }

    fn close_call(&mut self, body: &str, closed: bool) -> Parsed {
        match parse_tool_call(body, &self.tools) {
            Some(call) => {
                self.calls += 1;
                Parsed::Call(call)
            }
            None => Parsed::Text(format!("{OPEN}{body}{}", if closed { CLOSE } else { "" })),
        }
    }
}

/// Length of the longest proper prefix of `marker` that `text` ends with.
fn partial_suffix(text: &str, marker: &str) -> usize {
    (1..marker.len())
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len().saturating_sub(n)) && text.ends_with(&marker[..n])
        })
        .unwrap_or(0)
}

/// Parses the JSON body of a `<tool_call>` element: `{"name": "...", "arguments": {...}}`
/// with a name among `tools`. Arguments given as a JSON string holding an object are
/// accepted; missing arguments are an empty object. Returns `None` for anything else.
pub fn parse_tool_call(body: &str, tools: &[String]) -> Option<ToolCall> {
    let value: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
    let object = value.as_object()?;
    let name = object.get("name")?.as_str()?;
    if !tools.iter().any(|tool| tool == name) {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        None | Some(serde_json::Value::Null) => serde_json::Value::Object(Default::default()),
        Some(serde_json::Value::String(text)) => serde_json::from_str(text).ok()?,
        Some(other) => other.clone(),
    };
    if !arguments.is_object() {
        return None;
    }
    Some(ToolCall {
        id: format!("call_{}", uuid::Uuid::new_v4().simple()),
        name: name.to_string(),
        arguments: arguments.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<String> {
        vec!["get_weather".to_string(), "hang_up".to_string()]
    }

    /// Feeds `pieces` one by one, then finishes; returns everything produced.
    fn run(parser: &mut ToolCallParser, pieces: &[&str]) -> Vec<Parsed> {
        let mut out: Vec<Parsed> = pieces.iter().flat_map(|p| parser.push(p)).collect();
        out.extend(parser.finish());
        out
    }

    fn text_of(parsed: &[Parsed]) -> String {
        parsed
            .iter()
            .filter_map(|p| match p {
                Parsed::Text(t) => Some(t.as_str()),
                Parsed::Call(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_scripted_call_split_across_tokens_is_parsed() {
        let mut parser = ToolCallParser::new(tools());
        let out = run(
            &mut parser,
            &[
                "Let me check. <",
                "tool",
                "_call>\n{\"name\": \"get_",
                "weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool",
                "_call>",
            ],
        );
        assert_eq!(text_of(&out), "Let me check. ");
        let calls: Vec<&ToolCall> = out
            .iter()
            .filter_map(|p| match p {
                Parsed::Call(c) => Some(c),
                Parsed::Text(_) => None,
            })
            .collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(calls[0].arguments, r#"{"city":"Paris"}"#);
        assert!(calls[0].id.starts_with("call_"));
        assert_eq!(parser.calls(), 1);
    }

    #[test]
    fn an_unknown_tool_stays_text() {
        let mut parser = ToolCallParser::new(tools());
        let raw = "<tool_call>{\"name\": \"launch_rockets\", \"arguments\": {}}</tool_call>";
        let out = run(&mut parser, &[raw]);
        assert_eq!(out, vec![Parsed::Text(raw.to_string())]);
        assert_eq!(parser.calls(), 0);
    }

    #[test]
    fn malformed_json_and_non_object_arguments_stay_text() {
        for raw in [
            "<tool_call>{\"name\": \"hang_up\", \"arguments\": </tool_call>",
            "<tool_call>{\"name\": \"hang_up\", \"arguments\": [1, 2]}</tool_call>",
            "<tool_call>hang_up()</tool_call>",
        ] {
            let mut parser = ToolCallParser::new(tools());
            assert_eq!(text_of(&run(&mut parser, &[raw])), raw);
            assert_eq!(parser.calls(), 0);
        }
    }

    #[test]
    fn an_unclosed_but_complete_call_at_the_end_is_accepted() {
        let mut parser = ToolCallParser::new(tools());
        let out = run(&mut parser, &["<tool_call>\n{\"name\": \"hang_up\"}\n"]);
        assert!(
            matches!(&out[..], [Parsed::Call(c)] if c.name == "hang_up" && c.arguments == "{}")
        );
    }

    #[test]
    fn string_arguments_holding_an_object_are_accepted() {
        let call = parse_tool_call(
            r#"{"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}"#,
            &tools(),
        )
        .unwrap();
        assert_eq!(call.arguments, r#"{"city":"Oslo"}"#);
    }

    #[test]
    fn a_lone_angle_bracket_is_released_once_it_cannot_be_a_call() {
        let mut parser = ToolCallParser::new(tools());
        assert_eq!(parser.push("x <"), vec![Parsed::Text("x ".into())]);
        assert_eq!(parser.push("b> y"), vec![Parsed::Text("<b> y".into())]);
        assert!(parser.finish().is_empty());
    }

    #[test]
    fn without_tools_text_passes_straight_through() {
        let mut parser = ToolCallParser::new(Vec::new());
        let raw = "<tool_call>{\"name\": \"hang_up\"}</tool_call>";
        assert_eq!(parser.push(raw), vec![Parsed::Text(raw.into())]);
        assert!(parser.finish().is_empty());
    }
}
