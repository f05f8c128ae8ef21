//! Request validation helpers: every documented limit is enforced at the edge, once, with a
//! `validation_error` naming the field.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Largest `metadata` object accepted, serialized, in bytes.
pub const MAX_METADATA_BYTES: usize = 65_536;

/// A string of `min..=max` characters (Unicode scalar values, not bytes).
pub fn length(param: &str, value: &str, min: usize, max: usize) -> Result<(), ApiError> {
    if value.contains('\0') {
        return Err(ApiError::invalid(
            param,
            format!("{param} must not contain NUL characters"),
        ));
    }
    let count = value.chars().count();
    if count < min || count > max {
        let rule = if min == 0 {
            format!("at most {max} characters")
        } else {
            format!("{min}-{max} characters")
        };
        return Err(ApiError::invalid(
            param,
            format!("{param} must be {rule} (got {count})"),
        ));
    }
    Ok(())
}

/// A required, non-blank string of `min..=max` characters.
pub fn required_text(param: &str, value: Option<&str>, max: usize) -> Result<(), ApiError> {
    let value = value.ok_or_else(|| ApiError::invalid(param, format!("{param} is required")))?;
    if value.trim().is_empty() {
        return Err(ApiError::invalid(
            param,
            format!("{param} must not be blank"),
        ));
    }
    length(param, value, 1, max)
}

/// An optional string of at most `max` characters.
pub fn optional_text(param: &str, value: Option<&str>, max: usize) -> Result<(), ApiError> {
    value.map_or(Ok(()), |value| length(param, value, 0, max))
}

pub fn number_in(param: &str, value: f64, min: f64, max: f64) -> Result<(), ApiError> {
    if !value.is_finite() || value < min || value > max {
        return Err(ApiError::invalid(
            param,
            format!("{param} must be between {min} and {max}"),
        ));
    }
    Ok(())
}

pub fn integer_in(param: &str, value: i64, min: i64, max: i64) -> Result<(), ApiError> {
    if value < min || value > max {
        return Err(ApiError::invalid(
            param,
            format!("{param} must be an integer from {min} to {max}"),
        ));
    }
    Ok(())
}

/// A required phone number in E.164 form (`+14155550123`), as given.
pub fn e164(param: &str, value: Option<&str>) -> Result<String, ApiError> {
    let value = value.ok_or_else(|| ApiError::invalid(param, format!("{param} is required")))?;
    if !crate::telephony::is_e164(value) {
        return Err(ApiError::invalid(
            param,
            format!("{param} must be in E.164 form, e.g. +14155550123"),
        ));
    }
    Ok(value.to_string())
}

pub fn one_of(param: &str, value: &str, allowed: &[&str]) -> Result<(), ApiError> {
    if !allowed.contains(&value) {
        return Err(ApiError::invalid(
            param,
            format!("{param} '{value}' is not one of: {}", allowed.join(", ")),
        ));
    }
    Ok(())
}

/// An identifier a client chooses: 1-`max` characters of letters, digits, `_` and `-`, so it
/// is safe in a URL path as it is.
pub fn identifier(param: &str, value: &str, max: usize) -> Result<(), ApiError> {
    length(param, value, 1, max)?;
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ApiError::invalid(
            param,
            format!("{param} may contain only letters, digits, '_' and '-'"),
        ));
    }
    Ok(())
}

/// A `metadata` object of at most [`MAX_METADATA_BYTES`], serialized for storage.
pub fn metadata(param: &str, value: Option<&Map<String, Value>>) -> Result<String, ApiError> {
    let text = match value {
        Some(map) => {
            serde_json::to_string(map).map_err(|e| ApiError::invalid(param, e.to_string()))?
        }
        None => "{}".to_string(),
    };
    if text.len() > MAX_METADATA_BYTES {
        return Err(ApiError::invalid(
            param,
            format!("{param} must serialize to at most {MAX_METADATA_BYTES} bytes"),
        ));
    }
    Ok(text)
}

/// Deserializes a field that may be absent (outer `None`), `null` (`Some(None)`) or a value.
pub fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A field that may be absent but, when present, must not be `null`.
pub fn not_null<T>(param: &str, value: Option<Option<T>>) -> Result<Option<T>, ApiError> {
    match value {
        None => Ok(None),
        Some(None) => Err(ApiError::invalid(param, format!("{param} cannot be null"))),
        Some(Some(value)) => Ok(Some(value)),
    }
}

pub use crate::store::stored_json;
