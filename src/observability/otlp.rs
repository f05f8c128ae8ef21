//! OpenTelemetry export of session traces, as OTLP/HTTP protobuf to a collector
//! (`[otlp] endpoint`; off when empty).
//!
//! One trace per session, whose trace id is the session id (`ses_<32 hex>`), so an operator
//! finds a session's trace from the id the API returns:
//! - `session`: the root span, from the session's start to its end, with its transport,
//!   status, end reason and counts;
//! - `turn`: one per turn. A caller turn spans the caller's speech. An agent turn spans the
//!   response, from the end of the caller's speech to the end of its playback;
//! - one span per stage of an agent turn (`endpoint`, `stt`, `llm`, `tool`, `tts`,
//!   `platform`), laid end to end in pipeline order from the durations the session measured
//!   (`platform` is what is left of the turn latency: message hops, scheduling, encoding);
//! - `tool <name>`: one per tool call, inside the `tool` stage;
//! - a `barge_in` event on interrupted turns.
//!
//! Spans carry timings, providers and counts, never what was said (no transcripts, no tool
//! arguments or answers). They are built when the session reports a turn, handed to the
//! SDK's batch processor (its own thread, a bounded queue: when the collector is slow spans
//! are dropped, never waited for) and posted with reqwest on the server's runtime.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry::trace::{
    Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanEvents, SpanExporter, SpanLinks,
    SpanProcessor,
};
use opentelemetry_sdk::Resource;
use switchboard_actors::session::ToolOutcome;
use switchboard_actors::session::{SessionSummary, Speaker, TurnRecord};

use crate::config::OtlpConfig;
use crate::store::sessions::SessionStatus;

/// The exporter: a batch span processor posting to the collector. Cheap to share.
pub struct TraceExport {
    processor: BatchSpanProcessor,
    scope: InstrumentationScope,
}

impl fmt::Debug for TraceExport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceExport").finish_non_exhaustive()
    }
}

impl TraceExport {
    /// The exporter `config` describes, or `None` when no endpoint is set. Posts run on
    /// `runtime`, which must outlive the exporter (the server's own runtime).
    pub fn start(
        config: &OtlpConfig,
        runtime: tokio::runtime::Handle,
    ) -> Result<Option<Arc<Self>>, String> {
        let endpoint = config.endpoint.trim();
        if endpoint.is_empty() {
            return Ok(None);
        }
        let url = reqwest::Url::parse(endpoint)
            .map_err(|e| format!("otlp.endpoint {endpoint:?} is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("otlp.endpoint {endpoint:?} must be http or https"));
        }
        let timeout = Duration::from_millis(config.timeout_ms.max(1));
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| format!("cannot build the OTLP HTTP client: {e}"))?;
        let headers: HashMap<String, String> = config
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(RuntimeClient { client, runtime })
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(timeout)
            .with_headers(headers)
            .build()
            .map_err(|e| format!("cannot build the OTLP exporter: {e}"))?;
        exporter.set_resource(
            &Resource::builder_empty()
                .with_attributes([
                    KeyValue::new("service.name", config.service_name.clone()),
                    KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                ])
                .build(),
        );
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(config.queue_spans.max(1))
            .with_max_export_batch_size(config.queue_spans.clamp(1, 512))
            .with_scheduled_delay(Duration::from_millis(config.batch_delay_ms.max(1)))
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let scope = InstrumentationScope::builder("switchboard")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        tracing::info!(endpoint, "exporting session traces over OTLP");
        Ok(Some(Arc::new(TraceExport { processor, scope })))
    }

    /// Starts the trace of a session that begins now.
    pub fn session(self: &Arc<Self>, session_id: &str, transport: &'static str) -> SessionTrace {
        SessionTrace {
            export: Arc::clone(self),
            trace_id: trace_id_of(session_id),
            root: SpanId::from_bytes(rand_bytes()),
            session_id: session_id.to_string(),
            transport,
            started: SystemTime::now(),
        }
    }

    /// Sends what is queued and stops the exporter (at shutdown; bounded by the timeout).
    pub fn shutdown(&self) {
        if let Err(e) = self.processor.force_flush() {
            tracing::warn!(error = %e, "could not flush session traces");
        }
        let _ = self.processor.shutdown_with_timeout(Duration::from_secs(5));
    }

    fn emit(&self, span: SpanData) {
        self.processor.on_end(span);
    }
}

/// The trace id of a session: its id's 32 hex digits; other ids are hashed into 16 bytes.
fn trace_id_of(session_id: &str) -> TraceId {
    let hex = session_id.rsplit('_').next().unwrap_or(session_id);
    if hex.len() == 32 {
        if let Ok(id) = u128::from_str_radix(hex, 16) {
            if id != 0 {
                return TraceId::from(id);
            }
        }
    }
    let digest = digest16(session_id.as_bytes());
    TraceId::from_bytes(digest)
}

/// 16 bytes derived from `bytes` (SHA-256, truncated) for ids that are not hex.
fn digest16(bytes: &[u8]) -> [u8; 16] {
    use sha2::Digest;
    let full = sha2::Sha256::digest(bytes);
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

fn rand_bytes() -> [u8; 8] {
    loop {
        let bytes = uuid::Uuid::new_v4().as_u64_pair().0.to_be_bytes();
        if bytes != [0; 8] {
            return bytes;
        }
    }
}

/// One session's trace: turns become spans as they are reported, the root at the end.
pub struct SessionTrace {
    export: Arc<TraceExport>,
    trace_id: TraceId,
    root: SpanId,
    session_id: String,
    transport: &'static str,
    started: SystemTime,
}

impl fmt::Debug for SessionTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionTrace")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// A span about to be emitted.
struct Span {
    name: String,
    parent: SpanId,
    id: SpanId,
    kind: SpanKind,
    start: SystemTime,
    end: SystemTime,
    attributes: Vec<KeyValue>,
    events: Vec<Event>,
    status: Status,
}

impl Span {
    fn new(name: impl Into<String>, parent: SpanId, start: SystemTime, end: SystemTime) -> Self {
        Span {
            name: name.into(),
            parent,
            id: SpanId::from_bytes(rand_bytes()),
            kind: SpanKind::Internal,
            start,
            end: end.max(start),
            attributes: Vec::new(),
            events: Vec::new(),
            status: Status::Unset,
        }
    }
}

impl SessionTrace {
    fn at(&self, ms: u64) -> SystemTime {
        self.started + Duration::from_millis(ms)
    }

    fn emit(&self, span: Span) {
        let span_context = SpanContext::new(
            self.trace_id,
            span.id,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let mut events = SpanEvents::default();
        events.events = span.events;
        self.export.emit(SpanData {
            span_context,
            parent_span_id: span.parent,
            parent_span_is_remote: false,
            span_kind: span.kind,
            name: span.name.into(),
            start_time: span.start,
            end_time: span.end,
            attributes: span.attributes,
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status: span.status,
            instrumentation_scope: self.export.scope.clone(),
        });
    }

    /// Emits a turn's span and its stages' spans. `providers` are the stt, llm and tts
    /// providers that served it; `tools` the tool calls of an agent turn.
    pub fn turn(&self, turn: &TurnRecord, providers: &[Option<String>; 3], tools: &[ToolOutcome]) {
        let [stt, llm, tts] = providers;
        let start_ms = match turn.latency {
            // An agent turn starts where the caller stopped speaking.
            Some(latency) => turn.start_ms.saturating_sub(latency.total_ms),
            None => turn.start_ms,
        };
        let mut span = Span::new(
            "turn",
            self.root,
            self.at(start_ms),
            self.at(turn.end_ms.max(start_ms)),
        );
        span.attributes.extend([
            KeyValue::new("session.id", self.session_id.clone()),
            KeyValue::new("turn.index", i64::from(turn.index)),
            KeyValue::new("turn.speaker", turn.speaker.as_str()),
            KeyValue::new("turn.interrupted", turn.interrupted),
            KeyValue::new("turn.characters", turn.text.chars().count() as i64),
        ]);
        if let Some(endpoint) = turn.endpoint {
            span.attributes.push(KeyValue::new(
                "turn.endpoint",
                format!("{endpoint:?}").to_lowercase(),
            ));
        }
        if turn.speaker == Speaker::User {
            span.attributes
                .push(KeyValue::new("stt.duration_ms", turn.stt_ms as i64));
            if let Some(stt) = stt {
                span.attributes
                    .push(KeyValue::new("stt.provider", stt.clone()));
            }
        }
        if let Some(latency) = turn.latency {
            span.attributes
                .push(KeyValue::new("turn.latency_ms", latency.total_ms as i64));
        }
        if let Some(error) = &turn.error {
            span.status = Status::error(error.clone());
        }
        if let Some(barge_in) = &turn.barge_in {
            span.events.push(Event::new(
                "barge_in",
                self.at(turn.end_ms),
                vec![
                    KeyValue::new("barge_in.detection_ms", barge_in.detection_ms as i64),
                    KeyValue::new("barge_in.stop_ms", barge_in.stop_ms as i64),
                    KeyValue::new(
                        "barge_in.bleed_through_words",
                        barge_in.bleed_through.split_whitespace().count() as i64,
                    ),
                    KeyValue::new("barge_in.requested", barge_in.requested),
                ],
                0,
            ));
        }
        let turn_id = span.id;
        self.emit(span);

        let Some(latency) = turn.latency else {
            return;
        };
        let stages = [
            ("endpoint", latency.endpoint_ms, None),
            ("stt", latency.stt_ms, stt.as_ref()),
            ("llm", latency.llm_ms, llm.as_ref()),
            ("tool", latency.tool_ms, None),
            ("tts", latency.tts_ms, tts.as_ref()),
            ("platform", latency.platform_ms, None),
        ];
        let mut at = start_ms;
        for (name, ms, provider) in stages {
            // A stage that took no time is left out, but for a tool stage with its calls.
            if ms == 0 && (name != "tool" || tools.is_empty()) {
                continue;
            }
            let mut stage = Span::new(name, turn_id, self.at(at), self.at(at + ms));
            stage
                .attributes
                .push(KeyValue::new("stage.duration_ms", ms as i64));
            if let Some(provider) = provider {
                stage
                    .attributes
                    .push(KeyValue::new("stage.provider", provider.clone()));
            }
            if name == "tool" {
                let stage_id = stage.id;
                let mut tool_at = at;
                for outcome in tools {
                    let mut call = Span::new(
                        format!("tool {}", outcome.call.name),
                        stage_id,
                        self.at(tool_at),
                        self.at(tool_at + outcome.duration_ms),
                    );
                    call.kind = SpanKind::Client;
                    call.attributes.extend([
                        KeyValue::new("tool.name", outcome.call.name.clone()),
                        KeyValue::new("tool.call_id", outcome.call.id.clone()),
                        KeyValue::new("tool.duration_ms", outcome.duration_ms as i64),
                    ]);
                    if outcome.is_error {
                        call.status = Status::error("the tool failed or timed out");
                    }
                    tool_at += outcome.duration_ms;
                    self.emit(call);
                }
            }
            self.emit(stage);
            at += ms;
        }
    }

    /// Emits the session's root span.
    pub fn end(&self, summary: &SessionSummary, status: SessionStatus, reason: &str) {
        let mut span = Span::new(
            "session",
            SpanId::INVALID,
            self.started,
            self.at(summary.total_duration_ms),
        );
        span.id = self.root;
        span.kind = SpanKind::Server;
        span.attributes.extend([
            KeyValue::new("session.id", self.session_id.clone()),
            KeyValue::new("session.transport", self.transport),
            KeyValue::new("session.status", status.to_string()),
            KeyValue::new("session.end_reason", reason.to_string()),
            KeyValue::new("session.turns", i64::from(summary.turns)),
            KeyValue::new("session.interruptions", i64::from(summary.interruptions)),
            KeyValue::new("session.failed_turns", i64::from(summary.failed_turns)),
            KeyValue::new(
                "session.tool_executions",
                i64::from(summary.tool_executions),
            ),
            KeyValue::new(
                "session.avg_turn_latency_ms",
                summary.avg_turn_latency_ms as i64,
            ),
        ]);
        if status != SessionStatus::Completed {
            span.status = Status::error(reason.to_string());
        }
        self.emit(span);
    }
}

/// The OTLP exporter's HTTP client: the service's reqwest client, its requests run on the
/// server's runtime (the batch processor's thread has none of its own).
struct RuntimeClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl fmt::Debug for RuntimeClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RuntimeClient")
    }
}

/// Collector answers are a few bytes; anything past this is not read.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

#[async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let answer = self
            .runtime
            .spawn(async move {
                let mut response = client.execute(request).await?;
                let status = response.status();
                let headers = std::mem::take(response.headers_mut());
                let mut body = Vec::new();
                while let Some(chunk) = response.chunk().await? {
                    let room = MAX_RESPONSE_BYTES - body.len();
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if body.len() == MAX_RESPONSE_BYTES {
                        break;
                    }
                }
                Ok::<_, reqwest::Error>((status, headers, body))
            })
            .await?;
        let (status, headers, body) = answer?;
        let mut response = http::Response::new(Bytes::from(body));
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_its_own_trace_id() {
        let id = "ses_0123456789abcdef0123456789abcdef";
        assert_eq!(
            trace_id_of(id).to_string(),
            "0123456789abcdef0123456789abcdef"
        );
    }

    #[test]
    fn other_ids_hash_to_a_valid_trace_id() {
        let a = trace_id_of("call-42");
        assert_ne!(a, TraceId::INVALID);
        assert_eq!(a, trace_id_of("call-42"));
        assert_ne!(a, trace_id_of("call-43"));
        // An all-zero hex id is not a valid trace id: it is hashed instead.
        assert_ne!(
            trace_id_of("ses_00000000000000000000000000000000"),
            TraceId::INVALID
        );
    }
}
