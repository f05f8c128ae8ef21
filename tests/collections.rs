//! Collections over REST: create with limits, read, list with cursors, delete (which detaches
//! agents), isolation between developers, and persistence across restarts.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

async fn create(server: &Server, key: &str, body: Value) -> (u16, Value) {
    call(server.post("/v1/collections", key, body)).await
}

async fn create_ok(server: &Server, key: &str, body: Value) -> Value {
    let (status, collection) = create(server, key, body).await;
    assert_eq!(status, 201, "{}", short(&collection));
    collection
}

/// Creates a collection named `name`; answers its id.
async fn named(server: &Server, key: &str, name: &str) -> String {
    let collection = create_ok(server, key, json!({"name": name})).await;
    collection["id"].as_str().unwrap().to_string()
}

async fn get(server: &Server, key: &str, id: &str) -> (u16, Value) {
    call(server.get(&format!("/v1/collections/{id}"), key)).await
}

async fn delete(server: &Server, key: &str, id: &str) -> (u16, Value) {
    call(server.delete(&format!("/v1/collections/{id}"), key)).await
}

async fn list(server: &Server, key: &str, query: &str) -> (u16, Value) {
    call(server.get(&format!("/v1/collections{query}"), key)).await
}

async fn agent(server: &Server, key: &str, id: &str, collection_id: Option<&str>) -> Value {
    let body = json!({"id": id, "name": id, "collectionId": collection_id});
    let (status, agent) = call(server.post("/v1/agents", key, body)).await;
    assert_eq!(status, 201, "{agent}");
    agent
}

async fn get_agent(server: &Server, key: &str, id: &str) -> Value {
    let (status, agent) = call(server.get(&format!("/v1/agents/{id}"), key)).await;
    assert_eq!(status, 200, "{agent}");
    agent
}

/// Follows the cursors from the first page to the last; answers every id in order.
async fn all_ids(server: &Server, key: &str, limit: usize) -> Vec<String> {
    all_ids_at(server, key, "/v1/collections", limit).await
}

async fn rejects(server: &Server, key: &str, body: Value, param: &str) {
    let (status, error) = create(server, key, body.clone()).await;
    assert_invalid(status, &error, param, &short(&body));
}

#[tokio::test]
async fn a_new_collection_is_stored_as_sent_with_a_millisecond_timestamp() {
    let server = Server::start().await;
    let key = server.key();
    let metadata = json!({"source": "faq", "nested": {"n": 1, "list": [true, null, "x"]}});
    let body = json!({"name": "FAQ", "description": "Common questions", "metadata": metadata});
    let collection = create_ok(&server, key, body).await;
    let mut fields: Vec<&str> = collection
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["createdAt", "description", "id", "metadata", "name"]
    );
    assert!(!collection["id"].as_str().unwrap().is_empty());
    assert_eq!(collection["name"], "FAQ");
    assert_eq!(collection["description"], "Common questions");
    assert_eq!(collection["metadata"], metadata);
    assert!(is_iso_millis(&collection["createdAt"]), "{collection}");
    let id = collection["id"].as_str().unwrap();
    assert_eq!(get(&server, key, id).await, (200, collection.clone()));

    let minimal = create_ok(&server, key, json!({"name": "bare"})).await;
    assert_eq!(minimal["description"], Value::Null);
    assert_eq!(minimal["metadata"], json!({}));
    assert_ne!(minimal["id"], collection["id"], "generated ids are unique");
    let nulls = create_ok(&server, key, json!({"name": "n", "description": null})).await;
    assert_eq!(nulls["description"], Value::Null);
}

#[tokio::test]
async fn collection_name_must_be_1_to_100_non_blank_chars() {
    let server = Server::start().await;
    let key = server.key();
    for name in [
        "n".repeat(100),
        "ß".repeat(100),
        "📚".repeat(100),
        "x".into(),
    ] {
        let collection = create_ok(&server, key, json!({"name": name})).await;
        assert_eq!(collection["name"], name.as_str());
    }
    for body in [
        json!({"name": "n".repeat(101)}),
        json!({"name": "ß".repeat(101)}),
        json!({"name": ""}),
        json!({"name": " \t "}),
        json!({"name": null}),
        json!({}),
        json!({"description": "no name"}),
    ] {
        rejects(&server, key, body, "name").await;
    }
    assert_eq!(
        all_ids(&server, key, 100).await.len(),
        4,
        "rejections created nothing"
    );
}

#[tokio::test]
async fn collection_description_is_at_most_500_chars() {
    let server = Server::start().await;
    let key = server.key();
    for description in ["d".repeat(500), "é".repeat(500), String::new()] {
        let body = json!({"name": "n", "description": description});
        assert_eq!(
            create_ok(&server, key, body).await["description"],
            description.as_str()
        );
    }
    for description in ["d".repeat(501), "é".repeat(501)] {
        let body = json!({"name": "n", "description": description});
        rejects(&server, key, body, "description").await;
    }
}

#[tokio::test]
async fn collection_metadata_is_an_object_of_at_most_64_kib() {
    let server = Server::start().await;
    let key = server.key();
    // `{"k":"…"}` is 8 bytes plus the value.
    let at_limit = json!({"k": "m".repeat(65_536 - 8)});
    assert_eq!(at_limit.to_string().len(), 65_536);
    let body = json!({"name": "n", "metadata": at_limit});
    assert_eq!(create_ok(&server, key, body).await["metadata"], at_limit);
    let over = json!({"k": "m".repeat(65_536 - 7)});
    rejects(
        &server,
        key,
        json!({"name": "n", "metadata": over}),
        "metadata",
    )
    .await;
    let empty = create_ok(&server, key, json!({"name": "n", "metadata": {}})).await;
    assert_eq!(empty["metadata"], json!({}));
}

#[tokio::test]
async fn collection_field_of_the_wrong_type_is_rejected_naming_the_field() {
    let server = Server::start().await;
    let key = server.key();
    for (field, value) in [
        ("name", json!(42)),
        ("description", json!({"a": 1})),
        ("metadata", json!([1, 2])),
        ("metadata", json!("text")),
    ] {
        let mut body = json!({"name": "n"});
        body[field] = value;
        rejects(&server, key, body, field).await;
    }
    assert_eq!(list(&server, key, "").await.1["data"], json!([]));
}

#[tokio::test]
async fn unknown_and_output_only_collection_fields_are_rejected() {
    let server = Server::start().await;
    let key = server.key();
    for field in ["nmae", "id", "createdAt", "documents"] {
        let (status, body) = create(&server, key, json!({"name": "n", field: "x"})).await;
        assert_eq!(
            (status, error_code(&body)),
            (400, "validation_error"),
            "{field}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{field}: {message}");
    }
    assert_eq!(list(&server, key, "").await.1["data"], json!([]));
}

#[tokio::test]
async fn collection_request_bodies_must_be_json_of_at_most_2_mib() {
    let server = Server::start().await;
    let key = server.key();
    let raw = |body: String, content_type: Option<&str>| {
        let mut request = server
            .request(reqwest::Method::POST, "/v1/collections", key)
            .body(body);
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type);
        }
        request
    };
    let json_type = Some("application/json");
    let (status, body) = call(raw("{\"name\": ".into(), json_type)).await;
    assert_eq!(
        (status, error_code(&body)),
        (400, "validation_error"),
        "{body}"
    );
    let valid = r#"{"name": "x"}"#.to_string();
    let (status, body) = call(raw(valid.clone(), Some("text/plain"))).await;
    assert_eq!((status, error_code(&body)), (415, "unsupported_media_type"));
    let (status, body) = call(raw(valid.clone(), None)).await;
    assert_eq!((status, error_code(&body)), (415, "unsupported_media_type"));
    let (status, body) = call(raw(valid, Some("application/json; charset=utf-8"))).await;
    assert_eq!(status, 201, "{body}");

    // A body of exactly 2 MiB is read (and fails validation); one byte more is refused.
    let limit = 2 * 1024 * 1024;
    let sized = |len: usize| {
        let frame = r#"{"name": "x", "description": ""}"#.len();
        format!(
            r#"{{"name": "x", "description": "{}"}}"#,
            "d".repeat(len - frame)
        )
    };
    assert_eq!(sized(limit).len(), limit);
    let (status, body) = call(raw(sized(limit), json_type)).await;
    assert_invalid(status, &body, "description", "2 MiB body");
    let (status, body) = call(raw(sized(limit + 1), json_type)).await;
    assert_eq!((status, error_code(&body)), (413, "payload_too_large"));
    assert_eq!(all_ids(&server, key, 20).await.len(), 1);
}

#[tokio::test]
async fn a_collection_body_that_is_a_json_array_is_rejected() {
    let server = Server::start().await;
    let key = server.key();
    // The fields are read from an object only, never positionally from an array.
    for body in [json!([]), json!(["From an array", "d", {}])] {
        let (status, error) = create(&server, key, body.clone()).await;
        assert_eq!(status, 400, "{body} → {error}");
        assert_eq!(error_code(&error), "validation_error");
    }
    assert_eq!(list(&server, key, "").await.1["data"], json!([]));
}

#[tokio::test]
async fn collection_lists_page_in_creation_order_with_cursors() {
    let server = Server::start().await;
    let key = server.key();
    let (status, empty) = list(&server, key, "").await;
    assert_eq!(status, 200);
    assert_eq!(
        empty,
        json!({"data": [], "nextCursor": null, "hasMore": false})
    );

    let mut created = Vec::new();
    for n in 0..25 {
        created.push(create_ok(&server, key, json!({"name": format!("c{n}")})).await);
    }
    let ids: Vec<String> = created
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let (status, first) = list(&server, key, "").await;
    assert_eq!(status, 200);
    assert_eq!(
        first["data"],
        json!(created[..20]),
        "full objects, creation order"
    );
    assert_eq!(
        (&first["hasMore"], &first["nextCursor"]),
        (&json!(true), &json!(ids[19]))
    );

    let (status, second) = list(&server, key, &format!("?cursor={}", ids[19])).await;
    assert_eq!(status, 200);
    assert_eq!(second["data"], json!(created[20..]));
    assert_eq!(
        (&second["hasMore"], &second["nextCursor"]),
        (&json!(false), &Value::Null)
    );

    assert_eq!(all_ids(&server, key, 5).await, ids, "five full pages");
    assert_eq!(all_ids(&server, key, 1).await, ids);
    assert_eq!(all_ids(&server, key, 6).await, ids);
    let (_, whole) = list(&server, key, "?limit=25").await;
    assert_eq!(
        (page_ids(&whole), &whole["hasMore"]),
        (ids.clone(), &json!(false))
    );
    let (_, whole) = list(&server, key, "?limit=100").await;
    assert_eq!(
        (page_ids(&whole), &whole["nextCursor"]),
        (ids.clone(), &Value::Null)
    );
    let (_, tail) = list(&server, key, &format!("?cursor={}", ids[24])).await;
    assert_eq!(
        tail,
        json!({"data": [], "nextCursor": null, "hasMore": false})
    );
}

#[tokio::test]
async fn a_collection_page_holds_at_most_100() {
    let server = Server::start().await;
    let key = server.key();
    let mut ids = Vec::new();
    for n in 0..101 {
        ids.push(named(&server, key, &format!("c{n}")).await);
    }
    let (status, first) = list(&server, key, "?limit=100").await;
    assert_eq!(status, 200);
    assert_eq!(page_ids(&first), &ids[..100]);
    assert_eq!(
        (&first["hasMore"], &first["nextCursor"]),
        (&json!(true), &json!(ids[99]))
    );
    let (_, last) = list(&server, key, &format!("?limit=100&cursor={}", ids[99])).await;
    assert_eq!(page_ids(&last), &ids[100..]);
    assert_eq!(last["hasMore"], false);
    assert_eq!(all_ids(&server, key, 20).await, ids, "six pages by default");
}

#[tokio::test]
async fn collection_list_rejects_limits_outside_1_to_100_and_unknown_cursors() {
    let server = Server::start().await;
    let key = server.key();
    let key_b = server.storage.create_key("dev_b");
    let mine = named(&server, key, "mine").await;
    let theirs = named(&server, &key_b, "theirs").await;
    for limit in ["0", "101", "-1", "1000"] {
        let (status, body) = list(&server, key, &format!("?limit={limit}")).await;
        assert_invalid(status, &body, "limit", limit);
    }
    for limit in ["1", "100"] {
        let (status, body) = list(&server, key, &format!("?limit={limit}")).await;
        assert_eq!(
            (status, page_ids(&body)),
            (200, vec![mine.clone()]),
            "{limit}"
        );
    }
    for cursor in ["col_nope", theirs.as_str()] {
        let (status, body) = list(&server, key, &format!("?cursor={cursor}")).await;
        assert_invalid(status, &body, "cursor", cursor);
    }
}

#[tokio::test]
async fn collection_list_limit_that_is_not_a_number_is_rejected_naming_limit() {
    let server = Server::start().await;
    let key = server.key();
    for limit in ["abc", "2.5", "ten"] {
        let (status, body) = list(&server, key, &format!("?limit={limit}")).await;
        assert_invalid(status, &body, "limit", limit);
    }
}

#[tokio::test]
async fn deleting_a_collection_removes_it() {
    let server = Server::start().await;
    let key = server.key();
    let keep_1 = named(&server, key, "keep 1").await;
    let doomed = named(&server, key, "doomed").await;
    let keep_2 = named(&server, key, "keep 2").await;
    assert_eq!(get(&server, key, &doomed).await.0, 200);
    let response = server
        .delete(&format!("/v1/collections/{doomed}"), key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert!(response.text().await.unwrap().is_empty(), "204 has no body");

    let (status, body) = get(&server, key, &doomed).await;
    assert_not_found(status, &body, "GET after delete");
    let (status, body) = delete(&server, key, &doomed).await;
    assert_not_found(status, &body, "second DELETE");
    assert_eq!(
        all_ids(&server, key, 20).await,
        vec![keep_1.clone(), keep_2.clone()]
    );
    assert_eq!(get(&server, key, &keep_1).await.0, 200);
    let (status, body) = get(&server, key, "col_never_existed").await;
    assert_not_found(status, &body, "GET of an unknown id");
    let (status, body) = delete(&server, key, "col_never_existed").await;
    assert_not_found(status, &body, "DELETE of an unknown id");
}

#[tokio::test]
async fn deleting_a_collection_detaches_the_agents_that_used_it() {
    let server = Server::start().await;
    let key = server.key();
    let doomed = named(&server, key, "doomed").await;
    let other = named(&server, key, "other").await;
    let cached = agent(&server, key, "cached", Some(doomed.as_str())).await;
    agent(&server, key, "uncached", Some(doomed.as_str())).await;
    let bystander = agent(&server, key, "bystander", Some(other.as_str())).await;
    let loner = agent(&server, key, "loner", None).await;
    // Read one of them first, so a cached copy must be dropped too.
    assert_eq!(get_agent(&server, key, "cached").await, cached);
    tokio::time::sleep(Duration::from_millis(20)).await;

    assert_eq!(delete(&server, key, &doomed).await.0, 204);
    for id in ["cached", "uncached"] {
        let detached = get_agent(&server, key, id).await;
        assert_eq!(detached["collectionId"], Value::Null, "{id}");
        assert_eq!(detached["status"], "active", "{id} stays live");
        assert_eq!(detached["name"], id);
        assert!(
            detached["updatedAt"].as_str() > cached["updatedAt"].as_str(),
            "{id}: detaching is a change"
        );
    }
    assert_eq!(get_agent(&server, key, "bystander").await, bystander);
    assert_eq!(get_agent(&server, key, "loner").await, loner);
    let (_, page) = call(server.get("/v1/agents", key)).await;
    let attached: Vec<&Value> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["collectionId"])
        .collect();
    assert_eq!(
        attached,
        [&Value::Null, &Value::Null, &json!(other), &Value::Null]
    );

    // The deleted collection can no longer be attached.
    let body = json!({"collectionId": doomed});
    let (status, error) = call(server.put("/v1/agents/loner", key, body)).await;
    assert_invalid(
        status,
        &error,
        "collectionId",
        "PUT with a deleted collection",
    );
    let body = json!({"name": "late", "collectionId": doomed});
    let (status, error) = call(server.post("/v1/agents", key, body)).await;
    assert_invalid(
        status,
        &error,
        "collectionId",
        "POST with a deleted collection",
    );
}

#[tokio::test]
async fn another_developers_collection_is_not_found_for_every_verb() {
    let server = Server::start().await;
    let key_a = server.key().to_string();
    let key_b = server.storage.create_key("dev_b");
    let private = create_ok(&server, &key_a, json!({"name": "private"})).await;
    let id = private["id"].as_str().unwrap();
    let agent_a = agent(&server, &key_a, "uses-it", Some(id)).await;
    let own_b = create_ok(&server, &key_b, json!({"name": "b's"})).await;

    let (status, body) = get(&server, &key_b, id).await;
    assert_not_found(status, &body, "GET");
    let (status, body) = delete(&server, &key_b, id).await;
    assert_not_found(status, &body, "DELETE");
    let body = json!({"name": "x", "collectionId": id});
    let (status, error) = call(server.post("/v1/agents", &key_b, body)).await;
    assert_invalid(
        status,
        &error,
        "collectionId",
        "attaching another's collection",
    );

    assert_eq!(
        get(&server, &key_a, id).await,
        (200, private.clone()),
        "untouched"
    );
    assert_eq!(
        get_agent(&server, &key_a, "uses-it").await,
        agent_a,
        "still attached"
    );
    assert_eq!(list(&server, &key_a, "").await.1["data"], json!([private]));
    assert_eq!(
        list(&server, &key_b, "").await.1["data"],
        json!([own_b.clone()])
    );
    // And the other way round.
    let own_b_id = own_b["id"].as_str().unwrap();
    assert_eq!(get(&server, &key_a, own_b_id).await.0, 404);
    assert_eq!(delete(&server, &key_a, own_b_id).await.0, 404);
    assert_eq!(get(&server, &key_b, own_b_id).await, (200, own_b));
}

#[tokio::test]
async fn collections_and_detached_agents_survive_a_restart() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let key_b = server.storage.create_key("dev_b");
    let kept = create_ok(
        &server,
        &key,
        json!({"name": "kept", "description": "d", "metadata": {"a": [1]}}),
    )
    .await;
    let kept_id = kept["id"].as_str().unwrap();
    let doomed = named(&server, &key, "doomed").await;
    let b = create_ok(&server, &key_b, json!({"name": "b's"})).await;
    agent(&server, &key, "attached", Some(kept_id)).await;
    agent(&server, &key, "detached", Some(doomed.as_str())).await;
    assert_eq!(delete(&server, &key, &doomed).await.0, 204);
    let (_, before) = list(&server, &key, "").await;
    let attached = get_agent(&server, &key, "attached").await;
    let detached = get_agent(&server, &key, "detached").await;

    let server = server.restart().await;
    assert_eq!(get(&server, &key, kept_id).await, (200, kept.clone()));
    assert_eq!(list(&server, &key, "").await.1, before);
    assert_eq!(page_ids(&before), vec![kept_id]);
    assert_eq!(get(&server, &key, &doomed).await.0, 404);
    assert_eq!(
        get(&server, &key_b, b["id"].as_str().unwrap()).await,
        (200, b.clone())
    );
    assert_eq!(get_agent(&server, &key, "attached").await, attached);
    let after = get_agent(&server, &key, "detached").await;
    assert_eq!((&after, &after["collectionId"]), (&detached, &Value::Null));
}

#[tokio::test]
async fn collection_text_with_a_nul_character_is_stored_exactly_or_rejected_cleanly() {
    let server = Server::start().await;
    let key = server.key();
    for field in ["name", "description"] {
        let text = "before\u{0}after";
        let (status, body) = create(&server, key, json!({"name": "n", field: text})).await;
        match status {
            201 => {
                assert_eq!(body[field], text, "{field}");
                let (_, read) = get(&server, key, body["id"].as_str().unwrap()).await;
                assert_eq!(read[field], text, "{field}");
            }
            _ => assert_invalid(status, &body, field, field),
        }
    }
}

#[tokio::test]
async fn a_collection_id_with_a_nul_character_is_not_found_or_rejected_not_a_server_error() {
    let server = Server::start().await;
    let key = server.key();
    let (status, body) = get(&server, key, "col%00x").await;
    assert_not_found(status, &body, "GET");
    let (status, body) = delete(&server, key, "col%00x").await;
    assert_not_found(status, &body, "DELETE");
    let (status, body) = list(&server, key, "?cursor=col%00x").await;
    assert_invalid(status, &body, "cursor", "cursor");
}
