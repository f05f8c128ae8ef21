//! Crash consistency: the server is killed with SIGKILL (no chance to clean up) in the middle
//! of its riskiest writes — a large ingest, a provision, key rotations, an asynchronous
//! transcription, a live session — then started again on the same data dir and database.
//! Nothing may be half-written: no chunk without its document and no document missing
//! chunks, no agent without its collection, exactly one valid key of a rotation chain, no job
//! stuck in `processing`, no session `active` for ever.

mod common;

use std::time::Duration;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use futures_util::StreamExt;
use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};
use switchboard::store::schema::{agents, api_keys, chunks, collections, documents};
use switchboard::store::{Db, StoreError};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use common::*;

/// Kills the server without warning and hands back its store.
fn kill_hard(mut server: Server) -> Storage {
    // SAFETY: a plain kill(2) of the child process this test started.
    let killed = unsafe { libc::kill(server.pid() as i32, libc::SIGKILL) };
    assert_eq!(killed, 0, "SIGKILL reaches the server");
    assert!(
        server.wait_exit(Duration::from_secs(10)).is_some(),
        "the killed server exits"
    );
    server.into_storage()
}

/// The server's own database, opened beside it (the schema is already current).
fn open_db(storage: &Storage) -> Db {
    Db::connect(&storage.resolved_url(), 2, 5_000).expect("open the server's database")
}

/// What must hold in the knowledge tables whatever was cut: every chunk belongs to a
/// document that exists, every document has exactly the chunks it counts, and every document
/// belongs to a collection that exists.
async fn knowledge_is_whole(db: &Db) -> Result<(), String> {
    let check = async {
        switchboard::db_run!(db, |conn| {
            let orphan_chunks: i64 = chunks::table
                .filter(diesel::dsl::not(
                    chunks::document_id.eq_any(documents::table.select(documents::id)),
                ))
                .count()
                .get_result(conn)
                .await?;
            let orphan_documents: i64 = documents::table
                .filter(diesel::dsl::not(
                    documents::collection_id.eq_any(collections::table.select(collections::id)),
                ))
                .count()
                .get_result(conn)
                .await?;
            let counted: Vec<(String, i32)> = documents::table
                .select((documents::id, documents::chunk_count))
                .load(conn)
                .await?;
            let mut short = Vec::new();
            for (document, expected) in counted {
                let actual: i64 = chunks::table
                    .filter(chunks::document_id.eq(&document))
                    .count()
                    .get_result(conn)
                    .await?;
                if actual != i64::from(expected) {
                    short.push(format!("{document}: {actual} chunks of {expected}"));
                }
            }
            Ok::<_, StoreError>((orphan_chunks, orphan_documents, short))
        })
    };
    let (orphan_chunks, orphan_documents, short) = check.await.map_err(|e| e.to_string())?;
    if orphan_chunks > 0 || orphan_documents > 0 || !short.is_empty() {
        return Err(format!(
            "{orphan_chunks} chunks without a document, {orphan_documents} documents without a \
             collection, documents missing chunks: {short:?}"
        ));
    }
    Ok(())
}

/// About `bytes` of distinct sentences (so chunks differ and each needs its own embedding).
fn long_text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 100);
    let mut n = 0u64;
    while text.len() < bytes {
        n += 1;
        text.push_str(&format!(
            "Record {n}: the warehouse on shelf {} keeps {} boxes of part {} for order {}. ",
            n % 97,
            n * 7 % 1000,
            n * 13 % 10_000,
            n * 31
        ));
    }
    text
}

/// Sends `request` in the background; answers a handle to its outcome.
fn in_flight(
    request: reqwest::RequestBuilder,
) -> tokio::task::JoinHandle<Result<reqwest::StatusCode, reqwest::Error>> {
    tokio::spawn(async move { request.send().await.map(|r| r.status()) })
}

#[tokio::test]
async fn an_ingest_cut_by_a_crash_leaves_no_half_written_document() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, collection) =
        call(server.post("/v1/collections", &key, json!({"name": "Warehouse"}))).await;
    assert_eq!(status, 201, "{collection}");
    let collection = collection["id"].as_str().unwrap().to_string();
    // A whole document first: it must survive the crash untouched.
    let (status, kept) = call(server.post(
        &format!("/v1/collections/{collection}/ingest"),
        &key,
        json!({"content": long_text(3_000), "chunkSize": 500, "chunkOverlap": 0}),
    ))
    .await;
    assert_eq!(status, 201, "{kept}");
    let kept_chunks = kept["chunksCreated"].as_i64().unwrap();

    // Close to the 1 MB limit in small chunks: many embeddings, seconds of work.
    let ingest = in_flight(server.post(
        &format!("/v1/collections/{collection}/ingest"),
        &key,
        json!({"content": long_text(900_000), "chunkSize": 200, "chunkOverlap": 0}),
    ));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!ingest.is_finished(), "the large ingest is still running");
    let storage = kill_hard(server);
    assert!(
        ingest.await.unwrap().is_err(),
        "the cut ingest got no answer"
    );

    let server = Server::start_on(storage).await;
    let db = open_db(&server.storage);
    knowledge_is_whole(&db).await.unwrap();
    // The cut document left nothing; the earlier one is whole and still found.
    let documents: i64 = async {
        switchboard::db_run!(&db, |conn| {
            Ok::<_, StoreError>(
                documents::table
                    .filter(documents::collection_id.eq(&collection))
                    .count()
                    .get_result(conn)
                    .await?,
            )
        })
    }
    .await
    .unwrap();
    assert_eq!(documents, 1, "only the document that was answered 201");
    let (status, found) = call(server.post(
        &format!("/v1/collections/{collection}/search"),
        &key,
        json!({"query": "which boxes are on shelf 3", "threshold": 0.0, "limit": 100}),
    ))
    .await;
    assert_eq!(status, 200, "{found}");
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len() as i64, kept_chunks, "{}", short(&found));
    assert!(results
        .iter()
        .all(|r| r["documentId"] == kept["documentId"]));
    // And the collection takes the same ingest again.
    let (status, again) = call(server.post(
        &format!("/v1/collections/{collection}/ingest"),
        &key,
        json!({"content": long_text(2_000)}),
    ))
    .await;
    assert_eq!(status, 201, "{again}");
    knowledge_is_whole(&db).await.unwrap();
}

#[tokio::test]
async fn a_provision_cut_by_a_crash_leaves_no_agent_without_its_collection() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let provision = in_flight(server.post(
        "/v1/agents/provision",
        &key,
        json!({
            "name": "Cut short",
            "collection": {"name": "Cut short knowledge"},
            "initialContent": [
                {"content": long_text(400_000), "contentType": "text"},
                {"content": long_text(400_000), "contentType": "text"}
            ]
        }),
    ));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!provision.is_finished(), "the provision is still running");
    let storage = kill_hard(server);
    assert!(
        provision.await.unwrap().is_err(),
        "the cut provision got no answer"
    );

    let server = Server::start_on(storage).await;
    let db = open_db(&server.storage);
    knowledge_is_whole(&db).await.unwrap();
    let (agents_left, collections_left): (i64, i64) = async {
        switchboard::db_run!(&db, |conn| {
            let a: i64 = agents::table.count().get_result(conn).await?;
            let c: i64 = collections::table.count().get_result(conn).await?;
            Ok::<_, StoreError>((a, c))
        })
    }
    .await
    .unwrap();
    assert_eq!(
        (agents_left, collections_left),
        (0, 0),
        "a provision is all or nothing"
    );
    let ids = all_ids_at(&server, &key, "/v1/agents", 100).await;
    assert!(ids.is_empty(), "{ids:?}");
    let ids = all_ids_at(&server, &key, "/v1/collections", 100).await;
    assert!(ids.is_empty(), "{ids:?}");

    // The same provision, uninterrupted, then gives an agent whose collection exists.
    let (status, done) = call(server.post(
        "/v1/agents/provision",
        &key,
        json!({"name": "Whole", "initialContent": [{"content": long_text(2_000)}]}),
    ))
    .await;
    assert_eq!(status, 201, "{done}");
    let (status, collection) = call(server.get(
        &format!(
            "/v1/collections/{}",
            done["agent"]["collectionId"].as_str().unwrap()
        ),
        &key,
    ))
    .await;
    assert_eq!(status, 200, "{collection}");
}

#[tokio::test]
async fn key_rotations_cut_by_a_crash_leave_exactly_one_valid_key() {
    let storage = Storage::fresh().await;
    let admin = storage.create_key("dev_rotating");
    let rotated = storage.create_key("dev_rotating");
    let server = Server::start_on(storage).await;
    let (status, page) = call(server.get("/v1/keys?limit=100", &admin)).await;
    assert_eq!(status, 200, "{page}");
    let first_id = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| rotated.starts_with(k["prefix"].as_str().unwrap().trim_end_matches('…')))
        .expect("the rotated key is listed")["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Rotate back to back, and kill the server in the middle of one.
    let base = server.base.clone();
    let admin_for_rotations = admin.clone();
    let rotations = tokio::spawn(async move {
        let http = reqwest::Client::new();
        let mut current = (first_id, rotated);
        let mut answered = vec![current.clone()];
        loop {
            let response = http
                .post(format!("{base}/v1/keys/{}/rotate", current.0))
                .header("Authorization", format!("Bearer {admin_for_rotations}"))
                .send()
                .await;
            let Ok(response) = response else { break };
            let Ok(body) = response.json::<Value>().await else {
                break;
            };
            current = (
                body["id"].as_str().unwrap().to_string(),
                body["key"].as_str().unwrap().to_string(),
            );
            answered.push(current.clone());
        }
        answered
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    let storage = kill_hard(server);
    let answered = rotations.await.unwrap();
    assert!(
        answered.len() > 3,
        "rotations ran before the crash: {}",
        answered.len()
    );

    let server = Server::start_on(storage).await;
    // The admin key was never rotated; of the chain, exactly one key is still valid.
    let db = open_db(&server.storage);
    let valid: Vec<String> = async {
        switchboard::db_run!(&db, |conn| {
            Ok::<_, StoreError>(
                api_keys::table
                    .filter(api_keys::developer_id.eq("dev_rotating"))
                    .filter(api_keys::revoked_at.is_null())
                    .select(api_keys::id)
                    .load(conn)
                    .await?,
            )
        })
    }
    .await
    .unwrap();
    assert_eq!(
        valid.len(),
        2,
        "the admin key and one of the chain: {valid:?}"
    );
    let (status, _) = call(server.get("/v1/usage", &admin)).await;
    assert_eq!(status, 200, "the admin key works");
    let mut working = Vec::new();
    for (id, raw) in &answered {
        let (status, _) = call(server.get("/v1/usage", raw)).await;
        if status == 200 {
            working.push(id.clone());
        } else {
            assert_eq!(status, 401, "a revoked key of the chain");
        }
    }
    let last = &answered.last().unwrap().0;
    match working.as_slice() {
        // The last rotation answered is the valid key...
        [only] => assert_eq!(only, last, "only the newest key works"),
        // ...or the crash came after a rotation committed and before its answer left: the
        // valid key is then one this client never saw, and every key it saw is revoked.
        [] => assert!(
            !answered.iter().any(|(id, _)| valid.contains(id)),
            "{valid:?}"
        ),
        more => panic!("several keys of one chain work: {more:?}"),
    }
}

#[tokio::test]
async fn a_transcription_job_cut_by_a_crash_ends_after_the_restart() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let form = Form::new().part(
        "file",
        Part::bytes(fixture("jfk.flac")).file_name("jfk.flac"),
    );
    let (status, accepted) = call(
        server
            .request(reqwest::Method::POST, "/v1/transcribe/async", &key)
            .multipart(form),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_string();
    let (_, job) = call(server.get(&format!("/v1/transcribe/{id}"), &key)).await;
    assert_eq!(
        job["status"], "processing",
        "killed while processing: {job}"
    );
    let storage = kill_hard(server);

    let server = Server::start_on(storage).await;
    let started = std::time::Instant::now();
    let job = loop {
        let (status, job) = call(server.get(&format!("/v1/transcribe/{id}"), &key)).await;
        assert_eq!(status, 200, "{job}");
        if job["status"] != "processing" {
            break job;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the job is stuck in processing after the restart: {job}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The upload was kept, so the restarted server runs the job again to the end.
    assert_eq!(job["status"], "completed", "{job}");
    assert!(is_iso_millis(&job["completedAt"]), "{job}");
    let text = job["result"]["text"].as_str().unwrap_or_default();
    assert!(
        text.to_lowercase().contains("ask not"),
        "the whole speech was transcribed: {job}"
    );
}

#[tokio::test]
async fn a_live_session_cut_by_a_crash_is_failed_with_a_reason_after_the_restart() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, agent) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "crashing", "name": "Crashing", "firstMessage": "Hello.",
            "metadata": {"recordDirectSessions": true}}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    let url = server
        .url("/v1/agents/crashing/session")
        .replacen("http://", "ws://", 1);
    let mut request = url.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the direct socket opens");
    let session = loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a first event")
            .expect("the socket is open")
            .expect("a frame");
        if let Ok(text) = frame.to_text() {
            let event: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if event["type"] == "session.started" {
                break event["sessionId"]
                    .as_str()
                    .expect("a session id")
                    .to_string();
            }
        }
    };
    let (status, live) =
        call(server.get(&format!("/v1/observability/sessions/{session}"), &key)).await;
    assert_eq!(status, 200, "{live}");
    assert_eq!(live["status"], "active", "{live}");
    // The session is being recorded: its file is on disk while it runs.
    let recordings = server.storage.data_dir.path().join("recordings");
    let partial_files = || -> Vec<std::path::PathBuf> {
        let Ok(developers) = std::fs::read_dir(&recordings) else {
            return Vec::new();
        };
        developers
            .flatten()
            .filter_map(|dir| std::fs::read_dir(dir.path()).ok())
            .flat_map(|files| files.flatten().map(|f| f.path()))
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while partial_files().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(partial_files().len(), 1, "the recording being written");
    let storage = kill_hard(server);
    drop(socket);

    let server = Server::start_on(storage).await;
    let (status, ended) =
        call(server.get(&format!("/v1/observability/sessions/{session}"), &key)).await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        ended["endReason"]
            .as_str()
            .is_some_and(|r| r.starts_with("node_restarted")),
        "{ended}"
    );
    assert!(is_iso_millis(&ended["endedAt"]), "{ended}");
    // Its recording failed and is not kept: the API says so and its partial file is gone.
    let (status, body) = call(server.get(&format!("/v1/recordings/{session}"), &key)).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not kept")),
        "{body}"
    );
    assert_eq!(partial_files(), Vec::<std::path::PathBuf>::new());
    // A session that starts on the restarted node is its own, and is left alone.
    let (status, _) = call(server.get("/v1/observability/sessions", &key)).await;
    assert_eq!(status, 200);
}
