//! Voicemail on outbound calls: answering-machine detection (protocols.md §3.5).
//!
//! A call placed with `machineDetection` `hangup` or `message` asks Twilio to tell, while
//! the call goes on, who answered (`AnsweredBy`). A person (or a verdict Twilio could not
//! reach) keeps talking to the agent; a machine is hung up on, or left `voicemailMessage`
//! after the beep (the call's markup replaced by `<Say>` and `<Hangup/>`); a fax is hung up
//! on. The first verdict for a task is the one acted on; it is kept on the task and, once
//! the call connected, on its session as a `machine_detection` call event.

use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::error::ApiError;
use crate::registry::sessions::{GetSession, RecordEvent, SessionLookup};
use crate::registry::telephony::{ClaimVerdict, ReleaseVerdict};
use crate::store::sessions::{EventRow, EVENT_MACHINE_DETECTION};
use crate::store::telephony::CallTaskRow;
use crate::telephony::twiml;

/// The longest message left on a machine, in characters.
pub const MAX_VOICEMAIL_CHARS: usize = 1000;

/// What an outbound call does when a machine answers (the request's `machineDetection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MachineDetection {
    /// No detection: whoever answers talks to the agent.
    #[default]
    Off,
    /// Hang up on a machine.
    Hangup,
    /// Leave `voicemailMessage` after the beep, then hang up (a fax is hung up on).
    Message,
}

impl MachineDetection {
    pub fn parse(value: &str) -> Option<MachineDetection> {
        Some(match value {
            "off" => MachineDetection::Off,
            "hangup" => MachineDetection::Hangup,
            "message" => MachineDetection::Message,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MachineDetection::Off => "off",
            MachineDetection::Hangup => "hangup",
            MachineDetection::Message => "message",
        }
    }
}

/// An outbound call's answering-machine settings, validated: a message exactly when the
/// mode is `message`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VoicemailPlan {
    pub mode: MachineDetection,
    /// The text said after the beep (`message` mode), trimmed.
    pub message: Option<String>,
}

impl VoicemailPlan {
    /// The plan of a request's `machineDetection` and `voicemailMessage`; a 400 naming
    /// `voicemailMessage` when it is missing, blank, too long, or given without `message`.
    pub fn from_request(
        mode: Option<MachineDetection>,
        message: Option<&str>,
    ) -> Result<VoicemailPlan, ApiError> {
        let mode = mode.unwrap_or_default();
        let message = match (mode, message) {
            (MachineDetection::Message, None) => {
                return Err(ApiError::invalid(
                    "voicemailMessage",
                    "voicemailMessage is required when machineDetection is message",
                ))
            }
            (MachineDetection::Message, Some(given)) => {
                let text = given.trim();
                if text.is_empty() {
                    return Err(ApiError::invalid(
                        "voicemailMessage",
                        "voicemailMessage must not be blank",
                    ));
                }
                // Counted as given, as the schema's maxLength is.
                if given.chars().count() > MAX_VOICEMAIL_CHARS {
                    return Err(ApiError::invalid(
                        "voicemailMessage",
                        format!(
                            "voicemailMessage must be at most {MAX_VOICEMAIL_CHARS} characters"
                        ),
                    ));
                }
                Some(text.to_string())
            }
            (_, Some(_)) => {
                return Err(ApiError::invalid(
                    "voicemailMessage",
                    format!(
                        "voicemailMessage is only used when machineDetection is message (it is {})",
                        mode.as_str()
                    ),
                ))
            }
            (_, None) => None,
        };
        Ok(VoicemailPlan { mode, message })
    }

    /// The plan a task was placed with.
    pub fn of_task(task: &CallTaskRow) -> VoicemailPlan {
        VoicemailPlan {
            mode: MachineDetection::parse(&task.machine_detection).unwrap_or_default(),
            message: task.voicemail_message.clone(),
        }
    }

    /// Whether Twilio is asked to detect machines at all.
    pub fn detects(&self) -> bool {
        self.mode != MachineDetection::Off
    }

    /// What to do about Twilio's verdict. A `message` plan without its message (which
    /// validation does not let through) hangs up rather than leave nothing.
    pub fn decide(&self, answered_by: AnsweredBy) -> MachineAction {
        use AnsweredBy::*;
        match (self.mode, answered_by) {
            (MachineDetection::Off, _) | (_, Human | Unknown) => MachineAction::None,
            (_, Fax) | (MachineDetection::Hangup, _) => MachineAction::HungUp,
            (MachineDetection::Message, _) if self.message.is_none() => MachineAction::HungUp,
            (MachineDetection::Message, _) => MachineAction::LeftMessage,
        }
    }
}

/// Twilio's `AnsweredBy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredBy {
    Human,
    /// A machine's greeting started (`MachineDetection=Enable`).
    MachineStart,
    /// The greeting ended: with a beep, silence, or otherwise (`DetectMessageEnd`).
    MachineEndBeep,
    MachineEndSilence,
    MachineEndOther,
    Fax,
    /// Detection reached no verdict in its time.
    Unknown,
}

impl AnsweredBy {
    pub fn parse(value: &str) -> Option<AnsweredBy> {
        Some(match value {
            "human" => AnsweredBy::Human,
            "machine_start" => AnsweredBy::MachineStart,
            "machine_end_beep" => AnsweredBy::MachineEndBeep,
            "machine_end_silence" => AnsweredBy::MachineEndSilence,
            "machine_end_other" => AnsweredBy::MachineEndOther,
            "fax" => AnsweredBy::Fax,
            "unknown" => AnsweredBy::Unknown,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AnsweredBy::Human => "human",
            AnsweredBy::MachineStart => "machine_start",
            AnsweredBy::MachineEndBeep => "machine_end_beep",
            AnsweredBy::MachineEndSilence => "machine_end_silence",
            AnsweredBy::MachineEndOther => "machine_end_other",
            AnsweredBy::Fax => "fax",
            AnsweredBy::Unknown => "unknown",
        }
    }
}

/// What was done about a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineAction {
    /// The agent goes on talking.
    None,
    HungUp,
    /// The voicemail message was said, then the call hung up.
    LeftMessage,
}

impl MachineAction {
    pub fn as_str(self) -> &'static str {
        match self {
            MachineAction::None => "none",
            MachineAction::HungUp => "hung_up",
            MachineAction::LeftMessage => "left_message",
        }
    }
}

/// Twilio's verdict on one call, from its `AsyncAmdStatusCallback`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub call_sid: String,
    pub answered_by: AnsweredBy,
    /// `MachineDetectionDuration`: how long detection took, in ms.
    pub detection_ms: Option<i64>,
}

impl Verdict {
    /// The verdict of a callback's `CallSid`, `AnsweredBy` and `MachineDetectionDuration`;
    /// a 400 naming the parameter that is missing or wrong.
    pub fn parse(
        call_sid: Option<&str>,
        answered_by: Option<&str>,
        duration: Option<&str>,
    ) -> Result<Verdict, ApiError> {
        let call_sid = call_sid
            .map(str::trim)
            .filter(|sid| !sid.is_empty())
            .ok_or_else(|| ApiError::invalid("CallSid", "CallSid is required"))?;
        let given = answered_by.unwrap_or("");
        let answered_by = AnsweredBy::parse(given).ok_or_else(|| {
            ApiError::invalid("AnsweredBy", format!("unknown AnsweredBy '{given}'"))
        })?;
        let detection_ms =
            match duration.map(str::trim) {
                None | Some("") => None,
                Some(ms) => Some(ms.parse::<i64>().ok().filter(|ms| *ms >= 0).ok_or_else(
                    || {
                        ApiError::invalid(
                            "MachineDetectionDuration",
                            format!("MachineDetectionDuration must be milliseconds, not '{ms}'"),
                        )
                    },
                )?),
            };
        Ok(Verdict {
            call_sid: call_sid.to_string(),
            answered_by,
            detection_ms,
        })
    }
}

/// Acts on Twilio's verdict for `task`, once: answers the action taken, or `None` when an
/// earlier verdict for the task already stands (nothing more is done). When Twilio cannot be
/// asked to act, the verdict is not kept (a retried callback may act) and the error is
/// answered: 503 without a Twilio account, 502 when Twilio fails.
pub async fn apply_verdict(
    state: &AppState,
    task: &CallTaskRow,
    verdict: &Verdict,
) -> Result<Option<MachineAction>, ApiError> {
    let plan = VoicemailPlan::of_task(task);
    let action = plan.decide(verdict.answered_by);
    let twilio = match action {
        MachineAction::None => None,
        _ => Some(state.twilio().as_ref().ok_or_else(|| {
            ApiError::Unavailable(
                "calls cannot be controlled: set [telephony.twilio] account_sid and auth_token"
                    .into(),
            )
        })?),
    };
    let answered_by = verdict.answered_by.as_str();
    let claimed = state
        .telephony()
        .send(ClaimVerdict {
            id: task.id.clone(),
            answered_by: answered_by.to_string(),
            action: action.as_str().to_string(),
        })
        .await??;
    let Some(task) = claimed else {
        tracing::debug!(task = %task.id, "ignored a repeated machine-detection verdict ({answered_by})");
        return Ok(None);
    };
    let acted = match (twilio, action, &plan.message) {
        (Some(twilio), MachineAction::LeftMessage, Some(message)) => {
            twilio
                .redirect(&verdict.call_sid, &twiml::say_and_hang_up(message))
                .await
        }
        (Some(twilio), MachineAction::HungUp | MachineAction::LeftMessage, _) => {
            twilio.hang_up(&verdict.call_sid).await
        }
        _ => Ok(true),
    };
    if let Err(e) = acted {
        tracing::warn!(task = %task.id, "could not act on the machine-detection verdict ({answered_by}): {e}");
        let released = state
            .telephony()
            .send(ReleaseVerdict {
                id: task.id.clone(),
                answered_by: answered_by.to_string(),
            })
            .await;
        if !matches!(released, Ok(Ok(true))) {
            tracing::error!(task = %task.id, "the verdict whose action failed stays recorded");
        }
        return Err(ApiError::Upstream(e.to_string()));
    }
    record_event(state, &task, verdict, action).await;
    Ok(Some(action))
}

/// Keeps the verdict on the call's session, when the call connected to one.
async fn record_event(
    state: &AppState,
    task: &CallTaskRow,
    verdict: &Verdict,
    action: MachineAction,
) {
    let Some(session_id) = &task.session_id else {
        return;
    };
    let trace = state
        .sessions()
        .send(GetSession {
            developer_id: task.developer_id.clone(),
            lookup: SessionLookup::Id(session_id.clone()),
        })
        .await;
    let session = match trace {
        Ok(Ok(trace)) => trace.session,
        Ok(Err(e)) => {
            tracing::warn!(task = %task.id, session = %session_id, "no session for the machine-detection verdict: {e}");
            return;
        }
        Err(e) => {
            tracing::warn!(task = %task.id, "the session registry did not answer: {e}");
            return;
        }
    };
    let detail = json!({
        "answeredBy": verdict.answered_by.as_str(),
        "action": action.as_str(),
        "detectionMs": verdict.detection_ms,
    });
    state.sessions().do_send(RecordEvent(EventRow::call(
        &session,
        EVENT_MACHINE_DETECTION,
        Some(detail.to_string()),
    )));
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [AnsweredBy; 7] = [
        AnsweredBy::Human,
        AnsweredBy::MachineStart,
        AnsweredBy::MachineEndBeep,
        AnsweredBy::MachineEndSilence,
        AnsweredBy::MachineEndOther,
        AnsweredBy::Fax,
        AnsweredBy::Unknown,
    ];

    fn plan(mode: MachineDetection) -> VoicemailPlan {
        VoicemailPlan {
            mode,
            message: (mode == MachineDetection::Message).then(|| "Call us back.".to_string()),
        }
    }

    fn param_of(error: ApiError) -> Option<String> {
        match error {
            ApiError::Validation { param, .. } => param,
            other => panic!("not a validation error: {other:?}"),
        }
    }

    #[test]
    fn a_person_or_no_verdict_keeps_the_agent_talking() {
        for mode in [
            MachineDetection::Off,
            MachineDetection::Hangup,
            MachineDetection::Message,
        ] {
            for answered_by in [AnsweredBy::Human, AnsweredBy::Unknown] {
                assert_eq!(
                    plan(mode).decide(answered_by),
                    MachineAction::None,
                    "{mode:?} {answered_by:?}"
                );
            }
        }
    }

    #[test]
    fn a_machine_is_hung_up_on_or_left_the_message() {
        for answered_by in [
            AnsweredBy::MachineStart,
            AnsweredBy::MachineEndBeep,
            AnsweredBy::MachineEndSilence,
            AnsweredBy::MachineEndOther,
        ] {
            assert_eq!(
                plan(MachineDetection::Hangup).decide(answered_by),
                MachineAction::HungUp
            );
            assert_eq!(
                plan(MachineDetection::Message).decide(answered_by),
                MachineAction::LeftMessage
            );
            assert_eq!(
                plan(MachineDetection::Off).decide(answered_by),
                MachineAction::None
            );
        }
    }

    #[test]
    fn a_fax_is_hung_up_on_in_either_mode() {
        assert_eq!(
            plan(MachineDetection::Hangup).decide(AnsweredBy::Fax),
            MachineAction::HungUp
        );
        assert_eq!(
            plan(MachineDetection::Message).decide(AnsweredBy::Fax),
            MachineAction::HungUp
        );
    }

    #[test]
    fn a_message_plan_without_its_message_hangs_up() {
        let plan = VoicemailPlan {
            mode: MachineDetection::Message,
            message: None,
        };
        assert_eq!(
            plan.decide(AnsweredBy::MachineEndBeep),
            MachineAction::HungUp
        );
    }

    #[test]
    fn verdict_names_round_trip() {
        for answered_by in ALL {
            assert_eq!(AnsweredBy::parse(answered_by.as_str()), Some(answered_by));
        }
        assert_eq!(AnsweredBy::parse("machine"), None);
        assert_eq!(AnsweredBy::parse("Human"), None);
    }

    #[test]
    fn the_request_fields_are_validated_together() {
        assert_eq!(
            VoicemailPlan::from_request(None, None).unwrap(),
            VoicemailPlan::default()
        );
        assert_eq!(
            VoicemailPlan::from_request(Some(MachineDetection::Hangup), None).unwrap(),
            VoicemailPlan {
                mode: MachineDetection::Hangup,
                message: None
            }
        );
        assert_eq!(
            VoicemailPlan::from_request(
                Some(MachineDetection::Message),
                Some("  Hi, call back.  ")
            )
            .unwrap(),
            VoicemailPlan {
                mode: MachineDetection::Message,
                message: Some("Hi, call back.".into())
            }
        );
        let long = "a".repeat(MAX_VOICEMAIL_CHARS);
        let message = Some(MachineDetection::Message);
        assert!(VoicemailPlan::from_request(message, Some(&long)).is_ok());
        let too_long = "é".repeat(MAX_VOICEMAIL_CHARS + 1);
        let padded = format!(" {long}");
        for (mode, text) in [
            (message, Some(padded.as_str())),
            (message, None),
            (message, Some("  \n ")),
            (message, Some(too_long.as_str())),
            (Some(MachineDetection::Hangup), Some("Hi")),
            (Some(MachineDetection::Off), Some("Hi")),
            (None, Some("Hi")),
        ] {
            let error = VoicemailPlan::from_request(mode, text).unwrap_err();
            assert_eq!(
                param_of(error).as_deref(),
                Some("voicemailMessage"),
                "{mode:?} {text:?}"
            );
        }
    }

    #[test]
    fn a_verdict_is_read_from_twilios_parameters() {
        assert_eq!(
            Verdict::parse(Some("CA1"), Some("machine_end_beep"), Some("4210")).unwrap(),
            Verdict {
                call_sid: "CA1".into(),
                answered_by: AnsweredBy::MachineEndBeep,
                detection_ms: Some(4210)
            }
        );
        assert_eq!(
            Verdict::parse(Some("CA1"), Some("human"), None)
                .unwrap()
                .detection_ms,
            None
        );
        for (sid, answered_by, duration, param) in [
            (None, Some("human"), None, "CallSid"),
            (Some(" "), Some("human"), None, "CallSid"),
            (Some("CA1"), None, None, "AnsweredBy"),
            (Some("CA1"), Some("robot"), None, "AnsweredBy"),
            (
                Some("CA1"),
                Some("human"),
                Some("soon"),
                "MachineDetectionDuration",
            ),
            (
                Some("CA1"),
                Some("human"),
                Some("-5"),
                "MachineDetectionDuration",
            ),
        ] {
            let error = Verdict::parse(sid, answered_by, duration).unwrap_err();
            assert_eq!(
                param_of(error).as_deref(),
                Some(param),
                "{sid:?} {answered_by:?}"
            );
        }
    }
}
