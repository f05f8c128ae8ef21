//! Running several nodes against one PostgreSQL: the change feed that keeps every node's
//! caches true to what the others write ([`feed`]), and the graceful drain that lets a node
//! leave a load balancer without cutting calls ([`drain`]).

pub mod drain;
pub mod feed;

pub use drain::Drain;
pub use feed::{Change, Changed, FeedState};
