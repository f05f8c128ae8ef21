//! The prompt cache: KV caches of recent conversations, reused by longest common token prefix.
//!
//! A voice call sends the whole conversation every turn, and each prompt starts with the
//! previous one (system prompt, earlier turns, the last answer). Feeding only the tokens after
//! the longest common prefix cuts the time to first token from a full prefill to the new turn.
//!
//! Sharing: the model weights are shared by every request; KV caches are not. The cache holds
//! up to `capacity` entries (token sequence plus its KV cache), least recently used first out.
//! A request *checks out* a KV cache holding the longest prefix it shares with an entry, owns
//! it while it generates (so concurrent requests never contend on a lock during inference and
//! never corrupt each other's state), and checks it back in with the tokens it fed.
//!
//! Requests may name their conversation ([`ChatRequest::conversation`]). A conversation has
//! at most one entry: its own entry is taken and rewound (its older state is of no further
//! use), while another conversation's entry is never taken: the prefix they share (the same
//! agent's system prompt, say) is copied, and that entry stays for its own next turn. So
//! several calls on one agent keep one entry each, and a call whose history was cut, or whose
//! last answer was cut short, replaces its entry instead of leaving a stale one to push out a
//! live call's. Requests without a conversation take the entry they share the most with, as
//! two requests of the same conversation would.
//!
//! [`ChatRequest::conversation`]: switchboard_actors::engine::ChatRequest::conversation

use std::sync::Mutex;

use super::model::KvCache;

struct Entry {
    conversation: Option<String>,
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

/// What a checkout does with the entry it found.
enum Found {
    /// Take the entry, rewound to the shared prefix.
    Take(usize, usize),
    /// Copy the entry's shared prefix and leave it in place.
    Copy(usize, usize),
    /// Nothing shared: reuse this entry's buffers, empty.
    Recycle(usize),
    Nothing,
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

    /// A KV cache holding the longest prefix `prompt` shares with an entry (see the module
    /// docs for which entries are taken and which are copied); with nothing shared, the
    /// buffers of the conversation's own entry or, when the cache is full, of the least
    /// recently used one, else `fresh`.
    pub fn checkout(
        &self,
        prompt: &[u32],
        conversation: Option<&str>,
        fresh: impl FnOnce() -> KvCache,
    ) -> CheckedOut {
        // The last prompt token is always fed again.
        let most = prompt.len().saturating_sub(1);
        let mut entries = self.lock();
        let own = conversation.and_then(|c| {
            entries
                .iter()
                .position(|e| e.conversation.as_deref() == Some(c))
        });
        let best = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, common_prefix(&e.tokens, prompt).min(most)))
            .filter(|&(_, shared)| shared > 0)
            .max_by_key(|&(i, shared)| (shared, Some(i) == own));
        let found = match (best, own) {
            (Some((index, shared)), _)
                if Some(index) == own
                    || conversation.is_none() && entries[index].conversation.is_none() =>
            {
                Found::Take(index, shared)
            }
            (Some((index, shared)), _) => Found::Copy(index, shared),
            (None, Some(index)) => Found::Recycle(index),
            (None, None) if self.capacity > 0 && entries.len() >= self.capacity => {
                Found::Recycle(0)
            }
            (None, None) => Found::Nothing,
        };
        let (index, shared) = match found {
            Found::Take(index, shared) => (index, shared),
            Found::Recycle(index) => (index, 0),
            Found::Copy(index, shared) => {
                let copied = entries[index].kv.copy_prefix(shared);
                let tokens = entries[index].tokens[..shared].to_vec();
                // The conversation's own entry is superseded by the one it checks in.
                if let Some(own) = own {
                    entries.remove(own);
                }
                drop(entries);
                return match copied {
                    Ok(kv) => CheckedOut { tokens, kv },
                    Err(error) => {
                        tracing::warn!(%error, "a shared prompt prefix could not be copied");
                        CheckedOut {
                            tokens: Vec::new(),
                            kv: fresh(),
                        }
                    }
                };
            }
            Found::Nothing => {
                drop(entries);
                return CheckedOut {
                    tokens: Vec::new(),
                    kv: fresh(),
                };
            }
        };
        let mut entry = entries.remove(index);
        drop(entries);
        entry.tokens.truncate(shared);
        entry.kv.truncate(shared);
        CheckedOut {
            tokens: entry.tokens,
            kv: entry.kv,
        }
    }

    /// Returns a KV cache holding the state of `tokens`, as the most recently used entry of
    /// `conversation`. It replaces the conversation's earlier entry, and entries it extends
    /// (their tokens are a prefix of `tokens`, for another conversation or none) are dropped
    /// as redundant.
    pub fn checkin(&self, tokens: Vec<u32>, kv: KvCache, conversation: Option<&str>) {
        if self.capacity == 0 || tokens.is_empty() || tokens.len() != kv.len() {
            return;
        }
        let mut entries = self.lock();
        entries.retain(|e| {
            let own = conversation.is_some() && e.conversation.as_deref() == conversation;
            !own && common_prefix(&e.tokens, &tokens) < e.tokens.len()
        });
        entries.push(Entry {
            conversation: conversation.map(str::to_owned),
            tokens,
            kv,
        });
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
        cache.checkin(vec![1, 2, 3, 4], kv(4), None);
        cache.checkin(vec![1, 2, 9], kv(3), None);
        let out = cache.checkout(&[1, 2, 3, 4, 5, 6], None, || kv(0));
        assert_eq!(out.tokens, vec![1, 2, 3, 4]);
        assert_eq!(out.kv.len(), 4);
        // The other entry is still there; the taken one is out until checked in again.
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_prompt_equal_to_the_cache_still_feeds_its_last_token() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1, 2, 3], kv(3), None);
        let out = cache.checkout(&[1, 2, 3], None, || kv(0));
        assert_eq!(out.tokens, vec![1, 2]);
        assert_eq!(out.kv.len(), 2);
    }

    #[test]
    fn a_diverging_prompt_rewinds_to_the_divergence() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1, 2, 3, 4, 5], kv(5), None);
        let out = cache.checkout(&[1, 2, 7, 8], None, || kv(0));
        assert_eq!(out.tokens, vec![1, 2]);
        assert_eq!(out.kv.len(), 2);
    }

    #[test]
    fn least_recently_used_entries_are_evicted_and_extended_ones_replaced() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1], kv(1), None);
        cache.checkin(vec![2], kv(1), None);
        cache.checkin(vec![2, 3], kv(2), None); // replaces [2]
        assert_eq!(cache.len(), 2);
        cache.checkin(vec![4], kv(1), None); // evicts [1]
        assert_eq!(cache.len(), 2);
        let out = cache.checkout(&[1, 5], None, || kv(0));
        // No shared prefix and a full cache: the oldest entry ([2, 3]) is recycled, empty.
        assert!(out.tokens.is_empty());
        assert_eq!(out.kv.len(), 0);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn inconsistent_checkins_are_refused() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1, 2], kv(1), None);
        assert!(cache.is_empty());
    }

    #[test]
    fn another_conversations_entry_is_copied_not_taken() {
        let cache = PromptCache::new(4);
        // Two calls on one agent: the same system prompt (1, 2), different turns.
        cache.checkin(vec![1, 2, 3, 4], kv(4), Some("call-a"));
        let out = cache.checkout(&[1, 2, 7, 8], Some("call-b"), || kv(0));
        assert_eq!(out.tokens, vec![1, 2], "the shared system prompt is reused");
        assert_eq!(out.kv.len(), 2);
        cache.checkin(vec![1, 2, 7, 8, 9], kv(5), Some("call-b"));
        // Call A's next turn still finds its whole state.
        let out = cache.checkout(&[1, 2, 3, 4, 5, 6], Some("call-a"), || kv(0));
        assert_eq!(out.tokens, vec![1, 2, 3, 4]);
        assert_eq!(cache.len(), 1, "A's entry is out; B's stays");
        // A request of no conversation does not take a call's entry either.
        let out = cache.checkout(&[1, 2, 7, 8, 9, 10], None, || kv(0));
        assert_eq!(out.tokens, vec![1, 2, 7, 8, 9]);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_conversation_keeps_one_entry_whatever_its_prompt_becomes() {
        let cache = PromptCache::new(2);
        cache.checkin(vec![1, 2, 3, 4, 5], kv(5), Some("call-a"));
        cache.checkin(vec![1, 2, 6], kv(3), Some("call-b"));
        // Call A's history was cut: its prompt shares only the system prompt with its
        // entry, and as much with B's. Its own entry is the one rewound and replaced.
        let out = cache.checkout(&[1, 2, 4, 5, 9], Some("call-a"), || kv(0));
        assert_eq!(out.tokens, vec![1, 2]);
        cache.checkin(vec![1, 2, 4, 5, 9, 10], kv(6), Some("call-a"));
        assert_eq!(cache.len(), 2);
        // B's entry survived A's turn, in a cache of two.
        let out = cache.checkout(&[1, 2, 6, 11], Some("call-b"), || kv(0));
        assert_eq!(out.tokens, vec![1, 2, 6]);
        // A checkin replaces the conversation's entry even when it does not extend it.
        cache.checkin(vec![1, 2, 6, 11, 12], kv(5), Some("call-b"));
        cache.checkin(vec![1, 2, 6, 13], kv(4), Some("call-b"));
        assert_eq!(cache.len(), 2);
        let out = cache.checkout(&[1, 2, 6, 11, 12, 14], Some("call-b"), || kv(0));
        assert_eq!(out.tokens, vec![1, 2, 6], "only the latest state is kept");
    }

    #[test]
    fn a_conversation_with_nothing_shared_reuses_its_own_buffers() {
        let cache = PromptCache::new(4);
        cache.checkin(vec![1, 2], kv(2), Some("call-a"));
        cache.checkin(vec![3, 4], kv(2), Some("call-b"));
        let out = cache.checkout(&[5, 6], Some("call-a"), || kv(0));
        assert!(out.tokens.is_empty());
        assert_eq!(out.kv.len(), 0);
        assert_eq!(cache.len(), 1, "B's entry is left alone");
    }
}
