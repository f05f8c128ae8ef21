//! Webhooks to the integrator, as an integrator sees them: endpoints registered over REST
//! (validated, limited, owned), events posted to a receiver of the test's own with a
//! signature it checks by its own HMAC computation (and Python's `hmac`, when the test
//! virtualenv is there), `call.ended` with the transcript of a direct session, a retry after
//! a 500, and a delivery left pending by a killed server made after the restart.

mod common;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use tokio_tungstenite::tungstenite::Message;

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// An integrator's endpoint on loopback: records every request and answers each with the
/// next status of its script (200 once the script is spent).
#[derive(Clone)]
struct Receiver {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
}

impl Receiver {
    fn start(script: &[u16]) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        let receiver = Receiver {
            url,
            received: Arc::default(),
            script: Arc::new(Mutex::new(script.iter().copied().collect())),
        };
        let shared = receiver.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let shared = shared.clone();
                std::thread::spawn(move || {
                    if let Some(request) = read_request(&mut stream) {
                        shared.received.lock().unwrap().push(request);
                        let status = shared.script.lock().unwrap().pop_front().unwrap_or(200);
                        let answer = format!(
                            "HTTP/1.1 {status} Scripted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        );
                        let _ = stream.write_all(answer.as_bytes());
                    }
                });
            }
        });
        receiver
    }

    fn all(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until a request of event `kind` has come; answers all of that kind so far.
    async fn wait_for(&self, kind: &str, count: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let of_kind: Vec<Received> = self
                .all()
                .into_iter()
                .filter(|r| r.json()["type"] == kind)
                .collect();
            if of_kind.len() >= count {
                return of_kind;
            }
            assert!(
                Instant::now() < deadline,
                "{count} {kind} deliveries did not come; got {:?}",
                self.all().iter().map(Received::json).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    Some(Received {
        headers,
        body: data[head_end..head_end + length].to_vec(),
    })
}

/// Checks `Switchboard-Signature` as an integrator would, with its own HMAC-SHA256 over
/// `t.body`, and (when the test virtualenv is there) with Python's `hmac` too.
fn assert_signed(request: &Received, secret: &str) {
    let header = request
        .headers
        .get("switchboard-signature")
        .expect("a Switchboard-Signature header");
    assert_signature(header, &request.body, secret);
}

fn assert_signature(header: &str, body: &[u8], secret: &str) {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = Some(value.to_string()),
            Some(("v1", value)) => v1 = Some(value.to_string()),
            _ => {}
        }
    }
    let (t, v1) = (t.expect("t="), v1.expect("v1="));
    let sent_at: i64 = t.parse().expect("t is unix seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - sent_at).abs() < 120, "t={t} is not now ({now})");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v1, expected, "the signature is the HMAC-SHA256 of t.body");

    let Ok(python) = std::env::var("SWITCHBOARD_TEST_PYTHON") else {
        return;
    };
    let script = "import hmac, hashlib, sys\n\
secret, header = sys.argv[1], sys.argv[2]\n\
body = sys.stdin.buffer.read()\n\
parts = dict(p.split('=', 1) for p in header.split(','))\n\
mac = hmac.new(secret.encode(), parts['t'].encode() + b'.' + body, hashlib.sha256).hexdigest()\n\
sys.exit(0 if hmac.compare_digest(mac, parts['v1']) else 1)\n";
    let mut child = std::process::Command::new(python)
        .args(["-c", script, secret, header])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    child.stdin.take().unwrap().write_all(body).unwrap();
    assert!(
        child.wait().unwrap().success(),
        "Python's hmac refuses the signature"
    );
}

/// The environment of a server that may post to loopback receivers and retries quickly.
fn quick_retries(base_ms: &str) -> Vec<(&'static str, String)> {
    vec![
        ("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.1\"]".to_string()),
        ("SWITCHBOARD__WEBHOOKS__RETRY_BASE_MS", base_ms.to_string()),
        ("SWITCHBOARD__WEBHOOKS__POLL_MS", "100".to_string()),
    ]
}

async fn start_with(storage: Storage, env: &[(&'static str, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_with(storage, &env).await
}

async fn subscribe(server: &Server, key: &str, url: &str, events: &[&str]) -> Value {
    let (status, created) =
        call(server.post("/v1/webhooks", key, json!({"url": url, "events": events}))).await;
    assert_eq!(status, 201, "{created}");
    created
}

async fn new_agent(server: &Server, key: &str, id: &str) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": id, "name": "Front desk", "firstMessage": "Hello from the desk.", "maxTokens": 20}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

type Socket = DirectSocket;

async fn open_session(server: &Server, key: &str, agent: &str) -> Socket {
    open_direct(server, key, agent, "").await
}

/// Reads events until one of type `kind`; answers it.
async fn read_until(socket: &mut Socket, kind: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = tokio::time::timeout(left, socket.next())
            .await
            .unwrap_or_else(|_| panic!("no {kind} in time"))
            .expect("the socket is open")
            .expect("a frame");
        if let Message::Text(text) = frame {
            let event: Value = serde_json::from_str(&text).unwrap();
            if event["type"] == kind {
                return event;
            }
        }
    }
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::text(message.to_string()))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_direct_sessions_end_is_posted_signed_with_its_transcript() {
    let receiver = Receiver::start(&[]);
    let server = start_with(Storage::fresh().await, &quick_retries("300")).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "desk").await;
    let endpoint = subscribe(
        &server,
        &key,
        &receiver.url,
        &["call.started", "call.ended"],
    )
    .await;
    let secret = endpoint["secret"].as_str().unwrap().to_string();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 6 + 64,
        "{secret}"
    );

    let mut socket = open_session(&server, &key, "desk").await;
    let started = read_until(&mut socket, "session.started", Duration::from_secs(10)).await;
    let session = started["sessionId"].as_str().unwrap().to_string();
    read_until(&mut socket, "agent.audio.end", Duration::from_secs(20)).await;
    send(
        &mut socket,
        json!({"type": "text", "text": "My order number is forty two."}),
    )
    .await;
    read_until(&mut socket, "agent.audio.end", Duration::from_secs(60)).await;
    send(&mut socket, json!({"type": "end"})).await;
    read_until(&mut socket, "session.ended", Duration::from_secs(10)).await;

    let started = receiver
        .wait_for("call.started", 1, Duration::from_secs(10))
        .await;
    assert_signed(&started[0], &secret);
    let event = started[0].json();
    assert_eq!(event["data"]["sessionId"], session, "{event}");
    assert_eq!(event["data"]["agentId"], "desk", "{event}");
    assert_eq!(event["data"]["transport"], "direct", "{event}");

    let ended = receiver
        .wait_for("call.ended", 1, Duration::from_secs(20))
        .await;
    assert_signed(&ended[0], &secret);
    let event = ended[0].json();
    assert!(event["id"].as_str().unwrap().starts_with("evt_"), "{event}");
    assert!(is_iso_millis(&event["createdAt"]), "{event}");
    let data = &event["data"];
    assert_eq!(data["sessionId"], session, "{event}");
    assert_eq!(data["status"], "completed", "{event}");
    assert!(data["endReason"].is_string(), "{event}");
    assert!(data["durationMs"].as_i64().unwrap() > 0, "{event}");
    assert!(
        is_iso_millis(&data["startedAt"]) && is_iso_millis(&data["endedAt"]),
        "{event}"
    );
    let turns = data["transcript"].as_array().unwrap();
    assert_eq!(turns[0]["speaker"], "agent", "{event}");
    assert_eq!(turns[0]["text"], "Hello from the desk.", "{event}");
    assert!(
        turns
            .iter()
            .any(|t| t["speaker"] == "user" && t["text"] == "My order number is forty two."),
        "{event}"
    );
    // The greeting and the answer were synthesized on the embedded engines: charged.
    assert!(data["costCredits"].as_f64().unwrap() > 0.0, "{event}");
    assert!(data["rootCause"]["issues"].is_array(), "{event}");
    assert!(data["recordingUrl"].is_null(), "not recorded: {event}");

    // The endpoint's deliveries show both, each delivered on its first attempt.
    let id = endpoint["id"].as_str().unwrap();
    let (status, deliveries) =
        call(server.get(&format!("/v1/webhooks/{id}/deliveries"), &key)).await;
    assert_eq!(status, 200, "{deliveries}");
    let rows = deliveries["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{deliveries}");
    for row in rows {
        assert_eq!(row["status"], "delivered", "{deliveries}");
        assert_eq!(row["attempts"][0]["statusCode"], 200, "{deliveries}");
        assert!(row["attempts"][0]["error"].is_null(), "{deliveries}");
    }
    assert_eq!(
        rows[1]["payload"], event,
        "the payload kept is the one posted"
    );
}

#[tokio::test]
async fn an_endpoint_that_fails_is_tried_again_and_its_attempts_are_listed() {
    let receiver = Receiver::start(&[500]);
    let server = start_with(Storage::fresh().await, &quick_retries("300")).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "desk").await;
    let endpoint = subscribe(&server, &key, &receiver.url, &["call.started"]).await;
    let secret = endpoint["secret"].as_str().unwrap();

    let mut socket = open_session(&server, &key, "desk").await;
    read_until(&mut socket, "session.started", Duration::from_secs(10)).await;
    let both = receiver
        .wait_for("call.started", 2, Duration::from_secs(15))
        .await;
    // The same event, signed afresh each time.
    assert_eq!(both[0].json()["id"], both[1].json()["id"]);
    assert_eq!(both[0].body, both[1].body);
    assert_signed(&both[1], secret);

    let id = endpoint["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let delivery = loop {
        let (status, page) = call(server.get(&format!("/v1/webhooks/{id}/deliveries"), &key)).await;
        assert_eq!(status, 200, "{page}");
        let delivery = page["data"][0].clone();
        if delivery["status"] == "delivered" {
            break delivery;
        }
        assert!(Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let attempts = delivery["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{delivery}");
    assert_eq!(attempts[0]["attempt"], 1);
    assert_eq!(attempts[0]["statusCode"], 500, "{delivery}");
    assert_eq!(
        attempts[0]["error"], "the endpoint answered HTTP 500",
        "{delivery}"
    );
    assert_eq!(attempts[1]["statusCode"], 200, "{delivery}");
    assert!(attempts[1]["error"].is_null(), "{delivery}");
    assert!(delivery["nextAttemptAt"].is_null(), "{delivery}");
    assert!(is_iso_millis(&delivery["completedAt"]), "{delivery}");
    socket.close(None).await.ok();
}

#[tokio::test]
async fn a_delivery_pending_when_the_server_is_killed_is_made_after_the_restart() {
    // The endpoint is down (503) when the event happens; the server dies before the retry.
    let receiver = Receiver::start(&[503]);
    let env = quick_retries("3000");
    let server = start_with(Storage::fresh().await, &env).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "desk").await;
    let endpoint = subscribe(&server, &key, &receiver.url, &["call.started"]).await;
    let id = endpoint["id"].as_str().unwrap().to_string();

    let mut socket = open_session(&server, &key, "desk").await;
    read_until(&mut socket, "session.started", Duration::from_secs(10)).await;
    receiver
        .wait_for("call.started", 1, Duration::from_secs(10))
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, page) = call(server.get(&format!("/v1/webhooks/{id}/deliveries"), &key)).await;
        if page["data"][0]["attempts"]
            .as_array()
            .is_some_and(|a| a.len() == 1)
        {
            assert_eq!(page["data"][0]["status"], "pending", "{page}");
            break;
        }
        assert!(Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut server = server;
    let pid = server.pid().to_string();
    std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap();
    server.wait_exit(Duration::from_secs(10));
    drop(socket);
    let storage = server.into_storage();

    let server = start_with(storage, &env).await;
    let both = receiver
        .wait_for("call.started", 2, Duration::from_secs(20))
        .await;
    assert_eq!(both[0].body, both[1].body, "the same event, again");
    assert_signed(&both[1], endpoint["secret"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, page) = call(server.get(&format!("/v1/webhooks/{id}/deliveries"), &key)).await;
        if page["data"][0]["status"] == "delivered" {
            assert_eq!(page["data"][0]["attempts"][1]["statusCode"], 200, "{page}");
            break;
        }
        assert!(Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn endpoints_are_validated_limited_listed_without_secrets_and_owned() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let other = server.storage.create_key("dev_other");
    let url = "https://hooks.example.com/switchboard";
    for (body, param) in [
        (json!({"events": ["call.ended"]}), "url"),
        (
            json!({"url": "ftp://hooks.example.com/x", "events": ["call.ended"]}),
            "url",
        ),
        (
            json!({"url": "http://169.254.169.254/latest", "events": ["call.ended"]}),
            "url",
        ),
        (
            json!({"url": "http://127.0.0.1:9/x", "events": ["call.ended"]}),
            "url",
        ),
        (json!({"url": "not a url", "events": ["call.ended"]}), "url"),
        (json!({"url": url}), "events"),
        (json!({"url": url, "events": []}), "events"),
        (
            json!({"url": url, "events": ["call.ended", "call.ringing"]}),
            "events",
        ),
    ] {
        let (status, answer) = call(server.post("/v1/webhooks", &key, body.clone())).await;
        assert_eq!(status, 400, "{body} -> {answer}");
        assert_eq!(error_code(&answer), "validation_error", "{answer}");
        assert_eq!(answer["error"]["param"], param, "{body} -> {answer}");
    }
    let (status, answer) = call(server.post(
        "/v1/webhooks",
        &key,
        json!({"url": url, "events": ["call.ended"], "secret": "mine"}),
    ))
    .await;
    assert_eq!(status, 400, "unknown fields are refused: {answer}");

    let created = subscribe(
        &server,
        &key,
        url,
        &[
            "call.ended",
            "call.analyzed",
            "call.ended",
            "transfer.completed",
        ],
    )
    .await;
    assert_eq!(
        created["events"],
        json!(["call.ended", "call.analyzed", "transfer.completed"])
    );
    assert!(is_iso_millis(&created["createdAt"]));
    let id = created["id"].as_str().unwrap().to_string();
    let (status, read) = call(server.get(&format!("/v1/webhooks/{id}"), &key)).await;
    assert_eq!(status, 200, "{read}");
    assert!(read.get("secret").is_none(), "{read}");
    assert_eq!(read["url"], url);
    let (status, list) = call(server.get("/v1/webhooks", &key)).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(page_ids(&list), vec![id.clone()]);
    assert!(!list.to_string().contains("whsec_"), "{list}");

    // Another developer neither sees nor touches it.
    for (method, path) in [
        (reqwest::Method::GET, format!("/v1/webhooks/{id}")),
        (
            reqwest::Method::GET,
            format!("/v1/webhooks/{id}/deliveries"),
        ),
        (reqwest::Method::DELETE, format!("/v1/webhooks/{id}")),
    ] {
        let (status, answer) = call(server.request(method.clone(), &path, &other)).await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
        assert_eq!(error_code(&answer), "not_found");
    }
    let (_, theirs) = call(server.get("/v1/webhooks", &other)).await;
    assert_eq!(theirs["data"], json!([]), "{theirs}");

    // Ten endpoints at most.
    for n in 1..10 {
        subscribe(&server, &key, &format!("{url}/{n}"), &["call.started"]).await;
    }
    let (status, answer) = call(server.post(
        "/v1/webhooks",
        &key,
        json!({"url": url, "events": ["call.started"]}),
    ))
    .await;
    assert_eq!(status, 409, "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 10"));
    let (status, page) = call(server.get("/v1/webhooks?limit=4", &key)).await;
    assert_eq!(status, 200);
    assert_eq!(page["data"].as_array().unwrap().len(), 4);
    assert_eq!(page["hasMore"], true);

    let (status, _) = call(server.delete(&format!("/v1/webhooks/{id}"), &key)).await;
    assert_eq!(status, 204);
    let (status, _) = call(server.get(&format!("/v1/webhooks/{id}"), &key)).await;
    assert_eq!(status, 404);
    let (status, _) = call(server.delete(&format!("/v1/webhooks/{id}"), &key)).await;
    assert_eq!(status, 404);
    // There is room again.
    subscribe(&server, &key, url, &["call.started"]).await;
}

/// The README's Python receiver, run as written: it accepts a real `call.ended` (and prints
/// the session) and refuses a forged one.
#[tokio::test]
async fn the_readme_receiver_checks_the_signature_of_a_real_call_ended() {
    let Ok(python) = std::env::var("SWITCHBOARD_TEST_PYTHON") else {
        eprintln!("skipped: SWITCHBOARD_TEST_PYTHON is not set");
        return;
    };
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README");
    let recipe = readme
        .split("### 5. Receive call events")
        .nth(1)
        .and_then(|rest| rest.split("```python\n").nth(1))
        .and_then(|block| block.split("```").next())
        .expect("the README's Python receiver")
        .to_string();
    assert!(recipe.lines().count() <= 15, "{recipe}");

    let server = start_with(Storage::fresh().await, &quick_retries("300")).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "desk").await;
    let port = {
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/hooks");
    let endpoint = subscribe(&server, &key, &url, &["call.ended"]).await;
    let mut receiver = std::process::Command::new(python)
        .args(["-c", &recipe])
        .env("WEBHOOK_SECRET", endpoint["secret"].as_str().unwrap())
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the receiver starts");
    let stdout = receiver.stdout.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines_tx.send(line);
        }
    });
    // A forged event is refused once the receiver listens.
    let forged = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let refused = loop {
        let sent = forged
            .post(&url)
            .header("Switchboard-Signature", "t=1,v1=00")
            .body(r#"{"type":"call.ended"}"#)
            .send()
            .await;
        if let Ok(answer) = sent {
            break answer.status().as_u16();
        }
        assert!(Instant::now() < deadline, "the receiver did not listen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(refused, 400);

    let mut socket = open_session(&server, &key, "desk").await;
    let started = read_until(&mut socket, "session.started", Duration::from_secs(10)).await;
    let session = started["sessionId"].as_str().unwrap().to_string();
    read_until(&mut socket, "agent.audio.end", Duration::from_secs(20)).await;
    send(&mut socket, json!({"type": "end"})).await;
    read_until(&mut socket, "session.ended", Duration::from_secs(10)).await;
    let printed = lines.recv_timeout(Duration::from_secs(20));
    let _ = receiver.kill();
    let _ = receiver.wait();
    let printed = printed.expect("the receiver printed the call");
    assert!(printed.starts_with(&session), "{printed}");
    assert!(printed.contains("Hello from the desk."), "{printed}");
}

/// An HTTP tool called in a live session learns the session and the agent from its headers
/// and can check, with its own secret, that the call came from here.
#[tokio::test]
async fn an_http_tool_gets_the_calls_context_signed_with_its_secret() {
    let mock = vendor_mock::VendorMock::start();
    let server = mock
        .server(&[("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.1\"]")])
        .await;
    let key = server.key().to_string();
    let tool_secret = "tool-secret-of-the-order-desk";
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "desk", "name": "Order desk", "llmProvider": "openai", "ttsProvider": "elevenlabs",
               "systemPrompt": "You help customers with their orders.",
               "metadata": {"tools": [{"name": "order_status", "description": "Look up an order",
                   "url": format!("{}/tools/order_status", mock.url), "timeoutMs": 2000,
                   "secret": tool_secret,
                   "headers": {"Authorization": "Bearer order-api-key-5678", "X-Shop": "north"},
                   "parameters": {"type": "object", "properties": {"orderId": {"type": "string"}},
                                  "required": ["orderId"]}}]}}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
    // The secret and the header values are never shown again, only their last characters.
    let tool = &body["metadata"]["tools"][0];
    assert_eq!(tool["secret"], json!({"hint": "desk"}), "{tool}");
    assert_eq!(
        tool["headers"]["Authorization"],
        json!({"hint": "5678"}),
        "{tool}"
    );
    assert_eq!(tool["headers"]["X-Shop"], json!({"hint": "h"}), "{tool}");
    let (_, read) = call(server.get("/v1/agents/desk", &key)).await;
    assert_eq!(read["metadata"], body["metadata"], "{read}");
    for plain in [tool_secret, "order-api-key-5678"] {
        assert!(!read.to_string().contains(plain), "{read}");
        if server.storage.database_url.is_none() {
            let file = server.storage.resolved_url();
            for path in [file.clone(), format!("{file}-wal")] {
                let stored = std::fs::read(&path).unwrap_or_default();
                assert!(
                    !stored.windows(plain.len()).any(|w| w == plain.as_bytes()),
                    "{plain} is in {path}"
                );
            }
        }
    }
    // Sent back as read, with another description: the stored values stay.
    let mut metadata = read["metadata"].clone();
    metadata["tools"][0]["description"] = json!("Look up an order by its id");
    let (status, answer) =
        call(server.put("/v1/agents/desk", &key, json!({"metadata": metadata}))).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["metadata"]["tools"][0]["headers"]["Authorization"],
        json!({"hint": "5678"})
    );

    let mut socket = open_session(&server, &key, "desk").await;
    let started = read_until(&mut socket, "session.started", Duration::from_secs(10)).await;
    let session = started["sessionId"].as_str().unwrap().to_string();
    send(
        &mut socket,
        json!({"type": "text", "text": "Where is my order?"}),
    )
    .await;
    read_until(&mut socket, "tool.result", Duration::from_secs(20)).await;
    socket.close(None).await.ok();

    let runs = mock.seen_at("/tools/order_status");
    assert_eq!(runs.len(), 1);
    let header = |name: &str| {
        runs[0]
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        header("authorization").as_deref(),
        Some("Bearer order-api-key-5678")
    );
    assert_eq!(header("x-shop").as_deref(), Some("north"));
    assert_eq!(
        header("switchboard-session-id").as_deref(),
        Some(session.as_str())
    );
    assert_eq!(header("switchboard-agent-id").as_deref(), Some("desk"));
    assert_eq!(
        header("switchboard-call-sid"),
        None,
        "a direct session has no call"
    );
    let body = serde_json::to_vec(&runs[0].body).unwrap();
    assert_eq!(body, br#"{"orderId":"ORD-7"}"#);
    assert_signature(
        &header("switchboard-signature").expect("the tool call is signed"),
        &body,
        tool_secret,
    );

    // A secret that is too short is refused when the agent is written, naming the tool.
    let (status, answer) = call(server.put(
        "/v1/agents/desk",
        &key,
        json!({"metadata": {"tools": [{"name": "order_status", "url": "https://example.com/t",
                                       "secret": "short"}]}}),
    ))
    .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["param"], "metadata", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("metadata.tools[0].secret"),
        "{answer}"
    );
    // Headers the server owns, a bad value, or a hint with nothing stored behind it are
    // refused naming the header, and change nothing.
    for (headers, named) in [
        (
            json!({"Switchboard-Agent-Id": "other"}),
            "Switchboard-Agent-Id",
        ),
        (json!({"Host": "elsewhere.example"}), "Host"),
        (json!({"X-Line": "a\r\nInjected: yes"}), "X-Line"),
        (json!({"X-New": {"hint": "abcd"}}), "X-New"),
        (json!({"Bad Name": "x"}), "Bad Name"),
    ] {
        let (status, answer) = call(server.put(
            "/v1/agents/desk",
            &key,
            json!({"metadata": {"tools": [{"name": "order_status", "url": "https://example.com/t",
                                           "headers": headers}]}}),
        ))
        .await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["param"], "metadata", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("metadata.tools[0].headers") && message.contains(named),
            "{answer}"
        );
    }
    let (_, after) = call(server.get("/v1/agents/desk", &key)).await;
    assert_eq!(
        after["metadata"]["tools"][0]["headers"]["Authorization"],
        json!({"hint": "5678"}),
        "{after}"
    );
    assert_eq!(
        after["metadata"]["tools"][0]["description"],
        "Look up an order by its id"
    );
}

/// Runs one direct session on `agent`: the greeting, one typed caller turn and its answer,
/// then the end. Answers the session's id.
async fn one_typed_turn(server: &Server, key: &str, agent: &str, said: &str) -> String {
    let mut socket = open_session(server, key, agent).await;
    let started = read_until(&mut socket, "session.started", Duration::from_secs(10)).await;
    let session = started["sessionId"].as_str().unwrap().to_string();
    read_until(&mut socket, "agent.audio.end", Duration::from_secs(20)).await;
    send(&mut socket, json!({"type": "text", "text": said})).await;
    read_until(&mut socket, "agent.audio.end", Duration::from_secs(30)).await;
    send(&mut socket, json!({"type": "end"})).await;
    read_until(&mut socket, "session.ended", Duration::from_secs(10)).await;
    session
}

/// The session's detail once its analysis is no longer `pending`.
async fn analysed_session(server: &Server, key: &str, session: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, detail) =
            call(server.get(&format!("/v1/observability/sessions/{session}"), key)).await;
        assert_eq!(status, 200, "{detail}");
        let state = detail["analysis"]["status"].as_str().unwrap_or_default();
        if state == "completed" || state == "failed" {
            return detail;
        }
        assert!(Instant::now() < deadline, "no analysis in time: {detail}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_calls_analysis_is_stored_on_the_session_and_sent_signed() {
    let mock = vendor_mock::VendorMock::start();
    let receiver = Receiver::start(&[]);
    let env = quick_retries("300");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = mock.server(&env).await;
    let key = server.key().to_string();
    let schema = json!({"type": "object", "required": ["said"],
        "properties": {"said": {"type": "string", "minLength": 5},
                       "callerTurns": {"type": "integer", "minimum": 1}}});
    let (status, agent) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "desk", "name": "Order desk", "llmProvider": "openai", "ttsProvider": "elevenlabs",
               "firstMessage": "Hello from the desk.",
               "analysis": {"successCriteria": "The caller gives an order number.", "dataSchema": schema}}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    assert_eq!(
        agent["analysis"],
        json!({"summary": true, "successCriteria": "The caller gives an order number.",
               "dataSchema": schema}),
        "defaults filled in: {agent}"
    );

    // What cannot be analysed is refused when written, and changes nothing.
    for (bad, says) in [
        (json!({"summry": true}), "analysis.summry is not a field"),
        (json!({"summary": false}), "asks for nothing"),
        (
            json!({"dataSchema": {"type": "object", "properties": {"a": {"type": "strng"}}}}),
            "not a usable JSON Schema",
        ),
        (
            json!({"dataSchema": {"type": "object",
                                  "properties": {"a": {"$ref": "http://127.0.0.1:9/s.json"}}}}),
            "not a usable JSON Schema",
        ),
    ] {
        let (status, answer) =
            call(server.put("/v1/agents/desk", &key, json!({"analysis": bad}))).await;
        assert_invalid(status, &answer, "analysis", &bad.to_string());
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{bad}: {answer}");
    }
    let (_, unchanged) = call(server.get("/v1/agents/desk", &key)).await;
    assert_eq!(unchanged["analysis"], agent["analysis"], "{unchanged}");

    let endpoint = subscribe(&server, &key, &receiver.url, &["call.analyzed"]).await;
    let secret = endpoint["secret"].as_str().unwrap().to_string();
    let session = one_typed_turn(&server, &key, "desk", "My order number is forty two.").await;

    let analyzed = receiver
        .wait_for("call.analyzed", 1, Duration::from_secs(30))
        .await;
    assert_signed(&analyzed[0], &secret);
    let event = analyzed[0].json();
    let data = &event["data"];
    assert_eq!(data["sessionId"], session, "{event}");
    assert_eq!(data["agentId"], "desk", "{event}");
    let analysis = &data["analysis"];
    assert_eq!(analysis["status"], "completed", "{event}");
    assert_eq!(
        analysis["summary"], "The caller said \"My order number is forty two.\".",
        "the model read the stored transcript: {event}"
    );
    assert_eq!(analysis["success"], true, "{event}");
    assert_eq!(
        analysis["successReason"], "The caller gave an order number.",
        "{event}"
    );
    assert_eq!(
        analysis["data"],
        json!({"said": "My order number is forty two.", "callerTurns": 1}),
        "{event}"
    );
    assert_eq!(analysis["errors"], json!([]), "{event}");
    assert_eq!(analysis["provider"], "openai", "{event}");
    assert!(
        analysis["inputTokens"].as_i64().unwrap() > 0,
        "the mock's usage counted: {event}"
    );
    assert!(is_iso_millis(&analysis["completedAt"]), "{event}");

    // The same analysis is on the session.
    let detail = analysed_session(&server, &key, &session).await;
    assert_eq!(&detail["analysis"], analysis, "{detail}");
    // One request per part, each at temperature 0 with the transcript.
    let asked: Vec<vendor_mock::Seen> = mock
        .seen_at("/v1/chat/completions")
        .into_iter()
        .filter(|seen| {
            seen.body["messages"][0]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with("You review the transcript"))
        })
        .collect();
    assert_eq!(asked.len(), 3, "summary, success and data");
    for seen in &asked {
        assert_eq!(seen.body["temperature"], 0.0, "{:?}", seen.body);
        let question = seen.body["messages"][1]["content"].as_str().unwrap();
        assert!(
            question.contains("Agent: Hello from the desk.\nCaller: My order number is forty two."),
            "{question}"
        );
    }

    // Fields the model cannot give in the schema's form are not stored: the analysis says
    // why, and with nothing else asked it has failed.
    let (status, strict) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "strict", "name": "Strict desk", "llmProvider": "openai", "ttsProvider": "elevenlabs",
               "firstMessage": "Hello from the desk.",
               "analysis": {"summary": false, "dataSchema": {"type": "object", "required": ["items"],
                   "properties": {"items": {"type": "integer", "minimum": 2}}}}}),
    ))
    .await;
    assert_eq!(status, 201, "{strict}");
    let session = one_typed_turn(&server, &key, "strict", "I would like two boxes.").await;
    let detail = analysed_session(&server, &key, &session).await;
    let analysis = &detail["analysis"];
    assert_eq!(analysis["status"], "failed", "{detail}");
    assert!(analysis["data"].is_null(), "{detail}");
    assert!(analysis["summary"].is_null(), "not asked: {detail}");
    let errors = analysis["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{detail}");
    assert!(
        errors[0]
            .as_str()
            .unwrap()
            .contains("do not match the dataSchema"),
        "{detail}"
    );
    let analyzed = receiver
        .wait_for("call.analyzed", 2, Duration::from_secs(30))
        .await;
    assert_eq!(analyzed[1].json()["data"]["analysis"]["status"], "failed");
}

/// A node that dies while a call's analysis runs fails that analysis when it starts again,
/// saying why, instead of leaving it pending for good.
#[tokio::test]
async fn an_analysis_cut_off_by_a_crash_is_failed_with_the_reason_after_the_restart() {
    let mock = vendor_mock::VendorMock::start();
    // Every model request waits 3 s at the vendor: the analysis is still running when the
    // node dies.
    let slow = [
        (
            "SWITCHBOARD__VENDORS__OPENAI__API_KEY",
            "platform-openai-slow",
        ),
        ("SWITCHBOARD__VENDORS__OPENAI__TIMEOUT_MS", "15000"),
    ];
    let server = mock.server(&slow).await;
    let key = server.key().to_string();
    let (status, agent) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "desk", "name": "Order desk", "llmProvider": "openai", "ttsProvider": "elevenlabs",
               "firstMessage": "Hello from the desk.", "analysis": {"summary": true}}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    let session = one_typed_turn(&server, &key, "desk", "My order number is forty two.").await;
    let path = format!("/v1/observability/sessions/{session}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, detail) = call(server.get(&path, &key)).await;
        if detail["analysis"]["status"] == "pending" {
            break;
        }
        assert!(Instant::now() < deadline, "no analysis started: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let storage = server.into_storage();
    let mut env = mock.env();
    env.retain(|(name, _)| !slow.iter().any(|(other, _)| other == name));
    env.extend(slow.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start_with(storage, &env).await;
    let (status, detail) = call(server.get(&path, &key)).await;
    assert_eq!(status, 200, "{detail}");
    let analysis = &detail["analysis"];
    assert_eq!(analysis["status"], "failed", "{detail}");
    assert_eq!(
        analysis["errors"],
        json!(["the server stopped before the analysis finished"]),
        "{detail}"
    );
    assert!(analysis["completedAt"].is_string(), "{detail}");
}
