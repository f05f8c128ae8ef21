//! Post-call analysis: what an agent asks of each of its finished calls (its `analysis`
//! field: a summary, whether the call met its success criteria, fields extracted against a
//! JSON Schema), how that request is checked when the agent is written, the questions put to
//! the agent's language model about the call's transcript, and how its answers are read.
//!
//! Each part is its own short request with a plain-text answer, so every model (the embedded
//! one included) answers the parts it can; a part whose answer cannot be read is reported in
//! `errors` and the others stand. The live session runs it once a call has ended
//! (`crate::live::post_call`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_actors::engine::{ChatMessage, ChatRequest, LanguageModel, LlmEvent, Role};

/// The longest `successCriteria`, in characters.
pub const MAX_CRITERIA_CHARS: usize = 2000;
/// The largest `dataSchema`, serialized.
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// The most fields a `dataSchema` may ask for.
pub const MAX_FIELDS: usize = 50;
/// How much of a transcript the model is given, in characters: the end of a longer call.
pub const MAX_TRANSCRIPT_CHARS: usize = 24_000;

const SUMMARY_TOKENS: u32 = 200;
const SUCCESS_TOKENS: u32 = 80;
const DATA_TOKENS: u32 = 600;

const FIELDS: [&str; 3] = ["summary", "successCriteria", "dataSchema"];

/// What an agent asks of each finished call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisSpec {
    /// A few sentences on who called, what they wanted and how it ended.
    pub summary: bool,
    /// What a successful call achieves, in words: the model judges the call against it.
    pub success_criteria: Option<String>,
    /// A JSON Schema of an object: the fields the model extracts from the call.
    pub data_schema: Option<Value>,
}

/// Reads and checks an agent's `analysis` value: `null` turns analysis off; otherwise an
/// object of `summary` (default true), `successCriteria` and `dataSchema`. `Err` says what is
/// wrong, naming the field.
pub fn parse(value: &Value) -> Result<Option<AnalysisSpec>, String> {
    let fields = match value {
        Value::Null => return Ok(None),
        Value::Object(fields) => fields,
        _ => {
            return Err(
                "analysis must be an object {summary, successCriteria, dataSchema} or null".into(),
            )
        }
    };
    if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "analysis.{unknown} is not a field; the fields are {}",
            FIELDS.join(", ")
        ));
    }
    let summary = match fields.get("summary") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(on)) => *on,
        Some(_) => return Err("analysis.summary must be true or false".into()),
    };
    let success_criteria = match fields.get("successCriteria") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            let text = text.trim();
            let chars = text.chars().count();
            if chars == 0 || chars > MAX_CRITERIA_CHARS {
                return Err(format!(
                    "analysis.successCriteria must be 1-{MAX_CRITERIA_CHARS} characters (it has {chars})"
                ));
            }
            Some(text.to_string())
        }
        Some(_) => return Err("analysis.successCriteria must be a string or null".into()),
    };
    let data_schema = match fields.get("dataSchema") {
        None | Some(Value::Null) => None,
        Some(schema) => {
            check_schema(schema)?;
            Some(schema.clone())
        }
    };
    if !summary && success_criteria.is_none() && data_schema.is_none() {
        return Err(
            "analysis asks for nothing: set summary to true, successCriteria or \
                    dataSchema, or set analysis to null to turn it off"
                .into(),
        );
    }
    Ok(Some(AnalysisSpec {
        summary,
        success_criteria,
        data_schema,
    }))
}

/// A `dataSchema` the extraction can use: a valid JSON Schema (no references outside it) of
/// an object with 1 to [`MAX_FIELDS`] properties, at most [`MAX_SCHEMA_BYTES`].
fn check_schema(schema: &Value) -> Result<(), String> {
    let size = schema.to_string().len();
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "analysis.dataSchema is {size} bytes serialized; at most {MAX_SCHEMA_BYTES}"
        ));
    }
    let object = schema
        .as_object()
        .ok_or("analysis.dataSchema must be a JSON Schema object")?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err("analysis.dataSchema must describe an object: \"type\": \"object\"".into());
    }
    let properties = object
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("analysis.dataSchema must list the fields to extract in \"properties\"")?;
    if properties.is_empty() || properties.len() > MAX_FIELDS {
        return Err(format!(
            "analysis.dataSchema must have 1-{MAX_FIELDS} properties (it has {})",
            properties.len()
        ));
    }
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| format!("analysis.dataSchema is not a usable JSON Schema: {e}"))
}

/// An agent's stored `analysis` column, read back; `None` when it asks for nothing.
pub fn stored(column: Option<&str>) -> Option<AnalysisSpec> {
    serde_json::from_str(column?).ok()
}

/// One line of a call's transcript: who spoke (`user` is the caller, anything else the agent)
/// and what was said.
pub struct Line<'a> {
    pub speaker: &'a str,
    pub text: &'a str,
}

/// The transcript as the model reads it, one `Caller:` or `Agent:` line per turn; a call
/// longer than [`MAX_TRANSCRIPT_CHARS`] keeps its end. `None` when nobody said anything.
pub fn transcript<'a>(lines: impl IntoIterator<Item = Line<'a>>) -> Option<String> {
    let lines: Vec<String> = lines
        .into_iter()
        .filter(|l| !l.text.trim().is_empty())
        .map(|l| {
            let who = if l.speaker == "user" {
                "Caller"
            } else {
                "Agent"
            };
            format!("{who}: {}", l.text.trim())
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut kept = Vec::new();
    let mut chars = 0;
    for line in lines.iter().rev() {
        chars += line.chars().count() + 1;
        if chars > MAX_TRANSCRIPT_CHARS && !kept.is_empty() {
            kept.push("[the start of the call is left out]".to_string());
            break;
        }
        kept.push(line.clone());
    }
    kept.reverse();
    Some(kept.join("\n"))
}

const SYSTEM: &str = "You review the transcript of a finished phone call between an AI agent \
    and a caller. Answer only from the transcript; never guess.";

/// The three questions, as chat messages.
fn ask(transcript: &str, question: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(Role::System, SYSTEM),
        ChatMessage::new(
            Role::User,
            format!("Transcript:\n{transcript}\n\n{question}"),
        ),
    ]
}

fn summary_question() -> String {
    "Summarize the call in two or three sentences: who called, what they wanted and how the \
     call ended. Reply with the summary only."
        .to_string()
}

fn success_question(criteria: &str) -> String {
    format!(
        "The call succeeded if: {criteria}\n\nDid the call succeed? Reply with Yes or No first, \
         then one sentence saying why."
    )
}

fn data_question(schema: &Value) -> String {
    format!(
        "Extract these fields from the call as one JSON object that is valid against this JSON \
         Schema:\n{schema}\n\nLeave out a field the call does not tell. Reply with the JSON \
         object only."
    )
}

/// The summary in the model's answer.
pub fn read_summary(answer: &str) -> Result<String, String> {
    let text = answer.trim();
    let text = text
        .strip_prefix("Summary:")
        .or_else(|| text.strip_prefix("summary:"))
        .unwrap_or(text)
        .trim();
    if text.is_empty() {
        return Err("summary: the model gave no summary".into());
    }
    Ok(text.to_string())
}

/// The verdict and its reason in an answer that starts with yes or no.
pub fn read_success(answer: &str) -> Result<(bool, Option<String>), String> {
    let text = answer.trim().trim_start_matches(['*', '"', '\'']);
    let end = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let verdict = match text[..end].to_ascii_lowercase().as_str() {
        "yes" | "true" => true,
        "no" | "false" => false,
        _ => {
            return Err(format!(
                "success: the model's answer did not start with yes or no: \"{}\"",
                clip(text, 120)
            ))
        }
    };
    let reason = text[end..]
        .trim_start_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
        .trim();
    Ok((verdict, (!reason.is_empty()).then(|| reason.to_string())))
}

/// The JSON object in the model's answer (code fences and text around it allowed), valid
/// against `schema`.
pub fn read_data(answer: &str, schema: &Value) -> Result<Value, String> {
    let start = answer.find('{').ok_or_else(|| {
        format!(
            "data: the model's answer holds no JSON object: \"{}\"",
            clip(answer.trim(), 120)
        )
    })?;
    let mut values = serde_json::Deserializer::from_str(&answer[start..]).into_iter::<Value>();
    let data = match values.next() {
        Some(Ok(value @ Value::Object(_))) => value,
        _ => {
            return Err(format!(
                "data: the model's answer holds no complete JSON object: \"{}\"",
                clip(answer.trim(), 120)
            ))
        }
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("data: the agent's dataSchema cannot be used: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(&data)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if !problems.is_empty() {
        return Err(format!(
            "data: the extracted fields do not match the dataSchema ({}): {data}",
            problems.join("; ")
        ));
    }
    Ok(data)
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What the model made of a call; a part not asked for, or not answered, is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallAnalysis {
    pub summary: Option<String>,
    pub success: Option<bool>,
    pub success_reason: Option<String>,
    pub data: Option<Value>,
    /// The parts that could not be answered, in words.
    pub errors: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl CallAnalysis {
    /// At least one part was answered.
    pub fn answered(&self) -> bool {
        self.summary.is_some() || self.success.is_some() || self.data.is_some()
    }
}

/// Puts `spec`'s questions about `transcript` to `llm`, one request per part, and reads its
/// answers. `model` is the agent's model name (`None`: the provider's default).
pub async fn analyse(
    llm: &dyn LanguageModel,
    model: Option<String>,
    spec: &AnalysisSpec,
    transcript: &str,
) -> CallAnalysis {
    let mut analysis = CallAnalysis::default();
    if spec.summary {
        match complete(
            llm,
            &model,
            ask(transcript, &summary_question()),
            SUMMARY_TOKENS,
        )
        .await
        {
            Ok(answer) => {
                analysis.count(&answer);
                match read_summary(&answer.text) {
                    Ok(summary) => analysis.summary = Some(summary),
                    Err(e) => analysis.errors.push(e),
                }
            }
            Err(e) => analysis.errors.push(format!("summary: {e}")),
        }
    }
    if let Some(criteria) = &spec.success_criteria {
        let question = success_question(criteria);
        match complete(llm, &model, ask(transcript, &question), SUCCESS_TOKENS).await {
            Ok(answer) => {
                analysis.count(&answer);
                match read_success(&answer.text) {
                    Ok((verdict, reason)) => {
                        analysis.success = Some(verdict);
                        analysis.success_reason = reason;
                    }
                    Err(e) => analysis.errors.push(e),
                }
            }
            Err(e) => analysis.errors.push(format!("success: {e}")),
        }
    }
    if let Some(schema) = &spec.data_schema {
        let question = data_question(schema);
        match complete(llm, &model, ask(transcript, &question), DATA_TOKENS).await {
            Ok(answer) => {
                analysis.count(&answer);
                match read_data(&answer.text, schema) {
                    Ok(data) => analysis.data = Some(data),
                    Err(e) => analysis.errors.push(e),
                }
            }
            Err(e) => analysis.errors.push(format!("data: {e}")),
        }
    }
    analysis
}

impl CallAnalysis {
    fn count(&mut self, answer: &Answer) {
        self.input_tokens += u64::from(answer.input_tokens);
        self.output_tokens += u64::from(answer.output_tokens);
    }
}

/// A whole answer, with what it cost.
struct Answer {
    text: String,
    input_tokens: u32,
    output_tokens: u32,
}

/// Asks `llm` once, greedily (facts, not style), and gathers its whole answer.
async fn complete(
    llm: &dyn LanguageModel,
    model: &Option<String>,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
) -> Result<Answer, String> {
    let mut stream = llm
        .stream(ChatRequest {
            model: model.clone(),
            messages,
            tools: Vec::new(),
            temperature: 0.0,
            max_tokens,
            conversation: None,
        })
        .map_err(|e| e.to_string())?;
    let mut answer = Answer {
        text: String::new(),
        input_tokens: 0,
        output_tokens: 0,
    };
    while let Some(event) = stream.recv().await {
        match event.map_err(|e| e.to_string())? {
            LlmEvent::TextDelta(delta) => answer.text.push_str(&delta),
            LlmEvent::ToolCall(_) => {}
            LlmEvent::Done {
                prompt_tokens,
                completion_tokens,
                ..
            } => {
                answer.input_tokens += prompt_tokens;
                answer.output_tokens += completion_tokens;
            }
        }
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn schema() -> Value {
        json!({"type": "object",
               "properties": {"orderId": {"type": "string"}, "items": {"type": "integer", "minimum": 1}},
               "required": ["orderId"]})
    }

    #[test]
    fn a_spec_is_read_with_its_defaults_and_null_turns_it_off() {
        assert_eq!(parse(&Value::Null), Ok(None));
        let spec = parse(&json!({"successCriteria": " The caller booked a visit. "}))
            .unwrap()
            .unwrap();
        assert!(spec.summary, "a summary unless switched off");
        assert_eq!(
            spec.success_criteria.as_deref(),
            Some("The caller booked a visit.")
        );
        let spec = parse(&json!({"summary": false, "dataSchema": schema()}))
            .unwrap()
            .unwrap();
        assert!(!spec.summary);
        assert_eq!(spec.data_schema, Some(schema()));
        let text = serde_json::to_string(&spec).unwrap();
        assert_eq!(stored(Some(&text)), Some(spec));
        assert_eq!(stored(None), None);
    }

    #[test]
    fn a_bad_spec_is_refused_naming_what_is_wrong() {
        let refused = |value: Value, says: &str| {
            let error = parse(&value).unwrap_err();
            assert!(error.contains(says), "{value}: {error}");
        };
        refused(json!("yes"), "must be an object");
        refused(json!({"summry": true}), "analysis.summry is not a field");
        refused(json!({"summary": "yes"}), "true or false");
        refused(json!({"summary": false}), "asks for nothing");
        refused(json!({"successCriteria": ""}), "1-2000 characters");
        refused(
            json!({"successCriteria": "x".repeat(2001)}),
            "1-2000 characters",
        );
        refused(
            json!({"dataSchema": {"type": "string"}}),
            "describe an object",
        );
        refused(json!({"dataSchema": {"type": "object"}}), "\"properties\"");
        refused(
            json!({"dataSchema": {"type": "object", "properties": {}}}),
            "1-50 properties",
        );
        refused(
            json!({"dataSchema": {"type": "object", "properties": {"a": {"type": "strng"}}}}),
            "not a usable JSON Schema",
        );
        refused(
            json!({"dataSchema": {"type": "object",
                                  "properties": {"a": {"$ref": "https://example.com/s.json"}}}}),
            "not a usable JSON Schema",
        );
        // 600 properties of 30 bytes each: past the size limit before their number counts.
        let big: Map<String, Value> = (0..600)
            .map(|i| (format!("field_{i:03}"), json!({"type": "string"})))
            .collect();
        refused(
            json!({"dataSchema": {"type": "object", "properties": big}}),
            "bytes serialized",
        );
    }

    #[test]
    fn the_transcript_names_who_spoke_and_keeps_the_end_of_a_long_call() {
        let lines = [
            Line {
                speaker: "agent",
                text: "Hello, how can I help?",
            },
            Line {
                speaker: "user",
                text: " I need a cleaning. ",
            },
            Line {
                speaker: "agent",
                text: "",
            },
        ];
        assert_eq!(
            transcript(lines).unwrap(),
            "Agent: Hello, how can I help?\nCaller: I need a cleaning."
        );
        assert_eq!(transcript(Vec::new()), None);
        let long: Vec<String> = (0..2000).map(|i| format!("line number {i}")).collect();
        let text = transcript(long.iter().map(|t| Line {
            speaker: "user",
            text: t,
        }))
        .unwrap();
        assert!(text.chars().count() <= MAX_TRANSCRIPT_CHARS + 64);
        assert!(text.starts_with("[the start of the call is left out]\n"));
        assert!(text.ends_with("Caller: line number 1999"));
    }

    #[test]
    fn answers_are_read_or_refused_in_words() {
        assert_eq!(
            read_summary(" Summary: A caller asked. "),
            Ok("A caller asked.".into())
        );
        assert!(read_summary("  ").is_err());
        assert_eq!(
            read_success("Yes. The visit was booked."),
            Ok((true, Some("The visit was booked.".into())))
        );
        assert_eq!(read_success("**No**"), Ok((false, None)));
        assert!(read_success("Maybe, hard to say")
            .unwrap_err()
            .contains("did not start with yes or no"));

        let fenced = "Here you go:\n```json\n{\"orderId\": \"ORD-7\", \"items\": 2}\n```";
        assert_eq!(
            read_data(fenced, &schema()),
            Ok(json!({"orderId": "ORD-7", "items": 2}))
        );
        let wrong = read_data("{\"items\": 0}", &schema()).unwrap_err();
        assert!(wrong.contains("do not match the dataSchema"), "{wrong}");
        assert!(wrong.contains("orderId"), "{wrong}");
        assert!(read_data("no idea", &schema())
            .unwrap_err()
            .contains("no JSON object"));
        assert!(read_data("{\"orderId\": ", &schema())
            .unwrap_err()
            .contains("no complete JSON object"));
    }
}
