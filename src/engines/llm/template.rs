//! The chat template: SmolLM2's ChatML (`<|im_start|>role\n...<|im_end|>\n`) and the tool
//! prompt rendered into the system message.
//!
//! The prompt is built as token ids, message by message: control tokens are inserted by id
//! and every piece of text is encoded on its own. Earlier turns therefore always encode to the
//! same ids, which is what the prompt cache relies on, and text that merely looks like a
//! control token (`<|im_end|>` typed by a caller) cannot close a turn.
//!
//! Tools follow the Hermes / Qwen 2.5 convention: their JSON signatures go into the system
//! message inside `<tools></tools>`, the model is asked to answer with
//! `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, earlier calls are replayed in
//! that form and tool results come back as user turns wrapped in `<tool_response>`.

use switchboard_actors::engine::{ChatMessage, Role, ToolSpec};

use super::tokenizer::LlmTokenizer;
use switchboard_actors::engine::EngineError;

/// The system prompt SmolLM2-Instruct was tuned with, used when a request brings none.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

const IM_START: &str = "<|im_start|>";
const IM_END: &str = "<|im_end|>";

/// Renders conversations into prompt token ids.
pub struct ChatTemplate {
    im_start: u32,
    im_end: u32,
    /// Tokens of history a turn with facts is read with (see [`history_start`]).
    knowledge_history_tokens: usize,
}

/// One piece of a rendered prompt.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Start,
    End,
    Text(String),
}

impl ChatTemplate {
    /// Finds the ChatML control tokens in the vocabulary. A turn with facts is read with the
    /// latest whole exchanges of its history that fit in `knowledge_history_tokens`.
    pub fn new(
        tokenizer: &LlmTokenizer,
        knowledge_history_tokens: usize,
    ) -> Result<Self, EngineError> {
        let find = |text: &str| {
            tokenizer.special(text).ok_or_else(|| {
                EngineError::internal(format!("the model's vocabulary has no `{text}` token"))
            })
        };
        Ok(Self {
            im_start: find(IM_START)?,
            im_end: find(IM_END)?,
            knowledge_history_tokens,
        })
    }

    /// The `<|im_end|>` id, which ends an assistant turn.
    pub fn end_of_turn(&self) -> u32 {
        self.im_end
    }

    /// Token ids of the conversation followed by the opening of the assistant's turn.
    pub fn render(
        &self,
        tokenizer: &LlmTokenizer,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<Vec<u32>, EngineError> {
        let from = history_start(messages, self.knowledge_history_tokens, |text| {
            tokenizer.encode(text).map(|ids| ids.len())
        })?;
        let mut ids = Vec::new();
        for piece in pieces(messages, tools, from) {
            match piece {
                Piece::Start => ids.push(self.im_start),
                Piece::End => ids.push(self.im_end),
                Piece::Text(text) => ids.extend(tokenizer.encode(&text)?),
            }
        }
        Ok(ids)
    }
}

/// The prompt as text with its whole history, as [`ChatTemplate::render`] tokenizes a turn
/// without facts (for logs and tests).
pub fn render_text(messages: &[ChatMessage], tools: &[ToolSpec]) -> String {
    text_of(pieces(messages, tools, 0))
}

fn text_of(pieces: Vec<Piece>) -> String {
    pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Start => IM_START.to_string(),
            Piece::End => IM_END.to_string(),
            Piece::Text(text) => text,
        })
        .collect()
}

/// The pieces of the prompt; history messages before index `from` are left out.
fn pieces(messages: &[ChatMessage], tools: &[ToolSpec], from: usize) -> Vec<Piece> {
    let mut out = Vec::with_capacity(messages.len() * 4 + 4);
    let explicit_system = messages
        .first()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str());
    let mut system = explicit_system.unwrap_or(DEFAULT_SYSTEM_PROMPT).to_string();
    let facts = facts_for_the_latest_turn(messages);
    if let Some(index) = facts {
        system.push_str("\n\n");
        system.push_str(&messages[index].content);
    }
    if !tools.is_empty() {
        system.push_str(&tool_prompt(tools));
    }
    push_turn(&mut out, "system", &system);
    let first = usize::from(explicit_system.is_some()).max(from);
    for (index, message) in messages.iter().enumerate().skip(first) {
        if Some(index) == facts {
            continue;
        }
        let (role, content) = turn(message);
        push_turn(&mut out, role, &content);
    }
    out.push(Piece::Start);
    out.push(Piece::Text("assistant\n".to_string()));
    out
}

/// The role and text a message after the system turn is rendered with.
fn turn(message: &ChatMessage) -> (&'static str, String) {
    match message.role {
        // A system message after the first is an instruction mid-conversation: ChatML
        // carries it as its own system turn.
        Role::System => ("system", message.content.clone()),
        Role::User => ("user", message.content.clone()),
        Role::Assistant => {
            let mut content = message.content.clone();
            for call in &message.tool_calls {
                if !content.is_empty() {
                    content.push('\n');
                }
                content.push_str(&format!(
                    "<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                    serde_json::Value::String(call.name.clone()),
                    json_or_string(&call.arguments)
                ));
            }
            ("assistant", content)
        }
        Role::Tool => (
            "user",
            format!("<tool_response>\n{}\n</tool_response>", message.content),
        ),
    }
}

/// The index of the first history message a turn with facts is read with.
///
/// With facts in its system turn, this model reads a turn's whole history again at every
/// turn (see [`facts_for_the_latest_turn`]), so the history it gets is bounded to `budget`
/// tokens (as `tokens` counts a turn's text). A history that fits is kept whole. One that
/// does not is read from a caller's turn on, and that start moves forward half a budget at a
/// time: it is the earliest caller turn past a multiple of `budget / 2` tokens (counted from
/// the history's start) whose turns up to the facts fit. So while the turns keep the same
/// facts (a caller asking about one thing), consecutive turns share their prompt up to the
/// latest exchange and the prompt cache reads only what is new, rather than a window that
/// slides by an exchange every turn and is read again in full. Older messages are left out
/// of that turn's prompt only; the conversation keeps them. A turn without facts keeps its
/// whole history (returns 0), which its prompt cache has read already.
fn history_start(
    messages: &[ChatMessage],
    budget: usize,
    mut tokens: impl FnMut(&str) -> Result<usize, EngineError>,
) -> Result<usize, EngineError> {
    let Some(facts) = facts_for_the_latest_turn(messages) else {
        return Ok(0);
    };
    let first = usize::from(messages[0].role == Role::System);
    // Tokens of the history before each of its messages, and in all.
    let mut before = Vec::with_capacity(facts - first);
    let mut total = 0;
    for message in &messages[first..facts] {
        before.push(total);
        let (role, content) = turn(message);
        // The turn's text and its two control tokens.
        total += tokens(&format!("{role}\n{content}"))? + 2;
    }
    if total <= budget {
        return Ok(first);
    }
    let fits = |at: usize| total - before[at - first] <= budget;
    let callers = (first..facts).filter(|&at| messages[at].role == Role::User);
    let step = (budget / 2).max(1);
    let mut passed = 0;
    let mut anchored = None;
    let mut any = None;
    for at in callers {
        let anchor = before[at - first] / step > passed;
        if anchor {
            passed = before[at - first] / step;
        }
        if fits(at) {
            any.get_or_insert(at);
            if anchor {
                anchored.get_or_insert(at);
            }
        }
    }
    // No anchored caller turn fits when the latest exchanges alone are near the budget.
    Ok(anchored.or(any).unwrap_or(facts))
}

/// The system message right before the latest user turn (the facts looked up for it), which
/// this model reads at the end of its system turn instead. SmolLM2 was tuned with one system
/// turn, at the start: on the evaluation set (tests/evaluation.rs, the CI subset of 18
/// questions) the facts in a system turn of their own before the question, or at the head of
/// the user's turn, gave 8 right answers against 9 or more in the system turn, and after the
/// question none. So on this model the system turn changes with each turn's facts, and a
/// conversation with knowledge is read again from there at every turn; a vendor's model gets
/// them where they are sent, and keeps the conversation before them.
fn facts_for_the_latest_turn(messages: &[ChatMessage]) -> Option<usize> {
    let latest = messages.iter().rposition(|m| m.role == Role::User)?;
    let before = latest.checked_sub(1).filter(|&i| i > 0)?;
    (messages[before].role == Role::System).then_some(before)
}

fn push_turn(out: &mut Vec<Piece>, role: &str, content: &str) {
    out.push(Piece::Start);
    out.push(Piece::Text(format!("{role}\n{content}")));
    out.push(Piece::End);
    out.push(Piece::Text("\n".to_string()));
}

/// Compact JSON of `text` when it parses, else `text` as a JSON string.
fn json_or_string(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => value.to_string(),
        Err(_) => serde_json::Value::String(text.to_string()).to_string(),
    }
}

/// The tool section appended to the system prompt.
fn tool_prompt(tools: &[ToolSpec]) -> String {
    let mut prompt = String::from(
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
    );
    for tool in tools {
        let parameters = serde_json::from_str::<serde_json::Value>(&tool.parameters)
            .unwrap_or_else(|_| serde_json::json!({"type": "object"}));
        // Written by hand to keep Qwen's key order (serde_json sorts object keys).
        let signature = format!(
            "{{\"type\": \"function\", \"function\": {{\"name\": {}, \"description\": {}, \"parameters\": {}}}}}",
            serde_json::Value::String(tool.name.clone()),
            serde_json::Value::String(tool.description.clone()),
            parameters
        );
        prompt.push('\n');
        prompt.push_str(&signature.to_string());
    }
    prompt.push_str(
        "\n</tools>\n\nFor each function call, return a json object with function name and \
         arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n\
         {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>",
    );
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_actors::engine::ToolCall;

    #[test]
    fn chatml_with_the_default_system_prompt() {
        let text = render_text(&[ChatMessage::new(Role::User, "Hi")], &[]);
        assert_eq!(
            text,
            format!(
                "<|im_start|>system\n{DEFAULT_SYSTEM_PROMPT}<|im_end|>\n\
                 <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            )
        );
    }

    #[test]
    fn an_explicit_system_prompt_replaces_the_default() {
        let text = render_text(
            &[
                ChatMessage::new(Role::System, "Be brief."),
                ChatMessage::new(Role::User, "Hi"),
            ],
            &[],
        );
        assert!(text.starts_with("<|im_start|>system\nBe brief.<|im_end|>\n"));
        assert!(!text.contains(DEFAULT_SYSTEM_PROMPT));
    }

    #[test]
    fn the_facts_before_the_latest_turn_are_read_in_the_system_turn() {
        let text = render_text(
            &[
                ChatMessage::new(Role::System, "Be brief."),
                ChatMessage::new(Role::User, "Hi"),
                ChatMessage::new(Role::Assistant, "Hello."),
                ChatMessage::new(Role::System, "Facts:\n- Open at nine."),
                ChatMessage::new(Role::User, "When do you open?"),
            ],
            &[],
        );
        assert_eq!(
            text,
            "<|im_start|>system\nBe brief.\n\nFacts:\n- Open at nine.<|im_end|>\n\
             <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n\
             <|im_start|>user\nWhen do you open?<|im_end|>\n<|im_start|>assistant\n"
        );
        // Anywhere else a system message is a turn of its own.
        let text = render_text(
            &[
                ChatMessage::new(Role::System, "Be brief."),
                ChatMessage::new(Role::User, "Hi"),
                ChatMessage::new(Role::System, "Wrap up."),
            ],
            &[],
        );
        assert!(text.ends_with(
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>system\nWrap up.<|im_end|>\n\
             <|im_start|>assistant\n"
        ));
    }

    /// A call of `exchanges` questions and answers, then facts and the latest question.
    fn call_with_facts(exchanges: usize) -> Vec<ChatMessage> {
        let mut messages = vec![ChatMessage::new(Role::System, "Be brief.")];
        for n in 0..exchanges {
            messages.push(ChatMessage::new(Role::User, format!("question {n}")));
            messages.push(ChatMessage::new(Role::Assistant, format!("answer {n}")));
        }
        messages.push(ChatMessage::new(Role::System, "Facts:\n- Open at nine."));
        messages.push(ChatMessage::new(Role::User, "When do you open?"));
        messages
    }

    /// Counts a turn's words, standing in for the tokenizer.
    fn words(text: &str) -> Result<usize, EngineError> {
        Ok(text.split_whitespace().count())
    }

    /// The prompt's text with history messages before `from` left out.
    fn text_from(messages: &[ChatMessage], from: usize) -> String {
        text_of(pieces(messages, &[], from))
    }

    #[test]
    fn a_turn_with_facts_reads_only_the_latest_exchanges_that_fit() {
        let messages = call_with_facts(10);
        // Each turn is 3 words ("user\nquestion 9") and 2 control tokens: 5. 12 fits two turns,
        // the last answer and the last question, which begins the kept history.
        let from = history_start(&messages, 12, words).unwrap();
        assert_eq!(from, 19);
        assert_eq!(messages[from].content, "question 9");
        let text = text_from(&messages, from);
        assert!(text.starts_with(
            "<|im_start|>system\nBe brief.\n\nFacts:\n- Open at nine.<|im_end|>\n\
             <|im_start|>user\nquestion 9<|im_end|>\n<|im_start|>assistant\nanswer 9"
        ));
        assert!(!text.contains("question 8"));
        assert!(text
            .ends_with("<|im_start|>user\nWhen do you open?<|im_end|>\n<|im_start|>assistant\n"));

        // 15 fits three turns, the earliest an answer: the kept history still begins with a
        // caller's turn.
        assert_eq!(history_start(&messages, 15, words).unwrap(), 19);
        assert_eq!(history_start(&messages, 20, words).unwrap(), 17);
        // 0 keeps no history: the system turn, its facts and the question.
        let from = history_start(&messages, 0, words).unwrap();
        assert_eq!(
            text_from(&messages, from),
            "<|im_start|>system\nBe brief.\n\nFacts:\n- Open at nine.<|im_end|>\n\
             <|im_start|>user\nWhen do you open?<|im_end|>\n<|im_start|>assistant\n"
        );
        // A history that fits is kept whole, from its first message, whatever its role.
        assert_eq!(history_start(&messages, 100, words).unwrap(), 1);
        let mut greeted = messages.clone();
        greeted.insert(1, ChatMessage::new(Role::Assistant, "Bright Smile, hello!"));
        assert_eq!(history_start(&greeted, 1_000, words).unwrap(), 1);
    }

    #[test]
    fn the_kept_history_moves_half_a_budget_at_a_time_so_turns_share_their_prompt() {
        // Budget 40, so the start moves on at caller turns past 20, 40, 60, 80 tokens of
        // history: questions 2, 4, 6 and 8 (each exchange is 10).
        let eleven = call_with_facts(11);
        let twelve = call_with_facts(12);
        let from = history_start(&eleven, 40, words).unwrap();
        assert_eq!(eleven[from].content, "question 8");
        // One exchange on, the history (40 tokens from question 8) still fits: same start.
        assert_eq!(history_start(&twelve, 40, words).unwrap(), from);
        // So the later turn's prompt extends the earlier one's, up to its latest question.
        let earlier = text_from(&eleven, from);
        let shared = earlier
            .strip_suffix("<|im_start|>user\nWhen do you open?<|im_end|>\n<|im_start|>assistant\n")
            .unwrap();
        assert!(text_from(&twelve, from).starts_with(shared));
        // One more and it moves on, by two exchanges, not one.
        let thirteen = call_with_facts(13);
        let moved = history_start(&thirteen, 40, words).unwrap();
        assert_eq!(thirteen[moved].content, "question 10");
        // When no caller turn past a multiple fits, the latest turns that fit are kept. Turns
        // of 5, 6, 4, 4, 4 and 17 tokens, budget 21: "c" (11 tokens in) is the turn past 10,
        // but 29 tokens follow it; "d" (19 in, in the same half) is followed by 21.
        let z = vec!["z"; 14].join(" ");
        let uneven = [
            ChatMessage::new(Role::System, "Be brief."),
            ChatMessage::new(Role::User, "a b"),
            ChatMessage::new(Role::Assistant, "x x x"),
            ChatMessage::new(Role::User, "c"),
            ChatMessage::new(Role::Assistant, "y"),
            ChatMessage::new(Role::User, "d"),
            ChatMessage::new(Role::Assistant, z.as_str()),
            ChatMessage::new(Role::System, "Facts:\n- Open at nine."),
            ChatMessage::new(Role::User, "When?"),
        ];
        assert_eq!(history_start(&uneven, 21, words).unwrap(), 5);
        // And when not even the latest exchange fits, none is.
        assert_eq!(history_start(&uneven, 20, words).unwrap(), 7);
    }

    #[test]
    fn a_turn_without_facts_reads_its_whole_history() {
        let mut messages = call_with_facts(10);
        messages.remove(messages.len() - 2);
        assert_eq!(history_start(&messages, 0, words).unwrap(), 0);
        // Facts that are not right before the latest question are an instruction, not facts.
        let mut messages = call_with_facts(3);
        messages.push(ChatMessage::new(Role::Assistant, "At nine."));
        messages.push(ChatMessage::new(Role::User, "Thanks."));
        assert_eq!(history_start(&messages, 0, words).unwrap(), 0);
    }

    #[test]
    fn tools_calls_and_results_are_rendered_hermes_style() {
        let tools = [ToolSpec {
            name: "get_weather".into(),
            description: "Weather for a city".into(),
            parameters: r#"{"type":"object","properties":{"city":{"type":"string"}}}"#.into(),
        }];
        let mut call = ChatMessage::new(Role::Assistant, "");
        call.tool_calls.push(ToolCall {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: r#"{"city": "Paris"}"#.into(),
        });
        let mut result = ChatMessage::new(Role::Tool, "18 degrees");
        result.tool_call_id = Some("call_1".into());
        let text = render_text(
            &[
                ChatMessage::new(Role::User, "Weather in Paris?"),
                call,
                result,
            ],
            &tools,
        );
        assert!(text.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather for a city\""));
        assert!(text.contains(
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call><|im_end|>"
        ));
        assert!(text
            .contains("<|im_start|>user\n<tool_response>\n18 degrees\n</tool_response><|im_end|>"));
        assert!(text.ends_with("<|im_start|>assistant\n"));
    }
}
