//! API keys: issuing, listing, revoking, rotating and expiring keys, through the API and the
//! operator CLI, and authentication of every `/v1` request.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

async fn create(server: &Server, key: &str, body: Value) -> (u16, Value) {
    call(server.post("/v1/keys", key, body)).await
}

async fn status_with(server: &Server, key: &str) -> u16 {
    call(server.get("/v1/agents", key)).await.0
}

#[tokio::test]
async fn a_new_key_is_shown_once_with_its_prefix_and_works_at_once() {
    let server = Server::start().await;
    let (status, body) = create(&server, server.key(), json!({"name": "ci"})).await;
    assert_eq!(status, 201, "{body}");
    let raw = body["key"].as_str().unwrap();
    assert!(raw.starts_with("sb_live_"));
    let random = &raw["sb_live_".len()..];
    assert!(random.len() >= 32 && random.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(body["name"], "ci");
    assert_eq!(body["expiresAt"], Value::Null);
    assert!(body["message"].as_str().unwrap().contains("only once"));
    assert!(body["id"].as_str().unwrap().starts_with("key_"));
    assert_eq!(status_with(&server, raw).await, 200);

    let (status, list) = call(server.get("/v1/keys", raw)).await;
    assert_eq!(status, 200);
    let listed = list["data"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    for item in listed {
        assert!(item.get("key").is_none(), "raw keys never listed: {item}");
        assert_eq!(item["prefix"].as_str().unwrap().len(), 12);
        assert!(item.get("lastUsedAt").is_some());
    }
    let new = listed.iter().find(|k| k["id"] == body["id"]).unwrap();
    assert_eq!(new["prefix"], raw[..12]);
    assert!(!list.to_string().contains(raw));
}

#[tokio::test]
async fn an_empty_body_creates_a_default_key_without_expiry() {
    let server = Server::start().await;
    let response = server
        .request(reqwest::Method::POST, "/v1/keys", server.key())
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["name"], "Default");
    assert_eq!(body["expiresAt"], Value::Null);
}

#[tokio::test]
async fn key_name_and_expiry_limits_are_enforced() {
    let server = Server::start().await;
    let key = server.key();
    for (body, param) in [
        (json!({"name": ""}), "name"),
        (json!({"name": "   "}), "name"),
        (json!({"name": "n".repeat(101)}), "name"),
        (json!({"expiresInDays": 0}), "expiresInDays"),
        (json!({"expiresInDays": 366}), "expiresInDays"),
        (json!({"expiresInDays": -3}), "expiresInDays"),
    ] {
        let (status, error) = create(&server, key, body.clone()).await;
        assert_eq!(status, 400, "{body} → {error}");
        assert_eq!(error_code(&error), "validation_error");
        assert_eq!(error["error"]["param"], param, "{body}");
    }
    let (status, error) = create(&server, key, json!({"nmae": "typo"})).await;
    assert_eq!((status, error_code(&error)), (400, "validation_error"));
    let (status, error) = create(&server, key, json!({"expiresInDays": 1.5})).await;
    assert_eq!((status, error_code(&error)), (400, "validation_error"));

    let (status, body) = create(
        &server,
        key,
        json!({"name": "n".repeat(100), "expiresInDays": 1}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = create(&server, key, json!({"expiresInDays": 365})).await;
    assert_eq!(status, 201, "{body}");
    let expires = chrono_like_days_from_now(body["expiresAt"].as_str().unwrap());
    assert!(
        (364.9..=365.1).contains(&expires),
        "expires in {expires} days"
    );
    // Nothing was created by the refused requests.
    let (_, list) = call(server.get("/v1/keys", key)).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 3);
}

/// Days between now and an ISO 8601 UTC timestamp with milliseconds.
fn chrono_like_days_from_now(iso: &str) -> f64 {
    let parsed = time_of(iso);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    (parsed - now) / 86_400_000.0
}

fn time_of(iso: &str) -> f64 {
    // 2026-11-22T17:00:00.123Z
    assert_eq!(iso.len(), 24, "millisecond precision: {iso}");
    assert!(iso.ends_with('Z'));
    let (date, rest) = iso.split_once('T').unwrap();
    let mut d = date.split('-').map(|p| p.parse::<i64>().unwrap());
    let (y, m, day) = (d.next().unwrap(), d.next().unwrap(), d.next().unwrap());
    let hms: Vec<f64> = rest
        .trim_end_matches('Z')
        .split(':')
        .map(|p| p.parse().unwrap())
        .collect();
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (days as f64 * 86_400.0 + hms[0] * 3600.0 + hms[1] * 60.0 + hms[2]) * 1000.0
}

#[tokio::test]
async fn a_revoked_key_is_refused_on_the_very_next_request() {
    let server = Server::start().await;
    let (_, body) = create(&server, server.key(), json!({"name": "temp"})).await;
    let raw = body["key"].as_str().unwrap();
    let id = body["id"].as_str().unwrap();
    assert_eq!(status_with(&server, raw).await, 200);

    let (status, _) = call(server.delete(&format!("/v1/keys/{id}"), server.key())).await;
    assert_eq!(status, 204);
    let (status, error) = call(server.get("/v1/agents", raw)).await;
    assert_eq!((status, error_code(&error)), (401, "unauthorized"));
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("revoked"));

    let (status, error) = call(server.delete(&format!("/v1/keys/{id}"), server.key())).await;
    assert_eq!((status, error_code(&error)), (404, "not_found"));
    let (_, list) = call(server.get("/v1/keys", server.key())).await;
    assert!(list["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k["id"] != id));
}

#[tokio::test]
async fn a_key_can_revoke_itself() {
    let server = Server::start().await;
    let list = call(server.get("/v1/keys", server.key())).await.1;
    let own_id = list["data"][0]["id"].as_str().unwrap().to_string();
    let (status, _) = call(server.delete(&format!("/v1/keys/{own_id}"), server.key())).await;
    assert_eq!(status, 204);
    assert_eq!(status_with(&server, server.key()).await, 401);
}

#[tokio::test]
async fn rotation_issues_a_new_key_and_revokes_the_old_one_atomically() {
    let server = Server::start().await;
    let (_, body) = create(
        &server,
        server.key(),
        json!({"name": "deploy", "expiresInDays": 30}),
    )
    .await;
    let old = body["key"].as_str().unwrap().to_string();
    let old_id = body["id"].as_str().unwrap().to_string();
    assert_eq!(status_with(&server, &old).await, 200);

    let (status, rotated) = call(server.post(
        &format!("/v1/keys/{old_id}/rotate"),
        server.key(),
        json!({}),
    ))
    .await;
    assert_eq!(status, 200, "{rotated}");
    let new = rotated["key"].as_str().unwrap();
    assert_ne!(new, old);
    assert_ne!(rotated["id"], old_id);
    assert_eq!(rotated["name"], "deploy");
    assert!(rotated["message"].as_str().unwrap().contains("only once"));
    let lifetime = chrono_like_days_from_now(rotated["expiresAt"].as_str().unwrap());
    assert!(
        (29.9..=30.1).contains(&lifetime),
        "same 30-day lifetime: {lifetime}"
    );

    assert_eq!(status_with(&server, &old).await, 401);
    assert_eq!(status_with(&server, new).await, 200);
    let (status, error) = call(server.post(
        &format!("/v1/keys/{old_id}/rotate"),
        server.key(),
        json!({}),
    ))
    .await;
    assert_eq!((status, error_code(&error)), (404, "not_found"));
}

#[tokio::test]
async fn an_expired_key_is_refused() {
    let server = Server::start().await;
    let (_, body) = create(&server, server.key(), json!({"expiresInDays": 1})).await;
    let raw = body["key"].as_str().unwrap().to_string();
    let id = body["id"].as_str().unwrap().to_string();
    expire_in_storage(&server, &id).await;
    let (status, error) = call(server.get("/v1/agents", &raw)).await;
    assert_eq!((status, error_code(&error)), (401, "unauthorized"));
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("expired"));
}

/// Moves a key's expiry into the past directly in storage (time travel for the test).
async fn expire_in_storage(server: &Server, key_id: &str) {
    use diesel_async::RunQueryDsl;
    let db = switchboard::store::Db::connect(&server.storage.resolved_url(), 1, 5000).unwrap();
    let sql = format!("UPDATE api_keys SET expires_at = 1000 WHERE id = '{key_id}'");
    let update = async {
        switchboard::db_run!(&db, |conn| {
            Ok::<usize, switchboard::store::StoreError>(
                diesel::sql_query(&sql).execute(conn).await?,
            )
        })
    };
    assert_eq!(update.await.unwrap(), 1);
}

#[tokio::test]
async fn keys_belong_to_their_developer() {
    let server = Server::start().await;
    let other = server.storage.create_key("dev_other");
    let (_, mine) = call(server.get("/v1/keys", server.key())).await;
    let my_id = mine["data"][0]["id"].as_str().unwrap().to_string();
    let (_, theirs) = call(server.get("/v1/keys", &other)).await;
    assert_eq!(theirs["data"].as_array().unwrap().len(), 1);
    assert_ne!(theirs["data"][0]["id"], my_id);

    let (status, _) = call(server.delete(&format!("/v1/keys/{my_id}"), &other)).await;
    assert_eq!(status, 404);
    let (status, _) =
        call(server.post(&format!("/v1/keys/{my_id}/rotate"), &other, json!({}))).await;
    assert_eq!(status, 404);
    assert_eq!(status_with(&server, server.key()).await, 200);
}

#[tokio::test]
async fn key_lists_paginate_in_creation_order() {
    let server = Server::start().await;
    let mut ids = vec![call(server.get("/v1/keys", server.key())).await.1["data"][0]["id"].clone()];
    for i in 0..4 {
        let (_, body) = create(&server, server.key(), json!({"name": format!("k{i}")})).await;
        ids.push(body["id"].clone());
    }
    let (_, first) = call(server.get("/v1/keys?limit=2", server.key())).await;
    assert_eq!(first["data"].as_array().unwrap().len(), 2);
    assert_eq!(first["hasMore"], true);
    assert_eq!(first["nextCursor"], ids[1]);
    let cursor = first["nextCursor"].as_str().unwrap();
    let (_, second) =
        call(server.get(&format!("/v1/keys?limit=2&cursor={cursor}"), server.key())).await;
    assert_eq!(second["data"][0]["id"], ids[2]);
    let cursor = second["nextCursor"].as_str().unwrap();
    let (_, last) =
        call(server.get(&format!("/v1/keys?limit=2&cursor={cursor}"), server.key())).await;
    assert_eq!(last["data"].as_array().unwrap().len(), 1);
    assert_eq!(last["data"][0]["id"], ids[4]);
    assert_eq!(last["hasMore"], false);
    assert_eq!(last["nextCursor"], Value::Null);
}

#[tokio::test]
async fn last_used_is_recorded_and_survives_a_restart() {
    let server = Server::start().await;
    let (_, body) = create(&server, server.key(), json!({"name": "fresh"})).await;
    let raw = body["key"].as_str().unwrap().to_string();
    let id = body["id"].clone();
    let listed = |list: &Value| {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["id"] == id)
            .cloned()
            .unwrap()
    };
    let (_, list) = call(server.get("/v1/keys", server.key())).await;
    assert_eq!(listed(&list)["lastUsedAt"], Value::Null);

    assert_eq!(status_with(&server, &raw).await, 200);
    let (_, list) = call(server.get("/v1/keys", server.key())).await;
    let used = listed(&list)["lastUsedAt"].as_str().unwrap().to_string();
    assert!(chrono_like_days_from_now(&used).abs() < 0.001);

    let bootstrap = server.key().to_string();
    let server = server.restart().await;
    let (status, list) = call(server.get("/v1/keys", &bootstrap)).await;
    assert_eq!(status, 200, "keys survive a restart");
    assert_eq!(listed(&list)["lastUsedAt"], used);
    assert_eq!(status_with(&server, &raw).await, 200);
}

#[tokio::test]
async fn the_cli_creates_lists_and_revokes_keys_beside_a_running_server() {
    let server = Server::start().await;
    let (ok, stdout, stderr) = server.storage.cli(&[
        "keys",
        "create",
        "--developer",
        "ops",
        "--name",
        "cli key",
        "--expires-in-days",
        "7",
    ]);
    assert!(ok, "{stderr}");
    let raw = stdout.lines().last().unwrap().trim().to_string();
    assert!(
        raw.starts_with("sb_live_"),
        "raw key alone on the last line: {stdout}"
    );
    assert_eq!(status_with(&server, &raw).await, 200);

    let (ok, listing, _) = server.storage.cli(&["keys", "list", "--developer", "ops"]);
    assert!(ok);
    assert!(listing.contains("cli key") && listing.contains(&raw[..12]));
    assert!(!listing.contains(&raw));
    let key_id = listing
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();

    let (ok, _, stderr) = server.storage.cli(&["keys", "revoke", &key_id]);
    assert!(ok, "{stderr}");
    // The server learns of revocations made by another process within its poll interval.
    let mut refused = false;
    for _ in 0..40 {
        if status_with(&server, &raw).await == 401 {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        refused,
        "a key revoked by the CLI is refused by the running server"
    );

    let (ok, _, _) = server.storage.cli(&["keys", "revoke", &key_id]);
    assert!(!ok, "revoking twice fails");
    let (ok, _, stderr) = server.storage.cli(&[
        "keys",
        "create",
        "--developer",
        "ops",
        "--expires-in-days",
        "0",
    ]);
    assert!(!ok, "expiry outside 1-365 is refused: {stderr}");
}
