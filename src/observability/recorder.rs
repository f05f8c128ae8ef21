//! `SessionRecorder`: the `SessionObserver` of live sessions. Each report becomes a
//! fire-and-forget message to the `SessionRegistry` (so recording never holds up a call):
//! turns with the provider that served each stage, the tool calls of each agent turn, and
//! speech in which nothing was recognised. Per turn it also charges the `Metering` registry
//! (caller turns as transcribed audio, agent turns as synthesized characters and generated
//! tokens), updates the Prometheus metrics, and opens a `tracing` span per turn with a child
//! span per stage. The session's end frees its slot.

use crate::registry::Supervised;
use std::sync::{Arc, Mutex};

use switchboard_actors::session::ToolOutcome;
use switchboard_actors::session::{
    EndReason, EndpointSource, SessionObserver, SessionStatus, SessionSummary, Speaker, TurnRecord,
    UnrecognisedSpeech,
};

use super::otlp::{SessionTrace, TraceExport};
use super::served::StageSlots;
use crate::billing::Usage;
use crate::metrics::metrics;
use crate::registry::metering::{ChargeSession, CloseSession, Metering};
use crate::registry::sessions::{
    EndSession, RecordEvent, RecordToolCalls, RecordTurn, SessionRegistry,
};
use crate::store::sessions::{
    EventRow, SessionEnd, SessionStatus as StoredStatus, ToolCallRow, TurnRow,
    EVENT_UNRECOGNISED_SPEECH,
};
use crate::time::now_ms;

pub struct SessionRecorder {
    registry: Supervised<SessionRegistry>,
    metering: Supervised<Metering>,
    /// `twilio` or `direct`, for the metrics.
    transport: &'static str,
    /// Tool calls of the agent turn in progress, written with it.
    tools: Mutex<Vec<ToolOutcome>>,
    /// The OpenTelemetry exporter, when one is configured, and this session's trace in it.
    traces: Option<Arc<TraceExport>>,
    trace: Mutex<Option<SessionTrace>>,
    /// Which provider served each stage, marked by the session's engines.
    served: Arc<StageSlots>,
}

impl SessionRecorder {
    pub fn new(
        registry: Supervised<SessionRegistry>,
        metering: Supervised<Metering>,
        traces: Option<Arc<TraceExport>>,
        transport: &'static str,
        served: Arc<StageSlots>,
    ) -> Self {
        Self {
            registry,
            metering,
            transport,
            tools: Mutex::new(Vec::new()),
            traces,
            trace: Mutex::new(None),
            served,
        }
    }

    /// Runs `f` on the session's trace, when traces are exported.
    fn with_trace(&self, f: impl FnOnce(&SessionTrace)) {
        if let Ok(trace) = self.trace.lock() {
            if let Some(trace) = trace.as_ref() {
                f(trace);
            }
        }
    }

    fn charge(&self, session_id: &str, usage: Usage) {
        self.metering.do_send(ChargeSession {
            session_id: session_id.into(),
            usage,
        });
    }
}

/// Generated tokens of spoken agent text: sessions stream tokens without counting them, so
/// they are estimated at four characters a token.
fn estimated_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// A session's end reason as stored: `hangup`, `transport_closed`, `idle_timeout`,
/// `agent_ended` (the agent's `end_conversation`), `shutdown` (the server stopped after its drain time), or the
/// fatal error's code and message.
pub fn end_reason(reason: &EndReason) -> String {
    match reason {
        EndReason::Hangup => "hangup".into(),
        EndReason::TransportClosed => "transport_closed".into(),
        EndReason::IdleTimeout => "idle_timeout".into(),
        EndReason::AgentEnded => "agent_ended".into(),
        EndReason::Transferred => "transferred".into(),
        EndReason::Redirected => "redirected".into(),
        EndReason::Shutdown => "shutdown".into(),
        EndReason::Fatal { code, message } => format!("{code}: {message}"),
    }
}

/// How a turn's stages are named in metrics and spans.
const STAGES: [&str; 6] = ["endpoint", "stt", "llm", "tool", "tts", "platform"];

fn outcome(turn: &TurnRecord) -> &'static str {
    if turn.error.is_some() {
        "failed"
    } else if turn.interrupted {
        "interrupted"
    } else {
        "completed"
    }
}

/// Metrics and the `tracing` spans of one recorded turn: a `turn` span with a child span per
/// stage that ran, each carrying its duration in ms (the spans are emitted when the turn is
/// recorded; the timings are the session's own measurements).
fn observe_turn(
    session_id: &str,
    transport: &str,
    turn: &TurnRecord,
    providers: &[Option<String>; 3],
) {
    let m = metrics();
    m.turns
        .with_label_values(&[turn.speaker.as_str(), outcome(turn)])
        .inc();
    let span = tracing::info_span!(
        "turn",
        session_id,
        transport,
        index = turn.index,
        speaker = turn.speaker.as_str(),
        start_ms = turn.start_ms,
        end_ms = turn.end_ms,
        latency_ms = turn.latency.map(|l| l.total_ms),
        interrupted = turn.interrupted,
        error = turn.error.as_deref(),
    );
    let _entered = span.enter();
    if let Some(latency) = turn.latency {
        let parts = [
            latency.endpoint_ms,
            latency.stt_ms,
            latency.llm_ms,
            latency.tool_ms,
            latency.tts_ms,
            latency.platform_ms,
        ];
        for (stage, ms) in STAGES.iter().zip(parts) {
            m.stage_latency
                .with_label_values(&[*stage])
                .observe(ms as f64 / 1000.0);
        }
        m.stage_latency
            .with_label_values(&["turn"])
            .observe(latency.total_ms as f64 / 1000.0);
    }
    let [stt, llm, tts] = providers;
    for (stage, ms, provider) in [
        ("stt", turn.stt_ms, stt),
        ("llm", turn.llm_ms, llm),
        ("tts", turn.tts_ms, tts),
    ] {
        if ms > 0 || provider.is_some() {
            let stage_span = tracing::info_span!(
                "stage",
                stage,
                duration_ms = ms,
                provider = provider.as_deref()
            );
            stage_span.in_scope(|| tracing::debug!(stage, duration_ms = ms, "stage timing"));
        }
    }
    if let Some(barge_in) = &turn.barge_in {
        if !barge_in.requested {
            m.barge_in_detection
                .observe(barge_in.detection_ms as f64 / 1000.0);
            m.barge_in_stop.observe(barge_in.stop_ms as f64 / 1000.0);
        }
        tracing::debug!(
            detection_ms = barge_in.detection_ms,
            stop_ms = barge_in.stop_ms,
            bleed_through_words = barge_in.bleed_through.split_whitespace().count(),
            requested = barge_in.requested,
            "interrupted"
        );
    }
    tracing::debug!("turn recorded");
}

impl SessionObserver for SessionRecorder {
    fn session_started(&self, session_id: &str) {
        metrics()
            .sessions_active
            .with_label_values(&[self.transport])
            .inc();
        if let Some(traces) = &self.traces {
            if let Ok(mut trace) = self.trace.lock() {
                *trace = Some(traces.session(session_id, self.transport));
            }
        }
        tracing::info!(session_id, transport = self.transport, "session started");
    }

    fn tool_executed(&self, _session_id: &str, outcome: &ToolOutcome) {
        if let Ok(mut tools) = self.tools.lock() {
            tools.push(outcome.clone());
        }
    }

    fn speech_unrecognised(&self, session_id: &str, speech: &UnrecognisedSpeech) {
        // The recogniser ran on it: its slot is not the next caller turn's.
        self.served.clear_stt();
        self.registry.do_send(RecordEvent(EventRow {
            session_id: session_id.into(),
            kind: EVENT_UNRECOGNISED_SPEECH.to_string(),
            turn_index: speech.interrupted_turn.map(|t| t as i32),
            start_ms: speech.start_ms as i64,
            end_ms: speech.end_ms as i64,
            detail: None,
        }));
    }

    fn turn_completed(&self, session_id: &str, turn: &TurnRecord) {
        match turn.speaker {
            Speaker::User if turn.endpoint != Some(EndpointSource::Text) => {
                let seconds = turn.end_ms.saturating_sub(turn.start_ms) as f64 / 1000.0;
                self.charge(session_id, Usage::Stt { seconds });
            }
            Speaker::Agent if !turn.text.is_empty() => {
                let characters = turn.text.chars().count() as u64;
                self.charge(session_id, Usage::Tts { characters });
                self.charge(
                    session_id,
                    Usage::Llm {
                        input_tokens: 0,
                        output_tokens: estimated_tokens(&turn.text),
                    },
                );
            }
            _ => {}
        }
        let providers = match turn.speaker {
            Speaker::User => self.served.take_caller_turn(),
            Speaker::Agent => self.served.take_agent_turn(),
        };
        observe_turn(session_id, self.transport, turn, &providers);
        let calls = if turn.speaker == Speaker::Agent {
            self.tools
                .lock()
                .map(|mut tools| std::mem::take(&mut *tools))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        self.with_trace(|trace| trace.turn(turn, &providers, &calls));
        let [stt_provider, llm_provider, tts_provider] = providers;
        let barge_in = turn.barge_in.as_ref();
        self.registry.do_send(RecordTurn(TurnRow {
            session_id: session_id.into(),
            turn_index: turn.index as i32,
            speaker: turn.speaker.as_str().to_string(),
            text: turn.text.clone(),
            start_ms: turn.start_ms as i64,
            end_ms: turn.end_ms as i64,
            stt_ms: turn.stt_ms as i64,
            llm_ms: turn.llm_ms as i64,
            tts_ms: turn.tts_ms as i64,
            latency_ms: turn.latency.map(|l| l.total_ms as i64),
            interrupted: turn.interrupted,
            error: turn.error.clone(),
            endpoint: turn.endpoint.map(|e| {
                match e {
                    EndpointSource::Vad => "vad",
                    EndpointSource::Stt => "stt",
                    EndpointSource::Model => "model",
                    EndpointSource::Text => "text",
                    EndpointSource::MaxLength => "max_length",
                }
                .to_string()
            }),
            endpoint_ms: turn.latency.map(|l| l.endpoint_ms as i64),
            tool_ms: turn.latency.map(|l| l.tool_ms as i64),
            platform_ms: turn.latency.map(|l| l.platform_ms as i64),
            stt_provider,
            llm_provider,
            tts_provider,
            barge_in_detection_ms: barge_in.map(|b| b.detection_ms as i64),
            barge_in_stop_ms: barge_in.map(|b| b.stop_ms as i64),
            bleed_through: barge_in.map(|b| b.bleed_through.clone()),
            barge_in_requested: barge_in.map(|b| b.requested),
        }));
        if !calls.is_empty() {
            self.registry.do_send(RecordToolCalls(
                calls
                    .into_iter()
                    .map(|c| ToolCallRow {
                        session_id: session_id.into(),
                        turn_index: turn.index as i32,
                        call_id: c.call.id,
                        name: c.call.name,
                        arguments: c.call.arguments,
                        output: c.output,
                        is_error: c.is_error,
                        duration_ms: c.duration_ms as i64,
                    })
                    .collect(),
            ));
        }
    }

    fn session_ended(&self, session_id: &str, summary: &SessionSummary) {
        let status = match summary.status {
            SessionStatus::Completed => StoredStatus::Completed,
            SessionStatus::Failed => StoredStatus::Failed,
        };
        let m = metrics();
        m.sessions_active.with_label_values(&[self.transport]).dec();
        m.sessions_ended
            .with_label_values(&[self.transport, status.as_str()])
            .inc();
        tracing::info!(
            session_id,
            transport = self.transport,
            status = status.as_str(),
            turns = summary.turns,
            duration_ms = summary.total_duration_ms,
            "session ended"
        );
        let reason = end_reason(&summary.reason);
        self.with_trace(|trace| trace.end(summary, status, &reason));
        self.metering.do_send(CloseSession {
            session_id: session_id.into(),
        });
        self.registry.do_send(EndSession {
            session_id: session_id.into(),
            end: SessionEnd {
                status,
                tool_executions: summary.tool_executions as i32,
                total_duration_ms: summary.total_duration_ms as i64,
                avg_turn_latency_ms: summary.avg_turn_latency_ms as i64,
                end_reason: Some(reason),
                ended_at: Some(now_ms()),
            },
        });
    }
}
