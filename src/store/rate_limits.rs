//! Queries on the shared rate-limit windows: per API key and window start, the requests all
//! nodes admitted. Nodes add their counts with atomic increments and read the totals back.

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;

use super::schema::rate_limit_windows;
use super::{Db, StoreResult};
use crate::{db_run, db_tx};

/// Adds `delta` requests to each (key, window start) and answers the totals, in order.
pub async fn add_and_read(db: &Db, counts: &[(String, i64, i64)]) -> StoreResult<Vec<i64>> {
    use rate_limit_windows::*;
    db_tx!(db, |conn| {
        let mut totals = Vec::with_capacity(counts.len());
        for (key, start, delta) in counts {
            let total = diesel::insert_into(table)
                .values((key_id.eq(key), window_start.eq(start), count.eq(delta)))
                .on_conflict((key_id, window_start))
                .do_update()
                .set(count.eq(count + excluded(count)))
                .returning(count)
                .get_result::<i64>(conn)
                .await?;
            totals.push(total);
        }
        Ok(totals)
    })
}

/// Forgets windows that started before `before` (milliseconds).
pub async fn prune(db: &Db, before: i64) -> StoreResult<usize> {
    db_run!(db, |conn| {
        Ok(diesel::delete(
            rate_limit_windows::table.filter(rate_limit_windows::window_start.lt(before)),
        )
        .execute(conn)
        .await?)
    })
}
