//! Knowledge collections as a client uses them: ingesting text, transcripts, web pages and
//! audio; semantic search with paraphrased questions; deleting documents; provisioning an
//! agent with content in one atomic step; and isolation between developers.

mod common;

use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const FAQ: &str = "Our stores open at 9 in the morning and close at 6 in the evening on weekdays. \
On Saturdays we open at 10 and close at 4. We are closed on Sundays.\n\n\
You can return any item within 30 days of purchase for a full refund. Items must be unused and \
in their original packaging, and refunds are paid back to the card used for the purchase.\n\n\
Standard shipping takes three to five business days and is free on orders over fifty dollars. \
Express shipping arrives the next business day and costs twelve dollars.\n\n\
Our support team can be reached by phone at any time, day or night, and by email within one \
business day.";

const DISTRACTORS: &str = "The history of the bicycle begins in the early nineteenth century with \
the draisine, a two-wheeled vehicle pushed along by the rider's feet.\n\n\
Photosynthesis converts light energy into chemical energy stored in glucose, releasing oxygen \
as a by-product in green plants and algae.\n\n\
The Pacific Ocean is the largest and deepest of the world's oceans, covering about a third of \
the surface of the Earth.";

async fn new_collection(server: &Server, key: &str) -> String {
    let (status, body) =
        call(server.post("/v1/collections", key, json!({"name": "Help center"}))).await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_string()
}

async fn ingest(server: &Server, key: &str, collection: &str, body: Value) -> (u16, Value) {
    call(server.post(&format!("/v1/collections/{collection}/ingest"), key, body)).await
}

async fn search(server: &Server, key: &str, collection: &str, body: Value) -> (u16, Value) {
    call(server.post(&format!("/v1/collections/{collection}/search"), key, body)).await
}

fn top_content(results: &Value) -> &str {
    results["results"][0]["content"].as_str().unwrap_or("")
}

#[tokio::test]
async fn paraphrased_questions_find_the_right_chunk() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let collection = new_collection(&server, &key).await;
    let (status, body) = ingest(
        &server,
        &key,
        &collection,
        json!({"content": FAQ, "chunkSize": 300, "chunkOverlap": 0, "metadata": {"source": "faq"}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    // Four paragraphs of 110-190 characters: the last two share a 300-character chunk.
    assert_eq!(body["chunksCreated"], 3, "{body}");
    assert!(body["tokensUsed"].as_u64().unwrap() > 100, "{body}");
    assert!(body["documentId"].as_str().unwrap().starts_with("doc_"));
    let (status, _) = ingest(
        &server,
        &key,
        &collection,
        json!({"content": DISTRACTORS, "chunkSize": 300, "chunkOverlap": 0}),
    )
    .await;
    assert_eq!(status, 201);

    for (question, expected) in [
        (
            "Can I get my money back if I don't like what I bought?",
            "refund",
        ),
        ("How long does delivery take?", "shipping"),
        ("What time do you close on Saturday?", "Saturdays"),
        ("How do I get in touch with your support team?", "phone"),
    ] {
        let (status, results) = search(
            &server,
            &key,
            &collection,
            json!({"query": question, "limit": 3, "threshold": 0.0}),
        )
        .await;
        assert_eq!(status, 200, "{results}");
        assert!(
            top_content(&results).contains(expected),
            "{question} → {}",
            short(&results)
        );
        let hits = results["results"].as_array().unwrap();
        let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "sorted by score: {scores:?}"
        );
        assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
        assert_eq!(hits[0]["metadata"]["source"], "faq");
        assert!(hits[0]["chunkIndex"].is_u64() && hits[0]["documentId"].is_string());
    }

    // A high threshold keeps only close matches; includeMetadata false leaves metadata out.
    let (_, strict) = search(
        &server,
        &key,
        &collection,
        json!({"query": "bicycle history", "threshold": 0.98}),
    )
    .await;
    assert_eq!(strict["results"].as_array().unwrap().len(), 0, "{strict}");
    let (_, bare) = search(
        &server,
        &key,
        &collection,
        json!({"query": "refund policy", "includeMetadata": false}),
    )
    .await;
    assert!(bare["results"][0].get("metadata").is_none(), "{bare}");
}

#[tokio::test]
async fn a_deleted_document_leaves_search_at_once() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let collection = new_collection(&server, &key).await;
    let (_, faq) = ingest(&server, &key, &collection, json!({"content": FAQ})).await;
    let faq_id = faq["documentId"].as_str().unwrap().to_string();
    let (_, before) = search(
        &server,
        &key,
        &collection,
        json!({"query": "refund for a return", "threshold": 0.0}),
    )
    .await;
    assert!(!before["results"].as_array().unwrap().is_empty());

    let response = server
        .delete(
            &format!("/v1/collections/{collection}/documents/{faq_id}"),
            &key,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let (_, after) = search(
        &server,
        &key,
        &collection,
        json!({"query": "refund for a return", "threshold": 0.0}),
    )
    .await;
    assert!(after["results"].as_array().unwrap().is_empty(), "{after}");

    let (status, body) = call(server.delete(
        &format!("/v1/collections/{collection}/documents/{faq_id}"),
        &key,
    ))
    .await;
    assert_not_found(status, &body, "deleting twice");

    // After a restart the index is rebuilt from storage and still lacks the document.
    let (_, kept) = ingest(&server, &key, &collection, json!({"content": DISTRACTORS})).await;
    assert!(kept["documentId"].is_string());
    let server = server.restart().await;
    let (_, rebuilt) = search(
        &server,
        &key,
        &collection,
        json!({"query": "the largest ocean", "threshold": 0.0}),
    )
    .await;
    assert!(top_content(&rebuilt).contains("Pacific"), "{rebuilt}");
    let (_, gone) = search(
        &server,
        &key,
        &collection,
        json!({"query": "refund for a return", "threshold": 0.2}),
    )
    .await;
    assert!(gone["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["documentId"] != faq_id.as_str()));
}

#[tokio::test]
async fn ingest_limits_are_enforced_and_change_nothing() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let collection = new_collection(&server, &key).await;
    let too_long = "word ".repeat(220_000);
    for (body, param) in [
        (json!({}), "content"),
        (json!({"content": "   "}), "content"),
        (json!({"content": too_long}), "content"),
        (json!({"content": "x", "contentType": "pdf"}), "contentType"),
        (json!({"content": "x", "chunkSize": 99}), "chunkSize"),
        (json!({"content": "x", "chunkSize": 4001}), "chunkSize"),
        (json!({"content": "x", "chunkOverlap": 501}), "chunkOverlap"),
        (
            json!({"content": "x", "chunkSize": 300, "chunkOverlap": 300}),
            "chunkOverlap",
        ),
        (json!({"content": "x", "chunkOverlap": -1}), "chunkOverlap"),
        (json!({"contentType": "url"}), "sourceUrl"),
        (
            json!({"contentType": "audio", "sourceUrl": "ftp://example.com/a.wav"}),
            "sourceUrl",
        ),
        (
            json!({"content": "x", "metadata": "not an object"}),
            "metadata",
        ),
    ] {
        let (status, error) = ingest(&server, &key, &collection, body.clone()).await;
        assert_invalid(status, &error, param, &short(&body));
    }
    let (status, body) = ingest(&server, &key, "col_missing", json!({"content": "hello"})).await;
    assert_not_found(status, &body, "an unknown collection");
    // Nothing was stored by any of these.
    let (_, results) = search(
        &server,
        &key,
        &collection,
        json!({"query": "x", "threshold": 0.0}),
    )
    .await;
    assert_eq!(results["results"].as_array().unwrap().len(), 0, "{results}");

    for (body, param) in [
        (json!({}), "query"),
        (json!({"query": "a".repeat(2001)}), "query"),
        (json!({"query": "hi", "limit": 0}), "limit"),
        (json!({"query": "hi", "limit": 101}), "limit"),
        (json!({"query": "hi", "threshold": 1.5}), "threshold"),
    ] {
        let (status, error) = search(&server, &key, &collection, body.clone()).await;
        assert_invalid(status, &error, param, &short(&body));
    }
}

#[tokio::test]
async fn collections_are_private_to_their_developer() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let collection = new_collection(&server, &key).await;
    let (_, doc) = ingest(&server, &key, &collection, json!({"content": FAQ})).await;
    let stranger = server.storage.create_key("dev_other");
    let (status, body) = ingest(
        &server,
        &stranger,
        &collection,
        json!({"content": "mine now"}),
    )
    .await;
    assert_not_found(status, &body, "ingest into another's collection");
    let (status, body) = search(&server, &stranger, &collection, json!({"query": "refund"})).await;
    assert_not_found(status, &body, "search another's collection");
    let path = format!(
        "/v1/collections/{collection}/documents/{}",
        doc["documentId"].as_str().unwrap()
    );
    let (status, body) = call(server.delete(&path, &stranger)).await;
    assert_not_found(status, &body, "delete another's document");
}

/// Serves a fixed body with a content type on loopback.
async fn serve(body: Vec<u8>, content_type: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    format!("http://{addr}/source")
}

#[tokio::test]
async fn web_pages_and_recordings_are_ingested_as_readable_text() {
    let page = format!(
        "<html><head><script>var secret = 'tracking';</script></head><body><nav>Home | Shop</nav>\
         <h1>Returns</h1><p>{}</p><footer>Copyright</footer></body></html>",
        FAQ.split("\n\n").nth(1).unwrap()
    );
    let page_url = serve(page.into_bytes(), "text/html; charset=utf-8").await;
    let audio_url = serve(fixture("jfk.flac"), "audio/flac").await;

    let storage = Storage::fresh().await;
    let server = Server::start_with(
        storage,
        &[("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.0/8\"]")],
    )
    .await;
    let key = server.key().to_string();
    let collection = new_collection(&server, &key).await;

    let (status, body) = ingest(
        &server,
        &key,
        &collection,
        json!({"contentType": "url", "sourceUrl": page_url}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (_, results) = search(
        &server,
        &key,
        &collection,
        json!({"query": "money back for returned items", "threshold": 0.0}),
    )
    .await;
    let content = top_content(&results);
    assert!(content.contains("refund"), "{results}");
    assert!(
        !content.contains("tracking") && !content.contains("Copyright"),
        "{content}"
    );

    let (status, body) = ingest(
        &server,
        &key,
        &collection,
        json!({"contentType": "audio", "sourceUrl": audio_url, "metadata": {"speaker": "JFK"}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (_, results) = search(
        &server,
        &key,
        &collection,
        json!({"query": "what you can do for your country", "threshold": 0.0}),
    )
    .await;
    let hit = &results["results"][0];
    assert!(
        hit["content"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("country"),
        "{results}"
    );
    assert_eq!(hit["metadata"]["speaker"], "JFK");
    assert!(
        hit["metadata"]["startTime"].is_number() && hit["metadata"]["endTime"].is_number(),
        "{hit}"
    );
}

#[tokio::test]
async fn provisioning_is_all_or_nothing() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/agents/provision",
        &key,
        json!({
            "name": "Store helper",
            "systemPrompt": "Answer questions about the store.",
            "collection": {"name": "Store FAQ", "description": "Hours, returns, shipping"},
            "initialContent": [
                {"content": FAQ, "contentType": "text"},
                {"content": "Agent: Hello!\nCaller: When do you open?\nAgent: At nine.", "contentType": "transcript"}
            ]
        }),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
    let collection = body["collection"]["id"].as_str().unwrap().to_string();
    assert_eq!(body["agent"]["collectionId"], collection.as_str());
    assert_eq!(body["collection"]["name"], "Store FAQ");
    assert_eq!(body["ingestResults"].as_array().unwrap().len(), 2);
    let (status, agent) = call(server.get(
        &format!("/v1/agents/{}", body["agent"]["id"].as_str().unwrap()),
        &key,
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(agent["name"], "Store helper");
    let (_, results) = search(
        &server,
        &key,
        &collection,
        json!({"query": "how long is shipping", "threshold": 0.0}),
    )
    .await;
    assert!(top_content(&results).contains("shipping"), "{results}");

    // One bad item: nothing at all is created.
    let agents_before = all_ids_at(&server, &key, "/v1/agents", 100).await.len();
    let collections_before = all_ids_at(&server, &key, "/v1/collections", 100)
        .await
        .len();
    for (items, param) in [
        (
            json!([{"content": FAQ}, {"content": "x", "contentType": "pdf"}]),
            "initialContent[1].contentType",
        ),
        (
            json!([{"content": "word ".repeat(220_000)}]),
            "initialContent[0].content",
        ),
    ] {
        let (status, error) = call(server.post(
            "/v1/agents/provision",
            &key,
            json!({"name": "Broken", "initialContent": items}),
        ))
        .await;
        assert_invalid(status, &error, param, param);
    }
    let (status, error) =
        call(server.post("/v1/agents/provision", &key, json!({"initialContent": []}))).await;
    assert_invalid(status, &error, "name", "no name");
    assert_eq!(
        all_ids_at(&server, &key, "/v1/agents", 100).await.len(),
        agents_before
    );
    assert_eq!(
        all_ids_at(&server, &key, "/v1/collections", 100)
            .await
            .len(),
        collections_before
    );
}

/// Log text without its terminal colour codes.
fn plain(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut in_escape = false;
    for c in log.chars() {
        match (in_escape, c) {
            (false, '\u{1b}') => in_escape = true,
            (false, c) => out.push(c),
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    out
}

/// Waits until the server log holds `count` lines saying a search graph was taken into
/// service (built or extended in the background).
async fn graph_updates(server: &Server, count: usize) {
    for _ in 0..300 {
        let done = plain(&server.log())
            .lines()
            .filter(|l| l.contains("search graph updated") && l.contains("installed=true"))
            .count();
        if done >= count {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no search graph update; log: {}", server.log());
}

#[tokio::test]
async fn a_collection_searched_through_its_graph_stays_current_through_ingest_and_delete() {
    // A graph from 8 chunks, so a small collection goes the way a large one does. Searches
    // keep cosine similarity 0.4 and up (the default 0.7 on the old (cos + 1) / 2 scale).
    let server = Server::start_with(
        Storage::fresh().await,
        &[
            ("SWITCHBOARD__REGISTRY__SEARCH_GRAPH_MIN_CHUNKS", "8"),
            // The graph jobs report at info level.
            ("SWITCHBOARD_LOG", "info"),
        ],
    )
    .await;
    let key = server.key().to_string();
    let collection = new_collection(&server, &key).await;
    let small = |content: &str| json!({"content": content, "chunkSize": 120, "chunkOverlap": 0});
    let (status, faq) = ingest(&server, &key, &collection, small(FAQ)).await;
    assert_eq!(status, 201, "{faq}");
    let (status, other) = ingest(&server, &key, &collection, small(DISTRACTORS)).await;
    assert_eq!(status, 201, "{other}");
    let chunks = faq["chunksCreated"].as_i64().unwrap() + other["chunksCreated"].as_i64().unwrap();
    assert!(chunks >= 8, "{chunks} chunks");
    // The first search loads the index; its graph is then built in the background.
    let (_, found) = search(
        &server,
        &key,
        &collection,
        json!({"query": "when do you open on saturday", "threshold": 0.4}),
    )
    .await;
    assert!(top_content(&found).contains("Saturdays"), "{found}");
    graph_updates(&server, 1).await;
    for (question, answer) in [
        ("can I get my money back", "refund"),
        ("how long does delivery take", "shipping"),
        ("which ocean is the biggest", "Pacific"),
    ] {
        let (_, found) = search(
            &server,
            &key,
            &collection,
            json!({"query": question, "threshold": 0.4}),
        )
        .await;
        assert!(top_content(&found).contains(answer), "{question}: {found}");
    }

    // A new document is found at once, and again once the graph holds it.
    let news = "Gift cards can be bought in any store and online, in amounts from ten to five \
                hundred dollars, and they never expire.";
    let (_, added) = ingest(&server, &key, &collection, small(news)).await;
    let added_id = added["documentId"].as_str().unwrap().to_string();
    let gift = json!({"query": "do gift cards expire", "limit": 3, "threshold": 0.4});
    let (_, found) = search(&server, &key, &collection, gift.clone()).await;
    assert_eq!(
        found["results"][0]["documentId"],
        added_id.as_str(),
        "{found}"
    );
    graph_updates(&server, 2).await;
    let (_, found) = search(&server, &key, &collection, gift.clone()).await;
    assert_eq!(
        found["results"][0]["documentId"],
        added_id.as_str(),
        "{found}"
    );

    // A deleted document leaves the results at once, though the graph still holds it; the
    // others still fill the limit.
    let response = server
        .delete(
            &format!("/v1/collections/{collection}/documents/{added_id}"),
            &key,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let all = json!({"query": "do gift cards expire", "limit": 5, "threshold": 0});
    let (_, found) = search(&server, &key, &collection, all).await;
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{found}");
    assert!(
        results.iter().all(|h| h["documentId"] != added_id.as_str()),
        "{found}"
    );
}
