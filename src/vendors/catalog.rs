//! Provider ids by kind, and the vendors that have an adapter: their public endpoint and the
//! header that carries a caller's own key. `default` is always the embedded engine; the other
//! ids are real vendors' lowercase, hyphenated names (the spec's tts-vendor-N and llm-vendor-N).

/// Speech synthesis: `default` plus thirteen vendors (the spec's twelve, and Inworld).
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
    "inworld",
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
    /// The vendor's second host, for vendors whose APIs live apart (empty when none), used
    /// unless `[vendors.<id>] alt_base_url` says otherwise: Google Cloud Text-to-Speech,
    /// Azure's recognition host, AssemblyAI's streaming host, the Hugging Face Hub.
    pub alt_base_url: &'static str,
    pub kinds: &'static [Kind],
    /// The kinds whose results stream as the vendor produces them (the others answer whole).
    pub streams: &'static [Kind],
    /// What its speech is asked for on phone calls (empty when it does no synthesis).
    pub phone_format: &'static str,
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
        alt_base_url: "",
        kinds: &[Kind::Tts, Kind::Stt, Kind::Llm],
        streams: &[Kind::Tts, Kind::Llm],
        phone_format: "PCM16 24 kHz, resampled to 8 kHz",
        self_hosted: false,
    },
    Vendor {
        id: "anthropic",
        key_header: "X-Provider-Key-Anthropic",
        base_url: "https://api.anthropic.com",
        alt_base_url: "",
        kinds: &[Kind::Llm],
        streams: &[Kind::Llm],
        phone_format: "",
        self_hosted: false,
    },
    Vendor {
        id: "deepgram",
        key_header: "X-Provider-Key-Deepgram",
        base_url: "https://api.deepgram.com",
        alt_base_url: "",
        kinds: &[Kind::Tts, Kind::Stt],
        streams: &[Kind::Tts, Kind::Stt],
        phone_format: "µ-law 8 kHz",
        self_hosted: false,
    },
    Vendor {
        id: "elevenlabs",
        key_header: "X-Provider-Key-ElevenLabs",
        base_url: "https://api.elevenlabs.io",
        alt_base_url: "",
        kinds: &[Kind::Tts, Kind::Stt],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (ulaw_8000)",
        self_hosted: false,
    },
    Vendor {
        id: "cartesia",
        key_header: "X-Provider-Key-Cartesia",
        base_url: "https://api.cartesia.ai",
        alt_base_url: "",
        kinds: &[Kind::Tts],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (pcm_mulaw)",
        self_hosted: false,
    },
    Vendor {
        id: "google",
        key_header: "X-Provider-Key-Google",
        base_url: "https://generativelanguage.googleapis.com",
        alt_base_url: "https://texttospeech.googleapis.com",
        kinds: &[Kind::Tts, Kind::Llm],
        streams: &[Kind::Llm],
        phone_format: "MULAW 8 kHz",
        self_hosted: false,
    },
    Vendor {
        id: "groq",
        key_header: "X-Provider-Key-Groq",
        base_url: "https://api.groq.com/openai/v1",
        alt_base_url: "",
        kinds: &[Kind::Stt, Kind::Llm],
        streams: &[Kind::Llm],
        phone_format: "",
        self_hosted: false,
    },
    Vendor {
        id: "kokoro",
        key_header: "X-Provider-Key-Kokoro",
        base_url: "http://127.0.0.1:8880/v1",
        alt_base_url: "",
        kinds: &[Kind::Tts],
        streams: &[Kind::Tts],
        phone_format: "PCM16 24 kHz, resampled to 8 kHz",
        self_hosted: true,
    },
    Vendor {
        id: "assemblyai",
        key_header: "X-Provider-Key-AssemblyAI",
        base_url: "https://api.assemblyai.com",
        alt_base_url: "https://streaming.assemblyai.com",
        kinds: &[Kind::Stt],
        streams: &[Kind::Stt],
        phone_format: "",
        self_hosted: false,
    },
    Vendor {
        id: "azure",
        key_header: "X-Provider-Key-Azure",
        base_url: "https://eastus.tts.speech.microsoft.com",
        alt_base_url: "https://eastus.stt.speech.microsoft.com",
        kinds: &[Kind::Tts, Kind::Stt],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (raw-8khz-8bit-mono-mulaw)",
        self_hosted: false,
    },
    Vendor {
        id: "playht",
        key_header: "X-Provider-Key-PlayHT",
        base_url: "https://api.play.ht/api/v2",
        alt_base_url: "",
        kinds: &[Kind::Tts],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (mulaw)",
        self_hosted: false,
    },
    Vendor {
        id: "rime",
        key_header: "X-Provider-Key-Rime",
        base_url: "https://users.rime.ai",
        alt_base_url: "",
        kinds: &[Kind::Tts],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (audio/x-mulaw)",
        self_hosted: false,
    },
    Vendor {
        id: "lmnt",
        key_header: "X-Provider-Key-LMNT",
        base_url: "https://api.lmnt.com",
        alt_base_url: "",
        kinds: &[Kind::Tts],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (ulaw)",
        self_hosted: false,
    },
    Vendor {
        id: "huggingface",
        key_header: "X-Provider-Key-HuggingFace",
        base_url: "https://router.huggingface.co",
        alt_base_url: "https://huggingface.co",
        kinds: &[Kind::Tts],
        streams: &[],
        phone_format: "the model's own rate, resampled to 8 kHz",
        self_hosted: false,
    },
    Vendor {
        id: "neuphonic",
        key_header: "X-Provider-Key-Neuphonic",
        base_url: "https://api.neuphonic.com",
        alt_base_url: "",
        kinds: &[Kind::Tts],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (pcm_mulaw)",
        self_hosted: false,
    },
    Vendor {
        id: "inworld",
        key_header: "X-Provider-Key-Inworld",
        base_url: "https://api.inworld.ai",
        alt_base_url: "",
        kinds: &[Kind::Tts],
        streams: &[Kind::Tts],
        phone_format: "µ-law 8 kHz (MULAW)",
        self_hosted: false,
    },
];

/// The vendor with this id, if it has adapters here.
pub fn vendor(id: &str) -> Option<&'static Vendor> {
    VENDORS.iter().find(|vendor| vendor.id == id)
}

/// Whether recognition by `provider` streams the whole call (the live recognisers, Deepgram
/// and AssemblyAI) rather than going utterance by utterance.
pub fn streams_live(provider: &str) -> bool {
    vendor(provider).is_some_and(|vendor| vendor.streams.contains(&Kind::Stt))
}

/// Whether `id` names a vendor whose keys can be stored (it has at least one adapter).
pub fn accepts_keys(id: &str) -> bool {
    vendor(id).is_some()
}
