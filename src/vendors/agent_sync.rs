//! Pushing agents to an outside voice-agent platform. The one implemented is the ElevenLabs
//! Conversational AI agents API (https://elevenlabs.io/docs/api-reference/agents/create and
//! https://elevenlabs.io/docs/api-reference/agents/update):
//!
//! - create: `POST {base}/v1/convai/agents/create` → `{"agent_id": "..."}`
//! - update: `PATCH {base}/v1/convai/agents/{agent_id}` → the agent, with `agent_id`
//!
//! both with the `xi-api-key` header and the body `{name, tags, conversation_config: {agent:
//! {first_message, language, prompt: {prompt, llm, temperature, max_tokens}}, tts: {voice_id,
//! model_id}}}`. An update of an agent that was deleted on the platform (404) creates it again.

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::config::SyncConfig;
use crate::store::agents::AgentRow;

pub const ELEVENLABS: &str = "elevenlabs";

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The platform refused or failed; the message starts with the platform's id.
    #[error("{0}")]
    Vendor(String),
}

/// The outcome of a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub external_agent_id: String,
    /// The agent was created on this push (first sync, or it was gone on the platform).
    pub created: bool,
}

/// A client of the configured platform.
#[derive(Clone)]
pub struct AgentSync {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    provider: String,
}

impl std::fmt::Debug for AgentSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSync")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl AgentSync {
    /// `None` when `[sync]` names no provider or key.
    pub fn from_config(config: &SyncConfig) -> Option<AgentSync> {
        if !config.configured() {
            return None;
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms.max(1)))
            .build()
            .ok()?;
        Some(AgentSync {
            http,
            base_url: config.base_url.trim().trim_end_matches('/').to_string(),
            api_key: config.api_key.trim().to_string(),
            provider: config.provider.trim().to_string(),
        })
    }

    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// Creates the agent on the platform, or updates the copy at `existing`.
    pub async fn push(
        &self,
        agent: &AgentRow,
        existing: Option<&str>,
    ) -> Result<Pushed, SyncError> {
        let body = elevenlabs_body(agent);
        if let Some(id) = existing {
            let url = format!("{}/v1/convai/agents/{id}", self.base_url);
            let (status, answer) = self.send(self.http.patch(url), &body).await?;
            if (200..300).contains(&status) {
                let external_agent_id = answer["agent_id"].as_str().unwrap_or(id).to_string();
                return Ok(Pushed {
                    external_agent_id,
                    created: false,
                });
            }
            if status != 404 {
                return Err(vendor_error(status, &answer));
            }
            tracing::warn!(agent = %agent.id, external = %id, "the synced agent is gone on {ELEVENLABS}; creating it again");
        }
        let url = format!("{}/v1/convai/agents/create", self.base_url);
        let (status, answer) = self.send(self.http.post(url), &body).await?;
        if !(200..300).contains(&status) {
            return Err(vendor_error(status, &answer));
        }
        let external_agent_id = answer["agent_id"]
            .as_str()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                SyncError::Vendor(format!("{ELEVENLABS}: the create answer has no agent_id"))
            })?
            .to_string();
        Ok(Pushed {
            external_agent_id,
            created: true,
        })
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        body: &Value,
    ) -> Result<(u16, Value), SyncError> {
        let response = request
            .header("xi-api-key", &self.api_key)
            .json(body)
            .send()
            .await
            .map_err(|e| SyncError::Vendor(format!("{ELEVENLABS}: did not answer: {e}")))?;
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| SyncError::Vendor(format!("{ELEVENLABS}: the answer broke off: {e}")))?;
        let value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            Value::String(String::from_utf8_lossy(&bytes).chars().take(300).collect())
        });
        Ok((status, value))
    }
}

/// The platform's reason: `detail.message`, a validation list's first `msg`, or the body.
fn vendor_error(status: u16, answer: &Value) -> SyncError {
    let detail = &answer["detail"];
    let reason = detail["message"]
        .as_str()
        .map(str::to_string)
        .or_else(|| detail.as_str().map(str::to_string))
        .or_else(|| detail[0]["msg"].as_str().map(str::to_string))
        .or_else(|| answer.as_str().map(str::to_string))
        .unwrap_or_else(|| answer.to_string());
    SyncError::Vendor(format!(
        "{ELEVENLABS}: refused the agent (HTTP {status}): {reason}"
    ))
}

/// The agent in the platform's terms.
fn elevenlabs_body(agent: &AgentRow) -> Value {
    let mut prompt = Map::new();
    prompt.insert(
        "prompt".into(),
        json!(agent.system_prompt.clone().unwrap_or_default()),
    );
    prompt.insert("temperature".into(), json!(agent.temperature));
    if let Some(model) = &agent.llm_model {
        prompt.insert("llm".into(), json!(model));
    }
    if let Some(max) = agent.max_tokens {
        prompt.insert("max_tokens".into(), json!(max));
    }
    let mut tts = Map::new();
    // Only an ElevenLabs voice means anything there; otherwise the platform's default speaks.
    if agent.tts_provider == ELEVENLABS && agent.voice_id != "default" {
        tts.insert("voice_id".into(), json!(agent.voice_id));
        if let Some(model) = &agent.tts_model {
            tts.insert("model_id".into(), json!(model));
        }
    }
    let mut conversation_agent = Map::new();
    conversation_agent.insert(
        "first_message".into(),
        json!(agent.first_message.clone().unwrap_or_default()),
    );
    // The platform has no "detect the caller's language": an `auto` agent keeps its default.
    if let Some(language) = agent.forced_language() {
        conversation_agent.insert("language".into(), json!(language));
    }
    conversation_agent.insert("prompt".into(), Value::Object(prompt));
    json!({
        "name": agent.name,
        "tags": ["switchboard", format!("switchboard:{}", agent.id)],
        "conversation_config": {
            "agent": conversation_agent,
            "tts": tts,
        },
    })
}
