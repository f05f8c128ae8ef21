//! Counting what a session keeps alive. Every actor of a session (the session itself and each
//! child), and every task it runs on its own, holds a [`LiveGuard`] for as long as it exists,
//! so a transport, a test or a load tester can check through [`LiveCounter`] that nothing is
//! left running after the call ends.
//! Every guard also counts in one process-wide total ([`live_actors_in_process`]), which a
//! server exports so a leak across many sessions shows without holding any session's counter.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Session actors alive in this process, over every session.
static IN_PROCESS: AtomicUsize = AtomicUsize::new(0);

/// Session actors (sessions and their children) alive now in this process.
pub fn live_actors_in_process() -> usize {
    IN_PROCESS.load(Ordering::Relaxed)
}

/// Number of a session's actors still alive.
#[derive(Debug, Clone, Default)]
pub struct LiveCounter(Arc<AtomicUsize>);

impl LiveCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Actors alive now.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Counts one more live actor until the guard is dropped.
    pub fn guard(&self) -> LiveGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        IN_PROCESS.fetch_add(1, Ordering::Relaxed);
        LiveGuard(self.0.clone())
    }
}

/// Held by a live actor; dropping it (with the actor) decrements the count.
#[derive(Debug)]
pub struct LiveGuard(Arc<AtomicUsize>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
        IN_PROCESS.fetch_sub(1, Ordering::Relaxed);
    }
}
