//! Start-up and shutdown of the service: storage, the first developer's key, the registry
//! actors, the change listener (PostgreSQL), the HTTP server; and the graceful stop on
//! SIGTERM/SIGINT: drain (see [`crate::cluster::drain`]), then a final flush of what is still
//! in memory.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix_http::HttpService;
use actix_service::{
    fn_factory, fn_service, map_config, IntoServiceFactory, ServiceFactory, ServiceFactoryExt,
};
use actix_web::dev::AppConfig;
use actix_web::middleware::from_fn;
use actix_web::{web, App};
use anyhow::Context as _;

use crate::app::{AppParts, AppState};
use crate::billing::period::SystemClock;
use crate::billing::stripe::StripeClient;
use crate::cluster::feed::{self, Subscribers};
use crate::cluster::{Drain, FeedState};
use crate::config::Config;
use crate::engines::Engines;
use crate::fetch::Fetcher;
use crate::http;
use crate::ids::{DeveloperId, NodeId};
use crate::observability::otlp::TraceExport;
use crate::portal::{Delivery, Portal};
use crate::recording::{RecordingReports, RecordingStorage, Recordings};
use crate::registry::keys::{create_key, FlushLastUsed};
use crate::registry::metering::FlushUsage;
use crate::registry::provider_keys::ProviderKeys;
use crate::registry::sessions::Settle;
use crate::registry::tool_secrets::ToolSecrets;
use crate::registry::{
    AgentRegistry, CampaignRegistry, CollectionRegistry, ConversationRegistry, JobRegistry,
    KeyRegistry, KnowledgeIndex, Metering, SessionRegistry, Supervised, TelephonyRegistry,
    WebhookRegistry,
};
use crate::store::{developers, Backend, Db};
use crate::telephony::rest::{Sender, TwilioClient};
use crate::telephony::token::TokenSigner;
use crate::vendors::sealing::KeySealer;

/// Runs the service until it is asked to stop (SIGINT/SIGTERM).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.server.data_dir).with_context(|| {
        format!(
            "cannot create the data dir {}",
            config.server.data_dir.display()
        )
    })?;
    keep_data_private(&config)?;
    let url = config.database_url();
    let db = Db::open(
        &url,
        config.database.pool_size,
        config.database.sqlite_busy_timeout_ms,
    )
    .await
    .context("cannot open the database")?;
    bootstrap_first_key(&db, &config).await?;

    // On PostgreSQL the caches follow the other nodes' changes (SQLite: one server).
    let feed_state = FeedState::default();
    // Each registry is supervised: one that dies is started again from these parts.
    let keys = Supervised::start("keys", {
        let (db, auth, feed) = (db.clone(), config.auth.clone(), feed_state.clone());
        move || KeyRegistry::new(db.clone(), auth.clone()).following(feed.clone())
    });
    let sealer = KeySealer::load(&config.provider_keys.master_key, &config.server.data_dir)
        .context("cannot load the provider keys' master key")?;
    let tool_secrets = ToolSecrets::new(sealer.clone());
    let agents = Supervised::start("agents", {
        let (db, registry, feed) = (db.clone(), config.registry.clone(), feed_state.clone());
        let secrets = tool_secrets.clone();
        move || AgentRegistry::new(db.clone(), &registry, secrets.clone()).following(feed.clone())
    });
    let collections = Supervised::start("collections", {
        let (db, registry, feed) = (db.clone(), config.registry.clone(), feed_state.clone());
        let agents = agents.clone();
        move || {
            CollectionRegistry::new(db.clone(), &registry, agents.clone()).following(feed.clone())
        }
    });
    let clock = Arc::new(SystemClock {
        offset_ms: config.metering.clock_offset_seconds.saturating_mul(1000),
    });
    let metering = Supervised::start("metering", {
        let (db, config) = (db.clone(), config.clone());
        move || {
            Metering::new(
                db.clone(),
                config.tiers.clone(),
                config.pricing.clone(),
                config.rate_limit.clone(),
                clock.clone(),
                &config.metering,
            )
        }
    });
    let engines = Engines::start(&config);
    let conversations = Supervised::start("conversations", {
        let db = db.clone();
        move || ConversationRegistry::new(db.clone())
    });
    let node_id = node_id(&config.server.data_dir)?;
    let recording_storage = RecordingStorage::new(&config.recordings, &config.server.data_dir)
        .context("cannot set up the recording store")?;
    end_abandoned_work(&db, &node_id, &recording_storage).await?;
    let sessions = Supervised::start("sessions", {
        let (db, node_id) = (db.clone(), node_id.clone());
        move || SessionRegistry::new(db.clone(), node_id.clone())
    });
    let telephony = Supervised::start("telephony", {
        let (db, storage, config, node_id) = (
            db.clone(),
            recording_storage.clone(),
            config.recordings.clone(),
            node_id.clone(),
        );
        move || TelephonyRegistry::new(db.clone(), storage.clone(), config.clone(), node_id.clone())
    });
    let drain = Drain::new();
    // What a peak of calls took goes back to the system once they end.
    if config.server.give_back_memory {
        actix_web::rt::spawn(crate::memory::give_back_when_load_falls(drain.clone()));
    }
    let recordings = Recordings::new(
        config.recordings.clone(),
        recording_storage.clone(),
        RecordingReports {
            started: telephony.notifier(),
            finished: telephony.notifier(),
        },
        drain.clone(),
    )
    .map_err(anyhow::Error::msg)?;
    let twilio = if config.telephony.twilio.configured() {
        Some(
            TwilioClient::new(&config.telephony.twilio)
                .context("cannot build the Twilio client")?,
        )
    } else {
        None
    };
    let signer = TokenSigner::new(relay_secret(&config)?);
    let portal = Portal::new(
        db.clone(),
        config.portal.clone(),
        &portal_secret(&config)?,
        sign_in_delivery(&config)?,
    );
    let knowledge = Supervised::start("knowledge", {
        let (db, dimensions, registry, nice, feed) = (
            db.clone(),
            engines.batch.embedder.dimensions(),
            config.registry.clone(),
            config.server.background_nice,
            feed_state.clone(),
        );
        move || KnowledgeIndex::new(db.clone(), dimensions, &registry, nice).following(feed.clone())
    });
    let listener = (db.backend() == Backend::Postgres).then(|| {
        let listen_url = match config.database.listen_url.trim() {
            "" => url.clone(),
            own => own.to_string(),
        };
        let subscribers = Subscribers(vec![
            keys.notifier(),
            agents.notifier(),
            collections.notifier(),
            knowledge.notifier(),
            metering.notifier(),
        ]);
        feed::start(&listen_url, subscribers, feed_state.clone())
    });
    let fetcher = Fetcher::new(&config.fetch).context("cannot build the HTTP client")?;
    let vendors =
        crate::vendors::Vendors::new(&config).context("cannot set up the vendor adapters")?;
    let provider_keys = ProviderKeys::new(db.clone(), sealer.clone());
    let webhooks = Supervised::start("webhooks", {
        let (db, sealer, fetcher, config) =
            (db.clone(), sealer, fetcher.clone(), config.webhooks.clone());
        move || WebhookRegistry::new(db.clone(), sealer.clone(), fetcher.clone(), config.clone())
    });
    let campaigns = Supervised::start("campaigns", {
        let db = db.clone();
        move || CampaignRegistry::new(db.clone())
    });
    let runner_node = node_id.clone();
    let jobs = Supervised::start("jobs", {
        let (db, engines, fetcher, data_dir, config, metering) = (
            db.clone(),
            engines.clone(),
            fetcher.clone(),
            config.server.data_dir.clone(),
            config.jobs.clone(),
            metering.clone(),
        );
        move || {
            JobRegistry::new(
                db.clone(),
                engines.clone(),
                fetcher.clone(),
                node_id.clone(),
                &data_dir,
                &config,
                metering.clone(),
            )
        }
    });

    let traces = TraceExport::start(&config.otlp, tokio::runtime::Handle::current())
        .map_err(anyhow::Error::msg)?;

    let state = web::Data::new(AppState::new(AppParts {
        config: config.clone(),
        db,
        keys: keys.clone(),
        agents,
        collections,
        metering: metering.clone(),
        jobs,
        knowledge,
        conversations,
        sessions: sessions.clone(),
        signer,
        engines,
        fetcher,
        vendors,
        provider_keys,
        tool_secrets,
        stripe: StripeClient::from_config(&config.billing.stripe),
        telephony,
        recordings,
        recording_storage,
        twilio,
        agent_sync: crate::vendors::agent_sync::AgentSync::from_config(&config.sync),
        traces: traces.clone(),
        drain: drain.clone(),
        portal,
        webhooks,
        campaigns,
    }));
    // Every node runs the campaigns whose lease it holds.
    actix::Actor::start(crate::live::campaigns::CampaignRunner::new(
        state.clone(),
        runner_node,
    ));
    let max_json = config.server.max_json_bytes;
    let socket_limits = crate::transports::socket::SocketLimits::from_config(&config.server);
    let body_deadline = http::body_timeout::BodyDeadline::from_config(&config.server);
    let app = move || {
        App::new()
            .app_data(state.clone())
            .app_data(socket_limits)
            .app_data(body_deadline)
            .configure(|cfg| http::configure(cfg, max_json))
            // Inside the request id's scope, so that a 408 carries it.
            .wrap(from_fn(http::body_timeout::limit))
            .wrap(from_fn(http::request_id::assign))
    };
    let http_listener = listen(config.server.bind)
        .with_context(|| format!("cannot listen on {}", config.server.bind))?;
    let addr = http_listener.local_addr()?;
    let keep_alive = Duration::from_secs(config.server.keep_alive_seconds);
    // Signals are ours: a stop drains live calls first (see `stop_gracefully`).
    let mut server = actix_server::Server::build()
        .disable_signals()
        .shutdown_timeout(HTTP_SHUTDOWN_SECONDS);
    if config.server.workers > 0 {
        server = server.workers(config.server.workers);
    }
    // Idle keep-alive connections close as a graceful stop begins, not at the stop's timeout.
    let stopping = server.graceful_shutdown_signal();
    // Assembled as actix-web's `HttpServer` would (with its timeouts), plus the service that
    // upgraded connections go to (see `http::upgrade`).
    let server = server.listen("switchboard", http_listener, move || {
        let upgrade_app = app.clone();
        let stopping = stopping.clone();
        HttpService::build()
            .graceful_shutdown_signal(move || {
                let stopping = stopping.clone();
                async move { stopping.notified().await }
            })
            .keep_alive(keep_alive)
            .client_request_timeout(Duration::from_secs(5))
            .client_disconnect_timeout(Duration::from_secs(1))
            // Real-time audio goes out as small WebSocket messages (a 20 ms frame, a mark, a
            // clear): each must leave at once, not wait for the peer's (delayed)
            // acknowledgement of the last.
            .tcp_nodelay(true)
            .local_addr(addr)
            .upgrade(fn_factory(move || {
                let app = upgrade_app().into_factory();
                async move {
                    let app = Rc::new(app.new_service(AppConfig::default()).await?);
                    Ok::<_, ()>(fn_service(move |upgrade| {
                        http::upgrade::serve(app.clone(), upgrade)
                    }))
                }
            }))
            .finish(map_config(
                app()
                    .into_factory()
                    .map_err(|e: actix_web::Error| e.error_response()),
                |_| AppConfig::default(),
            ))
            .tcp()
    })?;
    crate::observability::log::say(&format!("switchboard listening on http://{addr}"));
    let server = server.run();
    let handle = server.handle();
    let mut running = actix_web::rt::spawn(server);
    let mut signals = StopSignals::new()?;
    tokio::select! {
        result = &mut running => {
            // The server ended by itself (it failed): nothing to drain.
            result??;
        }
        signal = signals.next() => {
            tracing::info!("{signal}: stopping gracefully");
            stop_gracefully(
                &drain,
                &sessions,
                Duration::from_secs(config.server.drain_timeout_seconds),
                &mut signals,
            )
            .await;
            handle.stop(true).await;
            running.await??;
        }
    }

    if let Some(listener) = listener {
        listener.abort();
    }
    tracing::info!("stopping: writing back usage and key activity");
    let _ = metering.send(FlushUsage).await;
    let _ = keys.send(FlushLastUsed).await;
    if let Some(traces) = traces {
        // The processor's flush blocks until the collector answers (or times out).
        let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// How long in-flight HTTP requests may take to finish once the drain is over.
const HTTP_SHUTDOWN_SECONDS: u64 = 10;

/// Connections waiting to be accepted, at most (as actix-web's `HttpServer`): a thousand
/// callers dialling in at once are all let in.
const LISTEN_BACKLOG: u32 = 1024;

/// A listening socket on `addr` (port 0: any free port).
fn listen(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)?.into_std()
}
/// How long sessions ended by the server may take to record their end and close.
const END_SESSIONS_WITHIN: Duration = Duration::from_secs(5);
/// How long finished recordings may take to be completed in storage.
const RECORDINGS_WITHIN: Duration = Duration::from_secs(30);
/// How long the session records already sent may take to be written.
const RECORDS_WITHIN: Duration = Duration::from_secs(10);

/// SIGTERM and SIGINT (Ctrl-C), as one stream.
struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn new() -> anyhow::Result<StopSignals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignals {
            term: signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("cannot watch for SIGINT")?,
        })
    }

    /// The next stop signal's name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

/// Drains the node: new sessions are refused from now on, live ones run until they end or
/// `drain_timeout` passes (or a second signal comes); the rest are then ended cleanly. Returns
/// once every session's record and recording is complete (each wait bounded).
async fn stop_gracefully(
    drain: &Arc<Drain>,
    sessions: &Supervised<SessionRegistry>,
    drain_timeout: Duration,
    signals: &mut StopSignals,
) {
    drain.begin();
    let live = drain.live_sessions();
    if live > 0 {
        tracing::info!(
            live,
            seconds = drain_timeout.as_secs(),
            "waiting for live sessions to end"
        );
        tokio::select! {
            _ = drain.sessions_ended(drain_timeout) => {}
            signal = signals.next() => tracing::info!("{signal} again: ending live sessions now"),
        }
    }
    let remaining = drain.end_sessions();
    if remaining > 0 {
        tracing::info!(remaining, "ending the sessions still live");
        if !drain.sessions_ended(END_SESSIONS_WITHIN).await {
            tracing::warn!(
                live = drain.live_sessions(),
                "sessions did not end in time; closing them with the server"
            );
        }
    }
    if !drain.recordings_finished(RECORDINGS_WITHIN).await {
        tracing::warn!("recordings were still being completed at shutdown");
    }
    if tokio::time::timeout(RECORDS_WITHIN, sessions.send(Settle))
        .await
        .is_err()
    {
        tracing::warn!("session records were still being written at shutdown");
    }
    tracing::info!("drained");
}

/// On an empty database, creates the bootstrap developer and prints its first key, once.
async fn bootstrap_first_key(db: &Db, config: &Config) -> anyhow::Result<()> {
    if developers::count(db).await? > 0 {
        return Ok(());
    }
    let developer = &DeveloperId::from(config.auth.bootstrap_developer.as_str());
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

/// Ends what this node's previous process was doing when it died (a crash or `kill -9`
/// gives it no chance to): its live sessions and the recordings it was writing become
/// `failed`, since nothing can resume a call. Runs before this process serves anything, so
/// none of its own sessions can be mistaken for abandoned ones. Work of other nodes sharing
/// the database is left to them. (Its unfinished transcription jobs are resumed instead, by
/// `JobRegistry`.)
async fn end_abandoned_work(
    db: &Db,
    node: &NodeId,
    recording_storage: &RecordingStorage,
) -> anyhow::Result<()> {
    let now = crate::time::now_ms();
    let sessions = crate::store::sessions::fail_abandoned(db, node, now)
        .await
        .context("cannot end the sessions a previous run left active")?;
    let abandoned = crate::store::telephony::fail_abandoned_recordings(db, node, now)
        .await
        .context("cannot end the recordings a previous run left unfinished")?;
    let analyses = crate::store::sessions::fail_abandoned_analyses(db, node, now)
        .await
        .context("cannot end the post-call analyses a previous run left pending")?;
    let recordings = abandoned.len();
    for location in abandoned {
        // The partial file of a recording that is not kept goes with it.
        if let Err(e) = recording_storage.remove_partial(&location).await {
            tracing::warn!("could not remove the partial recording {location}: {e}");
        }
    }
    if sessions + recordings + analyses > 0 {
        tracing::warn!(
            "the previous run stopped without ending its work: {sessions} sessions, \
             {recordings} recordings and {analyses} post-call analyses are now failed"
        );
    }
    Ok(())
}

/// This server's stable identity, kept in the data dir: jobs it accepted are resumed by it
/// after a restart, and only by it.
fn node_id(data_dir: &std::path::Path) -> anyhow::Result<NodeId> {
    let path = data_dir.join("node-id");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim();
        if !existing.is_empty() {
            return Ok(NodeId::from(existing));
        }
    }
    let id = NodeId::new();
    std::fs::write(&path, id.as_str())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(id)
}

/// Takes group and other permissions off a secret an earlier version wrote world-readable.
fn keep_private(path: &std::path::Path) -> anyhow::Result<()> {
    restrict(path, 0o600)
}

/// The data dir holds every tenant's transcripts, call audio and sealed keys: it is the
/// owner's only (0700), and whatever this process creates is too (umask 077: files 0600,
/// dirs 0700). A data dir or SQLite database an operator or an earlier version left open to
/// others is restricted at start.
fn keep_data_private(config: &Config) -> anyhow::Result<()> {
    #[cfg(unix)]
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let data_dir = &config.server.data_dir;
    restrict(data_dir, 0o700)?;
    if config.database.url.trim().is_empty() {
        let database = config.database_url();
        for suffix in ["", "-wal", "-shm"] {
            let path = std::path::PathBuf::from(format!("{database}{suffix}"));
            if path.exists() {
                restrict(&path, 0o600)?;
            }
        }
    }
    let recordings = data_dir.join("recordings");
    if recordings.exists() {
        restrict(&recordings, 0o700)?;
    }
    Ok(())
}

/// Sets `path`'s permissions to `mode` when group or others had any access.
fn restrict(path: &std::path::Path, mode: u32) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let current = std::fs::metadata(path)?.permissions().mode();
        if current & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .with_context(|| format!("cannot restrict {}", path.display()))?;
            tracing::warn!(
                "{} was open to others ({:o}); it is now owner-only",
                path.display(),
                current & 0o777
            );
        }
    }
    Ok(())
}

/// The relay-token secret: configured, or generated once into the data dir.
fn relay_secret(config: &Config) -> anyhow::Result<String> {
    secret_or_file(config, &config.telephony.relay_secret, "relay-secret")
}

/// The portal's secret (code hashes, CSRF tokens): configured, or generated once into the
/// data dir.
fn portal_secret(config: &Config) -> anyhow::Result<String> {
    secret_or_file(config, &config.portal.secret, "portal-secret")
}

/// How portal sign-in codes reach the developer: SMS through Twilio when an account and a
/// sender are configured, else the server log.
fn sign_in_delivery(config: &Config) -> anyhow::Result<Delivery> {
    let twilio = &config.telephony.twilio;
    if !twilio.sms_configured() {
        tracing::warn!(
            "portal sign-in codes are written to this log: no SMS sender is configured \
             ([telephony.twilio] account_sid, auth_token and sms_from or messaging_service_sid)"
        );
        return Ok(Delivery::Log);
    }
    let sender = match twilio.messaging_service_sid.trim() {
        "" => Sender::From(twilio.sms_from.trim().to_string()),
        service => Sender::MessagingService(service.to_string()),
    };
    Ok(Delivery::Sms {
        client: TwilioClient::new(twilio).context("cannot build the Twilio client")?,
        sender,
    })
}

/// A configured secret, or one generated once into `file` in the data dir.
fn secret_or_file(config: &Config, configured: &str, file: &str) -> anyhow::Result<String> {
    let configured = configured.trim();
    if !configured.is_empty() {
        return Ok(configured.to_string());
    }
    let path = config.server.data_dir.join(file);
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim();
        if !existing.is_empty() {
            keep_private(&path)?;
            return Ok(existing.to_string());
        }
    }
    // Whoever reads this file can sign relay and session tokens: owner-only, like the
    // provider-key master key.
    let secret = TokenSigner::generate_secret();
    crate::vendors::sealing::write_private(&path, secret.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(secret)
}
