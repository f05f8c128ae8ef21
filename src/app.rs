//! What the whole server shares: the registries' addresses, the engines, the vendors, the
//! configuration and the node's services, behind read-only accessors. It sits below the
//! routes (`http`) and the live session (`live`), which both take it; nothing here knows
//! about either.

use std::sync::Arc;

use actix_web::HttpRequest;

use crate::billing::stripe::StripeClient;
use crate::cluster::Drain;
use crate::config::Config;
use crate::engines::Engines;
use crate::fetch::Fetcher;
use crate::observability::otlp::TraceExport;
use crate::portal::Portal;
use crate::recording::{RecordingStorage, Recordings};
use crate::registry::provider_keys::ProviderKeys;
use crate::registry::tool_secrets::ToolSecrets;
use crate::registry::{
    AgentRegistry, CampaignRegistry, CollectionRegistry, ConversationRegistry, JobRegistry,
    KeyRegistry, KnowledgeIndex, Metering, SessionRegistry, Supervised, TelephonyRegistry,
    WebhookRegistry,
};
use crate::store::Db;
use crate::telephony::rest::TwilioClient;
use crate::telephony::token::TokenSigner;
use crate::vendors::agent_sync::AgentSync;
use crate::vendors::Vendors;

/// The parts the server is assembled from, handed over once at start-up.
pub struct AppParts {
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
    pub signer: TokenSigner,
    pub engines: Engines,
    pub fetcher: Fetcher,
    pub vendors: Vendors,
    /// The developers' stored vendor keys.
    pub provider_keys: ProviderKeys,
    /// Opens the sealed secrets and headers of agents' HTTP tools.
    pub tool_secrets: ToolSecrets,
    /// The payment processor's client; `None` when billing is not configured.
    pub stripe: Option<StripeClient>,
    /// Phone numbers, outbound call tasks, recordings and agent syncs.
    pub telephony: Supervised<TelephonyRegistry>,
    /// Starts call recordings; serves finished ones through `recording_storage`.
    pub recordings: Recordings,
    pub recording_storage: RecordingStorage,
    /// Twilio's REST API; `None` when `[telephony.twilio]` has no account.
    pub twilio: Option<TwilioClient>,
    /// The platform agents are synced to; `None` when `[sync]` is not configured.
    pub agent_sync: Option<AgentSync>,
    /// Session traces to an OpenTelemetry collector; `None` when `[otlp]` has no endpoint.
    pub traces: Option<Arc<TraceExport>>,
    /// This node's live sessions, and whether it drains before stopping.
    pub drain: Arc<Drain>,
    /// The developer portal's sign-in codes and sessions.
    pub portal: Portal,
    /// The developers' webhook endpoints and the deliveries made to them.
    pub webhooks: Supervised<WebhookRegistry>,
    /// Outbound campaigns and their contacts.
    pub campaigns: Supervised<CampaignRegistry>,
}

/// What every handler and every live session can reach. Built once from [`AppParts`]; read
/// only through its accessors.
pub struct AppState {
    parts: AppParts,
}

impl AppState {
    pub fn new(parts: AppParts) -> Self {
        Self { parts }
    }

    pub fn config(&self) -> &Config {
        &self.parts.config
    }

    pub fn db(&self) -> &Db {
        &self.parts.db
    }

    pub fn keys(&self) -> &Supervised<KeyRegistry> {
        &self.parts.keys
    }

    pub fn agents(&self) -> &Supervised<AgentRegistry> {
        &self.parts.agents
    }

    pub fn collections(&self) -> &Supervised<CollectionRegistry> {
        &self.parts.collections
    }

    pub fn metering(&self) -> &Supervised<Metering> {
        &self.parts.metering
    }

    pub fn jobs(&self) -> &Supervised<JobRegistry> {
        &self.parts.jobs
    }

    pub fn knowledge(&self) -> &Supervised<KnowledgeIndex> {
        &self.parts.knowledge
    }

    pub fn conversations(&self) -> &Supervised<ConversationRegistry> {
        &self.parts.conversations
    }

    pub fn sessions(&self) -> &Supervised<SessionRegistry> {
        &self.parts.sessions
    }

    pub fn signer(&self) -> &TokenSigner {
        &self.parts.signer
    }

    pub fn engines(&self) -> &Engines {
        &self.parts.engines
    }

    pub fn fetcher(&self) -> &Fetcher {
        &self.parts.fetcher
    }

    pub fn vendors(&self) -> &Vendors {
        &self.parts.vendors
    }

    pub fn provider_keys(&self) -> &ProviderKeys {
        &self.parts.provider_keys
    }

    pub fn tool_secrets(&self) -> &ToolSecrets {
        &self.parts.tool_secrets
    }

    pub fn stripe(&self) -> &Option<StripeClient> {
        &self.parts.stripe
    }

    pub fn telephony(&self) -> &Supervised<TelephonyRegistry> {
        &self.parts.telephony
    }

    pub fn recordings(&self) -> &Recordings {
        &self.parts.recordings
    }

    pub fn recording_storage(&self) -> &RecordingStorage {
        &self.parts.recording_storage
    }

    pub fn twilio(&self) -> &Option<TwilioClient> {
        &self.parts.twilio
    }

    pub fn agent_sync(&self) -> &Option<AgentSync> {
        &self.parts.agent_sync
    }

    pub fn traces(&self) -> &Option<Arc<TraceExport>> {
        &self.parts.traces
    }

    pub fn drain(&self) -> &Arc<Drain> {
        &self.parts.drain
    }

    pub fn portal(&self) -> &Portal {
        &self.parts.portal
    }

    pub fn webhooks(&self) -> &Supervised<WebhookRegistry> {
        &self.parts.webhooks
    }

    pub fn campaigns(&self) -> &Supervised<CampaignRegistry> {
        &self.parts.campaigns
    }

    /// Every registry, for `/health` and the metrics.
    pub fn registries(&self) -> [&dyn crate::supervision::Probe; 10] {
        let p = &self.parts;
        [
            &p.keys,
            &p.agents,
            &p.collections,
            &p.metering,
            &p.jobs,
            &p.knowledge,
            &p.conversations,
            &p.sessions,
            &p.telephony,
            &p.webhooks,
        ]
    }

    /// The base URL outside parties reach this server at: `server.public_url` when set, else
    /// the scheme and host this request came in on (so a server on an ephemeral port, or
    /// behind a proxy that sets `Forwarded`/`X-Forwarded-*`, advertises a URL that works).
    pub fn public_base(&self, req: &HttpRequest) -> String {
        let configured = self.config().server.public_url.trim().trim_end_matches('/');
        if !configured.is_empty() {
            return configured.to_string();
        }
        let info = req.connection_info();
        format!("{}://{}", info.scheme(), info.host())
    }
}
