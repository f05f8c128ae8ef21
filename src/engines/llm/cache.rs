//! The prompt cache: KV caches of recent conversations, reused by longest common token prefix.
//!
//! A voice call sends the whole conversation every turn, and each prompt starts with the
//! previous one (system prompt, earlier turns, the last answer). Feeding only the tokens after
//! the longest common prefix cuts the time to first token from a full prefill to the new turn.
//!
//! Sharing: the model weights are shared by every request; KV caches are not. The cache holds
//! up to `capacity` entries (token sequence plus its KV cache), least recently used first out.
//! A request *checks out* the entry sharing the longest prefix with its prompt (or a recycled
//! or fresh one), owns it while it generates (so concurrent requests never contend on a lock
//! during inference and never corrupt each other's state), and checks it back in with the
//! tokens it fed. Two concurrent requests of the same conversation simply mean the second one
//! finds no entry and prefills in full. A small LRU suits this engine better than explicit
//! per-conversation handles: callers need no new API and a forgotten handle cannot leak.

use std::sync::Mutex;

use super::model::KvCache;

struct Entry {
    tokens: Vec<u32>,
    kv: KvCache,
}

/// A KV cache taken out of the prompt cache for one generation.
pub struct CheckedOut {
    /// Tokens whose state `kv` holds: a prefix of the prompt, never all of it (the last prompt
    /// token is always fed again to get the logits of the first new token).
    pub tokens: Vec<u32>,
    pub kv: KvCache,
}

/// LRU of KV caches keyed by their token sequences.
pub struct PromptCache {
    entries: Mutex<Vec<Entry>>,
    capacity: usize,
}

/// Length of the common prefix of two token sequences.
pub fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl PromptCache {
    /// A cache of at most `capacity` conversations (0 disables reuse).
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(Vec::with_capacity(capacity)),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        // The entries stay consistent even if a holder panicked: recover them.
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes the entry sharing the longest prefix with `prompt`, rewound to that prefix. With
    /// no shared prefix, recycles the least recently used entry's buffers when the cache is
    /// full, else starts from `fresh`.
    pub fn checkout(&self, prompt: &[u32], fresh: impl FnOnce() -> KvCache) -> CheckedOut {
        let mut entries = self.lock();
        let best = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, common_prefix(&e.tokens, prompt)))
            .max_by_key(|&(_, shared)| shared);
        let taken = match best {
            Some((index, shared)) if shared > 0 => Some((entries.remove(index), shared)),
            _ if self.capacity > 0 && entries.len() >= self.capacity => {
                Some((entries.remove(0), 0))
            }
            _ => None,
        };
        drop(entries);
        match taken {
            Some((mut entry, shared)) => {
                let keep = shared.min(prompt.len().saturating_sub(1));
                entry.tokens.truncate(keep);
                entry.kv.truncate(keep);
                CheckedOut {
                    tokens: entry.tokens,
                    kv: entry.kv,
                }
            }
            None => CheckedOut {
                tokens: Vec::new(),
                kv: fresh(),
            },
        }
    }

    /// Returns a KV cache holding the state of `tokens`, as the most recently used entry.
    /// Entries it extends (their tokens are a prefix of `tokens`) are dropped as redundant.
    pub fn checkin(&self, tokens: Vec<u32>, kv: KvCache) {
        if self.capacity == 0 || tokens.is_empty() || tokens.len() != kv.len() {
            return;
        }
        let mut entries = self.lock();
        entries.retain(|e| common_prefix(&e.tokens, &tokens) < e.tokens.len());
        entries.push(Entry { tokens, kv });
        while entries.len() > self.capacity {
            entries.remove(0);
        }
    }

    /// Conversations held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of KV buffers held.
    pub fn memory_bytes(&self) -> usize {
        self.lock().iter().map(|e| e.kv.memory_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A KV cache claiming to hold `len` positions (no buffers; the cache only uses lengths).
    fn kv(len: usize) -> KvCache {
        let mut kv = KvCache::new(0);
        kv.set_len_for_tests(len);
        kv
    }

    #[test]
    fn the_longest_shared_prefix_wins_and_is_rewound() {
        let cache = PromptCache::new(4);
        cache.checkin(vec![1, 2, 3, 4], kv(4));
        cache.checkin(vec![1, 2, 9], kv(3));
        let out = cache.checkout(&[1, 2, 3, 4, 5, 6], || kv(0));
        assert_eq!(out.tokens, vec![1, 2, 3, 4]);
        assert_eq!(out.kv.len(), 4);
        // The other entry is still there; the taken one is out until checked in again.
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_prompt_equal_to_the_cache_still_feeds_its_last_token() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1, 2, 3], kv(3));
        let out = cache.checkout(&[1, 2, 3], || kv(0));
        assert_eq!(out.tokens, vec![1, 2]);
        assert_eq!(out.kv.len(), 2);
    }

    #[test]
    fn a_diverging_prompt_rewinds_to_the_divergence() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1, 2, 3, 4, 5], kv(5));
        let out = cache.checkout(&[1, 2, 7, 8], || kv(0));
        assert_eq!(out.tokens, vec![1, 2]);
        assert_eq!(out.kv.len(), 2);
    }

    #[test]
    fn least_recently_used_entries_are_evicted_and_extended_ones_replaced() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1], kv(1));
        cache.checkin(vec![2], kv(1));
        cache.checkin(vec![2, 3], kv(2)); // replaces [2]
        assert_eq!(cache.len(), 2);
        cache.checkin(vec![4], kv(1)); // evicts [1]
        assert_eq!(cache.len(), 2);
        let out = cache.checkout(&[1, 5], || kv(0));
        // No shared prefix and a full cache: the oldest entry ([2, 3]) is recycled, empty.
        assert!(out.tokens.is_empty());
        assert_eq!(out.kv.len(), 0);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn inconsistent_checkins_are_refused() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1, 2], kv(1));
        assert!(cache.is_empty());
    }
}
