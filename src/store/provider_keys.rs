//! Queries on stored vendor keys. Rows hold the sealed key only; sealing and opening live in
//! `vendors::sealing`.

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::provider_keys;
use super::{Db, StoreResult};
use crate::db_run;
use crate::ids::DeveloperId;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = provider_keys)]
pub struct ProviderKeyRow {
    pub developer_id: DeveloperId,
    pub provider: String,
    pub sealed_key: String,
    pub key_hint: String,
    pub created_at: i64,
    pub last_verified_at: Option<i64>,
}

/// Stores a key, replacing the developer's previous key for the same provider.
pub async fn upsert(db: &Db, row: &ProviderKeyRow) -> StoreResult<()> {
    use provider_keys::*;
    db_run!(db, |conn| {
        diesel::insert_into(table)
            .values(row)
            .on_conflict((developer_id, provider))
            .do_update()
            .set((
                sealed_key.eq(excluded(sealed_key)),
                key_hint.eq(excluded(key_hint)),
                created_at.eq(excluded(created_at)),
                last_verified_at.eq(None::<i64>),
            ))
            .execute(conn)
            .await?;
        Ok(())
    })
}

store_fns! {
    table = provider_keys, row = ProviderKeyRow;

    get pub fn get(developer: &DeveloperId, provider: &str)
        where developer_id.eq(developer), provider.eq(provider);
}

/// The developer's keys, by provider id.
pub async fn list(db: &Db, developer: &DeveloperId) -> StoreResult<Vec<ProviderKeyRow>> {
    db_run!(db, |conn| {
        Ok(provider_keys::table
            .filter(provider_keys::developer_id.eq(developer))
            .order(provider_keys::provider.asc())
            .select(ProviderKeyRow::as_select())
            .load(conn)
            .await?)
    })
}

/// Deletes a key; answers whether there was one.
pub async fn delete(db: &Db, developer: &DeveloperId, provider: &str) -> StoreResult<bool> {
    db_run!(db, |conn| {
        let deleted = diesel::delete(
            provider_keys::table
                .filter(provider_keys::developer_id.eq(developer))
                .filter(provider_keys::provider.eq(provider)),
        )
        .execute(conn)
        .await?;
        Ok(deleted > 0)
    })
}

/// Records that a key was checked against its vendor and worked.
pub async fn mark_verified(
    db: &Db,
    developer: &DeveloperId,
    provider: &str,
    at: i64,
) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::update(
            provider_keys::table
                .filter(provider_keys::developer_id.eq(developer))
                .filter(provider_keys::provider.eq(provider)),
        )
        .set(provider_keys::last_verified_at.eq(Some(at)))
        .execute(conn)
        .await?;
        Ok(())
    })
}
