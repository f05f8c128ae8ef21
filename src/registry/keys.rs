//! `KeyRegistry`: API keys — creation, listing, rotation, revocation — and the per-request
//! key lookup, answered from an LRU cache keyed by the key's SHA-256 hash. Revocations made
//! here take effect at once. Revocations made by another process or node reach it on
//! PostgreSQL as change notifications ([`crate::cluster::feed`]); on SQLite (the CLI beside the
//! server), and on PostgreSQL while the change listener is down, they are picked up by polling
//! storage every `auth.revocation_poll_ms`. Last-used times are batched and written every
//! `auth.last_used_flush_ms`.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};

use super::cache::RegistryCache;
use super::{cursor_position, Page, PageRequest};
use crate::cluster::{Change, Changed, FeedState};
use crate::config::AuthConfig;
use crate::error::ApiError;
use crate::ids::{DeveloperId, KeyId};
use crate::store::keys::{self, KeyRow, NewKey};
use crate::store::{developers, Db, StoreError};
use crate::time::{self, DAY_MS};

/// Random characters after the prefix: 40 base62 characters, about 238 bits.
const KEY_RANDOM_CHARS: usize = 40;
/// Characters of the raw key shown in lists.
const SHOWN_PREFIX_CHARS: usize = 12;
/// Look-back of the revocation poll, to tolerate clock skew between nodes.
const REVOCATION_SLACK_MS: i64 = 10_000;

/// Who a valid key belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub developer_id: DeveloperId,
    pub key_id: KeyId,
}

/// The outcome of presenting a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyCheck {
    Valid(Principal),
    Unknown,
    Revoked,
    Expired,
}

#[derive(Debug, Clone)]
enum CachedKey {
    Live {
        principal: Principal,
        expires_at: Option<i64>,
    },
    Revoked,
    Unknown,
}

/// A key as lists show it (never the raw key).
#[derive(Debug, Clone)]
pub struct KeyInfo {
    pub id: KeyId,
    pub name: String,
    pub prefix: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

/// A key just created: the only time its raw value exists.
#[derive(Debug, Clone)]
pub struct IssuedKey {
    pub info: KeyInfo,
    pub raw: String,
}

/// The SHA-256 of a raw key, hex encoded, as stored.
pub fn hash_key(raw: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(raw.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(HEX[usize::from(byte >> 4)] as char);
        hex.push(HEX[usize::from(byte & 0x0f)] as char);
    }
    hex
}

/// Generates a raw key and the row that stores it.
pub fn mint_key(
    prefix: &str,
    developer: &DeveloperId,
    name: &str,
    created_at: i64,
    expires_at: Option<i64>,
) -> (String, NewKey) {
    let raw = format!(
        "{prefix}{}",
        Alphanumeric.sample_string(&mut rand::rng(), KEY_RANDOM_CHARS)
    );
    let row = NewKey {
        id: KeyId::new(),
        developer_id: developer.clone(),
        name: name.to_string(),
        key_hash: hash_key(&raw),
        prefix: raw.chars().take(SHOWN_PREFIX_CHARS).collect(),
        created_at,
        expires_at,
    };
    (raw, row)
}

impl From<KeyRow> for KeyInfo {
    fn from(row: KeyRow) -> KeyInfo {
        KeyInfo {
            id: row.id,
            name: row.name,
            prefix: row.prefix,
            created_at: row.created_at,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// Creates a key in storage (used by the registry and by the CLI, which may run while a
/// server shares the database).
pub async fn create_key(
    db: &Db,
    prefix: &str,
    developer: &DeveloperId,
    name: &str,
    expires_in_days: Option<i64>,
) -> Result<IssuedKey, StoreError> {
    developers::ensure(db, developer).await?;
    let now = time::now_ms();
    let expires_at = expires_in_days.map(|days| now + days * DAY_MS);
    let (raw, row) = mint_key(prefix, developer, name, now, expires_at);
    let stored = keys::insert(db, &row).await?;
    Ok(IssuedKey {
        info: stored.into(),
        raw,
    })
}

pub struct KeyRegistry {
    db: Db,
    config: AuthConfig,
    cache: RegistryCache<String, CachedKey>,
    /// Last-used times not yet written, by key id.
    unflushed_last_used: HashMap<KeyId, i64>,
    flushing: bool,
    polled_until: i64,
    polling: bool,
    /// PostgreSQL: the change feed; polling runs only while it is down.
    feed: Option<FeedState>,
}

impl KeyRegistry {
    pub fn new(db: Db, config: AuthConfig) -> KeyRegistry {
        KeyRegistry {
            cache: RegistryCache::new(config.cache_capacity, None),
            db,
            config,
            unflushed_last_used: HashMap::new(),
            flushing: false,
            polled_until: time::now_ms(),
            polling: false,
            feed: None,
        }
    }

    /// Takes revocations from the change feed, and polls only while it is down.
    pub fn following(mut self, feed: FeedState) -> Self {
        self.feed = Some(feed);
        self
    }

    fn poll_revocations(&mut self, ctx: &mut Context<Self>) {
        if self.polling {
            return;
        }
        if let Some(feed) = self.feed.as_ref().filter(|feed| feed.is_live()) {
            // Every revocation up to here arrived as a notification. Should the listener
            // fail unnoticed, the first poll after looks back to its last sign of life.
            self.polled_until = feed.confirmed_at();
            return;
        }
        self.polling = true;
        let db = self.db.clone();
        let started = time::now_ms();
        let since = self.polled_until - REVOCATION_SLACK_MS;
        async move { keys::revoked_since(&db, since).await }
            .into_actor(self)
            .map(move |result, registry, _| {
                registry.polling = false;
                match result {
                    Ok(hashes) => {
                        for hash in hashes {
                            registry.cache.invalidate(&hash);
                        }
                        registry.polled_until = started;
                    }
                    Err(err) => tracing::warn!("revocation poll failed: {err}"),
                }
            })
            .spawn(ctx);
    }

    fn flush_last_used(&mut self, ctx: &mut Context<Self>) {
        if self.flushing || self.unflushed_last_used.is_empty() {
            return;
        }
        self.flushing = true;
        let batch: Vec<(KeyId, i64)> = self.unflushed_last_used.drain().collect();
        let db = self.db.clone();
        async move {
            let result = keys::touch_last_used(&db, &batch).await;
            (result, batch)
        }
        .into_actor(self)
        .map(|(result, batch), registry, _| {
            registry.flushing = false;
            if let Err(err) = result {
                tracing::warn!("could not record key use: {err}");
                for (id, at) in batch {
                    registry.unflushed_last_used.entry(id).or_insert(at);
                }
            }
        })
        .spawn(ctx);
    }

    /// The entry's verdict now; a valid key's use is recorded.
    fn check_cached(&mut self, entry: &CachedKey) -> KeyCheck {
        let now = time::now_ms();
        let check = entry.check(now);
        if let KeyCheck::Valid(principal) = &check {
            self.unflushed_last_used
                .insert(principal.key_id.clone(), now);
        }
        check
    }
}

impl CachedKey {
    /// What storage says of a key (`None`: there is no such key).
    fn from_row(row: Option<KeyRow>) -> Self {
        match row {
            None => CachedKey::Unknown,
            Some(row) if row.revoked_at.is_some() => CachedKey::Revoked,
            Some(row) => CachedKey::Live {
                principal: Principal {
                    developer_id: row.developer_id,
                    key_id: row.id,
                },
                expires_at: row.expires_at,
            },
        }
    }

    /// The verdict at `now_ms`.
    fn check(&self, now_ms: i64) -> KeyCheck {
        match self {
            CachedKey::Live {
                expires_at: Some(at),
                ..
            } if *at <= now_ms => KeyCheck::Expired,
            CachedKey::Live { principal, .. } => KeyCheck::Valid(principal.clone()),
            CachedKey::Revoked => KeyCheck::Revoked,
            CachedKey::Unknown => KeyCheck::Unknown,
        }
    }
}

impl Actor for KeyRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let poll = Duration::from_millis(self.config.revocation_poll_ms.max(10));
        ctx.run_interval(poll, |registry, ctx| registry.poll_revocations(ctx));
        let flush = Duration::from_millis(self.config.last_used_flush_ms.max(10));
        ctx.run_interval(flush, |registry, ctx| registry.flush_last_used(ctx));
    }

    fn stopping(&mut self, ctx: &mut Context<Self>) -> Running {
        self.flush_last_used(ctx);
        Running::Stop
    }
}

impl Handler<Changed> for KeyRegistry {
    type Result = ();

    fn handle(&mut self, msg: Changed, _: &mut Context<Self>) {
        match msg.0 {
            Change::Key { hash } => self.cache.invalidate(&hash),
            Change::Everything => self.cache.clear(),
            _ => {}
        }
    }
}

/// Checks a presented key, by the SHA-256 hash of its raw value.
#[derive(Message)]
#[rtype(result = "Result<KeyCheck, ApiError>")]
pub struct CheckKey {
    pub hash: String,
}

impl Handler<CheckKey> for KeyRegistry {
    type Result = ResponseActFuture<Self, Result<KeyCheck, ApiError>>;

    fn handle(&mut self, msg: CheckKey, _: &mut Context<Self>) -> Self::Result {
        if let Some(entry) = self.cache.get(&msg.hash) {
            let check = self.check_cached(&entry);
            return Box::pin(fut::ready(Ok(check)));
        }
        let db = self.db.clone();
        let generation = self.cache.generation();
        Box::pin(
            async move {
                keys::find_by_hash(&db, &msg.hash)
                    .await
                    .map(|row| (msg.hash, row))
            }
            .into_actor(self)
            .map(move |result, registry, _| {
                let (hash, row) = result?;
                let entry = CachedKey::from_row(row);
                registry.cache.fill(generation, hash, entry.clone());
                Ok(registry.check_cached(&entry))
            }),
        )
    }
}

/// Whether key `key_id` of `developer_id` may still vouch for what it issued: asked when a
/// relay or session token it minted is presented, so that revoking a key (or its expiry)
/// also stops the tokens it handed out. Read from storage each time: it is asked once per
/// session start, and a revocation on another node counts at once.
#[derive(Message)]
#[rtype(result = "Result<KeyCheck, ApiError>")]
pub struct CheckIssuer {
    pub developer_id: DeveloperId,
    pub key_id: KeyId,
}

impl Handler<CheckIssuer> for KeyRegistry {
    type Result = ResponseFuture<Result<KeyCheck, ApiError>>;

    fn handle(&mut self, msg: CheckIssuer, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let row = keys::find_by_id(&db, &msg.key_id)
                .await?
                .filter(|row| row.developer_id == msg.developer_id);
            Ok(CachedKey::from_row(row).check(time::now_ms()))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<IssuedKey, ApiError>")]
pub struct CreateKey {
    pub developer_id: DeveloperId,
    pub name: String,
    pub expires_in_days: Option<i64>,
}

impl Handler<CreateKey> for KeyRegistry {
    type Result = ResponseFuture<Result<IssuedKey, ApiError>>;

    fn handle(&mut self, msg: CreateKey, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let prefix = self.config.key_prefix.clone();
        Box::pin(async move {
            Ok(create_key(
                &db,
                &prefix,
                &msg.developer_id,
                &msg.name,
                msg.expires_in_days,
            )
            .await?)
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<Page<KeyInfo>, ApiError>")]
pub struct ListKeys {
    pub developer_id: DeveloperId,
    pub page: PageRequest,
}

impl Handler<ListKeys> for KeyRegistry {
    type Result = ResponseActFuture<Self, Result<Page<KeyInfo>, ApiError>>;

    fn handle(&mut self, msg: ListKeys, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move {
                let dev = &msg.developer_id;
                let cursor = msg.page.cursor.as_deref();
                let after =
                    cursor_position(cursor, async |id: KeyId| keys::seq_of(&db, dev, &id).await)
                        .await?;
                let rows = keys::list(&db, dev, after, msg.page.limit + 1).await?;
                Ok::<_, ApiError>(Page::from_rows(rows, msg.page.limit, |row| row.id.as_str()))
            }
            .into_actor(self)
            .map(|result, registry, _| {
                Ok(result?.map(|row| {
                    let mut info = KeyInfo::from(row);
                    // A use not yet flushed is newer than what storage holds.
                    if let Some(at) = registry.unflushed_last_used.get(&info.id) {
                        info.last_used_at = Some(*at);
                    }
                    info
                }))
            }),
        )
    }
}

/// Revokes a key; answers whether the developer had such a live key.
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct RevokeKey {
    pub developer_id: DeveloperId,
    pub key_id: KeyId,
}

impl Handler<RevokeKey> for KeyRegistry {
    type Result = ResponseActFuture<Self, Result<bool, ApiError>>;

    fn handle(&mut self, msg: RevokeKey, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move { keys::revoke(&db, &msg.developer_id, &msg.key_id, time::now_ms()).await }
                .into_actor(self)
                .map(|result, registry, _| match result? {
                    Some(hash) => {
                        registry.cache.invalidate(&hash);
                        Ok(true)
                    }
                    None => Ok(false),
                }),
        )
    }
}

/// Replaces a key with a new one (same name, same lifetime) and revokes it, atomically.
#[derive(Message)]
#[rtype(result = "Result<Option<IssuedKey>, ApiError>")]
pub struct RotateKey {
    pub developer_id: DeveloperId,
    pub key_id: KeyId,
}

impl Handler<RotateKey> for KeyRegistry {
    type Result = ResponseActFuture<Self, Result<Option<IssuedKey>, ApiError>>;

    fn handle(&mut self, msg: RotateKey, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let prefix = self.config.key_prefix.clone();
        Box::pin(
            async move {
                let now = time::now_ms();
                let mut raw = String::new();
                let rotated = keys::rotate(
                    &db,
                    &msg.developer_id,
                    &msg.key_id,
                    |old| {
                        let lifetime = old.expires_at.map(|at| at - old.created_at);
                        let (minted, row) = mint_key(
                            &prefix,
                            &old.developer_id,
                            &old.name,
                            now,
                            lifetime.map(|ms| now + ms),
                        );
                        raw = minted;
                        row
                    },
                    now,
                )
                .await?;
                Ok::<_, ApiError>(rotated.map(|(old, new)| (old.key_hash, new, raw)))
            }
            .into_actor(self)
            .map(|result, registry, _| {
                Ok(result?.map(|(old_hash, new, raw)| {
                    registry.cache.invalidate(&old_hash);
                    IssuedKey {
                        info: new.into(),
                        raw,
                    }
                }))
            }),
        )
    }
}

/// Writes back pending last-used times now (used at shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FlushLastUsed;

impl Handler<FlushLastUsed> for KeyRegistry {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: FlushLastUsed, _: &mut Context<Self>) -> Self::Result {
        let batch: Vec<(KeyId, i64)> = self.unflushed_last_used.drain().collect();
        let db = self.db.clone();
        Box::pin(
            async move {
                if let Err(err) = keys::touch_last_used(&db, &batch).await {
                    tracing::warn!("could not record key use: {err}");
                }
            }
            .into_actor(self),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hash_to_lowercase_hex_sha256() {
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn minted_keys_carry_the_prefix_and_40_base62_characters() {
        let (raw, row) = mint_key("sb_live_", &"dev".into(), "n", 0, None);
        assert!(raw.starts_with("sb_live_"));
        assert_eq!(raw.len(), "sb_live_".len() + 40);
        assert!(raw["sb_live_".len()..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(row.prefix, raw[..12]);
        assert_eq!(row.key_hash, hash_key(&raw));
    }
}
