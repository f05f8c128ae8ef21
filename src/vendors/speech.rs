//! Running a vendor's speech stream: sends the request and turns the audio in the answer into
//! speech chunks as it arrives, whatever the vendor wraps it in (raw bytes, base64 pieces in
//! server-sent events or in JSON lines, one JSON document, or a whole audio file).
//!
//! Dropping the receiver (a barge-in) stops delivery at once. A request whose answer has not
//! begun is dropped, which closes its connection. An answer already streaming is one
//! sentence, billed when it was asked for: the rest of it is read and thrown away, briefly and
//! in the background ([`BodyReader::drain`]), so the connection goes back to the pool instead
//! of costing the next reply a new TCP and TLS handshake.

use base64::Engine as _;
use serde_json::Value;
use switchboard_actors::engine::{EngineError, EngineErrorKind, EngineStream, SpeechChunk};
use tokio::sync::mpsc;

use super::audio::RawAudioChunker;
use super::http::{vendor_message, BodyReader, Endpoint, SseDecoder};

/// How a vendor's answer carries its audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// The body is the audio itself (headerless PCM16 or µ-law).
    Raw,
    /// Server-sent events whose JSON data holds base64 audio at this JSON pointer.
    SseBase64(&'static str),
    /// One JSON object a line, each holding base64 audio at this JSON pointer.
    NdjsonBase64(&'static str),
    /// One JSON document holding base64 audio at this JSON pointer (a vendor whose REST API
    /// does not stream).
    JsonBase64(&'static str),
    /// A whole audio file in any container we decode (WAV, FLAC, MP3, Ogg), for vendors that
    /// answer with a file; its own sample rate is kept.
    File,
}

/// Largest non-streaming answer read (a JSON document or an audio file).
const MAX_WHOLE_BODY: usize = 32 * 1024 * 1024;

pub fn spawn_raw_speech(
    endpoint: Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder + Send + Sync + 'static,
    chunker: RawAudioChunker,
) -> EngineStream<SpeechChunk> {
    spawn_speech(endpoint, build, Framing::Raw, chunker)
}

/// Sends the request made by `build` and streams the audio in its answer, framed as
/// `framing`, through `chunker`.
pub fn spawn_speech(
    endpoint: Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder + Send + Sync + 'static,
    framing: Framing,
    chunker: RawAudioChunker,
) -> EngineStream<SpeechChunk> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let rest = match run(&endpoint, build, framing, chunker, &tx).await {
            Ok(rest) => rest,
            Err(err) => {
                let _ = tx.send(Err(err)).await;
                None
            }
        };
        drop(tx);
        if let Some(body) = rest {
            body.drain().await;
        }
    });
    rx
}

/// Streams the answer's audio until it ends, or until the receiver goes away: then gives back
/// the body still to be read.
async fn run<'a>(
    endpoint: &'a Endpoint,
    build: impl Fn() -> reqwest::RequestBuilder,
    framing: Framing,
    mut chunker: RawAudioChunker,
    tx: &mpsc::Sender<Result<SpeechChunk, EngineError>>,
) -> Result<Option<BodyReader<'a>>, EngineError> {
    let response = tokio::select! {
        _ = tx.closed() => return Ok(None),
        response = endpoint.send(build) => response?,
    };
    if framing == Framing::File {
        tokio::select! {
            _ = tx.closed() => {}
            result = whole_file(endpoint, response, chunker, tx) => result?,
        }
        return Ok(None);
    }
    let mut body = endpoint.body(response);
    let mut unframer = Unframer::new(framing);
    let mut audio = Vec::new();
    let mut sent_any = false;
    loop {
        let more = tokio::select! {
            _ = tx.closed() => return Ok(Some(body)),
            more = body.next() => more?,
        };
        audio.clear();
        let result = match &more {
            Some(bytes) => unframer.push(bytes, &mut audio),
            None => unframer.finish(&mut audio),
        };
        result.map_err(|message| endpoint.error(EngineErrorKind::Upstream, message))?;
        if !audio.is_empty() {
            if let Some(chunk) = chunker.push(&audio) {
                sent_any = true;
                if tx.send(Ok(chunk)).await.is_err() {
                    return Ok(more.is_some().then_some(body));
                }
            }
        }
        if more.is_none() {
            break;
        }
    }
    match chunker.finish() {
        Some(chunk) => {
            let _ = tx.send(Ok(chunk)).await;
            Ok(None)
        }
        None if sent_any => Ok(None),
        None => Err(endpoint.error(EngineErrorKind::Upstream, "answered with no audio")),
    }
}

/// A vendor that answers with a whole audio file: read (bounded), decoded off the async
/// threads, and sent on in 100 ms chunks at the file's own rate.
async fn whole_file(
    endpoint: &Endpoint,
    response: reqwest::Response,
    chunker: RawAudioChunker,
    tx: &mpsc::Sender<Result<SpeechChunk, EngineError>>,
) -> Result<(), EngineError> {
    let mut body = endpoint.body(response);
    let mut file = Vec::new();
    while let Some(bytes) = body.next().await? {
        file.extend_from_slice(&bytes);
        if file.len() > MAX_WHOLE_BODY {
            return Err(endpoint.error(EngineErrorKind::Upstream, "answered with too large a file"));
        }
    }
    let target = crate::media::DecodeTarget {
        sample_rate: None,
        split_channels: false,
    };
    let decoded = tokio::task::spawn_blocking(move || crate::media::decode_to(&file, None, target))
        .await
        .map_err(|_| endpoint.error(EngineErrorKind::Internal, "decoding the audio failed"))?
        .map_err(|err| {
            endpoint.error(
                EngineErrorKind::Upstream,
                format!("answered with audio that does not decode: {err}"),
            )
        })?;
    let rate = decoded.sample_rate;
    let samples = decoded.mono();
    if samples.is_empty() {
        return Err(endpoint.error(EngineErrorKind::Upstream, "answered with no audio"));
    }
    let mut text = Some(chunker.into_text());
    for piece in samples.chunks((rate as usize / 10).max(1)) {
        let chunk = SpeechChunk {
            samples: piece.to_vec(),
            sample_rate: rate,
            text: text.take().unwrap_or_default(),
        };
        if tx.send(Ok(chunk)).await.is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// Takes a vendor's framing off its audio bytes, piece by piece.
struct Unframer {
    framing: Framing,
    sse: SseDecoder,
    /// An unfinished line (JSON lines) or the whole document (one JSON document).
    pending: Vec<u8>,
}

impl Unframer {
    fn new(framing: Framing) -> Self {
        Unframer {
            framing,
            sse: SseDecoder::default(),
            pending: Vec::new(),
        }
    }

    /// Appends the audio in `bytes` to `audio`; an error names what the vendor reported.
    fn push(&mut self, bytes: &[u8], audio: &mut Vec<u8>) -> Result<(), String> {
        match self.framing {
            Framing::Raw | Framing::File => audio.extend_from_slice(bytes),
            Framing::SseBase64(pointer) => {
                for event in self.sse.push(bytes) {
                    audio_in_json(event.data.as_bytes(), pointer, audio)?;
                }
            }
            Framing::NdjsonBase64(pointer) => {
                self.pending.extend_from_slice(bytes);
                while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = self.pending.drain(..=end).collect();
                    audio_in_json(&line, pointer, audio)?;
                }
            }
            Framing::JsonBase64(_) => {
                self.pending.extend_from_slice(bytes);
                if self.pending.len() > MAX_WHOLE_BODY {
                    return Err("answered with too large a body".into());
                }
            }
        }
        Ok(())
    }

    /// The audio left when the body ends.
    fn finish(&mut self, audio: &mut Vec<u8>) -> Result<(), String> {
        match self.framing {
            Framing::Raw | Framing::File => Ok(()),
            Framing::SseBase64(pointer) => match self.sse.finish() {
                Some(event) => audio_in_json(event.data.as_bytes(), pointer, audio),
                None => Ok(()),
            },
            Framing::NdjsonBase64(pointer) | Framing::JsonBase64(pointer) => {
                let rest = std::mem::take(&mut self.pending);
                audio_in_json(&rest, pointer, audio)
            }
        }
    }
}

/// The base64 audio at `pointer` in one JSON message, without a WAV header some vendors put
/// on every piece. Blank lines, `[DONE]` and messages without audio add nothing; a message
/// reporting an error (an `error` field, or a `status_code` of 400 or more) is that error.
fn audio_in_json(message: &[u8], pointer: &str, audio: &mut Vec<u8>) -> Result<(), String> {
    let text = String::from_utf8_lossy(message);
    let text = text.trim();
    if text.is_empty() || text == "[DONE]" {
        return Ok(());
    }
    let json: Value =
        serde_json::from_str(text).map_err(|_| "sent a message that is not JSON".to_string())?;
    let failed_status = json
        .get("status_code")
        .and_then(Value::as_u64)
        .is_some_and(|status| status >= 400);
    if json.get("error").is_some_and(|e| !e.is_null()) || failed_status {
        let detail = vendor_message(text.as_bytes()).unwrap_or_default();
        return Err(format!("reported an error in the stream: {detail}"));
    }
    let Some(encoded) = json.pointer(pointer).and_then(Value::as_str) else {
        return Ok(());
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| "sent audio that is not base64".to_string())?;
    audio.extend_from_slice(without_wav_header(&decoded));
    Ok(())
}

/// The samples of a RIFF WAVE file (what follows its `data` chunk header); anything else as
/// it is.
pub fn without_wav_header(bytes: &[u8]) -> &[u8] {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return bytes;
    }
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
            as usize;
        if id == b"data" {
            return &bytes[at + 8..];
        }
        at = at.saturating_add(8).saturating_add(size + (size & 1));
    }
    &[]
}

/// A BCP 47 locale for an ISO 639-1 language (`en` → `en-US`), as Azure and Google name
/// their voices and recognisers; a locale given whole is kept.
pub fn locale_of(language: &str) -> String {
    let language = language.trim();
    if language.contains('-') {
        return language.to_string();
    }
    let code = language.to_ascii_lowercase();
    let region = match code.as_str() {
        "en" => "US",
        "ja" => "JP",
        "zh" => "CN",
        "ko" => "KR",
        "hi" => "IN",
        "pt" => "BR",
        "sv" => "SE",
        "da" => "DK",
        "nb" | "no" => "NO",
        "cs" => "CZ",
        "el" => "GR",
        "uk" => "UA",
        "he" => "IL",
        "ar" => "SA",
        "vi" => "VN",
        "ms" => "MY",
        "fa" => "IR",
        "ca" => "ES",
        "sl" => "SI",
        "et" => "EE",
        _ => return format!("{code}-{}", code.to_ascii_uppercase()),
    };
    format!("{code}-{region}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lines_and_events_lose_their_framing_and_wav_headers() {
        let pcm: Vec<u8> = (0..64u8).collect();
        let mut wav = b"RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00".to_vec();
        wav.extend_from_slice(&[0u8; 16]);
        wav.extend_from_slice(b"data\x40\x00\x00\x00");
        wav.extend_from_slice(&pcm);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&wav);
        let line = format!("{{\"result\":{{\"audioContent\":\"{b64}\"}}}}\n");
        let mut lines = Unframer::new(Framing::NdjsonBase64("/result/audioContent"));
        let mut audio = Vec::new();
        let (a, b) = line.as_bytes().split_at(17);
        lines.push(a, &mut audio).unwrap();
        assert!(audio.is_empty());
        lines.push(b, &mut audio).unwrap();
        lines.push(line.as_bytes(), &mut audio).unwrap();
        lines.finish(&mut audio).unwrap();
        assert_eq!(audio.len(), 128);
        assert_eq!(&audio[..64], &pcm[..]);

        let event = format!("data: {{\"status_code\":200,\"data\":{{\"audio\":\"{b64}\"}}}}\n\n");
        let mut events = Unframer::new(Framing::SseBase64("/data/audio"));
        let mut audio = Vec::new();
        events.push(event.as_bytes(), &mut audio).unwrap();
        assert_eq!(audio, pcm);
        let failed = "data: {\"status_code\":401,\"errors\":[\"bad key\"]}\n\n";
        assert!(events.push(failed.as_bytes(), &mut audio).is_err());
    }

    #[test]
    fn locales_follow_the_usual_regions() {
        assert_eq!(locale_of("en"), "en-US");
        assert_eq!(locale_of("de"), "de-DE");
        assert_eq!(locale_of("ja"), "ja-JP");
        assert_eq!(locale_of("en-GB"), "en-GB");
    }
}
