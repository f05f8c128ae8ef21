//! Per-key rate limits as clients meet them: the X-RateLimit-* headers counting down, 429
//! with Retry-After at the limit, each key with its own allowance, and — on PostgreSQL — one
//! limit shared by several nodes.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;

fn number(response: &reqwest::Response, name: &str) -> u64 {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} is a number"))
}

/// Waits, if need be, until the current fixed window of `window_seconds` has at least `needed`
/// left. The exact counts these tests expect hold within one window: once the sliding window
/// reaches into the next, the previous window's count weighs a little less, and one more
/// request can be admitted.
async fn with_room_in_the_window(window_seconds: u64, needed: Duration) {
    let window_ms = window_seconds * 1000;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let left = Duration::from_millis(window_ms - now_ms % window_ms);
    if left < needed {
        tokio::time::sleep(left + Duration::from_millis(50)).await;
    }
}

const LIMIT_FIVE: [(&str, &str); 2] = [
    ("SWITCHBOARD__RATE_LIMIT__REQUESTS", "5"),
    ("SWITCHBOARD__RATE_LIMIT__WINDOW_SECONDS", "60"),
];

#[tokio::test]
async fn requests_beyond_the_limit_get_429_with_retry_after() {
    let server = Server::start_with(Storage::fresh().await, &LIMIT_FIVE).await;
    let key = server.key().to_string();
    with_room_in_the_window(60, Duration::from_secs(5)).await;
    for expected in (0..5).rev() {
        let response = server.get("/v1/agents", &key).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(number(&response, "x-ratelimit-limit"), 5);
        assert_eq!(number(&response, "x-ratelimit-remaining"), expected);
    }
    let response = server.get("/v1/agents", &key).send().await.unwrap();
    assert_eq!(number(&response, "x-ratelimit-limit"), 5);
    assert_eq!(number(&response, "x-ratelimit-remaining"), 0);
    let retry_after = number(&response, "retry-after");
    assert!(
        (1..=120).contains(&retry_after),
        "Retry-After {retry_after}"
    );
    // Still an authenticated response: the usage headers are there.
    assert!(response.headers().contains_key("x-usage-remaining"));
    let (status, body) = json_of(response).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(error_code(&body), "rate_limited");

    // Every /v1 route counts, writes as well as reads.
    let (status, _) =
        call(server.post("/v1/collections", &key, serde_json::json!({"name": "x"}))).await;
    assert_eq!(status, 429);
    // Refused requests are not counted against the usage.
    let other = server.storage.create_key("dev_local");
    let (status, usage) = call(server.get("/v1/usage", &other)).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(
        usage["requestCount"], 6,
        "five admitted, then this one: {usage}"
    );
}

#[tokio::test]
async fn each_key_has_its_own_allowance_and_bad_keys_are_not_counted() {
    let server = Server::start_with(Storage::fresh().await, &LIMIT_FIVE).await;
    let first = server.key().to_string();
    let second = server.storage.create_key("dev_local");
    let third = server.storage.create_key("dev_other");
    for _ in 0..5 {
        let (status, _) = call(server.get("/v1/keys", &first)).await;
        assert_eq!(status, 200);
    }
    let (status, _) = call(server.get("/v1/keys", &first)).await;
    assert_eq!(status, 429);
    for key in [&second, &third] {
        let response = server.get("/v1/keys", key).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(number(&response, "x-ratelimit-remaining"), 4);
    }
    // Unauthenticated requests answer 401 and use no key's allowance.
    for _ in 0..10 {
        let (status, _) = call(server.get("/v1/keys", "sb_live_not_a_key")).await;
        assert_eq!(status, 401);
    }
    let response = server.get("/v1/keys", &second).send().await.unwrap();
    assert_eq!(number(&response, "x-ratelimit-remaining"), 3);
}

#[tokio::test]
async fn a_tier_sets_its_own_limit() {
    let storage = Storage::fresh().await;
    let env = [
        ("SWITCHBOARD__RATE_LIMIT__REQUESTS", "2"),
        ("SWITCHBOARD__TIERS__PRO__RATE_LIMIT_REQUESTS", "7"),
    ];
    let server = Server::start_with(storage, &env).await;
    let key = server.key().to_string();
    let response = server.get("/v1/usage", &key).send().await.unwrap();
    assert_eq!(number(&response, "x-ratelimit-limit"), 2);
    let storage = server.stop();
    let (ok, _, stderr) = storage.cli(&["developers", "set-tier", "dev_local", "pro"]);
    assert!(ok, "{stderr}");
    let server = Server::start_with(storage, &env).await;
    let response = server.get("/v1/usage", &key).send().await.unwrap();
    assert_eq!(number(&response, "x-ratelimit-limit"), 7);
    assert_eq!(number(&response, "x-ratelimit-remaining"), 6);
}

#[tokio::test]
async fn two_nodes_on_postgresql_share_one_limit() {
    let storage = Storage::fresh().await;
    let Some(url) = storage.database_url.clone() else {
        eprintln!("skipped: needs SWITCHBOARD_TEST_POSTGRES_URL (scripts/test sets it)");
        return;
    };
    let env = [
        ("SWITCHBOARD__RATE_LIMIT__REQUESTS", "10"),
        ("SWITCHBOARD__RATE_LIMIT__WINDOW_SECONDS", "60"),
        ("SWITCHBOARD__RATE_LIMIT__SYNC_MS", "50"),
    ];
    let node_a = Server::start_with(storage, &env).await;
    let key = node_a.key().to_string();
    let second_store = Storage {
        data_dir: tempfile::tempdir().unwrap(),
        database_url: Some(url),
    };
    let node_b = Server::start_with(second_store, &env).await;
    with_room_in_the_window(60, Duration::from_secs(10)).await;
    for _ in 0..6 {
        let (status, _) = call(node_a.get("/v1/agents", &key)).await;
        assert_eq!(status, 200);
    }
    // Both nodes share their counts every sync interval: node B learns of node A's six with
    // its first sync after it has seen the key. A second is twenty sync intervals, room for a
    // busy machine.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (status, _) = call(node_b.get("/v1/agents", &key)).await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut admitted = 1;
    for _ in 0..5 {
        let response = node_b.get("/v1/agents", &key).send().await.unwrap();
        if response.status() == 200 {
            admitted += 1;
        } else {
            assert_eq!(response.status(), 429);
            assert!(number(&response, "retry-after") >= 1);
        }
    }
    assert_eq!(admitted, 4, "node B admits only what node A left");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (status, body) = call(node_a.get("/v1/agents", &key)).await;
    assert_eq!(status, 429, "node A sees node B's requests: {body}");
}
