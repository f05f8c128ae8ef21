//! Interruption quality over many sessions: how fast barge-ins are detected and stop the
//! agent, how many agent words bleed through over the caller, and how often an interruption
//! was a false one (no words recognised in the interrupting speech). Only interruptions the
//! session detected count; those a client asked for (`interrupt`, a typed turn) have no
//! latency to measure and are counted apart.

use std::collections::HashSet;

use serde::Serialize;
use utoipa::ToSchema;

use crate::registry::sessions::InterruptionData;

/// The aggregates `GET /v1/observability/sessions/interruption-quality` answers.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InterruptionQuality {
    /// Sessions in the range (with or without interruptions).
    pub sessions: i64,
    /// Interruptions the session detected (barge-ins).
    pub interruptions: usize,
    /// Interruptions a client asked for; not in the figures below.
    pub requested_interruptions: usize,
    /// Caller onset to decision, ms; `null` without interruptions.
    pub detection_latency_p50_ms: Option<f64>,
    pub detection_latency_p95_ms: Option<f64>,
    /// Decision to agent audio cleared, ms.
    pub stop_latency_p50_ms: Option<f64>,
    pub stop_latency_p95_ms: Option<f64>,
    /// Agent words played over the caller per interruption.
    pub bleed_through_words_mean: Option<f64>,
    pub bleed_through_words_p95: Option<f64>,
    /// Interruptions whose speech held no recognisable words.
    pub false_barge_ins: usize,
    /// `falseBargeIns / interruptions`; `null` without interruptions.
    pub false_barge_in_rate: Option<f64>,
}

/// The `q` quantile (0-1) of `values`, by linear interpolation between the closest ranks
/// (the method spreadsheets and NumPy use by default).
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64))
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Rounds to two decimals, as the API shows figures.
fn round(value: Option<f64>) -> Option<f64> {
    value.map(|v| (v * 100.0).round() / 100.0)
}

pub fn aggregate(data: &InterruptionData) -> InterruptionQuality {
    let false_ones: HashSet<(&str, i32)> = data
        .false_barge_ins
        .iter()
        .map(|(session, turn)| (session.as_str(), *turn))
        .collect();
    let detected: Vec<_> = data
        .interruptions
        .iter()
        .filter(|i| i.requested == Some(false))
        .collect();
    let requested = data
        .interruptions
        .iter()
        .filter(|i| i.requested == Some(true))
        .count();
    let detection: Vec<f64> = detected
        .iter()
        .filter_map(|i| i.detection_ms)
        .map(|v| v as f64)
        .collect();
    let stop: Vec<f64> = detected
        .iter()
        .filter_map(|i| i.stop_ms)
        .map(|v| v as f64)
        .collect();
    let bleed: Vec<f64> = detected
        .iter()
        .map(|i| {
            i.bleed_through
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .count() as f64
        })
        .collect();
    let false_barge_ins = detected
        .iter()
        .filter(|i| false_ones.contains(&(i.session_id.as_str(), i.turn_index)))
        .count();
    InterruptionQuality {
        sessions: data.sessions,
        interruptions: detected.len(),
        requested_interruptions: requested,
        detection_latency_p50_ms: round(percentile(&detection, 0.5)),
        detection_latency_p95_ms: round(percentile(&detection, 0.95)),
        stop_latency_p50_ms: round(percentile(&stop, 0.5)),
        stop_latency_p95_ms: round(percentile(&stop, 0.95)),
        bleed_through_words_mean: round(mean(&bleed)),
        bleed_through_words_p95: round(percentile(&bleed, 0.95)),
        false_barge_ins,
        false_barge_in_rate: round(
            (!detected.is_empty()).then(|| false_barge_ins as f64 / detected.len() as f64),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sessions::InterruptionRow;

    fn row(session: &str, turn: i32, detection: i64, stop: i64, bleed: &str) -> InterruptionRow {
        InterruptionRow {
            session_id: session.into(),
            turn_index: turn,
            detection_ms: Some(detection),
            stop_ms: Some(stop),
            bleed_through: Some(bleed.into()),
            requested: Some(false),
        }
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), Some(5.5));
        assert_eq!(round(percentile(&values, 0.95)), Some(9.55));
        assert_eq!(percentile(&[7.0], 0.95), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn aggregates_detected_interruptions_and_counts_false_ones() {
        let mut asked = row("s2", 5, 0, 0, "");
        asked.requested = Some(true);
        let data = InterruptionData {
            sessions: 3,
            interruptions: vec![
                row("s1", 1, 200, 2, "well"),
                row("s1", 3, 220, 4, "our opening hours"),
                row("s2", 1, 260, 6, ""),
                row("s2", 3, 300, 8, "one two three four five"),
                asked,
            ],
            // s2's turn 1 was false; s1's turn 1 of another session id is not.
            false_barge_ins: vec![("s2".into(), 1), ("s9".into(), 1)],
        };
        let q = aggregate(&data);
        assert_eq!(q.sessions, 3);
        assert_eq!(q.interruptions, 4);
        assert_eq!(q.requested_interruptions, 1);
        assert_eq!(q.detection_latency_p50_ms, Some(240.0));
        assert_eq!(q.detection_latency_p95_ms, Some(294.0));
        assert_eq!(q.stop_latency_p50_ms, Some(5.0));
        assert_eq!(q.bleed_through_words_mean, Some(2.25));
        assert_eq!(q.bleed_through_words_p95, Some(4.7));
        assert_eq!(q.false_barge_ins, 1);
        assert_eq!(q.false_barge_in_rate, Some(0.25));
    }

    #[test]
    fn no_interruptions_gives_nulls_not_zeros() {
        let q = aggregate(&InterruptionData {
            sessions: 2,
            interruptions: vec![],
            false_barge_ins: vec![],
        });
        assert_eq!(q.interruptions, 0);
        assert_eq!(q.detection_latency_p50_ms, None);
        assert_eq!(q.false_barge_in_rate, None);
    }
}
