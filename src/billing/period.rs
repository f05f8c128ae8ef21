//! The billing clock and periods. A period is a UTC calendar month (`2026-11`). The clock is
//! injectable so that a rollover can be rehearsed (`metering.clock_offset_seconds`).

use chrono::{DateTime, Datelike, NaiveDate, Utc};

use crate::config::TierConfig;
use crate::store::usage::UsageRow;

/// Where "now" comes from for billing.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock, shifted by a fixed offset (0 in production).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock {
    pub offset_ms: i64,
}

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        Utc::now().timestamp_millis() + self.offset_ms
    }
}

/// The period containing `ms`, e.g. `2026-11`.
pub fn period_of(ms: i64) -> String {
    let at = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
    format!("{:04}-{:02}", at.year(), at.month())
}

fn year_month(period: &str) -> Option<(i32, u32)> {
    let (year, month) = period.split_once('-')?;
    let (year, month) = (year.parse().ok()?, month.parse().ok()?);
    (1..=12).contains(&month).then_some((year, month))
}

/// The period before `period`.
pub fn previous(period: &str) -> String {
    match year_month(period) {
        Some((year, 1)) => format!("{:04}-12", year - 1),
        Some((year, month)) => format!("{year:04}-{:02}", month - 1),
        None => period.to_string(),
    }
}

/// When `period` ends (the first millisecond of the next one).
pub fn end_ms(period: &str) -> i64 {
    let Some((year, month)) = year_month(period) else {
        return 0;
    };
    let (year, month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(year, month, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map_or(0, |d| d.and_utc().timestamp_millis())
}

/// The credits of the previous period that carry into the next one under `tier`: what was
/// left of the previous period's limit, at most `carryover_months` months of allowance.
/// Credits are spent oldest first, so with one month of carryover only the previous month's
/// own unused allowance carries; earlier carryover has expired.
pub fn carryover(tier: &TierConfig, previous: Option<&UsageRow>) -> f64 {
    if tier.carryover_months == 0 {
        return 0.0;
    }
    let Some(previous) = previous else {
        return 0.0;
    };
    let unused = tier.monthly_credits + previous.carryover - previous.credits_used();
    unused
        .min(tier.monthly_credits * f64::from(tier.carryover_months))
        .max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(carryover_months: u32) -> TierConfig {
        TierConfig {
            display: "Pro".into(),
            monthly_credits: 100.0,
            overage_rate: 0.0,
            carryover_months,
            price_id: String::new(),
            rate_limit_requests: 0,
            max_concurrent_sessions: 1,
        }
    }

    #[test]
    fn periods_are_calendar_months() {
        assert_eq!(period_of(1_795_021_200_123), "2026-11");
        assert_eq!(previous("2026-01"), "2025-12");
        assert_eq!(previous("2026-11"), "2026-10");
        assert_eq!(period_of(end_ms("2026-12")), "2027-01");
        assert_eq!(period_of(end_ms("2026-11") - 1), "2026-11");
    }

    #[test]
    fn unused_credits_carry_over_up_to_the_tier_months() {
        let mut last = UsageRow::empty(&"d".into(), "2026-10");
        last.credits_tts = 30.0;
        assert_eq!(carryover(&tier(0), Some(&last)), 0.0);
        assert_eq!(carryover(&tier(1), Some(&last)), 70.0);
        assert_eq!(carryover(&tier(1), None), 0.0);
        // Last month's own carryover (40) was spent first; 100 unused is capped at one month.
        last.carryover = 40.0;
        assert_eq!(carryover(&tier(1), Some(&last)), 100.0);
        assert_eq!(carryover(&tier(2), Some(&last)), 110.0);
        last.credits_tts = 500.0;
        assert_eq!(carryover(&tier(1), Some(&last)), 0.0);
    }
}
