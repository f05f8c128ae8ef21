//! Start-up and shutdown of the service: storage, the first developer's key, the registry
//! actors, the HTTP server, and a final flush of what is still in memory.

use std::io::Write;
use std::sync::Arc;

use actix::Actor;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};
use anyhow::Context as _;

use crate::billing::period::SystemClock;
use crate::billing::stripe::StripeClient;
use crate::config::Config;
use crate::engines::Engines;
use crate::fetch::Fetcher;
use crate::http::{self, AppState};
use crate::observability::otlp::TraceExport;
use crate::recording::{RecordingStorage, Recordings};
use crate::registry::keys::{create_key, FlushLastUsed};
use crate::registry::metering::FlushUsage;
use crate::registry::{
    AgentRegistry, CollectionRegistry, ConversationRegistry, JobRegistry, KeyRegistry,
    KnowledgeIndex, Metering, SessionRegistry, TelephonyRegistry,
};
use crate::store::{developers, Db};
use crate::telephony::rest::TwilioClient;
use crate::telephony::token::TokenSigner;

/// Runs the service until it is asked to stop (SIGINT/SIGTERM).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.server.data_dir).with_context(|| {
        format!(
            "cannot create the data dir {}",
            config.server.data_dir.display()
        )
    })?;
    let url = config.database_url();
    let db = Db::open(
        &url,
        config.database.pool_size,
        config.database.sqlite_busy_timeout_ms,
    )
    .await
    .context("cannot open the database")?;
    bootstrap_first_key(&db, &config).await?;

    let keys = KeyRegistry::new(db.clone(), config.auth.clone()).start();
    let agents = AgentRegistry::new(db.clone(), &config.registry).start();
    let collections = CollectionRegistry::new(db.clone(), &config.registry, agents.clone()).start();
    let clock = Arc::new(SystemClock {
        offset_ms: config.metering.clock_offset_seconds.saturating_mul(1000),
    });
    let metering = Metering::new(
        db.clone(),
        config.tiers.clone(),
        config.pricing.clone(),
        config.rate_limit.clone(),
        clock,
        &config.metering,
    )
    .start();
    let engines = Engines::start(&config);
    let conversations = ConversationRegistry::new(db.clone()).start();
    let sessions = SessionRegistry::new(db.clone()).start();
    let recording_storage = RecordingStorage::new(&config.recordings, &config.server.data_dir)
        .context("cannot set up the recording store")?;
    let telephony = TelephonyRegistry::new(
        db.clone(),
        recording_storage.clone(),
        config.recordings.clone(),
    )
    .start();
    let recordings = Recordings::new(
        config.recordings.clone(),
        recording_storage.clone(),
        telephony.clone(),
    );
    let twilio = if config.telephony.twilio.configured() {
        Some(
            TwilioClient::new(&config.telephony.twilio)
                .context("cannot build the Twilio client")?,
        )
    } else {
        None
    };
    let signer = TokenSigner::new(relay_secret(&config)?);
    let knowledge =
        KnowledgeIndex::new(db.clone(), engines.embedder.dimensions(), &config.registry).start();
    let fetcher = Fetcher::new(&config.fetch).context("cannot build the HTTP client")?;
    let vendors = crate::vendors::Vendors::new(&config, db.clone())
        .context("cannot set up the vendor adapters")?;
    let node_id = node_id(&config.server.data_dir)?;
    let jobs = JobRegistry::new(
        db.clone(),
        engines.clone(),
        fetcher.clone(),
        node_id,
        &config.server.data_dir,
        &config.jobs,
        metering.clone(),
    )
    .start();

    let traces = TraceExport::start(&config.otlp, tokio::runtime::Handle::current())
        .map_err(anyhow::Error::msg)?;

    let state = web::Data::new(AppState {
        config: config.clone(),
        db,
        keys: keys.clone(),
        agents,
        collections,
        metering: metering.clone(),
        jobs,
        knowledge,
        conversations,
        sessions,
        signer,
        engines,
        fetcher,
        vendors,
        stripe: StripeClient::from_config(&config.billing.stripe),
        telephony,
        recordings,
        recording_storage,
        twilio,
        agent_sync: crate::vendors::agent_sync::AgentSync::from_config(&config.sync),
        traces: traces.clone(),
    });
    let max_json = config.server.max_json_bytes;
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .configure(|cfg| http::configure(cfg, max_json))
            .wrap(from_fn(http::request_id::assign))
    })
    .shutdown_timeout(10);
    if config.server.workers > 0 {
        server = server.workers(config.server.workers);
    }
    let server = server
        .bind(config.server.bind)
        .with_context(|| format!("cannot listen on {}", config.server.bind))?;
    for addr in server.addrs() {
        println!("switchboard listening on http://{addr}");
    }
    std::io::stdout().flush()?;
    server.run().await?;

    tracing::info!("stopping: writing back usage and key activity");
    let _ = metering.send(FlushUsage).await;
    let _ = keys.send(FlushLastUsed).await;
    if let Some(traces) = traces {
        // The processor's flush blocks until the collector answers (or times out).
        let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
    }
    Ok(())
}

/// On an empty database, creates the bootstrap developer and prints its first key, once.
async fn bootstrap_first_key(db: &Db, config: &Config) -> anyhow::Result<()> {
    if developers::count(db).await? > 0 {
        return Ok(());
    }
    let developer = &config.auth.bootstrap_developer;
    if !developers::ensure(db, developer).await? {
        return Ok(());
    }
    let issued = create_key(db, &config.auth.key_prefix, developer, "Default", None).await?;
    println!(
        "Created developer {developer} and its first API key. It is shown only once; store it now:"
    );
    println!("{}", issued.raw);
    Ok(())
}

/// This server's stable identity, kept in the data dir: jobs it accepted are resumed by it
/// after a restart, and only by it.
fn node_id(data_dir: &std::path::Path) -> anyhow::Result<String> {
    let path = data_dir.join("node-id");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim();
        if !existing.is_empty() {
            return Ok(existing.to_string());
        }
    }
    let id = crate::registry::new_id("node");
    std::fs::write(&path, &id).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(id)
}

/// The relay-token secret: configured, or generated once into the data dir.
fn relay_secret(config: &Config) -> anyhow::Result<String> {
    let configured = config.telephony.relay_secret.trim();
    if !configured.is_empty() {
        return Ok(configured.to_string());
    }
    let path = config.server.data_dir.join("relay-secret");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim();
        if !existing.is_empty() {
            return Ok(existing.to_string());
        }
    }
    let secret = TokenSigner::generate_secret();
    std::fs::write(&path, &secret).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(secret)
}
