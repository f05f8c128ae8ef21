//! Queries on developers, the owners of everything else, including their subscription tier
//! and the processed payment-processor events that move it.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::{developers, stripe_events};
use super::{Db, StoreResult};
use crate::ids::DeveloperId;
use crate::{db_run, db_tx, time};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = developers)]
pub struct DeveloperRow {
    pub seq: i64,
    pub id: DeveloperId,
    pub name: Option<String>,
    pub tier: String,
    pub created_at: i64,
    pub stripe_customer_id: Option<String>,
    pub stripe_subscription_id: Option<String>,
    pub tier_expires_at: Option<i64>,
}

/// A change of a developer's subscription, as a webhook event or the operator decides it.
/// `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubscriptionChange {
    pub tier: Option<String>,
    pub tier_expires_at: Option<Option<i64>>,
    pub stripe_customer_id: Option<String>,
    pub stripe_subscription_id: Option<Option<String>>,
}

impl SubscriptionChange {
    pub fn is_empty(&self) -> bool {
        *self == SubscriptionChange::default()
    }
}

/// Creates the developer unless it exists; answers whether it was created.
pub async fn ensure(db: &Db, id: &DeveloperId) -> StoreResult<bool> {
    db_run!(db, |conn| {
        let inserted = diesel::insert_into(developers::table)
            .values((
                developers::id.eq(id),
                developers::tier.eq("starter"),
                developers::created_at.eq(time::now_ms()),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
        Ok(inserted == 1)
    })
}

store_fns! {
    table = developers, row = DeveloperRow;

    get pub fn get(id: &DeveloperId) where id.eq(id);

    /// The developer a payment-processor customer belongs to.
    get pub fn by_stripe_customer(customer: &str) where stripe_customer_id.eq(customer);
}

/// Several developers at once (for refreshing cached tiers).
pub async fn get_many(db: &Db, ids: &[DeveloperId]) -> StoreResult<Vec<DeveloperRow>> {
    db_run!(db, |conn| {
        Ok(developers::table
            .filter(developers::id.eq_any(ids))
            .select(DeveloperRow::as_select())
            .load(conn)
            .await?)
    })
}

pub async fn count(db: &Db) -> StoreResult<i64> {
    db_run!(db, |conn| {
        Ok(developers::table.count().get_result(conn).await?)
    })
}

/// Updates developer `$id` with the fields `$change` sets, on connection `$conn` (a macro
/// so that the one body compiles for both backends inside `db_run!`/`db_tx!`). Evaluates to
/// whether the developer exists.
macro_rules! apply_change {
    ($conn:ident, $id:expr, $change:expr) => {{
        let id: &DeveloperId = $id;
        let change: &SubscriptionChange = $change;
        let found = diesel::select(diesel::dsl::exists(
            developers::table.filter(developers::id.eq(id)),
        ))
        .get_result::<bool>($conn)
        .await?;
        if let Some(tier) = &change.tier {
            diesel::update(developers::table.filter(developers::id.eq(id)))
                .set(developers::tier.eq(tier))
                .execute($conn)
                .await?;
        }
        if let Some(expires) = change.tier_expires_at {
            diesel::update(developers::table.filter(developers::id.eq(id)))
                .set(developers::tier_expires_at.eq(expires))
                .execute($conn)
                .await?;
        }
        if let Some(customer) = &change.stripe_customer_id {
            diesel::update(developers::table.filter(developers::id.eq(id)))
                .set(developers::stripe_customer_id.eq(customer))
                .execute($conn)
                .await?;
        }
        if let Some(subscription) = &change.stripe_subscription_id {
            diesel::update(developers::table.filter(developers::id.eq(id)))
                .set(developers::stripe_subscription_id.eq(subscription))
                .execute($conn)
                .await?;
        }
        found
    }};
}

/// Applies `change` to developer `id`; answers whether the developer exists.
pub async fn change_subscription(
    db: &Db,
    id: &DeveloperId,
    change: &SubscriptionChange,
) -> StoreResult<bool> {
    db_tx!(db, |conn| Ok(apply_change!(conn, id, change)))
}

/// Records processed event `event_id` and applies its change in one transaction. Answers
/// `false`, changing nothing, when the event was processed before (a replay).
pub async fn apply_event(
    db: &Db,
    event_id: &str,
    event_type: &str,
    developer_id: Option<&DeveloperId>,
    change: &SubscriptionChange,
) -> StoreResult<bool> {
    db_tx!(db, |conn| {
        let inserted = diesel::insert_into(stripe_events::table)
            .values((
                stripe_events::id.eq(event_id),
                stripe_events::event_type.eq(event_type),
                stripe_events::developer_id.eq(developer_id),
                stripe_events::received_at.eq(time::now_ms()),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
        if inserted == 0 {
            return Ok(false);
        }
        if let Some(developer) = developer_id {
            apply_change!(conn, developer, change);
        }
        Ok(true)
    })
}
