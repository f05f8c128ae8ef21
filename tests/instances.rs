//! Agent instances through the API: the whole lifecycle, phone numbers unique per agent, the
//! documented limits, and isolation between developers.

mod common;

use common::*;
use serde_json::json;

async fn new_agent(server: &Server, key: &str, id: &str) {
    let (status, body) =
        call(server.post("/v1/agents", key, json!({"id": id, "name": "Front desk"}))).await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn an_instance_lives_through_create_list_read_update_and_delete() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key, "desk").await;
    let (status, created) = call(server.post(
        "/v1/agents/desk/instances",
        &key,
        json!({"name": "Downtown store", "phoneNumber": "+14155550123",
               "context": "This caller is a gold member.", "variables": {"store": "Downtown", "hours": "9-6"}}),
    ))
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("inst_"));
    assert_eq!(created["agentId"], "desk");
    assert_eq!(created["variables"]["store"], "Downtown");
    assert!(is_iso_millis(&created["createdAt"]) && is_iso_millis(&created["updatedAt"]));

    let (status, custom) = call(server.post(
        "/v1/agents/desk/instances",
        &key,
        json!({"id": "uptown", "phoneNumber": "+14155550124"}),
    ))
    .await;
    assert_eq!(status, 201, "{custom}");
    assert_eq!(custom["context"], "");
    assert_eq!(
        all_ids_at(&server, &key, "/v1/agents/desk/instances", 1).await,
        [id.clone(), "uptown".to_string()]
    );

    let (status, updated) = call(server.put(
        &format!("/v1/agents/desk/instances/{id}"),
        &key,
        json!({"name": null, "context": "Silver member now."}),
    ))
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["name"], serde_json::Value::Null);
    assert_eq!(updated["context"], "Silver member now.");
    assert_eq!(
        updated["phoneNumber"], "+14155550123",
        "untouched fields stay"
    );

    let (status, read) = call(server.get(&format!("/v1/agents/desk/instances/{id}"), &key)).await;
    assert_eq!(
        (status, &read["context"]),
        (200, &json!("Silver member now."))
    );

    let (status, _) = call(server.delete(&format!("/v1/agents/desk/instances/{id}"), &key)).await;
    assert_eq!(status, 204);
    let (status, body) = call(server.get(&format!("/v1/agents/desk/instances/{id}"), &key)).await;
    assert_not_found(status, &body, "a deleted instance");
}

#[tokio::test]
async fn phone_numbers_are_e164_and_unique_per_agent() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key, "desk").await;
    new_agent(&server, &key, "sales").await;
    for (body, param) in [
        (json!({"phoneNumber": "4155550123"}), "phoneNumber"),
        (json!({"phoneNumber": "+1 415 555 0123"}), "phoneNumber"),
        (json!({"context": "x".repeat(10_001)}), "context"),
        (json!({"name": ""}), "name"),
        (json!({"id": "has space"}), "id"),
        (json!({"variables": [1, 2]}), "variables"),
    ] {
        let (status, error) =
            call(server.post("/v1/agents/desk/instances", &key, body.clone())).await;
        assert_invalid(status, &error, param, &short(&body));
    }
    let (status, _) = call(server.post(
        "/v1/agents/desk/instances",
        &key,
        json!({"phoneNumber": "+14155550123"}),
    ))
    .await;
    assert_eq!(status, 201);
    let (status, body) = call(server.post(
        "/v1/agents/desk/instances",
        &key,
        json!({"phoneNumber": "+14155550123"}),
    ))
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(error_code(&body), "conflict");
    // The same number may serve another agent.
    let (status, _) = call(server.post(
        "/v1/agents/sales/instances",
        &key,
        json!({"phoneNumber": "+14155550123"}),
    ))
    .await;
    assert_eq!(status, 201);
}

#[tokio::test]
async fn instance_ids_are_scoped_per_developer_and_say_nothing_of_others() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let stranger = server.storage.create_key("dev_other");
    new_agent(&server, &key, "desk").await;
    new_agent(&server, &stranger, "desk").await;
    let (status, mine) = call(server.post(
        "/v1/agents/desk/instances",
        &key,
        json!({"id": "store-42", "name": "Mine"}),
    ))
    .await;
    assert_eq!(status, 201, "{mine}");

    // Another developer neither sees the id nor is told it is taken: they get their own.
    let (status, body) = call(server.get("/v1/agents/desk/instances/store-42", &stranger)).await;
    assert_not_found(status, &body, "another developer's instance id");
    let (status, theirs) = call(server.post(
        "/v1/agents/desk/instances",
        &stranger,
        json!({"id": "store-42", "name": "Theirs"}),
    ))
    .await;
    assert_eq!(status, 201, "{theirs}");
    assert_eq!(theirs["name"], "Theirs");

    // Each reads, changes and deletes only their own.
    let (status, body) = call(server.put(
        "/v1/agents/desk/instances/store-42",
        &stranger,
        json!({"name": "Theirs, renamed"}),
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(server.get("/v1/agents/desk/instances/store-42", &key)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "Mine");
    let (status, _) = call(server.delete("/v1/agents/desk/instances/store-42", &stranger)).await;
    assert_eq!(status, 204);
    let (status, body) = call(server.get("/v1/agents/desk/instances/store-42", &key)).await;
    assert_eq!(status, 200, "{body}");

    // Within one developer an id is still unique, across their agents too.
    new_agent(&server, &key, "sales").await;
    let (status, body) = call(server.post(
        "/v1/agents/sales/instances",
        &key,
        json!({"id": "store-42"}),
    ))
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(error_code(&body), "conflict");
}

#[tokio::test]
async fn instances_belong_to_a_live_agent_of_their_developer() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key, "desk").await;
    let (_, created) =
        call(server.post("/v1/agents/desk/instances", &key, json!({"name": "A"}))).await;
    let path = format!(
        "/v1/agents/desk/instances/{}",
        created["id"].as_str().unwrap()
    );

    let stranger = server.storage.create_key("dev_other");
    let (status, body) = call(server.get(&path, &stranger)).await;
    assert_not_found(status, &body, "another developer's instance");
    let (status, body) = call(server.get("/v1/agents/desk/instances", &stranger)).await;
    assert_not_found(status, &body, "another developer's agent's instances");
    let (status, body) = call(server.post("/v1/agents/nope/instances", &key, json!({}))).await;
    assert_not_found(status, &body, "an unknown agent");

    let (status, _) = call(server.delete("/v1/agents/desk", &key)).await;
    assert_eq!(status, 204);
    let (status, body) = call(server.get(&path, &key)).await;
    assert_not_found(status, &body, "an archived agent's instance");
}
