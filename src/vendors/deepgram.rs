//! Deepgram: pre-recorded transcription (`POST /v1/listen`), live transcription over a
//! WebSocket with interim results and endpointing (what a call uses when its agent's
//! `sttProvider` is `deepgram`), and Aura speech (`POST /v1/speak`, µ-law 8 kHz for phone
//! calls). Wire format: reference/protocols.md §7.2-7.3;
//! https://developers.deepgram.com/reference/speech-to-text-api/listen and
//! https://developers.deepgram.com/docs/understand-endpointing-interim-results.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_actors::engine::{
    EngineError, EngineStream, SpeechChunk, SpeechRequest, SttEvent, SttInput, TextToSpeech,
    TranscribeOptions, Transcript, TranscriptSegment, TranscriptWord, STT_SAMPLE_RATE,
};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::audio::{clip_recognizer, Clip, RawAudioChunker, RawEncoding};
use super::http::{trimmed_str, Endpoint};
use super::socket::{control, LiveProtocol, LiveRequest};

const DEFAULT_STT_MODEL: &str = "nova-3";
const DEFAULT_VOICE: &str = "aura-2-thalia-en";
/// Silence Deepgram waits for before it marks `speech_final`.
const ENDPOINTING_MS: u32 = 300;
/// Deepgram closes a live stream after 10 s without data.
const KEEPALIVE_EVERY: Duration = Duration::from_secs(5);

pub struct DeepgramListen {
    pub endpoint: Endpoint,
}

impl DeepgramListen {
    fn model(&self) -> String {
        self.endpoint.stt_model_or(DEFAULT_STT_MODEL)
    }
}

clip_recognizer!(DeepgramListen, listen, {
    /// Deepgram takes linear16 at any rate: a phone line's 8 kHz goes as it is (its own advice
    /// for Twilio audio), never upsampled.
    fn live_rate(&self, caller_rate: u32) -> u32 {
        caller_rate.min(STT_SAMPLE_RATE)
    }

    fn stream(
        self: Arc<Self>,
        options: TranscribeOptions,
    ) -> Result<(mpsc::Sender<SttInput>, EngineStream<SttEvent>), EngineError> {
        let request = live_request(&self.endpoint, &self.model(), &options);
        Ok(super::socket::spawn_live(
            self.endpoint.clone(),
            options,
            request,
            LiveUtterance::default(),
        ))
    }
});

/// One clip through pre-recorded transcription (`POST /v1/listen`).
async fn listen(
    endpoint: Endpoint,
    clip: Clip,
    options: TranscribeOptions,
) -> Result<Transcript, EngineError> {
    let model = endpoint.stt_model_or(DEFAULT_STT_MODEL);
    let wav = clip.wav();
    let mut query = vec![
        ("model", model),
        ("punctuate", "true".to_string()),
        ("smart_format", "true".to_string()),
    ];
    match &options.language {
        Some(language) => query.push(("language", language.clone())),
        None => query.push(("detect_language", "true".to_string())),
    }
    let url = endpoint.url("/v1/listen");
    let json = endpoint
        .fetch_json(|| {
            endpoint
                .authorize(endpoint.client.post(&url))
                .query(&query)
                .header("Content-Type", "audio/wav")
                .body(wav.clone())
        })
        .await?;
    Ok(transcript_from_listen(&json, &options, clip.seconds()))
}

/// Our transcript from a pre-recorded answer: `results.channels[0].alternatives[0]`.
pub fn transcript_from_listen(
    json: &Value,
    options: &TranscribeOptions,
    clip_seconds: f32,
) -> Transcript {
    let channel = json.pointer("/results/channels/0").unwrap_or(&Value::Null);
    let best = channel.pointer("/alternatives/0").unwrap_or(&Value::Null);
    let text = trimmed_str(best, "transcript");
    let words = words_of(best);
    let duration = json
        .pointer("/metadata/duration")
        .and_then(Value::as_f64)
        .map_or(clip_seconds, |d| d as f32);
    let detected = channel
        .get("detected_language")
        .and_then(Value::as_str)
        .and_then(crate::speech::languages::language_code);
    file_transcript(text, words, duration, detected, options)
}

/// A file transcript from the vendor's text and words: segments by sentence and pause, the
/// words when they were asked for, and the language the vendor `detected` (ISO 639-1), else
/// the one asked for, else English.
pub(super) fn file_transcript(
    text: String,
    words: Vec<TranscriptWord>,
    duration: f32,
    detected: Option<&str>,
    options: &TranscribeOptions,
) -> Transcript {
    let language = detected
        .map(str::to_string)
        .or_else(|| options.language.clone())
        .unwrap_or_else(|| "en".to_string());
    Transcript {
        segments: segments_of(&text, &words, duration),
        words: if options.word_timestamps {
            words
        } else {
            Vec::new()
        },
        text,
        language,
        language_probability: None,
        duration,
    }
}

fn words_of(alternative: &Value) -> Vec<TranscriptWord> {
    alternative
        .get("words")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|word| TranscriptWord {
            start: word.get("start").and_then(Value::as_f64).unwrap_or(0.0) as f32,
            end: word.get("end").and_then(Value::as_f64).unwrap_or(0.0) as f32,
            word: word
                .get("punctuated_word")
                .or_else(|| word.get("word"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect()
}

/// Segments from words: a new one after sentence-ending punctuation or a pause over 1 s.
pub(super) fn segments_of(
    text: &str,
    words: &[TranscriptWord],
    duration: f32,
) -> Vec<TranscriptSegment> {
    if words.is_empty() {
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![TranscriptSegment {
                start: 0.0,
                end: duration,
                text: text.to_string(),
                speaker: None,
                language: None,
            }]
        };
    }
    let mut segments: Vec<TranscriptSegment> = Vec::new();
    let mut open = false;
    for (i, word) in words.iter().enumerate() {
        let pause = i > 0 && word.start - words[i - 1].end > 1.0;
        match segments.last_mut() {
            Some(segment) if open && !pause => {
                segment.text.push(' ');
                segment.text.push_str(&word.word);
                segment.end = word.end;
            }
            _ => segments.push(new_segment(word)),
        }
        open = !word.word.ends_with(['.', '?', '!']);
    }
    segments
}

fn new_segment(word: &TranscriptWord) -> TranscriptSegment {
    TranscriptSegment {
        start: word.start,
        end: word.end,
        text: word.word.clone(),
        speaker: None,
        language: None,
    }
}

/// What opens one live recognition: audio in as linear16 binary frames at the stream's input rate (16 kHz,
/// or a phone line's 8 kHz); `Results` out. Interim hypotheses become partials; finalized
/// pieces are gathered until Deepgram marks the end of speech (`speech_final`, `UtteranceEnd`)
/// or answers our `Finalize` (sent when the session's own endpointing ends the utterance
/// first).
fn live_request(endpoint: &Endpoint, model: &str, options: &TranscribeOptions) -> LiveRequest {
    let url = super::socket::ws_url(endpoint, &endpoint.url("/v1/listen")).map(|mut url| {
        url.query_pairs_mut()
            .append_pair("model", model)
            .append_pair("encoding", "linear16")
            .append_pair("sample_rate", &options.input_rate().to_string())
            .append_pair("channels", "1")
            .append_pair("interim_results", "true")
            .append_pair("punctuate", "true")
            .append_pair("endpointing", &ENDPOINTING_MS.to_string())
            .append_pair("utterance_end_ms", "1000")
            .append_pair("vad_events", "true");
        if let Some(language) = &options.language {
            url.query_pairs_mut().append_pair("language", language);
        }
        url
    });
    LiveRequest {
        url,
        header: "Authorization",
        value: format!("Token {}", endpoint.key),
    }
}

/// Finalized pieces of the utterance in progress.
#[derive(Debug, Default)]
struct LiveUtterance {
    text: Vec<String>,
    words: Vec<TranscriptWord>,
    start: Option<f32>,
    end: f32,
}

impl LiveUtterance {
    /// Interim hypotheses become partials; finalized pieces are gathered. The utterance ends
    /// when Deepgram answers our `Finalize` (`from_finalize`): the session's own endpointing
    /// decides turns, so Deepgram's `speech_final` and `UtteranceEnd` only tell us that the
    /// pieces so far are settled.
    fn on_message(&mut self, json: &Value, options: &TranscribeOptions) -> Vec<SttEvent> {
        if json.get("type").and_then(Value::as_str) != Some("Results") {
            return Vec::new();
        }
        let best = json
            .pointer("/channel/alternatives/0")
            .unwrap_or(&Value::Null);
        let transcript = trimmed_str(best, "transcript");
        let flag = |name: &str| json.get(name).and_then(Value::as_bool).unwrap_or(false);
        if !flag("is_final") {
            return super::socket::partial(&self.text, transcript);
        }
        if !transcript.is_empty() {
            let start = json.get("start").and_then(Value::as_f64).unwrap_or(0.0) as f32;
            let duration = json.get("duration").and_then(Value::as_f64).unwrap_or(0.0) as f32;
            self.start.get_or_insert(start);
            self.end = start + duration;
            self.text.push(transcript);
            self.words.extend(words_of(best));
        }
        if flag("from_finalize") {
            vec![self.finish(options)]
        } else {
            Vec::new()
        }
    }

    /// The utterance so far as a final transcript (empty when nothing was recognised, so the
    /// session's turn ends either way), and a fresh start.
    fn finish(&mut self, options: &TranscribeOptions) -> SttEvent {
        let text = std::mem::take(&mut self.text).join(" ");
        let words = std::mem::take(&mut self.words);
        let start = self.start.take().unwrap_or(0.0);
        let duration = (self.end - start).max(0.0);
        super::socket::live_final(text, words, duration, options)
    }
}

impl LiveProtocol for LiveUtterance {
    fn keepalive(&self) -> Option<(Duration, Message)> {
        Some((KEEPALIVE_EVERY, control("KeepAlive")))
    }

    fn audio(&mut self, samples: &[i16]) -> Option<Vec<u8>> {
        Some(super::socket::pcm16_bytes(samples).collect())
    }

    fn end_utterance(&mut self) -> Vec<Message> {
        vec![control("Finalize")]
    }

    fn terminate(&self) -> Message {
        control("CloseStream")
    }

    fn on_text(
        &mut self,
        json: &Value,
        _text: &str,
        options: &TranscribeOptions,
    ) -> Result<Vec<SttEvent>, String> {
        Ok(self.on_message(json, options))
    }

    fn timed_out(&mut self, options: &TranscribeOptions) -> SttEvent {
        self.finish(options)
    }

    fn closed(frame: Option<CloseFrame>) -> String {
        let reason = frame.map(|f| f.reason.to_string()).unwrap_or_default();
        if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        }
    }
}

pub struct DeepgramSpeak {
    pub endpoint: Endpoint,
}

impl TextToSpeech for DeepgramSpeak {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        // Aura's model names the voice (`aura-2-thalia-en`): a voice id wins over a model.
        let model = if request.voice == "default" || request.voice.is_empty() {
            endpoint.tts_model(&request.model, &endpoint.voice("default", DEFAULT_VOICE))
        } else {
            request.voice.clone()
        };
        let (encoding, wire, rate) = match request.output_rate {
            Some(8_000) => (RawEncoding::Mulaw, "mulaw", 8_000),
            Some(rate @ (16_000 | 48_000)) => (RawEncoding::Pcm16, "linear16", rate),
            _ => (RawEncoding::Pcm16, "linear16", 24_000),
        };
        let query = vec![
            ("model", model),
            ("encoding", wire.to_string()),
            ("sample_rate", rate.to_string()),
            ("container", "none".to_string()),
        ];
        let body = json!({"text": request.text});
        let url = endpoint.url("/v1/speak");
        let build = {
            let endpoint = endpoint.clone();
            move || {
                endpoint
                    .authorize(endpoint.client.post(&url))
                    .query(&query)
                    .json(&body)
            }
        };
        Ok(super::speech::spawn_raw_speech(
            endpoint,
            build,
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

/// The cheapest authenticated call: the key's projects.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/v1/projects").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_results_become_partials_then_one_final() {
        let options = TranscribeOptions::default();
        let mut utterance = LiveUtterance::default();
        let result = |text: &str, is_final: bool, from_finalize: bool, start: f64| {
            json!({"type": "Results", "start": start, "duration": 1.0, "is_final": is_final,
                   "speech_final": is_final, "from_finalize": from_finalize,
                   "channel": {"alternatives": [{"transcript": text, "words": []}]}})
        };
        assert_eq!(
            utterance.on_message(&result("hello", false, false, 0.0), &options),
            vec![SttEvent::Partial("hello".into())]
        );
        // Settled by Deepgram's own endpointing, but the turn is the session's to end.
        assert!(utterance
            .on_message(&result("hello there", true, false, 0.0), &options)
            .is_empty());
        assert_eq!(
            utterance.on_message(&result("general", false, false, 1.0), &options),
            vec![SttEvent::Partial("hello there general".into())]
        );
        let events = utterance.on_message(&result("general kenobi", true, true, 1.0), &options);
        let [SttEvent::Final(transcript)] = events.as_slice() else {
            panic!("one final expected, got {events:?}");
        };
        assert_eq!(transcript.text, "hello there general kenobi");
        assert!((transcript.duration - 2.0).abs() < 1e-6);
        // Nothing heard: the answer to Finalize is an empty final, so the turn still ends.
        let events = utterance.on_message(&result("", true, true, 3.0), &options);
        assert!(matches!(events.as_slice(), [SttEvent::Final(t)] if t.text.is_empty()));
        assert!(utterance
            .on_message(
                &json!({"type": "UtteranceEnd", "last_word_end": 2.0}),
                &options
            )
            .is_empty());
    }
}
