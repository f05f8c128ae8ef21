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

    /// A vendor's public API at `base_url`, with a caller's key in `key_header`: one host, no
    /// kinds and no phone format until they are given.
    const fn hosted(id: &'static str, key_header: &'static str, base_url: &'static str) -> Vendor {
        Vendor {
            id,
            key_header,
            base_url,
            alt_base_url: "",
            kinds: &[],
            streams: &[],
            phone_format: "",
            self_hosted: false,
        }
    }

    /// The kinds it does, and those of them that stream.
    const fn kinds(self, kinds: &'static [Kind], streams: &'static [Kind]) -> Vendor {
        Vendor {
            kinds,
            streams,
            ..self
        }
    }

    /// What its speech is asked for on phone calls.
    const fn phone_format(self, phone_format: &'static str) -> Vendor {
        Vendor {
            phone_format,
            ..self
        }
    }

    /// Its second host (`alt_base_url`).
    const fn alt_host(self, alt_base_url: &'static str) -> Vendor {
        Vendor {
            alt_base_url,
            ..self
        }
    }

    /// Run on the operator's own servers: usable without a key.
    const fn self_hosted(self) -> Vendor {
        Vendor {
            self_hosted: true,
            ..self
        }
    }
}

pub const VENDORS: &[Vendor] = &[
    Vendor::hosted(
        "openai",
        "X-Provider-Key-OpenAI",
        "https://api.openai.com/v1",
    )
    .kinds(&[Kind::Tts, Kind::Stt, Kind::Llm], &[Kind::Tts, Kind::Llm])
    .phone_format("PCM16 24 kHz, resampled to 8 kHz"),
    Vendor::hosted(
        "anthropic",
        "X-Provider-Key-Anthropic",
        "https://api.anthropic.com",
    )
    .kinds(&[Kind::Llm], &[Kind::Llm]),
    Vendor::hosted(
        "deepgram",
        "X-Provider-Key-Deepgram",
        "https://api.deepgram.com",
    )
    .kinds(&[Kind::Tts, Kind::Stt], &[Kind::Tts, Kind::Stt])
    .phone_format("µ-law 8 kHz"),
    Vendor::hosted(
        "elevenlabs",
        "X-Provider-Key-ElevenLabs",
        "https://api.elevenlabs.io",
    )
    .kinds(&[Kind::Tts, Kind::Stt], &[Kind::Tts])
    .phone_format("µ-law 8 kHz (ulaw_8000)"),
    Vendor::hosted(
        "cartesia",
        "X-Provider-Key-Cartesia",
        "https://api.cartesia.ai",
    )
    .kinds(&[Kind::Tts], &[Kind::Tts])
    .phone_format("µ-law 8 kHz (pcm_mulaw)"),
    Vendor::hosted(
        "google",
        "X-Provider-Key-Google",
        "https://generativelanguage.googleapis.com",
    )
    .kinds(&[Kind::Tts, Kind::Llm], &[Kind::Llm])
    .phone_format("MULAW 8 kHz")
    .alt_host("https://texttospeech.googleapis.com"),
    Vendor::hosted(
        "groq",
        "X-Provider-Key-Groq",
        "https://api.groq.com/openai/v1",
    )
    .kinds(&[Kind::Stt, Kind::Llm], &[Kind::Llm]),
    Vendor::hosted(
        "kokoro",
        "X-Provider-Key-Kokoro",
        "http://127.0.0.1:8880/v1",
    )
    .kinds(&[Kind::Tts], &[Kind::Tts])
    .phone_format("PCM16 24 kHz, resampled to 8 kHz")
    .self_hosted(),
    Vendor::hosted(
        "assemblyai",
        "X-Provider-Key-AssemblyAI",
        "https://api.assemblyai.com",
    )
    .kinds(&[Kind::Stt], &[Kind::Stt])
    .alt_host("https://streaming.assemblyai.com"),
    Vendor::hosted(
        "azure",
        "X-Provider-Key-Azure",
        "https://eastus.tts.speech.microsoft.com",
    )
    .kinds(&[Kind::Tts, Kind::Stt], &[Kind::Tts])
    .phone_format("µ-law 8 kHz (raw-8khz-8bit-mono-mulaw)")
    .alt_host("https://eastus.stt.speech.microsoft.com"),
    Vendor::hosted(
        "playht",
        "X-Provider-Key-PlayHT",
        "https://api.play.ht/api/v2",
    )
    .kinds(&[Kind::Tts], &[Kind::Tts])
    .phone_format("µ-law 8 kHz (mulaw)"),
    Vendor::hosted("rime", "X-Provider-Key-Rime", "https://users.rime.ai")
        .kinds(&[Kind::Tts], &[Kind::Tts])
        .phone_format("µ-law 8 kHz (audio/x-mulaw)"),
    Vendor::hosted("lmnt", "X-Provider-Key-LMNT", "https://api.lmnt.com")
        .kinds(&[Kind::Tts], &[Kind::Tts])
        .phone_format("µ-law 8 kHz (ulaw)"),
    Vendor::hosted(
        "huggingface",
        "X-Provider-Key-HuggingFace",
        "https://router.huggingface.co",
    )
    .kinds(&[Kind::Tts], &[])
    .phone_format("the model's own rate, resampled to 8 kHz")
    .alt_host("https://huggingface.co"),
    Vendor::hosted(
        "neuphonic",
        "X-Provider-Key-Neuphonic",
        "https://api.neuphonic.com",
    )
    .kinds(&[Kind::Tts], &[Kind::Tts])
    .phone_format("µ-law 8 kHz (pcm_mulaw)"),
    Vendor::hosted(
        "inworld",
        "X-Provider-Key-Inworld",
        "https://api.inworld.ai",
    )
    .kinds(&[Kind::Tts], &[Kind::Tts])
    .phone_format("µ-law 8 kHz (MULAW)"),
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
