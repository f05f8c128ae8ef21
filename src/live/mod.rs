//! The live session's home: how "an agent and a caller on some transport" becomes a running
//! `CallSession`, whatever the transport.
//!
//! - `phone`: a phone session before its call connects (the pending record and the relay
//!   token every way into a call answers with).
//! - `admission`: what a session that cannot start gives back, and whether the key that
//!   minted its token still vouches for it.
//! - `assembly`: the agent's profile and engines for a session (provider, key and fallback
//!   choice through `crate::providers`), each stage marking which provider served, the
//!   session's metering and its recorder; and whether and how it is recorded.
//!
//! The transports (`telephony::stream`, `http::direct`) speak their wire and call in here
//! through the `SessionFactory` this module implements; nothing here reads a socket.

pub mod admission;
pub mod assembly;
pub mod phone;

pub use admission::{abandon_unstarted, release_unstarted, token_issuer_in_force};
pub use assembly::app_session_factory;
pub use phone::{
    issue_stream, issue_stream_as, resolve_instance, warm_agent_voice, IssuedStream, StreamFor,
};
