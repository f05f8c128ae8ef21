//! Outside speech and language vendors: the catalog of provider ids, the adapters that speak
//! each vendor's wire protocol, and [`Vendors`], which picks the key a call runs with: the
//! caller's `X-Provider-Key-<Vendor>` header, else the developer's stored key (sealed at
//! rest), else the platform key from config (the only one that is metered).

pub mod agent_sync;
pub mod anthropic;
pub mod assemblyai;
pub mod audio;
pub mod azure;
pub mod cartesia;
pub mod catalog;
pub mod deepgram;
pub mod elevenlabs;
pub mod fallback;
pub mod google;
pub mod google_speech;
pub mod http;
pub mod huggingface;
pub mod inworld;
pub mod lmnt;
pub mod neuphonic;
pub mod openai;
pub mod playht;
pub mod rime;
pub mod sealing;
pub mod socket;
pub mod speech;
pub mod streaming;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::HeaderMap;
use switchboard_actors::engine::{EngineError, LanguageModel, SpeechToText, TextToSpeech};

use crate::config::{Config, VendorConfig};
use crate::error::ApiError;
use catalog::{Kind, Vendor};
use http::Endpoint;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// Where the key of a vendor call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The request's `X-Provider-Key-<Vendor>` header: the caller pays the vendor.
    Header,
    /// The developer's stored key: the developer pays the vendor.
    Stored,
    /// The platform's configured key: metered in credits.
    Platform,
}

impl KeySource {
    /// Whether credit metering is bypassed (the caller's own key paid).
    pub fn bypasses_metering(self) -> bool {
        matches!(self, KeySource::Header | KeySource::Stored)
    }
}

/// The vendors this server can reach, and how to find a key for them.
#[derive(Clone)]
pub struct Vendors {
    /// Used where the calling thread could not build a client of its own (see
    /// [`thread_client`]).
    client: reqwest::Client,
    configs: Arc<BTreeMap<String, VendorConfig>>,
}

fn build_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .pool_idle_timeout(Duration::from_secs(90))
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The vendor HTTP client of the calling thread, with its own connection pool; `None` if it
/// could not be built.
///
/// hyper drives a pooled connection on the runtime that opened it. With one client shared by
/// every actix worker, a session on one worker read its vendor's answers through a connection
/// another worker drove: each response chunk woke that worker and crossed threads, and a busy
/// worker held up the others' turns. A session's engines are built on its own worker
/// (`Vendors::endpoint`), so with a client per thread its vendor calls stay there.
pub(crate) fn thread_client() -> Option<reqwest::Client> {
    thread_local! {
        static CLIENT: std::cell::OnceCell<Option<reqwest::Client>> = const { std::cell::OnceCell::new() };
    }
    CLIENT.with(|client| {
        client
            .get_or_init(|| {
                build_client()
                    .inspect_err(|e| {
                        tracing::warn!("this thread uses the shared vendor client: {e}");
                    })
                    .ok()
            })
            .clone()
    })
}

impl Vendors {
    pub fn new(config: &Config) -> anyhow::Result<Vendors> {
        for id in config.vendors.keys() {
            if catalog::vendor(id).is_none() {
                anyhow::bail!(
                    "vendors.{id}: no adapter for this vendor (known: {})",
                    catalog::VENDORS
                        .iter()
                        .map(|v| v.id)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        let client = build_client()?;
        Ok(Vendors {
            client,
            configs: Arc::new(config.vendors.clone()),
        })
    }

    /// The endpoint of `vendor` called with `key`.
    pub fn endpoint(&self, vendor: &Vendor, key: String) -> Endpoint {
        let config = self.configs.get(vendor.id).cloned().unwrap_or_default();
        Endpoint {
            vendor: vendor.id.to_string(),
            base_url: config
                .base_url
                .filter(|url| !url.trim().is_empty())
                .unwrap_or_else(|| vendor.base_url.to_string()),
            alt_base_url: config
                .alt_base_url
                .filter(|url| !url.trim().is_empty())
                .unwrap_or_else(|| vendor.alt_base_url.to_string()),
            key,
            timeout: config
                .timeout_ms
                .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
            client: thread_client().unwrap_or_else(|| self.client.clone()),
            llm_model: config.llm_model,
            stt_model: config.stt_model,
            tts_model: config.tts_model,
            default_voice: config.default_voice,
        }
    }

    /// The key for `vendor` that the request carries in the vendor's key header, if it
    /// carries one; a header that holds no key is refused naming it.
    pub fn header_key(
        vendor: &Vendor,
        headers: Option<&HeaderMap>,
    ) -> Result<Option<String>, ApiError> {
        let Some(value) = headers.and_then(|headers| headers.get(vendor.key_header)) else {
            return Ok(None);
        };
        let key = value
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|key| !key.is_empty())
            .ok_or_else(|| {
                ApiError::invalid(
                    vendor.key_header,
                    format!("{} must hold the vendor's API key", vendor.key_header),
                )
            })?;
        Ok(Some(key.to_string()))
    }

    /// The platform's key for `vendor` (empty for a self-hosted vendor without one); an error
    /// that says where a key can come from when the platform has none.
    pub fn platform_key(&self, vendor: &Vendor) -> Result<String, ApiError> {
        let platform = self
            .configs
            .get(vendor.id)
            .map(|config| config.api_key.trim())
            .unwrap_or_default();
        if !platform.is_empty() || vendor.self_hosted {
            return Ok(platform.to_string());
        }
        Err(ApiError::ProviderNotConfigured(format!(
            "no API key for provider '{}': send it in the {} header, store one with \
             POST /v1/provider-keys, or configure vendors.{}.api_key",
            vendor.id, vendor.key_header, vendor.id
        )))
    }

    /// Every provider id by kind, with whether it has an adapter here and whether the
    /// platform has a key for it (as `GET /v1/audio/models` lists them).
    pub fn catalog(&self) -> serde_json::Value {
        let list = |kind: Kind| -> Vec<serde_json::Value> {
            kind.known_ids()
                .iter()
                .map(|id| {
                    let vendor = catalog::vendor(id).filter(|v| v.does(kind));
                    let platform_key = self
                        .configs
                        .get(*id)
                        .is_some_and(|c| !c.api_key.trim().is_empty());
                    let mut entry = serde_json::json!({
                        "id": id,
                        "embedded": *id == catalog::DEFAULT_PROVIDER,
                        "adapter": *id == catalog::DEFAULT_PROVIDER || vendor.is_some(),
                        "platformKey": platform_key,
                        "keyHeader": vendor.map(|v| v.key_header),
                    });
                    if let Some(vendor) = vendor {
                        entry["streaming"] = serde_json::json!(vendor.streams.contains(&kind));
                        if kind == Kind::Tts {
                            entry["phoneFormat"] = serde_json::json!(vendor.phone_format);
                        }
                        let config = self.configs.get(*id);
                        let model = config.and_then(|c| match kind {
                            Kind::Tts => c.tts_model.clone(),
                            Kind::Stt => c.stt_model.clone(),
                            Kind::Llm => c.llm_model.clone(),
                        });
                        if let Some(model) = model {
                            entry["model"] = serde_json::json!(model);
                        }
                    }
                    entry
                })
                .collect()
        };
        serde_json::json!({
            "tts": list(Kind::Tts),
            "stt": list(Kind::Stt),
            "llm": list(Kind::Llm),
        })
    }

    /// The vendor behind a provider id for one kind of engine, or why there is none.
    pub fn vendor_for(&self, kind: Kind, provider: &str) -> Result<&'static Vendor, ApiError> {
        catalog::vendor(provider)
            .filter(|vendor| vendor.does(kind))
            .ok_or_else(|| {
                ApiError::ProviderNotConfigured(format!(
                    "provider '{provider}' has no {} adapter on this server; use 'default' \
                     (the embedded engine){}",
                    kind.as_str(),
                    adapters_hint(kind)
                ))
            })
    }
}

fn adapters_hint(kind: Kind) -> String {
    let ids: Vec<&str> = catalog::VENDORS
        .iter()
        .filter(|vendor| vendor.does(kind))
        .map(|vendor| vendor.id)
        .collect();
    format!(" or one of: {}", ids.join(", "))
}

/// The speech-synthesis adapter of a vendor.
pub fn tts_adapter(endpoint: Endpoint) -> Option<Arc<dyn TextToSpeech>> {
    Some(match endpoint.vendor.as_str() {
        "openai" | "kokoro" => Arc::new(openai::OpenAiSpeech { endpoint }),
        "deepgram" => Arc::new(deepgram::DeepgramSpeak { endpoint }),
        "elevenlabs" => Arc::new(elevenlabs::ElevenLabsSpeech { endpoint }),
        "cartesia" => Arc::new(cartesia::CartesiaSpeech { endpoint }),
        "playht" => Arc::new(playht::PlayHtSpeech { endpoint }),
        "rime" => Arc::new(rime::RimeSpeech { endpoint }),
        "lmnt" => Arc::new(lmnt::LmntSpeech { endpoint }),
        "azure" => Arc::new(azure::AzureSpeech { endpoint }),
        "google" => Arc::new(google_speech::GoogleSpeech { endpoint }),
        "huggingface" => Arc::new(huggingface::HuggingFaceSpeech { endpoint }),
        "neuphonic" => Arc::new(neuphonic::NeuphonicSpeech { endpoint }),
        "inworld" => Arc::new(inworld::InworldSpeech { endpoint }),
        _ => return None,
    })
}

/// The speech-recognition adapter of a vendor.
pub fn stt_adapter(endpoint: Endpoint) -> Option<Arc<dyn SpeechToText>> {
    Some(match endpoint.vendor.as_str() {
        "openai" | "groq" => Arc::new(openai::OpenAiTranscription { endpoint }),
        "deepgram" => Arc::new(deepgram::DeepgramListen { endpoint }),
        "assemblyai" => Arc::new(assemblyai::AssemblyAiTranscription { endpoint }),
        "elevenlabs" => Arc::new(elevenlabs::ElevenLabsTranscription { endpoint }),
        "azure" => Arc::new(azure::AzureRecognition { endpoint }),
        _ => return None,
    })
}

/// The language-model adapter of a vendor.
pub fn llm_adapter(endpoint: Endpoint) -> Option<Arc<dyn LanguageModel>> {
    Some(match endpoint.vendor.as_str() {
        "openai" | "groq" => Arc::new(openai::OpenAiChat { endpoint }),
        "anthropic" => Arc::new(anthropic::AnthropicMessages { endpoint }),
        "google" => Arc::new(google::GeminiChat { endpoint }),
        _ => return None,
    })
}

/// Makes the vendor's cheapest authenticated call with the endpoint's key.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    match endpoint.vendor.as_str() {
        "openai" | "groq" | "kokoro" => openai::verify(endpoint).await,
        "anthropic" => anthropic::verify(endpoint).await,
        "google" => google::verify(endpoint).await,
        "deepgram" => deepgram::verify(endpoint).await,
        "elevenlabs" => elevenlabs::verify(endpoint).await,
        "cartesia" => cartesia::verify(endpoint).await,
        "assemblyai" => assemblyai::verify(endpoint).await,
        "azure" => azure::verify(endpoint).await,
        "playht" => playht::verify(endpoint).await,
        "rime" => rime::verify(endpoint).await,
        "lmnt" => lmnt::verify(endpoint).await,
        "huggingface" => huggingface::verify(endpoint).await,
        "neuphonic" => neuphonic::verify(endpoint).await,
        "inworld" => inworld::verify(endpoint).await,
        other => Err(EngineError::unavailable(format!("{other}: no adapter"))),
    }
}

/// The integration tests' connection-counting server, for the per-thread client's test.
#[cfg(test)]
#[path = "../../tests/common/counting_http.rs"]
mod counting_http;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::counting_http;

    /// A keep-alive server that answers every request with `ok` and counts the connections
    /// opened to it.
    fn counting_server() -> (String, Arc<AtomicUsize>) {
        let (address, connections) = counting_http::counting_server(|stream| {
            counting_http::send(stream, b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        });
        (format!("http://{address}/"), connections)
    }

    async fn get_ok(url: &str) {
        let client = thread_client().expect("a client for this thread");
        let body = client.get(url).send().await.unwrap().text().await.unwrap();
        assert_eq!(body, "ok");
    }

    #[test]
    fn each_thread_calls_vendors_over_connections_of_its_own() {
        let (url, connections) = counting_server();
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        // The first worker keeps its runtime running (and its pooled connection alive and
        // driven) while the second calls the same vendor.
        let (first_done_tx, first_done_rx) = std::sync::mpsc::channel();
        let (second_done_tx, second_done_rx) = tokio::sync::oneshot::channel::<()>();
        let first = {
            let url = url.clone();
            std::thread::spawn(move || {
                runtime().block_on(async {
                    for _ in 0..3 {
                        get_ok(&url).await;
                    }
                    first_done_tx.send(()).unwrap();
                    second_done_rx.await.unwrap();
                })
            })
        };
        first_done_rx.recv().unwrap();
        assert_eq!(
            connections.load(Ordering::SeqCst),
            1,
            "a thread's calls share its pooled connection"
        );
        let second = std::thread::spawn(move || {
            runtime().block_on(async {
                for _ in 0..3 {
                    get_ok(&url).await;
                }
            })
        });
        second.join().unwrap();
        second_done_tx.send(()).unwrap();
        first.join().unwrap();
        assert_eq!(
            connections.load(Ordering::SeqCst),
            2,
            "the second thread opened its own connection instead of borrowing the first's"
        );
    }
}
