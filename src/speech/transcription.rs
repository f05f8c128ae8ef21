//! Transcription of a whole audio file: decode any container, downmix or split channels,
//! resample to 16 kHz, recognise on the engine, and label speakers when asked.

use std::sync::Arc;

use futures_util::future::try_join_all;
use switchboard_actors::engine::{
    EngineError, SpeechToText, TranscribeOptions, Transcript, STT_SAMPLE_RATE,
};

use super::{diarize, SpeechError};
use crate::media::{decode_to, resample, DecodeTarget, DecodedAudio};

/// What the caller asked for beyond the engine's own options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscriptionRequest {
    pub options: TranscribeOptions,
    pub diarize: bool,
}

/// Decodes `audio` (an uploaded or fetched file; `extension` from its name helps the probe)
/// straight to the recogniser's rate, one channel, or one per channel when diarizing, and
/// transcribes it.
pub async fn transcribe_file(
    engine: Arc<dyn SpeechToText>,
    audio: Vec<u8>,
    extension: Option<String>,
    request: TranscriptionRequest,
) -> Result<Transcript, SpeechError> {
    let decoded = decode_file(audio, extension, request.diarize).await?;
    transcribe_decoded(engine, decoded, request).await
}

/// Decodes `audio` as [`transcribe_file`] does, for a caller that must know the file is
/// audio before it starts answering (a streamed transcription).
pub async fn decode_file(
    audio: Vec<u8>,
    extension: Option<String>,
    diarize: bool,
) -> Result<DecodedAudio, SpeechError> {
    let target = DecodeTarget {
        sample_rate: Some(STT_SAMPLE_RATE),
        split_channels: diarize,
    };
    Ok(blocking(move || decode_to(&audio, extension.as_deref(), target)).await??)
}

/// Transcribes already decoded audio.
pub async fn transcribe_decoded(
    engine: Arc<dyn SpeechToText>,
    decoded: DecodedAudio,
    request: TranscriptionRequest,
) -> Result<Transcript, SpeechError> {
    let duration = decoded.duration_seconds();
    // The channels are compared where they are, not copied: they may be most of the
    // decoded-audio budget.
    let (decoded, by_channel) = if request.diarize && decoded.channels.len() > 1 {
        blocking(move || {
            let differ = diarize::channels_differ(&decoded.channels);
            (decoded, differ)
        })
        .await?
    } else {
        (decoded, false)
    };
    if by_channel {
        let rate = decoded.sample_rate;
        let recognitions = decoded.channels.into_iter().map(|channel| {
            let engine = engine.clone();
            let options = request.options.clone();
            async move {
                let samples = blocking(move || at_rate(channel, rate, STT_SAMPLE_RATE)).await?;
                engine.transcribe(Arc::from(samples), options).await
            }
        });
        let per_channel = try_join_all(recognitions).await?;
        return Ok(diarize::merge_channels(per_channel, duration));
    }

    let samples: Arc<[f32]> = Arc::from(
        blocking(move || {
            let rate = decoded.sample_rate;
            let mono = if decoded.channels.len() == 1 {
                decoded.channels.into_iter().next().unwrap_or_default()
            } else {
                decoded.mono()
            };
            at_rate(mono, rate, STT_SAMPLE_RATE)
        })
        .await?,
    );
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
