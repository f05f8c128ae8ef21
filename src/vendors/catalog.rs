//! Provider ids by kind, and the vendors that have an adapter: their public endpoint and the
//! header that carries a caller's own key. `default` is always the embedded engine; the other
//! ids are real vendors' lowercase, hyphenated names (the spec's tts-vendor-N and llm-vendor-N).

/// Speech synthesis: `default` plus twelve vendors.
pub const TTS_PROVIDERS: &[&str] = &[
    "default",
    "elevenlabs",
    "cartesia",
    "deepgram",
    "openai",
    "playht",
    "rime",
    "lmnt",
    "azure",
    "google",
    "huggingface",
    "kokoro",
    "neuphonic",
];

/// Speech recognition.
pub const STT_PROVIDERS: &[&str] = &[
    "default",
    "openai",
    "deepgram",
    "assemblyai",
    "elevenlabs",
    "groq",
    "azure",
];

/// Language models.
pub const LLM_PROVIDERS: &[&str] = &["default", "openai", "anthropic", "google", "groq"];

pub const DEFAULT_PROVIDER: &str = "default";

/// What an engine does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tts,
    Stt,
    Llm,
}

impl Kind {
    pub fn known_ids(self) -> &'static [&'static str] {
        match self {
            Kind::Tts => TTS_PROVIDERS,
            Kind::Stt => STT_PROVIDERS,
            Kind::Llm => LLM_PROVIDERS,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tts => "tts",
            Kind::Stt => "stt",
            Kind::Llm => "llm",
        }
    }
}

/// A vendor this server has adapters for.
#[derive(Debug, Clone, Copy)]
pub struct Vendor {
    pub id: &'static str,
    /// The header a caller's own key comes in (matched case-insensitively).
    pub key_header: &'static str,
    /// The vendor's public API base, used unless `[vendors.<id>] base_url` says otherwise.
    pub base_url: &'static str,
    pub kinds: &'static [Kind],
    /// Self-hosted (an engine on the operator's own servers): usable without any key, the
    /// default base URL is the engine's usual local address.
    pub self_hosted: bool,
}

impl Vendor {
    pub fn does(&self, kind: Kind) -> bool {
        self.kinds.contains(&kind)
    }
}

pub const VENDORS: &[Vendor] = &[
    Vendor {
        id: "openai",
        key_header: "X-Provider-Key-OpenAI",
        base_url: "https://api.openai.com/v1",
        kinds: &[Kind::Tts, Kind::Stt, Kind::Llm],
        self_hosted: false,
    },
    Vendor {
        id: "anthropic",
        key_header: "X-Provider-Key-Anthropic",
        base_url: "https://api.anthropic.com",
        kinds: &[Kind::Llm],
        self_hosted: false,
    },
    Vendor {
        id: "deepgram",
        key_header: "X-Provider-Key-Deepgram",
        base_url: "https://api.deepgram.com",
        kinds: &[Kind::Tts, Kind::Stt],
        self_hosted: false,
    },
    Vendor {
        id: "elevenlabs",
        key_header: "X-Provider-Key-ElevenLabs",
        base_url: "https://api.elevenlabs.io",
        kinds: &[Kind::Tts],
        self_hosted: false,
    },
    Vendor {
        id: "cartesia",
        key_header: "X-Provider-Key-Cartesia",
        base_url: "https://api.cartesia.ai",
        kinds: &[Kind::Tts],
        self_hosted: false,
    },
    Vendor {
        id: "google",
        key_header: "X-Provider-Key-Google",
        base_url: "https://generativelanguage.googleapis.com",
        kinds: &[Kind::Llm],
        self_hosted: false,
    },
    Vendor {
        id: "groq",
        key_header: "X-Provider-Key-Groq",
        base_url: "https://api.groq.com/openai/v1",
        kinds: &[Kind::Stt, Kind::Llm],
        self_hosted: false,
    },
    Vendor {
        id: "kokoro",
        key_header: "X-Provider-Key-Kokoro",
        base_url: "http://127.0.0.1:8880/v1",
        kinds: &[Kind::Tts],
        self_hosted: true,
    },
];

/// The vendor with this id, if it has adapters here.
pub fn vendor(id: &str) -> Option<&'static Vendor> {
    VENDORS.iter().find(|vendor| vendor.id == id)
}

/// Whether `id` names a vendor whose keys can be stored (it has at least one adapter).
pub fn accepts_keys(id: &str) -> bool {
    vendor(id).is_some()
}
