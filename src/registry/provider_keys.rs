//! The developers' own vendor keys: stored sealed (`crate::vendors::sealing`), listed by
//! their hint, opened for a call or a check. The routes and the provider choice reach the
//! stored keys only through [`ProviderKeys`]; neither touches the store or the sealer.

use crate::error::ApiError;
use crate::ids::DeveloperId;
use crate::store::provider_keys;
pub use crate::store::provider_keys::ProviderKeyRow;
use crate::store::Db;
use crate::time::now_ms;
use crate::vendors::sealing::{hint, KeySealer};

/// A developer's key for one vendor, as a call finds it.
#[derive(Debug)]
pub enum StoredKey {
    /// None is stored.
    Absent,
    /// The key, opened.
    Key(String),
    /// A key is stored, but it does not open with this server's master key (it was sealed
    /// under another one).
    Unreadable,
}

/// The stored vendor keys of every developer.
#[derive(Clone)]
pub struct ProviderKeys {
    db: Db,
    sealer: KeySealer,
}

impl ProviderKeys {
    pub fn new(db: Db, sealer: KeySealer) -> Self {
        Self { db, sealer }
    }

    /// Seals and stores `api_key` as `developer`'s key for `provider`, replacing the one
    /// stored before; the row says what lists show of it.
    pub async fn store(
        &self,
        developer: &DeveloperId,
        provider: &str,
        api_key: &str,
    ) -> Result<ProviderKeyRow, ApiError> {
        let row = ProviderKeyRow {
            developer_id: developer.clone(),
            provider: provider.to_string(),
            sealed_key: self.sealer.seal(developer, provider, api_key),
            key_hint: hint(api_key),
            created_at: now_ms(),
            last_verified_at: None,
        };
        provider_keys::upsert(&self.db, &row).await?;
        Ok(row)
    }

    /// `developer`'s stored keys (their rows, never the keys).
    pub async fn list(&self, developer: &DeveloperId) -> Result<Vec<ProviderKeyRow>, ApiError> {
        Ok(provider_keys::list(&self.db, developer).await?)
    }

    /// `developer`'s key for `provider`, opened.
    pub async fn open(
        &self,
        developer: &DeveloperId,
        provider: &str,
    ) -> Result<StoredKey, ApiError> {
        let Some(row) = provider_keys::get(&self.db, developer, provider).await? else {
            return Ok(StoredKey::Absent);
        };
        Ok(
            match self.sealer.open(developer, provider, &row.sealed_key) {
                Some(key) => StoredKey::Key(key),
                None => StoredKey::Unreadable,
            },
        )
    }

    /// Notes that the vendor accepted `developer`'s key for `provider` just now.
    pub async fn mark_verified(
        &self,
        developer: &DeveloperId,
        provider: &str,
    ) -> Result<(), ApiError> {
        Ok(provider_keys::mark_verified(&self.db, developer, provider, now_ms()).await?)
    }

    /// Deletes `developer`'s key for `provider`; false when none was stored.
    pub async fn delete(&self, developer: &DeveloperId, provider: &str) -> Result<bool, ApiError> {
        Ok(provider_keys::delete(&self.db, developer, provider).await?)
    }
}
