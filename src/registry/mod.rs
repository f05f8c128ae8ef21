//! Registry actors own the resources that have owners (keys, agents, collections, usage),
//! with the calls made of them from everywhere above: the charge and credit check of metered
//! work (`meter`) and a collection's semantic search (`search`).
//! HTTP handlers send them messages through a [`Supervised`] handle that restarts a registry
//! that died; they answer from an LRU cache or from storage, and never hold up their mailbox
//! on a query (storage work runs in futures spawned on the actor's
//! context, and cache fills are dropped if an invalidation happened meanwhile).

pub mod agents;
pub mod cache;
pub mod campaigns;
pub mod collections;
pub mod conversations;
pub mod instances;
pub mod jobs;
pub mod keys;
pub mod knowledge;
pub mod meter;
pub mod metering;
pub mod provider_keys;
pub mod search;
pub mod sessions;
pub mod telephony;
pub mod tool_secrets;
pub mod webhooks;

pub use crate::supervision::Supervised;
pub use agents::AgentRegistry;
pub use campaigns::CampaignRegistry;
pub use collections::CollectionRegistry;
pub use conversations::ConversationRegistry;
pub use jobs::JobRegistry;
pub use keys::KeyRegistry;
pub use knowledge::KnowledgeIndex;
pub use metering::Metering;
pub use sessions::SessionRegistry;
pub use telephony::TelephonyRegistry;
pub use webhooks::WebhookRegistry;

crate::answers_ping!(
    AgentRegistry,
    CampaignRegistry,
    CollectionRegistry,
    ConversationRegistry,
    JobRegistry,
    KeyRegistry,
    KnowledgeIndex,
    Metering,
    SessionRegistry,
    TelephonyRegistry,
    WebhookRegistry,
);

use crate::error::ApiError;
use crate::store::StoreResult;

/// One page of a list, in creation order.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
    pub has_more: bool,
}

/// A validated page request: `limit` 1-100, `cursor` the id after which to continue.
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub limit: i64,
    pub cursor: Option<String>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows fetched after the cursor.
    pub fn from_rows(mut rows: Vec<T>, limit: i64, id_of: impl Fn(&T) -> &str) -> Page<T> {
        let has_more = rows.len() as i64 > limit;
        rows.truncate(limit.max(0) as usize);
        let next_cursor = if has_more {
            rows.last().map(|row| id_of(row).to_string())
        } else {
            None
        };
        Page {
            items: rows,
            next_cursor,
            has_more,
        }
    }
}

impl<T> Page<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
            has_more: self.has_more,
        }
    }
}

/// Resolves a page request's cursor to the storage position after which to list: the first
/// page starts at 0, and a cursor is looked up as the id of its kind by `seq_of` (a cursor that
/// names no item of the list is a 400 on `cursor`).
pub async fn cursor_position<Id>(
    cursor: Option<&str>,
    seq_of: impl AsyncFnOnce(Id) -> StoreResult<Option<i64>>,
) -> Result<i64, ApiError>
where
    Id: for<'a> From<&'a str>,
{
    match cursor {
        None => Ok(0),
        Some(cursor) => seq_of(Id::from(cursor)).await?.ok_or_else(|| {
            ApiError::invalid(
                "cursor",
                format!("cursor '{cursor}' does not match any item of this list"),
            )
        }),
    }
}
