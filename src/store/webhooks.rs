//! Queries on webhook endpoints, their deliveries and the attempts made of each. A delivery
//! is claimed for an attempt by a conditional update (it must still be pending and due at the
//! time the claimer read), so of several nodes polling one database exactly one makes each
//! attempt; a claim lapses after its lease, so an attempt cut by a crash is made again.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::{webhook_attempts, webhook_deliveries, webhook_endpoints};
pub use super::status::DeliveryStatus;
use super::{Db, StoreResult};
use crate::ids::{DeliveryId, DeveloperId, EventId, WebhookId};
use crate::{db_run, db_tx};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_endpoints)]
pub struct EndpointRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: WebhookId,
    pub developer_id: DeveloperId,
    pub url: String,
    /// A JSON array of event type names.
    pub events: String,
    /// The signing secret, sealed.
    pub secret: String,
    pub created_at: i64,
}

impl EndpointRow {
    /// The event types it receives.
    pub fn event_names(&self) -> Vec<String> {
        serde_json::from_str(&self.events).unwrap_or_default()
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries)]
pub struct DeliveryRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: DeliveryId,
    pub endpoint_id: WebhookId,
    pub developer_id: DeveloperId,
    pub event_id: EventId,
    pub event_type: String,
    pub payload: String,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub next_attempt_at: i64,
    pub created_at: i64,
    pub completed_at: Option<i64>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_attempts)]
pub struct AttemptRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub delivery_id: DeliveryId,
    pub attempt: i32,
    pub attempted_at: i64,
    pub duration_ms: i64,
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

store_fns! {
    table = webhook_endpoints, row = EndpointRow;

    get pub fn get_endpoint(developer: &DeveloperId, id: &WebhookId) where developer_id.eq(developer), id.eq(id);

    /// An endpoint by id alone, for delivering to it.
    get pub fn endpoint_by_id(id: &WebhookId) where id.eq(id);

    /// A developer's endpoints in creation order after `after` (a `seq`).
    list pub fn list_endpoints(developer: &DeveloperId) where developer_id.eq(developer);

    seq pub fn endpoint_seq_of(developer: &DeveloperId, id: &WebhookId)
        where developer_id.eq(developer), id.eq(id);

    /// Every endpoint of a developer, to see which are subscribed to an event.
    all pub fn endpoints_of(developer: &DeveloperId) where developer_id.eq(developer);
}

store_fns! {
    table = webhook_deliveries, row = DeliveryRow;

    /// An endpoint's deliveries in creation order after `after` (a `seq`).
    list pub fn list_deliveries(endpoint: &WebhookId) where endpoint_id.eq(endpoint);

    seq pub fn delivery_seq_of(endpoint: &WebhookId, id: &DeliveryId) where endpoint_id.eq(endpoint), id.eq(id);
}

/// Stores `endpoint` unless its developer has `max` already (checked in the same
/// transaction); `None` when at the limit.
pub async fn insert_endpoint(
    db: &Db,
    endpoint: &EndpointRow,
    max: i64,
) -> StoreResult<Option<EndpointRow>> {
    db_tx!(db, |conn| {
        let count: i64 = webhook_endpoints::table
            .filter(webhook_endpoints::developer_id.eq(&endpoint.developer_id))
            .count()
            .get_result(conn)
            .await?;
        if count >= max {
            return Ok(None);
        }
        Ok(Some(
            diesel::insert_into(webhook_endpoints::table)
                .values(endpoint)
                .returning(EndpointRow::as_returning())
                .get_result(conn)
                .await?,
        ))
    })
}

/// Removes a developer's endpoint with its deliveries and their attempts, in one
/// transaction. Answers whether the endpoint existed.
pub async fn delete_endpoint(
    db: &Db,
    developer: &DeveloperId,
    id: &WebhookId,
) -> StoreResult<bool> {
    db_tx!(db, |conn| {
        let owned: Option<i64> = webhook_endpoints::table
            .filter(webhook_endpoints::developer_id.eq(developer))
            .filter(webhook_endpoints::id.eq(id))
            .select(webhook_endpoints::seq)
            .first(conn)
            .await
            .optional()?;
        if owned.is_none() {
            return Ok(false);
        }
        let deliveries: Vec<DeliveryId> = webhook_deliveries::table
            .filter(webhook_deliveries::endpoint_id.eq(id))
            .select(webhook_deliveries::id)
            .load(conn)
            .await?;
        for batch in deliveries.chunks(500) {
            diesel::delete(
                webhook_attempts::table.filter(webhook_attempts::delivery_id.eq_any(batch)),
            )
            .execute(conn)
            .await?;
        }
        diesel::delete(webhook_deliveries::table.filter(webhook_deliveries::endpoint_id.eq(id)))
            .execute(conn)
            .await?;
        diesel::delete(webhook_endpoints::table.filter(webhook_endpoints::id.eq(id)))
            .execute(conn)
            .await?;
        Ok(true)
    })
}

/// Stores the deliveries of one event (one per subscribed endpoint) in one transaction.
pub async fn insert_deliveries(db: &Db, deliveries: &[DeliveryRow]) -> StoreResult<()> {
    if deliveries.is_empty() {
        return Ok(());
    }
    db_tx!(db, |conn| {
        // One row per subscribed endpoint: a handful, so no multi-row INSERT (which the
        // async SQLite connection does not build).
        for delivery in deliveries {
            diesel::insert_into(webhook_deliveries::table)
                .values(delivery)
                .execute(conn)
                .await?;
        }
        Ok(())
    })
}

/// Pending deliveries due at `now`, longest waiting first, at most `limit`.
pub async fn due_deliveries(db: &Db, now: i64, limit: i64) -> StoreResult<Vec<DeliveryRow>> {
    db_run!(db, |conn| {
        Ok(webhook_deliveries::table
            .filter(webhook_deliveries::status.eq(DeliveryStatus::Pending))
            .filter(webhook_deliveries::next_attempt_at.le(now))
            .order(webhook_deliveries::next_attempt_at.asc())
            .limit(limit)
            .select(DeliveryRow::as_select())
            .load(conn)
            .await?)
    })
}

/// Claims `delivery` for one attempt: still pending and still due when it was read as
/// `seen_due`, it is moved to `lease_until` (when the claim lapses) and its attempt counted.
/// Answers whether this caller won it.
pub async fn claim(
    db: &Db,
    delivery: &DeliveryId,
    seen_due: i64,
    lease_until: i64,
) -> StoreResult<bool> {
    db_run!(db, |conn| {
        let changed = diesel::update(
            webhook_deliveries::table
                .filter(webhook_deliveries::id.eq(delivery))
                .filter(webhook_deliveries::status.eq(DeliveryStatus::Pending))
                .filter(webhook_deliveries::next_attempt_at.eq(seen_due)),
        )
        .set((
            webhook_deliveries::next_attempt_at.eq(lease_until),
            webhook_deliveries::attempts.eq(webhook_deliveries::attempts + 1),
        ))
        .execute(conn)
        .await?;
        Ok(changed == 1)
    })
}

/// What an attempt leaves the delivery as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    Delivered { at: i64 },
    RetryAt(i64),
    GivenUp { at: i64 },
}

/// Records an attempt and what it leaves the delivery as, in one transaction.
pub async fn record_attempt(
    db: &Db,
    attempt: &AttemptRow,
    result: AttemptResult,
) -> StoreResult<()> {
    let (status, next, completed) = match result {
        AttemptResult::Delivered { at } => (DeliveryStatus::Delivered, None, Some(at)),
        AttemptResult::RetryAt(at) => (DeliveryStatus::Pending, Some(at), None),
        AttemptResult::GivenUp { at } => (DeliveryStatus::Failed, None, Some(at)),
    };
    db_tx!(db, |conn| {
        diesel::insert_into(webhook_attempts::table)
            .values(attempt)
            .execute(conn)
            .await?;
        let target = webhook_deliveries::table
            .filter(webhook_deliveries::id.eq(&attempt.delivery_id))
            .filter(webhook_deliveries::status.eq(DeliveryStatus::Pending));
        match next {
            Some(next) => {
                diesel::update(target)
                    .set(webhook_deliveries::next_attempt_at.eq(next))
                    .execute(conn)
                    .await?
            }
            None => {
                diesel::update(target)
                    .set((
                        webhook_deliveries::status.eq(status),
                        webhook_deliveries::completed_at.eq(completed),
                    ))
                    .execute(conn)
                    .await?
            }
        };
        Ok(())
    })
}

/// The attempts made of `deliveries`, in order.
pub async fn attempts_of(db: &Db, deliveries: &[DeliveryId]) -> StoreResult<Vec<AttemptRow>> {
    if deliveries.is_empty() {
        return Ok(Vec::new());
    }
    db_run!(db, |conn| {
        Ok(webhook_attempts::table
            .filter(webhook_attempts::delivery_id.eq_any(deliveries))
            .order(webhook_attempts::seq.asc())
            .select(AttemptRow::as_select())
            .load(conn)
            .await?)
    })
}
