//! Azure AI Speech: text to speech from SSML (`POST /cognitiveservices/v1` on the region's
//! `tts` host), streamed as headerless audio in the `X-Microsoft-OutputFormat` asked for:
//! `raw-8khz-8bit-mono-mulaw` on phone calls, raw PCM16 at the playback rate otherwise; and
//! short-audio recognition (`POST /speech/recognition/conversation/cognitiveservices/v1` on
//! the region's `stt` host, `alt_base_url`), clips of up to 60 s. Followed:
//! https://learn.microsoft.com/azure/ai-services/speech-service/rest-text-to-speech and
//! https://learn.microsoft.com/azure/ai-services/speech-service/rest-speech-to-text-short.

use serde_json::Value;
use switchboard_actors::engine::{
    EngineError, EngineErrorKind, EngineStream, SpeechChunk, SpeechRequest, TextToSpeech,
    TranscribeOptions, Transcript, TranscriptSegment, TranscriptWord,
};

use super::audio::{clip_recognizer, usual_output, Clip, RawAudioChunker, RawEncoding};
use super::http::Endpoint;
use super::speech::locale_of;

const DEFAULT_VOICE: &str = "en-US-AvaMultilingualNeural";
/// The longest clip short-audio recognition takes.
const MAX_CLIP_SECONDS: f32 = 60.0;
/// Azure gives times in ticks of 100 ns.
const TICKS_PER_SECOND: f64 = 10_000_000.0;

pub struct AzureSpeech {
    pub endpoint: Endpoint,
}

/// The output format for an encoding and rate.
fn output_format(encoding: RawEncoding, rate: u32) -> String {
    match (encoding, rate) {
        (RawEncoding::Mulaw, _) => "raw-8khz-8bit-mono-mulaw".into(),
        (_, 22_050 | 44_100) => format!("raw-{rate}hz-16bit-mono-pcm"),
        (_, rate) => format!("raw-{}khz-16bit-mono-pcm", rate / 1000),
    }
}

/// Text made safe inside an XML element.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if c.is_control() && !matches!(c, '\n' | '\r' | '\t') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A relative SSML prosody value: 1.25 → `+25%`.
fn percent(factor: f32) -> String {
    format!("{:+.0}%", (factor - 1.0) * 100.0)
}

/// The SSML document for a request: the voice, its locale (the voice name's, else the
/// request's language), and speed and pitch as prosody.
pub fn ssml(text: &str, voice: &str, language: Option<&str>, speed: f32, pitch: f32) -> String {
    let from_voice: Vec<&str> = voice.splitn(3, '-').collect();
    let locale = match (language, from_voice.as_slice()) {
        (_, [lang, region, _]) if lang.len() == 2 && region.len() == 2 => {
            format!("{lang}-{region}")
        }
        (Some(language), _) => locale_of(language),
        _ => "en-US".to_string(),
    };
    let mut inner = xml_escape(text);
    let (speed, pitch) = (speed.clamp(0.5, 2.0), pitch.clamp(0.5, 2.0));
    if (speed - 1.0).abs() > f32::EPSILON || (pitch - 1.0).abs() > f32::EPSILON {
        inner = format!(
            "<prosody rate=\"{}\" pitch=\"{}\">{inner}</prosody>",
            percent(speed),
            percent(pitch)
        );
    }
    format!(
        "<speak version=\"1.0\" xmlns=\"http://www.w3.org/2001/10/synthesis\" xml:lang=\"{locale}\">\
         <voice name=\"{}\">{inner}</voice></speak>",
        xml_escape(voice)
    )
}

impl TextToSpeech for AzureSpeech {
    fn provider(&self) -> &str {
        &self.endpoint.vendor
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let endpoint = self.endpoint.clone();
        let (encoding, rate) = usual_output(request.output_rate);
        let voice = endpoint.voice(&request.voice, DEFAULT_VOICE);
        let document = ssml(
            &request.text,
            &voice,
            request.language.as_deref(),
            request.speed,
            request.pitch,
        );
        let format = output_format(encoding, rate);
        let url = endpoint.url("/cognitiveservices/v1");
        let build = {
            let endpoint = endpoint.clone();
            move || {
                endpoint
                    .authorize(endpoint.client.post(&url))
                    .header("Content-Type", "application/ssml+xml")
                    .header("X-Microsoft-OutputFormat", &format)
                    .body(document.clone())
            }
        };
        Ok(super::speech::spawn_raw_speech(
            endpoint,
            build,
            RawAudioChunker::new(encoding, rate, request.text),
        ))
    }
}

pub struct AzureRecognition {
    pub endpoint: Endpoint,
}

clip_recognizer!(AzureRecognition, recognize_short_audio);

/// One clip through short-audio recognition (at most `MAX_CLIP_SECONDS`).
async fn recognize_short_audio(
    endpoint: Endpoint,
    clip: Clip,
    options: TranscribeOptions,
) -> Result<Transcript, EngineError> {
    let clip_seconds = clip.seconds();
    if clip_seconds > MAX_CLIP_SECONDS {
        return Err(endpoint.error(
            EngineErrorKind::InvalidInput,
            format!(
                "short-audio recognition takes at most {MAX_CLIP_SECONDS:.0} s of audio; \
                 this clip is {clip_seconds:.1} s"
            ),
        ));
    }
    let wav = clip.wav();
    let locale = locale_of(options.language.as_deref().unwrap_or("en"));
    let mut query = vec![("language", locale), ("format", "detailed".to_string())];
    if options.word_timestamps {
        query.push(("wordLevelTimestamps", "true".to_string()));
    }
    let url = endpoint.alt_url("/speech/recognition/conversation/cognitiveservices/v1");
    let json = endpoint
        .fetch_json(|| {
            endpoint
                .authorize(endpoint.client.post(&url))
                .query(&query)
                .header(
                    "Content-Type",
                    "audio/wav; codecs=audio/pcm; samplerate=16000",
                )
                .header("Accept", "application/json")
                .body(wav.clone())
        })
        .await?;
    transcript_from_short_audio(&endpoint, &json, &options, clip_seconds)
}

/// Our transcript from a detailed short-audio answer. `NoMatch` and the silence timeouts are
/// an empty transcript (nothing was said); `Error` is the vendor's failure.
pub fn transcript_from_short_audio(
    endpoint: &Endpoint,
    json: &Value,
    options: &TranscribeOptions,
    clip_seconds: f32,
) -> Result<Transcript, EngineError> {
    let status = json
        .get("RecognitionStatus")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let language = options.language.clone().unwrap_or_else(|| "en".into());
    let empty = Transcript {
        text: String::new(),
        segments: Vec::new(),
        words: Vec::new(),
        language: language.clone(),
        language_probability: None,
        duration: clip_seconds,
    };
    match status {
        "Success" => {}
        "NoMatch" | "InitialSilenceTimeout" | "BabbleTimeout" => return Ok(empty),
        other => {
            return Err(endpoint.error(
                EngineErrorKind::Upstream,
                format!("recognition failed: {other}"),
            ))
        }
    }
    let seconds = |value: Option<&Value>| {
        (value.and_then(Value::as_f64).unwrap_or(0.0) / TICKS_PER_SECOND) as f32
    };
    let best = json.pointer("/NBest/0").unwrap_or(&Value::Null);
    let text = best
        .get("Display")
        .or_else(|| json.get("DisplayText"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string();
    let start = seconds(json.get("Offset"));
    let end = start + seconds(json.get("Duration"));
    let words = if options.word_timestamps {
        best.get("Words")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|word| {
                let start = seconds(word.get("Offset"));
                TranscriptWord {
                    start,
                    end: start + seconds(word.get("Duration")),
                    word: word
                        .get("Word")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Transcript {
        segments: if text.is_empty() {
            Vec::new()
        } else {
            vec![TranscriptSegment {
                start,
                end: end.max(start),
                text: text.clone(),
                speaker: None,
                language: None,
            }]
        },
        text,
        words,
        language,
        language_probability: None,
        duration: clip_seconds,
    })
}

/// The cheapest authenticated call: the region's voice list.
pub async fn verify(endpoint: &Endpoint) -> Result<(), EngineError> {
    endpoint.check_key("/cognitiveservices/voices/list").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssml_escapes_the_text_and_takes_the_voice_locale() {
        let document = ssml("Fish & <chips>", "de-DE-KatjaNeural", Some("fr"), 1.25, 1.0);
        assert_eq!(
            document,
            "<speak version=\"1.0\" xmlns=\"http://www.w3.org/2001/10/synthesis\" \
             xml:lang=\"de-DE\"><voice name=\"de-DE-KatjaNeural\"><prosody rate=\"+25%\" \
             pitch=\"+0%\">Fish &amp; &lt;chips&gt;</prosody></voice></speak>"
        );
        assert!(ssml("Hi", "custom", Some("ja"), 1.0, 1.0).contains("xml:lang=\"ja-JP\""));
        assert_eq!(
            output_format(RawEncoding::Mulaw, 8_000),
            "raw-8khz-8bit-mono-mulaw"
        );
        assert_eq!(
            output_format(RawEncoding::Pcm16, 24_000),
            "raw-24khz-16bit-mono-pcm"
        );
        assert_eq!(
            output_format(RawEncoding::Pcm16, 22_050),
            "raw-22050hz-16bit-mono-pcm"
        );
    }
}
