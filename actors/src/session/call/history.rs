//! The conversation history's rules, on the plain list of messages: a caller turn comes in
//! and the history is kept to its latest exchanges without cutting into the reply in progress;
//! a reply cut short leaves only what the caller heard of it, and never a tool call without its
//! answer; and the caller's latest words are what the knowledge base is asked about.

use crate::engine::{ChatMessage, Role, ToolCall};

use super::super::playback::{first_words, PlaybackLedger};
use super::HISTORY_MESSAGES;

/// Most characters of the caller's words used as a knowledge query.
const RETRIEVAL_QUERY_CHARS: usize = 2_000;

/// Adds a caller turn to `history` and, past [`HISTORY_MESSAGES`], keeps only the latest half
/// of it. What is kept starts at a caller turn (models expect one there, and a tool answer
/// never loses its call) and never cuts into the reply in progress, which starts at
/// `reply_from` (moved with the cut) when there is one.
pub(super) fn push_caller_turn(
    history: &mut Vec<ChatMessage>,
    text: String,
    reply_from: Option<&mut usize>,
) {
    history.push(ChatMessage::new(Role::User, text));
    cut_to_latest_half(history, reply_from, 0);
}

/// Makes now the cut that the next caller turn would make ([`push_caller_turn`]), so that the
/// model can read the history that will be kept before that turn comes: a cut history shares
/// only its system prompt with the model's cached state, and reading it again on the caller's
/// turn would delay that answer by a second or more on the embedded model. True when it cut.
pub(super) fn cut_before_next_turn(
    history: &mut Vec<ChatMessage>,
    reply_from: Option<&mut usize>,
) -> bool {
    cut_to_latest_half(history, reply_from, 1)
}

/// Keeps the latest half of `history` once it and `incoming` messages still to come are past
/// [`HISTORY_MESSAGES`] (see [`push_caller_turn`]). True when it cut.
fn cut_to_latest_half(
    history: &mut Vec<ChatMessage>,
    reply_from: Option<&mut usize>,
    incoming: usize,
) -> bool {
    let length = history.len() + incoming;
    if length <= HISTORY_MESSAGES {
        return false;
    }
    let earliest = (length - HISTORY_MESSAGES / 2).min(history.len());
    let Some(cut) = history[earliest..]
        .iter()
        .position(|m| m.role == Role::User)
        .map(|i| earliest + i)
    else {
        return false;
    };
    if let Some(reply_from) = reply_from {
        if *reply_from < cut {
            return false;
        }
        *reply_from -= cut;
    }
    history.drain(..cut);
    true
}

/// The messages for the model: the system prompt, then `history` with the turn's `knowledge`
/// as a system message of its own right before the caller's latest words. The system prompt
/// stays the same from turn to turn, and the knowledge of earlier turns is not kept, so each
/// request starts with the one before it up to the last exchange: a model's prompt cache (the
/// embedded one's, a vendor's) keeps that prefix, where knowledge inside the system prompt
/// would change the first message at every turn and have the whole history read again.
pub(super) fn with_knowledge(
    system_prompt: &str,
    history: &[ChatMessage],
    knowledge: Option<&str>,
) -> Vec<ChatMessage> {
    let mut messages = Vec::with_capacity(history.len() + 2);
    messages.push(ChatMessage::new(Role::System, system_prompt));
    match knowledge.map(str::trim).filter(|k| !k.is_empty()) {
        Some(knowledge) => {
            let at = history
                .iter()
                .rposition(|m| m.role == Role::User)
                .unwrap_or(history.len());
            messages.extend_from_slice(&history[..at]);
            messages.push(ChatMessage::new(Role::System, knowledge));
            messages.extend_from_slice(&history[at..]);
        }
        None => messages.extend_from_slice(history),
    }
    messages
}

/// Tool calls still running when their reply ended get a "cancelled" answer, so the history
/// never holds a call without its result.
pub(super) fn close_tool_calls(history: &mut Vec<ChatMessage>, calls: &[ToolCall]) {
    for call in calls {
        let mut msg = ChatMessage::new(Role::Tool, "cancelled: the caller interrupted");
        msg.tool_call_id = Some(call.id.clone());
        history.push(msg);
    }
}

/// Keeps only the first `played` words of the assistant text of the reply that starts at
/// `from` in `history`: assistant messages left empty go (unless they carry tool calls), and
/// words played but not yet in the history are added from the reply's `ledger`.
pub(super) fn truncate_to_heard(
    history: &mut Vec<ChatMessage>,
    from: usize,
    played: usize,
    ledger: &PlaybackLedger,
) {
    let mut remaining = played;
    let mut consumed = 0;
    let from = from.min(history.len());
    for msg in &mut history[from..] {
        if msg.role != Role::Assistant {
            continue;
        }
        let words = msg.content.split_whitespace().count();
        let kept = words.min(remaining);
        if kept < words {
            msg.content = first_words(&msg.content, kept);
        }
        remaining -= kept;
        consumed += kept;
    }
    let mut index = from;
    history.retain(|m| {
        let keep = index < from
            || m.role != Role::Assistant
            || !m.content.is_empty()
            || !m.tool_calls.is_empty();
        index += 1;
        keep
    });
    if remaining > 0 {
        let rest = ledger.words_between(consumed, played);
        if !rest.is_empty() {
            history.push(ChatMessage::new(Role::Assistant, rest));
        }
    }
}

/// What to look up for the answer: the caller's latest turn, then the one before it (a
/// follow-up question often names its subject only there).
pub(super) fn retrieval_query(history: &[ChatMessage]) -> Option<String> {
    let mut turns = history
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.trim())
        .filter(|c| !c.is_empty());
    let latest = turns.next()?;
    let query = match turns.next() {
        Some(previous) => format!("{latest}\n{previous}"),
        None => latest.to_string(),
    };
    Some(query.chars().take(RETRIEVAL_QUERY_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::config::PlaybackAcks;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::new(Role::User, text)
    }

    fn agent(text: &str) -> ChatMessage {
        ChatMessage::new(Role::Assistant, text)
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "lookup".into(),
            arguments: "{}".into(),
        }
    }

    fn asks_for(text: &str, id: &str) -> ChatMessage {
        let mut msg = agent(text);
        msg.tool_calls = vec![call(id)];
        msg
    }

    fn answers(id: &str) -> ChatMessage {
        let mut msg = ChatMessage::new(Role::Tool, "42");
        msg.tool_call_id = Some(id.into());
        msg
    }

    fn texts(history: &[ChatMessage]) -> Vec<(Role, &str)> {
        history
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect()
    }

    /// `exchanges` caller turns, each answered.
    fn conversation(exchanges: usize) -> Vec<ChatMessage> {
        (0..exchanges)
            .flat_map(|i| [user(&format!("q{i}")), agent(&format!("a{i}"))])
            .collect()
    }

    fn ledger(sentences: &[&str]) -> PlaybackLedger {
        let mut ledger = PlaybackLedger::new(PlaybackAcks::Clock);
        for (i, sentence) in sentences.iter().enumerate() {
            ledger.queued(format!("m{i}"), (*sentence).into(), 1_000);
        }
        ledger
    }

    #[test]
    fn knowledge_goes_right_before_the_callers_latest_words_and_nowhere_else() {
        let mut with_tool = agent("");
        with_tool.tool_calls = vec![call("c1")];
        let mut answer = ChatMessage::new(Role::Tool, "done");
        answer.tool_call_id = Some("c1".into());
        let history = vec![
            user("hello"),
            agent("hi"),
            user("when do you open"),
            with_tool,
            answer,
        ];
        let messages = with_knowledge("Be kind.", &history, Some("Facts:\n- Open at nine."));
        let shape: Vec<(Role, &str)> = messages
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (Role::System, "Be kind."),
                (Role::User, "hello"),
                (Role::Assistant, "hi"),
                (Role::System, "Facts:\n- Open at nine."),
                (Role::User, "when do you open"),
                (Role::Assistant, ""),
                (Role::Tool, "done"),
            ]
        );
        // The next turn's request starts with this one up to its knowledge.
        let mut next = history.clone();
        next.extend([agent("We open at nine."), user("and close")]);
        let later = with_knowledge("Be kind.", &next, Some("Facts:\n- Close at six."));
        assert_eq!(later[..3], messages[..3]);
        assert_eq!(later[3], messages[4], "the earlier knowledge is not kept");
        assert_eq!(later[later.len() - 2].content, "Facts:\n- Close at six.");
        // No knowledge (or none found) leaves the history as it is.
        for knowledge in [None, Some("  ")] {
            let plain = with_knowledge("Be kind.", &history, knowledge);
            assert_eq!(plain.len(), history.len() + 1);
            assert_eq!(plain[1..], history[..]);
        }
        // Knowledge before any caller turn (a greeting's reply) goes last.
        let first = with_knowledge("Be kind.", &[], Some("Facts:\n- x"));
        assert_eq!(first.len(), 2);
        assert_eq!(first[1].role, Role::System);
    }

    #[test]
    fn a_history_within_the_limit_is_kept_whole() {
        let mut history = conversation(HISTORY_MESSAGES / 2 - 1);
        let mut reply_from = 3;
        push_caller_turn(&mut history, "next".into(), Some(&mut reply_from));
        assert_eq!(history.len(), HISTORY_MESSAGES - 1);
        assert_eq!(history[0].content, "q0");
        assert_eq!(history.last().map(|m| m.content.as_str()), Some("next"));
        assert_eq!(reply_from, 3);
    }

    #[test]
    fn a_long_history_is_cut_to_its_latest_half_at_a_caller_turn() {
        let mut history = conversation(HISTORY_MESSAGES / 2);
        push_caller_turn(&mut history, "next".into(), None);
        // 41 messages: the latest 20 start at an agent turn, so the cut is at the caller turn
        // after it.
        assert_eq!(history.len(), HISTORY_MESSAGES / 2 - 1);
        assert_eq!(
            (history[0].role, history[0].content.as_str()),
            (Role::User, "q11")
        );
        assert_eq!(history.last().map(|m| m.content.as_str()), Some("next"));
    }

    #[test]
    fn the_cut_before_the_next_turn_is_the_one_that_turn_would_make() {
        for length in [HISTORY_MESSAGES - 1, HISTORY_MESSAGES] {
            let mut history: Vec<ChatMessage> = conversation(HISTORY_MESSAGES / 2);
            history.truncate(length);
            let mut then = history.clone();
            push_caller_turn(&mut then, "next".into(), None);
            let mut reply_from = length - 1;
            let cut = cut_before_next_turn(&mut history, Some(&mut reply_from));
            assert_eq!(cut, length == HISTORY_MESSAGES, "{length} messages");
            if cut {
                assert_eq!(reply_from, length - 1 - (length - history.len()));
            }
            // The caller's turn then adds to what was kept, and cuts nothing more.
            push_caller_turn(&mut history, "next".into(), None);
            assert_eq!(history, then, "{length} messages");
        }
        // Nothing is cut out of the reply in progress.
        let mut history = conversation(HISTORY_MESSAGES / 2);
        let mut reply_from = 1;
        assert!(!cut_before_next_turn(&mut history, Some(&mut reply_from)));
        assert_eq!(history.len(), HISTORY_MESSAGES);
    }

    #[test]
    fn the_cut_never_separates_a_tool_answer_from_its_call() {
        let mut history = conversation(9);
        let mut both = asks_for("", "c1");
        both.tool_calls.push(call("c2"));
        history.extend([
            user("book it"),
            both,
            answers("c1"),
            answers("c2"),
            agent("done"),
        ]);
        history.extend(conversation(8));
        history.push(agent("more"));
        assert_eq!(history.len(), HISTORY_MESSAGES);
        push_caller_turn(&mut history, "thanks".into(), None);
        // The latest half would start at the second tool answer; the cut is at the caller turn
        // after it instead.
        assert_eq!(
            (history[0].role, history[0].content.as_str()),
            (Role::User, "q0")
        );
        assert_eq!(history.len(), HISTORY_MESSAGES + 1 - 23);
        assert!(history.iter().all(|m| m.role != Role::Tool));
    }

    #[test]
    fn the_cut_waits_while_it_would_reach_into_the_reply_in_progress() {
        // The reply started long ago (a model round and its tools still going): the caller's
        // turns since then are kept with it.
        let mut history = conversation(HISTORY_MESSAGES / 2);
        let mut reply_from = 10;
        push_caller_turn(&mut history, "next".into(), Some(&mut reply_from));
        assert_eq!(history.len(), HISTORY_MESSAGES + 1);
        assert_eq!(reply_from, 10);
        // A reply after the cut moves with it.
        let mut reply_from = 31;
        push_caller_turn(&mut history, "again".into(), Some(&mut reply_from));
        assert_eq!(history.len(), HISTORY_MESSAGES / 2);
        assert_eq!(history[0].content, "q11");
        assert_eq!(reply_from, 9);
        assert_eq!(history[reply_from].content, "a15");
    }

    #[test]
    fn truncation_keeps_exactly_the_words_heard() {
        let reply = vec![
            agent("one two three"),
            asks_for("", "c1"),
            answers("c1"),
            agent("four five six"),
        ];
        let before = vec![user("hello"), agent("earlier reply words")];
        let spoken = ledger(&["one two three", "four five six"]);
        let mut history = [before.clone(), reply.clone()].concat();
        truncate_to_heard(&mut history, before.len(), 4, &spoken);
        assert_eq!(
            texts(&history),
            vec![
                (Role::User, "hello"),
                (Role::Assistant, "earlier reply words"),
                (Role::Assistant, "one two three"),
                (Role::Assistant, ""),
                (Role::Tool, "42"),
                (Role::Assistant, "four"),
            ]
        );
        // Two words heard: the text after them goes, the call and its answer stay.
        let mut history = [before.clone(), reply.clone()].concat();
        truncate_to_heard(&mut history, before.len(), 2, &spoken);
        assert_eq!(
            texts(&history),
            vec![
                (Role::User, "hello"),
                (Role::Assistant, "earlier reply words"),
                (Role::Assistant, "one two"),
                (Role::Assistant, ""),
                (Role::Tool, "42"),
            ]
        );
        assert_eq!(history[3].tool_calls, vec![call("c1")]);
        // Nothing heard: nothing of the reply's text is left, nothing before it is touched.
        let mut history = [before.clone(), vec![agent("one two three")]].concat();
        truncate_to_heard(&mut history, before.len(), 0, &spoken);
        assert_eq!(history, before);
    }

    #[test]
    fn words_heard_before_the_model_finished_are_added_from_the_ledger() {
        // The model's text reaches the history when its round ends; the caller may have heard
        // part of it before then.
        let spoken = ledger(&["one two three", "four five six"]);
        let mut history = vec![user("hello")];
        truncate_to_heard(&mut history, 1, 5, &spoken);
        assert_eq!(
            texts(&history),
            vec![
                (Role::User, "hello"),
                (Role::Assistant, "one two three four five")
            ]
        );
        let mut history = vec![
            user("hello"),
            asks_for("one two three", "c1"),
            answers("c1"),
        ];
        truncate_to_heard(&mut history, 1, 4, &spoken);
        assert_eq!(
            texts(&history),
            vec![
                (Role::User, "hello"),
                (Role::Assistant, "one two three"),
                (Role::Tool, "42"),
                (Role::Assistant, "four"),
            ]
        );
    }

    #[test]
    fn dangling_tool_calls_are_answered_as_cancelled() {
        let mut history = vec![user("book it"), asks_for("", "c1")];
        history[1].tool_calls.push(call("c2"));
        close_tool_calls(&mut history, &[call("c1"), call("c2")]);
        assert_eq!(history.len(), 4);
        for (msg, id) in history[2..].iter().zip(["c1", "c2"]) {
            assert_eq!(msg.role, Role::Tool);
            assert_eq!(msg.tool_call_id.as_deref(), Some(id));
            assert!(msg.content.starts_with("cancelled"));
        }
        close_tool_calls(&mut history, &[]);
        assert_eq!(history.len(), 4);
    }

    #[test]
    fn the_knowledge_query_is_the_latest_caller_turn_then_the_one_before() {
        assert_eq!(retrieval_query(&[agent("hello")]), None);
        let history = vec![
            user("first"),
            agent("a"),
            user("  about the pool "),
            agent("b"),
            user("   "),
            user("is it heated?"),
            agent("c"),
        ];
        assert_eq!(
            retrieval_query(&history).as_deref(),
            Some("is it heated?\nabout the pool")
        );
        assert_eq!(retrieval_query(&history[..1]).as_deref(), Some("first"));
        let long = vec![user(&"é".repeat(RETRIEVAL_QUERY_CHARS + 10))];
        let query = retrieval_query(&long).unwrap_or_default();
        assert_eq!(query.chars().count(), RETRIEVAL_QUERY_CHARS);
    }
}
