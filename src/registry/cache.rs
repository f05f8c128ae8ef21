//! The registries' LRU cache: bounded, optionally time-limited (for several nodes sharing one
//! database), and generation-checked so a slow storage read cannot re-insert an entry that was
//! invalidated while it was in flight. A cache that follows the change feed keeps entries past
//! their time limit while the feed is live (changes then arrive as notifications), and lets
//! them expire while it is down.

use std::hash::Hash;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::cluster::FeedState;

pub struct RegistryCache<K: Hash + Eq, V> {
    entries: LruCache<K, (V, Instant)>,
    ttl: Option<Duration>,
    generation: u64,
    feed: Option<FeedState>,
}

impl<K: Hash + Eq + Clone, V: Clone> RegistryCache<K, V> {
    /// `ttl` of `None` keeps entries until evicted or invalidated.
    pub fn new(capacity: usize, ttl: Option<Duration>) -> Self {
        let capacity = NonZeroUsize::new(capacity.max(1)).expect("capacity is at least 1");
        RegistryCache {
            entries: LruCache::new(capacity),
            ttl,
            generation: 0,
            feed: None,
        }
    }

    /// Keeps entries past the time limit while `feed` is live.
    pub fn following(mut self, feed: FeedState) -> Self {
        self.feed = Some(feed);
        self
    }

    pub fn get(&mut self, key: &K) -> Option<V> {
        let live = self.feed.as_ref().is_some_and(FeedState::is_live);
        let (value, stored) = self.entries.get(key)?;
        if !live && self.ttl.is_some_and(|ttl| stored.elapsed() > ttl) {
            self.entries.pop(key);
            return None;
        }
        Some(value.clone())
    }

    /// The generation to hand to [`RegistryCache::fill`] after a storage read.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Caches a value read from storage, unless something was invalidated since `generation`.
    pub fn fill(&mut self, generation: u64, key: K, value: V) {
        if generation == self.generation {
            self.entries.put(key, (value, Instant::now()));
        }
    }

    /// Caches a value this registry has just written.
    pub fn put(&mut self, key: K, value: V) {
        self.entries.put(key, (value, Instant::now()));
    }

    pub fn invalidate(&mut self, key: &K) {
        self.generation += 1;
        self.entries.pop(key);
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.generation += 1;
        self.entries.clear();
    }

    /// Drops every entry the predicate selects.
    pub fn invalidate_where(&mut self, mut select: impl FnMut(&K, &V) -> bool) {
        self.generation += 1;
        let doomed: Vec<K> = self
            .entries
            .iter()
            .filter(|(key, (value, _))| select(key, value))
            .map(|(key, _)| key.clone())
            .collect();
        for key in doomed {
            self.entries.pop(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_after_an_invalidation_is_dropped() {
        let mut cache = RegistryCache::new(8, None);
        let before = cache.generation();
        cache.invalidate(&"a");
        cache.fill(before, "a", 1);
        assert_eq!(cache.get(&"a"), None);
        cache.fill(cache.generation(), "a", 2);
        assert_eq!(cache.get(&"a"), Some(2));
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let mut cache = RegistryCache::new(8, Some(Duration::ZERO));
        cache.put("a", 1);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(cache.get(&"a"), None);
    }
}
