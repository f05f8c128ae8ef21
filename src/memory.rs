//! Giving memory back when load falls. glibc's allocator keeps the pages freed blocks sit on
//! for the next allocation: after a peak of calls a node kept what the peak took (1.2 GB after
//! 5,000 calls had ended, with no session left), so its footprint followed its highest load,
//! not its load. [`give_back_when_load_falls`] watches the node's live sessions and, once they
//! have fallen to three quarters or less of their peak since the last time, asks the allocator
//! to return its free pages to the system (`malloc_trim`), off the real-time workers.
//!
//! Nothing of a live call's audio path is involved: the trim runs on a blocking thread, at most
//! once per [`SETTLE`], and only after sessions ended.

use std::sync::Arc;
use std::time::Duration;

use crate::cluster::Drain;

/// How long after sessions ended the trim waits (more usually end together), and the least
/// time between two trims.
pub const SETTLE: Duration = Duration::from_secs(2);

/// Whether `live` sessions are few enough, after a peak of `peak`, for a trim to be worth it.
fn fell_enough(peak: usize, live: usize) -> bool {
    live < peak && live * 4 <= peak * 3
}

/// Watches `drain`'s live sessions and trims the allocator when they fall (see the module
/// docs). Runs until the node stops.
pub async fn give_back_when_load_falls(drain: Arc<Drain>) {
    let mut live = drain.watch_live();
    let mut peak = *live.borrow_and_update();
    loop {
        if live.changed().await.is_err() {
            return;
        }
        let now = *live.borrow_and_update();
        peak = peak.max(now);
        if !fell_enough(peak, now) {
            continue;
        }
        tokio::time::sleep(SETTLE).await;
        let now = *live.borrow_and_update();
        let released = tokio::task::spawn_blocking(trim).await.unwrap_or(false);
        tracing::debug!(
            peak,
            live = now,
            released,
            "sessions fell: allocator trimmed"
        );
        peak = now;
    }
}

/// Returns the allocator's free pages to the system; true when some were.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim() -> bool {
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other allocators give memory back by themselves (or not at all): nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fall_of_a_quarter_or_more_is_worth_a_trim() {
        assert!(fell_enough(1, 0));
        assert!(fell_enough(300, 0));
        assert!(fell_enough(300, 225));
        assert!(!fell_enough(300, 226));
        assert!(!fell_enough(0, 0));
        assert!(!fell_enough(5, 5));
    }
}
