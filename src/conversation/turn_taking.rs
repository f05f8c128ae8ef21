//! An agent's own turn taking in voice sessions, read from its `metadata.turnTaking`:
//! `endpointSilenceMs` (the silence that ends a caller's turn, 100-10000, default 600) and
//! `bargeInMs` (how long the caller must talk over the agent to interrupt it, 20-2000,
//! default 200). Checked when the agent is written, applied when a session starts.

use serde_json::Value;
use switchboard_actors::session::TurnPreferences;

/// The metadata key.
pub const KEY: &str = "turnTaking";

const ENDPOINT_SILENCE_MS: (&str, u64, u64) = ("endpointSilenceMs", 100, 10_000);
const BARGE_IN_MS: (&str, u64, u64) = ("bargeInMs", 20, 2_000);

/// Reads `metadata.turnTaking`; absent means the session's defaults. Anything else than an
/// object of the two known keys, each an integer in its range, is refused with the reason.
pub fn from_metadata(metadata: &Value) -> Result<TurnPreferences, String> {
    let Some(section) = metadata.get(KEY) else {
        return Ok(TurnPreferences::default());
    };
    let fields = section.as_object().ok_or(format!(
        "metadata.{KEY} must be an object with {} and/or {}",
        ENDPOINT_SILENCE_MS.0, BARGE_IN_MS.0
    ))?;
    if let Some(unknown) = fields
        .keys()
        .find(|k| *k != ENDPOINT_SILENCE_MS.0 && *k != BARGE_IN_MS.0)
    {
        return Err(format!(
            "metadata.{KEY}.{unknown} is not a setting; use {} or {}",
            ENDPOINT_SILENCE_MS.0, BARGE_IN_MS.0
        ));
    }
    let millis = |(name, min, max): (&str, u64, u64)| -> Result<Option<u32>, String> {
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
    };
    Ok(TurnPreferences {
        endpoint_silence_ms: millis(ENDPOINT_SILENCE_MS)?,
        barge_in_sustain_ms: millis(BARGE_IN_MS)?,
    })
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
                barge_in_sustain_ms: None
            }
        );
        assert_eq!(
            from_metadata(&json!({"turnTaking": {"endpointSilenceMs": 100, "bargeInMs": 2000}}))
                .unwrap(),
            TurnPreferences {
                endpoint_silence_ms: Some(100),
                barge_in_sustain_ms: Some(2000)
            }
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
        ] {
            let error = from_metadata(&metadata).unwrap_err();
            assert!(error.contains(reason), "{metadata}: {error}");
            assert!(error.starts_with("metadata.turnTaking"), "{error}");
        }
    }
}
