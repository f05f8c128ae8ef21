//! Queries on asynchronous transcription jobs.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::transcription_jobs;
pub use super::status::JobStatus;
use super::{Db, StoreResult};
use crate::db_run;
use crate::ids::{DeveloperId, JobId, NodeId};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = transcription_jobs)]
pub struct JobRow {
    pub id: JobId,
    pub developer_id: DeveloperId,
    pub node_id: NodeId,
    pub status: JobStatus,
    /// JSON of the job's request (options and source).
    pub request: String,
    pub audio_path: Option<String>,
    /// JSON of the transcription result, once completed.
    pub result: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub completed_at: Option<i64>,
    /// How many times the job has started running (a restart runs an unfinished job again).
    pub runs: i32,
}

pub async fn insert(db: &Db, row: &JobRow) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::insert_into(transcription_jobs::table)
            .values(row)
            .execute(conn)
            .await?;
        Ok(())
    })
}

store_fns! {
    table = transcription_jobs, row = JobRow;

    /// A developer's job; another developer's id is not found.
    get pub fn get(developer: &DeveloperId, id: &JobId) where id.eq(id), developer_id.eq(developer);

    /// This node's jobs still processing, oldest first: at start-up, those its previous run
    /// left unfinished.
    all pub fn unfinished(node: &NodeId) where node_id.eq(node), status.eq(JobStatus::Processing);
}

/// Counts one more run of a job about to start; answers the runs so far, this one included.
pub async fn start_run(db: &Db, id: &JobId) -> StoreResult<i32> {
    use transcription_jobs as t;
    db_run!(db, |conn| {
        diesel::update(t::table.filter(t::id.eq(id)))
            .set(t::runs.eq(t::runs + 1))
            .execute(conn)
            .await?;
        Ok(t::table
            .filter(t::id.eq(id))
            .select(t::runs)
            .first(conn)
            .await?)
    })
}

/// Records the end of a job: `completed` with its result JSON or `failed` with a reason. Only
/// a job still processing changes, so a job finishes once.
pub async fn finish(
    db: &Db,
    id: &JobId,
    outcome: Result<String, String>,
    at: i64,
) -> StoreResult<bool> {
    use transcription_jobs as t;
    let (status, result, error) = match outcome {
        Ok(result) => (JobStatus::Completed, Some(result), None),
        Err(reason) => (JobStatus::Failed, None, Some(reason)),
    };
    db_run!(db, |conn| {
        let changed = diesel::update(
            t::table
                .filter(t::id.eq(id))
                .filter(t::status.eq(JobStatus::Processing)),
        )
        .set((
            t::status.eq(status),
            t::result.eq(result.clone()),
            t::error.eq(error.clone()),
            t::completed_at.eq(Some(at)),
        ))
        .execute(conn)
        .await?;
        Ok(changed == 1)
    })
}
