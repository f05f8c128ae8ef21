//! Identifiers of stored things: a type prefix and a random UUID, so an id says what it names
//! (`agent_…`, `sess_…`) and cannot be guessed from another.

/// A fresh identifier with a type prefix, e.g. `agent_0f3c…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}
