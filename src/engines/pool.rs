//! The bounded worker pool every CPU-heavy inference runs on (Whisper, the local LLM,
//! embeddings, the neural voice), off the actix arbiters and the tokio runtime.
//!
//! A fixed number of OS threads take jobs from two bounded queues, one per [`Lane`]: a live
//! conversation's turn is taken before any waiting batch job (a file transcription, an ingest's
//! embeddings), and each lane has its own limit, so batch work can neither delay a caller's
//! turn behind it nor fill the queue under it. Submitting to a full lane fails at once with
//! `Overloaded` (the client sees 503, a session its apology line) instead of stalling the
//! caller: an audio loop never waits for a worker to free up.
//!
//! A job that is already running is not interrupted, but a long batch job can make way: a
//! file transcription calls [`WorkerPool::run_waiting_live`] between its 30 s windows, which
//! runs the live jobs waiting then, on its own thread, before it goes on. A live job then waits
//! for at most one window of a batch job, not for the whole file.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use crossbeam_channel::{select_biased, Receiver, Sender, TrySendError};
use switchboard_actors::engine::{EngineError, EngineErrorKind};
use tokio::sync::oneshot;

use crate::background::BackgroundPriority;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Which queue a job waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// A live conversation's turn: recognising the caller, the reply, its speech, the
    /// knowledge it looks up. Taken before every waiting batch job.
    Live,
    /// Everything else: HTTP requests, transcription jobs, ingest.
    Batch,
}

/// Cheap to clone; all clones share the threads and the queues. A handle submits to one
/// lane ([`WorkerPool::lane`]); a new pool's handle submits batch jobs.
#[derive(Clone)]
pub struct WorkerPool {
    inner: Arc<Inner>,
    lane: Lane,
}

struct Inner {
    live: Sender<Job>,
    batch: Sender<Job>,
    /// The live lane's receiving end, for batch jobs that make way ([`WorkerPool::run_waiting_live`]).
    live_jobs: Receiver<Job>,
    threads: usize,
    queue_limit: usize,
    busy: AtomicUsize,
}

/// What the pool is doing, for /health and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolStats {
    pub threads: usize,
    pub busy: usize,
    /// Jobs waiting in both lanes.
    pub queued: usize,
    /// Of those, live conversations' jobs.
    pub queued_live: usize,
    /// The limit of each lane.
    pub queue_limit: usize,
}

impl WorkerPool {
    /// Starts `threads` workers (at least one) over two lanes of at most `queue_limit`
    /// waiting jobs each, at the process's priority.
    pub fn new(threads: usize, queue_limit: usize) -> Self {
        Self::with_priority(threads, queue_limit, BackgroundPriority::same())
    }

    /// As [`new`](Self::new), the workers running at `priority` (the server runs them below
    /// the real-time workers).
    pub fn with_priority(threads: usize, queue_limit: usize, priority: BackgroundPriority) -> Self {
        let threads = threads.max(1);
        let queue_limit = queue_limit.max(1);
        let (live, live_jobs) = crossbeam_channel::bounded::<Job>(queue_limit);
        let (batch, batch_jobs) = crossbeam_channel::bounded::<Job>(queue_limit);
        let inner = Arc::new(Inner {
            live,
            batch,
            live_jobs: live_jobs.clone(),
            threads,
            queue_limit,
            busy: AtomicUsize::new(0),
        });
        for index in 0..threads {
            let (live_jobs, batch_jobs) = (live_jobs.clone(), batch_jobs.clone());
            let weak = Arc::downgrade(&inner);
            thread::Builder::new()
                .name(format!("engine-worker-{index}"))
                .spawn(move || {
                    priority.apply_to_current_thread();
                    while let Some(job) = next_job(&live_jobs, &batch_jobs) {
                        let counter = weak.upgrade();
                        if let Some(inner) = &counter {
                            inner.busy.fetch_add(1, Ordering::Relaxed);
                        }
                        run_caught(job);
                        if let Some(inner) = &counter {
                            inner.busy.fetch_sub(1, Ordering::Relaxed);
                        }
                    }
                })
                .expect("spawning an engine worker thread");
        }
        Self {
            inner,
            lane: Lane::Batch,
        }
    }

    /// A handle on the same workers that submits to `lane`.
    pub fn lane(&self, lane: Lane) -> WorkerPool {
        WorkerPool {
            inner: Arc::clone(&self.inner),
            lane,
        }
    }

    /// Queues a job in this handle's lane and returns a receiver for its result, or
    /// `Overloaded` when the lane is full. If the job panics, the receiver reports a closed
    /// channel.
    pub fn submit<T, F>(&self, job: F) -> Result<oneshot::Receiver<T>, EngineError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let boxed: Job = Box::new(move || {
            let _ = tx.send(job());
        });
        let lane = match self.lane {
            Lane::Live => &self.inner.live,
            Lane::Batch => &self.inner.batch,
        };
        match lane.try_send(boxed) {
            Ok(()) => Ok(rx),
            Err(TrySendError::Full(_)) => Err(EngineError::new(
                EngineErrorKind::Overloaded,
                format!(
                    "the inference queue is full ({} {} jobs waiting); retry shortly",
                    self.inner.queue_limit,
                    match self.lane {
                        Lane::Live => "live",
                        Lane::Batch => "batch",
                    }
                ),
            )),
            Err(TrySendError::Disconnected(_)) => Err(EngineError::unavailable(
                "the inference workers have stopped",
            )),
        }
    }

    /// Runs a fallible job on the pool and waits for it without blocking the async runtime.
    pub async fn run<T, F>(&self, job: F) -> Result<T, EngineError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, EngineError> + Send + 'static,
    {
        let rx = self.submit(job)?;
        rx.await
            .map_err(|_| EngineError::internal("the inference job failed unexpectedly"))?
    }

    /// Runs, on the calling thread, the live jobs waiting now, then returns. A batch job that
    /// takes long calls this between its steps (Whisper between windows), so a live job waits
    /// for one step rather than the whole job.
    /// Called through a live handle it does nothing: a live job never makes way for another.
    pub fn run_waiting_live(&self) {
        if self.lane == Lane::Live {
            return;
        }
        while let Ok(job) = self.inner.live_jobs.try_recv() {
            run_caught(job);
        }
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            threads: self.inner.threads,
            busy: self.inner.busy.load(Ordering::Relaxed),
            queued: self.inner.live.len() + self.inner.batch.len(),
            queued_live: self.inner.live.len(),
            queue_limit: self.inner.queue_limit,
        }
    }
}

/// Runs `job`; a panicking job must not take the worker (or the batch job that made way for
/// it) down with it.
fn run_caught(job: Job) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
        tracing::error!("an engine job panicked; the worker goes on");
    }
}

/// The next job for a worker: a waiting live job if there is one, else whichever lane has a
/// job first. `None` once the pool is gone and both lanes are empty.
fn next_job(live: &Receiver<Job>, batch: &Receiver<Job>) -> Option<Job> {
    // Both senders live in the pool's `Inner`, so a lane that reports itself closed means the
    // pool is gone: what is left in the other lane still runs.
    select_biased! {
        recv(live) -> job => job.or_else(|_| batch.recv()).ok(),
        recv(batch) -> job => job.or_else(|_| live.recv()).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[tokio::test]
    async fn runs_jobs_and_returns_results() {
        let pool = WorkerPool::new(2, 4);
        let answer = pool.run(|| Ok::<_, EngineError>(6 * 7)).await.unwrap();
        assert_eq!(answer, 42);
    }

    #[tokio::test]
    async fn a_full_queue_is_refused_not_waited_on() {
        let pool = WorkerPool::new(1, 1);
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        // Occupies the only worker until released.
        let first = pool
            .submit(move || {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            })
            .unwrap();
        started_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let _queued = pool.submit(|| ()).unwrap();
        let refused = pool.submit(|| ()).unwrap_err();
        assert_eq!(refused.kind, EngineErrorKind::Overloaded);
        assert_eq!(pool.stats().queued, 1);
        release_tx.send(()).unwrap();
        first.await.unwrap();
    }

    /// Occupies the pool's only worker until the returned sender is dropped or sent to.
    fn occupy(pool: &WorkerPool) -> (mpsc::Sender<()>, oneshot::Receiver<()>) {
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        let running = pool
            .submit(move || {
                started_tx.send(()).unwrap();
                let _ = release_rx.recv();
            })
            .unwrap();
        started_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        (release_tx, running)
    }

    #[tokio::test]
    async fn live_jobs_are_taken_before_batch_jobs_that_waited_longer() {
        let pool = WorkerPool::new(1, 8);
        let live = pool.lane(Lane::Live);
        let (release, running) = occupy(&pool);
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = |name: &'static str| {
            let order = order.clone();
            move || order.lock().unwrap().push(name)
        };
        let mut done = vec![
            pool.submit(log("batch 1")).unwrap(),
            pool.submit(log("batch 2")).unwrap(),
            live.submit(log("live 1")).unwrap(),
            pool.submit(log("batch 3")).unwrap(),
            live.submit(log("live 2")).unwrap(),
        ];
        assert_eq!(
            pool.stats(),
            PoolStats {
                threads: 1,
                busy: 1,
                queued: 5,
                queued_live: 2,
                queue_limit: 8
            }
        );
        release.send(()).unwrap();
        running.await.unwrap();
        for job in done.drain(..) {
            job.await.unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["live 1", "live 2", "batch 1", "batch 2", "batch 3"]
        );
    }

    #[tokio::test]
    async fn a_full_batch_lane_leaves_room_for_live_jobs() {
        let pool = WorkerPool::new(1, 2);
        let live = pool.lane(Lane::Live);
        let (release, running) = occupy(&pool);
        let _batch = [pool.submit(|| ()).unwrap(), pool.submit(|| ()).unwrap()];
        assert_eq!(
            pool.submit(|| ()).unwrap_err().kind,
            EngineErrorKind::Overloaded
        );
        let answer = live.submit(|| 42).unwrap();
        let _second = live.submit(|| 0).unwrap();
        // The live lane has a limit of its own.
        assert_eq!(
            live.submit(|| 0).unwrap_err().kind,
            EngineErrorKind::Overloaded
        );
        drop(release);
        running.await.unwrap();
        assert_eq!(answer.await.unwrap(), 42);
    }

    #[test]
    fn jobs_still_queued_when_the_pool_is_dropped_run() {
        let pool = WorkerPool::new(1, 4);
        let (release, running) = occupy(&pool);
        let (ran_tx, ran_rx) = mpsc::channel::<&str>();
        let (batch_ran, live_ran) = (ran_tx.clone(), ran_tx);
        let _batch = pool
            .submit(move || batch_ran.send("batch").unwrap())
            .unwrap();
        let _live = pool
            .lane(Lane::Live)
            .submit(move || live_ran.send("live").unwrap())
            .unwrap();
        drop(pool);
        drop(running);
        release.send(()).unwrap();
        let ran: Vec<_> = (0..2)
            .map(|_| ran_rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        assert_eq!(ran, ["live", "batch"]);
    }

    #[tokio::test]
    async fn a_batch_job_makes_way_for_live_jobs_between_its_steps() {
        let pool = WorkerPool::new(1, 4);
        let live = pool.lane(Lane::Live);
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (step_tx, step_rx) = mpsc::channel::<()>();
        let (queued_tx, queued_rx) = mpsc::channel::<()>();
        let batch = {
            let (order, pool) = (order.clone(), pool.clone());
            pool.clone()
                .submit(move || {
                    order.lock().unwrap().push("batch step 1");
                    step_tx.send(()).unwrap();
                    // The live jobs below are queued by now.
                    queued_rx.recv().unwrap();
                    pool.run_waiting_live();
                    order.lock().unwrap().push("batch step 2");
                })
                .unwrap()
        };
        step_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let log = |name: &'static str| {
            let order = order.clone();
            move || order.lock().unwrap().push(name)
        };
        let first = live.submit(log("live 1")).unwrap();
        // A live job panicking while it runs in a batch job's place harms neither.
        let failed = live.submit(|| panic!("model exploded")).unwrap();
        let second = live.submit(log("live 2")).unwrap();
        // A live handle never makes way: this runs nothing.
        live.run_waiting_live();
        assert_eq!(pool.stats().queued_live, 3);
        queued_tx.send(()).unwrap();
        batch.await.unwrap();
        first.await.unwrap();
        second.await.unwrap();
        assert!(failed.await.is_err());
        assert_eq!(
            *order.lock().unwrap(),
            ["batch step 1", "live 1", "live 2", "batch step 2"]
        );
    }

    #[tokio::test]
    async fn a_panicking_job_leaves_the_worker_alive() {
        let pool = WorkerPool::new(1, 2);
        let failed = pool
            .run::<(), _>(|| panic!("model exploded"))
            .await
            .unwrap_err();
        assert_eq!(failed.kind, EngineErrorKind::Internal);
        assert_eq!(pool.run(|| Ok::<_, EngineError>(1)).await.unwrap(), 1);
    }
}
