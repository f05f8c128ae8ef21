//! Which engine serves a request's provider id: `default` is the embedded engine; a known
//! vendor id without a configured adapter and key is `provider_not_configured`; anything else
//! is a validation error listing the ids.

use std::sync::Arc;

use switchboard_actors::engine::{LanguageModel, SpeechToText, TextToSpeech};

use super::AppState;
use crate::error::ApiError;
use crate::vendors::catalog::{DEFAULT_PROVIDER, LLM_PROVIDERS, STT_PROVIDERS, TTS_PROVIDERS};

pub fn tts(
    state: &AppState,
    param: &str,
    provider: &str,
) -> Result<Arc<dyn TextToSpeech>, ApiError> {
    check(param, provider, TTS_PROVIDERS)?;
    Ok(state.engines.tts.clone())
}

pub fn stt(
    state: &AppState,
    param: &str,
    provider: &str,
) -> Result<Arc<dyn SpeechToText>, ApiError> {
    check(param, provider, STT_PROVIDERS)?;
    Ok(state.engines.stt.clone())
}

pub fn llm(
    state: &AppState,
    param: &str,
    provider: &str,
) -> Result<Arc<dyn LanguageModel>, ApiError> {
    check(param, provider, LLM_PROVIDERS)?;
    Ok(state.engines.llm.clone())
}

fn check(param: &str, provider: &str, known: &[&str]) -> Result<(), ApiError> {
    if provider == DEFAULT_PROVIDER {
        return Ok(());
    }
    if known.contains(&provider) {
        return Err(ApiError::ProviderNotConfigured(format!(
            "provider '{provider}' is not configured on this server; use provider 'default' \
             (the embedded engine)"
        )));
    }
    Err(ApiError::invalid(
        param,
        format!("{param} '{provider}' is not one of: {}", known.join(", ")),
    ))
}
