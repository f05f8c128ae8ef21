//! What a client can make the server hold, and for how long: WebSocket frames are refused from
//! their header when they declare more than the socket takes, an unfinished frame and a silent
//! direct socket time out, a Twilio stream holds only a few KB before its `start`, a request
//! body that stalls or trickles is cut off with 408, and an oversized webhook is refused with
//! the JSON error. Raw TCP clients send the handcrafted frames and bodies.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The server's resident memory, in KB (`VmRSS` of /proc/<pid>/status).
fn rss_kb(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}

/// Opens a WebSocket on `path` by hand (with `headers`), and answers the connection once the
/// server switched protocols.
async fn raw_socket(server: &Server, path: &str, headers: &[(&str, &str)]) -> TcpStream {
    let address = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = stream.read(&mut byte).await.unwrap();
        assert!(n > 0, "the connection ended in the handshake");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    stream
}

/// A masked client frame header: `first` (FIN, RSV and opcode) and a payload of `length`.
fn frame_header(first: u8, length: u64) -> Vec<u8> {
    let mut header = vec![first];
    if length < 126 {
        header.push(0x80 | length as u8);
    } else if length <= u64::from(u16::MAX) {
        header.push(0x80 | 126);
        header.extend_from_slice(&(length as u16).to_be_bytes());
    } else {
        header.push(0x80 | 127);
        header.extend_from_slice(&length.to_be_bytes());
    }
    // A zero mask: the payload goes as it is.
    header.extend_from_slice(&[0, 0, 0, 0]);
    header
}

/// A whole masked text frame.
fn text_frame(text: &str) -> Vec<u8> {
    let mut frame = frame_header(0x81, text.len() as u64);
    frame.extend_from_slice(text.as_bytes());
    frame
}

/// Reads the server's frames from `stream` (unmasked: 2 bytes, an extended length, the payload)
/// and answers the first whose opcode and payload `wanted` accepts, within `within`; `None`
/// when the connection ends first or nothing comes in time.
async fn first_frame_where(
    stream: &mut TcpStream,
    within: Duration,
    wanted: impl Fn(u8, &[u8]) -> bool,
) -> Option<(u8, Vec<u8>)> {
    let read = async {
        let mut buf = Vec::new();
        loop {
            while buf.len() >= 2 {
                let (length, at) = match buf[1] & 0x7f {
                    126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                    127 if buf.len() >= 10 => (
                        u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                        10,
                    ),
                    126 | 127 => break,
                    short => (short as usize, 2),
                };
                if buf.len() < at + length {
                    break;
                }
                let opcode = buf[0] & 0x0f;
                let payload = buf[at..at + length].to_vec();
                buf.drain(..at + length);
                if wanted(opcode, &payload) {
                    return Some((opcode, payload));
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(within, read).await.ok().flatten()
}

/// The code of the first Close frame the server sends within `within`, skipping its other
/// frames; `None` when the connection ends without one or nothing comes in time.
async fn close_code_of(stream: &mut TcpStream, within: Duration) -> Option<u16> {
    let (_, payload) = first_frame_where(stream, within, |opcode, _| opcode == 0x8).await?;
    (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]))
}

/// Writes `bytes` again and again on `stream` for `during` (or until the server stops taking
/// them); answers how many went out.
async fn flood(stream: &mut TcpStream, during: Duration) -> usize {
    let zeros = vec![0u8; 256 * 1024];
    let started = Instant::now();
    let mut sent = 0;
    while started.elapsed() < during {
        match tokio::time::timeout(Duration::from_millis(200), stream.write(&zeros)).await {
            Ok(Ok(n)) if n > 0 => sent += n,
            Ok(_) => break,
            Err(_) => {}
        }
    }
    sent
}

async fn new_agent(server: &Server, key: &str) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": "widget", "name": "Widget", "firstMessage": "Hi there!", "maxTokens": 30}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

/// Declaring a frame of 2^40 bytes used to make the socket buffer whatever came (+317 MB in
/// 0.6 s): now the header alone closes it with 1009, the server stops reading, and it holds
/// nothing of it. The direct socket's session is let start (greeting spoken) before the
/// server's memory is read, so what a session itself holds is not counted as the frame's.
#[tokio::test]
async fn a_frame_declaring_a_terabyte_is_refused_from_its_header_and_holds_nothing() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let auth = format!("Bearer {key}");
    let direct = "/v1/agents/widget/session";
    // One whole session first, so the engine's first-use allocations are behind us.
    let mut warm = raw_socket(&server, direct, &[("Authorization", auth.as_str())]).await;
    assert!(greeted(&mut warm).await, "the warm-up session was greeted");
    drop(warm);
    for (path, headers) in [
        ("/v1/sessions/twilio/stream", vec![]),
        (direct, vec![("Authorization", auth.as_str())]),
    ] {
        let mut stream = raw_socket(&server, path, &headers).await;
        if path == direct {
            assert!(greeted(&mut stream).await, "{path}: greeted");
        }
        let before = rss_kb(&server);
        let started = Instant::now();
        stream
            .write_all(&frame_header(0x82, 1 << 40))
            .await
            .unwrap();
        let sent = flood(&mut stream, Duration::from_millis(600)).await;
        let grown = rss_kb(&server).saturating_sub(before);
        assert_eq!(
            close_code_of(&mut stream, Duration::from_secs(2)).await,
            Some(1009),
            "{path}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{path}: closed only after {:?}",
            started.elapsed()
        );
        eprintln!("{path}: {sent} bytes offered, RSS grew {grown} KB");
        // What the kernel's socket buffers take on loopback, and no more: a server reading
        // the payload took hundreds of MB in this time.
        assert!(
            sent < 32 << 20,
            "{path}: the server kept reading ({sent} bytes)"
        );
        assert!(grown < 8 * 1024, "{path}: the server grew by {grown} KB");
    }
}

/// Whether the direct session on `stream` spoke its greeting to the end within 30 s.
async fn greeted(stream: &mut TcpStream) -> bool {
    first_frame_where(stream, Duration::from_secs(30), |opcode, payload| {
        opcode == 0x1 && String::from_utf8_lossy(payload).contains("agent.audio.end")
    })
    .await
    .is_some()
}

/// A frame with RSV1 set, with no extension negotiated, is a protocol error: 1002, not the
/// 1007 (invalid data) it used to get.
#[tokio::test]
async fn a_frame_with_a_reserved_bit_set_closes_with_a_protocol_error() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let auth = format!("Bearer {key}");
    let mut stream = raw_socket(
        &server,
        "/v1/agents/widget/session",
        &[("Authorization", auth.as_str())],
    )
    .await;
    let mut frame = text_frame("{\"type\":\"end\"}");
    frame[0] |= 0x40;
    stream.write_all(&frame).await.unwrap();
    assert_eq!(
        close_code_of(&mut stream, Duration::from_secs(5)).await,
        Some(1002)
    );
    let mut stream = raw_socket(&server, "/v1/sessions/twilio/stream", &[]).await;
    let mut frame = text_frame("{\"event\":\"connected\"}");
    frame[0] |= 0x40;
    stream.write_all(&frame).await.unwrap();
    assert_eq!(
        close_code_of(&mut stream, Duration::from_secs(5)).await,
        Some(1002)
    );
}

/// A frame whose header came but whose payload never completes is refused once
/// `websocket_frame_timeout_seconds` have passed (1008), on both sockets.
#[tokio::test]
async fn a_frame_that_never_completes_times_out() {
    let server = Server::start_with(
        Storage::fresh().await,
        &[("SWITCHBOARD__SERVER__WEBSOCKET_FRAME_TIMEOUT_SECONDS", "1")],
    )
    .await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let auth = format!("Bearer {key}");
    for (path, headers) in [
        ("/v1/sessions/twilio/stream", vec![]),
        (
            "/v1/agents/widget/session",
            vec![("Authorization", auth.as_str())],
        ),
    ] {
        let mut stream = raw_socket(&server, path, &headers).await;
        let started = Instant::now();
        let mut partial = frame_header(0x81, 1000);
        partial.extend_from_slice(&[b' '; 10]);
        stream.write_all(&partial).await.unwrap();
        assert_eq!(
            close_code_of(&mut stream, Duration::from_secs(4)).await,
            Some(1008),
            "{path}"
        );
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(3),
            "{path}: closed after {waited:?}"
        );
    }
}

/// Anyone can open the Twilio stream (its token comes in `start`): until then it takes no
/// message over 4 KiB, refused from the frame's header; a `start`-sized message is fine.
#[tokio::test]
async fn a_twilio_stream_holds_only_a_few_kb_before_start() {
    let server = Server::start().await;
    let mut stream = raw_socket(&server, "/v1/sessions/twilio/stream", &[]).await;
    stream
        .write_all(&text_frame(
            &json!({"event": "connected", "padding": "x".repeat(2000)}).to_string(),
        ))
        .await
        .unwrap();
    // 5 KB declared, none of it sent: refused from the header.
    stream
        .write_all(&frame_header(0x81, 5 * 1024))
        .await
        .unwrap();
    assert_eq!(
        close_code_of(&mut stream, Duration::from_secs(2)).await,
        Some(1009)
    );
}

/// A direct socket whose client sends nothing is closed after `direct_idle_timeout_seconds`
/// (1008, with the reason) and its session ended: the tier's only place is free again.
#[tokio::test]
async fn an_idle_direct_socket_is_closed_and_frees_its_session_place() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    let server = Server::start_with(
        Storage::fresh().await,
        &[
            ("SWITCHBOARD__SERVER__DIRECT_IDLE_TIMEOUT_SECONDS", "1"),
            ("SWITCHBOARD__TIERS__STARTER__MAX_CONCURRENT_SESSIONS", "1"),
        ],
    )
    .await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let open = || async {
        let url = server
            .url("/v1/agents/widget/session")
            .replacen("http://", "ws://", 1);
        let mut request = url.as_str().into_client_request().unwrap();
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {key}").parse().unwrap());
        tokio_tungstenite::connect_async(request).await
    };
    let (mut socket, _) = open().await.expect("the first session opens");
    // The tier's one place is taken.
    assert!(open().await.is_err(), "a second session was let in");
    let started = Instant::now();
    let closed = first_message(
        &mut socket,
        Duration::from_secs(5),
        |message| match message {
            Message::Close(frame) => Some(frame.map(|f| (u16::from(f.code), f.reason.to_string()))),
            _ => None,
        },
    )
    .await
    .flatten();
    let (code, reason) = closed.expect("the idle socket is closed");
    assert_eq!(code, 1008, "{reason}");
    assert!(reason.contains("no audio or message"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(3));
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(2), socket.next()).await {}
    // The place is free: a new session is let in.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match open().await {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => panic!("no place freed: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Sends a request head announcing a body of `length` bytes and then `body` a byte at a time,
/// `gap` apart; answers the status and JSON of the answer, and how long it took.
async fn slow_request(
    server: &Server,
    head: &str,
    length: usize,
    body: &[u8],
    gap: Duration,
) -> (u16, Value, Duration) {
    let address = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let started = Instant::now();
    let request = format!("{head}Host: {address}\r\nContent-Length: {length}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let body = body.to_vec();
    let trickle = tokio::spawn(async move {
        for byte in body {
            if writer.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(gap).await;
        }
        // Holds the connection open, sending nothing more.
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(writer);
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = [0u8; 4096];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
            let text = String::from_utf8_lossy(&answer);
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_string())
                    })
                    .and_then(|v| v.parse::<usize>().ok());
                if length.is_some_and(|l| body.len() >= l) {
                    break;
                }
            }
        }
    })
    .await;
    trickle.abort();
    assert!(read.is_ok(), "no answer within 10 s");
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&answer).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::Null),
        elapsed,
    )
}

/// A body announced and never sent, or sent a byte at a time, is cut off with 408
/// `request_timeout` once `body_read_timeout_seconds` (and then the minimum rate) run out.
#[tokio::test]
async fn a_body_that_stalls_or_trickles_is_cut_off_with_408() {
    let server = Server::start_with(
        Storage::fresh().await,
        &[
            ("SWITCHBOARD__SERVER__BODY_READ_TIMEOUT_SECONDS", "1"),
            ("SWITCHBOARD__SERVER__BODY_MIN_BYTES_PER_SECOND", "1000"),
        ],
    )
    .await;
    let key = server.key().to_string();
    let json_head = format!(
        "POST /v1/agents HTTP/1.1\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\n"
    );
    // Announced as 100 KB, never sent.
    let (status, body, took) =
        slow_request(&server, &json_head, 100_000, b"", Duration::ZERO).await;
    assert_eq!(status, 408, "{body}");
    assert_eq!(error_code(&body), "request_timeout", "{body}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    // One byte every 100 ms, far under 1000 bytes/s.
    let (status, body, took) = slow_request(
        &server,
        &json_head,
        100_000,
        &[b' '; 100],
        Duration::from_millis(100),
    )
    .await;
    assert_eq!(status, 408, "{body}");
    assert_eq!(error_code(&body), "request_timeout", "{body}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    // A multipart upload stalls the same way.
    let upload_head = format!(
        "POST /v1/audio/transcriptions HTTP/1.1\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary=XyZ\r\n"
    );
    let (status, _, took) = slow_request(
        &server,
        &upload_head,
        100_000,
        b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF",
        Duration::ZERO,
    )
    .await;
    assert_eq!(status, 408);
    assert!(took < Duration::from_secs(3), "{took:?}");
    // A body that arrives in time is served as before.
    let (status, body) =
        call(server.post("/v1/agents", &key, json!({"id": "quick", "name": "Quick"}))).await;
    assert_eq!(status, 201, "{body}");
}

/// A webhook body over its limit is refused with the documented JSON error (it was a bare
/// text/plain 413).
#[tokio::test]
async fn an_oversized_webhook_body_is_refused_with_the_json_error() {
    let server = Server::start().await;
    let big = "x".repeat(300 * 1024);
    for (path, content_type) in [
        (
            "/v1/sessions/twilio/inbound",
            "application/x-www-form-urlencoded",
        ),
        (
            "/v1/sessions/twilio/task/tsk_1/status",
            "application/x-www-form-urlencoded",
        ),
        ("/v1/billing/webhook", "application/json"),
    ] {
        let response = server
            .http
            .post(server.url(path))
            .header("Content-Type", content_type)
            .body(big.clone())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let (_, body) = json_of(response).await;
        assert_eq!(status, 413, "{path}: {body}");
        assert!(kind.starts_with("application/json"), "{path}: {kind}");
        assert_eq!(error_code(&body), "payload_too_large", "{path}: {body}");
    }
}
