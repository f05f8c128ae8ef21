//! `AgentRegistry`: the developers' stored voice agents. Reads are answered from an LRU cache
//! keyed by (developer, agent id); writes go to storage first, then refresh the cache. Other
//! nodes' changes arrive as [`Changed`] notifications (PostgreSQL).

use actix::prelude::*;

use super::cache::RegistryCache;
use super::tool_secrets::ToolSecrets;
use super::{cursor_position, Page, PageRequest};
use crate::cluster::{Change, Changed, FeedState};
use crate::config::RegistryConfig;
use crate::error::ApiError;
use crate::ids::{AgentId, CollectionId, DeveloperId};
use crate::speech::languages;
use crate::store::agents::{self, AgentChanges, AgentRow};
use crate::store::{collections, Db, StoreError};
use crate::time;
use crate::vendors::catalog::{Kind, DEFAULT_PROVIDER};
use crate::vendors::fallback::fallback_ids;

type AgentKey = (DeveloperId, AgentId);

pub struct AgentRegistry {
    db: Db,
    cache: RegistryCache<AgentKey, AgentRow>,
    /// Seals the tools' secrets and headers on every write.
    secrets: ToolSecrets,
}

impl AgentRegistry {
    pub fn new(db: Db, config: &RegistryConfig, secrets: ToolSecrets) -> AgentRegistry {
        AgentRegistry {
            cache: RegistryCache::new(config.cache_capacity, config.cache_ttl(db.backend())),
            db,
            secrets,
        }
    }

    /// Drops cached agents as other nodes change them; expiry applies only while the feed
    /// is down.
    pub fn following(mut self, feed: FeedState) -> Self {
        self.cache = self.cache.following(feed);
        self
    }
}

impl Handler<Changed> for AgentRegistry {
    type Result = ();

    fn handle(&mut self, msg: Changed, _: &mut Context<Self>) {
        match msg.0 {
            Change::Agent { developer, id } => self.cache.invalidate(&(developer, id)),
            Change::Everything => self.cache.clear(),
            _ => {}
        }
    }
}

impl AgentRegistry {
    /// The store, for the handlers in sibling modules (instances).
    pub(super) fn db(&self) -> Db {
        self.db.clone()
    }
}

impl Actor for AgentRegistry {
    type Context = Context<Self>;
}

/// An attached collection must exist and belong to the same developer.
async fn check_collection(
    db: &Db,
    developer: &DeveloperId,
    collection: Option<&CollectionId>,
) -> Result<(), ApiError> {
    if let Some(id) = collection {
        if collections::get(db, developer, id).await?.is_none() {
            return Err(ApiError::invalid(
                "collectionId",
                format!("collection '{id}' was not found"),
            ));
        }
    }
    Ok(())
}

/// An agent must not force on the embedded recognizer a language it was not trained on, as
/// its `sttProvider` or as a `metadata.fallbacks.stt` entry: every caller turn it hears would
/// fail. `auto`, and any language for a vendor's recognizer (vendors check their own), pass.
fn check_language(agent: &AgentRow) -> Result<(), String> {
    let Some(language) = agent.forced_language() else {
        return Ok(());
    };
    if languages::language_code(language).is_some() {
        return Ok(());
    }
    let metadata = serde_json::from_str(&agent.metadata).unwrap_or_default();
    let as_fallback = fallback_ids(&metadata, Kind::Stt)
        .iter()
        .any(|id| id == DEFAULT_PROVIDER);
    let role = if agent.stt_provider == DEFAULT_PROVIDER {
        "sttProvider"
    } else if as_fallback {
        "a metadata.fallbacks.stt entry"
    } else {
        return Ok(());
    };
    let known: Vec<&str> = languages::codes().collect();
    Err(format!(
        "language '{language}' is not one the embedded recognizer ({role} `{DEFAULT_PROVIDER}`) \
         hears; use `auto`, one of {}, or recognizers that hear it",
        known.join(", ")
    ))
}

/// `agent` as stored: its tools' secrets and headers sealed.
fn seal_metadata(
    secrets: &ToolSecrets,
    mut agent: AgentRow,
    previous: Option<&str>,
) -> Result<AgentRow, ApiError> {
    agent.metadata = secrets
        .seal_metadata(&agent.developer_id, &agent.metadata, previous)
        .map_err(refused_metadata)?;
    Ok(agent)
}

fn refused_metadata(message: String) -> ApiError {
    ApiError::invalid("metadata", message)
}

fn refused_language(message: String) -> ApiError {
    ApiError::invalid("language", message)
}

fn agent_not_found(id: &AgentId) -> ApiError {
    ApiError::not_found("agent", id.as_str())
}

#[derive(Message)]
#[rtype(result = "Result<AgentRow, ApiError>")]
pub struct CreateAgent {
    pub agent: AgentRow,
}

impl Handler<CreateAgent> for AgentRegistry {
    type Result = ResponseActFuture<Self, Result<AgentRow, ApiError>>;

    fn handle(&mut self, msg: CreateAgent, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let sealed = seal_metadata(&self.secrets, msg.agent, None);
        Box::pin(
            async move {
                let agent = sealed?;
                check_language(&agent).map_err(refused_language)?;
                check_collection(&db, &agent.developer_id, agent.collection_id.as_ref()).await?;
                agents::insert(&db, &agent).await.map_err(|err| match err {
                    StoreError::Conflict(_) => ApiError::Conflict(format!(
                        "an agent with id '{}' already exists",
                        agent.id
                    )),
                    other => other.into(),
                })
            }
            .into_actor(self)
            .map(|result, registry, _| {
                let agent = result?;
                let key = (agent.developer_id.clone(), agent.id.clone());
                registry.cache.invalidate(&key);
                registry.cache.put(key, agent.clone());
                Ok(agent)
            }),
        )
    }
}

#[derive(Message)]
#[rtype(result = "Result<AgentRow, ApiError>")]
pub struct GetAgent {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
}

impl Handler<GetAgent> for AgentRegistry {
    type Result = ResponseActFuture<Self, Result<AgentRow, ApiError>>;

    fn handle(&mut self, msg: GetAgent, _: &mut Context<Self>) -> Self::Result {
        let key = (msg.developer_id, msg.agent_id);
        if let Some(agent) = self.cache.get(&key) {
            return Box::pin(fut::ready(Ok(agent)));
        }
        let db = self.db.clone();
        let generation = self.cache.generation();
        Box::pin(
            async move {
                let row = agents::get(&db, &key.0, &key.1).await;
                (key, row)
            }
            .into_actor(self)
            .map(move |(key, row), registry, _| match row? {
                Some(agent) => {
                    registry.cache.fill(generation, key, agent.clone());
                    Ok(agent)
                }
                None => Err(agent_not_found(&key.1)),
            }),
        )
    }
}

#[derive(Message)]
#[rtype(result = "Result<Page<AgentRow>, ApiError>")]
pub struct ListAgents {
    pub developer_id: DeveloperId,
    pub page: PageRequest,
}

impl Handler<ListAgents> for AgentRegistry {
    type Result = ResponseFuture<Result<Page<AgentRow>, ApiError>>;

    fn handle(&mut self, msg: ListAgents, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let dev = &msg.developer_id;
            let cursor = msg.page.cursor.as_deref();
            let after = cursor_position(cursor, async |id: AgentId| {
                agents::seq_of(&db, dev, &id).await
            })
            .await?;
            let rows = agents::list(&db, dev, after, msg.page.limit + 1).await?;
            Ok(Page::from_rows(rows, msg.page.limit, |row| row.id.as_str()))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<AgentRow, ApiError>")]
pub struct UpdateAgent {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub changes: AgentChanges,
}

impl Handler<UpdateAgent> for AgentRegistry {
    type Result = ResponseActFuture<Self, Result<AgentRow, ApiError>>;

    fn handle(&mut self, mut msg: UpdateAgent, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let secrets = self.secrets.clone();
        let key = (msg.developer_id.clone(), msg.agent_id.clone());
        // Invalidate before writing: a read that races the write cannot cache the old row.
        self.cache.invalidate(&key);
        Box::pin(
            async move {
                if let Some(metadata) = msg.changes.metadata.take() {
                    // A hint sent back keeps what the agent stores now.
                    let stored = agents::get(&db, &msg.developer_id, &msg.agent_id)
                        .await?
                        .ok_or_else(|| agent_not_found(&msg.agent_id))?;
                    msg.changes.metadata = Some(
                        secrets
                            .seal_metadata(&msg.developer_id, &metadata, Some(&stored.metadata))
                            .map_err(refused_metadata)?,
                    );
                }
                let collection = msg.changes.collection_id.as_ref().and_then(|c| c.as_ref());
                check_collection(&db, &msg.developer_id, collection).await?;
                // Only a change to what the rule reads is held to it: an agent stored before
                // the rule can still be renamed.
                let changes = &msg.changes;
                let check: fn(&AgentRow) -> Result<(), String> = if changes.language.is_some()
                    || changes.stt_provider.is_some()
                    || changes.metadata.is_some()
                {
                    check_language
                } else {
                    |_| Ok(())
                };
                agents::update(&db, &msg.developer_id, &msg.agent_id, changes, check)
                    .await
                    .map_err(|err| match err {
                        StoreError::Refused(message) => refused_language(message),
                        other => other.into(),
                    })?
                    .ok_or_else(|| agent_not_found(&msg.agent_id))
            }
            .into_actor(self)
            .map(move |result, registry, _| {
                let agent = result?;
                registry.cache.invalidate(&key);
                registry.cache.put(key, agent.clone());
                Ok(agent)
            }),
        )
    }
}

/// Archives an agent: it disappears from reads and lists; its id stays taken.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct ArchiveAgent {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
}

impl Handler<ArchiveAgent> for AgentRegistry {
    type Result = ResponseActFuture<Self, Result<(), ApiError>>;

    fn handle(&mut self, msg: ArchiveAgent, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let key = (msg.developer_id, msg.agent_id);
        self.cache.invalidate(&key);
        Box::pin(
            async move {
                let archived = agents::archive(&db, &key.0, &key.1, time::now_ms()).await;
                (key, archived)
            }
            .into_actor(self)
            .map(|(key, archived), registry, _| {
                registry.cache.invalidate(&key);
                if archived? {
                    Ok(())
                } else {
                    Err(agent_not_found(&key.1))
                }
            }),
        )
    }
}

/// A collection was deleted: cached agents that referenced it are stale.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CollectionDeleted {
    pub developer_id: DeveloperId,
    pub collection_id: CollectionId,
}

impl Handler<CollectionDeleted> for AgentRegistry {
    type Result = ();

    fn handle(&mut self, msg: CollectionDeleted, _: &mut Context<Self>) {
        self.cache.invalidate_where(|(developer, _), agent| {
            *developer == msg.developer_id
                && agent.collection_id.as_ref() == Some(&msg.collection_id)
        });
    }
}

/// Creates an agent together with its new collection and that collection's first documents,
/// all or nothing.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct ProvisionAgent {
    pub collection: crate::store::collections::CollectionRow,
    pub agent: AgentRow,
    pub content: Vec<(
        crate::store::documents::DocumentRow,
        Vec<crate::store::documents::ChunkRow>,
    )>,
}

impl Handler<ProvisionAgent> for AgentRegistry {
    type Result = ResponseActFuture<Self, Result<(), ApiError>>;

    fn handle(&mut self, msg: ProvisionAgent, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let key = (msg.agent.developer_id.clone(), msg.agent.id.clone());
        let sealed = seal_metadata(&self.secrets, msg.agent.clone(), None);
        Box::pin(
            async move {
                let agent = sealed?;
                crate::store::provision::create(&db, &msg.collection, &agent, &msg.content)
                    .await
                    .map_err(|err| match err {
                        StoreError::Conflict(_) => ApiError::Conflict(format!(
                            "an agent with id '{}' already exists",
                            agent.id
                        )),
                        other => other.into(),
                    })
            }
            .into_actor(self)
            .map(move |result, registry, _| {
                registry.cache.invalidate(&key);
                result
            }),
        )
    }
}
