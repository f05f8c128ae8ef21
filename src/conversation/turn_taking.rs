//! An agent's own turn taking in voice sessions, read from its `metadata.turnTaking`:
//! - `endpointSilenceMs`: the silence that ends a caller's turn (100-10000, default 600); with
//!   smart detection, the fallback when the end-of-turn model gives no verdict in time;
//! - `bargeInMs`: how long the caller must talk over the agent to interrupt it (20-2000,
//!   default 200);
//! - `turnDetection`: `smart` (the end-of-turn model judges each pause) or `silence` (the
//!   timer alone); the server's `sessions.turn_detection` when absent;
//! - with `smart`: `smartPauseMs` (the pause that is put to the model, 60-2000, default 200),
//!   `completeThreshold` (the probability at or above which the turn ends at the pause, 0-1,
//!   default 0.5) and `incompleteSilenceMs` (how long a pause judged mid-sentence may last
//!   before the turn ends anyway, 100-10000, default 1500).
//!
//! Checked when the agent is written, applied when a session starts.

use serde_json::{Map, Value};
use switchboard_actors::session::{SmartTurn, TurnDetection, TurnPreferences};

/// The metadata key.
pub const KEY: &str = "turnTaking";

const ENDPOINT_SILENCE_MS: (&str, u64, u64) = ("endpointSilenceMs", 100, 10_000);
const BARGE_IN_MS: (&str, u64, u64) = ("bargeInMs", 20, 2_000);
const DETECTION: &str = "turnDetection";
const SMART_PAUSE_MS: (&str, u64, u64) = ("smartPauseMs", 60, 2_000);
const COMPLETE_THRESHOLD: &str = "completeThreshold";
const INCOMPLETE_SILENCE_MS: (&str, u64, u64) = ("incompleteSilenceMs", 100, 10_000);

const SETTINGS: [&str; 6] = [
    ENDPOINT_SILENCE_MS.0,
    BARGE_IN_MS.0,
    DETECTION,
    SMART_PAUSE_MS.0,
    COMPLETE_THRESHOLD,
    INCOMPLETE_SILENCE_MS.0,
];

/// Reads a turn-detection name: `smart` (with the default thresholds) or `silence`.
pub fn detection_named(name: &str) -> Option<TurnDetection> {
    match name {
        "smart" => Some(TurnDetection::Smart(SmartTurn::default())),
        "silence" => Some(TurnDetection::Silence),
        _ => None,
    }
}

/// Reads `metadata.turnTaking`; absent means the session's defaults. Anything else than an
/// object of the known keys, each within its range, is refused with the reason.
pub fn from_metadata(metadata: &Value) -> Result<TurnPreferences, String> {
    let Some(section) = metadata.get(KEY) else {
        return Ok(TurnPreferences::default());
    };
    let fields = section.as_object().ok_or(format!(
        "metadata.{KEY} must be an object of {}",
        SETTINGS.join(", ")
    ))?;
    if let Some(unknown) = fields.keys().find(|k| !SETTINGS.contains(&k.as_str())) {
        return Err(format!(
            "metadata.{KEY}.{unknown} is not a setting; use {}",
            SETTINGS.join(", ")
        ));
    }
    let detection = match fields.get(DETECTION) {
        None => None,
        Some(value) => Some(value.as_str().and_then(detection_named).ok_or(format!(
            "metadata.{KEY}.{DETECTION} must be \"smart\" or \"silence\""
        ))?),
    };
    let smart_keys = [
        SMART_PAUSE_MS.0,
        COMPLETE_THRESHOLD,
        INCOMPLETE_SILENCE_MS.0,
    ];
    let tuned = smart_keys.iter().find(|k| fields.contains_key(**k));
    let detection = match (detection, tuned) {
        (Some(TurnDetection::Silence), Some(key)) => {
            return Err(format!(
                "metadata.{KEY}.{key} only applies to {DETECTION} \"smart\""
            ))
        }
        (Some(TurnDetection::Smart(_)), _) | (None, Some(_)) => {
            let defaults = SmartTurn::default();
            Some(TurnDetection::Smart(SmartTurn {
                pause_ms: millis(fields, SMART_PAUSE_MS)?.unwrap_or(defaults.pause_ms),
                complete_threshold: threshold(fields)?.unwrap_or(defaults.complete_threshold),
                incomplete_silence_ms: millis(fields, INCOMPLETE_SILENCE_MS)?
                    .unwrap_or(defaults.incomplete_silence_ms),
            }))
        }
        (detection, None) => detection,
    };
    Ok(TurnPreferences {
        endpoint_silence_ms: millis(fields, ENDPOINT_SILENCE_MS)?,
        barge_in_sustain_ms: millis(fields, BARGE_IN_MS)?,
        detection,
        // A server setting, filled in when a call starts.
        early_recognition_ms: None,
    })
}

fn millis(
    fields: &Map<String, Value>,
    (name, min, max): (&str, u64, u64),
) -> Result<Option<u32>, String> {
    match fields.get(name) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|v| (min..=max).contains(v))
            .map(|v| Some(v as u32))
            .ok_or(format!(
                "metadata.{KEY}.{name} must be an integer number of milliseconds within {min}-{max}"
            )),
    }
}

fn threshold(fields: &Map<String, Value>) -> Result<Option<f32>, String> {
    match fields.get(COMPLETE_THRESHOLD) {
        None => Ok(None),
        Some(value) => value
            .as_f64()
            .filter(|v| (0.0..=1.0).contains(v))
            .map(|v| Some(v as f32))
            .ok_or(format!(
                "metadata.{KEY}.{COMPLETE_THRESHOLD} must be a number within 0-1"
            )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_are_read_within_their_ranges() {
        assert_eq!(
            from_metadata(&json!({})).unwrap(),
            TurnPreferences::default()
        );
        assert_eq!(
            from_metadata(&json!({"turnTaking": {"endpointSilenceMs": 1200}})).unwrap(),
            TurnPreferences {
                endpoint_silence_ms: Some(1200),
                ..TurnPreferences::default()
            }
        );
        assert_eq!(
            from_metadata(&json!({"turnTaking": {"endpointSilenceMs": 100, "bargeInMs": 2000}}))
                .unwrap(),
            TurnPreferences {
                endpoint_silence_ms: Some(100),
                barge_in_sustain_ms: Some(2000),
                detection: None,
                early_recognition_ms: None,
            }
        );
    }

    #[test]
    fn turn_detection_is_read_with_its_thresholds() {
        let read = |v: Value| {
            from_metadata(&json!({ "turnTaking": v }))
                .unwrap()
                .detection
        };
        assert_eq!(read(json!({})), None);
        assert_eq!(
            read(json!({"turnDetection": "silence"})),
            Some(TurnDetection::Silence)
        );
        assert_eq!(
            read(json!({"turnDetection": "smart"})),
            Some(TurnDetection::Smart(SmartTurn::default()))
        );
        assert_eq!(
            read(
                json!({"turnDetection": "smart", "smartPauseMs": 300, "completeThreshold": 0.7,
                "incompleteSilenceMs": 2000})
            ),
            Some(TurnDetection::Smart(SmartTurn {
                pause_ms: 300,
                complete_threshold: 0.7,
                incomplete_silence_ms: 2000
            }))
        );
        // A threshold alone means smart detection.
        assert_eq!(
            read(json!({"completeThreshold": 0.8})),
            Some(TurnDetection::Smart(SmartTurn {
                complete_threshold: 0.8,
                ..SmartTurn::default()
            }))
        );
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        for (metadata, reason) in [
            (json!({"turnTaking": 600}), "must be an object"),
            (
                json!({"turnTaking": {"endpointSilenceMs": 99}}),
                "within 100-10000",
            ),
            (
                json!({"turnTaking": {"endpointSilenceMs": 10_001}}),
                "within 100-10000",
            ),
            (
                json!({"turnTaking": {"endpointSilenceMs": 600.5}}),
                "integer",
            ),
            (
                json!({"turnTaking": {"endpointSilenceMs": "600"}}),
                "integer",
            ),
            (json!({"turnTaking": {"bargeInMs": 19}}), "within 20-2000"),
            (json!({"turnTaking": {"bargeInMs": -1}}), "within 20-2000"),
            (
                json!({"turnTaking": {"endpointSilence": 600}}),
                "is not a setting",
            ),
            (
                json!({"turnTaking": {"turnDetection": "semantic"}}),
                "must be \"smart\" or \"silence\"",
            ),
            (
                json!({"turnTaking": {"turnDetection": "silence", "smartPauseMs": 200}}),
                "only applies to turnDetection \"smart\"",
            ),
            (
                json!({"turnTaking": {"smartPauseMs": 50}}),
                "within 60-2000",
            ),
            (
                json!({"turnTaking": {"completeThreshold": 1.5}}),
                "within 0-1",
            ),
            (
                json!({"turnTaking": {"incompleteSilenceMs": 99}}),
                "within 100-10000",
            ),
        ] {
            let error = from_metadata(&metadata).unwrap_err();
            assert!(error.contains(reason), "{metadata}: {error}");
            assert!(error.starts_with("metadata.turnTaking"), "{error}");
        }
    }
}
