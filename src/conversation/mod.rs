//! Conversations with an agent over REST (`POST /v1/agents/{id}/chat`), and the parts voice
//! sessions share with them: the system prompt with instance variables and retrieved
//! knowledge ([`prompt`], [`retrieval`]), the agent's tools ([`tools`]), the tool-calling
//! turn loop ([`turn`]), and the agent's turn taking in voice sessions ([`turn_taking`]).

pub mod prompt;
pub mod retrieval;
pub mod tools;
pub mod turn;
pub mod turn_taking;
