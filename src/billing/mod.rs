//! Billing: what metered work costs (`pricing`), the billing clock and periods (`period`),
//! the per-key rate limiter (`rate_limit`) and the payment processor: its REST client (`stripe`) and its webhook events (`webhook`).

pub mod period;
pub mod pricing;
pub mod rate_limit;
pub mod stripe;
pub mod webhook;

pub use pricing::Usage;

/// The tiers a developer can be on, in order.
pub const TIERS: [&str; 3] = ["starter", "pro", "scale"];

/// The tier every developer starts on and falls back to when a subscription ends.
pub const FREE_TIER: &str = "starter";
