//! Test harness: starts the real `switchboard` binary on an ephemeral port with its own fresh
//! database — a SQLite file in a temp dir, or, when `SWITCHBOARD_TEST_POSTGRES_URL` points at
//! a PostgreSQL server, a new database on it — and talks to it over real HTTP.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// Where the server under test keeps its state; survives restarts of the server.
pub struct Storage {
    pub data_dir: tempfile::TempDir,
    pub database_url: Option<String>,
}

impl Storage {
    /// A fresh, empty store on the backend this test run targets.
    pub async fn fresh() -> Storage {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let database_url = match std::env::var("SWITCHBOARD_TEST_POSTGRES_URL") {
            Ok(admin) if !admin.is_empty() => Some(create_postgres_database(&admin).await),
            _ => None,
        };
        Storage {
            data_dir,
            database_url,
        }
    }

    /// The URL the service itself resolves (SQLite file when no PostgreSQL).
    pub fn resolved_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| {
            self.data_dir
                .path()
                .join("switchboard.db")
                .to_string_lossy()
                .into_owned()
        })
    }

    /// Runs the binary with this store's environment.
    pub fn command(&self) -> Command {
        let mut command = Command::new(BIN);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SWITCHBOARD_DATA_DIR", self.data_dir.path())
            .env("SWITCHBOARD_MODELS_DIR", models_dir())
            .env("SWITCHBOARD_BIND", "127.0.0.1:0")
            .env("SWITCHBOARD_LOG", "warn")
            .env("SWITCHBOARD__AUTH__REVOCATION_POLL_MS", "100")
            .env("SWITCHBOARD__AUTH__LAST_USED_FLUSH_MS", "200")
            .env("SWITCHBOARD__METERING__FLUSH_MS", "200")
            // Tests that exercise rate limits set their own; the others make many requests.
            .env("SWITCHBOARD__RATE_LIMIT__REQUESTS", "1000000")
            .env("SWITCHBOARD__SERVER__WORKERS", "2")
            // Hundreds of test servers start: each loads only the models its test uses.
            .env("SWITCHBOARD__ENGINES__PRELOAD", "false")
            // Turns end on the silence timer the tests were written for (synthetic speech
            // misleads the end-of-turn model), whatever the shipped default becomes;
            // tests/turn_detection.rs tests smart detection on recorded speech.
            .env("SWITCHBOARD__ENGINES__TURN_DETECTION", "silence")
            .env("SWITCHBOARD__DATABASE__POOL_SIZE", "4");
        if let Some(url) = &self.database_url {
            command.env("SWITCHBOARD_DATABASE_URL", url);
        }
        command
    }

    /// Runs a CLI command to completion; answers (success, stdout, stderr).
    pub fn cli(&self, args: &[&str]) -> (bool, String, String) {
        let output = self.command().args(args).output().expect("run the CLI");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Creates a key for `developer` through the CLI; answers the raw key.
    pub fn create_key(&self, developer: &str) -> String {
        let (ok, stdout, stderr) = self.cli(&["keys", "create", "--developer", developer]);
        assert!(ok, "keys create failed: {stderr}");
        stdout
            .lines()
            .last()
            .expect("a key line")
            .trim()
            .to_string()
    }
}

async fn create_postgres_database(admin_url: &str) -> String {
    let (client, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test PostgreSQL server");
    tokio::spawn(connection);
    let name = format!("sb_test_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create a test database");
    let base = admin_url
        .rsplit_once('/')
        .map_or(admin_url, |(base, _)| base);
    format!("{base}/{name}")
}

/// A running server and an HTTP client for it.
pub struct Server {
    pub storage: Storage,
    pub base: String,
    /// The key printed on first start, when this start created the bootstrap developer.
    pub bootstrap_key: Option<String>,
    pub http: reqwest::Client,
    child: Child,
}

impl Server {
    /// A server on a fresh store.
    pub async fn start() -> Server {
        Server::start_on(Storage::fresh().await).await
    }

    /// A server on an existing store.
    pub async fn start_on(storage: Storage) -> Server {
        Server::start_with(storage, &[]).await
    }

    /// A server on an existing store with extra environment.
    pub async fn start_with(storage: Storage, env: &[(&str, &str)]) -> Server {
        let log = std::fs::File::create(storage.data_dir.path().join("server.log"))
            .expect("server log file");
        Server::start_logging_to(storage, env, Stdio::from(log)).await
    }

    /// A server on an existing store with extra environment, its log (standard error) going
    /// to `log`.
    pub async fn start_logging_to(storage: Storage, env: &[(&str, &str)], log: Stdio) -> Server {
        let mut command = storage.command();
        command.envs(env.iter().copied());
        let mut child = command
            .arg("serve")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start the server");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines_tx, lines_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(line).is_err() {
                    // Keep draining so the server never blocks on a full pipe.
                    continue;
                }
            }
        });
        let mut bootstrap_key = None;
        let base = loop {
            let line = lines_rx
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| {
                    panic!(
                        "server did not start; log: {}",
                        server_log(&storage.data_dir.path().join("server.log"))
                    )
                });
            if line.starts_with("sb_live_") {
                bootstrap_key = Some(line.trim().to_string());
            }
            if let Some(url) = line.strip_prefix("switchboard listening on ") {
                break url.trim().to_string();
            }
        };
        Server {
            storage,
            base,
            bootstrap_key,
            http: reqwest::Client::new(),
            child,
        }
    }

    /// Stops the server gracefully (SIGTERM) and starts it again on the same store.
    pub async fn restart(self) -> Server {
        let storage = self.stop();
        Server::start_on(storage).await
    }

    /// Stops the server gracefully and hands back its store.
    pub fn stop(mut self) -> Storage {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        for _ in 0..200 {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Move the store out; Drop then finds the child already gone.
        std::mem::replace(
            &mut self.storage,
            Storage {
                data_dir: tempfile::tempdir().expect("temp dir"),
                database_url: None,
            },
        )
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The server process's id (for signals).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `within` for the process to exit by itself; answers its status.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let started = std::time::Instant::now();
        while started.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Hands back the store of a server whose process has exited.
    pub fn into_storage(mut self) -> Storage {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(
            &mut self.storage,
            Storage {
                data_dir: tempfile::tempdir().expect("temp dir"),
                database_url: None,
            },
        )
    }

    /// One sample of `/metrics` (0 when the series is absent), e.g.
    /// `switchboard_change_listener_up` or `name{label="value"}`.
    pub async fn metric(&self, series: &str) -> f64 {
        let text = self
            .http
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("metrics answer")
            .text()
            .await
            .expect("metrics text");
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .find_map(|line| {
                let (name, value) = line.rsplit_once(' ')?;
                (name == series).then(|| value.parse().ok()).flatten()
            })
            .unwrap_or(0.0)
    }

    /// The bootstrap developer's key.
    pub fn key(&self) -> &str {
        self.bootstrap_key
            .as_deref()
            .expect("this start printed a bootstrap key")
    }

    /// A request with `Authorization: Bearer <key>`.
    pub fn request(&self, method: Method, path: &str, key: &str) -> RequestBuilder {
        self.http
            .request(method, self.url(path))
            .header("Authorization", format!("Bearer {key}"))
    }

    pub fn get(&self, path: &str, key: &str) -> RequestBuilder {
        self.request(Method::GET, path, key)
    }

    pub fn post(&self, path: &str, key: &str, body: Value) -> RequestBuilder {
        self.request(Method::POST, path, key).json(&body)
    }

    pub fn put(&self, path: &str, key: &str, body: Value) -> RequestBuilder {
        self.request(Method::PUT, path, key).json(&body)
    }

    pub fn delete(&self, path: &str, key: &str) -> RequestBuilder {
        self.request(Method::DELETE, path, key)
    }

    pub fn log(&self) -> String {
        server_log(&self.storage.data_dir.path().join("server.log"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_log(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Sends a request and answers (status, JSON body or Null).
pub async fn call(request: RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("request reaches the server");
    json_of(response).await
}

pub async fn json_of(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("response body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// Asserts the documented error body shape and answers its code.
pub fn error_code(body: &Value) -> &str {
    let error = &body["error"];
    assert!(
        error["message"].is_string(),
        "error body has a message: {body}"
    );
    assert!(
        error["requestId"].as_str().is_some_and(|id| !id.is_empty()),
        "error body has a requestId: {body}"
    );
    assert!(
        error.get("param").is_some(),
        "error body has a param field: {body}"
    );
    error["code"].as_str().expect("error code")
}

/// Follows a list's cursors from the first page to the last; answers every id in order.
pub async fn all_ids_at(server: &Server, key: &str, path: &str, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut query = format!("?limit={limit}");
    loop {
        let (status, page) = call(server.get(&format!("{path}{query}"), key)).await;
        assert_eq!(status, 200, "{page}");
        ids.extend(page_ids(&page));
        match page["nextCursor"].as_str() {
            Some(cursor) => query = format!("?limit={limit}&cursor={cursor}"),
            None => return ids,
        }
    }
}

/// The record of session `session_id` once it is no longer `active` (waiting up to 5 s for
/// the call to be written as ended); `Value::Null` if it never is.
pub async fn ended_session(server: &Server, key: &str, session_id: &str) -> Value {
    ended_record(
        server,
        key,
        &format!("/v1/observability/sessions/{session_id}"),
    )
    .await
}

/// As [`ended_session`], for the phone call with Twilio's `call_sid`.
pub async fn ended_call(server: &Server, key: &str, call_sid: &str) -> Value {
    ended_record(server, key, &format!("/v1/observability/calls/{call_sid}")).await
}

async fn ended_record(server: &Server, key: &str, path: &str) -> Value {
    for _ in 0..50 {
        let (status, body) = call(server.get(path, key)).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "active" {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Value::Null
}

pub fn page_ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("a data array")
        .iter()
        .map(|agent| agent["id"].as_str().unwrap().to_string())
        .collect()
}

/// Asserts a 400 validation error naming `param`.
#[track_caller]
pub fn assert_invalid(status: u16, body: &Value, param: &str, case: &str) {
    assert_eq!(status, 400, "{case} → {}", short(body));
    assert_eq!(error_code(body), "validation_error", "{case}");
    assert_eq!(body["error"]["param"], param, "{case} → {}", short(body));
}

#[track_caller]
pub fn assert_not_found(status: u16, body: &Value, case: &str) {
    assert_eq!(status, 404, "{case} → {body}");
    assert_eq!(error_code(body), "not_found", "{case}");
}

/// A body for logs: long strings cut short.
pub fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 300 {
        format!("{}…", text.chars().take(300).collect::<String>())
    } else {
        text
    }
}

/// `2026-11-22T17:00:00.123Z`: ISO 8601 UTC with milliseconds.
pub fn is_iso_millis(value: &Value) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let pattern = "dddd-dd-ddTdd:dd:dd.dddZ";
    text.len() == pattern.len()
        && text.chars().zip(pattern.chars()).all(|(c, p)| match p {
            'd' => c.is_ascii_digit(),
            other => c == other,
        })
        && chrono::DateTime::parse_from_rfc3339(text).is_ok()
}

/// The models fetched by `scripts/fetch-models`.
pub fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// A speech fixture from ../shared/fixtures/audio.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/audio")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Word error rate of `hypothesis` against `reference`, after lower-casing and stripping
/// punctuation: (substitutions + deletions + insertions) / reference words.
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let words = |text: &str| -> Vec<String> {
        text.to_lowercase()
            .split_whitespace()
            .map(|w| {
                w.chars()
                    .filter(|c| c.is_alphanumeric() || *c == '\'')
                    .collect::<String>()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (r, h) = (words(reference), words(hypothesis));
    let mut row: Vec<usize> = (0..=h.len()).collect();
    for i in 1..=r.len() {
        let mut previous = row[0];
        row[0] = i;
        for j in 1..=h.len() {
            let substitution = previous + usize::from(r[i - 1] != h[j - 1]);
            previous = row[j];
            row[j] = substitution.min(row[j] + 1).min(row[j - 1] + 1);
        }
    }
    row[h.len()] as f64 / r.len().max(1) as f64
}

/// A WebSocket client's end of a socket, as the tests read it.
pub trait ClientSocket:
    futures_util::Stream<
        Item = Result<
            tokio_tungstenite::tungstenite::Message,
            tokio_tungstenite::tungstenite::Error,
        >,
    > + Unpin
{
}

impl<S> ClientSocket for S where
    S: futures_util::Stream<
            Item = Result<
                tokio_tungstenite::tungstenite::Message,
                tokio_tungstenite::tungstenite::Error,
            >,
        > + Unpin
{
}

/// What `pick` makes of the first message it takes within `within`, reading and dropping
/// the others; `None` when the socket ends or fails first, or the time runs out.
pub async fn first_message<T>(
    socket: &mut impl ClientSocket,
    within: Duration,
    mut pick: impl FnMut(tokio_tungstenite::tungstenite::Message) -> Option<T>,
) -> Option<T> {
    use futures_util::StreamExt;
    let picked = async {
        while let Some(Ok(message)) = socket.next().await {
            if let Some(picked) = pick(message) {
                return Some(picked);
            }
        }
        None
    };
    tokio::time::timeout(within, picked).await.ok().flatten()
}

/// How the server closed `socket`: the code of its `Close` frame, or `None` when the
/// connection ended without one (or nothing came within 10 s). Messages before it are read
/// and dropped.
pub async fn close_code(
    socket: &mut impl ClientSocket,
) -> Option<tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode> {
    use tokio_tungstenite::tungstenite::Message;
    first_message(socket, Duration::from_secs(10), |message| match message {
        Message::Close(frame) => Some(frame.map(|f| f.code)),
        _ => None,
    })
    .await
    .flatten()
}

/// The payload of the first pong a WebSocket client receives within `within`, skipping
/// everything else the server sends; `None` if none comes.
pub async fn pong_within(socket: &mut impl ClientSocket, within: Duration) -> Option<Vec<u8>> {
    use tokio_tungstenite::tungstenite::Message;
    first_message(socket, within, |message| match message {
        Message::Pong(payload) => Some(payload.to_vec()),
        _ => None,
    })
    .await
}

/// A client's end of a real-time WebSocket.
pub type DirectSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens agent `agent`'s direct session socket with API key `key` and the query parameters
/// `query` (`sampleRate=16000`, ...; empty for none).
pub async fn open_direct(server: &Server, key: &str, agent: &str, query: &str) -> DirectSocket {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let path = match query {
        "" => format!("/v1/agents/{agent}/session"),
        query => format!("/v1/agents/{agent}/session?{query}"),
    };
    let url = server.url(&path).replacen("http://", "ws://", 1);
    let mut request = url.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the direct socket opens");
    socket
}
