//! Wall-clock time as the API shows it: Unix epoch milliseconds in storage, ISO 8601 UTC with
//! millisecond precision on the wire (`2026-11-22T17:00:00.123Z`).

use chrono::{DateTime, SecondsFormat, Utc};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// Formats epoch milliseconds as ISO 8601 UTC with milliseconds.
pub fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// [`iso`] for optional timestamps.
pub fn iso_opt(ms: Option<i64>) -> Option<String> {
    ms.map(iso)
}

pub const DAY_MS: i64 = 86_400_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_and_zulu() {
        assert_eq!(iso(1_795_021_200_123), "2026-11-18T17:00:00.123Z");
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
    }
}
