//! `Metering`: per-developer usage for the current billing period (UTC calendar month),
//! answered from memory so the usage headers cost no database round trip. Increments are
//! batched and added to storage every `metering.flush_ms` with atomic upserts (so several
//! nodes can share the counters); a crash loses at most one flush interval of counts.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use actix::prelude::*;
use chrono::{Datelike, Utc};

use crate::config::{MeteringConfig, TierConfig};
use crate::error::ApiError;
use crate::store::usage::{self, UsageRow};
use crate::store::{developers, Db};

/// What the `X-Usage-*` headers report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageSnapshot {
    pub used: f64,
    pub limit: f64,
    pub remaining: f64,
}

/// A developer's standing in the current period, as loaded plus what happened since.
#[derive(Debug, Clone)]
struct Standing {
    period: String,
    credits_used: f64,
    limit: f64,
}

impl Standing {
    fn snapshot(&self) -> UsageSnapshot {
        UsageSnapshot {
            used: self.credits_used,
            limit: self.limit,
            remaining: (self.limit - self.credits_used).max(0.0),
        }
    }
}

/// The billing period containing now, e.g. `2026-11`.
pub fn current_period() -> String {
    let now = Utc::now();
    format!("{:04}-{:02}", now.year(), now.month())
}

pub struct Metering {
    db: Db,
    tiers: BTreeMap<String, TierConfig>,
    flush_every: Duration,
    standings: HashMap<String, Standing>,
    /// Increments not yet in storage, by (developer, period).
    unflushed: HashMap<(String, String), UsageRow>,
    flushing: bool,
}

impl Metering {
    pub fn new(db: Db, tiers: BTreeMap<String, TierConfig>, config: &MeteringConfig) -> Self {
        Metering {
            db,
            tiers,
            flush_every: Duration::from_millis(config.flush_ms.max(10)),
            standings: HashMap::new(),
            unflushed: HashMap::new(),
            flushing: false,
        }
    }

    fn limit_of(&self, tier: &str) -> f64 {
        self.tiers
            .get(tier)
            .or_else(|| self.tiers.get("starter"))
            .map_or(0.0, |tier| tier.monthly_credits)
    }

    fn count_request(&mut self, developer: &str, period: &str) {
        let key = (developer.to_string(), period.to_string());
        let delta = self.unflushed.entry(key).or_insert_with(|| UsageRow {
            developer_id: developer.to_string(),
            period: period.to_string(),
            ..UsageRow::default()
        });
        delta.request_count += 1;
    }

    /// Writes the unflushed increments; resolves when storage has them (or has failed, in
    /// which case they are kept for the next flush).
    fn flush(&mut self) -> ResponseActFuture<Self, ()> {
        if self.flushing || self.unflushed.is_empty() {
            return Box::pin(fut::ready(()));
        }
        self.flushing = true;
        let batch: Vec<UsageRow> = self.unflushed.drain().map(|(_, row)| row).collect();
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
                failed
            }
            .into_actor(self)
            .map(|failed, metering, _| {
                metering.flushing = false;
                for row in failed {
                    let key = (row.developer_id.clone(), row.period.clone());
                    let pending = metering.unflushed.entry(key).or_insert_with(|| UsageRow {
                        developer_id: row.developer_id.clone(),
                        period: row.period.clone(),
                        ..UsageRow::default()
                    });
                    pending.request_count += row.request_count;
                    pending.credits_tts += row.credits_tts;
                    pending.credits_stt += row.credits_stt;
                    pending.credits_llm += row.credits_llm;
                    pending.credits_rag += row.credits_rag;
                }
            }),
        )
    }
}

impl Actor for Metering {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.flush_every, |metering, ctx| {
            metering.flush().spawn(ctx);
        });
    }
}

/// Counts one authenticated request and answers the developer's usage.
#[derive(Message)]
#[rtype(result = "Result<UsageSnapshot, ApiError>")]
pub struct RecordRequest {
    pub developer_id: String,
}

impl Handler<RecordRequest> for Metering {
    type Result = ResponseActFuture<Self, Result<UsageSnapshot, ApiError>>;

    fn handle(&mut self, msg: RecordRequest, _: &mut Context<Self>) -> Self::Result {
        let period = current_period();
        self.count_request(&msg.developer_id, &period);
        if let Some(standing) = self.standings.get(&msg.developer_id) {
            if standing.period == period {
                return Box::pin(fut::ready(Ok(standing.snapshot())));
            }
        }
        let db = self.db.clone();
        Box::pin(
            async move {
                let developer = developers::get(&db, &msg.developer_id).await?;
                let stored = usage::get(&db, &msg.developer_id, &period).await?;
                Ok::<_, ApiError>((msg.developer_id, period, developer, stored))
            }
            .into_actor(self)
            .map(|result, metering, _| {
                let (developer_id, period, developer, stored) = result?;
                let tier = developer.map_or_else(|| "starter".to_string(), |d| d.tier);
                let limit = metering.limit_of(&tier);
                let unflushed = metering
                    .unflushed
                    .get(&(developer_id.clone(), period.clone()))
                    .map_or(0.0, UsageRow::credits_used);
                let standing = metering
                    .standings
                    .entry(developer_id)
                    .and_modify(|s| {
                        if s.period != period {
                            s.period.clone_from(&period);
                            s.credits_used = 0.0;
                        }
                    })
                    .or_insert_with(|| Standing {
                        period: period.clone(),
                        credits_used: stored.as_ref().map_or(0.0, UsageRow::credits_used)
                            + unflushed,
                        limit,
                    });
                Ok(standing.snapshot())
            }),
        )
    }
}

/// Writes every unflushed increment now (used at shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FlushUsage;

impl Handler<FlushUsage> for Metering {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: FlushUsage, _: &mut Context<Self>) -> Self::Result {
        self.flush()
    }
}
