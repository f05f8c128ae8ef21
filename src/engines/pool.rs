//! The bounded worker pool every CPU-heavy inference runs on (Whisper, the local LLM,
//! embeddings, the neural voice), off the actix arbiters and the tokio runtime.
//!
//! A fixed number of OS threads take jobs from a bounded queue. Submitting to a full queue
//! fails at once with `Overloaded` (the client sees 503) instead of stalling the caller: an
//! audio loop never waits for a worker to free up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use crossbeam_channel::{Sender, TrySendError};
use switchboard_actors::engine::{EngineError, EngineErrorKind};
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Cheap to clone; all clones share the threads and the queue.
#[derive(Clone)]
pub struct WorkerPool {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: Sender<Job>,
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
    pub queued: usize,
    pub queue_limit: usize,
}

impl WorkerPool {
    /// Starts `threads` workers (at least one) over a queue of at most `queue_limit` waiting jobs.
    pub fn new(threads: usize, queue_limit: usize) -> Self {
        let threads = threads.max(1);
        let (jobs, receiver) = crossbeam_channel::bounded::<Job>(queue_limit.max(1));
        let inner = Arc::new(Inner {
            jobs,
            threads,
            queue_limit: queue_limit.max(1),
            busy: AtomicUsize::new(0),
        });
        for index in 0..threads {
            let receiver = receiver.clone();
            let weak = Arc::downgrade(&inner);
            thread::Builder::new()
                .name(format!("engine-worker-{index}"))
                .spawn(move || {
                    while let Ok(job) = receiver.recv() {
                        let counter = weak.upgrade();
                        if let Some(inner) = &counter {
                            inner.busy.fetch_add(1, Ordering::Relaxed);
                        }
                        // A panicking job must not take the worker down with it.
                        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                        if outcome.is_err() {
                            tracing::error!("an engine job panicked; the worker goes on");
                        }
                        if let Some(inner) = &counter {
                            inner.busy.fetch_sub(1, Ordering::Relaxed);
                        }
                    }
                })
                .expect("spawning an engine worker thread");
        }
        Self { inner }
    }

    /// Queues a job and returns a receiver for its result, or `Overloaded` when the queue is
    /// full. If the job panics, the receiver reports a closed channel.
    pub fn submit<T, F>(&self, job: F) -> Result<oneshot::Receiver<T>, EngineError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let boxed: Job = Box::new(move || {
            let _ = tx.send(job());
        });
        match self.inner.jobs.try_send(boxed) {
            Ok(()) => Ok(rx),
            Err(TrySendError::Full(_)) => Err(EngineError::new(
                EngineErrorKind::Overloaded,
                format!(
                    "the inference queue is full ({} jobs waiting); retry shortly",
                    self.inner.queue_limit
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

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            threads: self.inner.threads,
            busy: self.inner.busy.load(Ordering::Relaxed),
            queued: self.inner.jobs.len(),
            queue_limit: self.inner.queue_limit,
        }
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
