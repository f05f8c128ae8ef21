//! Call recordings from real calls over the Twilio media-stream socket: a two-channel WAV
//! (caller left, agent right) whose length is the call's and whose channels line up in time,
//! served with byte ranges to its owner only, deleted after its retention; and the same
//! through an S3-compatible store (a local S3 server, moto's, from the test virtualenv).
//! The call's engines are the local vendor stand-in (fast and deterministic: its voice is a
//! 440 Hz tone of one second per sentence); the caller's audio is recorded speech.

mod common;
#[path = "common/media_stream.rs"]
mod media_stream;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use common::*;
use futures_util::{SinkExt, StreamExt};
use media_stream::*;
use serde_json::{json, Value};
use switchboard_actors::audio::mulaw;
use tokio_tungstenite::tungstenite::Message;

async fn server_with_vendors(mock: &vendor_mock::VendorMock, extra: &[(&str, &str)]) -> Server {
    mock.server(extra).await
}

async fn new_agent(server: &Server, key: &str, id: &str, extra: Value) {
    let mut body = json!({"id": id, "name": "Recorded agent", "firstMessage": "Hello, thanks for calling.",
        "sttProvider": "openai", "llmProvider": "openai", "ttsProvider": "openai",
        "systemPrompt": "You are a phone agent."});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, answer) = call(server.post("/v1/agents", key, body)).await;
    assert_eq!(status, 201, "{answer}");
}

/// Places a call to `agent` and opens its media stream as call `call_sid`.
async fn start_call(
    server: &Server,
    key: &str,
    agent: &str,
    call_sid: &str,
) -> (String, TwilioStream) {
    let placed = place_call(server, key, agent).await;
    let stream = TwilioStream::open(&placed.stream_url, &placed.token, call_sid).await;
    (placed.session_id, stream)
}

/// Plays Twilio for `how_long`: caller audio at real-time pace (then silence), the agent's
/// audio played on the call's playback clock (which echoes the marks). Answers when the
/// first agent audio arrived, relative to `clock`.
async fn converse(
    stream: &mut TwilioStream,
    caller: &[u8],
    how_long: Duration,
    clock: Instant,
) -> Option<Duration> {
    converse_in_bursts(stream, caller, how_long, clock, 1).await
}

/// As [`converse`], with the caller's frames sent `burst` at a time in one write every
/// `burst` × 20 ms: the same pace, as a congested network or a busy server's socket delivers
/// them.
async fn converse_in_bursts(
    stream: &mut TwilioStream,
    caller: &[u8],
    how_long: Duration,
    clock: Instant,
    burst: u32,
) -> Option<Duration> {
    let TwilioStream { socket, playback } = stream;
    let started = Instant::now();
    let silence = [0xFFu8; 160];
    let mut frames = caller.chunks(160);
    let mut tick = tokio::time::interval(Duration::from_millis(20) * burst);
    let mut first_media = None;
    while started.elapsed() < how_long {
        tokio::select! {
            _ = tick.tick() => {
                let mut sent = Ok(());
                for name in playback.due(Instant::now()) {
                    sent = sent.and(socket.feed(mark_echo(&name)).await);
                }
                for _ in 0..burst {
                    let frame = frames.next().unwrap_or(&silence);
                    let media = json!({"event": "media", "streamSid": STREAM_SID,
                        "media": {"track": "inbound", "payload": BASE64.encode(frame)}});
                    sent = sent.and(socket.feed(Message::text(media.to_string())).await);
                }
                if sent.and(socket.flush().await).is_err() {
                    break;
                }
            }
            message = socket.next() => {
                let Some(Ok(Message::Text(text))) = message else { break };
                let event: Value = serde_json::from_str(&text).unwrap();
                match event["event"].as_str().unwrap() {
                    "media" => {
                        playback.media(Instant::now());
                        first_media.get_or_insert(clock.elapsed());
                    }
                    "mark" => playback.mark(event["mark"]["name"].as_str().unwrap(), Instant::now()),
                    "clear" => {
                        for name in playback.clear() {
                            socket.send(mark_echo(&name)).await.unwrap();
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    first_media
}

async fn hang_up(socket: &mut Socket, call_sid: &str) {
    let stop = json!({"event": "stop", "sequenceNumber": "999", "streamSid": STREAM_SID,
                      "stop": {"accountSid": "AC00000000000000000000000000000001", "callSid": call_sid}});
    socket.send(Message::text(stop.to_string())).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(message) = socket.next().await {
            if matches!(message, Ok(Message::Close(_)) | Err(_)) {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the stream closes after stop");
}

/// Waits until the recording is served (409 while the call is still being recorded).
async fn finished_recording(server: &Server, key: &str, call_id: &str) -> reqwest::Response {
    for _ in 0..100 {
        let response = server
            .get(&format!("/v1/recordings/{call_id}"), key)
            .send()
            .await
            .unwrap();
        if response.status() != 409 {
            return response;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the recording of {call_id} never finished");
}

/// Times (s) of the 20 ms windows of `samples` louder than `threshold` RMS.
fn loud_windows(samples: &[i16], threshold: f64) -> Vec<f64> {
    samples
        .chunks(160)
        .enumerate()
        .filter(|(_, w)| {
            let energy: f64 = w.iter().map(|&s| (s as f64).powi(2)).sum::<f64>() / w.len() as f64;
            energy.sqrt() > threshold
        })
        .map(|(i, _)| i as f64 * 0.02)
        .collect()
}

#[tokio::test]
async fn a_call_is_recorded_in_two_aligned_channels_and_served_in_ranges_to_its_owner() {
    let mock = vendor_mock::VendorMock::start();
    let server = server_with_vendors(&mock, &[]).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "recorded", json!({})).await;
    let call_sid = "CA00000000000000000000000000000101";
    let clock = Instant::now();
    let (session_id, mut stream) = start_call(&server, &key, "recorded", call_sid).await;

    let greeting_at = converse(&mut stream, &[], Duration::from_secs(3), clock)
        .await
        .expect("the greeting plays");
    // While the call runs its recording is not served yet.
    let (status, body) = call(server.get(&format!("/v1/recordings/{call_sid}"), &key)).await;
    assert_eq!(status, 409, "{body}");
    let speech = caller_speech();
    let speech_sent_at = clock.elapsed();
    converse(&mut stream, &speech, Duration::from_secs(9), clock).await;
    hang_up(&mut stream.socket, call_sid).await;
    let call_length = clock.elapsed();

    let response = finished_recording(&server, &key, call_sid).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "audio/wav");
    assert_eq!(response.headers()["accept-ranges"], "bytes");
    let length: usize = response.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let duration_ms: f64 = response.headers()["x-recording-duration-ms"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let wav = response.bytes().await.unwrap().to_vec();
    assert_eq!(wav.len(), length);

    let reader = hound::WavReader::new(std::io::Cursor::new(&wav)).unwrap();
    let spec = reader.spec();
    assert_eq!(
        (spec.channels, spec.sample_rate, spec.bits_per_sample),
        (2, 8_000, 16)
    );
    let samples: Vec<i16> = reader.into_samples::<i16>().map(Result::unwrap).collect();
    let left: Vec<i16> = samples.iter().step_by(2).copied().collect();
    let right: Vec<i16> = samples.iter().skip(1).step_by(2).copied().collect();
    let seconds = left.len() as f64 / 8_000.0;
    assert!(
        (seconds * 1000.0 - duration_ms).abs() < 25.0,
        "{seconds} s vs {duration_ms} ms"
    );
    // The whole call, from the stream's start to the hang-up.
    assert!(
        (seconds - call_length.as_secs_f64()).abs() < 1.0,
        "recording {seconds:.2} s, call {:.2} s",
        call_length.as_secs_f64()
    );

    // Left: the caller's sentence, whole, and nothing else (the caller was silent otherwise).
    let spoken = loud_windows(
        &speech.iter().map(|&b| mulaw::decode(b)).collect::<Vec<_>>(),
        300.0,
    );
    let heard = loud_windows(&left, 300.0);
    let (spoken_span, heard_span) = (
        spoken.last().unwrap() - spoken[0],
        heard.last().unwrap() - heard[0],
    );
    assert!(
        (spoken_span - heard_span).abs() < 0.06,
        "caller speech {spoken_span:.2} s recorded as {heard_span:.2} s"
    );
    let speech_on = heard[0];
    let speech_off = *heard.last().unwrap() + 0.02;

    // Right: the greeting (one second of tone) before the caller spoke, then the reply after.
    let agent = loud_windows(&right, 1000.0);
    let greeting_on = agent[0];
    let greeting: Vec<f64> = agent.iter().copied().filter(|&t| t < speech_on).collect();
    let greeting_span = greeting.last().unwrap() - greeting_on + 0.02;
    assert!(
        (0.9..=1.1).contains(&greeting_span),
        "greeting {greeting_span:.2} s"
    );
    // Aligned with what the test's own clock saw: the caller's speech started
    // (speech_sent_at - greeting_at) after the greeting's first audio arrived here.
    let expected_gap = (speech_sent_at.as_secs_f64() - greeting_at.as_secs_f64()) + spoken[0];
    let recorded_gap = speech_on - greeting_on;
    assert!(
        (recorded_gap - expected_gap).abs() < 0.15,
        "greeting to speech: recorded {recorded_gap:.3} s, on the wire {expected_gap:.3} s"
    );
    let reply_on = agent
        .iter()
        .copied()
        .find(|&t| t > speech_on)
        .expect("the agent's reply is on the right channel");
    assert!(
        reply_on >= speech_off,
        "the reply starts after the caller stopped"
    );

    // The reply's position matches the latency the session measured.
    let detail = ended_session(&server, &key, &session_id).await;
    let latency_ms = detail["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|t| t["latencyMs"].as_i64())
        .expect("an answered turn") as f64;
    let recorded_latency = (reply_on - speech_off) * 1000.0;
    assert!(
        (recorded_latency - latency_ms).abs() < 300.0,
        "reply {recorded_latency:.0} ms after the caller on the recording, session measured {latency_ms} ms"
    );

    // Byte ranges.
    let size = wav.len();
    let range = |value: String| {
        server
            .get(&format!("/v1/recordings/{call_sid}"), &key)
            .header("Range", value)
            .send()
    };
    let head = range("bytes=0-43".into()).await.unwrap();
    assert_eq!(head.status(), 206);
    assert_eq!(
        head.headers()["content-range"],
        format!("bytes 0-43/{size}").as_str()
    );
    assert_eq!(head.headers()["content-length"], "44");
    let head = head.bytes().await.unwrap();
    assert_eq!(&head[..], &wav[..44]);
    assert_eq!(&head[..4], b"RIFF");
    let tail = range("bytes=-1000".into()).await.unwrap();
    assert_eq!(tail.status(), 206);
    assert_eq!(&tail.bytes().await.unwrap()[..], &wav[size - 1000..]);
    let middle = range(format!("bytes=1000-{}", size + 50)).await.unwrap();
    assert_eq!(middle.status(), 206);
    assert_eq!(
        middle.headers()["content-range"],
        format!("bytes 1000-{}/{size}", size - 1).as_str()
    );
    assert_eq!(&middle.bytes().await.unwrap()[..], &wav[1000..]);
    let past = range(format!("bytes={size}-")).await.unwrap();
    assert_eq!(past.status(), 416);
    assert_eq!(
        past.headers()["content-range"],
        format!("bytes */{size}").as_str()
    );
    let (_, body) = json_of(past).await;
    assert_eq!(error_code(&body), "range_not_satisfiable");

    // By session id too; nobody else's.
    let (status, _) = call(server.get(&format!("/v1/recordings/{session_id}"), &key)).await;
    assert_eq!(status, 200);
    let other = server.storage.create_key("dev_other");
    for id in [call_sid, session_id.as_str()] {
        let (status, body) = call(server.get(&format!("/v1/recordings/{id}"), &other)).await;
        assert_not_found(status, &body, "another developer's recording");
    }
    let (status, body) = call(server.get("/v1/recordings/CAunknown", &key)).await;
    assert_not_found(status, &body, "no such call");
    // Stored under the data dir.
    let dir = server.storage.data_dir.path().join("recordings");
    let files: Vec<_> = walk(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::metadata(&files[0]).unwrap().len() as usize, size);
}

/// A loaded server, or a congested network, hands the transport several of a call's frames
/// at once: they reach the recording whole and in order, and the caller is answered.
#[tokio::test]
async fn frames_that_arrive_together_are_heard_and_recorded_whole_and_in_order() {
    let mock = vendor_mock::VendorMock::start();
    let server = server_with_vendors(&mock, &[]).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "recorded", json!({})).await;
    let call_sid = "CA00000000000000000000000000000103";
    let clock = Instant::now();
    let (session_id, mut stream) = start_call(&server, &key, "recorded", call_sid).await;
    converse_in_bursts(&mut stream, &[], Duration::from_secs(2), clock, 7).await;
    let speech = caller_speech();
    converse_in_bursts(&mut stream, &speech, Duration::from_secs(8), clock, 7).await;
    hang_up(&mut stream.socket, call_sid).await;

    let response = finished_recording(&server, &key, call_sid).await;
    assert_eq!(response.status(), 200);
    let wav = response.bytes().await.unwrap().to_vec();
    let reader = hound::WavReader::new(std::io::Cursor::new(&wav)).unwrap();
    let samples: Vec<i16> = reader.into_samples::<i16>().map(Result::unwrap).collect();
    let left: Vec<i16> = samples.iter().step_by(2).copied().collect();
    // The caller's channel holds the sentence sample for sample, in one piece.
    let spoken: Vec<i16> = speech.iter().map(|&b| mulaw::decode(b)).collect();
    assert!(
        left.windows(spoken.len()).any(|w| w == spoken.as_slice()),
        "the caller's {} samples are not on the recording's {} in one piece",
        spoken.len(),
        left.len()
    );

    let detail = ended_session(&server, &key, &session_id).await;
    let turns = detail["turns"].as_array().expect("the session's turns");
    assert_eq!(
        turns.iter().filter(|t| t["speaker"] == "user").count(),
        1,
        "one caller turn: {detail}"
    );
    assert!(
        turns.iter().any(|t| t["latencyMs"].as_i64().is_some()),
        "the caller was answered: {detail}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(walk(&path));
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test]
async fn recordings_expire_after_their_retention_and_agents_may_opt_out() {
    let mock = vendor_mock::VendorMock::start();
    // About 2.6 s of retention, swept every 200 ms.
    let server = server_with_vendors(
        &mock,
        &[
            ("SWITCHBOARD__RECORDINGS__RETENTION_DAYS", "0.00003"),
            ("SWITCHBOARD__RECORDINGS__CLEANUP_INTERVAL_MS", "200"),
        ],
    )
    .await;
    let key = server.key().to_string();
    new_agent(&server, &key, "kept", json!({"firstMessage": null})).await;
    new_agent(
        &server,
        &key,
        "private",
        json!({"firstMessage": null, "metadata": {"recordCalls": false}}),
    )
    .await;

    let clock = Instant::now();
    let (_, mut stream) = start_call(
        &server,
        &key,
        "private",
        "CA00000000000000000000000000000201",
    )
    .await;
    converse(&mut stream, &[], Duration::from_millis(600), clock).await;
    hang_up(&mut stream.socket, "CA00000000000000000000000000000201").await;
    let (_, mut stream) =
        start_call(&server, &key, "kept", "CA00000000000000000000000000000202").await;
    converse(&mut stream, &[], Duration::from_millis(600), clock).await;
    hang_up(&mut stream.socket, "CA00000000000000000000000000000202").await;

    let response = finished_recording(&server, &key, "CA00000000000000000000000000000202").await;
    assert_eq!(response.status(), 200);
    let dir = server.storage.data_dir.path().join("recordings");
    assert_eq!(
        walk(&dir).len(),
        1,
        "only the agent that records has a file"
    );
    let (status, _) =
        call(server.get("/v1/recordings/CA00000000000000000000000000000201", &key)).await;
    assert_eq!(status, 404, "the opted-out agent's call is not recorded");

    let mut gone = false;
    for _ in 0..80 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, _) =
            call(server.get("/v1/recordings/CA00000000000000000000000000000202", &key)).await;
        if status == 404 {
            gone = true;
            break;
        }
    }
    assert!(gone, "the recording expired");
    assert!(walk(&dir).is_empty(), "and its file is deleted");
}

/// A local S3 (moto's server, from the test virtualenv that scripts/test prepares), stopped
/// when dropped.
struct LocalS3 {
    child: std::process::Child,
    url: String,
}

impl Drop for LocalS3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn local_s3() -> LocalS3 {
    let python = std::env::var("SWITCHBOARD_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(&python)
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {python} -m moto.server ({e}); run scripts/test, which installs it")
        });
    let s3 = LocalS3 {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let client = reqwest::Client::new();
    for _ in 0..300 {
        if client.get(&s3.url).send().await.is_ok() {
            return s3;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the local S3 server did not start (is moto installed for {python}?)");
}

#[tokio::test]
async fn recordings_go_to_an_s3_store_and_are_served_from_it() {
    let s3 = local_s3().await;
    let http = reqwest::Client::new();
    let bucket = format!("{}/call-recordings", s3.url);
    let created = http.put(&bucket).send().await.unwrap();
    assert!(created.status().is_success(), "{:?}", created.text().await);

    let mock = vendor_mock::VendorMock::start();
    let server = server_with_vendors(
        &mock,
        &[
            ("SWITCHBOARD__RECORDINGS__STORE", "s3"),
            ("SWITCHBOARD__RECORDINGS__S3__BUCKET", "call-recordings"),
            ("SWITCHBOARD__RECORDINGS__S3__ENDPOINT", s3.url.as_str()),
            ("SWITCHBOARD__RECORDINGS__S3__ALLOW_HTTP", "true"),
            ("SWITCHBOARD__RECORDINGS__S3__ACCESS_KEY_ID", "test-key"),
            (
                "SWITCHBOARD__RECORDINGS__S3__SECRET_ACCESS_KEY",
                "test-secret",
            ),
            ("SWITCHBOARD__RECORDINGS__S3__PREFIX", "calls/"),
        ],
    )
    .await;
    let key = server.key().to_string();
    new_agent(&server, &key, "recorded", json!({})).await;
    let call_sid = "CA00000000000000000000000000000301";
    let clock = Instant::now();
    let (_, mut stream) = start_call(&server, &key, "recorded", call_sid).await;
    converse(&mut stream, &caller_speech(), Duration::from_secs(6), clock)
        .await
        .expect("the greeting plays");
    hang_up(&mut stream.socket, call_sid).await;

    let response = finished_recording(&server, &key, call_sid).await;
    assert_eq!(response.status(), 200);
    let wav = response.bytes().await.unwrap().to_vec();
    let reader = hound::WavReader::new(std::io::Cursor::new(&wav)).unwrap();
    assert_eq!(
        (reader.spec().channels, reader.spec().sample_rate),
        (2, 8_000)
    );
    let seconds = reader.duration() as f64 / 8_000.0;
    assert!(seconds > 5.0, "{seconds} s of a six-second call");

    // The object is in the bucket, under the prefix, whole.
    let listing = http
        .get(format!("{bucket}?list-type=2"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let object_key = listing
        .split("<Key>")
        .nth(1)
        .and_then(|rest| rest.split("</Key>").next())
        .unwrap_or_else(|| panic!("no object in the bucket: {listing}"));
    assert!(object_key.starts_with("calls/"), "{object_key}");
    assert_eq!(listing.matches("<Key>").count(), 1, "{listing}");
    // Read back through the S3 API itself (boto3, signed like any S3 client).
    let python = std::env::var("SWITCHBOARD_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let read_back = std::process::Command::new(python)
        .args([
            "-c",
            "import boto3, hashlib, sys\n\
             s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1',\n\
                 aws_access_key_id='test-key', aws_secret_access_key='test-secret')\n\
             body = s3.get_object(Bucket='call-recordings', Key=sys.argv[2])['Body'].read()\n\
             print(len(body), hashlib.sha256(body).hexdigest())",
            &s3.url,
            object_key,
        ])
        .output()
        .unwrap();
    assert!(
        read_back.status.success(),
        "{}",
        String::from_utf8_lossy(&read_back.stderr)
    );
    use sha2::Digest as _;
    let expected = format!("{} {:x}", wav.len(), sha2::Sha256::digest(&wav));
    assert_eq!(
        String::from_utf8_lossy(&read_back.stdout).trim(),
        expected,
        "served as stored"
    );

    // Byte ranges come from the store too.
    let range = server
        .get(&format!("/v1/recordings/{call_sid}"), &key)
        .header("Range", "bytes=44-1043")
        .send()
        .await
        .unwrap();
    assert_eq!(range.status(), 206);
    assert_eq!(
        range.headers()["content-range"],
        format!("bytes 44-1043/{}", wav.len()).as_str()
    );
    assert_eq!(
        range.bytes().await.unwrap().to_vec(),
        wav[44..1044].to_vec()
    );

    // Another developer gets nothing.
    let stranger = server.storage.create_key("dev_stranger");
    let (status, body) = call(server.get(&format!("/v1/recordings/{call_sid}"), &stranger)).await;
    assert_not_found(status, &body, "a stranger's recording");
}
