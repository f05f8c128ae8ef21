//! Conversations with an agent over REST (`POST /v1/agents/{id}/chat`), and the parts voice
//! sessions share with them: the system prompt with instance variables and retrieved
//! knowledge ([`prompt`], [`retrieval`]), the guard that keeps unsupported numbers, prices,
//! dates and addresses out of replies ([`grounding`]), the agent's tools ([`tools`]), the
//! tool-calling turn loop ([`turn`]), the agent's turn taking in voice sessions ([`turn_taking`]) and the
//! people it may hand a phone call to ([`transfer`]), and what its language model makes of a
//! finished call ([`analysis`]).

pub mod analysis;
pub mod grounding;
pub mod prompt;
pub mod retrieval;
pub mod tools;
pub mod transfer;
pub mod turn;
pub mod turn_taking;
