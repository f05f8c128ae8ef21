//! `CollectionRegistry`: the developers' knowledge collections. Deleting a collection removes
//! its documents and chunks in one transaction and tells the agent registry, whose cached
//! agents may point at it. Other nodes' changes arrive as [`Changed`] notifications
//! (PostgreSQL).

use crate::ids::{CollectionId, DeveloperId};
use crate::registry::Supervised;
use actix::prelude::*;

use super::agents::{AgentRegistry, CollectionDeleted};
use super::cache::RegistryCache;
use super::{cursor_position, Page, PageRequest};
use crate::cluster::{Change, Changed, FeedState};
use crate::config::RegistryConfig;
use crate::error::ApiError;
use crate::store::collections::{self, CollectionRow};
use crate::store::Db;
use crate::time;

type CollectionKey = (DeveloperId, CollectionId);

pub struct CollectionRegistry {
    db: Db,
    agents: Supervised<AgentRegistry>,
    cache: RegistryCache<CollectionKey, CollectionRow>,
}

impl CollectionRegistry {
    pub fn new(db: Db, config: &RegistryConfig, agents: Supervised<AgentRegistry>) -> Self {
        CollectionRegistry {
            cache: RegistryCache::new(config.cache_capacity, config.cache_ttl(db.backend())),
            db,
            agents,
        }
    }

    /// Drops cached collections as other nodes change them; expiry applies only while the
    /// feed is down.
    pub fn following(mut self, feed: FeedState) -> Self {
        self.cache = self.cache.following(feed);
        self
    }
}

impl Handler<Changed> for CollectionRegistry {
    type Result = ();

    fn handle(&mut self, msg: Changed, _: &mut Context<Self>) {
        match msg.0 {
            Change::Collection { developer, id } => self.cache.invalidate(&(developer, id)),
            Change::Everything => self.cache.clear(),
            _ => {}
        }
    }
}

impl Actor for CollectionRegistry {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "Result<CollectionRow, ApiError>")]
pub struct CreateCollection {
    pub collection: CollectionRow,
}

impl Handler<CreateCollection> for CollectionRegistry {
    type Result = ResponseActFuture<Self, Result<CollectionRow, ApiError>>;

    fn handle(&mut self, msg: CreateCollection, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move { collections::insert(&db, &msg.collection).await }
                .into_actor(self)
                .map(|result, registry, _| {
                    let collection = result?;
                    let key = (collection.developer_id.clone(), collection.id.clone());
                    registry.cache.put(key, collection.clone());
                    Ok(collection)
                }),
        )
    }
}

#[derive(Message)]
#[rtype(result = "Result<CollectionRow, ApiError>")]
pub struct GetCollection {
    pub developer_id: DeveloperId,
    pub collection_id: CollectionId,
}

impl Handler<GetCollection> for CollectionRegistry {
    type Result = ResponseActFuture<Self, Result<CollectionRow, ApiError>>;

    fn handle(&mut self, msg: GetCollection, _: &mut Context<Self>) -> Self::Result {
        let key = (msg.developer_id, msg.collection_id);
        if let Some(collection) = self.cache.get(&key) {
            return Box::pin(fut::ready(Ok(collection)));
        }
        let db = self.db.clone();
        let generation = self.cache.generation();
        Box::pin(
            async move {
                let row = collections::get(&db, &key.0, &key.1).await;
                (key, row)
            }
            .into_actor(self)
            .map(move |(key, row), registry, _| match row? {
                Some(collection) => {
                    registry.cache.fill(generation, key, collection.clone());
                    Ok(collection)
                }
                None => Err(ApiError::not_found("collection", key.1.as_str())),
            }),
        )
    }
}

#[derive(Message)]
#[rtype(result = "Result<Page<CollectionRow>, ApiError>")]
pub struct ListCollections {
    pub developer_id: DeveloperId,
    pub page: PageRequest,
}

impl Handler<ListCollections> for CollectionRegistry {
    type Result = ResponseFuture<Result<Page<CollectionRow>, ApiError>>;

    fn handle(&mut self, msg: ListCollections, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let dev = &msg.developer_id;
            let cursor = msg.page.cursor.as_deref();
            let after = cursor_position(cursor, async |id: CollectionId| {
                collections::seq_of(&db, dev, &id).await
            })
            .await?;
            let rows = collections::list(&db, dev, after, msg.page.limit + 1).await?;
            Ok(Page::from_rows(rows, msg.page.limit, |row| row.id.as_str()))
        })
    }
}

/// Removes a collection with everything in it.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct DeleteCollection {
    pub developer_id: DeveloperId,
    pub collection_id: CollectionId,
}

impl Handler<DeleteCollection> for CollectionRegistry {
    type Result = ResponseActFuture<Self, Result<(), ApiError>>;

    fn handle(&mut self, msg: DeleteCollection, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let key = (msg.developer_id, msg.collection_id);
        self.cache.invalidate(&key);
        Box::pin(
            async move {
                let deleted = collections::delete(&db, &key.0, &key.1, time::now_ms()).await;
                (key, deleted)
            }
            .into_actor(self)
            .map(|(key, deleted), registry, _| {
                registry.cache.invalidate(&key);
                if !deleted? {
                    return Err(ApiError::not_found("collection", key.1.as_str()));
                }
                registry.agents.do_send(CollectionDeleted {
                    developer_id: key.0,
                    collection_id: key.1,
                });
                Ok(())
            }),
        )
    }
}
