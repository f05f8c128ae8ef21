//! Agents over REST: create with defaults and limits, read, partial update, archive, lists
//! with cursors, isolation between developers, and persistence across restarts.

mod common;

use std::time::Duration;

use common::*;
use futures_util::future::join_all;
use serde_json::{json, Value};
use switchboard::vendors::catalog::{LLM_PROVIDERS, STT_PROVIDERS, TTS_PROVIDERS};

const FIELDS: [&str; 23] = [
    "id",
    "name",
    "description",
    "systemPrompt",
    "firstMessage",
    "voiceId",
    "ttsProvider",
    "ttsModel",
    "sttProvider",
    "llmProvider",
    "llmModel",
    "collectionId",
    "styleProfile",
    "language",
    "temperature",
    "maxTokens",
    "metadata",
    "transfer",
    "status",
    "createdAt",
    "updatedAt",
    "warnings",
    "analysis",
];

/// The fields `null` clears on update.
const NULLABLE: [&str; 9] = [
    "analysis",
    "description",
    "systemPrompt",
    "firstMessage",
    "ttsModel",
    "llmModel",
    "collectionId",
    "styleProfile",
    "maxTokens",
];

/// The fields that may be set but never cleared.
const NOT_NULLABLE: [&str; 9] = [
    "id",
    "name",
    "voiceId",
    "ttsProvider",
    "sttProvider",
    "llmProvider",
    "language",
    "temperature",
    "metadata",
];

async fn create(server: &Server, key: &str, body: Value) -> (u16, Value) {
    call(server.post("/v1/agents", key, body)).await
}

async fn create_ok(server: &Server, key: &str, body: Value) -> Value {
    let (status, agent) = create(server, key, body).await;
    assert_eq!(status, 201, "{}", short(&agent));
    agent
}

async fn get(server: &Server, key: &str, id: &str) -> (u16, Value) {
    call(server.get(&format!("/v1/agents/{id}"), key)).await
}

async fn put(server: &Server, key: &str, id: &str, body: Value) -> (u16, Value) {
    call(server.put(&format!("/v1/agents/{id}"), key, body)).await
}

async fn delete(server: &Server, key: &str, id: &str) -> (u16, Value) {
    call(server.delete(&format!("/v1/agents/{id}"), key)).await
}

async fn list(server: &Server, key: &str, query: &str) -> (u16, Value) {
    call(server.get(&format!("/v1/agents{query}"), key)).await
}

async fn collection(server: &Server, key: &str, name: &str) -> String {
    let (status, body) = call(server.post("/v1/collections", key, json!({"name": name}))).await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_string()
}

/// Follows the cursors from the first page to the last; answers every id in order.
async fn all_ids(server: &Server, key: &str, limit: usize) -> Vec<String> {
    all_ids_at(server, key, "/v1/agents", limit).await
}

async fn rejects(server: &Server, key: &str, body: Value, param: &str) {
    let (status, error) = create(server, key, body.clone()).await;
    assert_invalid(status, &error, param, &short(&body));
}

fn full_agent(id: &str) -> Value {
    json!({
        "id": id,
        "name": "Support line",
        "description": "Answers billing questions",
        "systemPrompt": "You are a helpful agent.",
        "firstMessage": "Hello, how can I help?",
        "voiceId": "warm-voice",
        "ttsProvider": "elevenlabs",
        "ttsModel": "eleven_turbo_v2",
        "sttProvider": "deepgram",
        "llmProvider": "openai",
        "llmModel": "gpt-4o-mini",
        "styleProfile": {"pace": "calm", "energy": 0.4, "tags": ["friendly"]},
        "language": "pt-BR",
        "temperature": 1.25,
        "maxTokens": 512,
        "metadata": {"team": "billing", "nested": {"tier": 2, "flags": [true, null]}},
        "transfer": [
            {"name": "Refunds", "number": "+14155550100", "description": "Refund requests",
             "mode": "warm"}
        ],
        "analysis": {"summary": true, "successCriteria": "The caller's question was answered.",
                     "dataSchema": {"type": "object", "properties": {"topic": {"type": "string"}}}}
    })
}

/// Asserts every field except `except` is the same in both agents.
#[track_caller]
fn assert_same_except(before: &Value, after: &Value, except: &[&str]) {
    for field in FIELDS.iter().filter(|f| !except.contains(f)) {
        assert_eq!(before[field], after[field], "{field} changed");
    }
}

#[tokio::test]
async fn a_new_agent_gets_the_documented_defaults_and_timestamps() {
    let server = Server::start().await;
    let key = server.key();
    let agent = create_ok(&server, key, json!({"name": "Minimal"})).await;
    let object = agent.as_object().unwrap();
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = FIELDS.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected, "{agent}");
    assert!(
        agent["id"].as_str().unwrap().starts_with("agent_"),
        "{agent}"
    );
    assert_eq!(agent["name"], "Minimal");
    for field in ["voiceId", "ttsProvider", "sttProvider", "llmProvider"] {
        assert_eq!(agent[field], "default", "{field}");
    }
    assert_eq!(agent["language"], "en");
    assert_eq!(agent["temperature"], 0.7);
    assert_eq!(agent["metadata"], json!({}));
    assert_eq!(agent["transfer"], json!([]));
    assert_eq!(agent["warnings"], json!([]));
    assert_eq!(agent["status"], "active");
    for field in NULLABLE {
        assert_eq!(agent[field], Value::Null, "{field}");
    }
    assert!(is_iso_millis(&agent["createdAt"]), "{agent}");
    assert_eq!(agent["createdAt"], agent["updatedAt"]);

    let (status, read) = get(&server, key, agent["id"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(read, agent);

    let other = create_ok(&server, key, json!({"name": "Minimal"})).await;
    assert_ne!(other["id"], agent["id"], "generated ids are unique");
}

#[tokio::test]
async fn every_agent_field_is_stored_as_sent() {
    let server = Server::start().await;
    let key = server.key();
    let collection_id = collection(&server, key, "kb").await;
    let mut body = full_agent("support-1");
    body["collectionId"] = json!(collection_id);
    let agent = create_ok(&server, key, body.clone()).await;
    for (field, value) in body.as_object().unwrap() {
        assert_eq!(&agent[field], value, "{field}");
    }
    assert_eq!(agent["status"], "active");
    let (status, read) = get(&server, key, "support-1").await;
    assert_eq!(status, 200);
    assert_eq!(read, agent);
}

#[tokio::test]
async fn agent_custom_id_is_1_to_60_letters_digits_underscores_or_dashes() {
    let server = Server::start().await;
    let key = server.key();
    let longest = format!("A-{}", "z_9".repeat(19) + "x");
    assert_eq!(longest.len(), 60);
    for id in [longest.as_str(), "a", "Agent_7-b"] {
        let agent = create_ok(&server, key, json!({"id": id, "name": "n"})).await;
        assert_eq!(agent["id"], id);
        assert_eq!(get(&server, key, id).await.0, 200, "{id}");
    }
    for id in [
        format!("{longest}x"),
        String::new(),
        "has space".into(),
        "a/b".into(),
        "a.b".into(),
        "café".into(),
        "a?b".into(),
    ] {
        rejects(&server, key, json!({"id": id, "name": "n"}), "id").await;
    }
    rejects(&server, key, json!({"id": null, "name": "n"}), "id").await;
    let (_, page) = list(&server, key, "").await;
    assert_eq!(
        page["data"].as_array().unwrap().len(),
        3,
        "rejected ids created nothing"
    );
}

#[tokio::test]
async fn a_duplicate_agent_id_is_a_conflict_and_keeps_the_original() {
    let server = Server::start().await;
    let key = server.key();
    let original = create_ok(&server, key, json!({"id": "dup", "name": "First"})).await;
    let (status, body) = create(&server, key, json!({"id": "dup", "name": "Second"})).await;
    assert_eq!((status, error_code(&body)), (409, "conflict"), "{body}");
    assert_eq!(get(&server, key, "dup").await.1, original);
    assert_eq!(all_ids(&server, key, 20).await, vec!["dup"]);

    // Racing creates of one id: exactly one wins, the others are conflicts, never errors.
    let racers =
        (0..8).map(|n| create(&server, key, json!({"id": "race", "name": format!("r{n}")})));
    let mut statuses: Vec<u16> = join_all(racers).await.into_iter().map(|(s, _)| s).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
    assert_eq!(all_ids(&server, key, 20).await, vec!["dup", "race"]);
}

#[tokio::test]
async fn agent_name_must_be_1_to_100_non_blank_chars() {
    let server = Server::start().await;
    let key = server.key();
    for name in [
        "n".repeat(100),
        "é".repeat(100),
        "😀".repeat(100),
        "x".into(),
    ] {
        let agent = create_ok(&server, key, json!({"name": name})).await;
        assert_eq!(agent["name"], name.as_str());
    }
    for body in [
        json!({"name": "n".repeat(101)}),
        json!({"name": "é".repeat(101)}),
        json!({"name": ""}),
        json!({"name": "   "}),
        json!({"name": null}),
        json!({}),
        json!({"description": "no name"}),
    ] {
        rejects(&server, key, body, "name").await;
    }
}

#[tokio::test]
async fn agent_text_fields_accept_their_limit_and_reject_one_more_char() {
    let server = Server::start().await;
    let key = server.key();
    for (field, max) in [
        ("description", 1000),
        ("systemPrompt", 10_000),
        ("firstMessage", 1000),
    ] {
        for text in ["d".repeat(max), "ü".repeat(max), String::new()] {
            let agent = create_ok(&server, key, json!({"name": "n", field: text})).await;
            assert_eq!(agent[field], text.as_str(), "{field}");
        }
        let agent = create_ok(&server, key, json!({"name": "n", field: null})).await;
        assert_eq!(agent[field], Value::Null, "{field}");
        rejects(
            &server,
            key,
            json!({"name": "n", field: "d".repeat(max + 1)}),
            field,
        )
        .await;
        rejects(
            &server,
            key,
            json!({"name": "n", field: "ü".repeat(max + 1)}),
            field,
        )
        .await;
    }
}

#[tokio::test]
async fn agent_temperature_is_0_to_2_and_max_tokens_1_to_16384() {
    let server = Server::start().await;
    let key = server.key();
    for temperature in [0.0, 2.0, 0.7, 1.5] {
        let agent = create_ok(
            &server,
            key,
            json!({"name": "n", "temperature": temperature}),
        )
        .await;
        assert_eq!(agent["temperature"], temperature);
    }
    for temperature in [json!(-0.01), json!(2.01), json!(3), json!(-1), json!(null)] {
        rejects(
            &server,
            key,
            json!({"name": "n", "temperature": temperature}),
            "temperature",
        )
        .await;
    }
    for max_tokens in [1, 16_384, 256] {
        let agent = create_ok(&server, key, json!({"name": "n", "maxTokens": max_tokens})).await;
        assert_eq!(agent["maxTokens"], max_tokens);
    }
    let agent = create_ok(&server, key, json!({"name": "n", "maxTokens": null})).await;
    assert_eq!(agent["maxTokens"], Value::Null);
    for max_tokens in [0, 16_385, -1, 10_000_000_000_i64] {
        rejects(
            &server,
            key,
            json!({"name": "n", "maxTokens": max_tokens}),
            "maxTokens",
        )
        .await;
    }
}

#[tokio::test]
async fn agent_providers_must_be_known_vendor_ids() {
    let server = Server::start().await;
    let key = server.key();
    // The spec's twelve speech vendors besides `default`, and Inworld beyond them.
    assert_eq!(
        TTS_PROVIDERS.len(),
        14,
        "default plus twelve speech vendors and inworld"
    );
    assert!(TTS_PROVIDERS.contains(&"inworld"));
    let agent = create_ok(&server, key, json!({"id": "p", "name": "n"})).await;
    for (field, known) in [
        ("ttsProvider", TTS_PROVIDERS),
        ("sttProvider", STT_PROVIDERS),
        ("llmProvider", LLM_PROVIDERS),
    ] {
        assert!(known.contains(&"default"), "{field}");
        for provider in known {
            let body = json!({"name": "n", field: provider});
            assert_eq!(create_ok(&server, key, body).await[field], *provider);
            let (status, updated) = put(&server, key, "p", json!({field: provider})).await;
            assert_eq!(
                (status, &updated[field]),
                (200, &json!(provider)),
                "{updated}"
            );
        }
        for bad in ["nope", "OpenAI", "", " default"] {
            rejects(&server, key, json!({"name": "n", field: bad}), field).await;
        }
        rejects(&server, key, json!({"name": "n", field: null}), field).await;
    }
    assert_eq!(
        get(&server, key, "p").await.1["createdAt"],
        agent["createdAt"]
    );
}

#[tokio::test]
async fn agent_voice_language_style_profile_and_metadata_rules() {
    let server = Server::start().await;
    let key = server.key();
    rejects(&server, key, json!({"name": "n", "voiceId": ""}), "voiceId").await;
    rejects(
        &server,
        key,
        json!({"name": "n", "voiceId": null}),
        "voiceId",
    )
    .await;
    for language in ["en", "pt-BR", "zh-Hant-TW", "es-419"] {
        let agent = create_ok(&server, key, json!({"name": "n", "language": language})).await;
        assert_eq!(agent["language"], language);
    }
    // `auto` (the caller's language, detected turn by turn) is stored as written in lowercase.
    for language in ["auto", "Auto", "AUTO"] {
        let agent = create_ok(&server, key, json!({"name": "n", "language": language})).await;
        assert_eq!(agent["language"], "auto");
    }
    for language in [json!(""), json!("e"), json!("en US"), json!(null)] {
        rejects(
            &server,
            key,
            json!({"name": "n", "language": language}),
            "language",
        )
        .await;
    }

    let style = json!({"pace": "slow", "pitch": {"base": 1.1}, "words": ["a", "b"]});
    let agent = create_ok(&server, key, json!({"name": "n", "styleProfile": style})).await;
    assert_eq!(agent["styleProfile"], style);
    let agent = create_ok(&server, key, json!({"name": "n", "styleProfile": null})).await;
    assert_eq!(agent["styleProfile"], Value::Null);

    let metadata = json!({"a": 1, "b": "two", "c": [1, {"d": null}], "e": {"f": false}});
    let agent = create_ok(&server, key, json!({"name": "n", "metadata": metadata})).await;
    assert_eq!(agent["metadata"], metadata);
    rejects(
        &server,
        key,
        json!({"name": "n", "metadata": null}),
        "metadata",
    )
    .await;
    // Metadata is at most 64 KiB serialized: `{"k":"…"}` is 8 bytes plus the value.
    let at_limit = json!({"k": "m".repeat(65_536 - 8)});
    assert_eq!(at_limit.to_string().len(), 65_536);
    let agent = create_ok(&server, key, json!({"name": "n", "metadata": at_limit})).await;
    assert_eq!(agent["metadata"], at_limit);
    let over = json!({"k": "m".repeat(65_536 - 7)});
    rejects(
        &server,
        key,
        json!({"name": "n", "metadata": over}),
        "metadata",
    )
    .await;
}

#[tokio::test]
async fn turn_taking_in_metadata_is_checked_when_the_agent_is_written() {
    let server = Server::start().await;
    let key = server.key();
    let turn_taking = json!({"turnTaking": {"endpointSilenceMs": 900, "bargeInMs": 300}});
    let agent = create_ok(&server, key, json!({"name": "n", "metadata": turn_taking})).await;
    assert_eq!(agent["metadata"], turn_taking);
    let id = agent["id"].as_str().unwrap().to_string();
    for bad in [
        json!({"turnTaking": {"endpointSilenceMs": 50}}),
        json!({"turnTaking": {"endpointSilenceMs": 20_000}}),
        json!({"turnTaking": {"bargeInMs": "300"}}),
        json!({"turnTaking": {"silenceMs": 900}}),
        json!({"turnTaking": [900]}),
    ] {
        let (status, error) = create(&server, key, json!({"name": "n", "metadata": bad})).await;
        assert_invalid(status, &error, "metadata", &short(&bad));
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("metadata.turnTaking"),
            "{error}"
        );
        // An update is refused the same way and changes nothing.
        let (status, error) = put(&server, key, &id, json!({"metadata": bad})).await;
        assert_invalid(status, &error, "metadata", &short(&bad));
        let (status, stored) = call(server.get(&format!("/v1/agents/{id}"), key)).await;
        assert_eq!(status, 200);
        assert_eq!(stored["metadata"], turn_taking);
    }
}

#[tokio::test]
async fn transfer_targets_are_stored_replaced_cleared_and_checked() {
    let server = Server::start().await;
    let key = server.key();
    let sent = json!([
        {"name": "billing", "number": "+14155550100", "description": "Invoices and refunds"},
        {"name": "Dr. Lee", "number": "+442071838750", "mode": "warm"}
    ]);
    let agent = create_ok(
        &server,
        key,
        json!({"id": "desk", "name": "Desk", "transfer": sent}),
    )
    .await;
    // Every target is shown whole: description and mode (cold unless warm) always present.
    let two = json!([
        {"name": "billing", "number": "+14155550100", "description": "Invoices and refunds",
         "mode": "cold"},
        {"name": "Dr. Lee", "number": "+442071838750", "description": "", "mode": "warm"}
    ]);
    assert_eq!(agent["transfer"], two, "{agent}");
    let (status, read) = get(&server, key, "desk").await;
    assert_eq!(status, 200);
    assert_eq!(read, agent);

    // PUT replaces the whole list (names trimmed) and nothing else.
    let (status, after) = put(
        &server,
        key,
        "desk",
        json!({"transfer": [{"name": " sales ", "number": "+12125550199", "mode": "cold"}]}),
    )
    .await;
    let one = json!([
        {"name": "sales", "number": "+12125550199", "description": "", "mode": "cold"}
    ]);
    assert_eq!((status, &after["transfer"]), (200, &one), "{after}");
    assert_same_except(&agent, &after, &["transfer", "updatedAt"]);
    assert_eq!(get(&server, key, "desk").await.1, after);
    // An update that leaves transfer out keeps it.
    let (status, renamed) = put(&server, key, "desk", json!({"name": "Front desk"})).await;
    assert_eq!((status, &renamed["transfer"]), (200, &one), "{renamed}");

    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({"name": format!("person {i}"), "number": "+14155550100"}))
        .collect();
    for (bad, says) in [
        (Value::Array(eleven), "at most 10"),
        (
            json!([{"name": "a", "number": "+14155550100"}, {"name": "b", "number": "4155550100"}]),
            "transfer[1].number",
        ),
        (
            json!([{"name": "Ops", "number": "+14155550100"},
                   {"name": "ops", "number": "+14155550101"}]),
            "twice",
        ),
        (
            json!([{"name": "a", "number": "+14155550100", "mode": "hot"}]),
            "transfer[0]",
        ),
    ] {
        let case = short(&bad);
        let (status, error) = put(
            &server,
            key,
            "desk",
            json!({"name": "Changed", "transfer": bad}),
        )
        .await;
        assert_invalid(status, &error, "transfer", &case);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{case}: {message}");
        assert_eq!(get(&server, key, "desk").await.1, renamed, "{case}");

        let (status, error) = create(
            &server,
            key,
            json!({"id": "refused", "name": "n", "transfer": bad}),
        )
        .await;
        assert_invalid(status, &error, "transfer", &case);
        assert_eq!(get(&server, key, "refused").await.0, 404, "{case}");
    }
    // Ten is the limit, not one more.
    let ten: Vec<Value> = (0..10)
        .map(|i| json!({"name": format!("person {i}"), "number": format!("+1415555010{i}")}))
        .collect();
    let (status, full) = put(&server, key, "desk", json!({"transfer": ten})).await;
    assert_eq!(status, 200, "{full}");
    assert_eq!(full["transfer"].as_array().map(Vec::len), Some(10));
    assert_eq!(full["transfer"][9]["number"], "+14155550109");

    // null clears the list to [].
    let (status, cleared) = put(&server, key, "desk", json!({"transfer": null})).await;
    assert_eq!(
        (status, &cleared["transfer"]),
        (200, &json!([])),
        "{cleared}"
    );
    assert_eq!(get(&server, key, "desk").await.1["transfer"], json!([]));
    let none = create_ok(&server, key, json!({"name": "n", "transfer": null})).await;
    assert_eq!(none["transfer"], json!([]));
    let (_, page) = list(&server, key, "").await;
    assert_eq!(page_ids(&page), vec!["desk", none["id"].as_str().unwrap()]);
}

#[tokio::test]
async fn agent_field_of_the_wrong_type_is_rejected_naming_the_field() {
    let server = Server::start().await;
    let key = server.key();
    for (field, value) in [
        ("name", json!(5)),
        ("description", json!(["x"])),
        ("temperature", json!("hot")),
        ("maxTokens", json!(1.5)),
        ("maxTokens", json!("100")),
        ("metadata", json!([1, 2])),
        ("styleProfile", json!("calm")),
        ("collectionId", json!(7)),
        ("transfer", json!("billing")),
        (
            "transfer",
            json!({"name": "billing", "number": "+14155550100"}),
        ),
    ] {
        let mut body = json!({"name": "n"});
        body[field] = value;
        rejects(&server, key, body, field).await;
    }
    let (_, page) = list(&server, key, "").await;
    assert_eq!(page["data"], json!([]));
}

#[tokio::test]
async fn unknown_and_output_only_agent_fields_are_rejected() {
    let server = Server::start().await;
    let key = server.key();
    for field in ["nmae", "status", "createdAt", "updatedAt", "system_prompt"] {
        let (status, body) = create(&server, key, json!({"name": "n", field: "x"})).await;
        assert_eq!(
            (status, error_code(&body)),
            (400, "validation_error"),
            "{field}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{field}: {message}");
    }
    let agent = create_ok(&server, key, json!({"id": "u", "name": "n"})).await;
    let (status, body) = put(&server, key, "u", json!({"name": "m", "nmae": "x"})).await;
    assert_eq!((status, error_code(&body)), (400, "validation_error"));
    let (status, body) = put(&server, key, "u", json!({"status": "archived"})).await;
    assert_eq!((status, error_code(&body)), (400, "validation_error"));
    assert_eq!(get(&server, key, "u").await.1, agent);
    assert_eq!(all_ids(&server, key, 20).await, vec!["u"]);
}

#[tokio::test]
async fn agent_request_bodies_must_be_json_of_at_most_2_mib() {
    let server = Server::start().await;
    let key = server.key();
    let raw = |method: reqwest::Method, path: &str, body: String, content_type: Option<&str>| {
        let mut request = server.request(method, path, key).body(body);
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type);
        }
        request
    };
    let post = reqwest::Method::POST;
    let json_type = Some("application/json");
    let (status, body) = call(raw(
        post.clone(),
        "/v1/agents",
        "{\"name\": ".into(),
        json_type,
    ))
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (400, "validation_error"),
        "{body}"
    );
    let (status, body) = call(raw(post.clone(), "/v1/agents", String::new(), json_type)).await;
    assert_eq!(
        (status, error_code(&body)),
        (400, "validation_error"),
        "{body}"
    );
    let valid = r#"{"id": "ok", "name": "x"}"#.to_string();
    let (status, body) = call(raw(
        post.clone(),
        "/v1/agents",
        valid.clone(),
        Some("text/plain"),
    ))
    .await;
    assert_eq!((status, error_code(&body)), (415, "unsupported_media_type"));
    let (status, body) = call(raw(post.clone(), "/v1/agents", valid.clone(), None)).await;
    assert_eq!((status, error_code(&body)), (415, "unsupported_media_type"));
    let charset = Some("application/json; charset=utf-8");
    let (status, body) = call(raw(post.clone(), "/v1/agents", valid, charset)).await;
    assert_eq!(status, 201, "{body}");

    let put_path = "/v1/agents/ok";
    let (status, body) = call(raw(reqwest::Method::PUT, put_path, "{".into(), json_type)).await;
    assert_eq!((status, error_code(&body)), (400, "validation_error"));
    let change = r#"{"name": "y"}"#.to_string();
    let (status, body) = call(raw(
        reqwest::Method::PUT,
        put_path,
        change,
        Some("text/plain"),
    ))
    .await;
    assert_eq!((status, error_code(&body)), (415, "unsupported_media_type"));

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
    let (status, body) = call(raw(post.clone(), "/v1/agents", sized(limit), json_type)).await;
    assert_invalid(status, &body, "description", "2 MiB body");
    let (status, body) = call(raw(post, "/v1/agents", sized(limit + 1), json_type)).await;
    assert_eq!((status, error_code(&body)), (413, "payload_too_large"));

    assert_eq!(all_ids(&server, key, 20).await, vec!["ok"]);
    assert_eq!(get(&server, key, "ok").await.1["name"], "x");
}

#[tokio::test]
async fn an_agent_body_that_is_a_json_array_is_rejected() {
    let server = Server::start().await;
    let key = server.key();
    // The fields are read from an object only, never positionally from an array.
    for body in [json!(["from-array", "From an array"]), json!([])] {
        let (status, error) = create(&server, key, body.clone()).await;
        assert_eq!(status, 400, "{body} → {error}");
        assert_eq!(error_code(&error), "validation_error");
    }
    assert_eq!(get(&server, key, "from-array").await.0, 404);
    create_ok(&server, key, json!({"id": "kept", "name": "n"})).await;
    let (status, error) = put(&server, key, "kept", json!([])).await;
    assert_eq!(status, 400, "PUT [] → {error}");
}

#[tokio::test]
async fn agent_collection_must_be_an_existing_collection_of_the_developer() {
    let server = Server::start().await;
    let key = server.key();
    let key_b = server.storage.create_key("dev_b");
    let own = collection(&server, key, "mine").await;
    let foreign = collection(&server, &key_b, "theirs").await;
    for id in ["col_missing", foreign.as_str(), ""] {
        rejects(
            &server,
            key,
            json!({"name": "n", "collectionId": id}),
            "collectionId",
        )
        .await;
    }
    let agent = create_ok(
        &server,
        key,
        json!({"id": "a", "name": "n", "collectionId": own}),
    )
    .await;
    assert_eq!(agent["collectionId"], own);
    for id in ["col_missing", foreign.as_str()] {
        let (status, body) = put(&server, key, "a", json!({"collectionId": id})).await;
        assert_invalid(status, &body, "collectionId", id);
    }
    assert_eq!(get(&server, key, "a").await.1, agent);
    let (status, detached) = put(&server, key, "a", json!({"collectionId": null})).await;
    assert_eq!((status, &detached["collectionId"]), (200, &Value::Null));
    let (status, attached) = put(&server, key, "a", json!({"collectionId": own})).await;
    assert_eq!((status, &attached["collectionId"]), (200, &json!(own)));
}

#[tokio::test]
async fn put_changes_only_the_provided_fields() {
    let server = Server::start().await;
    let key = server.key();
    let collection_id = collection(&server, key, "kb").await;
    let mut body = full_agent("partial");
    body["collectionId"] = json!(collection_id);
    let before = create_ok(&server, key, body).await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    let (status, after) = put(&server, key, "partial", json!({"description": "new words"})).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["description"], "new words");
    assert_same_except(&before, &after, &["description", "updatedAt"]);
    assert!(is_iso_millis(&after["updatedAt"]), "{after}");
    assert!(
        after["updatedAt"].as_str() > before["updatedAt"].as_str(),
        "updatedAt advances"
    );
    assert_eq!(get(&server, key, "partial").await.1, after);

    tokio::time::sleep(Duration::from_millis(20)).await;
    let changes = json!({
        "name": "Renamed", "temperature": 0.0, "maxTokens": 16_384, "language": "en",
        "metadata": {"replaced": true}, "styleProfile": {"pace": "fast"}, "voiceId": "v2",
    });
    let (status, later) = put(&server, key, "partial", changes.clone()).await;
    assert_eq!(status, 200, "{later}");
    for (field, value) in changes.as_object().unwrap() {
        assert_eq!(&later[field], value, "{field}");
    }
    let changed: Vec<&str> = changes
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_same_except(
        &after,
        &later,
        &[changed.as_slice(), &["updatedAt"][..]].concat(),
    );
    assert!(later["updatedAt"].as_str() > after["updatedAt"].as_str());

    let (status, same) = put(&server, key, "partial", json!({})).await;
    assert_eq!(status, 200, "{same}");
    assert_same_except(&later, &same, &["updatedAt"]);
    assert_eq!(get(&server, key, "partial").await.1, same);
}

#[tokio::test]
async fn put_null_clears_every_nullable_field() {
    let server = Server::start().await;
    let key = server.key();
    let collection_id = collection(&server, key, "kb").await;
    let mut body = full_agent("clear");
    body["collectionId"] = json!(collection_id);
    let before = create_ok(&server, key, body).await;
    for field in NULLABLE {
        assert_ne!(before[field], Value::Null, "{field} starts set");
    }
    let nulls: Value = NULLABLE
        .iter()
        .map(|f| (f.to_string(), Value::Null))
        .collect();
    let (status, after) = put(&server, key, "clear", nulls).await;
    assert_eq!(status, 200, "{after}");
    for field in NULLABLE {
        assert_eq!(after[field], Value::Null, "{field}");
    }
    assert_same_except(
        &before,
        &after,
        &[&NULLABLE[..], &["updatedAt"][..]].concat(),
    );
    assert_eq!(get(&server, key, "clear").await.1, after);

    // One at a time too: clearing one leaves the others.
    let restored = put(
        &server,
        key,
        "clear",
        json!({"description": "d", "maxTokens": 9}),
    )
    .await
    .1;
    let (status, one) = put(&server, key, "clear", json!({"maxTokens": null})).await;
    assert_eq!(
        (status, &one["maxTokens"], &one["description"]),
        (200, &Value::Null, &json!("d"))
    );
    assert_same_except(&restored, &one, &["maxTokens", "updatedAt"]);
}

#[tokio::test]
async fn put_null_on_a_required_field_is_rejected_and_changes_nothing() {
    let server = Server::start().await;
    let key = server.key();
    let before = create_ok(&server, key, full_agent("keep")).await;
    for field in NOT_NULLABLE {
        let (status, body) = put(
            &server,
            key,
            "keep",
            json!({field: null, "description": "x"}),
        )
        .await;
        assert_invalid(status, &body, field, field);
    }
    assert_eq!(get(&server, key, "keep").await.1, before);
}

#[tokio::test]
async fn an_agent_on_the_embedded_recognizer_must_force_a_language_it_hears() {
    let server = Server::start().await;
    let key = server.key();
    // The embedded recognizer would fail every caller turn of these: refused, nothing stored.
    for language in ["xx", "fil", "tlh-Latn"] {
        let body = json!({"id": "unheard", "name": "n", "language": language});
        let (status, error) = create(&server, key, body.clone()).await;
        assert_invalid(status, &error, "language", &short(&body));
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(language) && message.contains("`auto`"),
            "{message}"
        );
        let (status, body) = get(&server, key, "unheard").await;
        assert_not_found(status, &body, language);
    }
    // Its own languages, with a region or by name, and `auto` are heard.
    for language in ["de", "pt-BR", "jw", "haw", "english", "auto"] {
        create_ok(&server, key, json!({"name": "n", "language": language})).await;
    }
    // A vendor's recognizer checks its own languages (`multi` is one vendor's code-switching),
    // unless the embedded one is its fallback.
    for language in ["fil", "multi"] {
        let body = json!({"name": "n", "sttProvider": "deepgram", "language": language});
        assert_eq!(create_ok(&server, key, body).await["language"], language);
    }
    let fallback = json!({"fallbacks": {"stt": ["assemblyai", "default"]}});
    let body =
        json!({"name": "n", "sttProvider": "deepgram", "language": "fil", "metadata": fallback});
    let (status, error) = create(&server, key, body.clone()).await;
    assert_invalid(status, &error, "language", &short(&body));
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fallbacks"),
        "{error}"
    );

    // An update is held to the row it makes, whichever of the two fields it changes.
    let vendor = create_ok(
        &server,
        key,
        json!({"id": "fil", "name": "n", "sttProvider": "deepgram", "language": "fil"}),
    )
    .await;
    let embedded = create_ok(&server, key, json!({"id": "en", "name": "n"})).await;
    for (id, body) in [
        ("fil", json!({"sttProvider": "default"})),
        ("en", json!({"language": "xx"})),
        ("en", json!({"language": "fil", "name": "renamed"})),
        ("fil", json!({"metadata": fallback})),
    ] {
        let (status, error) = put(&server, key, id, body.clone()).await;
        assert_invalid(status, &error, "language", &short(&body));
    }
    assert_eq!(get(&server, key, "fil").await.1, vendor);
    assert_eq!(get(&server, key, "en").await.1, embedded);
    // Changing both together, or to `auto`, is fine.
    let (status, moved) = put(
        &server,
        key,
        "fil",
        json!({"sttProvider": "default", "language": "auto"}),
    )
    .await;
    assert_eq!(
        (status, &moved["language"]),
        (200, &json!("auto")),
        "{moved}"
    );
    let body = json!({"sttProvider": "deepgram", "language": "fil"});
    let (status, moved) = put(&server, key, "en", body).await;
    assert_eq!(
        (status, &moved["sttProvider"]),
        (200, &json!("deepgram")),
        "{moved}"
    );
}

#[tokio::test]
async fn put_enforces_the_create_limits_and_changes_nothing_when_rejected() {
    let server = Server::start().await;
    let key = server.key();
    let before = create_ok(&server, key, json!({"id": "lim", "name": "n"})).await;
    for (body, param) in [
        (json!({"name": "n".repeat(101)}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "  "}), "name"),
        (json!({"description": "d".repeat(1001)}), "description"),
        (json!({"systemPrompt": "s".repeat(10_001)}), "systemPrompt"),
        (json!({"firstMessage": "f".repeat(1001)}), "firstMessage"),
        (json!({"temperature": 2.01}), "temperature"),
        (json!({"temperature": -0.01}), "temperature"),
        (json!({"maxTokens": 0}), "maxTokens"),
        (json!({"maxTokens": 16_385}), "maxTokens"),
        (json!({"ttsProvider": "nope"}), "ttsProvider"),
        (json!({"sttProvider": "nope"}), "sttProvider"),
        (json!({"llmProvider": "nope"}), "llmProvider"),
        (json!({"voiceId": ""}), "voiceId"),
        (json!({"language": ""}), "language"),
        (
            json!({"description": "ok", "name": "n".repeat(101)}),
            "name",
        ),
    ] {
        let (status, error) = put(&server, key, "lim", body.clone()).await;
        assert_invalid(status, &error, param, &short(&body));
    }
    assert_eq!(get(&server, key, "lim").await.1, before);

    let edges = json!({
        "name": "n".repeat(100), "description": "d".repeat(1000),
        "systemPrompt": "s".repeat(10_000), "firstMessage": "f".repeat(1000),
        "temperature": 2.0, "maxTokens": 1,
    });
    let (status, after) = put(&server, key, "lim", edges.clone()).await;
    assert_eq!(status, 200, "{}", short(&after));
    for (field, value) in edges.as_object().unwrap() {
        assert_eq!(&after[field], value, "{field}");
    }
}

#[tokio::test]
async fn put_cannot_change_an_agents_id() {
    let server = Server::start().await;
    let key = server.key();
    let before = create_ok(&server, key, json!({"id": "fixed", "name": "n"})).await;
    let (status, body) = put(&server, key, "fixed", json!({"id": "moved", "name": "m"})).await;
    assert_invalid(status, &body, "id", "changing the id");
    assert_eq!(get(&server, key, "fixed").await.1, before);
    assert_eq!(get(&server, key, "moved").await.0, 404);
    let (status, body) = put(&server, key, "fixed", json!({"id": "fixed", "name": "m"})).await;
    assert_eq!(
        (status, &body["id"], &body["name"]),
        (200, &json!("fixed"), &json!("m"))
    );
}

#[tokio::test]
async fn a_missing_agent_is_not_found_for_every_verb() {
    let server = Server::start().await;
    let key = server.key();
    let (status, body) = get(&server, key, "ghost").await;
    assert_not_found(status, &body, "GET");
    let (status, body) = put(&server, key, "ghost", json!({"name": "n"})).await;
    assert_not_found(status, &body, "PUT");
    let (status, body) = delete(&server, key, "ghost").await;
    assert_not_found(status, &body, "DELETE");
    assert_eq!(list(&server, key, "").await.1["data"], json!([]));
}

#[tokio::test]
async fn deleting_an_agent_archives_it_and_keeps_its_id_taken() {
    let server = Server::start().await;
    let key = server.key();
    for id in ["a1", "gone", "a3"] {
        create_ok(&server, key, json!({"id": id, "name": id})).await;
    }
    assert_eq!(get(&server, key, "gone").await.0, 200);
    let response = server.delete("/v1/agents/gone", key).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert!(response.text().await.unwrap().is_empty(), "204 has no body");

    let (status, body) = get(&server, key, "gone").await;
    assert_not_found(status, &body, "GET after archive");
    assert_eq!(all_ids(&server, key, 20).await, vec!["a1", "a3"]);
    let (status, body) = delete(&server, key, "gone").await;
    assert_not_found(status, &body, "second DELETE");
    let (status, body) = put(&server, key, "gone", json!({"name": "back"})).await;
    assert_not_found(status, &body, "PUT after archive");
    let (status, body) = create(&server, key, json!({"id": "gone", "name": "again"})).await;
    assert_eq!((status, error_code(&body)), (409, "conflict"), "{body}");
    assert_eq!(
        get(&server, key, "gone").await.0,
        404,
        "the conflict revived nothing"
    );
    assert_eq!(get(&server, key, "a1").await.1["name"], "a1");
}

#[tokio::test]
async fn an_archived_agents_id_still_works_as_a_list_cursor() {
    let server = Server::start().await;
    let key = server.key();
    for id in ["c1", "c2", "c3", "c4"] {
        create_ok(&server, key, json!({"id": id, "name": id})).await;
    }
    let (_, first) = list(&server, key, "?limit=2").await;
    assert_eq!(page_ids(&first), vec!["c1", "c2"]);
    assert_eq!(first["nextCursor"], "c2");
    assert_eq!(delete(&server, key, "c2").await.0, 204);
    let (status, next) = list(&server, key, "?limit=2&cursor=c2").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(page_ids(&next), vec!["c3", "c4"]);
    assert_eq!(
        (&next["hasMore"], &next["nextCursor"]),
        (&json!(false), &Value::Null)
    );
}

#[tokio::test]
async fn agent_lists_page_in_creation_order_with_cursors() {
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
        // Ids that do not sort in creation order: order must come from creation.
        let id = format!("agent-{}", (25 - n) * 7 % 26);
        create_ok(&server, key, json!({"id": id, "name": format!("n{n}")})).await;
        created.push(id);
    }
    let (status, first) = list(&server, key, "").await;
    assert_eq!(status, 200);
    assert_eq!(page_ids(&first), &created[..20]);
    assert_eq!(first["hasMore"], true);
    assert_eq!(first["nextCursor"], created[19].as_str());
    assert_eq!(
        first["data"][0],
        get(&server, key, &created[0]).await.1,
        "full objects"
    );

    let (status, second) = list(&server, key, &format!("?cursor={}", created[19])).await;
    assert_eq!(status, 200);
    assert_eq!(page_ids(&second), &created[20..]);
    assert_eq!(
        (&second["hasMore"], &second["nextCursor"]),
        (&json!(false), &Value::Null)
    );

    assert_eq!(all_ids(&server, key, 5).await, created, "five full pages");
    assert_eq!(all_ids(&server, key, 1).await, created);
    assert_eq!(all_ids(&server, key, 7).await, created);
    let (_, whole) = list(&server, key, "?limit=25").await;
    assert_eq!(page_ids(&whole), created);
    assert_eq!(
        (&whole["hasMore"], &whole["nextCursor"]),
        (&json!(false), &Value::Null)
    );
    let (_, whole) = list(&server, key, "?limit=100").await;
    assert_eq!(page_ids(&whole), created);
    let (_, tail) = list(&server, key, &format!("?cursor={}", created[24])).await;
    assert_eq!(
        tail,
        json!({"data": [], "nextCursor": null, "hasMore": false})
    );
}

#[tokio::test]
async fn an_agent_page_holds_at_most_100() {
    let server = Server::start().await;
    let key = server.key();
    let mut created = Vec::new();
    for n in 0..101 {
        created.push(create_ok(&server, key, json!({"name": format!("n{n}")})).await["id"].clone());
    }
    let (status, first) = list(&server, key, "?limit=100").await;
    assert_eq!(status, 200);
    assert_eq!(first["data"].as_array().unwrap().len(), 100);
    assert_eq!(
        (&first["hasMore"], &first["nextCursor"]),
        (&json!(true), &created[99])
    );
    let cursor = created[99].as_str().unwrap();
    let (_, last) = list(&server, key, &format!("?limit=100&cursor={cursor}")).await;
    assert_eq!(page_ids(&last), vec![created[100].as_str().unwrap()]);
    assert_eq!(last["hasMore"], false);
    assert_eq!(
        all_ids(&server, key, 20).await.len(),
        101,
        "six pages by default"
    );
}

#[tokio::test]
async fn agent_list_rejects_limits_outside_1_to_100_and_unknown_cursors() {
    let server = Server::start().await;
    let key = server.key();
    let key_b = server.storage.create_key("dev_b");
    create_ok(&server, key, json!({"id": "mine", "name": "n"})).await;
    create_ok(&server, &key_b, json!({"id": "theirs", "name": "n"})).await;
    for limit in ["0", "101", "-1", "1000"] {
        let (status, body) = list(&server, key, &format!("?limit={limit}")).await;
        assert_invalid(status, &body, "limit", limit);
    }
    for limit in ["1", "100"] {
        let (status, body) = list(&server, key, &format!("?limit={limit}")).await;
        assert_eq!(
            (status, page_ids(&body)),
            (200, vec!["mine".to_string()]),
            "{limit}"
        );
    }
    for cursor in ["nope", "theirs"] {
        let (status, body) = list(&server, key, &format!("?cursor={cursor}")).await;
        assert_invalid(status, &body, "cursor", cursor);
    }
}

#[tokio::test]
async fn agent_list_limit_that_is_not_a_number_is_rejected_naming_limit() {
    let server = Server::start().await;
    let key = server.key();
    for limit in ["abc", "1.5", "20x"] {
        let (status, body) = list(&server, key, &format!("?limit={limit}")).await;
        assert_invalid(status, &body, "limit", limit);
    }
}

#[tokio::test]
async fn another_developers_agent_is_not_found_for_every_verb() {
    let server = Server::start().await;
    let key_a = server.key().to_string();
    let key_b = server.storage.create_key("dev_b");
    let agent = create_ok(&server, &key_a, full_agent("private")).await;
    let generated = create_ok(&server, &key_a, json!({"name": "g"})).await;
    let generated_id = generated["id"].as_str().unwrap();
    let own_b = create_ok(&server, &key_b, json!({"name": "b's"})).await;

    for id in ["private", generated_id] {
        let (status, body) = get(&server, &key_b, id).await;
        assert_not_found(status, &body, "GET");
        let (status, body) = put(&server, &key_b, id, json!({"name": "stolen"})).await;
        assert_not_found(status, &body, "PUT");
        let (status, body) = delete(&server, &key_b, id).await;
        assert_not_found(status, &body, "DELETE");
    }
    assert_eq!(get(&server, &key_a, "private").await.1, agent, "untouched");
    assert_eq!(get(&server, &key_a, generated_id).await.1, generated);
    assert_eq!(
        all_ids(&server, &key_a, 20).await,
        vec!["private", generated_id]
    );
    let (_, page_b) = list(&server, &key_b, "?limit=100").await;
    assert_eq!(page_b["data"], json!([own_b.clone()]));
    // And the other way round.
    let own_b_id = own_b["id"].as_str().unwrap();
    assert_eq!(get(&server, &key_a, own_b_id).await.0, 404);
    assert_eq!(delete(&server, &key_a, own_b_id).await.0, 404);
    assert_eq!(get(&server, &key_b, own_b_id).await.1, own_b);
}

#[tokio::test]
async fn two_developers_may_each_use_the_same_custom_agent_id() {
    let server = Server::start().await;
    let key_a = server.key().to_string();
    let key_b = server.storage.create_key("dev_b");
    let a = create_ok(&server, &key_a, json!({"id": "support", "name": "A's"})).await;
    let b = create_ok(&server, &key_b, json!({"id": "support", "name": "B's"})).await;
    assert_eq!(get(&server, &key_a, "support").await.1, a);
    assert_eq!(get(&server, &key_b, "support").await.1, b);

    let (status, b2) = put(&server, &key_b, "support", json!({"name": "B renamed"})).await;
    assert_eq!((status, &b2["name"]), (200, &json!("B renamed")));
    assert_eq!(
        get(&server, &key_a, "support").await.1,
        a,
        "A's agent unchanged"
    );

    assert_eq!(delete(&server, &key_b, "support").await.0, 204);
    assert_eq!(get(&server, &key_b, "support").await.0, 404);
    assert_eq!(
        get(&server, &key_a, "support").await.1,
        a,
        "A's agent still live"
    );
    assert_eq!(all_ids(&server, &key_a, 20).await, vec!["support"]);
    assert_eq!(all_ids(&server, &key_b, 20).await, Vec::<String>::new());
    assert_eq!(
        create(&server, &key_b, json!({"id": "support", "name": "x"}))
            .await
            .0,
        409
    );
    // A developer's archived id does not block another developer.
    assert_eq!(delete(&server, &key_a, "support").await.0, 204);
    let key_c = server.storage.create_key("dev_c");
    create_ok(&server, &key_c, json!({"id": "support", "name": "C's"})).await;
}

#[tokio::test]
async fn agents_survive_a_restart() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let key_b = server.storage.create_key("dev_b");
    let collection_id = collection(&server, &key, "kb").await;
    let mut body = full_agent("full");
    body["collectionId"] = json!(collection_id);
    create_ok(&server, &key, body).await;
    create_ok(&server, &key, json!({"id": "archived", "name": "bye"})).await;
    let minimal = create_ok(&server, &key, json!({"name": "minimal"})).await;
    let b = create_ok(&server, &key_b, json!({"id": "full", "name": "B's"})).await;
    let (_, full) = put(
        &server,
        &key,
        "full",
        json!({"description": null, "temperature": 0.3}),
    )
    .await;
    assert_eq!(delete(&server, &key, "archived").await.0, 204);
    let (_, before) = list(&server, &key, "").await;

    let server = server.restart().await;
    assert_eq!(get(&server, &key, "full").await.1, full);
    let minimal_id = minimal["id"].as_str().unwrap();
    assert_eq!(get(&server, &key, minimal_id).await.1, minimal);
    assert_eq!(list(&server, &key, "").await.1, before);
    assert_eq!(page_ids(&before), vec!["full", minimal_id]);
    assert_eq!(get(&server, &key, "archived").await.0, 404);
    assert_eq!(
        create(&server, &key, json!({"id": "archived", "name": "x"}))
            .await
            .0,
        409
    );
    assert_eq!(get(&server, &key_b, "full").await.1, b);
}

#[tokio::test]
async fn agent_text_with_a_nul_character_is_stored_exactly_or_rejected_cleanly() {
    let server = Server::start().await;
    let key = server.key();
    let text = "before\u{0}after";
    for field in [
        "name",
        "description",
        "systemPrompt",
        "firstMessage",
        "voiceId",
        "ttsModel",
        "llmModel",
        "collectionId",
    ] {
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
async fn an_agent_id_with_a_nul_character_is_not_found_or_rejected_not_a_server_error() {
    let server = Server::start().await;
    let key = server.key();
    let (status, body) = get(&server, key, "a%00b").await;
    assert_not_found(status, &body, "GET");
    let (status, body) = put(&server, key, "a%00b", json!({"name": "n"})).await;
    assert_not_found(status, &body, "PUT");
    let (status, body) = delete(&server, key, "a%00b").await;
    assert_not_found(status, &body, "DELETE");
    let (status, body) = list(&server, key, "?cursor=a%00b").await;
    assert_invalid(status, &body, "cursor", "cursor");
}

#[tokio::test]
async fn tools_on_the_embedded_model_are_warned_about_at_create_and_update() {
    let server = Server::start().await;
    let key = server.key();
    let tool =
        json!({"tools": [{"name": "check_availability", "url": "https://example.com/slots"}]});
    let agent = create_ok(
        &server,
        key,
        json!({"name": "Front desk", "metadata": tool.clone()}),
    )
    .await;
    let warnings = agent["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{agent}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("check_availability") && warning.contains("cannot call tools"),
        "{warning}"
    );
    let id = agent["id"].as_str().unwrap();

    // A transfer list is a tool too; the warning names both.
    let (status, updated) = put(
        &server,
        key,
        id,
        json!({"transfer": [{"name": "billing", "number": "+14155550100"}]}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    let warning = updated["warnings"][0].as_str().unwrap();
    assert!(warning.contains("check_availability") && warning.contains("transfer"));
    let (_, read) = get(&server, key, id).await;
    assert_eq!(read["warnings"], updated["warnings"]);

    // On a vendor model the tools run: no warning.
    let vendor = LLM_PROVIDERS
        .iter()
        .find(|p| **p != "default")
        .expect("a vendor language model is listed");
    let (status, moved) = put(&server, key, id, json!({"llmProvider": vendor})).await;
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["warnings"], json!([]), "{moved}");
}
