//! Queries on per-developer usage counters, one row per billing period.

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::usage_counters;
use super::{Db, StoreResult};
use crate::db_run;
use crate::ids::DeveloperId;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = usage_counters)]
pub struct UsageRow {
    pub developer_id: DeveloperId,
    pub period: String,
    pub request_count: i64,
    pub credits_tts: f64,
    pub credits_stt: f64,
    pub credits_llm: f64,
    pub credits_rag: f64,
    /// Unused credits of earlier periods usable in this one (fixed when the period opens).
    pub carryover: f64,
}

impl UsageRow {
    /// An empty row of `developer`'s `period`.
    pub fn empty(developer: &DeveloperId, period: &str) -> UsageRow {
        UsageRow {
            developer_id: developer.clone(),
            period: period.to_string(),
            request_count: 0,
            credits_tts: 0.0,
            credits_stt: 0.0,
            credits_llm: 0.0,
            credits_rag: 0.0,
            carryover: 0.0,
        }
    }

    pub fn credits_used(&self) -> f64 {
        self.credits_tts + self.credits_stt + self.credits_llm + self.credits_rag
    }

    /// Adds another row's counts (not its carryover) to this one.
    pub fn add_counts(&mut self, other: &UsageRow) {
        self.request_count += other.request_count;
        self.credits_tts += other.credits_tts;
        self.credits_stt += other.credits_stt;
        self.credits_llm += other.credits_llm;
        self.credits_rag += other.credits_rag;
    }
}

/// Opens `developer`'s `period` with `carryover` unless it is open already (another node or
/// an earlier start opened it); answers the stored row either way.
pub async fn open(
    db: &Db,
    developer: &DeveloperId,
    period: &str,
    carryover_credits: f64,
) -> StoreResult<UsageRow> {
    let mut row = UsageRow::empty(developer, period);
    row.carryover = carryover_credits;
    db_run!(db, |conn| {
        diesel::insert_into(usage_counters::table)
            .values(&row)
            .on_conflict((usage_counters::developer_id, usage_counters::period))
            .do_nothing()
            .execute(conn)
            .await?;
        Ok(usage_counters::table
            .filter(usage_counters::developer_id.eq(developer))
            .filter(usage_counters::period.eq(period))
            .select(UsageRow::as_select())
            .first(conn)
            .await?)
    })
}

/// The rows of `period` for several developers at once.
pub async fn get_many(
    db: &Db,
    developers: &[DeveloperId],
    period: &str,
) -> StoreResult<Vec<UsageRow>> {
    db_run!(db, |conn| {
        Ok(usage_counters::table
            .filter(usage_counters::developer_id.eq_any(developers))
            .filter(usage_counters::period.eq(period))
            .select(UsageRow::as_select())
            .load(conn)
            .await?)
    })
}

store_fns! {
    table = usage_counters, row = UsageRow;

    get pub fn get(developer: &DeveloperId, period: &str)
        where developer_id.eq(developer), period.eq(period);
}

/// Adds the deltas in `delta` to the stored counters (atomic increments, so several nodes
/// can add to the same row).
pub async fn add(db: &Db, delta: &UsageRow) -> StoreResult<()> {
    use usage_counters::*;
    db_run!(db, |conn| {
        diesel::insert_into(table)
            .values(delta)
            .on_conflict((developer_id, period))
            .do_update()
            .set((
                request_count.eq(request_count + excluded(request_count)),
                credits_tts.eq(credits_tts + excluded(credits_tts)),
                credits_stt.eq(credits_stt + excluded(credits_stt)),
                credits_llm.eq(credits_llm + excluded(credits_llm)),
                credits_rag.eq(credits_rag + excluded(credits_rag)),
            ))
            .execute(conn)
            .await?;
        Ok(())
    })
}
