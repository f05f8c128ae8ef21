//! Transcription of a whole audio file: decode any container with every channel kept,
//! resample to 16 kHz, find the voices among the channels (`super::channels`), recognise each
//! voice on the engine (once when the channels carry one voice), and label speakers when
//! asked.

use std::sync::Arc;

use futures_util::future::try_join_all;
use switchboard_actors::engine::{
    EngineError, SpeechToText, TranscribeOptions, Transcript, STT_SAMPLE_RATE,
};

use super::{channels, diarize, SpeechError};
use crate::media::{decode_to, resample, DecodeTarget, DecodedAudio};

/// What the caller asked for beyond the engine's own options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscriptionRequest {
    pub options: TranscribeOptions,
    pub diarize: bool,
}

/// How every transcription decodes: 16 kHz, each channel kept, so the voices can be found.
pub const TRANSCRIPTION_TARGET: DecodeTarget = DecodeTarget {
    sample_rate: Some(STT_SAMPLE_RATE),
    split_channels: true,
};

/// Decodes `audio` (an uploaded or fetched file; `extension` from its name helps the probe)
/// and transcribes it.
pub async fn transcribe_file(
    engine: Arc<dyn SpeechToText>,
    audio: Vec<u8>,
    extension: Option<String>,
    request: TranscriptionRequest,
) -> Result<Transcript, SpeechError> {
    let decoded = decode_file(audio, extension).await?;
    transcribe_decoded(engine, decoded, request).await
}

/// Decodes `audio` as [`transcribe_file`] does, for a caller that must know the file is
/// audio before it starts answering (a streamed transcription).
pub async fn decode_file(
    audio: Vec<u8>,
    extension: Option<String>,
) -> Result<DecodedAudio, SpeechError> {
    Ok(blocking(move || decode_to(&audio, extension.as_deref(), TRANSCRIPTION_TARGET)).await??)
}

/// A recording ready for the recogniser: one 16 kHz track per voice.
pub struct Voices {
    tracks: Vec<Vec<f32>>,
    duration: f32,
}

impl Voices {
    /// How many voices, so how many recognitions: 1 for mono and for channels that carry
    /// the same voice.
    pub fn count(&self) -> usize {
        self.tracks.len()
    }
}

/// Finds the voices among decoded channels (off the async workers): channels of one voice
/// are mixed into one track, channels of different voices are kept apart, silent channels
/// of a recording with several voices are dropped.
pub async fn find_voices(decoded: DecodedAudio) -> Result<Voices, EngineError> {
    blocking(move || {
        let duration = decoded.duration_seconds();
        let rate = decoded.sample_rate;
        let groups = channels::voices(&decoded.channels, rate);
        let mut channels: Vec<Option<Vec<f32>>> = decoded.channels.into_iter().map(Some).collect();
        let tracks = groups
            .into_iter()
            .map(|group| {
                let mut kept = group.iter().filter_map(|&i| channels[i].take());
                let first = kept.next().unwrap_or_default();
                let mixed = mix(first, kept, group.len());
                at_rate(mixed, rate, STT_SAMPLE_RATE)
            })
            .collect();
        Voices { tracks, duration }
    })
    .await
}

/// `first` and the `rest` of one voice's channels (`count` in all) averaged, in place.
fn mix(mut first: Vec<f32>, rest: impl Iterator<Item = Vec<f32>>, count: usize) -> Vec<f32> {
    if count < 2 {
        return first;
    }
    for channel in rest {
        for (sum, sample) in first.iter_mut().zip(channel) {
            *sum += sample;
        }
    }
    let scale = 1.0 / count as f32;
    for sample in &mut first {
        *sample *= scale;
    }
    first
}

/// Transcribes already decoded audio: finds its voices and recognises them.
pub async fn transcribe_decoded(
    engine: Arc<dyn SpeechToText>,
    decoded: DecodedAudio,
    request: TranscriptionRequest,
) -> Result<Transcript, SpeechError> {
    let voices = find_voices(decoded).await?;
    transcribe_voices(engine, voices, request).await
}

/// Recognises each voice (at the same time: two voices cost two recognitions) and merges
/// them, or recognises the one voice and, when diarizing, tells its speakers apart by pitch.
pub async fn transcribe_voices(
    engine: Arc<dyn SpeechToText>,
    voices: Voices,
    request: TranscriptionRequest,
) -> Result<Transcript, SpeechError> {
    let Voices {
        mut tracks,
        duration,
    } = voices;
    if tracks.len() > 1 {
        // Each track moved into the engine's shared form one after the other, so at most one
        // is held twice.
        let tracks: Vec<Arc<[f32]>> = tracks.into_iter().map(Arc::from).collect();
        let recognitions = tracks.into_iter().map(|track| {
            let engine = engine.clone();
            let options = request.options.clone();
            async move { engine.transcribe(track, options).await }
        });
        let per_voice = try_join_all(recognitions).await?;
        return Ok(diarize::merge_voices(per_voice, duration, request.diarize));
    }
    let samples: Arc<[f32]> = Arc::from(tracks.pop().unwrap_or_default());
    let mut transcript = engine
        .transcribe(samples.clone(), request.options.clone())
        .await?;
    transcript.duration = duration;
    if request.diarize {
        transcript = blocking(move || {
            diarize::label_by_pitch(&mut transcript, &samples, STT_SAMPLE_RATE);
            transcript
        })
        .await?;
    }
    Ok(transcript)
}

/// `samples` at `to` Hz, moved rather than copied when already there.
fn at_rate(samples: Vec<f32>, from: u32, to: u32) -> Vec<f32> {
    if from == to {
        samples
    } else {
        resample(&samples, from, to)
    }
}

/// Runs CPU work (decoding, resampling, pitch analysis) off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, EngineError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| EngineError::internal("audio processing failed unexpectedly"))
}

/// The transcription result as the API shows it (`POST /v1/transcribe`, completed jobs).
/// Times are seconds, rounded to milliseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct TranscriptionBody {
    pub text: String,
    pub segments: Vec<SegmentBody>,
    /// Present when `timestamps` was `word`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<WordBody>>,
    /// ISO 639-1 code of the language spoken (detected unless given).
    pub language: String,
    /// How sure the recognizer was of `language` (0-1) when it detected it; absent when the
    /// language was given or the engine does not say.
    #[serde(
        default,
        rename = "languageProbability",
        skip_serializing_if = "Option::is_none"
    )]
    pub language_probability: Option<f64>,
    /// Seconds of audio.
    pub duration: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct SegmentBody {
    pub start: f64,
    pub end: f64,
    pub text: String,
    /// `speaker_1`, `speaker_2`, ... when `diarize` was true; always present, `null` without
    /// diarization.
    #[serde(default)]
    pub speaker: Option<String>,
    /// Set on a segment whose language differs from the transcript's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct WordBody {
    pub start: f64,
    pub end: f64,
    pub word: String,
}

fn seconds(value: f32) -> f64 {
    (f64::from(value) * 1000.0).round() / 1000.0
}

impl TranscriptionBody {
    pub fn new(transcript: Transcript, words: bool) -> Self {
        TranscriptionBody {
            text: transcript.text.trim().to_string(),
            segments: transcript
                .segments
                .into_iter()
                .map(|s| SegmentBody {
                    start: seconds(s.start),
                    end: seconds(s.end),
                    text: s.text.trim().to_string(),
                    speaker: s.speaker,
                    language: s.language,
                })
                .collect(),
            words: words.then(|| {
                transcript
                    .words
                    .into_iter()
                    .map(|w| WordBody {
                        start: seconds(w.start),
                        end: seconds(w.end),
                        word: w.word.trim().to_string(),
                    })
                    .collect()
            }),
            language: transcript.language,
            language_probability: transcript
                .language_probability
                .map(|p| (f64::from(p) * 1000.0).round() / 1000.0),
            duration: seconds(transcript.duration),
        }
    }
}
