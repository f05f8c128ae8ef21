//! Several nodes on one PostgreSQL behind a load balancer, and the graceful stop of a node.
//! The two-node tests start two real server processes on one throwaway PostgreSQL database
//! (they are skipped, not failed, without `SWITCHBOARD_TEST_POSTGRES_URL`; `scripts/test`
//! sets it); the drain tests send real signals to a real server process on either backend.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Changes made on one node must show on the other well within the old polling bounds.
const PROPAGATION_BOUND: Duration = Duration::from_millis(500);

/// Fallback polling and cache expiry pushed out of the test's reach: whatever a node learns
/// of the other's changes within a test, it learns from the change notifications.
const NOTIFICATIONS_ONLY: [(&str, &str); 2] = [
    ("SWITCHBOARD__AUTH__REVOCATION_POLL_MS", "600000"),
    ("SWITCHBOARD__REGISTRY__SHARED_CACHE_TTL_MS", "600000"),
];

/// Two nodes on one fresh PostgreSQL database, both listening for changes; `None` (the test
/// is skipped) without a PostgreSQL server to test on.
async fn two_nodes(env: &[(&str, &str)]) -> Option<(Server, Server)> {
    let storage = Storage::fresh().await;
    let Some(url) = storage.database_url.clone() else {
        eprintln!("skipped: needs SWITCHBOARD_TEST_POSTGRES_URL (scripts/test sets it)");
        return None;
    };
    let node_a = Server::start_with(storage, env).await;
    let second = Storage {
        data_dir: tempfile::tempdir().unwrap(),
        database_url: Some(url),
    };
    let node_b = Server::start_with(second, env).await;
    for node in [&node_a, &node_b] {
        let started = Instant::now();
        while node.metric("switchboard_change_listener_up").await != 1.0 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the change listener connects; log: {}",
                node.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Some((node_a, node_b))
}

/// Repeats `probe` until it answers true; answers how long that took (panics past `limit`).
async fn within<F, Fut>(limit: Duration, what: &str, mut probe: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if probe().await {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{what}: not within {} ms",
            limit.as_millis()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn status_of(request: reqwest::RequestBuilder) -> u16 {
    request
        .send()
        .await
        .expect("request answered")
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_key_revoked_on_one_node_is_refused_by_the_other_at_once() {
    let Some((node_a, node_b)) = two_nodes(&NOTIFICATIONS_ONLY).await else {
        return;
    };
    let admin = node_a.key().to_string();
    let notified = r#"switchboard_change_notifications_total{kind="key"}"#;

    // Revoked over the API on node A.
    let (status, created) = call(node_a.post("/v1/keys", &admin, json!({"name": "ci"}))).await;
    assert_eq!(status, 201, "{created}");
    let (key, key_id) = (
        created["key"].as_str().unwrap().to_string(),
        created["id"].as_str().unwrap().to_string(),
    );
    // Node B has the key cached as valid.
    assert_eq!(status_of(node_b.get("/v1/agents", &key)).await, 200);
    let before = node_b.metric(notified).await;
    let response = node_a
        .delete(&format!("/v1/keys/{key_id}"), &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let took = within(
        PROPAGATION_BOUND,
        "node B refuses the revoked key",
        || async { status_of(node_b.get("/v1/agents", &key)).await == 401 },
    )
    .await;
    assert!(
        node_b.metric(notified).await > before,
        "node B heard the revocation as a notification"
    );
    eprintln!("revocation on A refused on B after {} ms", took.as_millis());

    // Revoked by the command line beside the nodes.
    let (status, created) = call(node_a.post("/v1/keys", &admin, json!({"name": "cli"}))).await;
    assert_eq!(status, 201);
    let key = created["key"].as_str().unwrap().to_string();
    assert_eq!(status_of(node_b.get("/v1/agents", &key)).await, 200);
    let (ok, _, stderr) = node_a
        .storage
        .cli(&["keys", "revoke", created["id"].as_str().unwrap()]);
    assert!(ok, "{stderr}");
    within(
        PROPAGATION_BOUND,
        "node B refuses the CLI-revoked key",
        || async { status_of(node_b.get("/v1/agents", &key)).await == 401 },
    )
    .await;

    // Rotated on node B: node A refuses the old key at once, takes the new one.
    let (status, created) = call(node_a.post("/v1/keys", &admin, json!({"name": "rot"}))).await;
    assert_eq!(status, 201);
    let old = created["key"].as_str().unwrap().to_string();
    assert_eq!(status_of(node_a.get("/v1/agents", &old)).await, 200);
    let (status, rotated) = call(node_b.post(
        &format!("/v1/keys/{}/rotate", created["id"].as_str().unwrap()),
        &admin,
        json!({}),
    ))
    .await;
    assert_eq!(status, 200, "{rotated}");
    within(
        PROPAGATION_BOUND,
        "node A refuses the rotated-away key",
        || async { status_of(node_a.get("/v1/agents", &old)).await == 401 },
    )
    .await;
    let new = rotated["key"].as_str().unwrap();
    assert_eq!(status_of(node_a.get("/v1/agents", new)).await, 200);
}

#[tokio::test]
async fn agents_and_collections_changed_on_one_node_show_on_the_other_at_once() {
    let Some((node_a, node_b)) = two_nodes(&NOTIFICATIONS_ONLY).await else {
        return;
    };
    let key = node_a.key().to_string();
    let (status, collection) =
        call(node_a.post("/v1/collections", &key, json!({"name": "Help"}))).await;
    assert_eq!(status, 201, "{collection}");
    let collection_id = collection["id"].as_str().unwrap().to_string();
    let (status, agent) = call(node_a.post(
        "/v1/agents",
        &key,
        json!({"id": "support", "name": "Support", "collectionId": collection_id}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    // Node B caches both.
    let (status, seen) = call(node_b.get("/v1/agents/support", &key)).await;
    assert_eq!((status, seen["name"].as_str()), (200, Some("Support")));
    let (status, _) = call(node_b.get(&format!("/v1/collections/{collection_id}"), &key)).await;
    assert_eq!(status, 200);

    // An update on A.
    let (status, _) = call(node_a.put(
        "/v1/agents/support",
        &key,
        json!({"name": "Support desk", "temperature": 0.2}),
    ))
    .await;
    assert_eq!(status, 200);
    within(
        PROPAGATION_BOUND,
        "node B serves the updated agent",
        || async {
            let (_, seen) = call(node_b.get("/v1/agents/support", &key)).await;
            seen["name"] == "Support desk" && seen["temperature"] == 0.2
        },
    )
    .await;

    // The collection deleted on B: gone on A, and detached from the agent A caches.
    let response = node_b
        .delete(&format!("/v1/collections/{collection_id}"), &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    within(
        PROPAGATION_BOUND,
        "node A forgets the collection",
        || async {
            let (status, _) =
                call(node_a.get(&format!("/v1/collections/{collection_id}"), &key)).await;
            let (_, agent) = call(node_a.get("/v1/agents/support", &key)).await;
            status == 404 && agent["collectionId"].is_null()
        },
    )
    .await;

    // The agent archived on A: 404 on B, and no session can start with it there.
    let response = node_a
        .delete("/v1/agents/support", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    within(
        PROPAGATION_BOUND,
        "node B answers 404 for the archived agent",
        || async {
            let (status, _) = call(node_b.get("/v1/agents/support", &key)).await;
            status == 404
        },
    )
    .await;
    let (status, body) =
        call(node_b.post("/v1/agents/support/session-token", &key, json!({}))).await;
    assert_not_found(status, &body, "a session token for an archived agent");
}

#[tokio::test]
async fn documents_ingested_and_deleted_on_one_node_change_the_others_search() {
    let Some((node_a, node_b)) = two_nodes(&NOTIFICATIONS_ONLY).await else {
        return;
    };
    let key = node_a.key().to_string();
    let (status, collection) =
        call(node_a.post("/v1/collections", &key, json!({"name": "Facts"}))).await;
    assert_eq!(status, 201);
    let collection_id = collection["id"].as_str().unwrap().to_string();
    let ingest = |text: &str| {
        node_a.post(
            &format!("/v1/collections/{collection_id}/ingest"),
            &key,
            json!({"content": text}),
        )
    };
    let (status, _) = call(ingest(
        "The office opens at nine in the morning on weekdays.",
    ))
    .await;
    assert_eq!(status, 201);
    let search = |query: &'static str| {
        node_b.post(
            &format!("/v1/collections/{collection_id}/search"),
            &key,
            json!({"query": query, "threshold": 0.2}),
        )
    };
    let documents_in = |results: &Value| -> Vec<String> {
        results["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["documentId"].as_str().unwrap().to_string())
            .collect()
    };
    // Node B builds its index of the collection.
    let (status, found) = call(search("When does the office open?")).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(documents_in(&found).len(), 1, "{found}");

    let (status, added) = call(ingest("Parking is free for visitors in the north garage.")).await;
    assert_eq!(status, 201, "{added}");
    let parking = added["documentId"].as_str().unwrap().to_string();
    within(
        PROPAGATION_BOUND,
        "node B finds the new document",
        || async {
            let (_, found) = call(search("Where can visitors park?")).await;
            documents_in(&found).first() == Some(&parking)
        },
    )
    .await;

    let response = node_a
        .delete(
            &format!("/v1/collections/{collection_id}/documents/{parking}"),
            &key,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    within(PROPAGATION_BOUND, "node B no longer finds it", || async {
        let (_, found) = call(search("Where can visitors park?")).await;
        !documents_in(&found).contains(&parking)
    })
    .await;
    // Each document is in node B's index once.
    let (_, found) = call(search("When does the office open?")).await;
    assert_eq!(documents_in(&found).len(), 1, "{found}");
}

#[tokio::test]
async fn two_nodes_together_keep_one_rate_limit() {
    let mut env = NOTIFICATIONS_ONLY.to_vec();
    env.extend([
        ("SWITCHBOARD__RATE_LIMIT__REQUESTS", "20"),
        ("SWITCHBOARD__RATE_LIMIT__WINDOW_SECONDS", "600"),
        ("SWITCHBOARD__RATE_LIMIT__SYNC_MS", "50"),
    ]);
    let Some((node_a, node_b)) = two_nodes(&env).await else {
        return;
    };
    let key = node_a.key().to_string();
    // A client behind a round-robin balancer: every other request to each node.
    let mut admitted = [0, 0];
    for i in 0..60 {
        let node = if i % 2 == 0 { &node_a } else { &node_b };
        match status_of(node.get("/v1/agents", &key)).await {
            200 => admitted[i % 2] += 1,
            429 => {}
            other => panic!("unexpected status {other}"),
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let total = admitted[0] + admitted[1];
    // Each node alone would have admitted 20 of its 30. Together they keep the limit, give
    // or take what both admit within one 50 ms sync interval.
    assert!(
        (20..=23).contains(&total),
        "admitted {admitted:?} = {total} of a shared limit of 20"
    );
    assert!(admitted[0] < 20 && admitted[1] < 20, "{admitted:?}");
}

#[tokio::test]
async fn a_tier_changed_elsewhere_applies_on_every_node_at_once() {
    let mut env = NOTIFICATIONS_ONLY.to_vec();
    env.extend([
        ("SWITCHBOARD__RATE_LIMIT__REQUESTS", "5"),
        ("SWITCHBOARD__TIERS__PRO__RATE_LIMIT_REQUESTS", "500"),
        // Usage read back rarely: the tier must come from the notification.
        ("SWITCHBOARD__METERING__FLUSH_MS", "600000"),
    ]);
    let Some((node_a, node_b)) = two_nodes(&env).await else {
        return;
    };
    let key = node_a.key().to_string();
    let limit_on = |node: &Server| {
        let request = node.get("/v1/usage", &key);
        async move {
            let response = request.send().await.unwrap();
            response.headers()["x-ratelimit-limit"]
                .to_str()
                .unwrap()
                .to_string()
        }
    };
    assert_eq!(limit_on(&node_a).await, "5");
    assert_eq!(limit_on(&node_b).await, "5");
    let (ok, _, stderr) = node_a
        .storage
        .cli(&["developers", "set-tier", "dev_local", "pro"]);
    assert!(ok, "{stderr}");
    for node in [&node_a, &node_b] {
        within(
            PROPAGATION_BOUND,
            "the pro tier's limit applies",
            || async { limit_on(node).await == "500" },
        )
        .await;
    }
}

#[tokio::test]
async fn a_node_whose_listener_drops_falls_back_to_polling_and_reconnects() {
    let env = [
        ("SWITCHBOARD__AUTH__REVOCATION_POLL_MS", "100"),
        ("SWITCHBOARD__REGISTRY__SHARED_CACHE_TTL_MS", "600000"),
    ];
    let Some((node_a, node_b)) = two_nodes(&env).await else {
        return;
    };
    let admin = node_a.key().to_string();
    let url = node_b.storage.database_url.clone().unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let (status, created) = call(node_a.post("/v1/keys", &admin, json!({"name": "k"}))).await;
    assert_eq!(status, 201);
    let key = created["key"].as_str().unwrap().to_string();
    assert_eq!(status_of(node_b.get("/v1/agents", &key)).await, 200);

    // Both nodes' listeners are cut off; while they reconnect, revocations still arrive by
    // polling, and the caches are emptied when they are back.
    let cut = client
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = 'switchboard-listener' AND datname = current_database()",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(cut.len(), 2, "both listeners were found");
    let response = node_a
        .delete(
            &format!("/v1/keys/{}", created["id"].as_str().unwrap()),
            &admin,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    within(
        Duration::from_secs(2),
        "node B refuses the revoked key",
        || async { status_of(node_b.get("/v1/agents", &key)).await == 401 },
    )
    .await;
    within(Duration::from_secs(10), "node B listens again", || async {
        node_b.metric("switchboard_change_listener_up").await == 1.0
    })
    .await;
    let before = node_b
        .metric(r#"switchboard_change_notifications_total{kind="agent"}"#)
        .await;
    let (status, _) =
        call(node_a.post("/v1/agents", &admin, json!({"id": "a", "name": "A"}))).await;
    assert_eq!(status, 201);
    assert_eq!(status_of(node_b.get("/v1/agents/a", &admin)).await, 200);
    let (status, _) = call(node_a.put("/v1/agents/a", &admin, json!({"name": "B"}))).await;
    assert_eq!(status, 200);
    within(
        PROPAGATION_BOUND,
        "node B serves the renamed agent",
        || async {
            let (_, agent) = call(node_b.get("/v1/agents/a", &admin)).await;
            agent["name"] == "B"
        },
    )
    .await;
    assert!(
        node_b
            .metric(r#"switchboard_change_notifications_total{kind="agent"}"#)
            .await
            > before
    );
}

// ---- graceful stop ----

async fn open_direct(server: &Server, key: &str, agent: &str) -> Socket {
    let url = format!(
        "{}/v1/agents/{agent}/session",
        server.base.replacen("http://", "ws://", 1)
    );
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            url.as_str(),
        )
        .unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the session opens");
    socket
}

/// A WebSocket upgrade refused with an HTTP answer: (status, JSON body).
async fn refused_upgrade(url: &str, key: Option<&str>) -> (u16, Value) {
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url)
            .unwrap();
    if let Some(key) = key {
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok(_) => panic!("{url} was upgraded"),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body = response
                .body()
                .as_ref()
                .map(|bytes| serde_json::from_slice(bytes).unwrap_or(Value::Null))
                .unwrap_or(Value::Null);
            (response.status().as_u16(), body)
        }
        Err(other) => panic!("{url}: {other}"),
    }
}

/// Reads events until one matches (or the time runs out); answers them, and the close frame
/// if the socket closed.
async fn read_until(
    socket: &mut Socket,
    limit: Duration,
    until: impl Fn(&Value) -> bool,
) -> (Vec<Value>, Option<u16>) {
    let started = Instant::now();
    let mut events = Vec::new();
    while started.elapsed() < limit {
        let Ok(Some(Ok(message))) =
            tokio::time::timeout(limit - started.elapsed(), socket.next()).await
        else {
            break;
        };
        match message {
            Message::Text(text) => {
                let event: Value = serde_json::from_str(&text).unwrap();
                let done = until(&event);
                events.push(event);
                if done {
                    break;
                }
            }
            Message::Close(frame) => return (events, frame.map(|f| u16::from(f.code))),
            _ => {}
        }
    }
    (events, None)
}

fn sigterm(server: &Server) {
    // SAFETY: kill(2) with a child's pid and a valid signal number has no memory effects.
    let sent = unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0, "SIGTERM sent");
}

async fn greeting_agent(server: &Server, key: &str, metadata: Value) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": "desk", "name": "Desk", "firstMessage": "Hello, you are through to the desk.",
               "maxTokens": 20, "metadata": metadata}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn sigterm_drains_live_calls_refuses_new_ones_and_exits_cleanly() {
    let storage = Storage::fresh().await;
    let mut server = Server::start_with(
        storage,
        &[("SWITCHBOARD__SERVER__DRAIN_TIMEOUT_SECONDS", "60")],
    )
    .await;
    let key = server.key().to_string();
    greeting_agent(&server, &key, json!({})).await;
    let mut socket = open_direct(&server, &key, "desk").await;
    let (events, _) = read_until(&mut socket, Duration::from_secs(20), |e| {
        e["type"] == "agent.audio.end"
    })
    .await;
    let session_id = events[0]["sessionId"].as_str().unwrap().to_string();

    sigterm(&server);
    let ws_base = server.base.replacen("http://", "ws://", 1);
    within(
        Duration::from_secs(2),
        "health reports draining",
        || async {
            let (status, health) = call(server.http.get(server.url("/health"))).await;
            status == 503 && health["status"] == "draining" && health["liveSessions"] == 1
        },
    )
    .await;
    // New sessions are refused before their upgrade, with the documented error body.
    let (status, body) =
        refused_upgrade(&format!("{ws_base}/v1/agents/desk/session"), Some(&key)).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "draining");
    let (status, body) =
        refused_upgrade(&format!("{ws_base}/v1/sessions/twilio/stream"), None).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "draining");
    // REST is still served meanwhile.
    assert_eq!(status_of(server.get("/v1/agents/desk", &key)).await, 200);

    // The live call goes on: a turn is answered, then the caller hangs up.
    socket
        .send(Message::text(
            json!({"type": "text", "text": "Are you open today?"}).to_string(),
        ))
        .await
        .unwrap();
    let (events, _) = read_until(&mut socket, Duration::from_secs(60), |e| {
        e["type"] == "turn.metrics" && e["speaker"] == "agent" && e["index"].as_u64() > Some(1)
    })
    .await;
    assert!(
        events.iter().any(|e| e["type"] == "agent.text.delta"),
        "the draining node still answers: {events:?}"
    );
    socket
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    let (events, close) = read_until(&mut socket, Duration::from_secs(10), |_| false).await;
    assert!(
        events.iter().any(|e| e["type"] == "session.ended"),
        "{events:?}"
    );
    assert_eq!(
        close,
        Some(1000),
        "a normal close after the caller's hangup"
    );

    // The last call over, the process exits by itself, successfully, long before the 60 s.
    let status = server
        .wait_exit(Duration::from_secs(15))
        .unwrap_or_else(|| {
            panic!(
                "the server exits after its last call; log: {}",
                server.log()
            )
        });
    assert!(
        status.success(),
        "exit status {status}; log: {}",
        server.log()
    );

    // Its record is complete.
    let server = Server::start_on(server.into_storage()).await;
    let (status, session) =
        call(server.get(&format!("/v1/observability/sessions/{session_id}"), &key)).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["status"], "completed", "{session}");
    assert_eq!(session["endReason"], "hangup", "{session}");
    assert!(is_iso_millis(&session["endedAt"]), "{session}");
    let speakers: Vec<&str> = session["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["speaker"].as_str().unwrap())
        .collect();
    assert_eq!(speakers, ["agent", "user", "agent"], "{session}");
}

#[tokio::test]
async fn calls_still_live_at_the_drain_timeout_are_ended_cleanly_and_recorded() {
    let storage = Storage::fresh().await;
    let mut server = Server::start_with(
        storage,
        &[("SWITCHBOARD__SERVER__DRAIN_TIMEOUT_SECONDS", "2")],
    )
    .await;
    let key = server.key().to_string();
    greeting_agent(&server, &key, json!({"recordDirectSessions": true})).await;
    let mut socket = open_direct(&server, &key, "desk").await;
    let (events, _) = read_until(&mut socket, Duration::from_secs(20), |e| {
        e["type"] == "agent.audio.end"
    })
    .await;
    let session_id = events[0]["sessionId"].as_str().unwrap().to_string();
    // The caller keeps talking (silence) and never hangs up.
    let talking = Instant::now();
    let stopped = Instant::now();
    sigterm(&server);
    let mut ended = Vec::new();
    let mut close = None;
    while talking.elapsed() < Duration::from_secs(15) && close.is_none() {
        let _ = socket.send(Message::binary(vec![0u8; 640])).await;
        let (events, closed) = read_until(&mut socket, Duration::from_millis(20), |_| false).await;
        ended.extend(events);
        close = closed;
    }
    let took = stopped.elapsed();
    assert!(
        ended.iter().any(|e| e["type"] == "session.ended"),
        "the client is told the session ended: {ended:?}"
    );
    assert_eq!(close, Some(1001), "closed as going away");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(8),
        "ended after the 2 s drain: {took:?}"
    );
    let status = server
        .wait_exit(Duration::from_secs(15))
        .unwrap_or_else(|| panic!("the server exits; log: {}", server.log()));
    assert!(
        status.success(),
        "exit status {status}; log: {}",
        server.log()
    );

    let server = Server::start_on(server.into_storage()).await;
    let (status, session) =
        call(server.get(&format!("/v1/observability/sessions/{session_id}"), &key)).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["status"], "completed", "{session}");
    assert_eq!(session["endReason"], "shutdown", "{session}");
    assert!(is_iso_millis(&session["endedAt"]), "{session}");
    // The recording was finished and its record completed before the process exited.
    let response = server
        .get(&format!("/v1/recordings/{session_id}"), &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let duration: f64 = response.headers()["x-recording-duration-ms"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(duration >= 2000.0, "recorded {duration} ms");
    let wav = response.bytes().await.unwrap();
    assert_eq!(&wav[..4], b"RIFF");
    assert_ne!(&wav[4..8], &[0xff; 4], "the WAV header was finalised");
}
