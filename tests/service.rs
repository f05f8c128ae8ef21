//! The service as a whole: health, the OpenAPI document, authentication of every `/v1`
//! route, request ids and usage headers, error shapes, bootstrap and configuration.

mod common;

use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn health_answers_ok_without_a_key() {
    let server = Server::start().await;
    let response = server.http.get(server.url("/health")).send().await.unwrap();
    assert!(response.headers().contains_key("x-request-id"));
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ok");
    let expected = if server.storage.database_url.is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(body["database"], expected);
    // Each engine reports its state; nothing is loaded before first use.
    let engines = &body["engines"];
    for engine in ["stt", "tts", "llm", "embeddings"] {
        assert!(engines[engine].is_object(), "{engine} in {body}");
    }
    assert_eq!(engines["llm"]["state"], "not_loaded", "{body}");
    assert!(engines["inferenceQueue"]["threads"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn a_missing_model_is_a_clear_503_naming_the_setup_command() {
    let storage = Storage::fresh().await;
    let empty = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        storage,
        &[("SWITCHBOARD_MODELS_DIR", empty.path().to_str().unwrap())],
    )
    .await;
    let key = server.key().to_string();
    let (status, health) = call(server.http.get(server.url("/health"))).await;
    assert_eq!(status, 200);
    assert_eq!(health["engines"]["llm"]["state"], "missing", "{health}");
    let (status, collection) =
        call(server.post("/v1/collections", &key, serde_json::json!({"name": "c"}))).await;
    assert_eq!(status, 201);
    let (status, body) = call(server.post(
        &format!(
            "/v1/collections/{}/search",
            collection["id"].as_str().unwrap()
        ),
        &key,
        serde_json::json!({"query": "hello"}),
    ))
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "engine_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("scripts/fetch-models"),
        "{body}"
    );
}

#[tokio::test]
async fn the_openapi_document_describes_every_route() {
    let server = Server::start().await;
    let (status, doc) = call(server.http.get(server.url("/openapi.json"))).await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/health", &["get"][..]),
        ("/openapi.json", &["get"]),
        ("/v1/keys", &["get", "post"]),
        ("/v1/keys/{id}", &["delete"]),
        ("/v1/keys/{id}/rotate", &["post"]),
        ("/v1/agents", &["get", "post"]),
        ("/v1/agents/{id}", &["get", "put", "delete"]),
        ("/v1/collections", &["get", "post"]),
        ("/v1/collections/{id}", &["get", "delete"]),
        ("/v1/collections/{id}/ingest", &["post"]),
        ("/v1/collections/{id}/search", &["post"]),
        ("/v1/collections/{id}/documents/{documentId}", &["delete"]),
        ("/v1/agents/provision", &["post"]),
        ("/v1/agents/{id}/chat", &["post"]),
        ("/v1/agents/{id}/speak", &["post"]),
        ("/v1/agents/{id}/instances", &["get", "post"]),
        (
            "/v1/agents/{id}/instances/{instanceId}",
            &["get", "put", "delete"],
        ),
        ("/v1/agents/{id}/session-token", &["post"]),
        ("/v1/agents/{id}/session", &["get"]),
        ("/v1/synthesize", &["post"]),
        ("/v1/transcribe", &["post"]),
        ("/v1/transcribe/async", &["post"]),
        ("/v1/transcribe/{jobId}", &["get"]),
        ("/v1/audio/speech", &["post"]),
        ("/v1/audio/transcriptions", &["post"]),
        ("/v1/audio/translations", &["post"]),
        ("/v1/audio/models", &["get"]),
        ("/v1/models", &["get"]),
        ("/v1/models/{model}", &["get"]),
        ("/v1/sessions/twilio", &["post"]),
        ("/v1/observability/sessions", &["get"]),
        ("/v1/observability/sessions/{sessionId}", &["get"]),
        ("/v1/observability/calls/{callId}", &["get"]),
    ] {
        for method in methods {
            assert!(
                paths[path].get(*method).is_some(),
                "{method} {path} is documented"
            );
        }
    }
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}

#[tokio::test]
async fn every_v1_route_requires_an_api_key() {
    let server = Server::start().await;
    let routes = [
        ("GET", "/v1/keys"),
        ("POST", "/v1/keys"),
        ("DELETE", "/v1/keys/key_x"),
        ("POST", "/v1/keys/key_x/rotate"),
        ("GET", "/v1/agents"),
        ("POST", "/v1/agents"),
        ("GET", "/v1/agents/a"),
        ("PUT", "/v1/agents/a"),
        ("DELETE", "/v1/agents/a"),
        ("GET", "/v1/collections"),
        ("POST", "/v1/collections"),
        ("GET", "/v1/collections/c"),
        ("DELETE", "/v1/collections/c"),
        ("POST", "/v1/collections/c/ingest"),
        ("POST", "/v1/collections/c/search"),
        ("DELETE", "/v1/collections/c/documents/d"),
        ("POST", "/v1/agents/provision"),
        ("POST", "/v1/agents/a/chat"),
        ("POST", "/v1/agents/a/speak"),
        ("POST", "/v1/agents/a/session-token"),
        ("GET", "/v1/agents/a/instances"),
        ("POST", "/v1/synthesize"),
        ("POST", "/v1/transcribe"),
        ("POST", "/v1/transcribe/async"),
        ("GET", "/v1/transcribe/job_x"),
        ("POST", "/v1/sessions/twilio"),
        ("GET", "/v1/observability/sessions"),
        ("GET", "/v1/observability/calls/CA1"),
        ("GET", "/v1/no-such-route"),
    ];
    for (method, path) in routes {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        for auth in [
            None,
            Some("Bearer "),
            Some("Basic abc"),
            Some("Bearer sb_live_notakey"),
            Some("Bearer other_prefix"),
        ] {
            let mut request = server.http.request(method.clone(), server.url(path));
            if let Some(auth) = auth {
                request = request.header("Authorization", auth);
            }
            let response = request.json(&json!({})).send().await.unwrap();
            let request_id = response.headers()["x-request-id"]
                .to_str()
                .unwrap()
                .to_string();
            let (status, body) = json_of(response).await;
            assert_eq!(status, 401, "{method} {path} with {auth:?}");
            assert_eq!(error_code(&body), "unauthorized");
            assert_eq!(body["error"]["requestId"], request_id);
        }
    }
}

#[tokio::test]
async fn authenticated_responses_carry_request_id_and_usage_headers() {
    let server = Server::start().await;
    for response in [
        server.get("/v1/agents", server.key()).send().await.unwrap(),
        server
            .get("/v1/agents/missing", server.key())
            .send()
            .await
            .unwrap(),
    ] {
        let headers = response.headers();
        for name in [
            "x-request-id",
            "x-usage-current",
            "x-usage-limit",
            "x-usage-remaining",
        ] {
            assert!(
                headers.contains_key(name),
                "{name} on {}",
                response.status()
            );
        }
        assert_eq!(headers["x-usage-bypassed"], "false");
        // No engine ran for a list or a missing agent: the header says so.
        assert_eq!(headers["x-provider-used"], "none");
        let number = |name: &str| headers[name].to_str().unwrap().parse::<f64>().unwrap();
        assert_eq!(
            number("x-usage-remaining"),
            number("x-usage-limit") - number("x-usage-current")
        );
    }
    let a = server.get("/v1/agents", server.key()).send().await.unwrap();
    let b = server.get("/v1/agents", server.key()).send().await.unwrap();
    assert_ne!(a.headers()["x-request-id"], b.headers()["x-request-id"]);
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json_errors() {
    let server = Server::start().await;
    let (status, body) = call(server.get("/v1/nothing-here", server.key())).await;
    assert_eq!((status, error_code(&body)), (404, "not_found"));
    let (status, body) = call(server.http.get(server.url("/nothing"))).await;
    assert_eq!((status, error_code(&body)), (404, "not_found"));
    for (method, path) in [
        ("PATCH", "/v1/agents/a"),
        ("PUT", "/v1/keys"),
        ("POST", "/v1/collections/c"),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let (status, body) = call(server.request(method.clone(), path, server.key())).await;
        assert_eq!(
            (status, error_code(&body)),
            (405, "method_not_allowed"),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn malformed_bodies_get_documented_errors_and_change_nothing() {
    let server = Server::start().await;
    let key = server.key();
    let raw = |body: &'static str, content_type: Option<&'static str>| {
        let mut request = server
            .request(reqwest::Method::POST, "/v1/agents", key)
            .body(body);
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type);
        }
        request
    };
    let (status, body) = call(raw("{\"name\": ", Some("application/json"))).await;
    assert_eq!((status, error_code(&body)), (400, "validation_error"));
    let (status, body) = call(raw("{\"name\": \"x\"}", Some("text/plain"))).await;
    assert_eq!((status, error_code(&body)), (415, "unsupported_media_type"));
    let (status, body) = call(raw("{\"name\": \"x\"}", None)).await;
    assert_eq!((status, error_code(&body)), (415, "unsupported_media_type"));
    let huge = format!(
        "{{\"name\": \"x\", \"description\": \"{}\"}}",
        "d".repeat(3 * 1024 * 1024)
    );
    let response = server
        .request(reqwest::Method::POST, "/v1/agents", key)
        .header("Content-Type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!((status, error_code(&body)), (413, "payload_too_large"));
    let (_, list) = call(server.get("/v1/agents", key)).await;
    assert_eq!(list["data"], json!([]));
}

#[tokio::test]
async fn the_bootstrap_key_is_printed_once_on_an_empty_database() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let server = server.restart().await;
    assert_eq!(
        server.bootstrap_key, None,
        "the key is shown only on the first start"
    );
    let (status, _) = call(server.get("/v1/agents", &key)).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn configuration_comes_from_a_file_and_the_environment() {
    let storage = Storage::fresh().await;
    let file = storage.data_dir.path().join("custom.toml");
    std::fs::write(
        &file,
        "[auth]\nkey_prefix = \"sb_test_\"\nbootstrap_developer = \"dev_file\"\n",
    )
    .unwrap();
    let mut command = storage.command();
    command.args([
        "--config",
        file.to_str().unwrap(),
        "keys",
        "create",
        "--developer",
        "x",
    ]);
    let output = command.output().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.lines().last().unwrap().starts_with("sb_test_"),
        "{stdout}"
    );

    let output = storage
        .command()
        .env("SWITCHBOARD__AUTH__KEY_PREFIX", "sb_env_")
        .args([
            "--config",
            file.to_str().unwrap(),
            "keys",
            "create",
            "--developer",
            "x",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.lines().last().unwrap().starts_with("sb_env_"),
        "environment wins: {stdout}"
    );

    let bad = storage
        .command()
        .env("SWITCHBOARD_BIND", "not an address")
        .arg("migrate")
        .output()
        .unwrap();
    assert!(
        !bad.status.success(),
        "an invalid setting is refused at start"
    );
    let _ = Value::Null;
}

#[tokio::test]
async fn the_secrets_a_server_generates_are_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::start().await;
    // The relay secret signs phone-stream and browser session tokens; the master key opens
    // stored vendor keys (created on the first one stored).
    let (status, stored) = call(server.post(
        "/v1/provider-keys",
        server.key(),
        json!({"provider": "openai", "apiKey": "sk-owner-only"}),
    ))
    .await;
    assert!(status == 200 || status == 201, "{stored}");
    let data = server.storage.data_dir.path().to_path_buf();
    for name in ["relay-secret", "provider-keys.key"] {
        let mode = std::fs::metadata(data.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name} is {:o}", mode & 0o777);
    }
    // A secret an earlier version left world-readable is restricted at the next start.
    let path = data.join("relay-secret");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = server.restart().await;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "after a restart: {:o}", mode & 0o777);
    let (status, _) =
        call(server.get("/v1/usage", server.storage.create_key("dev_local").as_str())).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_openapi_document_lists_the_errors_every_route_can_answer() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, document) = call(server.http.get(server.url("/openapi.json"))).await;
    assert_eq!(status, 200);
    let documented = |path: &str, method: &str, status: u16| {
        document["paths"][path][method]["responses"]
            .get(status.to_string())
            .is_some()
    };
    // Answers a client really gets, each of which the document must list for its operation.
    let (status, _) = call(server.get("/v1/agents/nobody/instances?limit=0", &key)).await;
    assert_eq!(status, 400, "an out-of-range page size");
    assert!(documented("/v1/agents/{id}/instances", "get", 400));
    let response = server
        .request(reqwest::Method::POST, "/v1/synthesize", &key)
        .body("text=hello")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status().as_u16(),
        415,
        "a form body on a JSON route"
    );
    assert!(documented("/v1/synthesize", "post", 415));
    let (status, _) = call(server.http.get(server.url("/v1/audio/models"))).await;
    assert_eq!(status, 401, "the OpenAI-compatible routes need a key too");
    assert!(documented("/v1/audio/models", "get", 401));

    // And in general: every API-key route lists 401 and 429, every route with a query lists
    // 400, every route with a JSON or multipart body lists 400, 413 and 415.
    let keyless = [
        "/v1/billing/webhook",
        "/v1/sessions/twilio/inbound",
        "/v1/sessions/twilio/task/{taskId}/connect",
        "/v1/sessions/twilio/task/{taskId}/status",
    ];
    let mut missing = Vec::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            let mut expected = Vec::new();
            if path.starts_with("/v1/") && !keyless.contains(&path.as_str()) {
                expected.extend(["401", "429"]);
            }
            let has_query = operation["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
            let has_body = operation["requestBody"]["content"]
                .as_object()
                .is_some_and(|c| {
                    c.keys().any(|t| {
                        t.starts_with("application/json") || t.starts_with("multipart/form-data")
                    })
                });
            if has_query || has_body {
                expected.push("400");
            }
            if has_body {
                expected.extend(["413", "415"]);
            }
            for status in expected {
                if operation["responses"].get(status).is_none() {
                    missing.push(format!("{} {path} {status}", method.to_uppercase()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "undocumented answers: {missing:?}");
}

#[tokio::test]
async fn a_chat_answer_matches_the_schema_the_document_gives_it() {
    let server = Server::start().await;
    let (_, document) = call(server.http.get(server.url("/openapi.json"))).await;
    let schemas = &document["components"]["schemas"];
    let resolve = |schema: &Value| -> Value {
        match schema["$ref"].as_str() {
            Some(reference) => {
                schemas[reference.trim_start_matches("#/components/schemas/")].clone()
            }
            None => schema.clone(),
        }
    };
    let chat = resolve(
        &document["paths"]["/v1/agents/{id}/chat"]["post"]["responses"]["200"]["content"]
            ["application/json"]["schema"],
    );
    let usage = resolve(&chat["properties"]["usage"]);
    assert!(
        usage["properties"]["inputTokens"].is_object()
            && usage["properties"]["outputTokens"].is_object(),
        "a chat answer's usage is its tokens, not the account's usage: {usage}"
    );
    let account = resolve(
        &document["paths"]["/v1/usage"]["get"]["responses"]["200"]["content"]["application/json"]
            ["schema"],
    );
    assert!(account["properties"]["credits"].is_object(), "{account}");
}

/// An idle connection stays open well past the 5 s many servers keep one, so a client (or a
/// load balancer) that reuses it after a pause is answered, not cut off mid-request.
#[tokio::test]
async fn an_idle_connection_is_kept_for_the_next_request() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = Server::start().await;
    let address = server.url("").trim_start_matches("http://").to_string();
    let mut connection = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!("GET /health HTTP/1.1\r\nHost: {address}\r\n\r\n");
    for round in 0..2 {
        connection.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        while !String::from_utf8_lossy(&answer).contains("\"status\"") {
            let read = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                connection.read(&mut buffer),
            )
            .await
            .expect("an answer within 5 s")
            .unwrap();
            assert!(read > 0, "round {round}: the server closed the connection");
            answer.extend_from_slice(&buffer[..read]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 200"), "round {round}");
        if round == 0 {
            tokio::time::sleep(std::time::Duration::from_secs(7)).await;
        }
    }
}

/// The name and nice value in a `/proc/.../stat` line.
fn name_and_nice(stat: &str) -> (String, i32) {
    let (head, rest) = stat.rsplit_once(')').unwrap();
    let name = head.split_once('(').unwrap().1.to_string();
    // Fields after the name start at the third; the nice value is the nineteenth.
    let nice = rest.split_whitespace().nth(16).unwrap().parse().unwrap();
    (name, nice)
}

/// [`thread_priorities`] once the server's HTTP workers are running: it prints its address
/// before they have all started and named themselves.
async fn thread_priorities_serving(server: &Server) -> (i32, Vec<(String, i32)>) {
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (own, threads) = thread_priorities(server.pid());
        if nice_of(&threads, "actix-rt|system").len() >= workers
            || std::time::Instant::now() > deadline
        {
            return (own, threads);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The nice value of process `pid`'s main thread, and each of its threads by name.
fn thread_priorities(pid: u32) -> (i32, Vec<(String, i32)>) {
    let own = name_and_nice(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap()).1;
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        // A thread that ended meanwhile has no stat to read.
        if let Ok(stat) = std::fs::read_to_string(task.unwrap().path().join("stat")) {
            threads.push(name_and_nice(&stat));
        }
    }
    (own, threads)
}

fn nice_of(threads: &[(String, i32)], prefix: &str) -> Vec<i32> {
    threads
        .iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|&(_, nice)| nice)
        .collect()
}

#[tokio::test]
async fn background_threads_yield_the_cpu_to_the_threads_that_carry_live_audio() {
    let server = Server::start().await;
    let (own, threads) = thread_priorities_serving(&server).await;
    // The HTTP and WebSocket workers are actix arbiters.
    let audio = nice_of(&threads, "actix-rt|system");
    assert!(!audio.is_empty(), "{threads:?}");
    assert!(audio.iter().all(|&n| n == own), "{threads:?}");
    let lowered = (own + 10).min(19);
    for background in ["engine-worker-", "search-graph-"] {
        let nice = nice_of(&threads, background);
        assert!(!nice.is_empty(), "no {background} thread: {threads:?}");
        assert!(nice.iter().all(|&n| n == lowered), "{threads:?}");
    }
    // The recording writers keep pace with live audio: they stay with the workers.
    let writers = nice_of(&threads, "recording-");
    assert!(!writers.is_empty(), "no recording writer: {threads:?}");
    assert!(writers.iter().all(|&n| n == own), "{threads:?}");
    drop(server);

    let same = Server::start_with(
        Storage::fresh().await,
        &[("SWITCHBOARD__SERVER__BACKGROUND_NICE", "0")],
    )
    .await;
    let (own, threads) = thread_priorities_serving(&same).await;
    let inference = nice_of(&threads, "engine-worker-");
    assert!(!inference.is_empty(), "{threads:?}");
    assert!(inference.iter().all(|&n| n == own), "{threads:?}");
    drop(same);

    for bad in ["20", "-1"] {
        let refused = Storage::fresh()
            .await
            .command()
            .env("SWITCHBOARD__SERVER__BACKGROUND_NICE", bad)
            .arg("migrate")
            .output()
            .unwrap();
        assert!(!refused.status.success(), "background_nice {bad} accepted");
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains("background_nice"),
            "{}",
            String::from_utf8_lossy(&refused.stderr)
        );
    }
}

#[tokio::test]
async fn the_data_dir_and_the_database_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let storage = Storage::fresh().await;
    let data = storage.data_dir.path().to_path_buf();
    // An operator's `mkdir` leaves the dir readable by everyone.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = Server::start_on(storage).await;
    let (status, _) = call(server.post(
        "/v1/agents",
        server.key(),
        json!({"id": "private", "name": "Private"}),
    ))
    .await;
    assert_eq!(status, 201);
    let mode_of = |path: &std::path::Path| {
        std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode_of(&data), 0o700, "the data dir");
    let mut checked = 0;
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() && path.file_name().is_some_and(|n| n != "server.log") {
            assert_eq!(mode_of(&path), 0o600, "{}", path.display());
            checked += 1;
        }
    }
    if server.storage.database_url.is_none() {
        assert_eq!(mode_of(&data.join("switchboard.db")), 0o600, "the database");
        assert!(checked >= 3, "the database, the node id and the secrets");
    }
}

#[tokio::test]
async fn a_log_on_a_full_disk_never_takes_the_server_down() {
    // Standard error on /dev/full: every log write fails with ENOSPC, as on a full disk.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let server = Server::start_logging_to(
        Storage::fresh().await,
        &[("SWITCHBOARD_LOG", "debug")],
        std::process::Stdio::from(full),
    )
    .await;
    let key = server.key().to_string();
    for round in 0..3 {
        let id = format!("agent-{round}");
        let (status, body) =
            call(server.post("/v1/agents", &key, json!({"id": id, "name": "Logged"}))).await;
        assert_eq!(status, 201, "{body}");
        let (status, body) = call(server.get(&format!("/v1/agents/{id}"), &key)).await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = call(server.get("/v1/usage", &key)).await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = call(server.get("/v1/agents/missing", &key)).await;
        assert_eq!(status, 404, "{body}");
    }
    let (status, body) = call(server.http.get(server.url("/health"))).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        server.metric("switchboard_log_lines_lost_total").await > 0.0,
        "the lost lines are counted"
    );
}
