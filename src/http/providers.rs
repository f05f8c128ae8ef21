//! Which engine serves a request's provider id, with which key: `default` is the embedded
//! engine; a vendor with an adapter runs with the key `Vendors::key_for` finds; a known vendor
//! id without an adapter, or without any key, is `provider_not_configured` naming the vendor;
//! anything else is a validation error listing the ids.

use std::sync::Arc;

use actix_web::http::header::HeaderMap;
use actix_web::HttpResponseBuilder;
use switchboard_actors::engine::{LanguageModel, SpeechToText, TextToSpeech};

use super::AppState;
use crate::error::ApiError;
use crate::vendors::catalog::{Kind, DEFAULT_PROVIDER};
use crate::vendors::{self, KeyRequest, KeySource};

/// An engine chosen for a request, and what the response must say about it.
pub struct Chosen<E: ?Sized> {
    pub engine: Arc<E>,
    /// The provider id, reported in `X-Provider-Used`.
    pub provider: String,
    /// Where the vendor key came from; `None` for the embedded engine.
    pub key_source: Option<KeySource>,
}

impl<E: ?Sized> Chosen<E> {
    /// The caller's own key paid: no credits are charged.
    pub fn bypasses_metering(&self) -> bool {
        self.key_source.is_some_and(KeySource::bypasses_metering)
    }

    /// Sets `X-Provider-Used`, and `X-Usage-Bypassed: true` when the caller's key paid.
    pub fn tag(&self, response: &mut HttpResponseBuilder) {
        response.insert_header(("X-Provider-Used", self.provider.clone()));
        if self.bypasses_metering() {
            response.insert_header((super::auth::USAGE_BYPASSED, "true"));
        }
    }
}

/// Who the engine is for: the developer and, for HTTP requests, the request's headers.
pub struct Caller<'a> {
    pub developer_id: &'a str,
    pub headers: Option<&'a HeaderMap>,
}

impl<'a> Caller<'a> {
    fn keys(&self) -> KeyRequest<'a> {
        KeyRequest {
            developer_id: self.developer_id,
            headers: self.headers,
        }
    }
}

pub async fn tts(
    state: &AppState,
    param: &str,
    provider: &str,
    caller: Caller<'_>,
) -> Result<Chosen<dyn TextToSpeech>, ApiError> {
    if check(param, provider, Kind::Tts)? {
        return Ok(embedded(state.engines.tts.clone()));
    }
    let (endpoint, key_source) = vendor_endpoint(state, Kind::Tts, provider, caller).await?;
    let engine = vendors::tts_adapter(endpoint).ok_or_else(|| no_adapter(provider, Kind::Tts))?;
    Ok(chosen(engine, provider, key_source))
}

pub async fn stt(
    state: &AppState,
    param: &str,
    provider: &str,
    caller: Caller<'_>,
) -> Result<Chosen<dyn SpeechToText>, ApiError> {
    if check(param, provider, Kind::Stt)? {
        return Ok(embedded(state.engines.stt.clone()));
    }
    let (endpoint, key_source) = vendor_endpoint(state, Kind::Stt, provider, caller).await?;
    let engine = vendors::stt_adapter(endpoint).ok_or_else(|| no_adapter(provider, Kind::Stt))?;
    Ok(chosen(engine, provider, key_source))
}

pub async fn llm(
    state: &AppState,
    param: &str,
    provider: &str,
    caller: Caller<'_>,
) -> Result<Chosen<dyn LanguageModel>, ApiError> {
    if check(param, provider, Kind::Llm)? {
        return Ok(embedded(state.engines.llm.clone()));
    }
    let (endpoint, key_source) = vendor_endpoint(state, Kind::Llm, provider, caller).await?;
    let engine = vendors::llm_adapter(endpoint).ok_or_else(|| no_adapter(provider, Kind::Llm))?;
    Ok(chosen(engine, provider, key_source))
}

/// The embedded engine of a kind, for routes that always use it.
pub fn embedded<E: ?Sized>(engine: Arc<E>) -> Chosen<E> {
    Chosen {
        engine,
        provider: DEFAULT_PROVIDER.to_string(),
        key_source: None,
    }
}

fn chosen<E: ?Sized>(engine: Arc<E>, provider: &str, key_source: KeySource) -> Chosen<E> {
    Chosen {
        engine,
        provider: provider.to_string(),
        key_source: Some(key_source),
    }
}

async fn vendor_endpoint(
    state: &AppState,
    kind: Kind,
    provider: &str,
    caller: Caller<'_>,
) -> Result<(vendors::http::Endpoint, KeySource), ApiError> {
    let vendor = state.vendors.vendor_for(kind, provider)?;
    let (key, source) = state.vendors.key_for(vendor, caller.keys()).await?;
    Ok((state.vendors.endpoint(vendor, key), source))
}

fn no_adapter(provider: &str, kind: Kind) -> ApiError {
    ApiError::ProviderNotConfigured(format!(
        "provider '{provider}' has no {} adapter on this server",
        kind.as_str()
    ))
}

/// Whether `provider` is the embedded engine; an error when it is no provider id at all.
fn check(param: &str, provider: &str, kind: Kind) -> Result<bool, ApiError> {
    if provider == DEFAULT_PROVIDER {
        return Ok(true);
    }
    let known = kind.known_ids();
    if known.contains(&provider) {
        return Ok(false);
    }
    Err(ApiError::invalid(
        param,
        format!("{param} '{provider}' is not one of: {}", known.join(", ")),
    ))
}
