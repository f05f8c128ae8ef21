//! Typed configuration: `config/default.toml` (compiled in) < an optional `--config FILE` <
//! the environment (`SWITCHBOARD__<SECTION>__<KEY>`, plus a few short forms).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Toml};
use figment::Figment;
use serde::Deserialize;

use crate::background::BackgroundPriority;

/// The defaults every deployment starts from.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Short environment variables and the keys they set.
const SHORT_FORMS: [(&str, &str); 5] = [
    ("SWITCHBOARD_BIND", "server.bind"),
    ("SWITCHBOARD_PUBLIC_URL", "server.public_url"),
    ("SWITCHBOARD_DATA_DIR", "server.data_dir"),
    ("SWITCHBOARD_MODELS_DIR", "server.models_dir"),
    ("SWITCHBOARD_DATABASE_URL", "database.url"),
];

/// The whole service configuration.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    pub auth: AuthConfig,
    pub registry: RegistryConfig,
    pub tiers: BTreeMap<String, TierConfig>,
    pub metering: MeteringConfig,
    pub pricing: PricingConfig,
    pub rate_limit: RateLimitConfig,
    pub billing: BillingConfig,
    pub engines: EnginesConfig,
    pub fetch: FetchConfig,
    pub jobs: JobsConfig,
    pub webhooks: WebhooksConfig,
    pub campaigns: CampaignsConfig,
    pub telephony: TelephonyConfig,
    /// Outside vendors by provider id (`[vendors.openai]`, ...); none is needed to run.
    #[serde(default)]
    pub vendors: BTreeMap<String, VendorConfig>,
    pub provider_keys: ProviderKeysConfig,
    pub recordings: RecordingsConfig,
    pub sync: SyncConfig,
    pub metrics: MetricsConfig,
    pub otlp: OtlpConfig,
    pub portal: PortalConfig,
}

/// The developer portal under `/portal/`: phone sign-in codes and browser sessions.
#[derive(Debug, Clone, Deserialize)]
pub struct PortalConfig {
    /// Keys the hashes of sign-in codes and the CSRF tokens. Empty = generated once into the
    /// data dir (`portal-secret`); several nodes must share one.
    pub secret: String,
    /// How long a sign-in code stays valid.
    pub code_ttl_seconds: u64,
    /// Wrong tries that burn a code.
    pub code_max_attempts: u32,
    /// Codes one phone number may be sent per window for browsers that have not signed in
    /// with it before (a browser that has, by its device cookie, is not held back by this).
    pub code_requests_per_phone: u32,
    /// Codes one phone number may be sent per window at the request of one client address
    /// (an IPv6 address counts by its /64).
    pub code_requests_per_phone_per_ip: u32,
    /// Codes one client address may ask for per window.
    pub code_requests_per_ip: u32,
    pub code_request_window_seconds: u64,
    /// Take the client address from `X-Forwarded-For` (behind a proxy that sets it) instead of
    /// the connection's peer.
    pub trust_forwarded_for: bool,
    /// A session unused this long ends.
    pub session_idle_seconds: u64,
    /// A session ends this long after sign-in, however much it is used.
    pub session_max_seconds: u64,
}

/// OpenTelemetry export of session traces (`observability::otlp`).
#[derive(Debug, Clone, Deserialize)]
pub struct OtlpConfig {
    /// The collector's OTLP/HTTP traces URL (`http://collector:4318/v1/traces`); empty = off.
    pub endpoint: String,
    /// Extra request headers, e.g. a vendor's API key.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// One export request's time limit.
    pub timeout_ms: u64,
    /// Spans waiting for export; beyond this new spans are dropped (and counted in the log).
    pub queue_spans: usize,
    /// Longest a span waits before its batch is sent.
    pub batch_delay_ms: u64,
}

/// The Prometheus scrape endpoint, `GET /metrics`.
#[derive(Debug, Clone, Deserialize)]
pub struct MetricsConfig {
    /// Serve it at all.
    pub enabled: bool,
    /// When set, scrapers must send `Authorization: Bearer <token>`; empty = open (the
    /// metrics carry no developer's data; keep the port internal or set a token).
    pub bearer_token: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    pub public_url: String,
    pub data_dir: PathBuf,
    pub models_dir: PathBuf,
    pub workers: usize,
    pub max_json_bytes: usize,
    /// How long an idle HTTP connection is kept open for the client's next request.
    pub keep_alive_seconds: u64,
    /// On SIGTERM/SIGINT: how long live real-time sessions may run on before they are ended
    /// (new ones are refused meanwhile).
    pub drain_timeout_seconds: u64,
    /// Nice steps the background threads (inference, search-graph builders) run below the
    /// real-time workers; 0 = the same priority. See [`crate::background`].
    pub background_nice: BackgroundPriority,
    /// A request body must start arriving within this long of being asked for (408 past it).
    pub body_read_timeout_seconds: u64,
    /// After `body_read_timeout_seconds`, the body must keep arriving at this average rate
    /// (bytes per second) or it is cut off with 408; 0 = only the wait between two pieces of
    /// the body is limited.
    pub body_min_bytes_per_second: u64,
    /// A WebSocket frame must arrive whole within this long of its first byte (close 1008).
    pub websocket_frame_timeout_seconds: u64,
    /// A direct socket whose client sends no audio and no message for this long is closed
    /// (1008) and its session ended, freeing its place; 0 = never.
    pub direct_idle_timeout_seconds: u64,
    /// Give the allocator's free memory back to the system when live sessions fall
    /// ([`crate::memory`]).
    pub give_back_memory: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseConfig {
    pub url: String,
    /// PostgreSQL only: where the change listener connects (LISTEN needs a session of its
    /// own, so not a transaction-pooling proxy); empty = `url`.
    pub listen_url: String,
    pub pool_size: usize,
    pub sqlite_busy_timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AuthConfig {
    pub key_prefix: String,
    pub cache_capacity: usize,
    pub revocation_poll_ms: u64,
    pub last_used_flush_ms: u64,
    pub bootstrap_developer: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RegistryConfig {
    pub cache_capacity: usize,
    pub shared_cache_ttl_ms: u64,
    /// Live chunks from which a collection is searched through an HNSW graph.
    pub search_graph_min_chunks: usize,
    /// Threads building and extending search graphs; 0 = half the cores (at least one).
    pub search_graph_threads: usize,
    /// Candidates a graph search keeps: higher finds more of the true best chunks, slower.
    pub search_graph_ef: usize,
}

impl RegistryConfig {
    /// Threads for search-graph builds: as configured, or half the cores (at least one), so
    /// a build never takes every core live calls need.
    pub fn graph_threads(&self) -> usize {
        match self.search_graph_threads {
            0 => std::thread::available_parallelism()
                .map(|n| n.get() / 2)
                .unwrap_or(1)
                .max(1),
            threads => threads,
        }
    }

    /// How long a cached row may be served on this backend.
    pub fn cache_ttl(&self, backend: crate::store::Backend) -> Option<std::time::Duration> {
        match backend {
            crate::store::Backend::Sqlite => None,
            crate::store::Backend::Postgres => {
                Some(std::time::Duration::from_millis(self.shared_cache_ttl_ms))
            }
        }
    }
}

/// One subscription tier's allowance.
#[derive(Debug, Clone, Deserialize)]
pub struct TierConfig {
    pub display: String,
    pub monthly_credits: f64,
    /// Dollars per credit used beyond the allowance; 0 = no overage (402 when exhausted).
    pub overage_rate: f64,
    /// For how many months unused credits of a period stay usable.
    pub carryover_months: u32,
    /// The Stripe price a checkout for this tier subscribes to; empty = not purchasable.
    #[serde(default)]
    pub price_id: String,
    /// Requests per API key per rate-limit window; 0 = `rate_limit.requests`.
    #[serde(default)]
    pub rate_limit_requests: u32,
    /// Real-time sessions (phone calls and direct sockets) a developer may run at once.
    pub max_concurrent_sessions: u32,
}

impl TierConfig {
    /// Whether use beyond the allowance is allowed (and billed at `overage_rate`).
    pub fn allows_overage(&self) -> bool {
        self.overage_rate > 0.0
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct MeteringConfig {
    pub flush_ms: u64,
    /// Shifts the clock billing periods are computed from, in seconds. Only for tests and
    /// staging rehearsals of a period rollover; 0 in production.
    #[serde(default)]
    pub clock_offset_seconds: i64,
}

/// Credits each metered operation costs (see the price list in docs/api.md).
#[derive(Debug, Clone, Deserialize)]
pub struct PricingConfig {
    pub tts_per_1k_characters: f64,
    pub stt_per_minute: f64,
    pub llm_per_1k_input_tokens: f64,
    pub llm_per_1k_output_tokens: f64,
    pub rag_per_1k_embedded_tokens: f64,
    pub rag_per_search: f64,
}

/// Per-API-key request limits on every `/v1` route.
#[derive(Debug, Clone, Deserialize)]
pub struct RateLimitConfig {
    /// Requests per key per window, unless the tier sets `rate_limit_requests`.
    pub requests: u32,
    pub window_seconds: u64,
    /// On PostgreSQL: how often a node adds its counts to the shared windows and reads the
    /// other nodes' counts back. Bounds how far several nodes together can overshoot.
    pub sync_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BillingConfig {
    pub stripe: StripeConfig,
}

/// The payment processor. Checkout and portal answer 503 `billing_not_configured` until
/// `secret_key` is set; the webhook until `webhook_secret` is set.
#[derive(Debug, Clone, Deserialize)]
pub struct StripeConfig {
    pub base_url: String,
    pub secret_key: String,
    pub webhook_secret: String,
    /// Where the billing portal sends the customer back; empty = Stripe's default.
    pub portal_return_url: String,
    /// Oldest accepted webhook signature timestamp, in seconds before now.
    pub tolerance_seconds: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EnginesConfig {
    /// Inference worker threads; 0 = one per core.
    pub workers: usize,
    /// Inference jobs that may wait for a worker before new ones are refused (503).
    pub queue: usize,
    /// Load every model at start instead of on first use.
    pub preload: bool,
    /// Threads one inference job may use (the pool runs `workers` jobs side by side): the
    /// models on candle, and the neural voices on ONNX Runtime.
    pub threads_per_job: usize,
    /// The level neural voices speak at: each sentence's speech RMS, in dBFS (-40 to -3).
    pub voice_level_dbfs: f32,
    /// How voice sessions decide that a caller's turn is over, for agents that do not say:
    /// `smart` (the end-of-turn model, the silence timer as its fallback) or `silence`.
    pub turn_detection: String,
    /// A caller's pause this long (ms) starts the embedded recognizer on the turn so far,
    /// before the turn is over; 0 waits for its end.
    pub early_recognition_ms: u32,
    /// How the embedded recognizer decodes callers' turns: `fast` (greedy; tiny.en for an
    /// agent whose language is English) or `accurate` (beam search on the multilingual model).
    pub live_recognition: String,
    /// Conversations whose prompt state the embedded language model keeps (0: none).
    pub llm_prompt_cache: usize,
    /// Tokens of history the embedded language model reads with a turn that brings facts
    /// (an agent with knowledge): the latest exchanges that fit (0: none).
    pub llm_knowledge_history: usize,
}

impl EnginesConfig {
    pub fn worker_threads(&self) -> usize {
        if self.workers > 0 {
            return self.workers;
        }
        std::thread::available_parallelism().map_or(1, usize::from)
    }
}

/// Limits on URLs the server fetches for a caller (audioUrl, sourceUrl).
#[derive(Debug, Clone, Deserialize)]
pub struct FetchConfig {
    pub max_bytes: u64,
    pub timeout_ms: u64,
    pub max_redirects: usize,
    /// Host names or IP networks (CIDR) that may be fetched even though they are loopback,
    /// private or link-local, for operators who serve audio from their own network.
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TelephonyConfig {
    /// Secret that signs relay tokens; empty = generated into the data dir on first start.
    /// Every node of a deployment needs the same one.
    pub relay_secret: String,
    /// How long a relay token stays valid after the call-control markup is issued.
    pub token_ttl_seconds: u64,
    /// What a caller hears, before the line hangs up, when the developer's concurrent
    /// sessions are all in use.
    pub busy_message: String,
    /// What a caller hears while a warm transfer calls the person.
    pub transfer_hold_message: String,
    /// What a caller hears, before the line hangs up, when a transfer failed and the agent
    /// cannot take the call back.
    pub transfer_failed_message: String,
    /// Twilio's REST API, for outbound calls and for checking Twilio's webhook signatures.
    pub twilio: TwilioConfig,
    /// Which numbers outbound calls may ring.
    pub outbound: OutboundConfig,
    /// Proving a phone number before it is routed.
    pub numbers: NumbersConfig,
}

/// A route in `/v1/phone-numbers` takes calls (and serves as an outbound caller id) only
/// once the code texted to its number was confirmed.
#[derive(Debug, Clone, Deserialize)]
pub struct NumbersConfig {
    /// A code is valid this long.
    pub code_ttl_seconds: u64,
    /// Wrong tries that burn a code.
    pub code_max_attempts: u32,
    /// Routes a developer may have waiting for their code at once (each sent one text).
    pub max_pending_claims: u32,
}

/// Where outbound calls may go. A number is refused when it starts with a denied prefix, or
/// when allowed prefixes are listed and it starts with none of them (E.164 prefixes, `+`
/// included: `+1900`, `+44`).
#[derive(Debug, Clone, Deserialize)]
pub struct OutboundConfig {
    /// Empty = every destination that is not denied.
    pub allow_prefixes: Vec<String>,
    /// Premium-rate, satellite and other costly destinations (the default list).
    pub deny_prefixes: Vec<String>,
    /// A placed call holds one of the tier's concurrent-session slots until it is answered or
    /// ends, and at most this long when Twilio never says.
    pub answer_timeout_seconds: u64,
}

impl OutboundConfig {
    /// The prefix that refuses `number`, or `None` when it may be called.
    pub fn refusal(&self, number: &str) -> Option<String> {
        if let Some(denied) = self
            .deny_prefixes
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .filter(|p| number.starts_with(p))
            .max_by_key(|p| p.len())
        {
            return Some(denied.to_string());
        }
        let allowed: Vec<&str> = self
            .allow_prefixes
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .collect();
        if !allowed.is_empty() && !allowed.iter().any(|p| number.starts_with(p)) {
            return Some(format!("outside {}", allowed.join(", ")));
        }
        None
    }
}

/// The Twilio account outbound calls are placed with. Its auth token also signs every
/// webhook Twilio sends (`X-Twilio-Signature`).
#[derive(Debug, Clone, Deserialize)]
pub struct TwilioConfig {
    /// `https://api.twilio.com`, or a stand-in.
    pub base_url: String,
    pub account_sid: String,
    pub auth_token: String,
    /// Deadline of one REST call.
    pub timeout_ms: u64,
    /// The number portal sign-in codes are sent from by SMS (E.164).
    #[serde(default, deserialize_with = "phone_number")]
    pub sms_from: String,
    /// A Messaging Service that sends them instead (`MG…`); wins over `sms_from`.
    #[serde(default)]
    pub messaging_service_sid: String,
}

/// A phone number from a file or the environment, where `+15005550006` reads as an integer.
fn phone_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Number {
        Text(String),
        Unsigned(u64),
        Signed(i64),
    }
    Ok(match Number::deserialize(deserializer)? {
        Number::Text(text) => text,
        Number::Unsigned(n) => format!("+{n}"),
        Number::Signed(n) => format!("+{}", n.unsigned_abs()),
    })
}

impl TwilioConfig {
    /// Whether outbound calls and Twilio's webhooks can work.
    pub fn configured(&self) -> bool {
        !self.account_sid.trim().is_empty() && !self.auth_token.trim().is_empty()
    }

    /// Whether portal sign-in codes can be sent by SMS.
    pub fn sms_configured(&self) -> bool {
        self.configured()
            && !(self.sms_from.trim().is_empty() && self.messaging_service_sid.trim().is_empty())
    }
}

/// Call recordings: two-channel WAV files, caller left and agent right.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordingsConfig {
    /// Record phone calls (an agent may opt out with `metadata.recordCalls: false`).
    pub enabled: bool,
    /// `local` (under the data dir's `recordings/`) or `s3` (an S3-compatible store).
    pub store: String,
    /// Recordings are deleted this many days after they started (fractions allowed); 0 keeps
    /// them for ever.
    pub retention_days: f64,
    /// How often the retention sweep runs.
    pub cleanup_interval_ms: u64,
    /// Audio frames the call may queue for the file writer before frames are dropped (the
    /// call never waits for the disk).
    pub queue_frames: usize,
    /// Threads writing recordings to disk; each serves many calls.
    pub writer_threads: usize,
    pub s3: S3Config,
}

/// An S3-compatible object store (AWS S3, MinIO, Ceph, R2, ...).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct S3Config {
    pub bucket: String,
    pub region: String,
    /// Empty = AWS; else the store's URL, e.g. `http://minio.internal:9000`.
    pub endpoint: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Key prefix, e.g. `recordings/`.
    pub prefix: String,
    /// Allow a plain-http endpoint.
    pub allow_http: bool,
}

/// Where `POST /v1/agents/{id}/sync` pushes agents.
#[derive(Debug, Clone, Deserialize)]
pub struct SyncConfig {
    /// `elevenlabs`, or empty for none (sync then answers 503).
    pub provider: String,
    /// The platform's API base, e.g. `https://api.elevenlabs.io`.
    pub base_url: String,
    pub api_key: String,
    pub timeout_ms: u64,
}

impl SyncConfig {
    pub fn configured(&self) -> bool {
        !self.provider.trim().is_empty() && !self.api_key.trim().is_empty()
    }
}

/// One outside vendor: where it is and the platform's own key for it. Every field may be
/// left out; the adapter then uses the vendor's public endpoint and its usual model.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct VendorConfig {
    /// The vendor's API base, e.g. `https://api.openai.com/v1`, or a compatible server.
    pub base_url: Option<String>,
    /// The vendor's second host where its APIs live apart: Google's Cloud Text-to-Speech,
    /// Azure's speech-recognition host, AssemblyAI's streaming host, the Hugging Face Hub.
    pub alt_base_url: Option<String>,
    /// The platform key (metered). Empty = callers must bring their own.
    #[serde(default)]
    pub api_key: String,
    /// Deadline for the vendor's first byte and between two bytes of a stream.
    pub timeout_ms: Option<u64>,
    /// Models by stage, overriding the adapter's choice: `llm_model`, `stt_model`, `tts_model`.
    pub llm_model: Option<String>,
    pub stt_model: Option<String>,
    pub tts_model: Option<String>,
    /// Voice used when a request asks for `default`.
    pub default_voice: Option<String>,
}

/// Encryption of the vendor keys developers store (`/v1/provider-keys`).
#[derive(Debug, Clone, Deserialize)]
pub struct ProviderKeysConfig {
    /// 32-byte AES-256-GCM key, base64. Empty = generated once into the data dir
    /// (`provider-keys.key`, mode 0600). Several nodes must share one.
    pub master_key: String,
}

/// Webhooks to integrators (`/v1/webhooks`): how many endpoints, and how deliveries are
/// retried.
#[derive(Debug, Clone, Deserialize)]
pub struct WebhooksConfig {
    /// Endpoints one developer may register.
    pub max_endpoints: u32,
    /// The wait before the first retry; it doubles after each failure.
    pub retry_base_ms: u64,
    /// The longest wait between two tries.
    pub retry_max_ms: u64,
    /// How long after its event a delivery is retried before it is given up.
    pub retry_for_seconds: u64,
    /// One attempt's deadline.
    pub timeout_ms: u64,
    /// How often due deliveries are looked for.
    pub poll_ms: u64,
    /// Deliveries in flight at once on one node.
    pub concurrency: usize,
}

/// Outbound campaigns (`/v1/campaigns`): their size, and how their calls are placed.
#[derive(Debug, Clone, Deserialize)]
pub struct CampaignsConfig {
    /// Contacts one campaign may list.
    pub max_contacts: usize,
    /// How often due contacts are looked for.
    pub poll_ms: u64,
    /// How long a node's hold on a campaign lasts without being renewed.
    pub lease_seconds: u64,
    /// How long a call may go without an outcome before its contact is settled `failed`.
    pub stale_call_minutes: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct JobsConfig {
    /// Asynchronous transcriptions waiting or running before new ones are refused (503).
    pub max_pending: usize,
    /// Asynchronous transcriptions run at once.
    pub concurrency: usize,
    /// Longest one job may spend fetching, decoding and recognising before it fails.
    pub timeout_seconds: u64,
    /// Times a job may start running: a job cut by a crash runs again after the restart
    /// only while it has started fewer times than this; then it fails with its reason.
    pub max_runs: i32,
}

impl Config {
    /// Loads the layered configuration; `file` is the optional `--config` argument.
    pub fn load(file: Option<&Path>) -> Result<Config, Box<figment::Error>> {
        let mut figment = Figment::from(Toml::string(DEFAULT_TOML));
        if let Some(file) = file {
            figment = figment.merge(Toml::file_exact(file));
        }
        let short = Env::raw().filter_map(|key| {
            SHORT_FORMS
                .iter()
                .find(|(name, _)| key.as_str().eq_ignore_ascii_case(name))
                .map(|(_, target)| (*target).into())
        });
        let config: Config = figment
            .merge(short)
            .merge(Env::prefixed("SWITCHBOARD__").split("__"))
            .extract()
            .map_err(Box::new)?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), Box<figment::Error>> {
        for tier in ["starter", "pro", "scale"] {
            if !self.tiers.contains_key(tier) {
                return Err(invalid(&format!("tiers.{tier} is missing")));
            }
        }
        if self.database.pool_size == 0 {
            return Err(invalid("database.pool_size must be at least 1"));
        }
        if self.rate_limit.requests == 0 || self.rate_limit.window_seconds == 0 {
            return Err(invalid(
                "rate_limit.requests and rate_limit.window_seconds must be at least 1",
            ));
        }
        if !["local", "s3"].contains(&self.recordings.store.as_str()) {
            return Err(invalid("recordings.store must be `local` or `s3`"));
        }
        if self.recordings.store == "s3" && self.recordings.s3.bucket.trim().is_empty() {
            return Err(invalid(
                "recordings.s3.bucket is needed when recordings.store is `s3`",
            ));
        }
        if self.recordings.retention_days.is_nan() || self.recordings.retention_days < 0.0 {
            return Err(invalid("recordings.retention_days must be 0 or more"));
        }
        if self.recordings.queue_frames == 0
            || self.recordings.cleanup_interval_ms == 0
            || self.recordings.writer_threads == 0
        {
            return Err(invalid(
                "recordings.queue_frames, recordings.cleanup_interval_ms and recordings.writer_threads must be at least 1",
            ));
        }
        if !["", "elevenlabs"].contains(&self.sync.provider.trim()) {
            return Err(invalid("sync.provider must be `elevenlabs` or empty"));
        }
        if !(-40.0..=-3.0).contains(&self.engines.voice_level_dbfs) {
            return Err(invalid(
                "engines.voice_level_dbfs must be between -40 and -3",
            ));
        }
        if !matches!(self.engines.turn_detection.as_str(), "smart" | "silence") {
            return Err(invalid(
                "engines.turn_detection must be `smart` or `silence`",
            ));
        }
        if !matches!(self.engines.live_recognition.as_str(), "fast" | "accurate") {
            return Err(invalid(
                "engines.live_recognition must be `fast` or `accurate`",
            ));
        }
        if self.engines.early_recognition_ms > 10_000 {
            return Err(invalid(
                "engines.early_recognition_ms must be at most 10000 (0 turns it off)",
            ));
        }
        if self.auth.key_prefix.is_empty() {
            return Err(invalid("auth.key_prefix must not be empty"));
        }
        if self.registry.search_graph_ef == 0 {
            return Err(invalid("registry.search_graph_ef must be at least 1"));
        }
        let portal = &self.portal;
        if portal.code_ttl_seconds == 0
            || portal.code_max_attempts == 0
            || portal.code_requests_per_phone == 0
            || portal.code_requests_per_phone_per_ip == 0
            || portal.code_requests_per_ip == 0
            || portal.code_request_window_seconds == 0
            || portal.session_idle_seconds == 0
            || portal.session_max_seconds == 0
        {
            return Err(invalid("every portal.* limit must be at least 1"));
        }
        if self.jobs.timeout_seconds == 0 || self.jobs.max_runs < 1 {
            return Err(invalid(
                "jobs.timeout_seconds and jobs.max_runs must be at least 1",
            ));
        }
        let hooks = &self.webhooks;
        if hooks.max_endpoints == 0
            || hooks.retry_base_ms == 0
            || hooks.retry_max_ms < hooks.retry_base_ms
            || hooks.timeout_ms == 0
            || hooks.poll_ms == 0
            || hooks.concurrency == 0
        {
            return Err(invalid(
                "webhooks.max_endpoints, retry_base_ms, timeout_ms, poll_ms and concurrency must be \
                 at least 1, and retry_max_ms at least retry_base_ms",
            ));
        }
        let campaigns = &self.campaigns;
        if campaigns.max_contacts == 0
            || campaigns.poll_ms == 0
            || campaigns.lease_seconds == 0
            || campaigns.stale_call_minutes == 0
        {
            return Err(invalid(
                "campaigns.max_contacts, poll_ms, lease_seconds and stale_call_minutes must be at \
                 least 1",
            ));
        }
        if self.registry.search_graph_min_chunks == 0 {
            return Err(invalid(
                "registry.search_graph_min_chunks must be at least 1",
            ));
        }
        Ok(())
    }

    /// The database URL to use: the configured one, or the SQLite file in the data dir.
    pub fn database_url(&self) -> String {
        if self.database.url.trim().is_empty() {
            self.server
                .data_dir
                .join("switchboard.db")
                .to_string_lossy()
                .into_owned()
        } else {
            self.database.url.trim().to_string()
        }
    }

    /// The tier a developer falls back to when theirs is unknown.
    pub fn tier(&self, name: &str) -> &TierConfig {
        self.tiers
            .get(name)
            .or_else(|| self.tiers.get("starter"))
            .expect("config check guarantees a starter tier")
    }
}

fn invalid(message: &str) -> Box<figment::Error> {
    Box::new(figment::Error::from(message.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_defaults_load_without_edits() {
        let config = Config::load(None).expect("defaults load");
        assert_eq!(config.server.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(config.auth.key_prefix, "sb_live_");
        assert!(config.database_url().ends_with("switchboard.db"));
        // Turns end on the timer unless an agent asks for smart detection; every model loads
        // at start.
        assert_eq!(config.engines.turn_detection, "silence");
        assert!(config.engines.preload);
        // Callers' turns: recognised from a 200 ms pause on, decoded greedily.
        assert_eq!(config.engines.early_recognition_ms, 200);
        assert_eq!(config.engines.live_recognition, "fast");
        assert_eq!(config.engines.llm_prompt_cache, 4);
        assert_eq!(
            config.engines.llm_knowledge_history,
            crate::engines::llm::DEFAULT_KNOWLEDGE_HISTORY_TOKENS
        );
    }

    #[test]
    fn live_recognition_settings_out_of_range_are_refused() {
        let defaults = Config::load(None).expect("defaults load");
        let mut config = defaults.clone();
        config.engines.live_recognition = "greedy".into();
        let error = config.check().unwrap_err().to_string();
        assert!(error.contains("engines.live_recognition"), "{error}");
        let mut config = defaults.clone();
        config.engines.early_recognition_ms = 10_001;
        let error = config.check().unwrap_err().to_string();
        assert!(error.contains("engines.early_recognition_ms"), "{error}");
        let mut config = defaults;
        config.engines.live_recognition = "accurate".into();
        config.engines.early_recognition_ms = 0;
        assert!(config.check().is_ok());
    }

    #[test]
    fn search_graphs_start_at_100k_chunks_on_half_the_cores() {
        let mut registry = Config::load(None).expect("defaults load").registry;
        assert_eq!(registry.search_graph_min_chunks, 100_000);
        assert_eq!(registry.search_graph_threads, 0);
        assert_eq!(
            registry.search_graph_ef,
            crate::knowledge::index::GRAPH_EF_SEARCH
        );
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(registry.graph_threads(), (cores / 2).max(1));
        registry.search_graph_threads = 3;
        assert_eq!(registry.graph_threads(), 3);
    }
}
