//! The speech endpoints as a client uses them: synthesis in every format, transcription of
//! real recordings (upload and URL), diarization, asynchronous jobs that survive a restart,
//! and every documented limit.

mod common;

use std::time::Duration;

use base64::Engine;
use common::*;
use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};
use switchboard::media::decode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const JFK: &str = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.";
const LEFT: &str = "He began a confused complaint against the wizard, who had vanished behind the curtain on the left.";
const RIGHT: &str = "The horizon seems extremely distant.";
/// Spoken and heard back; free of compounds Whisper may write either way ("river bank" or
/// "riverbank"), so the word error rate measures recognition, not spelling.
const SENTENCE: &str = "The quick brown fox jumps over the lazy dog near the old stone bridge.";

fn upload(bytes: Vec<u8>, filename: &str) -> Form {
    Form::new().part("file", Part::bytes(bytes).file_name(filename.to_string()))
}

async fn transcribe_form(server: &Server, form: Form) -> (u16, Value) {
    call(
        server
            .request(reqwest::Method::POST, "/v1/transcribe", server.key())
            .multipart(form),
    )
    .await
}

async fn synthesize(server: &Server, body: Value) -> reqwest::Response {
    server
        .post("/v1/synthesize", server.key(), body)
        .send()
        .await
        .expect("request reaches the server")
}

fn rms(samples: &[f32]) -> f32 {
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32).sqrt()
}

#[tokio::test]
async fn synthesis_streams_decodable_speech_in_every_format() {
    let server = Server::start().await;
    for (format, content_type, rate) in [
        ("wav", "audio/wav", 24_000),
        ("mp3", "audio/mpeg", 24_000),
        ("ogg", "audio/ogg", 48_000),
    ] {
        let response = synthesize(&server, json!({"text": SENTENCE, "format": format})).await;
        assert_eq!(response.status(), 200, "{format}");
        assert_eq!(response.headers()["content-type"], content_type);
        assert_eq!(response.headers()["x-provider-used"], "default");
        assert!(response.headers().contains_key("x-usage-remaining"));
        let bytes = response.bytes().await.unwrap();
        let audio = decode(&bytes, Some(format)).unwrap_or_else(|e| panic!("{format}: {e}"));
        assert_eq!(audio.sample_rate, rate, "{format}");
        let seconds = audio.duration_seconds();
        assert!(
            (1.5..8.0).contains(&seconds),
            "{format}: {seconds} s of audio"
        );
        assert!(rms(&audio.mono()) > 0.01, "{format}: the audio is silent");
    }
    // The default format is WAV.
    let response = synthesize(&server, json!({"text": "Hello there."})).await;
    assert_eq!(response.headers()["content-type"], "audio/wav");
    let documented = documented_200_types(&server, "/v1/synthesize").await;
    assert_eq!(documented, ["audio/mpeg", "audio/ogg", "audio/wav"]);
    // An agent's speech is answered by the same code, in the same formats.
    assert_eq!(
        documented_200_types(&server, "/v1/agents/{id}/speak").await,
        documented
    );
}

/// The media types `/openapi.json` lists for a 200 from `POST path`, sorted.
async fn documented_200_types(server: &Server, path: &str) -> Vec<String> {
    let (status, document) = call(server.http.get(server.url("/openapi.json"))).await;
    assert_eq!(status, 200);
    let content = document["paths"][path]["post"]["responses"]["200"]["content"]
        .as_object()
        .unwrap_or_else(|| panic!("POST {path} documents the content of its 200"));
    let mut types: Vec<String> = content.keys().cloned().collect();
    types.sort();
    types
}

#[tokio::test]
async fn openai_speech_answers_in_each_format_with_the_type_it_documents() {
    let server = Server::start().await;
    let documented = documented_200_types(&server, "/v1/audio/speech").await;
    let mut seen = Vec::new();
    for (format, content_type) in [
        ("mp3", "audio/mpeg"),
        ("opus", "audio/ogg"),
        ("wav", "audio/wav"),
        ("pcm", "audio/pcm"),
    ] {
        let response = server
            .post(
                "/v1/audio/speech",
                server.key(),
                json!({"model": "tts-1", "input": SENTENCE, "voice": "alloy", "response_format": format}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{format}");
        assert_eq!(response.headers()["content-type"], content_type, "{format}");
        let bytes = response.bytes().await.unwrap();
        let samples: Vec<f32> = if format == "pcm" {
            // 24 kHz, 16-bit little-endian, mono, no header.
            assert_eq!(bytes.len() % 2, 0);
            bytes
                .chunks_exact(2)
                .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32_768.0)
                .collect()
        } else {
            let hint = if format == "opus" { "ogg" } else { format };
            decode(&bytes, Some(hint))
                .unwrap_or_else(|e| panic!("{format}: {e}"))
                .mono()
        };
        assert!(
            samples.len() > 24_000,
            "{format}: {} samples",
            samples.len()
        );
        assert!(rms(&samples) > 0.01, "{format}: the audio is silent");
        seen.push(content_type.to_string());
    }

    // As server-sent events: base64 deltas of the audio, then a done event.
    let response = server
        .post(
            "/v1/audio/speech",
            server.key(),
            json!({"model": "tts-1", "input": "Hello there.", "voice": "alloy",
                   "response_format": "pcm", "stream_format": "sse"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|block| block.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("each event is JSON"))
        .collect();
    let (last, deltas) = events.split_last().expect("events arrived");
    assert_eq!(last["type"], "speech.audio.done");
    assert!(!deltas.is_empty());
    let mut audio = Vec::new();
    for delta in deltas {
        assert_eq!(delta["type"], "speech.audio.delta");
        let chunk = base64::engine::general_purpose::STANDARD
            .decode(delta["audio"].as_str().unwrap())
            .expect("base64 audio");
        audio.extend(chunk);
    }
    assert!(audio.len() > 4_800, "{} bytes of audio", audio.len());
    seen.push("text/event-stream".to_string());

    seen.sort();
    assert_eq!(
        documented, seen,
        "every type sent is documented, and only those"
    );
}

#[tokio::test]
async fn speed_changes_how_long_the_speech_lasts() {
    let server = Server::start().await;
    let mut durations = Vec::new();
    for speed in [0.5, 1.0, 2.0] {
        let response = synthesize(
            &server,
            json!({"text": SENTENCE, "speed": speed, "format": "wav"}),
        )
        .await;
        assert_eq!(response.status(), 200);
        let audio = decode(&response.bytes().await.unwrap(), Some("wav")).unwrap();
        durations.push(audio.duration_seconds());
    }
    assert!(durations[0] > durations[1] * 1.5, "{durations:?}");
    assert!(durations[2] < durations[1] * 0.7, "{durations:?}");
}

/// Synthesizes `SENTENCE` with `voice` and transcribes it back; answers the word error rate.
async fn round_trip_wer(server: &Server, voice: &str) -> (f64, String) {
    let response = synthesize(
        server,
        json!({"text": SENTENCE, "voiceId": voice, "format": "wav"}),
    )
    .await;
    assert_eq!(response.status(), 200, "{voice}");
    let audio = response.bytes().await.unwrap().to_vec();
    let form = upload(audio, "speech.wav").text("language", "en");
    let (status, body) = transcribe_form(server, form).await;
    assert_eq!(status, 200, "{voice}: {body}");
    // The language was given, not detected: no probability to report.
    assert!(body.get("languageProbability").is_none(), "{body}");
    let text = body["text"].as_str().unwrap().to_string();
    (word_error_rate(SENTENCE, &text), text)
}

#[tokio::test]
async fn synthesized_speech_is_recognised_again() {
    let server = Server::start().await;
    let (wer, text) = round_trip_wer(&server, "default").await;
    assert!(wer <= 0.15, "neural voice: WER {wer:.2} for {text:?}");
}

/// eSpeak's formant voice, at its speed-1.0 rate of 130 words a minute, is heard back within
/// the 25% word-error target.
#[tokio::test]
async fn espeak_speech_is_recognised_again() {
    let server = Server::start().await;
    let (wer, text) = round_trip_wer(&server, "espeak-en").await;
    assert!(wer <= 0.25, "eSpeak voice: WER {wer:.2} for {text:?}");
}

/// Text that is not blank but that no voice reads aloud.
const UNSPEAKABLE: &str = "\u{F0CA7}\u{8}\u{8A}";

#[tokio::test]
async fn synthesis_refuses_bad_requests_and_names_the_field() {
    let server = Server::start().await;
    let long = "a".repeat(10_001);
    for (body, param) in [
        (json!({}), "text"),
        (json!({"text": ""}), "text"),
        (json!({"text": "   "}), "text"),
        (json!({"text": long}), "text"),
        // Only characters no voice reads aloud (a private-use symbol, controls): the neural
        // voice and the eSpeak voice both make no sound of it, which is the text's fault.
        (json!({"text": UNSPEAKABLE}), "text"),
        (json!({"text": UNSPEAKABLE, "voiceId": "espeak-en"}), "text"),
        (json!({"text": "hi", "speed": 0.4}), "speed"),
        (json!({"text": "hi", "speed": 2.1}), "speed"),
        (json!({"text": "hi", "pitch": 0.0}), "pitch"),
        (json!({"text": "hi", "format": "flac"}), "format"),
        (json!({"text": "hi", "provider": "nobody"}), "provider"),
        (json!({"text": "hi", "voiceId": "no-such-voice"}), "voiceId"),
        (json!({"text": "hi", "speed": "fast"}), "speed"),
        (json!({"text": "hi", "colour": "blue"}), ""),
    ] {
        let response = synthesize(&server, body.clone()).await;
        let (status, error) = json_of(response).await;
        assert_eq!(status, 400, "{body} → {error}");
        assert_eq!(error_code(&error), "validation_error", "{body}");
        if !param.is_empty() {
            assert_eq!(error["error"]["param"], param, "{body} → {error}");
        }
    }
    // An agent's speech refuses the same text the same way.
    let (status, agent) = call(server.post(
        "/v1/agents",
        server.key(),
        json!({"name": "Reader", "id": "reader"}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    let (status, error) = call(server.post(
        "/v1/agents/reader/speak",
        server.key(),
        json!({"text": UNSPEAKABLE}),
    ))
    .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["param"], "text", "{error}");
    // A real vendor without a configured key is a distinct, clear error.
    let (status, error) =
        json_of(synthesize(&server, json!({"text": "hi", "provider": "elevenlabs"})).await).await;
    assert_eq!(status, 400);
    assert_eq!(error_code(&error), "provider_not_configured");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("elevenlabs"));
}

#[tokio::test]
async fn a_recording_is_transcribed_in_both_modes_with_timestamps() {
    let server = Server::start().await;
    for mode in ["accurate", "fast"] {
        let form = upload(fixture("jfk.flac"), "jfk.flac").text("mode", mode);
        let (status, body) = transcribe_form(&server, form).await;
        assert_eq!(status, 200, "{mode}: {body}");
        let wer = word_error_rate(JFK, body["text"].as_str().unwrap());
        assert!(wer <= 0.10, "{mode}: WER {wer:.2}: {}", body["text"]);
        assert_eq!(body["language"], "en", "{mode}");
        if mode == "accurate" {
            // The multilingual model detected the language, and says how sure it was.
            let sure = body["languageProbability"].as_f64().unwrap_or(0.0);
            assert!(sure > 0.5 && sure <= 1.0, "{body}");
        }
        let duration = body["duration"].as_f64().unwrap();
        assert!((duration - 11.0).abs() < 0.2, "{mode}: duration {duration}");
        let segments = body["segments"].as_array().unwrap();
        assert!(!segments.is_empty());
        let mut last = 0.0;
        for segment in segments {
            let (start, end) = (
                segment["start"].as_f64().unwrap(),
                segment["end"].as_f64().unwrap(),
            );
            assert!(
                start >= last - 0.01 && end >= start && end <= duration + 0.5,
                "{segment}"
            );
            last = start;
            assert!(
                segment.get("speaker").is_some_and(Value::is_null),
                "a segment's speaker is null unless asked: {segment}"
            );
        }
        assert!(body.get("words").is_none(), "no words unless asked");
    }

    let form = upload(fixture("jfk.flac"), "jfk.flac")
        .text("mode", "fast")
        .text("timestamps", "word");
    let (status, body) = transcribe_form(&server, form).await;
    assert_eq!(status, 200, "{body}");
    let words = body["words"].as_array().expect("words when asked");
    assert!(words.len() >= 20, "{} words", words.len());
    let mut last = 0.0;
    for word in words {
        let start = word["start"].as_f64().unwrap();
        assert!(
            start >= last - 0.01 && word["end"].as_f64().unwrap() >= start,
            "{word}"
        );
        assert!(!word["word"].as_str().unwrap().is_empty());
        last = start;
    }
    assert!(words.iter().any(|w| w["word"]
        .as_str()
        .unwrap()
        .to_lowercase()
        .contains("country")));
}

/// The word error rate of `text` against both channels' sentences, in whichever order it
/// gives them: low only when each sentence is whole and the two follow each other, since
/// one sentence inside the other costs its words twice (inserted, and missing where they
/// belong).
fn both_sentences_error(text: &str) -> f64 {
    let left_first = word_error_rate(&format!("{LEFT} {RIGHT}"), text);
    let right_first = word_error_rate(&format!("{RIGHT} {LEFT}"), text);
    left_first.min(right_first)
}

/// The speakers named in a transcription's segments, each once.
fn speakers(body: &Value) -> Vec<String> {
    let mut named: Vec<String> = body["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["speaker"].as_str().map(str::to_string))
        .collect();
    named.sort();
    named.dedup();
    named
}

#[tokio::test]
async fn a_stereo_call_recording_is_split_by_channel() {
    let server = Server::start().await;
    let form = upload(fixture("stereo_diarization.wav"), "call.wav")
        .text("diarize", "true")
        .text("language", "en");
    let (status, body) = transcribe_form(&server, form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(speakers(&body), ["speaker_1", "speaker_2"], "{body}");
    let segments = body["segments"].as_array().unwrap();
    let text_of = |speaker: &str| -> String {
        segments
            .iter()
            .filter(|s| s["speaker"] == speaker)
            .map(|s| s["text"].as_str().unwrap())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (left, right) = (text_of("speaker_1"), text_of("speaker_2"));
    assert!(word_error_rate(LEFT, &left) <= 0.15, "left channel: {left}");
    assert!(
        word_error_rate(RIGHT, &right) <= 0.15,
        "right channel: {right}"
    );
    // The text gives each speaker's sentence whole, not the right speaker's words spoken
    // over the left one's inside it.
    let text = body["text"].as_str().unwrap();
    let error = both_sentences_error(text);
    assert!(error <= 0.15, "WER {error:.2}: {text}");
}

#[tokio::test]
async fn a_stereo_file_of_one_voice_is_one_speaker_transcribed_once() {
    // jfk.flac is stereo with near-identical channels: one speaker, heard once.
    let server = Server::start().await;
    let form = upload(fixture("jfk.flac"), "jfk.flac")
        .text("diarize", "true")
        .text("language", "en");
    let (status, body) = transcribe_form(&server, form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(speakers(&body), ["speaker_1"], "{body}");
    let text = body["text"].as_str().unwrap();
    let wer = word_error_rate(JFK, text);
    assert!(wer <= 0.10, "WER {wer:.2}: {text}");
    assert_eq!(
        text.to_lowercase().matches("fellow americans").count(),
        1,
        "{text}"
    );
    let joined: Vec<&str> = body["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    let wer = word_error_rate(JFK, &joined.join(" "));
    assert!(wer <= 0.10, "the segments repeat the speech: {joined:?}");
}

#[tokio::test]
async fn both_voices_of_a_two_channel_recording_are_transcribed_without_diarization() {
    let server = Server::start().await;
    let stereo = fixture("stereo_diarization.wav");
    let check = |route: &str, body: &Value, text: &str| {
        let error = both_sentences_error(text);
        assert!(error <= 0.15, "{route}: WER {error:.2}: {text}");
        for word in ["complaint", "wizard", "curtain", "horizon", "distant"] {
            assert!(
                text.to_lowercase().contains(word),
                "{route}: {word}: {text}"
            );
        }
        if let Some(segments) = body["segments"].as_array() {
            assert!(
                segments.iter().all(|s| s["speaker"].is_null()),
                "{route}: no speakers without diarize: {body}"
            );
        }
    };

    let form = upload(stereo.clone(), "call.wav").text("language", "en");
    let (status, body) = transcribe_form(&server, form).await;
    assert_eq!(status, 200, "{body}");
    check("/v1/transcribe", &body, body["text"].as_str().unwrap());
    assert!(
        (body["duration"].as_f64().unwrap() - 5.0).abs() < 0.1,
        "{body}"
    );

    // A job reads the recording the same way.
    let form = upload(stereo.clone(), "call.wav").text("language", "en");
    let (status, accepted) = call(
        server
            .request(reqwest::Method::POST, "/v1/transcribe/async", server.key())
            .multipart(form),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let job = wait_for_job(&server, server.key(), accepted["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "completed", "{job}");
    check(
        "/v1/transcribe/async",
        &job["result"],
        job["result"]["text"].as_str().unwrap(),
    );

    // And so does the OpenAI-compatible route.
    let form = upload(stereo, "call.wav")
        .text("model", "whisper-1")
        .text("language", "en")
        .text("response_format", "verbose_json");
    let (status, body) = call(
        server
            .request(
                reqwest::Method::POST,
                "/v1/audio/transcriptions",
                server.key(),
            )
            .multipart(form),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    check(
        "/v1/audio/transcriptions",
        &Value::Null,
        body["text"].as_str().unwrap(),
    );
    let segments: Vec<&str> = body["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    assert!(
        segments
            .iter()
            .any(|s| s.to_lowercase().contains("horizon"))
            && segments.iter().any(|s| s.to_lowercase().contains("wizard")),
        "{segments:?}"
    );
}

/// Serves one file over HTTP on loopback, as an audio host would.
async fn serve_file(bytes: Vec<u8>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let bytes = bytes.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: audio/flac\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    bytes.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&bytes).await;
            });
        }
    });
    format!("http://{addr}/media/jfk.flac")
}

#[tokio::test]
async fn audio_urls_are_fetched_but_internal_addresses_are_refused() {
    let url = serve_file(fixture("jfk.flac")).await;

    // By default the loopback host may not be fetched, nor metadata or private ones.
    let server = Server::start().await;
    for target in [
        url.clone(),
        "http://169.254.169.254/latest/meta-data".to_string(),
        "http://10.0.0.5/a.wav".to_string(),
        format!(
            "http://localhost:{}/media/jfk.flac",
            url.split(':').nth(2).unwrap().split('/').next().unwrap()
        ),
        "file:///etc/passwd".to_string(),
        "not a url".to_string(),
    ] {
        let (status, body) =
            call(server.post("/v1/transcribe", server.key(), json!({"audioUrl": target}))).await;
        assert_invalid(status, &body, "audioUrl", &target);
    }
    let storage = server.stop();

    // An operator can allow their own media host.
    let server =
        Server::start_with(storage, &[("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.1\"]")]).await;
    let key = storage_key(&server);
    let (status, body) = call(server.post(
        "/v1/transcribe",
        &key,
        json!({"audioUrl": url, "mode": "fast", "language": "en"}),
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        word_error_rate(JFK, body["text"].as_str().unwrap()) <= 0.10,
        "{body}"
    );
}

#[tokio::test]
async fn audio_urls_hiding_internal_addresses_are_refused_and_failures_do_not_say_why() {
    let url = serve_file(fixture("jfk.flac")).await;
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();

    // IPv4 inside IPv6 forms and reserved IPv4 ranges are refused before any connection.
    let server = Server::start().await;
    for target in [
        format!("http://[::127.0.0.1]:{port}/media/jfk.flac"),
        format!("http://[::ffff:0:127.0.0.1]:{port}/media/jfk.flac"),
        "http://[::a9fe:a9fe]/latest/meta-data".to_string(),
        "http://[64:ff9b::a00:5]/a.wav".to_string(),
        "http://198.18.0.1/a.wav".to_string(),
        "http://198.19.7.7/a.wav".to_string(),
        "http://192.88.99.1/a.wav".to_string(),
    ] {
        let started = std::time::Instant::now();
        let (status, body) =
            call(server.post("/v1/transcribe", server.key(), json!({"audioUrl": target}))).await;
        assert_invalid(status, &body, "audioUrl", &target);
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("may not be fetched"), "{target} → {body}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{target} was tried"
        );
    }
    let storage = server.stop();

    // Where the operator allows loopback, a closed port and an open one that is not HTTP
    // read the same: nothing of the socket's state reaches the caller.
    let server =
        Server::start_with(storage, &[("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.1\"]")]).await;
    let key = storage_key(&server);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let garbage = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let garbage_port = garbage.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = garbage.accept().await {
            let _ = socket.write_all(b"SSH-2.0-OpenSSH_9.6\r\n").await;
        }
    });
    let mut messages = Vec::new();
    for target in [
        format!("http://127.0.0.1:{closed}/a.wav"),
        format!("http://127.0.0.1:{garbage_port}/a.wav"),
    ] {
        let (status, body) =
            call(server.post("/v1/transcribe", &key, json!({"audioUrl": target}))).await;
        assert_invalid(status, &body, "audioUrl", &target);
        let message = body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for leak in [
            "refused",
            "route",
            "reset",
            "unreachable",
            "SSH",
            "os error",
        ] {
            assert!(!message.contains(leak), "{target} → {message}");
        }
        messages.push(message);
    }
    assert_eq!(messages[0], messages[1]);
}

/// A key for a restarted server (the bootstrap key is printed only on the first start).
fn storage_key(server: &Server) -> String {
    server.storage.create_key("dev_speech")
}

#[tokio::test]
async fn transcription_refuses_bad_uploads_with_the_documented_errors() {
    let server = Server::start().await;
    let too_big = vec![0u8; 25 * 1024 * 1024 + 1];
    let (status, body) = transcribe_form(&server, upload(too_big, "big.wav")).await;
    assert_eq!(status, 413, "{}", short(&body));
    assert_eq!(error_code(&body), "payload_too_large");

    let text = b"this is not audio, just words in a file. ".repeat(50);
    let (status, body) = transcribe_form(&server, upload(text, "notes.txt")).await;
    assert_eq!(status, 415, "{body}");
    assert_eq!(error_code(&body), "unsupported_media_type");

    let (status, body) = transcribe_form(&server, upload(Vec::new(), "empty.wav")).await;
    assert_invalid(status, &body, "file", "an empty file");

    let (status, body) = transcribe_form(&server, Form::new().text("mode", "fast")).await;
    assert_invalid(status, &body, "file", "no file at all");

    for (field, value, param) in [
        ("mode", "quick", "mode"),
        ("timestamps", "char", "timestamps"),
        ("diarize", "maybe", "diarize"),
        ("language", "english!", "language"),
        ("language", "xx", "language"),
        ("speed", "2", "speed"),
    ] {
        let form = upload(fixture("stereo_diarization.wav"), "a.wav").text(field, value);
        let (status, body) = transcribe_form(&server, form).await;
        assert_invalid(status, &body, param, &format!("{field}={value}"));
    }

    let (status, body) =
        call(server.post("/v1/transcribe", server.key(), json!({"mode": "fast"}))).await;
    assert_invalid(status, &body, "audioUrl", "JSON without audioUrl");
    let (status, body) = call(
        server
            .request(reqwest::Method::POST, "/v1/transcribe", server.key())
            .header("Content-Type", "text/plain")
            .body("hello"),
    )
    .await;
    assert_eq!(status, 415, "{body}");
}

async fn wait_for_job(server: &Server, key: &str, id: &str) -> Value {
    for _ in 0..600 {
        let (status, job) = call(server.get(&format!("/v1/transcribe/{id}"), key)).await;
        assert_eq!(status, 200, "{job}");
        if job["status"] != "processing" {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("job {id} did not finish");
}

#[tokio::test]
async fn async_jobs_complete_fail_and_belong_to_their_developer() {
    let server = Server::start().await;
    let form = upload(fixture("jfk.flac"), "jfk.flac").text("mode", "fast");
    let response = server
        .request(reqwest::Method::POST, "/v1/transcribe/async", server.key())
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let (_, accepted) = json_of(response).await;
    assert_eq!(accepted["status"], "processing");
    assert!(is_iso_millis(&accepted["createdAt"]), "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_string();

    let stranger = server.storage.create_key("dev_stranger");
    let (status, body) = call(server.get(&format!("/v1/transcribe/{id}"), &stranger)).await;
    assert_not_found(status, &body, "another developer's job");

    let job = wait_for_job(&server, server.key(), &id).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert!(is_iso_millis(&job["completedAt"]), "{job}");
    let wer = word_error_rate(JFK, job["result"]["text"].as_str().unwrap());
    assert!(wer <= 0.10, "{job}");
    assert!(job["result"]["segments"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));

    // Undecodable audio is accepted, then fails with a reason.
    let form = upload(b"definitely not audio ".repeat(20), "x.mp3");
    let (status, accepted) = call(
        server
            .request(reqwest::Method::POST, "/v1/transcribe/async", server.key())
            .multipart(form),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let job = wait_for_job(&server, server.key(), accepted["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["error"].as_str().is_some_and(|e| e.contains("decoded")),
        "{job}"
    );
    assert!(job.get("result").is_none());

    let (status, body) = call(server.get("/v1/transcribe/job_nope", server.key())).await;
    assert_not_found(status, &body, "an unknown job");
}

#[tokio::test]
async fn a_job_interrupted_by_a_restart_still_completes() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let mut ids = Vec::new();
    // Several jobs, so some are still queued when the server stops.
    for _ in 0..3 {
        let form = upload(fixture("jfk.flac"), "jfk.flac").text("mode", "fast");
        let (status, accepted) = call(
            server
                .request(reqwest::Method::POST, "/v1/transcribe/async", &key)
                .multipart(form),
        )
        .await;
        assert_eq!(status, 202, "{accepted}");
        ids.push(accepted["id"].as_str().unwrap().to_string());
    }
    let server = server.restart().await;
    for id in &ids {
        let job = wait_for_job(&server, &key, id).await;
        assert_eq!(job["status"], "completed", "{job}");
        assert!(word_error_rate(JFK, job["result"]["text"].as_str().unwrap()) <= 0.10);
    }
}

#[tokio::test]
async fn openai_style_errors_on_the_compatible_routes() {
    let server = Server::start().await;
    let (status, body) = call(server.post(
        "/v1/audio/speech",
        server.key(),
        json!({"input": "hi", "voice": "alloy"}),
    ))
    .await;
    assert_eq!(status, 400);
    let error = &body["error"];
    assert_eq!(error["type"], "invalid_request_error", "{body}");
    assert_eq!(error["param"], "model");
    assert!(
        error["message"].is_string() && error.get("code").is_some(),
        "{body}"
    );
    assert!(
        error.get("requestId").is_none(),
        "OpenAI's shape only: {body}"
    );

    let (status, body) = call(server.post(
        "/v1/audio/speech",
        "sb_live_not_a_key",
        json!({"model": "tts-1", "input": "hi", "voice": "alloy"}),
    ))
    .await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "invalid_api_key", "{body}");

    let (status, body) = call(server.post(
        "/v1/audio/speech",
        server.key(),
        json!({"model": "tts-1", "input": "hi", "voice": "alloy", "response_format": "aac"}),
    ))
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["param"], "response_format", "{body}");

    let (status, body) = call(server.post(
        "/v1/audio/speech",
        server.key(),
        json!({"model": "tts-1", "input": UNSPEAKABLE, "voice": "alloy"}),
    ))
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "input", "{body}");

    let (status, body) = call(server.get("/v1/audio/models", server.key())).await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "list");
    let ids: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"whisper-1") && ids.contains(&"tts-1"),
        "{ids:?}"
    );
}

#[tokio::test]
async fn the_command_line_transcribes_a_stereo_call_one_voice_per_channel() {
    let storage = Storage::fresh().await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/audio/stereo_diarization.wav");
    let (ok, stdout, stderr) =
        storage.cli(&["transcribe", "--language", "en", path.to_str().unwrap()]);
    assert!(ok, "the command failed: {stderr}");
    let out: Value = serde_json::from_str(&stdout).expect("the transcript is JSON");
    let text = out["text"].as_str().unwrap();
    let error = both_sentences_error(text);
    assert!(error <= 0.15, "WER {error:.2}: {text}");
}
