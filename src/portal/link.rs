//! Linking a signed-in number to an existing developer: a number no developer knew signs in
//! to a new, empty developer; its owner proves, once, that an existing developer is theirs by
//! presenting one of its live API keys, and from then on the number signs in to that
//! developer (the same outcome as the operator's `developers link-phone`).
//!
//! The rules (docs/api.md, "Developer portal", repeats them):
//! - the key must be live (unknown, revoked and expired keys are refused the same way as on
//!   `/v1`), and wrong keys are counted: [`PortalConfig::code_max_attempts`] refusals per
//!   number, and per client address, in [`PortalConfig::code_request_window_seconds`] (the
//!   sign-in code's limits) and the next try is answered 429;
//! - only a developer that no number signs in to yet can be linked this way: a developer
//!   that already has a number is its owner's, and an API key alone (keys live in servers'
//!   configuration and leak more easily than a phone) does not let another number in;
//! - only the empty developer of a first sign-in moves away: one that holds keys, agents,
//!   collections, numbers or provider keys would be left behind unreachable, so it is
//!   refused;
//! - the empty developer stays, with no number signing in to it; the number's sessions on it
//!   end (every browser), and the browser that linked gets a new session on the linked
//!   developer, expiring when the old one would have.
//!
//! [`PortalConfig::code_max_attempts`]: crate::config::PortalConfig::code_max_attempts
//! [`PortalConfig::code_request_window_seconds`]: crate::config::PortalConfig::code_request_window_seconds

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::{masked, random_token, ActiveSession, Portal, SignedIn};
use crate::error::ApiError;
use crate::ids::DeveloperId;
use crate::registry::keys::hash_key;
use crate::store::portal::{self, MovePhone, NewSession, PhoneMove};
use crate::time::now_ms;

/// Refused link attempts by number and by client address (this node's count: an API key
/// cannot be guessed in any number of tries; the limit keeps a stolen session from trying a
/// list of leaked keys quickly).
#[derive(Clone, Default)]
pub struct LinkFailures {
    times: Arc<Mutex<HashMap<String, VecDeque<i64>>>>,
}

/// Entries kept at most; beyond it, the oldest windows are forgotten first.
const MAX_TRACKED: usize = 10_000;

impl LinkFailures {
    fn names(phone: &str, client_ip: &str) -> [String; 2] {
        [format!("phone:{phone}"), format!("ip:{client_ip}")]
    }

    /// Seconds until a try is allowed again, if `limit` refusals were counted in the window.
    fn wait(&self, phone: &str, client_ip: &str, limit: u32, window_ms: i64, now: i64) -> u64 {
        let mut times = self
            .times
            .lock()
            .expect("the link failures lock is not poisoned");
        let mut wait = 0;
        for name in Self::names(phone, client_ip) {
            if let Some(list) = times.get_mut(&name) {
                while list.front().is_some_and(|t| *t <= now - window_ms) {
                    list.pop_front();
                }
                if list.len() >= limit as usize {
                    let oldest = list[list.len() - limit as usize];
                    wait = wait.max(((oldest + window_ms - now).max(1000) as u64).div_ceil(1000));
                }
            }
        }
        wait
    }

    fn count(&self, phone: &str, client_ip: &str, window_ms: i64, now: i64) {
        let mut times = self
            .times
            .lock()
            .expect("the link failures lock is not poisoned");
        if times.len() >= MAX_TRACKED {
            times.retain(|_, list| list.back().is_some_and(|t| *t > now - window_ms));
        }
        for name in Self::names(phone, client_ip) {
            times.entry(name).or_default().push_back(now);
        }
    }
}

/// How a link request went.
pub enum Linked {
    /// The number now signs in to the key's developer; the browser's new session.
    Moved(SignedIn),
    /// The number signed in to the key's developer already.
    Already,
}

impl Portal {
    fn link_window_ms(&self) -> i64 {
        (self.config.code_request_window_seconds as i64).saturating_mul(1000)
    }

    /// Refuses a link attempt from a number or address that was refused too often lately.
    pub fn link_allowed(&self, phone: &str, client_ip: &str) -> Result<(), ApiError> {
        let limit = self.config.code_max_attempts;
        let wait =
            self.link_failures
                .wait(phone, client_ip, limit, self.link_window_ms(), now_ms());
        if wait == 0 {
            return Ok(());
        }
        Err(ApiError::RateLimited {
            message: format!(
                "{limit} API keys were refused for this number or address in {} seconds; \
                 retry in {wait} s",
                self.config.code_request_window_seconds
            ),
            limit,
            retry_after_seconds: wait,
        })
    }

    /// Counts a refused key against the number and the address.
    pub fn link_refused(&self, phone: &str, client_ip: &str) {
        self.link_failures
            .count(phone, client_ip, self.link_window_ms(), now_ms());
    }

    /// Moves the session's number to `developer_id`, whose live API key the browser
    /// presented (see the module's rules).
    pub async fn link(
        &self,
        session: &ActiveSession,
        developer_id: &DeveloperId,
    ) -> Result<Linked, ApiError> {
        let session_id = random_token();
        let expires_at = session.expires_at;
        let new_session = NewSession {
            id_hash: hash_key(&session_id),
            expires_at,
        };
        let outcome = portal::move_phone(
            &self.db,
            &MovePhone {
                phone: &session.phone,
                from: &session.developer_id,
                to: developer_id,
                session: &new_session,
                now: now_ms(),
            },
        )
        .await?;
        match outcome {
            PhoneMove::Moved => {
                tracing::info!(
                    phone = %masked(&session.phone),
                    from = %session.developer_id,
                    to = %developer_id,
                    "portal number linked to an existing developer"
                );
                Ok(Linked::Moved(SignedIn {
                    session_id,
                    developer_id: developer_id.clone(),
                    created: false,
                    expires_at,
                }))
            }
            PhoneMove::AlreadyLinked => Ok(Linked::Already),
            PhoneMove::TargetHasPhone => Err(ApiError::Conflict(
                "the account of this API key already signs in to the portal with another \
                 phone number: sign in with that number, or ask an operator to link this one"
                    .into(),
            )),
            PhoneMove::SourceNotEmpty => Err(ApiError::Conflict(
                "this number's account holds API keys, agents, collections, phone numbers or \
                 provider keys of its own, which linking would leave unreachable: ask an \
                 operator to link this number instead"
                    .into(),
            )),
            PhoneMove::SourceChanged => Err(ApiError::Conflict(
                "this number was linked to another account meanwhile: sign in again".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_count_per_number_and_per_address_within_the_window() {
        let failures = LinkFailures::default();
        let window = 60_000;
        for i in 0..3 {
            assert_eq!(failures.wait("+1", "10.0.0.1", 3, window, 1_000 + i), 0);
            failures.count("+1", "10.0.0.1", window, 1_000 + i);
        }
        assert_eq!(failures.wait("+1", "10.0.0.9", 3, window, 2_000), 59);
        assert_eq!(failures.wait("+2", "10.0.0.1", 3, window, 2_000), 59);
        assert_eq!(failures.wait("+2", "10.0.0.9", 3, window, 2_000), 0);
        assert_eq!(failures.wait("+1", "10.0.0.1", 3, window, 61_001), 0);
    }
}
