//! Which engine serves a request's provider id, with which key: `default` is the embedded
//! engine; a vendor with an adapter runs with the key `key_for` finds (the request's vendor
//! key header, else the developer's stored key, else the platform's); a known vendor
//! id without an adapter, or without any key, is `provider_not_configured` naming the vendor;
//! anything else is a validation error listing the ids.

use std::sync::Arc;

use actix_web::http::header::HeaderMap;
use switchboard_actors::engine::{LanguageModel, SpeechToText, TextToSpeech};

use crate::app::AppState;
use crate::engines::pool::Lane;
use crate::engines::EngineSet;
use crate::error::ApiError;
use crate::ids::DeveloperId;
use crate::registry::provider_keys::StoredKey;
use crate::store::agents::AgentRow;
use crate::store::stored_json;
use crate::vendors::catalog::Vendor;
use crate::vendors::catalog::{Kind, DEFAULT_PROVIDER};
use crate::vendors::fallback::{fallback_ids, FallbackLlm, FallbackStt, FallbackTts, ServedBy};
use crate::vendors::{self, KeySource, Vendors};

/// An engine chosen for a request, and what the response must say about it.
pub struct Chosen<E: ?Sized> {
    pub engine: Arc<E>,
    /// The provider id, reported in `X-Provider-Used`.
    pub provider: String,
    /// Where the vendor key came from; `None` for the embedded engine.
    pub key_source: Option<KeySource>,
    /// With fallbacks: which provider served, and each provider's key source.
    fallback: Option<(ServedBy, Vec<ProviderKey>)>,
}

/// A provider id and where its key came from.
type ProviderKey = (String, Option<KeySource>);

impl<E: ?Sized> Chosen<E> {
    /// The provider that served (a fallback, if the agent's own failed), and its key source.
    pub fn served(&self) -> ProviderKey {
        if let Some((served_by, sources)) = &self.fallback {
            let served = served_by.lock().ok().and_then(|slot| slot.clone());
            if let Some(found) = served.and_then(|id| sources.iter().find(|(p, _)| *p == id)) {
                return found.clone();
            }
        }
        (self.provider.clone(), self.key_source)
    }

    /// The slot a fallback chain marks with the provider that served; `None` without one.
    pub fn served_by(&self) -> Option<ServedBy> {
        self.fallback
            .as_ref()
            .map(|(served_by, _)| served_by.clone())
    }

    /// Whether credits are checked before the work: the agent's own provider runs on the
    /// platform's key (or is the embedded engine).
    pub fn metered_up_front(&self) -> bool {
        !self.key_source.is_some_and(KeySource::bypasses_metering)
    }

    /// The caller's own key paid: no credits are charged.
    pub fn bypasses_metering(&self) -> bool {
        self.served().1.is_some_and(KeySource::bypasses_metering)
    }
}

/// Who the engine is for: the developer, for HTTP requests the request's headers, and which
/// lane of the worker pool an embedded engine's jobs wait in (a live conversation's go first).
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    pub developer_id: &'a DeveloperId,
    pub headers: Option<&'a HeaderMap>,
    pub lane: Lane,
}

/// One stage of an agent's pipeline, as far as choosing its engine goes: the embedded engine,
/// a vendor's adapter, the agent's field naming the provider, and the fallback chain its
/// engines run in. [`Tts`], [`Llm`] and [`Stt`] are the three.
pub trait Stage {
    type Engine: ?Sized + Send + Sync + 'static;
    const KIND: Kind;
    /// The agent's field naming the stage's provider (`ttsProvider`).
    const FIELD: &'static str;
    /// Where its fallbacks are listed, for errors (`metadata.fallbacks.tts`).
    const FALLBACKS_FIELD: &'static str;
    /// The provider id the agent names for the stage.
    fn provider_of(agent: &AgentRow) -> &str;
    fn embedded(engines: &EngineSet) -> Arc<Self::Engine>;
    fn adapter(endpoint: vendors::http::Endpoint) -> Option<Arc<Self::Engine>>;
    /// `engines` tried in order, each failure before any output passing to the next, the one
    /// that served marked in `served_by`; `primary` is the agent's own provider.
    fn chain(
        engines: Vec<Arc<Self::Engine>>,
        served_by: ServedBy,
        primary: &str,
    ) -> Arc<Self::Engine>;
}

/// Speech synthesis.
pub struct Tts;
/// The language model.
pub struct Llm;
/// Speech recognition.
pub struct Stt;

impl Stage for Tts {
    type Engine = dyn TextToSpeech;
    const KIND: Kind = Kind::Tts;
    const FIELD: &'static str = "ttsProvider";
    const FALLBACKS_FIELD: &'static str = "metadata.fallbacks.tts";
    fn provider_of(agent: &AgentRow) -> &str {
        &agent.tts_provider
    }
    fn embedded(engines: &EngineSet) -> Arc<Self::Engine> {
        engines.tts.clone()
    }
    fn adapter(endpoint: vendors::http::Endpoint) -> Option<Arc<Self::Engine>> {
        vendors::tts_adapter(endpoint)
    }
    fn chain(engines: Vec<Arc<Self::Engine>>, served_by: ServedBy, _: &str) -> Arc<Self::Engine> {
        Arc::new(FallbackTts { engines, served_by })
    }
}

impl Stage for Llm {
    type Engine = dyn LanguageModel;
    const KIND: Kind = Kind::Llm;
    const FIELD: &'static str = "llmProvider";
    const FALLBACKS_FIELD: &'static str = "metadata.fallbacks.llm";
    fn provider_of(agent: &AgentRow) -> &str {
        &agent.llm_provider
    }
    fn embedded(engines: &EngineSet) -> Arc<Self::Engine> {
        engines.llm.clone()
    }
    fn adapter(endpoint: vendors::http::Endpoint) -> Option<Arc<Self::Engine>> {
        vendors::llm_adapter(endpoint)
    }
    fn chain(engines: Vec<Arc<Self::Engine>>, served_by: ServedBy, _: &str) -> Arc<Self::Engine> {
        Arc::new(FallbackLlm { engines, served_by })
    }
}

impl Stage for Stt {
    type Engine = dyn SpeechToText;
    const KIND: Kind = Kind::Stt;
    const FIELD: &'static str = "sttProvider";
    const FALLBACKS_FIELD: &'static str = "metadata.fallbacks.stt";
    fn provider_of(agent: &AgentRow) -> &str {
        &agent.stt_provider
    }
    fn embedded(engines: &EngineSet) -> Arc<Self::Engine> {
        engines.stt.clone()
    }
    fn adapter(endpoint: vendors::http::Endpoint) -> Option<Arc<Self::Engine>> {
        vendors::stt_adapter(endpoint)
    }
    /// Live recognisers (Deepgram, AssemblyAI) stream the whole call; the others go per
    /// utterance.
    fn chain(
        engines: Vec<Arc<Self::Engine>>,
        served_by: ServedBy,
        primary: &str,
    ) -> Arc<Self::Engine> {
        Arc::new(FallbackStt {
            engines,
            primary_streams_live: crate::vendors::catalog::streams_live(primary),
            served_by,
        })
    }
}

/// The engine of stage `S` that serves `provider` (named by request field `param`): the
/// embedded one, or a vendor's adapter with the key `key_for` finds.
pub async fn choose<S: Stage>(
    state: &AppState,
    param: &str,
    provider: &str,
    caller: Caller<'_>,
) -> Result<Chosen<S::Engine>, ApiError> {
    if check(param, provider, S::KIND)? {
        return Ok(embedded(S::embedded(state.engines().on(caller.lane))));
    }
    let (endpoint, key_source) = vendor_endpoint(state, S::KIND, provider, caller).await?;
    let engine = S::adapter(endpoint).ok_or_else(|| no_adapter(provider, S::KIND))?;
    Ok(chosen(engine, provider, key_source))
}

/// An agent's engine for stage `S`: its own provider, then the fallbacks its metadata lists
/// (`{"fallbacks": {"tts": ["default"]}}`) tried in order when it fails before starting. A
/// fallback that cannot be set up (no key) is left out with a warning; the agent's own
/// provider failing to set up is an error.
pub async fn for_agent<S: Stage>(
    state: &AppState,
    agent: &AgentRow,
    caller: Caller<'_>,
) -> Result<Chosen<S::Engine>, ApiError> {
    let own = S::provider_of(agent);
    let primary = choose::<S>(state, S::FIELD, own, caller).await?;
    let mut engines = vec![primary.engine.clone()];
    let mut sources = vec![(primary.provider.clone(), primary.key_source)];
    for id in fallback_ids(&stored_json(&agent.metadata), S::KIND) {
        match choose::<S>(state, S::FALLBACKS_FIELD, &id, caller).await {
            Ok(fallback) => {
                sources.push((fallback.provider, fallback.key_source));
                engines.push(fallback.engine);
            }
            Err(err) => skip_fallback(agent.id.as_str(), S::KIND.as_str(), &id, &err),
        }
    }
    Ok(with_engine(
        primary,
        engines,
        sources,
        |engines, served_by| S::chain(engines, served_by, own),
    ))
}

/// The voice that serves `provider` ([`choose`] for [`Tts`]).
pub async fn tts(
    state: &AppState,
    param: &str,
    provider: &str,
    caller: Caller<'_>,
) -> Result<Chosen<dyn TextToSpeech>, ApiError> {
    choose::<Tts>(state, param, provider, caller).await
}

/// `chosen` with its engine replaced by the fallback chain, when there is one.
fn with_engine<E: ?Sized>(
    chosen: Chosen<E>,
    engines: Vec<Arc<E>>,
    sources: Vec<ProviderKey>,
    chain: impl FnOnce(Vec<Arc<E>>, ServedBy) -> Arc<E>,
) -> Chosen<E> {
    if engines.len() < 2 {
        return chosen;
    }
    let served_by = ServedBy::default();
    Chosen {
        engine: chain(engines, served_by.clone()),
        fallback: Some((served_by, sources)),
        ..chosen
    }
}

fn skip_fallback(agent: &str, stage: &str, provider: &str, err: &ApiError) {
    tracing::warn!(agent, stage, provider, reason = %err, "fallback provider left out");
}

/// The embedded engine of a kind, for routes that always use it.
pub fn embedded<E: ?Sized>(engine: Arc<E>) -> Chosen<E> {
    Chosen {
        engine,
        provider: DEFAULT_PROVIDER.to_string(),
        key_source: None,
        fallback: None,
    }
}

fn chosen<E: ?Sized>(engine: Arc<E>, provider: &str, key_source: KeySource) -> Chosen<E> {
    Chosen {
        engine,
        provider: provider.to_string(),
        key_source: Some(key_source),
        fallback: None,
    }
}

async fn vendor_endpoint(
    state: &AppState,
    kind: Kind,
    provider: &str,
    caller: Caller<'_>,
) -> Result<(vendors::http::Endpoint, KeySource), ApiError> {
    let vendor = state.vendors().vendor_for(kind, provider)?;
    let (key, source) = key_for(state, vendor, caller).await?;
    Ok((state.vendors().endpoint(vendor, key), source))
}

/// The key a call to `vendor` runs with, and where it came from: the request's vendor key
/// header, else the developer's stored key, else the platform's.
async fn key_for(
    state: &AppState,
    vendor: &Vendor,
    caller: Caller<'_>,
) -> Result<(String, KeySource), ApiError> {
    if let Some(key) = Vendors::header_key(vendor, caller.headers)? {
        return Ok((key, KeySource::Header));
    }
    match state
        .provider_keys()
        .open(caller.developer_id, vendor.id)
        .await?
    {
        StoredKey::Key(key) => return Ok((key, KeySource::Stored)),
        StoredKey::Absent => {}
        StoredKey::Unreadable => tracing::warn!(
            provider = vendor.id,
            "a stored provider key does not open with this server's master key"
        ),
    }
    Ok((state.vendors().platform_key(vendor)?, KeySource::Platform))
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
