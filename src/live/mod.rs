//! The live session's home: how "an agent and a caller on some transport" becomes a running
//! `CallSession`, whatever the transport.
//!
//! - [`start`]: the one admission order every real-time session goes through, and the
//!   session started on its transport's socket.
//! - [`phone`]: a phone session before its call connects (the pending record and the relay
//!   token every way into a call answers with), and its media stream let in.
//! - [`admission`]: what a session that cannot start gives back, and whether the key that
//!   minted its token still vouches for it.
//! - [`assembly`]: the agent's profile and engines for a session (provider, key and fallback
//!   choice through `crate::providers`), each stage marking which provider served, which
//!   stages are charged, its recorder; and whether and how it is recorded.
//! - [`control`]: a live call controlled from outside it (the integrator hangs it up or
//!   transfers it).
//! - [`call`]: a phone call acted on from inside its conversation (the agent hangs up,
//!   transfers, presses keys) and a transfer's outcome.
//! - [`voicemail`]: an outbound call's answering-machine verdict, and the hang-up or the
//!   message left after the beep it calls for.
//! - [`events`]: the developer's webhooks about the session (`call.started`, `call.ended`,
//!   `transfer.completed`).
//! - [`outbound`]: an outbound call placed (for the API and for campaigns), and
//!   [`campaigns`]: outbound campaigns run, contact by contact, within their calling hours,
//!   concurrency and retry policy.
//! - [`post_call`]: the post-call analysis its agent asks for, stored on the session and sent
//!   as `call.analyzed`.
//!
//! The transports (`crate::transports`) only speak their wire; the HTTP routes authenticate
//! and hand the session here.

mod admission;
mod assembly;
pub mod call;
pub mod campaigns;
pub mod control;
pub mod events;
pub mod outbound;
pub mod phone;
pub mod post_call;
pub mod start;
pub mod voicemail;

pub use phone::{
    busy_markup, issue_stream, issue_stream_as, phone_stream, resolve_instance, warm_agent_voice,
    IssuedStream, StreamFor,
};
pub use start::{admit, Admitted, Record};

use crate::ids::{AgentId, DeveloperId, InstanceId, KeyId, SessionId, TaskId};
use crate::telephony::token::RelayClaims;

/// Who a live session is for, whatever carried it: the session, its developer and agent, the
/// instance, numbers and call of a phone call, and the API key that vouched for it (whose
/// revocation ends what it handed out).
#[derive(Debug, Clone)]
pub struct SessionRequest {
    pub session_id: SessionId,
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub instance_id: Option<InstanceId>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub call_sid: Option<String>,
    pub issuer_key: Option<KeyId>,
    /// The public base URL Twilio reaches this service at (phone calls: where the call's
    /// webhooks and next streams point).
    pub public_base: Option<String>,
    /// The session of the same call this one carries on, and what the agent says first
    /// instead of its greeting.
    pub resumes: Option<SessionId>,
    pub opening: Option<String>,
    /// The outbound call task a phone call was placed as: its variables are the agent's.
    pub task_id: Option<TaskId>,
}

impl SessionRequest {
    /// The phone call a relay token vouches for, on call `call_sid`.
    pub fn phone_call(claims: RelayClaims, call_sid: Option<String>) -> Self {
        Self {
            session_id: claims.sid,
            developer_id: claims.dev,
            agent_id: claims.agent,
            instance_id: claims.inst,
            from: claims.from,
            to: claims.to,
            call_sid,
            issuer_key: claims.key,
            public_base: None,
            resumes: claims.prev,
            opening: claims.say,
            task_id: claims.task,
        }
    }
}
