//! Queries on outbound campaigns and their contacts: made in one transaction, leased to the
//! node that runs them, contacts claimed for a call with a conditional update (so no contact
//! is called twice at once, whichever node runs it), and each call's outcome applied.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::{campaign_contacts as contacts, campaigns};
pub use super::status::{CampaignStatus, ContactStatus};
use super::{Db, StoreError, StoreResult};
use crate::ids::{AgentId, CampaignId, DeveloperId, KeyId, NodeId, TaskId};
use crate::{db_run, db_tx};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = campaigns)]
pub struct CampaignRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub id: CampaignId,
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub name: Option<String>,
    pub from_number: String,
    pub status: CampaignStatus,
    pub status_reason: Option<String>,
    pub max_concurrent: i32,
    /// Calling hours, a JSON object (see `crate::live::campaigns::CallWindow`).
    pub call_window: Option<String>,
    pub max_attempts: i32,
    pub retry_delay_ms: i64,
    /// A JSON array of the outcomes tried again.
    pub retry_on: String,
    pub machine_detection: String,
    pub voicemail_message: Option<String>,
    pub record: bool,
    pub key_id: Option<KeyId>,
    pub public_base: String,
    pub runner_node: Option<NodeId>,
    pub lease_until: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub completed_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = contacts)]
pub struct ContactRow {
    #[diesel(skip_insertion)]
    pub seq: i64,
    pub campaign_id: CampaignId,
    pub contact_index: i32,
    pub to_number: String,
    /// A JSON object.
    pub variables: String,
    pub status: ContactStatus,
    pub attempts: i32,
    pub next_attempt_at: i64,
    pub task_id: Option<TaskId>,
    pub last_outcome: Option<String>,
    pub error: Option<String>,
    pub updated_at: i64,
}

/// How many of a campaign's contacts are in each status.
pub type StatusCounts = Vec<(ContactStatus, i64)>;

/// Stores a new campaign with its contacts.
pub async fn insert(db: &Db, campaign: &CampaignRow, list: &[ContactRow]) -> StoreResult<()> {
    db_tx!(db, |conn| {
        diesel::insert_into(campaigns::table)
            .values(campaign)
            .execute(conn)
            .await?;
        // One INSERT per contact: the async SQLite connection builds no multi-row INSERT.
        for contact in list {
            diesel::insert_into(contacts::table)
                .values(contact)
                .execute(conn)
                .await?;
        }
        Ok(())
    })
}

store_fns! {
    table = campaigns, row = CampaignRow;

    get pub fn get(developer: &DeveloperId, id: &CampaignId) where developer_id.eq(developer), id.eq(id);

    get pub fn by_id(id: &CampaignId) where id.eq(id);

    list pub fn list(developer: &DeveloperId) where developer_id.eq(developer);

    seq pub fn seq_of(developer: &DeveloperId, id: &CampaignId) where developer_id.eq(developer), id.eq(id);

    /// Moves the developer's campaign from one of `from` to `status`; `None` when it is
    /// unknown or in none of them.
    update pub fn set_status(developer: &DeveloperId, id: &CampaignId, from: &'static [CampaignStatus], status: CampaignStatus,
                             reason: Option<&str>, at: i64)
        set ((
            campaigns::status.eq(status),
            campaigns::status_reason.eq(reason),
            campaigns::updated_at.eq(at),
        ))
        where developer_id.eq(developer), id.eq(id), status.eq_any(from);

    /// Marks an active campaign completed.
    update pub fn complete(id: &CampaignId, at: i64)
        set ((
            campaigns::status.eq(CampaignStatus::Completed),
            campaigns::updated_at.eq(at),
            campaigns::completed_at.eq(Some(at)),
        ))
        where id.eq(id), status.eq(CampaignStatus::Active);
}

/// The active campaigns this node may run: those whose lease it holds or has lapsed, leased
/// to `node` until `until` (a conditional update per campaign, so one node runs each).
pub async fn lease_active(
    db: &Db,
    node: &NodeId,
    now: i64,
    until: i64,
) -> StoreResult<Vec<CampaignRow>> {
    let candidates: Vec<CampaignRow> = db_run!(db, |conn| {
        Ok::<_, StoreError>(
            campaigns::table
                .filter(campaigns::status.eq(CampaignStatus::Active))
                .filter(
                    campaigns::lease_until
                        .lt(now)
                        .or(campaigns::runner_node.eq(node)),
                )
                .order(campaigns::seq.asc())
                .limit(100)
                .select(CampaignRow::as_select())
                .load(conn)
                .await?,
        )
    })?;
    let mut leased = Vec::with_capacity(candidates.len());
    for campaign in candidates {
        let won: usize = db_run!(db, |conn| {
            Ok::<_, StoreError>(
                diesel::update(
                    campaigns::table
                        .filter(campaigns::id.eq(&campaign.id))
                        .filter(campaigns::status.eq(CampaignStatus::Active))
                        .filter(
                            campaigns::lease_until
                                .lt(now)
                                .or(campaigns::runner_node.eq(node)),
                        ),
                )
                .set((
                    campaigns::runner_node.eq(Some(node)),
                    campaigns::lease_until.eq(until),
                ))
                .execute(conn)
                .await?,
            )
        })?;
        if won == 1 {
            leased.push(campaign);
        }
    }
    Ok(leased)
}

store_fns! {
    table = contacts, row = ContactRow;

    all pub fn contacts_of(campaign: &CampaignId) where campaign_id.eq(campaign);

    get pub fn contact_of_task(task: &TaskId) where task_id.eq(task);
}

/// How many of the campaign's contacts are in each status.
pub async fn counts(db: &Db, campaign: &CampaignId) -> StoreResult<StatusCounts> {
    db_run!(db, |conn| {
        Ok(contacts::table
            .filter(contacts::campaign_id.eq(campaign))
            .group_by(contacts::status)
            .select((contacts::status, diesel::dsl::count_star()))
            .load(conn)
            .await?)
    })
}

/// Up to `limit` of the campaign's contacts due for a call at `now`, moved to `calling` with
/// one more attempt (each by a conditional update: a contact another node claimed first is
/// left out).
pub async fn claim_due(
    db: &Db,
    campaign: &CampaignId,
    now: i64,
    limit: i64,
) -> StoreResult<Vec<ContactRow>> {
    let due: Vec<ContactRow> = db_run!(db, |conn| {
        Ok::<_, StoreError>(
            contacts::table
                .filter(contacts::campaign_id.eq(campaign))
                .filter(contacts::status.eq(ContactStatus::Pending))
                .filter(contacts::next_attempt_at.le(now))
                .order((
                    contacts::next_attempt_at.asc(),
                    contacts::contact_index.asc(),
                ))
                .limit(limit)
                .select(ContactRow::as_select())
                .load(conn)
                .await?,
        )
    })?;
    let mut claimed = Vec::with_capacity(due.len());
    for contact in due {
        let row: Option<ContactRow> = db_run!(db, |conn| {
            Ok::<_, StoreError>(
                diesel::update(
                    contacts::table
                        .filter(contacts::seq.eq(contact.seq))
                        .filter(contacts::status.eq(ContactStatus::Pending)),
                )
                .set((
                    contacts::status.eq(ContactStatus::Calling),
                    contacts::attempts.eq(contacts::attempts + 1),
                    // A late outcome of the previous attempt's call no longer finds it.
                    contacts::task_id.eq(None::<String>),
                    contacts::updated_at.eq(now),
                ))
                .returning(ContactRow::as_returning())
                .get_result(conn)
                .await
                .optional()?,
            )
        })?;
        claimed.extend(row);
    }
    Ok(claimed)
}

/// What a contact's call (or the attempt at one) leaves it as.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = contacts)]
pub struct ContactChanges {
    pub status: Option<ContactStatus>,
    pub attempts: Option<i32>,
    pub next_attempt_at: Option<i64>,
    pub task_id: Option<Option<TaskId>>,
    pub last_outcome: Option<Option<String>>,
    pub error: Option<Option<String>>,
    pub updated_at: i64,
}

/// Applies `changes` to the contact `seq` while it is `calling`; answers it as it is after,
/// `None` when it was not calling (an outcome applied already).
pub async fn settle_contact(
    db: &Db,
    seq: i64,
    changes: &ContactChanges,
) -> StoreResult<Option<ContactRow>> {
    db_run!(db, |conn| {
        Ok(diesel::update(
            contacts::table
                .filter(contacts::seq.eq(seq))
                .filter(contacts::status.eq(ContactStatus::Calling)),
        )
        .set(changes)
        .returning(ContactRow::as_returning())
        .get_result(conn)
        .await
        .optional()?)
    })
}

/// Cancels the campaign's contacts that are still waiting for a call.
pub async fn cancel_pending(db: &Db, campaign: &CampaignId, at: i64) -> StoreResult<usize> {
    db_run!(db, |conn| {
        Ok(diesel::update(
            contacts::table
                .filter(contacts::campaign_id.eq(campaign))
                .filter(contacts::status.eq(ContactStatus::Pending)),
        )
        .set((
            contacts::status.eq(ContactStatus::Canceled),
            contacts::updated_at.eq(at),
        ))
        .execute(conn)
        .await?)
    })
}

/// The contacts `calling` since before `before`: calls whose outcome never arrived.
pub async fn stale_calls(
    db: &Db,
    campaign: &CampaignId,
    before: i64,
) -> StoreResult<Vec<ContactRow>> {
    db_run!(db, |conn| {
        Ok(contacts::table
            .filter(contacts::campaign_id.eq(campaign))
            .filter(contacts::status.eq(ContactStatus::Calling))
            .filter(contacts::updated_at.lt(before))
            .select(ContactRow::as_select())
            .load(conn)
            .await?)
    })
}
