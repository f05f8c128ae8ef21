//! The change feed: on PostgreSQL, triggers announce every change a node may hold in a cache
//! (a key revoked, an agent or collection changed, a document ingested or deleted, a
//! subscription changed) on the channel `switchboard_changes`, inside the writing
//! transaction, whoever wrote it (any node, the CLI, an operator's SQL). Each node keeps one
//! connection of its own `LISTEN`ing there and hands every change to the registries that
//! cache it, which drop or patch their entry at once.
//!
//! The listener pings its connection every [`PING_EVERY`]; when the connection fails it
//! reconnects with backoff (100 ms doubling to 5 s). While it is down [`FeedState::is_live`]
//! is false and the registries fall back to what they did before notifications: the key
//! registry polls for revocations, agent and collection caches expire after
//! `registry.shared_cache_ttl_ms`. On every (re)connect, after `LISTEN` is in place, every
//! cache is emptied ([`Change::Everything`]), since notifications sent meanwhile are lost.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use futures_util::StreamExt;
use serde::Deserialize;

use crate::ids::{AgentId, CollectionId, DeveloperId, DocumentId};
use crate::metrics::metrics;
use crate::supervision::Notifier;
use crate::time::now_ms;

/// The notification channel the triggers of migration `change_notifications` announce on.
pub const CHANNEL: &str = "switchboard_changes";
/// How often an idle listener checks that its connection still answers.
pub const PING_EVERY: Duration = Duration::from_secs(2);
/// How long a ping or a connection attempt may take before the listener counts as down.
const ANSWER_WITHIN: Duration = Duration::from_secs(3);
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How the listener's session shows in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "switchboard-listener";

/// Whether this node hears the other nodes' changes now. Shared by the listener (which sets
/// it) and the registries (which fall back to polling and expiry while it is false).
#[derive(Clone, Default)]
pub struct FeedState {
    inner: Arc<FeedInner>,
}

#[derive(Default)]
struct FeedInner {
    live: AtomicBool,
    /// The last moment (epoch ms) the listener was known to be connected.
    confirmed_at: AtomicI64,
}

impl FeedState {
    /// True while the listener is connected and has answered within the last ping interval.
    pub fn is_live(&self) -> bool {
        self.inner.live.load(Ordering::Acquire)
    }

    /// The last moment (epoch ms) the listener was known to hear every change; a fallback
    /// poll must look back at least to here.
    pub fn confirmed_at(&self) -> i64 {
        self.inner.confirmed_at.load(Ordering::Acquire)
    }

    fn confirm(&self) {
        self.inner.confirmed_at.store(now_ms(), Ordering::Release);
    }

    fn set_live(&self, live: bool) {
        self.inner.live.store(live, Ordering::Release);
        metrics().change_listener_up.set(i64::from(live));
    }
}

/// One announced change, as the triggers write it (`{"kind": ..., ...}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Change {
    /// An API key (by the hash of its raw value) was revoked, re-dated or deleted.
    Key { hash: String },
    /// An agent was changed or archived.
    Agent { developer: DeveloperId, id: AgentId },
    /// A collection was changed or deleted.
    Collection {
        developer: DeveloperId,
        id: CollectionId,
    },
    /// A document of a collection was ingested (`removed: false`) or deleted.
    Documents {
        collection: CollectionId,
        document: DocumentId,
        removed: bool,
    },
    /// A developer's subscription (tier, expiry) changed.
    Developer { id: DeveloperId },
    /// Anything may have changed (the listener (re)connected): drop every cached entry.
    #[serde(skip)]
    Everything,
}

impl Change {
    /// The metric label of this change.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Key { .. } => "key",
            Change::Agent { .. } => "agent",
            Change::Collection { .. } => "collection",
            Change::Documents { .. } => "documents",
            Change::Developer { .. } => "developer",
            Change::Everything => "everything",
        }
    }
}

/// A change for a registry to apply to its cache.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct Changed(pub Change);

/// The registries that cache what other nodes change.
#[derive(Clone)]
pub struct Subscribers(pub Vec<Notifier<Changed>>);

impl Subscribers {
    fn publish(&self, change: &Change) {
        for subscriber in &self.0 {
            subscriber.do_send(Changed(change.clone()));
        }
    }
}

/// Starts the listener on the current runtime; it runs until the handle is aborted.
pub fn start(url: &str, subscribers: Subscribers, state: FeedState) -> tokio::task::JoinHandle<()> {
    let url = with_application_name(url);
    tokio::spawn(async move {
        let mut backoff = MIN_BACKOFF;
        loop {
            let was_connected = match listen(&url, &subscribers, &state).await {
                Ok(()) => true,
                Err(Failure { connected, reason }) => {
                    state.set_live(false);
                    if connected {
                        tracing::warn!(
                            "change listener lost its connection ({reason}); polling until it is back"
                        );
                    } else {
                        tracing::warn!("change listener cannot connect: {reason}");
                    }
                    connected
                }
            };
            if was_connected {
                backoff = MIN_BACKOFF;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    })
}

struct Failure {
    /// Whether `LISTEN` was in place before it failed.
    connected: bool,
    reason: String,
}

impl Failure {
    fn before(reason: impl ToString) -> Failure {
        Failure {
            connected: false,
            reason: reason.to_string(),
        }
    }

    fn after(reason: impl ToString) -> Failure {
        Failure {
            connected: true,
            reason: reason.to_string(),
        }
    }
}

/// Connects, listens and dispatches until the connection fails.
async fn listen(url: &str, subscribers: &Subscribers, state: &FeedState) -> Result<(), Failure> {
    use diesel_async::RunQueryDsl as _;
    let mut conn = tokio::time::timeout(ANSWER_WITHIN, AsyncPgConnection::establish(url))
        .await
        .map_err(|_| Failure::before("timed out"))?
        .map_err(Failure::before)?;
    tokio::time::timeout(
        ANSWER_WITHIN,
        diesel::sql_query(format!("LISTEN {CHANNEL}")).execute(&mut conn),
    )
    .await
    .map_err(|_| Failure::before("LISTEN timed out"))?
    .map_err(Failure::before)?;
    state.confirm();
    state.set_live(true);
    // Whatever changed while nobody listened is unknown: start from storage again.
    subscribers.publish(&Change::Everything);
    tracing::info!("listening for other nodes' changes");
    loop {
        let next = {
            let mut stream = std::pin::pin!(conn.notifications_stream());
            tokio::time::timeout(PING_EVERY, stream.next()).await
        };
        match next {
            Ok(Some(Ok(notification))) => {
                state.confirm();
                match serde_json::from_str::<Change>(&notification.payload) {
                    Ok(change) => {
                        metrics()
                            .change_notifications
                            .with_label_values(&[change.kind()])
                            .inc();
                        tracing::debug!(?change, "change from storage");
                        subscribers.publish(&change);
                    }
                    Err(e) => tracing::warn!(
                        payload = %notification.payload,
                        "skipped an unreadable change notification: {e}"
                    ),
                }
            }
            Ok(Some(Err(e))) => return Err(Failure::after(e)),
            Ok(None) => return Err(Failure::after("the connection closed")),
            Err(_idle) => {
                match tokio::time::timeout(ANSWER_WITHIN, conn.batch_execute("SELECT 1")).await {
                    Ok(Ok(())) => state.confirm(),
                    Ok(Err(e)) => return Err(Failure::after(e)),
                    Err(_) => return Err(Failure::after("a ping went unanswered")),
                }
            }
        }
    }
}

/// Names the listener's session, so operators (and tests) can tell it apart.
fn with_application_name(url: &str) -> String {
    if url.contains("application_name=") {
        return url.to_string();
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let separator = if url.contains('?') { '&' } else { '?' };
        format!("{url}{separator}application_name={APPLICATION_NAME}")
    } else {
        format!("{url} application_name={APPLICATION_NAME}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_payloads_parse_into_changes() {
        let parse = |text: &str| serde_json::from_str::<Change>(text).unwrap();
        assert_eq!(
            parse(r#"{"kind":"key","hash":"ab12"}"#),
            Change::Key {
                hash: "ab12".into()
            }
        );
        assert_eq!(
            parse(r#"{"kind":"agent","developer":"dev","id":"support"}"#),
            Change::Agent {
                developer: "dev".into(),
                id: "support".into()
            }
        );
        assert_eq!(
            parse(r#"{"kind":"documents","collection":"col_1","document":"doc_1","removed":true}"#),
            Change::Documents {
                collection: "col_1".into(),
                document: "doc_1".into(),
                removed: true
            }
        );
        assert!(serde_json::from_str::<Change>(r#"{"kind":"everything"}"#).is_err());
        assert!(serde_json::from_str::<Change>(r#"{"kind":"nonsense"}"#).is_err());
    }

    #[test]
    fn the_listener_names_its_session() {
        assert_eq!(
            with_application_name("postgres://u@h/db"),
            "postgres://u@h/db?application_name=switchboard-listener"
        );
        assert_eq!(
            with_application_name("postgres://u@h/db?sslmode=disable"),
            "postgres://u@h/db?sslmode=disable&application_name=switchboard-listener"
        );
        assert_eq!(
            with_application_name("host=h dbname=db"),
            "host=h dbname=db application_name=switchboard-listener"
        );
    }
}
