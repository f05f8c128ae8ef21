//! A Piper neural voice: its configuration (`<voice>.onnx.json`) and its VITS model run with
//! ONNX Runtime.
//!
//! The model takes `input` (int64 [1, n] phoneme ids), `input_lengths` (int64 [1]), `scales`
//! (f32 [3]: noise scale, length scale, noise width) and, for multi-speaker voices, `sid`
//! (int64 [1]); it returns float audio at the voice's sample rate. One ONNX Runtime session
//! per voice is loaded once and shared; `ort` runs a session through `&mut`, so concurrent
//! syntheses on one voice take turns sentence by sentence. Each session uses one intra-op
//! thread, so a synthesis occupies one core, the core of the pool worker running it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use ort::session::Session;
use ort::value::Tensor;
use serde::Deserialize;
use switchboard_actors::engine::EngineError;

use super::phonemes::{PhonemeIdMap, PhonemeType, Phonemizer};
use super::runtime;

/// The speeds accepted; anything outside is clamped.
pub const SPEED_RANGE: (f32, f32) = (0.5, 2.0);

/// A voice's configuration, read from its `.onnx.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct PiperConfig {
    /// Audio sample rate in Hz.
    pub sample_rate: u32,
    /// `x_low`, `low`, `medium` or `high`, when stated.
    pub quality: Option<String>,
    /// The language code as Piper writes it (`en_US`), when stated.
    pub language: Option<String>,
    /// The language's English name (`English`), when stated.
    pub language_name: Option<String>,
    /// The dataset the voice was trained on (`joe`), when stated.
    pub dataset: Option<String>,
    /// Noise added to the prior (variation in delivery).
    pub noise_scale: f32,
    /// Phoneme duration multiplier (larger is slower).
    pub length_scale: f32,
    /// Noise added to the duration predictor (variation in timing).
    pub noise_w: f32,
    /// Number of speakers; more than one means the model takes `sid`.
    pub num_speakers: u32,
    /// Speaker names to ids, for multi-speaker voices.
    pub speaker_id_map: HashMap<String, i64>,
    /// How text becomes phoneme ids.
    pub phonemizer: Phonemizer,
}

#[derive(Deserialize)]
struct RawConfig {
    audio: RawAudio,
    #[serde(default)]
    espeak: Option<RawEspeak>,
    #[serde(default)]
    inference: Option<RawInference>,
    #[serde(default)]
    phoneme_type: Option<String>,
    #[serde(default)]
    phoneme_map: HashMap<String, Vec<String>>,
    phoneme_id_map: HashMap<String, Vec<i64>>,
    #[serde(default)]
    num_speakers: Option<u32>,
    #[serde(default)]
    speaker_id_map: HashMap<String, i64>,
    #[serde(default)]
    language: Option<RawLanguage>,
    #[serde(default)]
    dataset: Option<String>,
}

#[derive(Deserialize)]
struct RawAudio {
    sample_rate: u32,
    #[serde(default)]
    quality: Option<String>,
}

#[derive(Deserialize)]
struct RawEspeak {
    voice: String,
}

#[derive(Deserialize)]
struct RawInference {
    #[serde(default)]
    noise_scale: Option<f32>,
    #[serde(default)]
    length_scale: Option<f32>,
    #[serde(default)]
    noise_w: Option<f32>,
}

#[derive(Deserialize)]
struct RawLanguage {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    name_english: Option<String>,
}

impl PiperConfig {
    /// Parses a voice configuration. `origin` names it in error messages.
    pub fn parse(json: &str, origin: &str) -> Result<Self, EngineError> {
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let raw: RawConfig = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            EngineError::internal(format!("the voice configuration {origin} is invalid: {e}"))
        })?;
        if !(8_000..=192_000).contains(&raw.audio.sample_rate) {
            return Err(EngineError::internal(format!(
                "the voice configuration {origin} has an unusable sample rate {}",
                raw.audio.sample_rate
            )));
        }
        let kind = match raw.phoneme_type.as_deref().unwrap_or("espeak") {
            "espeak" => PhonemeType::Espeak {
                voice: raw
                    .espeak
                    .map(|e| e.voice)
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| {
                        EngineError::internal(format!(
                            "the voice configuration {origin} names no eSpeak voice"
                        ))
                    })?,
            },
            "text" => PhonemeType::Text,
            other => {
                return Err(EngineError::internal(format!(
                    "the voice configuration {origin} uses phoneme type `{other}`, which this \
                     engine does not support (espeak and text are)"
                )))
            }
        };
        let id_map = PhonemeIdMap::new(raw.phoneme_id_map)
            .map_err(|e| EngineError::internal(format!("{origin}: {}", e.message)))?;
        let inference = raw.inference.unwrap_or(RawInference {
            noise_scale: None,
            length_scale: None,
            noise_w: None,
        });
        let positive = |value: Option<f32>, default: f32| {
            value
                .filter(|v| v.is_finite() && *v >= 0.0)
                .unwrap_or(default)
        };
        let language = raw.language.unwrap_or(RawLanguage {
            code: None,
            name_english: None,
        });
        Ok(Self {
            sample_rate: raw.audio.sample_rate,
            quality: raw.audio.quality,
            language: language.code,
            language_name: language.name_english,
            dataset: raw.dataset,
            noise_scale: positive(inference.noise_scale, 0.667),
            length_scale: positive(inference.length_scale, 1.0).max(0.05),
            noise_w: positive(inference.noise_w, 0.8),
            num_speakers: raw.num_speakers.unwrap_or(1).max(1),
            speaker_id_map: raw.speaker_id_map,
            phonemizer: Phonemizer {
                kind,
                phoneme_map: raw.phoneme_map,
                id_map,
            },
        })
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let json = std::fs::read_to_string(path).map_err(|e| {
            EngineError::unavailable(format!(
                "the voice configuration {} cannot be read ({e}); run scripts/fetch-models",
                path.display()
            ))
        })?;
        Self::parse(&json, &path.display().to_string())
    }

    /// The BCP 47 form of the language (`en-US`), when stated.
    pub fn language_tag(&self) -> Option<String> {
        self.language.as_ref().map(|code| code.replace('_', "-"))
    }
}

/// A loaded Piper voice, shareable between threads.
pub struct PiperVoice {
    pub config: PiperConfig,
    /// The model file it was loaded from.
    pub model: PathBuf,
    session: Mutex<Session>,
    output: String,
    multi_speaker: bool,
}

impl PiperVoice {
    /// Loads the model with ONNX Runtime from `library`, one intra-op thread per run.
    pub fn load(
        model: &Path,
        config: PiperConfig,
        library: &Path,
        intra_threads: usize,
    ) -> Result<Self, EngineError> {
        if !model.is_file() {
            return Err(EngineError::unavailable(format!(
                "the voice model {} is missing; run scripts/fetch-models",
                model.display()
            )));
        }
        let started = Instant::now();
        let failed = |e: String| {
            EngineError::internal(format!(
                "the voice model {} cannot be loaded: {e}",
                model.display()
            ))
        };
        let session = runtime::cpu_session(library, model, intra_threads, failed)?;
        let inputs: Vec<String> = session
            .inputs()
            .iter()
            .map(|i| i.name().to_owned())
            .collect();
        for needed in ["input", "input_lengths", "scales"] {
            if !inputs.iter().any(|name| name == needed) {
                return Err(failed(format!(
                    "it has no `{needed}` input (inputs: {inputs:?})"
                )));
            }
        }
        let multi_speaker = inputs.iter().any(|name| name == "sid");
        let output = session
            .outputs()
            .first()
            .map(|o| o.name().to_owned())
            .ok_or_else(|| failed("it has no output".into()))?;
        tracing::info!(
            model = %model.display(),
            millis = started.elapsed().as_millis() as u64,
            "loaded a Piper voice"
        );
        Ok(Self {
            config,
            model: model.to_path_buf(),
            session: Mutex::new(session),
            output,
            multi_speaker,
        })
    }

    /// The audio's sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.config.sample_rate
    }

    /// The phoneme ids of `text` for this voice.
    pub fn phoneme_ids(&self, text: &str) -> Result<Vec<i64>, EngineError> {
        self.config.phonemizer.phoneme_ids(text)
    }

    /// Synthesizes one sentence: phonemes, then the model. `speed` (0.5-2.0) divides the
    /// length scale.
    pub fn synthesize(&self, text: &str, speed: f32) -> Result<Vec<f32>, EngineError> {
        let ids = self.phoneme_ids(text)?;
        self.infer(&ids, speed, None)
    }

    /// Runs the model on phoneme ids. `speaker` is used by multi-speaker voices only
    /// (speaker 0 when not given).
    pub fn infer(
        &self,
        ids: &[i64],
        speed: f32,
        speaker: Option<i64>,
    ) -> Result<Vec<f32>, EngineError> {
        // BOS, pad and EOS alone: there is nothing to say.
        if ids.len() <= 3 {
            return Ok(Vec::new());
        }
        let speed = if speed.is_finite() {
            speed.clamp(SPEED_RANGE.0, SPEED_RANGE.1)
        } else {
            1.0
        };
        let failed =
            |e: ort::Error| EngineError::internal(format!("the voice model failed to run: {e}"));
        let length = ids.len();
        let input = Tensor::from_array(([1usize, length], ids.to_vec())).map_err(failed)?;
        let lengths = Tensor::from_array(([1usize], vec![length as i64])).map_err(failed)?;
        let scales = Tensor::from_array((
            [3usize],
            vec![
                self.config.noise_scale,
                self.config.length_scale / speed,
                self.config.noise_w,
            ],
        ))
        .map_err(failed)?;
        let mut inputs = ort::inputs![
            "input" => input,
            "input_lengths" => lengths,
            "scales" => scales,
        ];
        if self.multi_speaker {
            let sid = Tensor::from_array(([1usize], vec![speaker.unwrap_or(0)])).map_err(failed)?;
            inputs.push(("sid".into(), sid.into()));
        }
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let outputs = session.run(inputs).map_err(failed)?;
        let audio = outputs
            .get(&self.output)
            .ok_or_else(|| EngineError::internal("the voice model returned no audio"))?;
        let (_, samples) = audio.try_extract_tensor::<f32>().map_err(failed)?;
        Ok(samples
            .iter()
            .map(|s| {
                if s.is_finite() {
                    s.clamp(-1.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_minimal_configuration_with_defaults() {
        let json = r#"{
            "audio": {"sample_rate": 16000},
            "espeak": {"voice": "de"},
            "phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [3]}
        }"#;
        let config = PiperConfig::parse(json, "test").unwrap();
        assert_eq!(config.sample_rate, 16_000);
        assert_eq!(config.noise_scale, 0.667);
        assert_eq!(config.length_scale, 1.0);
        assert_eq!(config.num_speakers, 1);
        assert_eq!(
            config.phonemizer.kind,
            PhonemeType::Espeak { voice: "de".into() }
        );
    }

    #[test]
    fn broken_configurations_are_refused_with_the_reason() {
        let missing_ids = r#"{"audio": {"sample_rate": 22050}, "espeak": {"voice": "en-us"}}"#;
        let error = PiperConfig::parse(missing_ids, "x.onnx.json").unwrap_err();
        assert!(
            error.message.contains("phoneme_id_map"),
            "{}",
            error.message
        );
        let bad_type = r#"{"audio": {"sample_rate": 22050}, "phoneme_type": "pinyin",
            "phoneme_id_map": {"_": [0], "^": [1], "$": [2]}}"#;
        let error = PiperConfig::parse(bad_type, "x.onnx.json").unwrap_err();
        assert!(error.message.contains("pinyin"), "{}", error.message);
        assert!(PiperConfig::parse("not json", "x").is_err());
    }
}
