//! Root-cause analysis of a session's trace: rules over its turns and events that name what
//! went wrong, on which turn, why, and what to change. Each rule's threshold is a constant
//! here and documented in docs/api.md ("Root-cause analysis").
//!
//! | type | fires when |
//! |---|---|
//! | `high_latency` | an agent reply's latency (end of caller speech → first agent audio) is over [`FIRST_RESPONSE_TARGET_MS`] for the first reply, [`STEADY_STATE_TARGET_MS`] after it; names the stage that took longest |
//! | `failed_turn` | a turn recorded an error |
//! | `empty_transcript` | caller speech was detected but nothing was recognised in it |
//! | `long_silence` | after a caller turn nobody spoke for over [`LONG_SILENCE_MS`] and no measured reply came (a measured one is `high_latency`) |
//! | `false_barge_in` | an interruption whose speech held no recognisable words |
//! | `slow_barge_in` | an interruption stopped the agent more than [`BARGE_IN_STOP_TARGET_MS`] after the decision, or was decided more than [`BARGE_IN_DETECTION_TARGET_MS`] after the caller's onset |
//! | `bleed_through` | [`BLEED_THROUGH_WORDS`] or more agent words played over the caller before the agent stopped |

use serde::Serialize;
use utoipa::ToSchema;

use crate::registry::sessions::SessionTrace;
use crate::store::sessions::{TurnRow, EVENT_UNRECOGNISED_SPEECH};

/// The spec's target for the first reply to the caller.
pub const FIRST_RESPONSE_TARGET_MS: i64 = 1_500;
/// The spec's steady-state target for every later reply.
pub const STEADY_STATE_TARGET_MS: i64 = 900;
/// Silence after a caller turn that counts as the agent going quiet.
pub const LONG_SILENCE_MS: i64 = 5_000;
/// Barge-in decision → agent audio cleared. The session clears in the same step it decides,
/// so anything over this means the server was starved.
pub const BARGE_IN_STOP_TARGET_MS: i64 = 200;
/// Caller onset → barge-in decision. The sustain (200 ms by default) is most of it.
pub const BARGE_IN_DETECTION_TARGET_MS: i64 = 500;
/// Agent words played over the caller before it stopped; one or two are unavoidable with a
/// 200 ms sustain at speaking pace.
pub const BLEED_THROUGH_WORDS: usize = 3;

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Issue {
    /// `high_latency`, `failed_turn`, `empty_transcript`, `long_silence`, `false_barge_in`,
    /// `slow_barge_in` or `bleed_through`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The turn index it concerns.
    pub turn: i32,
    pub description: String,
    pub recommendation: String,
}

/// Seconds with one decimal: `2.4 s`.
fn secs(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The stages of a reply's latency, with the names a description uses.
fn stages(turn: &TurnRow) -> [(&'static str, &'static str, i64); 6] {
    [
        (
            "endpoint",
            "end-of-turn detection",
            turn.endpoint_ms.unwrap_or(0),
        ),
        ("stt", "speech recognition", turn.stt_ms),
        ("llm", "LLM time to first sentence", turn.llm_ms),
        ("tool", "tool execution", turn.tool_ms.unwrap_or(0)),
        ("tts", "speech synthesis time to first audio", turn.tts_ms),
        ("platform", "server overhead", turn.platform_ms.unwrap_or(0)),
    ]
}

fn latency_advice(stage: &str, turn: &TurnRow) -> String {
    let provider = |p: &Option<String>| p.clone().unwrap_or_else(|| "the provider".into());
    match stage {
        "endpoint" => "The caller's turn took long to be declared over: shorten the end-of-turn \
            silence, or use a recogniser that endpoints itself (deepgram streams and ends \
            utterances on its own)."
            .into(),
        "stt" => format!(
            "Recognition by {} was slow: use a streaming recogniser (deepgram) or a faster \
             model, and check the inference queue depth at /metrics when it is the embedded one.",
            provider(&turn.stt_provider)
        ),
        "llm" => format!(
            "The model ({}) was slow to its first sentence: use a faster or smaller model, \
             shorten the system prompt and the knowledge put into it, lower maxTokens, and add \
             an llm fallback in metadata.fallbacks for outages.",
            provider(&turn.llm_provider)
        ),
        "tool" => "A tool call held the reply up: make the tool's endpoint faster or lower its \
            timeoutMs, and let the agent say a short sentence before calling slow tools."
            .into(),
        "tts" => format!(
            "Synthesis by {} was slow to its first audio: use a lower-latency voice provider or \
             model, and keep first sentences short.",
            provider(&turn.tts_provider)
        ),
        _ => "The server itself was slow between stages: check CPU load and the inference \
            queue depth at /metrics, and run fewer sessions per node."
            .into(),
    }
}

fn failure_advice(error: &str) -> String {
    let code = error.split(':').next().unwrap_or_default().trim();
    match code {
        "stt_failed" | "llm_failed" | "tts_failed" => {
            "A provider failed this stage: check its key \
            (/v1/provider-keys/{provider}/verify) and status, and list a fallback for the stage in \
            the agent's metadata.fallbacks."
                .into()
        }
        "stt_timeout" | "llm_timeout" | "tts_timeout" => "A provider did not answer in time: \
            check its status and the inference queue depth at /metrics, and list a fallback for \
            the stage in the agent's metadata.fallbacks."
            .into(),
        "tool_step_limit" => "The model kept calling tools: make tool results conclusive, and \
            tell the agent in its prompt to answer after a tool result."
            .into(),
        "audio_out" => "Synthesized audio could not be converted for the call: check the voice's \
            output format."
            .into(),
        _ => "See the error and the server log under this session id.".into(),
    }
}

/// The issues of one session's trace, ordered by turn.
pub fn analyse(trace: &SessionTrace) -> Vec<Issue> {
    let turns = &trace.turns;
    let mut issues = Vec::new();

    // high_latency: the first measured reply against the first-response target, the rest
    // against the steady-state one.
    let mut first = true;
    for turn in turns.iter().filter(|t| t.speaker == "agent") {
        let Some(total) = turn.latency_ms else {
            continue;
        };
        let target = if first {
            FIRST_RESPONSE_TARGET_MS
        } else {
            STEADY_STATE_TARGET_MS
        };
        first = false;
        if total <= target {
            continue;
        }
        let all = stages(turn);
        let (stage, name, ms) = all
            .iter()
            .copied()
            .max_by_key(|(_, _, ms)| *ms)
            .expect("six stages");
        issues.push(Issue {
            kind: "high_latency",
            turn: turn.turn_index,
            description: format!(
                "Reply took {} against a target of {}: {name} {} of {}.",
                secs(total),
                secs(target),
                secs(ms),
                secs(total)
            ),
            recommendation: latency_advice(stage, turn),
        });
    }

    for turn in turns {
        if let Some(error) = &turn.error {
            issues.push(Issue {
                kind: "failed_turn",
                turn: turn.turn_index,
                description: format!("The {} turn failed: {error}", turn.speaker),
                recommendation: failure_advice(error),
            });
        }
    }

    for event in trace
        .events
        .iter()
        .filter(|e| e.kind == EVENT_UNRECOGNISED_SPEECH)
    {
        let spoken = secs(event.end_ms - event.start_ms);
        match event.turn_index {
            Some(interrupted) => issues.push(Issue {
                kind: "false_barge_in",
                turn: interrupted,
                description: format!(
                    "The agent was interrupted by {spoken} of sound in which no words were \
                     recognised."
                ),
                recommendation: "Noise or the agent's own echo stopped it: raise the barge-in \
                    sustain or the VAD threshold; on the direct socket use acks=marks and the \
                    browser's echo cancellation."
                    .into(),
            }),
            None => issues.push(Issue {
                kind: "empty_transcript",
                turn: turns
                    .iter()
                    .filter(|t| t.start_ms <= event.start_ms)
                    .map(|t| t.turn_index)
                    .max()
                    .unwrap_or(0),
                description: format!(
                    "Caller speech of {spoken} at {} was detected but nothing was recognised.",
                    secs(event.start_ms)
                ),
                recommendation: "Check the line's audio quality and the agent's language; a \
                    recogniser for the caller's language (or auto-detection) may hear it, and \
                    noise may need a higher VAD threshold."
                    .into(),
            }),
        }
    }

    issues.extend(long_silences(trace));

    for turn in turns.iter().filter(|t| t.barge_in_requested == Some(false)) {
        let detection = turn.barge_in_detection_ms.unwrap_or(0);
        let stop = turn.barge_in_stop_ms.unwrap_or(0);
        if stop > BARGE_IN_STOP_TARGET_MS || detection > BARGE_IN_DETECTION_TARGET_MS {
            issues.push(Issue {
                kind: "slow_barge_in",
                turn: turn.turn_index,
                description: format!(
                    "The interruption was decided {detection} ms after the caller began and \
                     the agent stopped {stop} ms after that (targets {} ms and {} ms).",
                    BARGE_IN_DETECTION_TARGET_MS, BARGE_IN_STOP_TARGET_MS
                ),
                recommendation: if stop > BARGE_IN_STOP_TARGET_MS {
                    "The server was slow to stop the audio: check CPU load and the inference \
                     queue depth at /metrics."
                        .into()
                } else {
                    "Detection was slow: lower the barge-in sustain time.".into()
                },
            });
        }
        let words = turn
            .bleed_through
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .count();
        if words >= BLEED_THROUGH_WORDS {
            issues.push(Issue {
                kind: "bleed_through",
                turn: turn.turn_index,
                description: format!(
                    "{words} agent words played over the caller before the agent stopped: \"{}\".",
                    turn.bleed_through.as_deref().unwrap_or_default()
                ),
                recommendation: "Shorten the barge-in sustain time; on the direct socket send \
                    marks (acks=marks) so the server knows what has played, and keep the \
                    client's playback buffer short."
                    .into(),
            });
        }
    }

    issues.sort_by_key(|issue| issue.turn);
    issues
}

/// `long_silence`: after each recognised caller turn, the time until anyone spoke again (the
/// next agent audio, the caller's next turn, or the end of the call), unless a measured reply
/// answered it (that is `high_latency`'s to judge).
fn long_silences(trace: &SessionTrace) -> Vec<Issue> {
    let turns = &trace.turns;
    let ended_at = (trace.session.ended_at.is_some()).then_some(trace.session.total_duration_ms);
    let mut issues = Vec::new();
    for (i, user) in turns.iter().enumerate() {
        if user.speaker != "user" || user.error.is_some() || user.text.is_empty() {
            continue;
        }
        let after = &turns[i + 1..];
        // Only what came before the caller's next turn answers this one.
        let next_user = after
            .iter()
            .position(|t| t.speaker == "user" && t.start_ms >= user.end_ms);
        let before_next = &after[..next_user.unwrap_or(after.len())];
        let reply = before_next
            .iter()
            .find(|t| t.speaker == "agent" && !t.text.is_empty() && t.start_ms >= user.end_ms);
        if reply.is_some_and(|r| r.latency_ms.is_some()) {
            continue;
        }
        let next_sound = [
            reply.map(|r| r.start_ms),
            next_user.map(|p| after[p].start_ms),
            ended_at,
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next_sound) = next_sound else {
            continue;
        };
        let silence = next_sound - user.end_ms;
        if silence > LONG_SILENCE_MS {
            issues.push(Issue {
                kind: "long_silence",
                turn: user.turn_index,
                description: format!(
                    "The agent stayed silent for {} after the caller's turn.",
                    secs(silence)
                ),
                recommendation: "The reply failed or never started: look for a failed turn near \
                    it, check the providers' status, and give the agent an apology or fallback \
                    provider so the caller always hears something."
                    .into(),
            });
        }
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sessions::{EventRow, SessionRow};

    fn session() -> SessionRow {
        SessionRow {
            seq: 1,
            id: "ses_1".into(),
            developer_id: "dev".into(),
            agent_id: "agent".into(),
            transport: "twilio".into(),
            call_sid: Some("CA1".into()),
            from_number: None,
            to_number: None,
            instance_id: None,
            status: crate::store::sessions::SessionStatus::Completed,
            turn_count: 0,
            tool_executions: 0,
            total_duration_ms: 60_000,
            avg_turn_latency_ms: 0,
            end_reason: Some("hangup".into()),
            created_at: 0,
            started_at: Some(0),
            ended_at: Some(60_000),
        }
    }

    fn turn(index: i32, speaker: &str, start_ms: i64, end_ms: i64) -> TurnRow {
        TurnRow {
            text: "some words here".into(),
            start_ms,
            end_ms,
            ..TurnRow::blank("ses_1", index, speaker)
        }
    }

    /// An agent reply measured at `total` ms, of which the model took `llm`.
    fn reply(index: i32, start_ms: i64, total: i64, llm: i64) -> TurnRow {
        let mut t = turn(index, "agent", start_ms, start_ms + 2_000);
        t.latency_ms = Some(total);
        t.endpoint_ms = Some(100);
        t.stt_ms = 100;
        t.llm_ms = llm;
        t.tool_ms = Some(0);
        t.tts_ms = 50;
        t.platform_ms = Some(total - 250 - llm);
        t.llm_provider = Some("openai".into());
        t
    }

    fn trace(turns: Vec<TurnRow>, events: Vec<EventRow>) -> SessionTrace {
        SessionTrace {
            session: session(),
            turns,
            tool_calls: Vec::new(),
            events,
            analysis: None,
        }
    }

    fn kinds(issues: &[Issue]) -> Vec<(&'static str, i32)> {
        issues.iter().map(|i| (i.kind, i.turn)).collect()
    }

    #[test]
    fn a_clean_call_has_no_issues() {
        let t = trace(
            vec![
                turn(0, "agent", 0, 2_000),
                turn(1, "user", 3_000, 5_000),
                reply(2, 5_800, 800, 400),
                turn(3, "user", 9_000, 10_000),
                reply(4, 10_850, 850, 400),
            ],
            vec![],
        );
        assert_eq!(analyse(&t), vec![]);
    }

    #[test]
    fn high_latency_names_the_dominating_stage_against_each_target() {
        // The first reply: 1.4 s is within 1.5 s. The second: 2.7 s, 2.4 s of it the model.
        let t = trace(
            vec![
                turn(0, "user", 0, 2_000),
                reply(1, 3_400, 1_400, 1_000),
                turn(2, "user", 6_000, 8_000),
                reply(3, 10_700, 2_700, 2_400),
            ],
            vec![],
        );
        let issues = analyse(&t);
        assert_eq!(kinds(&issues), [("high_latency", 3)]);
        assert_eq!(
            issues[0].description,
            "Reply took 2.7 s against a target of 0.9 s: LLM time to first sentence 2.4 s of 2.7 s."
        );
        assert!(issues[0].recommendation.contains("openai"), "{issues:?}");
        assert!(issues[0].recommendation.contains("faster or smaller model"));

        // The same 1.4 s as a later reply is over the steady-state target.
        let t = trace(
            vec![
                turn(0, "user", 0, 1_000),
                reply(1, 1_500, 500, 200),
                turn(2, "user", 3_000, 4_000),
                reply(3, 5_400, 1_400, 250),
            ],
            vec![],
        );
        let issues = analyse(&t);
        assert_eq!(kinds(&issues), [("high_latency", 3)]);
        // 1400 - 250 - 250 = 900 ms of server overhead dominates.
        assert!(issues[0]
            .description
            .contains("server overhead 0.9 s of 1.4 s"));
        assert!(issues[0].recommendation.contains("/metrics"));
    }

    #[test]
    fn failed_turns_and_a_long_silence_after_them() {
        let mut failed = turn(2, "agent", 3_000, 3_000);
        failed.text = String::new();
        failed.error = Some("llm_failed: language model failed: openai: failed (HTTP 500)".into());
        let t = trace(
            vec![
                turn(0, "agent", 0, 1_000),
                turn(1, "user", 1_500, 2_500),
                failed,
                turn(3, "user", 9_000, 10_000),
                reply(4, 10_500, 500, 200),
            ],
            vec![],
        );
        let issues = analyse(&t);
        assert_eq!(kinds(&issues), [("long_silence", 1), ("failed_turn", 2)]);
        assert!(issues[0].description.contains("6.5 s"), "{issues:?}");
        assert!(issues[1].description.contains("HTTP 500"));
        assert!(issues[1].recommendation.contains("metadata.fallbacks"));
    }

    #[test]
    fn silence_ends_when_the_caller_speaks_again_or_the_call_ends() {
        // The caller went on after 3 s: not a silence of the agent's.
        let t = trace(
            vec![turn(0, "user", 0, 1_000), turn(1, "user", 4_000, 5_000)],
            vec![],
        );
        assert_eq!(kinds(&analyse(&t)), [("long_silence", 1)]);
        // The call ended 2 s after the second caller turn: within the threshold. The first
        // caller turn is followed by the second 3 s later: also within it.
        let mut t = t;
        t.session.total_duration_ms = 7_000;
        assert_eq!(analyse(&t), vec![]);
    }

    #[test]
    fn interruptions_false_slow_and_bleeding() {
        let mut clean = turn(1, "agent", 1_000, 2_000);
        clean.interrupted = true;
        clean.barge_in_requested = Some(false);
        clean.barge_in_detection_ms = Some(200);
        clean.barge_in_stop_ms = Some(2);
        clean.bleed_through = Some("well".into());
        let mut bleeding = clean.clone();
        bleeding.turn_index = 3;
        bleeding.bleed_through = Some("our opening hours are".into());
        (bleeding.start_ms, bleeding.end_ms) = (3_100, 3_900);
        let mut slow = clean.clone();
        slow.turn_index = 5;
        slow.barge_in_stop_ms = Some(350);
        (slow.start_ms, slow.end_ms) = (5_100, 5_900);
        let mut requested = clean.clone();
        requested.turn_index = 7;
        requested.barge_in_requested = Some(true);
        requested.barge_in_stop_ms = Some(0);
        requested.barge_in_detection_ms = Some(0);
        requested.bleed_through = Some(String::new());
        (requested.start_ms, requested.end_ms) = (7_100, 8_000);
        let t = trace(
            vec![
                turn(0, "user", 0, 900),
                clean,
                turn(2, "user", 2_000, 3_000),
                bleeding,
                turn(4, "user", 4_000, 5_000),
                slow,
                turn(6, "user", 6_000, 7_000),
                requested,
            ],
            vec![
                EventRow {
                    session_id: "ses_1".into(),
                    kind: EVENT_UNRECOGNISED_SPEECH.into(),
                    turn_index: Some(1),
                    start_ms: 1_800,
                    end_ms: 2_100,
                    detail: None,
                },
                EventRow {
                    session_id: "ses_1".into(),
                    kind: EVENT_UNRECOGNISED_SPEECH.into(),
                    turn_index: None,
                    start_ms: 4_100,
                    end_ms: 4_600,
                    detail: None,
                },
            ],
        );
        let issues = analyse(&t);
        assert_eq!(
            kinds(&issues),
            [
                ("false_barge_in", 1),
                ("bleed_through", 3),
                ("empty_transcript", 4),
                ("slow_barge_in", 5)
            ]
        );
        assert!(issues[1].description.starts_with("4 agent words"));
        assert!(issues[2].description.contains("0.5 s"));
        assert!(issues[3].description.contains("350 ms"));
    }
}
