//! The HTTP API: routes, shared state, and how malformed requests become documented errors.

pub mod agent_sync;
pub mod agents;
pub mod auth;
pub mod billing;
pub mod body;
pub mod body_timeout;
pub mod chat;
pub mod collections;
pub mod direct;
pub mod health;
pub mod instances;
pub mod keys;
pub mod knowledge;
pub mod metrics;
pub mod observability;
pub mod openai_audio;
pub mod openapi;
pub mod pagination;
pub mod phone_numbers;
pub mod portal;
pub mod provider_keys;
pub mod providers;
pub mod provision;
pub mod recordings;
pub mod request_id;
pub mod sessions;
pub mod synthesize;
pub mod transcribe;
pub mod twilio_calls;
pub mod upgrade;
pub mod upload;
pub mod validate;
pub mod widget;

use crate::registry::Supervised;
use actix_web::error::{PathError, QueryPayloadError};
use actix_web::middleware::from_fn;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::config::Config;
use crate::engines::Engines;
use crate::error::ApiError;
use crate::fetch::Fetcher;
use crate::registry::{
    AgentRegistry, CollectionRegistry, ConversationRegistry, JobRegistry, KeyRegistry,
    KnowledgeIndex, Metering, SessionRegistry,
};
use crate::store::Db;

/// What every handler can reach: the registries' addresses and the configuration.
pub struct AppState {
    pub config: Config,
    pub db: Db,
    pub keys: Supervised<KeyRegistry>,
    pub agents: Supervised<AgentRegistry>,
    pub collections: Supervised<CollectionRegistry>,
    pub metering: Supervised<Metering>,
    pub jobs: Supervised<JobRegistry>,
    pub knowledge: Supervised<KnowledgeIndex>,
    pub conversations: Supervised<ConversationRegistry>,
    pub sessions: Supervised<SessionRegistry>,
    pub signer: crate::telephony::token::TokenSigner,
    pub engines: Engines,
    pub fetcher: Fetcher,
    pub vendors: crate::vendors::Vendors,
    /// The payment processor's client; `None` when billing is not configured.
    pub stripe: Option<crate::billing::stripe::StripeClient>,
    /// Phone numbers, outbound call tasks, recordings and agent syncs.
    pub telephony: Supervised<crate::registry::TelephonyRegistry>,
    /// Starts call recordings; serves finished ones through `recording_storage`.
    pub recordings: crate::recording::Recordings,
    pub recording_storage: crate::recording::RecordingStorage,
    /// Twilio's REST API; `None` when `[telephony.twilio]` has no account.
    pub twilio: Option<crate::telephony::rest::TwilioClient>,
    /// The platform agents are synced to; `None` when `[sync]` is not configured.
    pub agent_sync: Option<crate::vendors::agent_sync::AgentSync>,
    /// Session traces to an OpenTelemetry collector; `None` when `[otlp]` has no endpoint.
    pub traces: Option<std::sync::Arc<crate::observability::otlp::TraceExport>>,
    /// This node's live sessions, and whether it drains before stopping.
    pub drain: std::sync::Arc<crate::cluster::Drain>,
    /// The developer portal's sign-in codes and sessions.
    pub portal: crate::portal::Portal,
}

impl AppState {
    /// Every registry, for `/health` and the metrics.
    pub fn registries(&self) -> [&dyn crate::supervision::Probe; 9] {
        [
            &self.keys,
            &self.agents,
            &self.collections,
            &self.metering,
            &self.jobs,
            &self.knowledge,
            &self.conversations,
            &self.sessions,
            &self.telephony,
        ]
    }
}

/// Registers every route and the extractor error mappings.
pub fn configure(cfg: &mut web::ServiceConfig, max_json_bytes: usize) {
    cfg.app_data(body::JsonLimit(max_json_bytes))
        .app_data(web::QueryConfig::default().error_handler(|err, _| query_error(err).into()))
        .app_data(web::PathConfig::default().error_handler(|err, _| path_error(err).into()))
        .service(health::health)
        .service(openapi::openapi_json)
        // Proven by metrics.bearer_token when one is set, not an API key.
        .service(metrics::scrape)
        // Authenticated by its relay token, not an API key: outside the /v1 key check.
        .service(
            web::resource("/v1/sessions/twilio/stream")
                .route(web::get().to(sessions::twilio_stream)),
        )
        // Twilio's webhooks, proven by X-Twilio-Signature, not an API key.
        .configure(twilio_calls::webhooks)
        // Proven by its Stripe-Signature, not an API key.
        .service(web::resource("/v1/billing/webhook").route(web::post().to(billing::webhook)))
        // API key or session token, checked by the handler itself.
        .service(
            web::resource("/v1/agents/{id}/session").route(web::get().to(direct::direct_session)),
        )
        // The browser widget's public files.
        .configure(widget::routes)
        // The developer portal: its own session cookie, never an API key.
        .configure(portal::routes)
        .service(
            web::scope("/v1")
                .wrap(from_fn(auth::require_api_key))
                .configure(keys::routes)
                .configure(provider_keys::routes)
                .configure(billing::routes)
                // Before the agents' routes, whose /agents/{id} would take "provision".
                .configure(provision::routes)
                .configure(agent_sync::routes)
                .configure(agents::routes)
                .configure(instances::routes)
                .configure(chat::routes)
                .configure(twilio_calls::routes)
                .configure(sessions::routes)
                .configure(phone_numbers::routes)
                .configure(recordings::routes)
                .configure(direct::routes)
                .configure(observability::routes)
                .configure(collections::routes)
                .configure(knowledge::routes)
                .configure(synthesize::routes)
                .configure(transcribe::routes)
                .configure(openai_audio::routes),
        )
        .default_service(web::to(not_found));
}

/// The base URL outside parties reach this server at: `server.public_url` when set, else
/// the scheme and host this request came in on (so a server on an ephemeral port, or behind
/// a proxy that sets `Forwarded`/`X-Forwarded-*`, advertises a URL that works).
pub fn public_base(state: &AppState, req: &HttpRequest) -> String {
    let configured = state.config.server.public_url.trim().trim_end_matches('/');
    if !configured.is_empty() {
        return configured.to_string();
    }
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

/// Registers, after a module's routes, a catch-all for its paths so a known path with an
/// unsupported method answers 405 instead of falling through to 404.
pub fn other_methods(cfg: &mut web::ServiceConfig, paths: &[&str]) {
    cfg.service(web::resource(paths.to_vec()).to(method_not_allowed));
}

pub(crate) async fn method_not_allowed(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed(format!(
        "{} is not allowed on {}",
        req.method(),
        req.path()
    )))
}

pub(crate) async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "no route for {} {}",
        req.method(),
        req.path()
    )))
}

fn query_error(err: QueryPayloadError) -> ApiError {
    ApiError::bad_request(format!("invalid query string: {err}"))
}

fn path_error(err: PathError) -> ApiError {
    ApiError::bad_request(format!("invalid path: {err}"))
}
