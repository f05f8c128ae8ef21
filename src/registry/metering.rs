//! `Metering`: credits, rate limits and usage. Per developer it keeps the current billing
//! period (a UTC calendar month) in memory — tier, allowance with carryover, credits used by
//! kind, request count — so the `X-Usage-*` headers and the credit check cost no database
//! round trip. Increments are added to storage every `metering.flush_ms` with atomic
//! upserts, then the period is read back, so several nodes on one PostgreSQL share the
//! counters (a crash loses at most one flush interval of counts; nodes together overshoot a
//! limit by at most what they charge within one interval). It also runs the per-key
//! rate limiter (see [`crate::billing::rate_limit`]) and counts live real-time sessions.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::billing::period::{self, Clock};
use crate::billing::pricing::{Kind, Usage};
use crate::billing::rate_limit::{RateDecision, RateLimiter};
use crate::billing::FREE_TIER;
use crate::config::{PricingConfig, RateLimitConfig, TierConfig};
use crate::error::ApiError;
use crate::ids::{DeveloperId, SessionId};
use crate::store::developers::{self, DeveloperRow, SubscriptionChange};
use crate::store::usage::{self, UsageRow};
use crate::store::{rate_limits, Backend, Db};

/// What the `X-Usage-*` headers report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageSnapshot {
    pub used: f64,
    pub limit: f64,
    pub remaining: f64,
}

/// A developer's whole standing in the current period, for `GET /v1/usage` and
/// `GET /v1/billing/subscription`.
#[derive(Debug, Clone)]
pub struct UsageReport {
    pub period: String,
    pub period_ends_at: i64,
    pub credits: UsageSnapshot,
    pub totals: UsageRow,
    /// The tier in effect (a lapsed paid tier is `starter`).
    pub tier: String,
    pub tier_expires_at: Option<i64>,
    pub stripe_customer_id: Option<String>,
    /// Credits used beyond the limit (tiers with overage) and what they cost in dollars.
    pub overage_credits: f64,
    pub overage_cost: f64,
}

/// The admission of one authenticated request.
#[derive(Debug, Clone, Copy)]
pub struct Admission {
    pub usage: UsageSnapshot,
    pub rate: RateDecision,
}

/// A developer's current period, as stored plus what happened here since.
#[derive(Debug, Clone)]
struct Standing {
    period: String,
    developer: DeveloperRow,
    totals: UsageRow,
    touched: Instant,
}

struct LiveSession {
    developer_id: DeveloperId,
    metered: SessionMetering,
    /// A slot held for a phone call whose stream has not connected yet ([`HoldSession`]):
    /// it counts against the limit until then, and is free again after.
    held_until: Option<Instant>,
    /// Credits charged to it so far.
    credits: f64,
}

/// How long the cost of an ended session is kept for [`SessionCost`] to read.
const ENDED_COST_KEPT: Duration = Duration::from_secs(600);

/// Which stages of a real-time session are charged: those on the embedded engines or on the
/// platform's vendor keys. A stage on the developer's own stored key is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionMetering {
    pub stt: bool,
    pub llm: bool,
    pub tts: bool,
}

impl SessionMetering {
    /// Every stage charged (what a session is until its engines are known).
    pub const ALL: SessionMetering = SessionMetering {
        stt: true,
        llm: true,
        tts: true,
    };

    /// Nothing charged (a slot held before the session's engines are known).
    pub const NONE: SessionMetering = SessionMetering {
        stt: false,
        llm: false,
        tts: false,
    };

    fn any(self) -> bool {
        self.stt || self.llm || self.tts
    }

    fn covers(self, usage: &Usage) -> bool {
        match usage {
            Usage::Stt { .. } => self.stt,
            Usage::Llm { .. } => self.llm,
            Usage::Tts { .. } => self.tts,
            Usage::RagEmbed { .. } | Usage::RagSearch { .. } => true,
        }
    }
}

pub struct Metering {
    db: Db,
    tiers: BTreeMap<String, TierConfig>,
    pricing: PricingConfig,
    rate: RateLimitConfig,
    clock: Arc<dyn Clock>,
    flush_every: Duration,
    standings: HashMap<DeveloperId, Standing>,
    /// Increments not yet in storage, by (developer, period).
    unflushed: HashMap<(DeveloperId, String), UsageRow>,
    flushing: bool,
    limiter: RateLimiter,
    shared: bool,
    syncing: bool,
    sessions: HashMap<SessionId, LiveSession>,
    /// What ended sessions cost, and when they ended, until read or [`ENDED_COST_KEPT`].
    ended_costs: HashMap<SessionId, (f64, Instant)>,
}

impl Metering {
    pub fn new(
        db: Db,
        tiers: BTreeMap<String, TierConfig>,
        pricing: PricingConfig,
        rate: RateLimitConfig,
        clock: Arc<dyn Clock>,
        config: &crate::config::MeteringConfig,
    ) -> Self {
        let shared = matches!(db, Db::Postgres { .. });
        Metering {
            limiter: RateLimiter::new(rate.window_seconds, shared),
            db,
            tiers,
            pricing,
            rate,
            clock,
            flush_every: Duration::from_millis(config.flush_ms.max(10)),
            standings: HashMap::new(),
            unflushed: HashMap::new(),
            flushing: false,
            shared,
            syncing: false,
            sessions: HashMap::new(),
            ended_costs: HashMap::new(),
        }
    }

    /// Which backend the counters are shared through.
    pub fn backend(&self) -> Backend {
        if self.shared {
            Backend::Postgres
        } else {
            Backend::Sqlite
        }
    }

    fn tier(&self, name: &str) -> &TierConfig {
        self.tiers
            .get(name)
            .or_else(|| self.tiers.get(FREE_TIER))
            .expect("config check guarantees a starter tier")
    }

    /// The tier in effect for `developer` now: a paid tier whose expiry has passed lapses to
    /// the free tier.
    fn effective_tier(&self, developer: &DeveloperRow) -> String {
        let lapsed = developer
            .tier_expires_at
            .is_some_and(|at| at <= self.clock.now_ms());
        if lapsed || !self.tiers.contains_key(&developer.tier) {
            FREE_TIER.to_string()
        } else {
            developer.tier.clone()
        }
    }

    fn snapshot(&self, standing: &Standing) -> UsageSnapshot {
        let tier = self.tier(&self.effective_tier(&standing.developer));
        let limit = tier.monthly_credits + standing.totals.carryover;
        let used = standing.totals.credits_used();
        UsageSnapshot {
            used,
            limit,
            remaining: (limit - used).max(0.0),
        }
    }

    fn report(&self, standing: &Standing) -> UsageReport {
        let credits = self.snapshot(standing);
        let tier_name = self.effective_tier(&standing.developer);
        let tier = self.tier(&tier_name);
        let overage_credits = if tier.allows_overage() {
            (credits.used - credits.limit).max(0.0)
        } else {
            0.0
        };
        UsageReport {
            period: standing.period.clone(),
            period_ends_at: period::end_ms(&standing.period),
            credits,
            totals: standing.totals.clone(),
            tier: tier_name,
            tier_expires_at: standing.developer.tier_expires_at,
            stripe_customer_id: standing.developer.stripe_customer_id.clone(),
            overage_credits,
            overage_cost: overage_credits * tier.overage_rate,
        }
    }

    fn unflushed_row(&mut self, developer: &DeveloperId, period: &str) -> &mut UsageRow {
        self.unflushed
            .entry((developer.clone(), period.to_string()))
            .or_insert_with(|| UsageRow::empty(developer, period))
    }

    /// Runs `then` on `developer`'s current standing, loading (and opening the period with
    /// its carryover) first when it is not in memory or the period has rolled over.
    fn with_standing<R: 'static>(
        &mut self,
        developer_id: DeveloperId,
        then: impl FnOnce(&mut Self, &DeveloperId) -> Result<R, ApiError> + 'static,
    ) -> ResponseActFuture<Self, Result<R, ApiError>> {
        let period = period::period_of(self.clock.now_ms());
        if let Some(standing) = self.standings.get_mut(&developer_id) {
            if standing.period == period {
                standing.touched = Instant::now();
                return Box::pin(fut::ready(then(self, &developer_id)));
            }
        }
        let db = self.db.clone();
        let tiers = self.tiers.clone();
        let now = self.clock.now_ms();
        Box::pin(
            async move {
                let developer = match developers::get(&db, &developer_id).await? {
                    Some(row) => row,
                    None => {
                        developers::ensure(&db, &developer_id).await?;
                        developers::get(&db, &developer_id).await?.ok_or_else(|| {
                            ApiError::Internal(format!("developer {developer_id} vanished"))
                        })?
                    }
                };
                let lapsed = developer.tier_expires_at.is_some_and(|at| at <= now);
                let tier = tiers
                    .get(if lapsed { FREE_TIER } else { &developer.tier })
                    .or_else(|| tiers.get(FREE_TIER))
                    .cloned()
                    .expect("config check guarantees a starter tier");
                let carryover = if tier.carryover_months > 0 {
                    let previous =
                        usage::get(&db, &developer_id, &period::previous(&period)).await?;
                    period::carryover(&tier, previous.as_ref())
                } else {
                    0.0
                };
                let stored = usage::open(&db, &developer_id, &period, carryover).await?;
                Ok::<_, ApiError>((developer_id, period, developer, stored))
            }
            .into_actor(self)
            .map(move |loaded, metering, _| {
                let (developer_id, period, developer, mut totals) = loaded?;
                if let Some(pending) = metering
                    .unflushed
                    .get(&(developer_id.clone(), period.clone()))
                {
                    totals.add_counts(pending);
                }
                metering.standings.insert(
                    developer_id.clone(),
                    Standing {
                        period,
                        developer,
                        totals,
                        touched: Instant::now(),
                    },
                );
                then(metering, &developer_id)
            }),
        )
    }

    fn add_usage(&mut self, developer_id: &DeveloperId, usage: Usage) {
        let credits = usage.credits(&self.pricing);
        let period = period::period_of(self.clock.now_ms());
        let add = |row: &mut UsageRow| match usage.kind() {
            Kind::Tts => row.credits_tts += credits,
            Kind::Stt => row.credits_stt += credits,
            Kind::Llm => row.credits_llm += credits,
            Kind::Rag => row.credits_rag += credits,
        };
        add(self.unflushed_row(developer_id, &period));
        if let Some(standing) = self.standings.get_mut(developer_id) {
            if standing.period == period {
                add(&mut standing.totals);
            }
        }
    }

    fn credits_left(&self, developer_id: &DeveloperId) -> Result<UsageSnapshot, ApiError> {
        let standing = self
            .standings
            .get(developer_id)
            .ok_or_else(|| ApiError::Internal("the standing was just loaded".into()))?;
        let snapshot = self.snapshot(standing);
        let tier = self.tier(&self.effective_tier(&standing.developer));
        if snapshot.remaining <= 0.0 && !tier.allows_overage() {
            return Err(ApiError::InsufficientCredits(format!(
                "the {} credits of this billing period are used up; upgrade the plan \
                 (POST /v1/billing/checkout) or wait for the next period",
                crate::billing::pricing::format_credits(snapshot.limit)
            )));
        }
        Ok(snapshot)
    }

    /// Writes the unflushed increments, then reads back the periods of every developer in
    /// memory (other nodes' counts, tier changes made elsewhere).
    fn flush(&mut self) -> ResponseActFuture<Self, ()> {
        if self.flushing {
            return Box::pin(fut::ready(()));
        }
        self.flushing = true;
        let batch: Vec<UsageRow> = self.unflushed.drain().map(|(_, row)| row).collect();
        let stale = Duration::from_secs(600);
        self.standings.retain(|_, s| s.touched.elapsed() < stale);
        let period = period::period_of(self.clock.now_ms());
        let ids: Vec<DeveloperId> = self
            .standings
            .iter()
            .filter(|(_, s)| s.period == period)
            .map(|(id, _)| id.clone())
            .collect();
        let db = self.db.clone();
        Box::pin(
            async move {
                let mut failed = Vec::new();
                for row in batch {
                    if let Err(err) = usage::add(&db, &row).await {
                        tracing::warn!("could not record usage: {err}");
                        failed.push(row);
                    }
                }
                let fresh = if ids.is_empty() || !failed.is_empty() {
                    None
                } else {
                    let rows = usage::get_many(&db, &ids, &period).await;
                    let devs = developers::get_many(&db, &ids).await;
                    rows.ok().zip(devs.ok())
                };
                (failed, period, fresh)
            }
            .into_actor(self)
            .map(|(failed, period, fresh), metering, _| {
                metering.flushing = false;
                for row in failed {
                    let (developer, row_period) = (row.developer_id.clone(), row.period.clone());
                    metering
                        .unflushed_row(&developer, &row_period)
                        .add_counts(&row);
                }
                let Some((rows, devs)) = fresh else { return };
                for dev in devs {
                    if let Some(standing) = metering.standings.get_mut(&dev.id) {
                        standing.developer = dev;
                    }
                }
                for mut row in rows {
                    let key = (row.developer_id.clone(), period.clone());
                    if let Some(pending) = metering.unflushed.get(&key) {
                        row.add_counts(pending);
                    }
                    if let Some(standing) = metering.standings.get_mut(&row.developer_id) {
                        if standing.period == period {
                            standing.totals = row;
                        }
                    }
                }
            }),
        )
    }

    /// Shares this node's rate-limit counts with the other nodes (PostgreSQL only).
    fn sync_rate_limits(&mut self, ctx: &mut Context<Self>) {
        if !self.shared || self.syncing {
            return;
        }
        let now = self.clock.now_ms();
        self.limiter.prune(now);
        let batch = self.limiter.take_pending(now);
        if batch.is_empty() {
            return;
        }
        self.syncing = true;
        let db = self.db.clone();
        let prune_before = now - 3 * self.limiter.window_ms();
        async move {
            let totals = rate_limits::add_and_read(&db, &batch).await;
            if rand::random::<u8>() == 0 {
                let _ = rate_limits::prune(&db, prune_before).await;
            }
            (batch, totals)
        }
        .into_actor(self)
        .map(|(batch, totals), metering, _| {
            metering.syncing = false;
            match totals {
                Ok(totals) => metering.limiter.apply_totals(&batch, &totals),
                Err(err) => {
                    tracing::warn!("could not share rate-limit counts: {err}");
                    metering.limiter.restore(batch);
                }
            }
        })
        .spawn(ctx);
    }

    fn rate_limit_of(&self, tier: &str) -> u32 {
        match self.tier(tier).rate_limit_requests {
            0 => self.rate.requests,
            own => own,
        }
    }
}

impl Actor for Metering {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.flush_every, |metering, ctx| {
            metering.flush().spawn(ctx);
        });
        if self.shared {
            let every = Duration::from_millis(self.rate.sync_ms.max(10));
            ctx.run_interval(every, |metering, ctx| metering.sync_rate_limits(ctx));
        }
    }
}

/// A subscription changed elsewhere (another node, the CLI, a webhook): the standing is read
/// afresh by the next request.
impl Handler<crate::cluster::Changed> for Metering {
    type Result = ();

    fn handle(&mut self, msg: crate::cluster::Changed, _: &mut Context<Self>) {
        if let crate::cluster::Change::Developer { id } = msg.0 {
            self.standings.remove(&id);
        }
    }
}

/// Admits one authenticated request of API key `key_id`: the rate limit of the key under
/// the developer's tier, then (when admitted) the request is counted.
#[derive(Message)]
#[rtype(result = "Result<Admission, ApiError>")]
pub struct Admit {
    pub developer_id: DeveloperId,
    pub key_id: String,
}

impl Handler<Admit> for Metering {
    type Result = ResponseActFuture<Self, Result<Admission, ApiError>>;

    fn handle(&mut self, msg: Admit, _: &mut Context<Self>) -> Self::Result {
        let key_id = msg.key_id;
        self.with_standing(msg.developer_id, move |metering, developer_id| {
            let standing = &metering.standings[developer_id];
            let tier = metering.effective_tier(&standing.developer);
            let limit = metering.rate_limit_of(&tier);
            let now = metering.clock.now_ms();
            let rate = metering.limiter.check(&key_id, limit, now);
            if rate.allowed {
                let period = standing.period.clone();
                metering.unflushed_row(developer_id, &period).request_count += 1;
                if let Some(standing) = metering.standings.get_mut(developer_id) {
                    standing.totals.request_count += 1;
                }
            }
            let usage = metering.snapshot(&metering.standings[developer_id]);
            Ok(Admission { usage, rate })
        })
    }
}

/// The usage headers' values as they are now (after the handler's charges), from memory.
#[derive(Message)]
#[rtype(result = "Option<UsageSnapshot>")]
pub struct CurrentUsage {
    pub developer_id: DeveloperId,
}

impl Handler<CurrentUsage> for Metering {
    type Result = Option<UsageSnapshot>;

    fn handle(&mut self, msg: CurrentUsage, _: &mut Context<Self>) -> Self::Result {
        self.standings
            .get(&msg.developer_id)
            .map(|standing| self.snapshot(standing))
    }
}

/// Charges metered work to a developer's current period.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Charge {
    pub developer_id: DeveloperId,
    pub usage: Usage,
}

impl Handler<Charge> for Metering {
    type Result = ();

    fn handle(&mut self, msg: Charge, _: &mut Context<Self>) {
        self.add_usage(&msg.developer_id, msg.usage);
    }
}

/// Answers the developer's usage, or 402 `insufficient_credits` when metered work must be
/// refused.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct CheckCredits {
    pub developer_id: DeveloperId,
}

impl Handler<CheckCredits> for Metering {
    type Result = ResponseActFuture<Self, Result<(), ApiError>>;

    fn handle(&mut self, msg: CheckCredits, _: &mut Context<Self>) -> Self::Result {
        self.with_standing(msg.developer_id, |metering, developer_id| {
            metering.credits_left(developer_id).map(|_| ())
        })
    }
}

/// The developer's whole standing in the current period.
#[derive(Message)]
#[rtype(result = "Result<UsageReport, ApiError>")]
pub struct GetUsage {
    pub developer_id: DeveloperId,
}

impl Handler<GetUsage> for Metering {
    type Result = ResponseActFuture<Self, Result<UsageReport, ApiError>>;

    fn handle(&mut self, msg: GetUsage, _: &mut Context<Self>) -> Self::Result {
        self.with_standing(msg.developer_id, |metering, developer_id| {
            Ok(metering.report(&metering.standings[developer_id]))
        })
    }
}

/// Changes a developer's subscription (tier, expiry, processor ids) in storage and here.
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct ChangeSubscription {
    pub developer_id: DeveloperId,
    pub change: SubscriptionChange,
}

impl Handler<ChangeSubscription> for Metering {
    type Result = ResponseActFuture<Self, Result<bool, ApiError>>;

    fn handle(&mut self, msg: ChangeSubscription, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(
            async move {
                let found =
                    developers::change_subscription(&db, &msg.developer_id, &msg.change).await?;
                Ok::<_, ApiError>((msg.developer_id, found))
            }
            .into_actor(self)
            .map(|result, metering, _| {
                let (developer_id, found) = result?;
                // Loaded afresh (tier, carryover) by the next request.
                metering.standings.remove(&developer_id);
                Ok(found)
            }),
        )
    }
}

/// A verified payment-processor event: recorded once by id, its change applied to the
/// developer it names (by id, or by the processor's customer id).
#[derive(Message)]
#[rtype(result = "Result<EventOutcome, ApiError>")]
pub struct ApplyBillingEvent {
    pub event_id: String,
    pub event_type: String,
    pub subject: Option<crate::billing::webhook::Subject>,
    pub change: SubscriptionChange,
}

/// What became of a webhook event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventOutcome {
    Applied { developer_id: Option<DeveloperId> },
    Replayed,
}

impl Handler<ApplyBillingEvent> for Metering {
    type Result = ResponseActFuture<Self, Result<EventOutcome, ApiError>>;

    fn handle(&mut self, msg: ApplyBillingEvent, _: &mut Context<Self>) -> Self::Result {
        use crate::billing::webhook::Subject;
        let db = self.db.clone();
        Box::pin(
            async move {
                let developer_id = match msg.subject {
                    Some(Subject::Developer(id)) => developers::get(&db, &id).await?.map(|d| d.id),
                    Some(Subject::Customer(customer)) => {
                        developers::by_stripe_customer(&db, &customer)
                            .await?
                            .map(|d| d.id)
                    }
                    None => None,
                };
                if developer_id.is_none() && !msg.change.is_empty() {
                    tracing::warn!(event = %msg.event_id, "billing event names no known developer");
                }
                let applied = developers::apply_event(
                    &db,
                    &msg.event_id,
                    &msg.event_type,
                    developer_id.as_ref(),
                    &msg.change,
                )
                .await?;
                Ok::<_, ApiError>(if applied {
                    EventOutcome::Applied { developer_id }
                } else {
                    EventOutcome::Replayed
                })
            }
            .into_actor(self)
            .map(|result, metering, _| {
                if let Ok(EventOutcome::Applied {
                    developer_id: Some(id),
                }) = &result
                {
                    metering.standings.remove(id);
                }
                result
            }),
        )
    }
}

/// A real-time session starts: admitted when the developer is under the tier's limit of
/// concurrent sessions (and, when metered, has credits). Idempotent per session id; a slot
/// held for the session ([`HoldSession`]) becomes its own.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct OpenSession {
    pub session_id: SessionId,
    pub developer_id: DeveloperId,
    pub metered: SessionMetering,
}

impl Handler<OpenSession> for Metering {
    type Result = ResponseActFuture<Self, Result<(), ApiError>>;

    fn handle(&mut self, msg: OpenSession, _: &mut Context<Self>) -> Self::Result {
        match self.sessions.get_mut(&msg.session_id) {
            Some(session) if session.held_until.is_none() => {
                // Opened again once its engines are known: which stages are charged is settled.
                session.metered = msg.metered;
                return Box::pin(fut::ready(Ok(())));
            }
            // A held slot is taken up: checked again as a new session, credits included.
            Some(_) => {
                self.sessions.remove(&msg.session_id);
            }
            None => {}
        }
        self.with_standing(msg.developer_id, move |metering, developer_id| {
            if msg.metered.any() {
                metering.credits_left(developer_id)?;
            }
            metering.take_slot(developer_id, msg.session_id, msg.metered, None)
        })
    }
}

/// Holds a concurrent-session slot for a phone call that is not connected yet, until its
/// stream connects ([`OpenSession`]), the hold is closed ([`CloseSession`], which leaves no
/// cost behind) or `for_` has passed: an inbound call whose markup is being answered (a call
/// over the tier's limit is told the lines are busy instead of being connected and then
/// dropped), or an outbound call while it rings. `check_credits` refuses the hold (402) to a
/// developer without credits, as opening a metered session would.
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct HoldSession {
    pub session_id: SessionId,
    pub developer_id: DeveloperId,
    pub for_: Duration,
    pub check_credits: bool,
}

impl Handler<HoldSession> for Metering {
    type Result = ResponseActFuture<Self, Result<(), ApiError>>;

    fn handle(&mut self, msg: HoldSession, _: &mut Context<Self>) -> Self::Result {
        let until = Instant::now() + msg.for_;
        self.with_standing(msg.developer_id, move |metering, developer_id| {
            if msg.check_credits {
                metering.credits_left(developer_id)?;
            }
            let metered = SessionMetering::NONE;
            metering.take_slot(developer_id, msg.session_id, metered, Some(until))
        })
    }
}

impl Metering {
    /// Gives `session_id` one of the developer's concurrent-session slots, refused with
    /// `session_limit` when the tier's are all taken. Holds that have lapsed are let go first.
    fn take_slot(
        &mut self,
        developer_id: &DeveloperId,
        session_id: SessionId,
        metered: SessionMetering,
        held_until: Option<Instant>,
    ) -> Result<(), ApiError> {
        let now = Instant::now();
        self.sessions
            .retain(|_, s| s.held_until.is_none_or(|until| until > now));
        let tier = self.effective_tier(&self.standings[developer_id].developer);
        let cap = self.tier(&tier).max_concurrent_sessions;
        let live = self
            .sessions
            .values()
            .filter(|s| &s.developer_id == developer_id)
            .count();
        if live >= cap as usize {
            return Err(ApiError::SessionLimit(format!(
                "{live} real-time sessions are already live; the {tier} tier allows {cap} \
                 at once. End one, or upgrade the plan"
            )));
        }
        self.sessions.insert(
            session_id,
            LiveSession {
                developer_id: developer_id.clone(),
                metered,
                held_until,
                credits: 0.0,
            },
        );
        Ok(())
    }
}

/// Charges a live session's work (per turn) to its developer.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ChargeSession {
    pub session_id: SessionId,
    pub usage: Usage,
}

impl Handler<ChargeSession> for Metering {
    type Result = ();

    fn handle(&mut self, msg: ChargeSession, _: &mut Context<Self>) {
        let Some(session) = self.sessions.get_mut(&msg.session_id) else {
            return;
        };
        if session.metered.covers(&msg.usage) {
            session.credits += msg.usage.credits(&self.pricing);
            let developer = session.developer_id.clone();
            self.add_usage(&developer, msg.usage);
        }
    }
}

/// A real-time session ended: its slot is free.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CloseSession {
    pub session_id: SessionId,
}

impl Handler<CloseSession> for Metering {
    type Result = ();

    fn handle(&mut self, msg: CloseSession, _: &mut Context<Self>) {
        let now = Instant::now();
        self.ended_costs
            .retain(|_, (_, ended)| now.duration_since(*ended) < ENDED_COST_KEPT);
        if let Some(session) = self.sessions.remove(&msg.session_id) {
            if session.held_until.is_none() {
                self.ended_costs
                    .insert(msg.session_id, (session.credits, now));
            }
        }
    }
}

/// The credits an ended session was charged (its stages on the developer's own keys are
/// not charged), read once within ten minutes of its end; 0 when nothing is known of it.
#[derive(Message)]
#[rtype(result = "f64")]
pub struct SessionCost {
    pub session_id: SessionId,
}

impl Handler<SessionCost> for Metering {
    type Result = f64;

    fn handle(&mut self, msg: SessionCost, _: &mut Context<Self>) -> f64 {
        self.ended_costs
            .remove(&msg.session_id)
            .map_or(0.0, |(credits, _)| credits)
    }
}

/// Writes every unflushed increment now (used at shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FlushUsage;

impl Handler<FlushUsage> for Metering {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: FlushUsage, _: &mut Context<Self>) -> Self::Result {
        self.flush_after_any_in_flight()
    }
}

impl Metering {
    /// A flush that first lets a periodic one in flight finish (whose batch left memory
    /// already), so what was charged up to now is in storage when it completes.
    fn flush_after_any_in_flight(&mut self) -> ResponseActFuture<Self, ()> {
        if !self.flushing {
            return self.flush();
        }
        Box::pin(
            fut::wrap_future::<_, Self>(tokio::time::sleep(Duration::from_millis(5)))
                .then(|_, metering, _| metering.flush_after_any_in_flight()),
        )
    }
}
