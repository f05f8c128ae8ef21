//! Queries on API keys. Only the SHA-256 hash of a raw key is ever stored.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::api_keys;
use super::{Db, StoreResult};
use crate::ids::{DeveloperId, KeyId};
use crate::{db_run, db_tx};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = api_keys)]
pub struct KeyRow {
    pub seq: i64,
    pub id: KeyId,
    pub developer_id: DeveloperId,
    pub name: String,
    pub key_hash: String,
    pub prefix: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = api_keys)]
pub struct NewKey {
    pub id: KeyId,
    pub developer_id: DeveloperId,
    pub name: String,
    pub key_hash: String,
    pub prefix: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
}

store_fns! {
    table = api_keys, row = KeyRow;

    insert pub fn insert(key: &NewKey);

    /// The key with this hash, revoked or not.
    get pub fn find_by_hash(hash: &str) where key_hash.eq(hash);

    get pub fn find_by_id(id: &KeyId) where id.eq(id);

    /// A developer's live (not revoked) keys in creation order, after `after` (a `seq`).
    list pub fn list(developer: &DeveloperId) where developer_id.eq(developer), revoked_at.is_null();

    /// The position of one of the developer's keys, for cursors.
    seq pub fn seq_of(developer: &DeveloperId, id: &KeyId) where developer_id.eq(developer), id.eq(id);

    /// Revokes a live key of any developer (operator use); answers whether there was one.
    mark pub fn revoke_any(id: &KeyId, now: i64)
        set (api_keys::revoked_at.eq(now))
        where id.eq(id), revoked_at.is_null();
}

/// Revokes a live key; answers its hash, or `None` when there was no such live key.
pub async fn revoke(
    db: &Db,
    developer: &DeveloperId,
    id: &KeyId,
    now: i64,
) -> StoreResult<Option<String>> {
    db_run!(db, |conn| {
        Ok(diesel::update(
            api_keys::table
                .filter(api_keys::developer_id.eq(developer))
                .filter(api_keys::id.eq(id))
                .filter(api_keys::revoked_at.is_null()),
        )
        .set(api_keys::revoked_at.eq(now))
        .returning(api_keys::key_hash)
        .get_result(conn)
        .await
        .optional()?)
    })
}

/// Revokes a live key and inserts its replacement in one transaction. Answers the old key's
/// row (as it was) and the new row, or `None` when there was no such live key.
pub async fn rotate(
    db: &Db,
    developer: &DeveloperId,
    id: &KeyId,
    replacement: impl FnOnce(&KeyRow) -> NewKey + Send,
    now: i64,
) -> StoreResult<Option<(KeyRow, KeyRow)>> {
    db_tx!(db, |conn| {
        let old: Option<KeyRow> = diesel::update(
            api_keys::table
                .filter(api_keys::developer_id.eq(developer))
                .filter(api_keys::id.eq(id))
                .filter(api_keys::revoked_at.is_null()),
        )
        .set(api_keys::revoked_at.eq(now))
        .returning(KeyRow::as_returning())
        .get_result(conn)
        .await
        .optional()?;
        let Some(old) = old else {
            return Ok(None);
        };
        let new = diesel::insert_into(api_keys::table)
            .values(replacement(&old))
            .returning(KeyRow::as_returning())
            .get_result(conn)
            .await?;
        Ok(Some((old, new)))
    })
}

/// Hashes of keys revoked at or after `since` (epoch ms), for cache invalidation.
pub async fn revoked_since(db: &Db, since: i64) -> StoreResult<Vec<String>> {
    db_run!(db, |conn| {
        Ok(api_keys::table
            .filter(api_keys::revoked_at.ge(since))
            .select(api_keys::key_hash)
            .load(conn)
            .await?)
    })
}

/// Writes back a batch of last-used times (key id, epoch ms).
pub async fn touch_last_used(db: &Db, batch: &[(KeyId, i64)]) -> StoreResult<()> {
    db_tx!(db, |conn| {
        for (id, at) in batch {
            diesel::update(api_keys::table.filter(api_keys::id.eq(id)))
                .set(api_keys::last_used_at.eq(*at))
                .execute(conn)
                .await?;
        }
        Ok(())
    })
}
