//! `JobRegistry`: asynchronous transcription jobs. Accepts a job (refusing it when too many
//! are pending), persists it, runs it in the background with bounded concurrency (each job
//! still queues for the inference workers), and records its outcome. Uploaded audio is kept
//! in the data directory until its job ends, so a job interrupted by a restart runs again
//! when this server comes back instead of being lost.

use crate::ids::{DeveloperId, JobId, NodeId};
use crate::registry::Supervised;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use switchboard_actors::engine::{SttMode, TranscribeOptions};
use tokio::sync::Semaphore;

use super::meter;
use crate::billing::Usage;
use crate::config::JobsConfig;
use crate::engines::Engines;
use crate::error::ApiError;
use crate::fetch::Fetcher;
use crate::registry::metering::Metering;
use crate::speech::transcription::{transcribe_file, TranscriptionBody, TranscriptionRequest};
use crate::store::jobs::{self, JobRow, JobStatus};
use crate::store::{Db, StoreError};
use crate::time::now_ms;

/// What a job transcribes and how; stored as JSON with the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobRequest {
    /// Fetched when the job runs; absent for uploads.
    pub audio_url: Option<String>,
    /// The uploaded file's extension, a hint for decoding.
    pub extension: Option<String>,
    pub language: Option<String>,
    pub fast: bool,
    pub diarize: bool,
    pub words: bool,
}

impl JobRequest {
    pub fn transcription(&self) -> TranscriptionRequest {
        TranscriptionRequest {
            options: TranscribeOptions {
                language: self.language.clone(),
                mode: if self.fast {
                    SttMode::Fast
                } else {
                    SttMode::Accurate
                },
                word_timestamps: self.words,
                ..TranscribeOptions::default()
            },
            diarize: self.diarize,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{0} transcription jobs are already pending; retry when some have finished")]
    Full(usize),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the upload could not be stored: {0}")]
    Io(String),
}

impl From<JobError> for ApiError {
    fn from(err: JobError) -> ApiError {
        match err {
            JobError::Full(_) => ApiError::Overloaded(err.to_string()),
            JobError::Store(e) => e.into(),
            JobError::Io(e) => ApiError::Internal(e),
        }
    }
}

pub struct JobRegistry {
    db: Db,
    engines: Engines,
    fetcher: Fetcher,
    node_id: NodeId,
    upload_dir: PathBuf,
    max_pending: usize,
    timeout: Duration,
    max_runs: i32,
    pending: Arc<AtomicUsize>,
    running: Arc<Semaphore>,
    /// Completed transcriptions are charged when they finish.
    metering: Supervised<Metering>,
}

impl JobRegistry {
    pub fn new(
        db: Db,
        engines: Engines,
        fetcher: Fetcher,
        node_id: NodeId,
        data_dir: &Path,
        config: &JobsConfig,
        metering: Supervised<Metering>,
    ) -> Self {
        Self {
            metering,
            db,
            engines,
            fetcher,
            node_id,
            upload_dir: data_dir.join("jobs"),
            max_pending: config.max_pending.max(1),
            timeout: Duration::from_secs(config.timeout_seconds.max(1)),
            max_runs: config.max_runs.max(1),
            pending: Arc::new(AtomicUsize::new(0)),
            running: Arc::new(Semaphore::new(config.concurrency.max(1))),
        }
    }

    /// Runs a persisted job in the background; the pending count drops when it ends.
    fn spawn(&self, row: JobRow) {
        let runner = JobRunner {
            db: self.db.clone(),
            engines: self.engines.clone(),
            fetcher: self.fetcher.clone(),
            pending: self.pending.clone(),
            running: self.running.clone(),
            metering: self.metering.clone(),
            timeout: self.timeout,
        };
        actix::spawn(runner.run(row));
    }
}

impl Actor for JobRegistry {
    type Context = Context<Self>;

    /// Resumes the jobs this server left unfinished when it last stopped.
    fn started(&mut self, ctx: &mut Context<Self>) {
        let db = self.db.clone();
        let node = self.node_id.clone();
        let resume = async move { jobs::unfinished(&db, &node).await };
        ctx.spawn(
            resume
                .into_actor(self)
                .map(|result, registry, _| match result {
                    Ok(rows) => {
                        if !rows.is_empty() {
                            tracing::info!("resuming {} unfinished transcription jobs", rows.len());
                        }
                        for row in rows {
                            if row.runs >= registry.max_runs {
                                actix::spawn(fail_cut_too_often(registry.db.clone(), row));
                                continue;
                            }
                            registry.pending.fetch_add(1, Ordering::SeqCst);
                            registry.spawn(row);
                        }
                    }
                    Err(e) => tracing::error!("could not load unfinished transcription jobs: {e}"),
                }),
        );
    }
}

/// Accepts a job. `upload` is the audio file for upload jobs.
#[derive(Message)]
#[rtype(result = "Result<JobRow, JobError>")]
pub struct SubmitJob {
    pub developer_id: DeveloperId,
    pub request: JobRequest,
    pub upload: Option<Vec<u8>>,
}

impl Handler<SubmitJob> for JobRegistry {
    type Result = ResponseFuture<Result<JobRow, JobError>>;

    fn handle(&mut self, msg: SubmitJob, ctx: &mut Context<Self>) -> Self::Result {
        let pending = self.pending.fetch_add(1, Ordering::SeqCst);
        if pending >= self.max_pending {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            let max = self.max_pending;
            return Box::pin(async move { Err(JobError::Full(max)) });
        }
        let id = JobId::new();
        let db = self.db.clone();
        let counter = self.pending.clone();
        let audio_path = msg
            .upload
            .as_ref()
            .map(|_| self.upload_dir.join(format!("{id}.audio")));
        let row = JobRow {
            id,
            developer_id: msg.developer_id,
            node_id: self.node_id.clone(),
            status: JobStatus::Processing,
            request: serde_json::to_string(&msg.request).unwrap_or_default(),
            audio_path: audio_path
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            result: None,
            error: None,
            created_at: now_ms(),
            completed_at: None,
            runs: 0,
        };
        let me = ctx.address();
        Box::pin(async move {
            let accepted = async {
                if let (Some(path), Some(bytes)) = (&audio_path, msg.upload) {
                    write_upload(path, bytes).await?;
                }
                jobs::insert(&db, &row).await?;
                Ok::<_, JobError>(())
            }
            .await;
            match accepted {
                Ok(()) => {
                    me.do_send(RunJob(row.clone()));
                    Ok(row)
                }
                Err(e) => {
                    counter.fetch_sub(1, Ordering::SeqCst);
                    if let Some(path) = &audio_path {
                        let _ = tokio::fs::remove_file(path).await;
                    }
                    Err(e)
                }
            }
        })
    }
}

/// Starts a job that has been persisted.
#[derive(Message)]
#[rtype(result = "()")]
struct RunJob(JobRow);

impl Handler<RunJob> for JobRegistry {
    type Result = ();

    fn handle(&mut self, msg: RunJob, _: &mut Context<Self>) {
        self.spawn(msg.0);
    }
}

/// Reads a developer's job.
#[derive(Message)]
#[rtype(result = "Result<Option<JobRow>, StoreError>")]
pub struct GetJob {
    pub developer_id: DeveloperId,
    pub id: JobId,
}

impl Handler<GetJob> for JobRegistry {
    type Result = ResponseFuture<Result<Option<JobRow>, StoreError>>;

    fn handle(&mut self, msg: GetJob, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move { jobs::get(&db, &msg.developer_id, &msg.id).await })
    }
}

async fn write_upload(path: &Path, bytes: Vec<u8>) -> Result<(), JobError> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| JobError::Io(format!("{}: {e}", dir.display())))?;
    }
    tokio::fs::write(path, bytes)
        .await
        .map_err(|e| JobError::Io(format!("{}: {e}", path.display())))
}

/// Ends a job that was running each of the times its node stopped (it may be what stops
/// the node) instead of running it again.
async fn fail_cut_too_often(db: Db, row: JobRow) {
    let reason = format!(
        "the job was running when the server stopped, {} times; it is not run again",
        row.runs
    );
    tracing::warn!(job = %row.id, "transcription job failed: {reason}");
    match jobs::finish(&db, &row.id, Err(reason), now_ms()).await {
        Ok(_) => {
            if let Some(path) = &row.audio_path {
                let _ = tokio::fs::remove_file(path).await;
            }
        }
        Err(e) => tracing::error!(job = %row.id, "could not record the job's outcome: {e}"),
    }
}

/// One job's run, independent of the actor so a long transcription never holds it.
struct JobRunner {
    db: Db,
    engines: Engines,
    fetcher: Fetcher,
    pending: Arc<AtomicUsize>,
    running: Arc<Semaphore>,
    metering: Supervised<Metering>,
    /// The time bound of one run (`jobs.timeout_seconds`).
    timeout: Duration,
}

impl JobRunner {
    async fn run(self, row: JobRow) {
        let outcome = match self.running.clone().acquire_owned().await {
            Ok(_permit) => self.run_counted(&row).await,
            Err(_) => Err("the server is shutting down".to_string()),
        };
        let failed = outcome.as_ref().err().cloned();
        match jobs::finish(&self.db, &row.id, outcome, now_ms()).await {
            Ok(_) => {
                if let Some(reason) = failed {
                    tracing::info!(job = %row.id, "transcription job failed: {reason}");
                }
                if let Some(path) = &row.audio_path {
                    let _ = tokio::fs::remove_file(path).await;
                }
            }
            // The audio stays so the job can run again after a restart.
            Err(e) => tracing::error!(job = %row.id, "could not record the job's outcome: {e}"),
        }
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }

    /// Counts the run, then transcribes within the time bound. Past it the job's work is
    /// dropped: the recogniser stops at its next 30 s window.
    async fn run_counted(&self, row: &JobRow) -> Result<String, String> {
        jobs::start_run(&self.db, &row.id)
            .await
            .map_err(|e| format!("the job could not be started: {e}"))?;
        match tokio::time::timeout(self.timeout, self.transcribe(row)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "the transcription took longer than the {} s limit for one job",
                self.timeout.as_secs()
            )),
        }
    }

    /// The result JSON, or the reason the job failed as a client may read it.
    async fn transcribe(&self, row: &JobRow) -> Result<String, String> {
        let request: JobRequest = serde_json::from_str(&row.request)
            .map_err(|e| format!("the stored job request is unreadable: {e}"))?;
        let (audio, extension) = match (&request.audio_url, &row.audio_path) {
            (Some(url), _) => {
                let fetched = self
                    .fetcher
                    .fetch(url)
                    .await
                    .map_err(|e| format!("audioUrl could not be fetched: {e}"))?;
                let extension = extension_of(fetched.url.path());
                (fetched.bytes, extension)
            }
            (None, Some(path)) => {
                let bytes = tokio::fs::read(path).await.map_err(|_| {
                    "the uploaded audio is no longer available (it was lost in a restart)"
                        .to_string()
                })?;
                (bytes, request.extension.clone())
            }
            (None, None) => return Err("the job has no audio".to_string()),
        };
        let transcript = transcribe_file(
            self.engines.batch.stt.clone(),
            audio,
            extension,
            request.transcription(),
        )
        .await
        .map_err(|e| e.to_string())?;
        meter::charge(
            &self.metering,
            &row.developer_id,
            Usage::Stt {
                seconds: f64::from(transcript.duration),
            },
            true,
        );
        serde_json::to_string(&TranscriptionBody::new(transcript, request.words))
            .map_err(|e| format!("the result could not be stored: {e}"))
    }
}

/// The lower-case extension of a file name or URL path, if it has a short one.
pub fn extension_of(name: &str) -> Option<String> {
    let file = name.rsplit('/').next()?;
    let (_, extension) = file.rsplit_once('.')?;
    (1..=5)
        .contains(&extension.len())
        .then(|| extension.to_ascii_lowercase())
}
