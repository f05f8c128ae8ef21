//! `CampaignRegistry`: the records of outbound campaigns. It makes a campaign with its
//! contacts, answers and lists them with each contact's state, pauses, resumes and cancels
//! them, and for the runner (`crate::live::campaigns`) leases the active ones to this node,
//! claims contacts due for a call and applies each call's outcome: the retry policy, and the
//! campaign's completion once no contact is left to call.

use actix::prelude::*;

use super::{cursor_position, Page, PageRequest};
use crate::error::ApiError;
use crate::ids::{CampaignId, DeveloperId, NodeId, TaskId};
use crate::store::campaigns::{
    self, CampaignRow, CampaignStatus, ContactChanges, ContactRow, ContactStatus, StatusCounts,
};
use crate::store::Db;
use crate::time::now_ms;

pub struct CampaignRegistry {
    db: Db,
}

impl CampaignRegistry {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

impl Actor for CampaignRegistry {
    type Context = Context<Self>;
}

/// A campaign with its contacts' counts by status, and (when asked) the contacts.
#[derive(Debug, Clone)]
pub struct CampaignView {
    pub campaign: CampaignRow,
    pub counts: StatusCounts,
    pub contacts: Option<Vec<ContactRow>>,
}

async fn view(
    db: &Db,
    campaign: CampaignRow,
    with_contacts: bool,
) -> Result<CampaignView, ApiError> {
    let counts = campaigns::counts(db, &campaign.id).await?;
    let contacts = match with_contacts {
        true => Some(campaigns::contacts_of(db, &campaign.id).await?),
        false => None,
    };
    Ok(CampaignView {
        campaign,
        counts,
        contacts,
    })
}

#[derive(Message)]
#[rtype(result = "Result<CampaignView, ApiError>")]
pub struct CreateCampaign {
    pub campaign: CampaignRow,
    pub contacts: Vec<ContactRow>,
}

impl Handler<CreateCampaign> for CampaignRegistry {
    type Result = ResponseFuture<Result<CampaignView, ApiError>>;

    fn handle(&mut self, msg: CreateCampaign, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            campaigns::insert(&db, &msg.campaign, &msg.contacts).await?;
            let stored = campaigns::by_id(&db, &msg.campaign.id)
                .await?
                .ok_or_else(|| ApiError::not_found("campaign", msg.campaign.id.as_str()))?;
            view(&db, stored, true).await
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<CampaignView, ApiError>")]
pub struct GetCampaign {
    pub developer_id: DeveloperId,
    pub id: CampaignId,
}

impl Handler<GetCampaign> for CampaignRegistry {
    type Result = ResponseFuture<Result<CampaignView, ApiError>>;

    fn handle(&mut self, msg: GetCampaign, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let row = campaigns::get(&db, &msg.developer_id, &msg.id)
                .await?
                .ok_or_else(|| ApiError::not_found("campaign", msg.id.as_str()))?;
            view(&db, row, true).await
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<Page<CampaignView>, ApiError>")]
pub struct ListCampaigns {
    pub developer_id: DeveloperId,
    pub page: PageRequest,
}

impl Handler<ListCampaigns> for CampaignRegistry {
    type Result = ResponseFuture<Result<Page<CampaignView>, ApiError>>;

    fn handle(&mut self, msg: ListCampaigns, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let dev = &msg.developer_id;
            let cursor = msg.page.cursor.as_deref();
            let after = cursor_position(cursor, async |id: CampaignId| {
                campaigns::seq_of(&db, dev, &id).await
            })
            .await?;
            let rows = campaigns::list(&db, dev, after, msg.page.limit + 1).await?;
            let page = Page::from_rows(rows, msg.page.limit, |row| row.id.as_str());
            let mut items = Vec::with_capacity(page.items.len());
            for row in page.items {
                items.push(view(&db, row, false).await?);
            }
            Ok(Page {
                items,
                next_cursor: page.next_cursor,
                has_more: page.has_more,
            })
        })
    }
}

/// What the developer does to a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignAction {
    /// No new calls until resumed; calls in progress go on.
    Pause,
    Resume,
    /// No new calls ever; contacts still waiting are canceled, calls in progress go on.
    Cancel,
}

impl CampaignAction {
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignAction::Pause => "pause",
            CampaignAction::Resume => "resume",
            CampaignAction::Cancel => "cancel",
        }
    }
}

#[derive(Message)]
#[rtype(result = "Result<CampaignView, ApiError>")]
pub struct ChangeCampaign {
    pub developer_id: DeveloperId,
    pub id: CampaignId,
    pub action: CampaignAction,
}

impl Handler<ChangeCampaign> for CampaignRegistry {
    type Result = ResponseFuture<Result<CampaignView, ApiError>>;

    fn handle(&mut self, msg: ChangeCampaign, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            const ACTIVE: &[CampaignStatus] = &[CampaignStatus::Active];
            const PAUSED: &[CampaignStatus] = &[CampaignStatus::Paused];
            const RUNNING: &[CampaignStatus] = &[CampaignStatus::Active, CampaignStatus::Paused];
            let (from, to) = match msg.action {
                CampaignAction::Pause => (ACTIVE, CampaignStatus::Paused),
                CampaignAction::Resume => (PAUSED, CampaignStatus::Active),
                CampaignAction::Cancel => (RUNNING, CampaignStatus::Canceled),
            };
            let now = now_ms();
            let changed =
                campaigns::set_status(&db, &msg.developer_id, &msg.id, from, to, None, now).await?;
            let Some(row) = changed else {
                let row = campaigns::get(&db, &msg.developer_id, &msg.id)
                    .await?
                    .ok_or_else(|| ApiError::not_found("campaign", msg.id.as_str()))?;
                return Err(ApiError::Conflict(format!(
                    "campaign {} is {}: it cannot {}",
                    row.id,
                    row.status,
                    msg.action.as_str()
                )));
            };
            if msg.action == CampaignAction::Cancel {
                campaigns::cancel_pending(&db, &row.id, now).await?;
            }
            view(&db, row, true).await
        })
    }
}

/// Leases the active campaigns this node may run (see [`campaigns::lease_active`]).
#[derive(Message)]
#[rtype(result = "Result<Vec<CampaignRow>, ApiError>")]
pub struct LeaseCampaigns {
    pub node_id: NodeId,
    pub lease_ms: i64,
}

impl Handler<LeaseCampaigns> for CampaignRegistry {
    type Result = ResponseFuture<Result<Vec<CampaignRow>, ApiError>>;

    fn handle(&mut self, msg: LeaseCampaigns, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let now = now_ms();
            Ok(campaigns::lease_active(&db, &msg.node_id, now, now + msg.lease_ms).await?)
        })
    }
}

/// Claims up to `free` contacts of an active campaign due for a call, where `free` is what
/// its `maxConcurrent` leaves beside the calls in progress; contacts calling for longer than
/// `stale_ms` (their outcome never came) are settled as `failed` first. When nothing is left
/// to call, the campaign is completed.
#[derive(Message)]
#[rtype(result = "Result<Vec<ContactRow>, ApiError>")]
pub struct ClaimContacts {
    pub campaign: CampaignRow,
    pub stale_ms: i64,
}

impl Handler<ClaimContacts> for CampaignRegistry {
    type Result = ResponseFuture<Result<Vec<ContactRow>, ApiError>>;

    fn handle(&mut self, msg: ClaimContacts, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let campaign = &msg.campaign;
            let now = now_ms();
            for stale in campaigns::stale_calls(&db, &campaign.id, now - msg.stale_ms).await? {
                let outcome = Outcome {
                    status: ContactStatus::Failed.to_string(),
                    error: Some("no outcome was reported for the call".to_string()),
                    counts: true,
                };
                settle(&db, campaign, &stale, &outcome, now).await?;
            }
            let counts = campaigns::counts(&db, &campaign.id).await?;
            let count = |status: ContactStatus| {
                counts
                    .iter()
                    .find(|(s, _)| *s == status)
                    .map_or(0, |(_, n)| *n)
            };
            let (calling, pending) = (count(ContactStatus::Calling), count(ContactStatus::Pending));
            if calling == 0 && pending == 0 {
                campaigns::complete(&db, &campaign.id, now).await?;
                return Ok(Vec::new());
            }
            let free = i64::from(campaign.max_concurrent) - calling;
            if free <= 0 || pending == 0 {
                return Ok(Vec::new());
            }
            Ok(campaigns::claim_due(&db, &campaign.id, now, free).await?)
        })
    }
}

/// How one attempt at a contact came out.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The word recorded as the contact's last outcome: the call task's final status
    /// (`completed`, `no-answer`, `busy`, `failed`, `canceled`) for an attempt that counts,
    /// why it was not made (`no-free-line`, `no-credits`) for one that does not.
    pub status: String,
    pub error: Option<String>,
    /// Whether the attempt counts against `maxAttempts`: an attempt that could not be made
    /// for want of a free line is tried again without counting.
    pub counts: bool,
}

/// What an outcome leaves `contact` as, by `campaign`'s retry policy.
fn after_outcome(
    campaign: &CampaignRow,
    contact: &ContactRow,
    outcome: &Outcome,
    now: i64,
) -> ContactChanges {
    let retried: Vec<String> = serde_json::from_str(&campaign.retry_on).unwrap_or_default();
    let attempts = if outcome.counts {
        contact.attempts
    } else {
        contact.attempts - 1
    };
    let again =
        !outcome.counts || (attempts < campaign.max_attempts && retried.contains(&outcome.status));
    let (status, next) = if again && campaign.status != CampaignStatus::Canceled {
        let wait = if outcome.counts {
            campaign.retry_delay_ms
        } else {
            FREE_LINE_WAIT_MS
        };
        (ContactStatus::Pending, Some(now + wait))
    } else if again {
        (ContactStatus::Canceled, None)
    } else {
        (
            // A counted outcome is a call's end, a word of the contact's states; anything
            // else (none is made today) is kept as a failure rather than lost.
            ContactStatus::parse(&outcome.status).unwrap_or(ContactStatus::Failed),
            None,
        )
    };
    ContactChanges {
        status: Some(status),
        attempts: Some(attempts),
        next_attempt_at: next,
        last_outcome: Some(Some(outcome.status.clone())),
        error: Some(outcome.error.clone()),
        updated_at: now,
        ..Default::default()
    }
}

/// How long a contact waits when its call could not be placed for want of a free line.
pub const FREE_LINE_WAIT_MS: i64 = 5_000;

async fn settle(
    db: &Db,
    campaign: &CampaignRow,
    contact: &ContactRow,
    outcome: &Outcome,
    now: i64,
) -> Result<Option<ContactRow>, ApiError> {
    let changes = after_outcome(campaign, contact, outcome, now);
    Ok(campaigns::settle_contact(db, contact.seq, &changes).await?)
}

/// The contact's call was placed as task `task_id`.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct ContactPlaced {
    pub contact: ContactRow,
    pub task_id: TaskId,
}

impl Handler<ContactPlaced> for CampaignRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: ContactPlaced, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let changes = ContactChanges {
                task_id: Some(Some(msg.task_id)),
                error: Some(None),
                updated_at: now_ms(),
                ..Default::default()
            };
            campaigns::settle_contact(&db, msg.contact.seq, &changes).await?;
            Ok(())
        })
    }
}

/// An attempt at a contact came out as `outcome`: either its call task ended (`task_id`) or
/// it could not be placed (`contact`).
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct ContactOutcome {
    pub of: OutcomeOf,
    pub outcome: Outcome,
}

pub enum OutcomeOf {
    Task(TaskId),
    Contact(ContactRow),
}

impl Handler<ContactOutcome> for CampaignRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: ContactOutcome, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let contact = match msg.of {
                OutcomeOf::Contact(contact) => contact,
                OutcomeOf::Task(task) => match campaigns::contact_of_task(&db, &task).await? {
                    Some(contact) => contact,
                    // A call placed on its own, not by a campaign.
                    None => return Ok(()),
                },
            };
            let Some(campaign) = campaigns::by_id(&db, &contact.campaign_id).await? else {
                return Ok(());
            };
            settle(&db, &campaign, &contact, &msg.outcome, now_ms()).await?;
            Ok(())
        })
    }
}

/// Stops an active campaign from placing calls by itself (its credits are spent), saying why.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct PauseCampaign {
    pub campaign: CampaignRow,
    pub reason: String,
}

impl Handler<PauseCampaign> for CampaignRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: PauseCampaign, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            const ACTIVE: &[CampaignStatus] = &[CampaignStatus::Active];
            let c = &msg.campaign;
            campaigns::set_status(
                &db,
                &c.developer_id,
                &c.id,
                ACTIVE,
                CampaignStatus::Paused,
                Some(&msg.reason),
                now_ms(),
            )
            .await?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campaign() -> CampaignRow {
        CampaignRow {
            seq: 1,
            id: "cmp_1".into(),
            developer_id: "dev".into(),
            agent_id: "agent".into(),
            name: None,
            from_number: "+14155550199".into(),
            status: CampaignStatus::Active,
            status_reason: None,
            max_concurrent: 2,
            call_window: None,
            max_attempts: 2,
            retry_delay_ms: 60_000,
            retry_on: r#"["no-answer","busy"]"#.into(),
            machine_detection: "off".into(),
            voicemail_message: None,
            record: false,
            key_id: None,
            public_base: "http://localhost".into(),
            runner_node: None,
            lease_until: 0,
            created_at: 0,
            updated_at: 0,
            completed_at: None,
        }
    }

    fn contact(attempts: i32) -> ContactRow {
        ContactRow {
            seq: 1,
            campaign_id: "cmp_1".into(),
            contact_index: 0,
            to_number: "+14155550100".into(),
            variables: "{}".into(),
            status: ContactStatus::Calling,
            attempts,
            next_attempt_at: 0,
            task_id: None,
            last_outcome: None,
            error: None,
            updated_at: 0,
        }
    }

    fn outcome(status: &str, counts: bool) -> Outcome {
        Outcome {
            status: status.into(),
            error: None,
            counts,
        }
    }

    #[test]
    fn outcomes_follow_the_retry_policy() {
        let c = campaign();
        let retried = after_outcome(&c, &contact(1), &outcome("no-answer", true), 1_000);
        assert_eq!(retried.status, Some(ContactStatus::Pending));
        assert_eq!(retried.next_attempt_at, Some(61_000));
        assert_eq!(retried.attempts, Some(1));
        let spent = after_outcome(&c, &contact(2), &outcome("no-answer", true), 1_000);
        assert_eq!(
            spent.status,
            Some(ContactStatus::NoAnswer),
            "the last attempt"
        );
        let done = after_outcome(&c, &contact(1), &outcome("completed", true), 1_000);
        assert_eq!(done.status, Some(ContactStatus::Completed));
        let failed = after_outcome(&c, &contact(1), &outcome("failed", true), 1_000);
        assert_eq!(
            failed.status,
            Some(ContactStatus::Failed),
            "not in retry_on"
        );
        let no_line = after_outcome(&c, &contact(2), &outcome("busy", false), 1_000);
        assert_eq!(no_line.status, Some(ContactStatus::Pending));
        assert_eq!(
            no_line.attempts,
            Some(1),
            "an attempt not made is not counted"
        );
        assert_eq!(no_line.next_attempt_at, Some(1_000 + FREE_LINE_WAIT_MS));
        let mut canceled = campaign();
        canceled.status = CampaignStatus::Canceled;
        let after = after_outcome(&canceled, &contact(1), &outcome("no-answer", true), 1_000);
        assert_eq!(after.status, Some(ContactStatus::Canceled));
    }
}
