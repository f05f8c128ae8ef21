//! The graceful stop of a node. On SIGTERM or SIGINT the node starts draining: `/health`
//! answers 503 `draining` (so a load balancer sends it no more work), new real-time sessions
//! are refused with 503 `draining` (the direct socket and the Twilio media stream, before
//! their upgrade), REST requests are still served, and live calls run on. When they have all
//! ended, or after `server.drain_timeout_seconds` (or at a second signal), the sessions still
//! live are ended cleanly ([`ServerShutdown`]: summary recorded, `session.ended` sent, the
//! socket closed with 1001 "going away"), their recordings are finished, and the server
//! stops. This module tracks the node's live sessions and recordings for that.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Addr;
use switchboard_actors::session::{CallSession, ServerShutdown};
use tokio::sync::watch;

use crate::error::ApiError;
use crate::ids::SessionId;
use crate::metrics::metrics;

/// The message of the 503 a draining node answers new sessions with.
pub const DRAINING_MESSAGE: &str = "this server is shutting down and accepts no new sessions; \
     connect again (a load balancer sends the session to another node)";

/// The node's live sessions and recordings, and whether it is draining.
pub struct Drain {
    draining: AtomicBool,
    /// Set once the server ends the sessions still live: a session attached later is ended
    /// at once.
    ending: AtomicBool,
    sessions: Mutex<HashMap<SessionId, Option<Addr<CallSession>>>>,
    live: watch::Sender<usize>,
    recordings: watch::Sender<usize>,
}

impl Drain {
    pub fn new() -> Arc<Drain> {
        Arc::new(Drain {
            draining: AtomicBool::new(false),
            ending: AtomicBool::new(false),
            sessions: Mutex::new(HashMap::new()),
            live: watch::Sender::new(0),
            recordings: watch::Sender::new(0),
        })
    }

    /// True from the stop signal on.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// 503 `draining` once the node drains.
    pub fn refuse_if_draining(&self) -> Result<(), ApiError> {
        if self.is_draining() {
            Err(ApiError::Draining(DRAINING_MESSAGE.into()))
        } else {
            Ok(())
        }
    }

    /// The running session `session_id` on this node, if it runs here.
    pub fn session(&self, session_id: &SessionId) -> Option<Addr<CallSession>> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session_id)
            .cloned()
            .flatten()
    }

    /// Real-time sessions live on this node.
    pub fn live_sessions(&self) -> usize {
        *self.live.borrow()
    }

    /// The number of live sessions, as it changes.
    pub fn watch_live(&self) -> watch::Receiver<usize> {
        self.live.subscribe()
    }

    /// Starts draining: no new session is admitted from now on.
    pub fn begin(&self) {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        self.draining.store(true, Ordering::Release);
        metrics().draining.set(1);
        tracing::info!(
            live_sessions = sessions.len(),
            "draining: new sessions are refused; live ones run on"
        );
    }

    /// Admits a new session, unless the node drains (`Draining`) or the session is live on it
    /// already (`Conflict`: a replayed token must not take the live call's place). The slot
    /// is held for the session's life; dropping it counts the session as ended.
    pub fn admit(self: &Arc<Self>, session_id: &SessionId) -> Result<SessionSlot, ApiError> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_draining() {
            return Err(ApiError::Draining(DRAINING_MESSAGE.into()));
        }
        if sessions.contains_key(session_id) {
            return Err(ApiError::Conflict(format!(
                "session {session_id} is already live on this node"
            )));
        }
        sessions.insert(session_id.clone(), None);
        self.live.send_replace(sessions.len());
        Ok(SessionSlot {
            drain: self.clone(),
            id: session_id.clone(),
        })
    }

    /// Ends every live session (the drain time is over); answers how many there were.
    pub fn end_sessions(&self) -> usize {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        self.ending.store(true, Ordering::Release);
        for addr in sessions.values().flatten() {
            addr.do_send(ServerShutdown);
        }
        sessions.len()
    }

    /// Waits until no session is live, for at most `within`; answers whether none is.
    pub async fn sessions_ended(&self, within: Duration) -> bool {
        let mut live = self.live.subscribe();
        tokio::time::timeout(within, live.wait_for(|n| *n == 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Counts a recording from its start until its file and record are complete.
    pub fn recording(self: &Arc<Self>) -> RecordingHold {
        self.recordings.send_modify(|n| *n += 1);
        RecordingHold {
            drain: self.clone(),
        }
    }

    /// Waits until every recording is complete, for at most `within`; answers whether all are.
    pub async fn recordings_finished(&self, within: Duration) -> bool {
        let mut pending = self.recordings.subscribe();
        tokio::time::timeout(within, pending.wait_for(|n| *n == 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// A live session's place on the node.
pub struct SessionSlot {
    drain: Arc<Drain>,
    id: SessionId,
}

impl SessionSlot {
    /// Ties the running session to its slot, so the end of the drain can end it.
    pub fn attach(&self, addr: &Addr<CallSession>) {
        let mut sessions = self
            .drain
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if self.drain.ending.load(Ordering::Acquire) {
            addr.do_send(ServerShutdown);
        }
        sessions.insert(self.id.clone(), Some(addr.clone()));
    }

    /// True when the server is ending the node's sessions (the transport then closes its
    /// socket as "going away").
    pub fn ended_by_server(&self) -> bool {
        self.drain.ending.load(Ordering::Acquire)
    }
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let mut sessions = self
            .drain
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        sessions.remove(&self.id);
        self.drain.live.send_replace(sessions.len());
    }
}

/// Held while a recording is being written and completed.
pub struct RecordingHold {
    drain: Arc<Drain>,
}

impl Drop for RecordingHold {
    fn drop(&mut self) {
        self.drain
            .recordings
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_draining_node_admits_no_session_and_waits_for_the_live_ones() {
        let drain = Drain::new();
        let live = drain
            .admit(&"ses_1".into())
            .expect("admitted before the drain");
        assert_eq!(drain.live_sessions(), 1);
        drain.begin();
        assert!(matches!(
            drain.admit(&"ses_2".into()),
            Err(ApiError::Draining(_))
        ));
        assert!(drain.refuse_if_draining().is_err());
        assert!(!drain.sessions_ended(Duration::from_millis(20)).await);
        drop(live);
        assert!(drain.sessions_ended(Duration::from_millis(20)).await);
        assert_eq!(drain.live_sessions(), 0);
    }

    #[test]
    fn a_session_live_already_is_not_admitted_again_and_stays_live() {
        let drain = Drain::new();
        let live = drain.admit(&"ses_1".into()).expect("admitted");
        assert!(matches!(
            drain.admit(&"ses_1".into()),
            Err(ApiError::Conflict(_))
        ));
        assert_eq!(
            drain.live_sessions(),
            1,
            "the refusal leaves the live one counted"
        );
        drop(live);
        assert_eq!(drain.live_sessions(), 0);
    }

    #[tokio::test]
    async fn recordings_are_awaited_until_complete() {
        let drain = Drain::new();
        let hold = drain.recording();
        assert!(!drain.recordings_finished(Duration::from_millis(20)).await);
        drop(hold);
        assert!(drain.recordings_finished(Duration::from_millis(20)).await);
    }
}
