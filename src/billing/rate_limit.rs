//! The per-API-key rate limiter: a sliding window. The count of the current fixed window plus
//! the previous window's count weighted by how much of it still overlaps the sliding window
//! must stay within the limit. Counts live in memory; on PostgreSQL each node also adds its
//! counts to shared rows every `rate_limit.sync_ms` and reads the other nodes' back, so the
//! nodes together overshoot a limit by at most what they admit within one sync interval.

use std::collections::HashMap;

/// The verdict on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in the window after this one.
    pub remaining: u32,
    /// When refused: whole seconds until a request would be admitted (at least 1).
    pub retry_after_seconds: u64,
}

#[derive(Debug, Clone, Default)]
struct KeyWindow {
    start_ms: i64,
    /// Requests in the window `start_ms` (this node's, plus the others' as last synced).
    count: i64,
    /// Requests in the window before it.
    previous: i64,
}

/// Sliding-window counters for every key seen recently.
#[derive(Debug)]
pub struct RateLimiter {
    window_ms: i64,
    keys: HashMap<String, KeyWindow>,
    /// Shared mode: admitted requests not yet added to the shared rows, by (key, window).
    pending: HashMap<(String, i64), i64>,
    shared: bool,
}

impl RateLimiter {
    pub fn new(window_seconds: u64, shared: bool) -> RateLimiter {
        RateLimiter {
            window_ms: (window_seconds.max(1) * 1000) as i64,
            keys: HashMap::new(),
            pending: HashMap::new(),
            shared,
        }
    }

    fn window_of(&self, now_ms: i64) -> i64 {
        now_ms - now_ms.rem_euclid(self.window_ms)
    }

    fn roll(&mut self, key: &str, now_ms: i64) -> &mut KeyWindow {
        let start = self.window_of(now_ms);
        let window_ms = self.window_ms;
        let state = self.keys.entry(key.to_string()).or_insert(KeyWindow {
            start_ms: start,
            count: 0,
            previous: 0,
        });
        if state.start_ms != start {
            state.previous = if state.start_ms == start - window_ms {
                state.count
            } else {
                0
            };
            state.count = 0;
            state.start_ms = start;
        }
        state
    }

    /// Decides on one request of `key` under `limit`, counting it when admitted.
    pub fn check(&mut self, key: &str, limit: u32, now_ms: i64) -> RateDecision {
        let window_ms = self.window_ms;
        let state = self.roll(key, now_ms);
        let elapsed = (now_ms - state.start_ms) as f64;
        let window = window_ms as f64;
        let previous = state.previous as f64;
        let current = state.count as f64;
        let weight = 1.0 - elapsed / window;
        let estimate = previous * weight + current;
        let limit_f = f64::from(limit);
        if estimate + 1.0 <= limit_f + 1e-9 {
            state.count += 1;
            let start = state.start_ms;
            if self.shared {
                *self.pending.entry((key.to_string(), start)).or_insert(0) += 1;
            }
            let remaining = (limit_f - estimate - 1.0).floor().max(0.0) as u32;
            return RateDecision {
                allowed: true,
                limit,
                remaining,
                retry_after_seconds: 0,
            };
        }
        // When would `estimate + 1 <= limit` hold again?
        let wait_ms = if current + 1.0 <= limit_f && previous > 0.0 {
            // Within this window, once enough of the previous one has slid out.
            let needed_weight = (limit_f - current - 1.0) / previous;
            window * (1.0 - needed_weight) - elapsed
        } else if current > 0.0 {
            // In the next window, once enough of this one has slid out.
            let into_next = window * (1.0 - (limit_f - 1.0).max(0.0) / current).max(0.0);
            window - elapsed + into_next
        } else {
            window - elapsed
        };
        RateDecision {
            allowed: false,
            limit,
            remaining: 0,
            retry_after_seconds: ((wait_ms / 1000.0).ceil() as u64).max(1),
        }
    }

    /// Shared mode: the counts to add to the shared rows (this node's new admissions, and
    /// a zero for every other recently used key so its total is read back).
    pub fn take_pending(&mut self, now_ms: i64) -> Vec<(String, i64, i64)> {
        let start = self.window_of(now_ms);
        let mut batch: Vec<(String, i64, i64)> = self
            .pending
            .drain()
            .map(|((key, window), delta)| (key, window, delta))
            .collect();
        for (key, state) in &self.keys {
            if state.start_ms == start && !batch.iter().any(|(k, w, _)| k == key && *w == start) {
                batch.push((key.clone(), start, 0));
            }
        }
        batch
    }

    /// Shared mode: takes in the totals all nodes admitted, as read back after adding
    /// `batch`. Requests admitted here since the batch was taken are kept on top.
    pub fn apply_totals(&mut self, batch: &[(String, i64, i64)], totals: &[i64]) {
        for ((key, window, _), total) in batch.iter().zip(totals) {
            let since = self
                .pending
                .get(&(key.clone(), *window))
                .copied()
                .unwrap_or(0);
            let Some(state) = self.keys.get_mut(key) else {
                continue;
            };
            if state.start_ms == *window {
                state.count = state.count.max(total + since);
            } else if state.start_ms == *window + self.window_ms {
                state.previous = state.previous.max(*total);
            }
        }
    }

    /// Puts back a batch that could not be shared, to try again next time.
    pub fn restore(&mut self, batch: Vec<(String, i64, i64)>) {
        for (key, window, delta) in batch {
            if delta > 0 {
                *self.pending.entry((key, window)).or_insert(0) += delta;
            }
        }
    }

    /// Forgets keys not used for two windows.
    pub fn prune(&mut self, now_ms: i64) {
        let oldest = self.window_of(now_ms) - self.window_ms;
        self.keys.retain(|_, state| state.start_ms >= oldest);
    }

    pub fn window_ms(&self) -> i64 {
        self.window_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A time that starts a window of both 10 s and 60 s.
    const WINDOW_ALIGNED: i64 = 1_800_000_000_000;

    #[test]
    fn the_limit_holds_within_a_window_and_remaining_counts_down() {
        let mut limiter = RateLimiter::new(60, false);
        let t = WINDOW_ALIGNED;
        let remaining: Vec<u32> = (0..5)
            .map(|_| limiter.check("k", 5, t + 1000))
            .map(|d| {
                assert!(d.allowed);
                d.remaining
            })
            .collect();
        assert_eq!(remaining, vec![4, 3, 2, 1, 0]);
        let refused = limiter.check("k", 5, t + 1000);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        // 59 s left in this window, then 1/5 of the next before 4 of 5 remain in the slide.
        assert_eq!(refused.retry_after_seconds, 59 + 12);
        // Another key has its own allowance.
        assert!(limiter.check("other", 5, t + 1000).allowed);
    }

    #[test]
    fn the_previous_window_slides_out() {
        let mut limiter = RateLimiter::new(10, false);
        let t = WINDOW_ALIGNED;
        for _ in 0..4 {
            assert!(limiter.check("k", 4, t).allowed);
        }
        // Half-way through the next window, half of the previous four still count.
        let mid = limiter.check("k", 4, t + 15_000);
        assert!(mid.allowed);
        assert_eq!(mid.remaining, 1);
        assert!(limiter.check("k", 4, t + 15_000).allowed);
        let refused = limiter.check("k", 4, t + 15_000);
        assert!(!refused.allowed);
        assert!(refused.retry_after_seconds >= 1);
        // A full window later, everything has slid out.
        assert!(limiter.check("k", 4, t + 40_000).allowed);
    }

    #[test]
    fn shared_totals_from_other_nodes_count() {
        let mut limiter = RateLimiter::new(60, true);
        let t = WINDOW_ALIGNED;
        assert!(limiter.check("k", 3, t).allowed);
        let batch = limiter.take_pending(t);
        assert_eq!(batch, vec![("k".to_string(), t, 1)]);
        // Another node admitted two more meanwhile.
        limiter.apply_totals(&batch, &[3]);
        assert!(!limiter.check("k", 3, t).allowed);
    }
}
