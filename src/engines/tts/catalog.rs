//! The voice catalog: the Piper voices found in the models directory and the eSpeak NG
//! voices installed on the system.
//!
//! Every `<name>.onnx` with a `<name>.onnx.json` beside it in `models/voices/` is a neural
//! voice with id `<name>` (`en_US-joe-medium`); a `<name>.MODEL_CARD` beside them gives its
//! license. The directory is scanned again whenever it changes, so a voice dropped in is
//! listed without a restart. Every eSpeak NG voice is listed as `espeak-<voice>`, named after
//! its voice file (`espeak-en-us`, `espeak-de`, `espeak-fr`); `espeak-<language>` also finds
//! the best eSpeak voice for any language code eSpeak knows (`espeak-zh`, `espeak-pt-pt`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use serde::Serialize;
use switchboard_actors::engine::EngineError;

use super::espeak::Espeak;
use super::piper::PiperConfig;

/// The voice id every provider has: the Piper joe voice here, or its eSpeak fallback.
pub const DEFAULT_VOICE: &str = "default";
/// The neural voice `default` stands for.
pub const DEFAULT_NEURAL_VOICE: &str = "en_US-joe-medium";
/// The prefix of eSpeak voice ids.
pub const ESPEAK_PREFIX: &str = "espeak-";
/// The voices' folder inside the models directory.
pub const VOICES_DIR: &str = "voices";
/// The license of every eSpeak NG voice (the library and its data).
pub const ESPEAK_LICENSE: &str = "GPL-3.0-or-later";

/// What synthesizes a voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VoiceKind {
    /// A Piper VITS model run with ONNX Runtime.
    Neural,
    /// eSpeak NG's formant synthesizer.
    Espeak,
}

/// One voice as listed to clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceInfo {
    /// The id to ask for (`default`, `en_US-joe-medium`, `espeak-de`).
    pub id: String,
    /// A human name.
    pub name: String,
    /// BCP 47 language tag (`en-US`, `de`).
    pub language: String,
    pub kind: VoiceKind,
    /// The sample rate of the audio the voice produces, in Hz.
    pub sample_rate: u32,
    /// Piper's quality tier (`medium`), for neural voices.
    pub quality: Option<String>,
    /// The license's short name (`CC0`, `GPL-3.0-or-later`), when known.
    pub license: Option<String>,
    /// The full model card or license text, when there is one.
    pub license_text: Option<String>,
    /// For `default`: the voice that actually speaks (the neural voice, or its eSpeak
    /// fallback when the model or ONNX Runtime is missing).
    pub served_by: Option<String>,
}

/// A Piper voice found in the voices folder.
#[derive(Debug)]
pub struct NeuralEntry {
    pub id: String,
    pub model: PathBuf,
    pub config_path: PathBuf,
    /// The parsed configuration, or why it cannot be used.
    pub config: Result<Arc<PiperConfig>, EngineError>,
    /// The MODEL_CARD text, when present.
    pub model_card: Option<String>,
    /// The license named in the model card.
    pub license: Option<String>,
    /// When the configuration file was last changed, as read.
    config_modified: Option<SystemTime>,
}

fn modified_time(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl NeuralEntry {
    fn read(id: &str, model: &Path, config_path: &Path) -> Self {
        let card_path = model.with_file_name(format!("{id}.MODEL_CARD"));
        let model_card = std::fs::read_to_string(&card_path).ok();
        let license = model_card.as_deref().and_then(license_from_card);
        NeuralEntry {
            id: id.to_owned(),
            model: model.to_path_buf(),
            config_path: config_path.to_path_buf(),
            config: PiperConfig::load(config_path).map(Arc::new),
            model_card,
            license,
            config_modified: modified_time(config_path),
        }
    }

    /// The voice as listed to clients (`None` when its configuration is unusable).
    pub fn info(&self) -> Option<VoiceInfo> {
        let config = self.config.as_ref().ok()?;
        let name = match (&config.dataset, &config.language_name) {
            (Some(dataset), Some(language)) => format!("{dataset} ({language}, Piper)"),
            (Some(dataset), None) => format!("{dataset} (Piper)"),
            _ => self.id.clone(),
        };
        Some(VoiceInfo {
            id: self.id.clone(),
            name,
            language: config.language_tag().unwrap_or_default(),
            kind: VoiceKind::Neural,
            sample_rate: config.sample_rate,
            quality: config.quality.clone(),
            license: self.license.clone(),
            license_text: self.model_card.clone(),
            served_by: None,
        })
    }
}

/// The license named in a Piper model card: the first `License:` line.
pub fn license_from_card(card: &str) -> Option<String> {
    card.lines().find_map(|line| {
        let line = line.trim().trim_start_matches(['*', '-', ' ']);
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        (key.trim().eq_ignore_ascii_case("license") && !value.is_empty()).then(|| value.to_owned())
    })
}

/// An installed eSpeak NG voice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EspeakEntry {
    /// `espeak-` and the voice file's name in lower case (`espeak-en-us`).
    pub id: String,
    /// The voice file eSpeak loads (`gmw/en-US`).
    pub identifier: String,
    pub name: String,
    /// The main language (`en-us`).
    pub language: String,
    /// Every language the voice speaks, with eSpeak's priority (lower is better).
    pub languages: Vec<(u8, String)>,
}

impl EspeakEntry {
    /// The voice as listed to clients.
    pub fn info(&self, sample_rate: u32) -> VoiceInfo {
        VoiceInfo {
            id: self.id.clone(),
            name: format!("{} (eSpeak NG)", self.name),
            language: self.language.clone(),
            kind: VoiceKind::Espeak,
            sample_rate,
            quality: None,
            license: Some(ESPEAK_LICENSE.to_owned()),
            license_text: None,
            served_by: None,
        }
    }
}

/// The installed eSpeak voices and the library's facts.
#[derive(Debug)]
pub struct EspeakCatalog {
    pub voices: Vec<EspeakEntry>,
    pub sample_rate: u32,
    pub version: String,
}

#[derive(Default)]
struct NeuralScan {
    scanned: Option<SystemTime>,
    entries: BTreeMap<String, Arc<NeuralEntry>>,
}

/// The catalog of voices. Cheap to query; rescans the voices folder only when it changed.
pub struct Catalog {
    voices_dir: PathBuf,
    neural: Mutex<NeuralScan>,
    espeak: OnceLock<Result<Arc<EspeakCatalog>, EngineError>>,
}

impl Catalog {
    /// A catalog over `models_dir/voices`.
    pub fn new(models_dir: &Path) -> Self {
        Self {
            voices_dir: models_dir.join(VOICES_DIR),
            neural: Mutex::new(NeuralScan::default()),
            espeak: OnceLock::new(),
        }
    }

    /// The voices folder.
    pub fn voices_dir(&self) -> &Path {
        &self.voices_dir
    }

    /// The neural voices, sorted by id.
    pub fn neural(&self) -> Vec<Arc<NeuralEntry>> {
        let mut scan = self.neural.lock().unwrap_or_else(|p| p.into_inner());
        let modified = modified_time(&self.voices_dir);
        if modified.is_none() || scan.scanned != modified {
            scan.entries = scan_voices(&self.voices_dir, &scan.entries);
            scan.scanned = modified;
        }
        scan.entries.values().cloned().collect()
    }

    /// One neural voice by id.
    pub fn neural_voice(&self, id: &str) -> Option<Arc<NeuralEntry>> {
        self.neural().into_iter().find(|entry| entry.id == id)
    }

    /// The eSpeak voices (listed once: installed voices do not change while running).
    pub fn espeak(&self) -> Result<Arc<EspeakCatalog>, EngineError> {
        self.espeak
            .get_or_init(|| {
                let mut espeak = Espeak::lock()?;
                let mut voices: Vec<EspeakEntry> = espeak
                    .voices()
                    .into_iter()
                    .filter_map(|voice| {
                        let file = voice.identifier.rsplit('/').next()?.to_lowercase();
                        let language = voice.languages.first()?.1.clone();
                        Some(EspeakEntry {
                            id: format!("{ESPEAK_PREFIX}{file}"),
                            identifier: voice.identifier,
                            name: voice.name,
                            language,
                            languages: voice.languages,
                        })
                    })
                    .collect();
                voices.sort_by(|a, b| a.id.cmp(&b.id));
                voices.dedup_by(|a, b| a.id == b.id);
                Ok(Arc::new(EspeakCatalog {
                    voices,
                    sample_rate: espeak.sample_rate(),
                    version: espeak.version(),
                }))
            })
            .clone()
    }

    /// An eSpeak voice by id: the voice file's name, or else any language code eSpeak knows.
    pub fn espeak_voice(&self, id: &str) -> Option<EspeakEntry> {
        let wanted = id.strip_prefix(ESPEAK_PREFIX)?.to_lowercase();
        let catalog = self.espeak().ok()?;
        if let Some(voice) = catalog
            .voices
            .iter()
            .find(|v| v.id[ESPEAK_PREFIX.len()..] == wanted)
        {
            return Some(voice.clone());
        }
        best_for_language(&catalog.voices, &wanted)
    }

    /// The eSpeak voice that best speaks `language` (`de`, `en-US`, `pt_BR`), falling back
    /// from a regional tag to its base language.
    pub fn espeak_for_language(&self, language: &str) -> Option<EspeakEntry> {
        let catalog = self.espeak().ok()?;
        let wanted = normalise_language(language);
        best_for_language(&catalog.voices, &wanted).or_else(|| {
            let base = wanted.split('-').next()?;
            best_for_language(&catalog.voices, base)
        })
    }
}

/// Lower case with `-` separators: `en_US` -> `en-us`.
pub fn normalise_language(language: &str) -> String {
    language.trim().replace('_', "-").to_lowercase()
}

fn best_for_language(voices: &[EspeakEntry], language: &str) -> Option<EspeakEntry> {
    voices
        .iter()
        .filter_map(|voice| {
            voice
                .languages
                .iter()
                .filter(|(_, l)| l.eq_ignore_ascii_case(language))
                .map(|(priority, _)| *priority)
                .min()
                .map(|priority| (priority, voice))
        })
        .min_by_key(|(priority, voice)| (*priority, voice.id.len()))
        .map(|(_, voice)| voice.clone())
}

/// Reads the voices folder, reusing entries whose files did not change.
fn scan_voices(
    dir: &Path,
    previous: &BTreeMap<String, Arc<NeuralEntry>>,
) -> BTreeMap<String, Arc<NeuralEntry>> {
    let mut entries = BTreeMap::new();
    let Ok(listing) = std::fs::read_dir(dir) else {
        return entries;
    };
    for file in listing.flatten() {
        let model = file.path();
        if model.extension().and_then(|e| e.to_str()) != Some("onnx") {
            continue;
        }
        let Some(id) = model
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_owned)
        else {
            continue;
        };
        let config_path = model.with_file_name(format!("{id}.onnx.json"));
        if !config_path.is_file() {
            continue;
        }
        let modified = modified_time(&config_path);
        let unchanged = previous
            .get(&id)
            .filter(|entry| entry.config.is_ok() && entry.config_modified == modified);
        let entry = match unchanged {
            Some(entry) => Arc::clone(entry),
            None => Arc::new(NeuralEntry::read(&id, &model, &config_path)),
        };
        entries.insert(id, entry);
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_license_from_a_model_card() {
        let card =
            "# Model card for joe (medium)\n\n## Dataset\n\n* URL: https://x\n* License: CC0\n";
        assert_eq!(license_from_card(card).as_deref(), Some("CC0"));
        assert_eq!(license_from_card("# nothing here"), None);
    }

    #[test]
    fn lists_the_bundled_voice_with_its_license() {
        let catalog = Catalog::new(Path::new("models"));
        let joe = catalog
            .neural_voice(DEFAULT_NEURAL_VOICE)
            .expect("the joe voice; run scripts/fetch-models");
        let info = joe.info().unwrap();
        assert_eq!(info.language, "en-US");
        assert_eq!(info.sample_rate, 22_050);
        assert_eq!(info.quality.as_deref(), Some("medium"));
        assert_eq!(info.license.as_deref(), Some("CC0"));
        assert!(info.license_text.unwrap().contains("joe"));
    }

    #[test]
    fn finds_espeak_voices_by_file_and_by_language() {
        let catalog = Catalog::new(Path::new("models"));
        for id in ["espeak-en", "espeak-de", "espeak-fr", "espeak-en-us"] {
            assert!(catalog.espeak_voice(id).is_some(), "{id}");
        }
        assert_eq!(
            catalog.espeak_voice("espeak-en-us").unwrap().identifier,
            "gmw/en-US"
        );
        assert_eq!(
            catalog.espeak_voice("espeak-zh").unwrap().identifier,
            "sit/cmn"
        );
        assert_eq!(
            catalog.espeak_for_language("de_AT").unwrap().identifier,
            "gmw/de"
        );
        assert!(catalog.espeak_voice("espeak-xx-nowhere").is_none());
        assert!(catalog.espeak_voice("en").is_none());
    }
}
