//! Prometheus metrics of the service, served at `GET /metrics` in the text exposition format.
//! One registry per process: sessions report into it through the recorder, vendor adapters
//! when they fail, and the inference worker pool's gauges, the session actors alive and the
//! process's own figures (`process_resident_memory_bytes`, CPU seconds, threads, open files)
//! are read at scrape time. No metric carries a developer, agent or session id, so a scrape
//! shows no customer's data.

use std::sync::{LazyLock, Mutex};

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

use switchboard_actors::session::{frames_sent_in_process, live_actors_in_process, SENT_LATE_MS};

use crate::engines::pool::PoolStats;

/// Latency buckets in seconds: 10 ms to 10 s, dense around the 0.9 s / 1.5 s targets.
const LATENCY_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0,
];

/// Every metric the service exports.
pub struct Metrics {
    registry: Registry,
    /// Live sessions by transport (`twilio`, `direct`).
    pub sessions_active: IntGaugeVec,
    /// Ended sessions by transport and status (`completed`, `failed`).
    pub sessions_ended: IntCounterVec,
    /// Sessions refused before they connected, by transport and reason (`busy`: the tier's
    /// concurrent sessions were all in use, and the caller was told so).
    pub sessions_rejected: IntCounterVec,
    /// Recorded turns by speaker and outcome (`completed`, `interrupted`, `failed`).
    pub turns: IntCounterVec,
    /// Agent reply latency by stage (`endpoint`, `stt`, `llm`, `tool`, `tts`, `platform`) and
    /// in total (`turn`: end of caller speech to first agent audio).
    pub stage_latency: HistogramVec,
    /// Barge-ins: caller onset to decision.
    pub barge_in_detection: Histogram,
    /// Barge-ins: decision to agent audio cleared.
    pub barge_in_stop: Histogram,
    /// Failed vendor calls by provider and kind (`timeout`, `upstream`, `invalid_input`, ...).
    pub vendor_errors: IntCounterVec,
    /// PostgreSQL only: 1 while this node listens for other nodes' changes, 0 while it falls
    /// back to polling and short cache lifetimes.
    pub change_listener_up: IntGauge,
    /// Change notifications received from the database, by kind (`key`, `agent`,
    /// `collection`, `documents`, `developer`).
    pub change_notifications: IntCounterVec,
    /// 1 while the node drains before stopping (new sessions refused).
    pub draining: IntGauge,
    /// Session record writes (turns, tool calls, events, ends) waiting for the database.
    pub session_record_writes_pending: IntGauge,
    /// Session record writes dropped because too many were waiting, by kind (`turn`,
    /// `tool_calls`, `event`; a session's end is never dropped).
    pub session_record_writes_dropped: IntCounterVec,
    queue_depth: IntGauge,
    live_queue_depth: IntGauge,
    queue_limit: IntGauge,
    workers_busy: IntGauge,
    workers: IntGauge,
    session_actors: IntGauge,
    frames_sent: IntCounter,
    frames_sent_late: IntCounter,
    log_lines_lost: IntCounter,
    registry_restarts: IntCounterVec,
    /// The process-wide counts are brought up to date one scrape at a time.
    render: Mutex<()>,
}

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("a valid metric definition")
}

/// Brings `counter` up to `total`, counted elsewhere since the process started.
fn catch_up(counter: &IntCounter, total: u64) {
    counter.inc_by(total.saturating_sub(counter.get()));
}

fn gauge(name: &str, help: &str) -> IntGauge {
    IntGauge::new(name, help).expect("a valid metric definition")
}

fn seconds(name: &str, help: &str) -> HistogramOpts {
    HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec())
}

impl Metrics {
    fn new() -> Metrics {
        let metrics = Metrics {
            registry: Registry::new(),
            sessions_active: IntGaugeVec::new(
                Opts::new(
                    "switchboard_sessions_active",
                    "Real-time sessions running now.",
                ),
                &["transport"],
            )
            .expect("a valid metric definition"),
            sessions_ended: counter(
                "switchboard_sessions_ended_total",
                "Real-time sessions ended.",
                &["transport", "status"],
            ),
            sessions_rejected: counter(
                "switchboard_sessions_rejected_total",
                "Real-time sessions refused before they connected.",
                &["transport", "reason"],
            ),
            turns: counter(
                "switchboard_turns_total",
                "Conversation turns recorded.",
                &["speaker", "outcome"],
            ),
            stage_latency: HistogramVec::new(
                seconds(
                    "switchboard_stage_latency_seconds",
                    "Agent reply latency by stage; stage=\"turn\" is the whole of it (end of caller speech to first agent audio).",
                ),
                &["stage"],
            )
            .expect("a valid metric definition"),
            barge_in_detection: Histogram::with_opts(seconds(
                "switchboard_barge_in_detection_seconds",
                "Caller speech onset to the interruption decision.",
            ))
            .expect("a valid metric definition"),
            barge_in_stop: Histogram::with_opts(seconds(
                "switchboard_barge_in_stop_seconds",
                "Interruption decision to the agent's audio cleared.",
            ))
            .expect("a valid metric definition"),
            vendor_errors: counter(
                "switchboard_vendor_errors_total",
                "Failed calls to outside vendors.",
                &["provider", "kind"],
            ),
            change_listener_up: gauge(
                "switchboard_change_listener_up",
                "1 while this node listens for other nodes' changes (PostgreSQL LISTEN/NOTIFY).",
            ),
            change_notifications: counter(
                "switchboard_change_notifications_total",
                "Change notifications received from the database.",
                &["kind"],
            ),
            draining: gauge(
                "switchboard_draining",
                "1 while the node drains before stopping: new real-time sessions are refused.",
            ),
            session_record_writes_pending: gauge(
                "switchboard_session_record_writes_pending",
                "Session record writes (turns, tool calls, events, ends) waiting for the database.",
            ),
            session_record_writes_dropped: counter(
                "switchboard_session_record_writes_dropped_total",
                "Session record writes dropped because too many were waiting for the database (a session's end is never dropped).",
                &["kind"],
            ),
            queue_depth: gauge(
                "switchboard_engine_queue_depth",
                "Inference jobs waiting for a worker of the embedded engines' pool.",
            ),
            live_queue_depth: gauge(
                "switchboard_engine_live_queue_depth",
                "Of the inference jobs waiting, live conversations' turns (taken before batch jobs).",
            ),
            queue_limit: gauge(
                "switchboard_engine_queue_limit",
                "Inference jobs that may wait in each lane (live, batch) before new ones are refused.",
            ),
            workers_busy: gauge(
                "switchboard_engine_workers_busy",
                "Inference workers running a job.",
            ),
            workers: gauge("switchboard_engine_workers", "Inference worker threads."),
            session_actors: gauge(
                "switchboard_session_actors_live",
                "Actors of real-time sessions alive (each session and its children); back to 0 when no session runs.",
            ),
            frames_sent: IntCounter::new(
                "switchboard_playback_frames_sent_total",
                "Agent audio frames (20 ms) sent to callers.",
            )
            .expect("a valid metric definition"),
            frames_sent_late: IntCounter::new(
                "switchboard_playback_frames_sent_late_total",
                format!("Agent audio frames sent more than {SENT_LATE_MS} ms after their time to play although they were ready before it: playback fell behind and the caller heard a gap."),
            )
            .expect("a valid metric definition"),
            log_lines_lost: IntCounter::new(
                "switchboard_log_lines_lost_total",
                "Log lines that could not be written (a full disk, a closed pipe) and were dropped.",
            )
            .expect("a valid metric definition"),
            registry_restarts: counter(
                "switchboard_registry_restarts_total",
                "Registries restarted after their actor died, by registry.",
                &["registry"],
            ),
            render: Mutex::new(()),
        };
        let registry = &metrics.registry;
        for collector in [
            Box::new(metrics.sessions_active.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(metrics.sessions_ended.clone()),
            Box::new(metrics.sessions_rejected.clone()),
            Box::new(metrics.turns.clone()),
            Box::new(metrics.stage_latency.clone()),
            Box::new(metrics.barge_in_detection.clone()),
            Box::new(metrics.barge_in_stop.clone()),
            Box::new(metrics.vendor_errors.clone()),
            Box::new(metrics.change_listener_up.clone()),
            Box::new(metrics.change_notifications.clone()),
            Box::new(metrics.draining.clone()),
            Box::new(metrics.session_record_writes_pending.clone()),
            Box::new(metrics.session_record_writes_dropped.clone()),
            Box::new(metrics.queue_depth.clone()),
            Box::new(metrics.live_queue_depth.clone()),
            Box::new(metrics.queue_limit.clone()),
            Box::new(metrics.workers_busy.clone()),
            Box::new(metrics.workers.clone()),
            Box::new(metrics.session_actors.clone()),
            Box::new(metrics.frames_sent.clone()),
            Box::new(metrics.frames_sent_late.clone()),
            Box::new(metrics.log_lines_lost.clone()),
            Box::new(metrics.registry_restarts.clone()),
            Box::new(prometheus::process_collector::ProcessCollector::for_self()),
        ] {
            registry
                .register(collector)
                .expect("each metric is registered once");
        }
        // Every series shows from the first scrape, at zero.
        for transport in ["twilio", "direct"] {
            metrics.sessions_active.with_label_values(&[transport]);
        }
        for kind in ["turn", "tool_calls", "event"] {
            metrics
                .session_record_writes_dropped
                .with_label_values(&[kind]);
        }
        for stage in ["endpoint", "stt", "llm", "tool", "tts", "platform", "turn"] {
            metrics.stage_latency.with_label_values(&[stage]);
        }
        metrics
    }

    /// Brings a registry's restart count up to `total` (counted by its supervisor).
    pub fn registry_restarts(&self, registry: &str, total: u64) {
        catch_up(
            &self.registry_restarts.with_label_values(&[registry]),
            total,
        );
    }

    /// The text exposition of every metric, with the worker pool's gauges as they are now and
    /// the log lines lost so far (`observability::log::lines_lost`).
    pub fn render(&self, pool: PoolStats, log_lines_lost: u64) -> String {
        let _one_at_a_time = self.render.lock().unwrap_or_else(|e| e.into_inner());
        let (sent, late) = frames_sent_in_process();
        catch_up(&self.frames_sent, sent);
        catch_up(&self.frames_sent_late, late);
        catch_up(&self.log_lines_lost, log_lines_lost);
        self.queue_depth.set(pool.queued as i64);
        self.live_queue_depth.set(pool.queued_live as i64);
        self.queue_limit.set(pool.queue_limit as i64);
        self.workers_busy.set(pool.busy as i64);
        self.workers.set(pool.threads as i64);
        self.session_actors.set(live_actors_in_process() as i64);
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!("could not encode the metrics: {e}");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    &METRICS
}

/// Counts a failed vendor call.
pub fn vendor_error(provider: &str, kind: &str) {
    metrics()
        .vendor_errors
        .with_label_values(&[provider, kind])
        .inc();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_family_with_the_pool_gauges() {
        vendor_error("openai", "timeout");
        metrics()
            .stage_latency
            .with_label_values(&["llm"])
            .observe(0.4);
        let text = metrics().render(
            PoolStats {
                threads: 2,
                busy: 1,
                queued: 3,
                queued_live: 1,
                queue_limit: 64,
            },
            0,
        );
        assert!(text.contains("switchboard_engine_queue_depth 3"), "{text}");
        assert!(
            text.contains("switchboard_engine_live_queue_depth 1"),
            "{text}"
        );
        assert!(text.contains("switchboard_engine_workers_busy 1"));
        assert!(text.contains("switchboard_session_actors_live "), "{text}");
        assert!(
            text.contains("switchboard_playback_frames_sent_total "),
            "{text}"
        );
        assert!(
            text.contains("switchboard_playback_frames_sent_late_total "),
            "{text}"
        );
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
        assert!(text.contains("switchboard_sessions_active{transport=\"twilio\"} 0"));
        assert!(
            text.contains("switchboard_vendor_errors_total{kind=\"timeout\",provider=\"openai\"}")
        );
        assert!(text.contains("switchboard_stage_latency_seconds_bucket{stage=\"llm\",le=\"0.5\"}"));
    }
}
