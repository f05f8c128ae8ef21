//! Switchboard: an actor-based real-time voice-agent engine with an embedded HTTP +
//! WebSocket API. This crate is the server: configuration, HTTP handlers, registry actors,
//! storage, engines and vendor adapters. The real-time session actors live in
//! `switchboard-actors`.

pub mod app;
pub mod background;
pub mod billing;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod conversation;
pub mod engines;
pub mod error;
pub mod fetch;
pub mod http;
pub mod ids;
pub mod knowledge;
pub mod live;
pub mod loadtest;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod observability;
pub mod portal;
pub mod providers;
pub mod recording;
pub mod registry;
pub mod server;
pub mod signature;
pub mod speech;
pub mod store;
pub mod supervision;
pub mod telephony;
pub mod time;
pub mod transports;
pub mod vendors;
pub mod webhooks;
