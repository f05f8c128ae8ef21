//! The real-time side of Switchboard: session actors, their messages, the audio path and the
//! engine traits sessions call. This crate knows nothing of HTTP, SQL or vendors; the server
//! crate implements the traits and drives the actors.

pub mod audio;
pub mod engine;
pub mod session;
