//! AssemblyAI speech to text. Files: the audio is uploaded (`POST /v2/upload`), a transcript
//! is asked for (`POST /v2/transcript`) and polled (`GET /v2/transcript/{id}`) until it is
//! `completed` or `error`. Sessions: Universal-Streaming over a WebSocket
//! (`wss://streaming.assemblyai.com/v3/ws`, `alt_base_url`), 16 kHz PCM16 in pieces of at
//! least 50 ms, `Turn` messages out; the session's own end of utterance sends
//! `ForceEndpoint`, and the formatted end-of-turn answer is the final transcript. The key
//! goes bare in `Authorization`. Followed:
//! https://www.assemblyai.com/docs/api-reference/transcripts/submit,
//! https://www.assemblyai.com/docs/api-reference/files/upload and
//! https://www.assemblyai.com/docs/api-reference/streaming-api/streaming-api (v3 messages).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_actors::engine::{
    EngineError, EngineErrorKind, EngineStream, SttEvent, SttInput, TranscribeOptions, Transcript,
    TranscriptWord, STT_SAMPLE_RATE,
};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::audio::{clip_recognizer, Clip};
use super::http::{trimmed_str, Endpoint};
use super::socket::{control, LiveProtocol, LiveRequest};
use crate::speech::languages::language_code;

/// First pause between two polls of a transcript; it doubles up to `POLL_MAX`.
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_secs(1);
/// How long a file transcript may take beyond the clip's own length.
const TRANSCRIPT_GRACE: Duration = Duration::from_secs(60);
/// The shortest piece of audio the streaming API takes, in ms.
const MIN_PIECE_MS: usize = 50;

pub struct AssemblyAiTranscription {
    pub endpoint: Endpoint,
}

clip_recognizer!(AssemblyAiTranscription, transcribe_file, {
    /// Universal-Streaming takes PCM at the rate it is told: a phone line's 8 kHz goes as it
    /// is, never upsampled.
    fn live_rate(&self, caller_rate: u32) -> u32 {
        caller_rate.min(STT_SAMPLE_RATE)
    }

    fn stream(
        self: Arc<Self>,
        options: TranscribeOptions,
    ) -> Result<(mpsc::Sender<SttInput>, EngineStream<SttEvent>), EngineError> {
        let request = live_request(&self.endpoint, &options);
        let live = Live::new(&options);
        Ok(super::socket::spawn_live(
            self.endpoint.clone(),
            options,
            request,
            live,
        ))
    }
});

/// One clip: uploaded, asked for, and polled until it is done.
async fn transcribe_file(
    endpoint: Endpoint,
    clip: Clip,
    options: TranscribeOptions,
) -> Result<Transcript, EngineError> {
    let clip_seconds = clip.seconds();
    let wav = clip.wav();
    let upload_url = endpoint.url("/v2/upload");
    let uploaded = endpoint
        .fetch_json(|| {
            endpoint
                .authorize(endpoint.client.post(&upload_url))
                .header("Content-Type", "application/octet-stream")
                .body(wav.clone())
        })
        .await?;
    let audio_url = uploaded
        .get("upload_url")
        .and_then(Value::as_str)
        .ok_or_else(|| upstream(&endpoint, "answered the upload without an upload_url"))?;
    let mut body = json!({"audio_url": audio_url, "punctuate": true, "format_text": true});
    match &options.language {
        Some(language) => body["language_code"] = json!(language),
        None => body["language_detection"] = json!(true),
    }
    if let Some(model) = &endpoint.stt_model {
        body["speech_model"] = json!(model);
    }
    let submit = endpoint.post_json("/v2/transcript", body);
    let submitted = endpoint.fetch_json(submit).await?;
    let id = submitted
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| upstream(&endpoint, "answered the request without a transcript id"))?
        .to_string();
    let deadline = TRANSCRIPT_GRACE + Duration::from_secs_f32(clip_seconds * 2.0);
    let done = tokio::time::timeout(deadline, poll(&endpoint, &id, submitted))
        .await
        .map_err(|_| {
            endpoint.error(
                EngineErrorKind::Timeout,
                format!(
                    "transcript {id} was not done within {} s",
                    deadline.as_secs()
                ),
            )
        })??;
    Ok(transcript_from_file(&done, &options, clip_seconds))
}

/// An upstream error naming the vendor.
fn upstream(endpoint: &Endpoint, message: &str) -> EngineError {
    endpoint.error(EngineErrorKind::Upstream, message)
}

/// Polls the transcript until it is `completed` (answered) or `error` (the vendor's reason).
async fn poll(endpoint: &Endpoint, id: &str, mut latest: Value) -> Result<Value, EngineError> {
    let url = endpoint.url(&format!(
        "/v2/transcript/{}",
        url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
    ));
    let mut pause = POLL_FIRST;
    loop {
        match latest.get("status").and_then(Value::as_str) {
            Some("completed") => return Ok(latest),
            Some("error") => {
                let reason = latest
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                // A file it cannot read is what was sent; anything else is its failure.
                let kind = if reason.contains("does not appear to contain audio") {
                    EngineErrorKind::InvalidInput
                } else {
                    EngineErrorKind::Upstream
                };
                return Err(endpoint.error(kind, format!("transcription failed: {reason}")));
            }
            _ => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(POLL_MAX);
        latest = endpoint
            .fetch_json(|| endpoint.authorize(endpoint.client.get(&url)))
            .await?;
    }
}

fn words_of(words: Option<&Value>) -> Vec<TranscriptWord> {
    words
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|word| TranscriptWord {
            // Milliseconds.
            start: word.get("start").and_then(Value::as_f64).unwrap_or(0.0) as f32 / 1000.0,
            end: word.get("end").and_then(Value::as_f64).unwrap_or(0.0) as f32 / 1000.0,
            word: word
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect()
}

/// Our transcript from a completed file transcript.
pub fn transcript_from_file(
    json: &Value,
    options: &TranscribeOptions,
    clip_seconds: f32,
) -> Transcript {
    let text = trimmed_str(json, "text");
    let words = words_of(json.get("words"));
    let duration = json
        .get("audio_duration")
        .and_then(Value::as_f64)
        .map_or(clip_seconds, |d| d as f32);
    let detected = json
        .get("language_code")
        .and_then(Value::as_str)
        .and_then(language_code);
    super::deepgram::file_transcript(text, words, duration, detected, options)
}

/// What opens one live recognition over Universal-Streaming.
fn live_request(endpoint: &Endpoint, options: &TranscribeOptions) -> LiveRequest {
    let url = super::socket::ws_url(endpoint, &endpoint.alt_url("/v3/ws")).map(|mut url| {
        url.query_pairs_mut()
            .append_pair("sample_rate", &options.input_rate().to_string())
            .append_pair("encoding", "pcm_s16le")
            .append_pair("format_turns", "true");
        if let Some(model) = &endpoint.stt_model {
            url.query_pairs_mut().append_pair("speech_model", model);
        } else if options.language.as_deref().is_some_and(|l| l != "en") {
            url.query_pairs_mut()
                .append_pair("speech_model", "universal-streaming-multilingual");
        }
        url
    });
    LiveRequest {
        url,
        header: "Authorization",
        value: endpoint.key.clone(),
    }
}

/// One live recognition: the turns, and the audio gathered into pieces the streaming API
/// takes.
#[derive(Debug)]
struct Live {
    turns: LiveTurns,
    /// Bytes of 16-bit samples in the shortest piece, at the stream's rate.
    min_piece: usize,
    piece: Vec<u8>,
}

impl Live {
    fn new(options: &TranscribeOptions) -> Live {
        let min_piece = options.input_rate() as usize * MIN_PIECE_MS / 1_000 * 2;
        Live {
            turns: LiveTurns::default(),
            min_piece,
            piece: Vec::with_capacity(min_piece * 2),
        }
    }
}

impl LiveProtocol for Live {
    fn keepalive(&self) -> Option<(Duration, Message)> {
        None
    }

    fn audio(&mut self, samples: &[i16]) -> Option<Vec<u8>> {
        self.piece.extend(super::socket::pcm16_bytes(samples));
        (self.piece.len() >= self.min_piece).then(|| std::mem::take(&mut self.piece))
    }

    fn end_utterance(&mut self) -> Vec<Message> {
        let mut messages = Vec::with_capacity(2);
        if !self.piece.is_empty() {
            messages.push(Message::binary(std::mem::take(&mut self.piece)));
        }
        messages.push(control("ForceEndpoint"));
        self.turns.awaiting = true;
        messages
    }

    fn terminate(&self) -> Message {
        control("Terminate")
    }

    fn on_text(
        &mut self,
        json: &Value,
        text: &str,
        options: &TranscribeOptions,
    ) -> Result<Vec<SttEvent>, String> {
        if json.get("type").and_then(Value::as_str) == Some("Error") || json.get("error").is_some()
        {
            let detail = super::http::vendor_message(text.as_bytes()).unwrap_or_default();
            return Err(format!("reported an error: {detail}"));
        }
        Ok(self.turns.on_message(json, options))
    }

    fn timed_out(&mut self, options: &TranscribeOptions) -> SttEvent {
        self.turns.finish(options)
    }

    fn closed(frame: Option<CloseFrame>) -> String {
        frame
            .map(|f| format!(" ({}: {})", u16::from(f.code), f.reason))
            .unwrap_or_default()
    }
}

/// The turns of a live stream: hypotheses become partials; formatted end-of-turn transcripts
/// are gathered until the session ends the utterance (`awaiting`, after our
/// `ForceEndpoint`), then reported as one final.
#[derive(Debug, Default)]
struct LiveTurns {
    settled: Vec<String>,
    words: Vec<TranscriptWord>,
    awaiting: bool,
}

impl LiveTurns {
    fn on_message(&mut self, json: &Value, options: &TranscribeOptions) -> Vec<SttEvent> {
        if json.get("type").and_then(Value::as_str) != Some("Turn") {
            return Vec::new();
        }
        let transcript = trimmed_str(json, "transcript");
        let flag = |name: &str| json.get(name).and_then(Value::as_bool).unwrap_or(false);
        if !flag("end_of_turn") || !flag("turn_is_formatted") {
            // Unformatted text of a turn (still open, or ended and about to come formatted).
            return super::socket::partial(&self.settled, transcript);
        }
        if !transcript.is_empty() {
            self.settled.push(transcript);
            self.words.extend(words_of(json.get("words")));
        }
        if self.awaiting {
            vec![self.finish(options)]
        } else {
            Vec::new()
        }
    }

    /// What was settled as one final transcript (empty when nothing was heard, so the
    /// session's turn ends either way), and a fresh start.
    fn finish(&mut self, options: &TranscribeOptions) -> SttEvent {
        self.awaiting = false;
        let text = std::mem::take(&mut self.settled).join(" ");
        let words = std::mem::take(&mut self.words);
        let start = words.first().map_or(0.0, |w| w.start);
        let duration = words.last().map_or(0.0, |w| (w.end - start).max(0.0));
        super::socket::live_final(text, words, duration, options)
    }
}

/// The cheapest authenticated call: the latest transcript of the account.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/v2/transcript?limit=1").await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(text: &str, end: bool, formatted: bool) -> Value {
        json!({"type": "Turn", "turn_order": 0, "end_of_turn": end, "turn_is_formatted": formatted,
               "transcript": text, "end_of_turn_confidence": 0.5,
               "words": [{"start": 100, "end": 400, "text": text, "confidence": 0.9, "word_is_final": true}]})
    }

    #[test]
    fn turns_become_partials_then_one_final_when_the_session_ends_the_utterance() {
        let options = TranscribeOptions::default();
        let mut turns = LiveTurns::default();
        assert!(turns
            .on_message(&json!({"type": "Begin", "id": "s1"}), &options)
            .is_empty());
        assert_eq!(
            turns.on_message(&turn("hello", false, false), &options),
            vec![SttEvent::Partial("hello".into())]
        );
        // Its own end of turn settles the text; the session decides when the utterance ends.
        assert_eq!(
            turns.on_message(&turn("hello there", true, false), &options),
            vec![SttEvent::Partial("hello there".into())]
        );
        assert!(turns
            .on_message(&turn("Hello there.", true, true), &options)
            .is_empty());
        assert_eq!(
            turns.on_message(&turn("general", false, false), &options),
            vec![SttEvent::Partial("Hello there. general".into())]
        );
        turns.awaiting = true;
        let events = turns.on_message(&turn("General Kenobi.", true, true), &options);
        let [SttEvent::Final(transcript)] = events.as_slice() else {
            panic!("one final expected, got {events:?}");
        };
        assert_eq!(transcript.text, "Hello there. General Kenobi.");
        assert!(!turns.awaiting);
        // Nothing heard: the deadline reports an empty final.
        assert!(matches!(turns.finish(&options), SttEvent::Final(t) if t.text.is_empty()));
    }

    #[test]
    fn a_completed_file_transcript_keeps_words_in_seconds() {
        let options = TranscribeOptions {
            word_timestamps: true,
            ..TranscribeOptions::default()
        };
        let json = json!({"id": "t1", "status": "completed", "text": "Hi there. Bye.",
            "language_code": "en_us", "audio_duration": 2,
            "words": [{"text": "Hi", "start": 0, "end": 300}, {"text": "there.", "start": 350, "end": 700},
                      {"text": "Bye.", "start": 1200, "end": 1500}]});
        let transcript = transcript_from_file(&json, &options, 2.0);
        assert_eq!(transcript.language, "en");
        assert_eq!(transcript.segments.len(), 2);
        assert_eq!(transcript.words[1].word, "there.");
        assert!((transcript.words[2].start - 1.2).abs() < 1e-6);
    }
}
