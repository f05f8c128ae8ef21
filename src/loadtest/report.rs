//! What the callers measured: one [`SessionReport`] per caller, live counters for the progress
//! line, and the [`Summary`] over all of them (percentiles, failures, late frames), printed for
//! people or as JSON.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Counters every caller updates as it goes, read by the progress line.
#[derive(Debug, Default)]
pub struct Live {
    pub connected: AtomicU64,
    pub failed: AtomicU64,
    pub finished: AtomicU64,
    pub turns: AtomicU64,
    pub answered: AtomicU64,
    pub errors: AtomicU64,
}

impl Live {
    /// One line for the progress bar.
    pub fn line(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let active = get(&self.connected) - get(&self.finished).min(get(&self.connected));
        format!(
            "active {active} · connected {} · failed {} · turns {} · answered {} · errors {}",
            get(&self.connected),
            get(&self.failed),
            get(&self.turns),
            get(&self.answered),
            get(&self.errors)
        )
    }
}

/// One barge-in the server answered with a clear, as the caller measured it.
#[derive(Debug, Clone, Copy)]
pub struct Cleared {
    /// Start of talking over the agent (when its first frame was due) to the server's clear.
    pub after_ms: f64,
    /// How far behind its own 20 ms schedule the caller had sent that speech at worst before
    /// the clear arrived: the load generator's share of `after_ms`.
    pub caller_lag_ms: f64,
    /// How long the clear waited in the caller's socket before the caller read it (from the
    /// kernel's receive timestamp; 0 where reads are not stamped): the load generator's
    /// other share of `after_ms`.
    pub read_lag_ms: f64,
}

/// One caller's measurements.
#[derive(Debug, Default)]
pub struct SessionReport {
    /// The socket opened.
    pub connected: bool,
    /// The caller stayed until its time was up.
    pub completed: bool,
    /// Why it did not.
    pub failure: Option<String>,
    /// Session start (the `start` message or the socket opening) to the first agent audio.
    pub first_response_ms: Option<f64>,
    /// Utterances spoken.
    pub turns: u64,
    /// Utterances that got no audio back in time.
    pub unanswered: u64,
    /// End of the caller's speech to the first audio of the answer.
    pub turn_latencies_ms: Vec<f64>,
    /// Times the caller talked over the agent.
    pub barge_ins: u64,
    /// Each barge-in the server answered with a clear.
    pub clears: Vec<Cleared>,
    /// Agent audio messages received.
    pub frames: u64,
    /// Of those, the ones that arrived more than [`super::LATE_FRAME_MS`] after their playback
    /// slot.
    pub late_frames: u64,
    /// The latest any frame was for its slot.
    pub max_late_ms: f64,
    /// Error events from the server.
    pub server_errors: u64,
    /// The last of them.
    pub last_error: Option<String>,
    /// The server's own turn overhead (its latency minus engine and endpoint time), where the
    /// transport reports it.
    pub platform_ms: Vec<f64>,
    /// How far the caller's own audio fell behind real time at worst.
    pub send_lag_ms: f64,
}

impl SessionReport {
    /// Records why the caller's session ended early.
    pub fn fail(&mut self, why: &str) {
        self.failure.get_or_insert_with(|| why.to_string());
    }
}

/// Percentiles of a set of measurements, in ms.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles; `None` for no values.
    pub fn of(mut values: Vec<f64>) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let index = ((p / 100.0) * values.len() as f64).ceil() as usize;
            round(values[index.clamp(1, values.len()) - 1])
        };
        Some(Self {
            count: values.len(),
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: round(values[values.len() - 1]),
        })
    }
}

fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

/// Session counts.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sessions {
    pub target: u64,
    pub connected: u64,
    pub completed: u64,
    pub failed: u64,
}

/// Turn counts.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Turns {
    pub spoken: u64,
    pub answered: u64,
    pub unanswered: u64,
}

/// Barge-ins.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BargeIns {
    pub count: u64,
    pub cleared: u64,
    pub clear_ms: Option<Percentiles>,
    /// How far behind its schedule each caller sent its speech over the answer, at worst,
    /// before the clear came: the load generator's own share of `clear_ms`.
    pub caller_lag_ms: Option<Percentiles>,
    /// Each clear's latency less that lag: the server's share, with the network both ways and
    /// the callers' lateness in reading the clear.
    pub clear_less_caller_lag_ms: Option<Percentiles>,
    /// How long each clear waited in the caller's socket before the caller read it.
    pub caller_read_lag_ms: Option<Percentiles>,
    /// Each clear's latency to its arrival at the caller's socket, less the callers' lag in
    /// sending the speech: the server's share with the network both ways, and nothing of the
    /// load generator's.
    pub clear_arrived_less_caller_lag_ms: Option<Percentiles>,
}

/// Agent audio as the callers received it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Frames {
    pub received: u64,
    pub late: u64,
    pub max_late_ms: f64,
}

/// The whole run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub transport: String,
    pub duration_seconds: f64,
    pub sessions: Sessions,
    /// Failure reasons with how many sessions each ended.
    pub failures: BTreeMap<String, u64>,
    pub turns: Turns,
    pub first_response_ms: Option<Percentiles>,
    pub turn_latency_ms: Option<Percentiles>,
    pub platform_overhead_ms: Option<Percentiles>,
    pub barge_in: BargeIns,
    pub frames: Frames,
    pub server_errors: u64,
    pub caller_send_lag_max_ms: f64,
}

impl Summary {
    /// Folds the callers' reports together.
    pub fn of(
        transport: &str,
        target: u64,
        duration_seconds: f64,
        reports: &[SessionReport],
    ) -> Self {
        let sum = |f: fn(&SessionReport) -> u64| reports.iter().map(f).sum::<u64>();
        let all = |f: fn(&SessionReport) -> &Vec<f64>| {
            Percentiles::of(reports.iter().flat_map(|r| f(r).iter().copied()).collect())
        };
        let of_clears = |f: fn(&Cleared) -> f64| {
            Percentiles::of(
                reports
                    .iter()
                    .flat_map(|r| r.clears.iter().map(f))
                    .collect(),
            )
        };
        let mut failures = BTreeMap::new();
        for failure in reports.iter().filter_map(|r| r.failure.as_ref()) {
            *failures.entry(failure.clone()).or_insert(0) += 1;
        }
        let answered = sum(|r| r.turn_latencies_ms.len() as u64);
        Self {
            transport: transport.to_string(),
            duration_seconds: round(duration_seconds),
            sessions: Sessions {
                target,
                connected: sum(|r| r.connected as u64),
                completed: sum(|r| r.completed as u64),
                failed: target - sum(|r| r.completed as u64),
            },
            failures,
            turns: Turns {
                spoken: sum(|r| r.turns),
                answered,
                unanswered: sum(|r| r.unanswered),
            },
            first_response_ms: Percentiles::of(
                reports.iter().filter_map(|r| r.first_response_ms).collect(),
            ),
            turn_latency_ms: all(|r| &r.turn_latencies_ms),
            platform_overhead_ms: all(|r| &r.platform_ms),
            barge_in: BargeIns {
                count: sum(|r| r.barge_ins),
                cleared: sum(|r| r.clears.len() as u64),
                clear_ms: of_clears(|c| c.after_ms),
                caller_lag_ms: of_clears(|c| c.caller_lag_ms),
                clear_less_caller_lag_ms: of_clears(|c| c.after_ms - c.caller_lag_ms),
                caller_read_lag_ms: of_clears(|c| c.read_lag_ms),
                clear_arrived_less_caller_lag_ms: of_clears(|c| {
                    c.after_ms - c.read_lag_ms - c.caller_lag_ms
                }),
            },
            frames: Frames {
                received: sum(|r| r.frames),
                late: sum(|r| r.late_frames),
                max_late_ms: round(reports.iter().map(|r| r.max_late_ms).fold(0.0, f64::max)),
            },
            server_errors: sum(|r| r.server_errors),
            caller_send_lag_max_ms: round(
                reports.iter().map(|r| r.send_lag_ms).fold(0.0, f64::max),
            ),
        }
    }

    /// The summary for people.
    pub fn text(&self) -> String {
        let p = |p: &Option<Percentiles>| match p {
            Some(p) => format!(
                "p50 {} ms · p90 {} ms · p99 {} ms · max {} ms ({} samples)",
                p.p50, p.p90, p.p99, p.max, p.count
            ),
            None => "none".to_string(),
        };
        let mut out = format!(
            "{} sessions over {} for {} s\n\
             sessions        {} connected, {} completed, {} failed\n\
             turns           {} spoken, {} answered, {} unanswered\n\
             first response  {}\n\
             turn latency    {}\n\
             overhead        {}\n\
             barge-in        {} tried, {} cleared; clear after {}\n\
             \x20               of that, the callers' own lag sending the speech {}\n\
             \x20               clear after, less that lag {}\n\
             \x20               the callers' lateness reading the clear {}\n\
             \x20               clear's arrival at the caller's socket, less both lags {}\n\
             frames          {} received, {} late by > {} ms (worst {} ms)\n\
             server errors   {}\n\
             caller lag      {} ms at worst (the load generator's own timing)\n",
            self.sessions.target,
            self.transport,
            self.duration_seconds,
            self.sessions.connected,
            self.sessions.completed,
            self.sessions.failed,
            self.turns.spoken,
            self.turns.answered,
            self.turns.unanswered,
            p(&self.first_response_ms),
            p(&self.turn_latency_ms),
            p(&self.platform_overhead_ms),
            self.barge_in.count,
            self.barge_in.cleared,
            p(&self.barge_in.clear_ms),
            p(&self.barge_in.caller_lag_ms),
            p(&self.barge_in.clear_less_caller_lag_ms),
            p(&self.barge_in.caller_read_lag_ms),
            p(&self.barge_in.clear_arrived_less_caller_lag_ms),
            self.frames.received,
            self.frames.late,
            super::LATE_FRAME_MS,
            self.frames.max_late_ms,
            self.server_errors,
            self.caller_send_lag_max_ms,
        );
        for (why, count) in &self.failures {
            out.push_str(&format!("failure         {count} × {why}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let p = Percentiles::of((1..=100).map(f64::from).collect()).unwrap();
        assert_eq!(
            (p.p50, p.p90, p.p99, p.max, p.count),
            (50.0, 90.0, 99.0, 100.0, 100)
        );
        let one = Percentiles::of(vec![7.0]).unwrap();
        assert_eq!((one.p50, one.p99), (7.0, 7.0));
        assert!(Percentiles::of(Vec::new()).is_none());
    }

    #[test]
    fn failures_are_counted_by_reason() {
        let a = SessionReport {
            connected: true,
            completed: true,
            turn_latencies_ms: vec![700.0, 800.0],
            turns: 2,
            ..Default::default()
        };
        let mut b = SessionReport::default();
        b.fail("connect: refused");
        b.fail("a second reason does not replace the first");
        let summary = Summary::of("twilio", 2, 10.0, &[a, b]);
        assert_eq!(summary.sessions.completed, 1);
        assert_eq!(summary.sessions.failed, 1);
        assert_eq!(summary.failures["connect: refused"], 1);
        assert_eq!(summary.turns.answered, 2);
        assert_eq!(summary.turn_latency_ms.unwrap().p50, 700.0);
    }
}
