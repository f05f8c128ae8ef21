//! Chatting with an agent through the API on the embedded language model: answers grounded in
//! the agent's collection, conversations that continue, instances picked by id or phone, and
//! the documented limits.

mod common;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use common::*;
use serde_json::{json, Value};
use vendor_mock::VendorMock;

async fn chat(server: &Server, key: &str, agent: &str, body: Value) -> (u16, Value) {
    call(server.post(&format!("/v1/agents/{agent}/chat"), key, body)).await
}

#[tokio::test]
async fn answers_come_from_the_agents_knowledge() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, provisioned) = call(server.post(
        "/v1/agents/provision",
        &key,
        json!({
            "name": "Returns desk",
            "systemPrompt": "You answer questions about returns for the Acme store in one short sentence.",
            "initialContent": [{"content": "Acme accepts returns within 45 days of purchase. \
                Refunds are paid to the original card within 5 business days."}]
        }),
    ))
    .await;
    assert_eq!(status, 201, "{provisioned}");
    let agent = provisioned["agent"]["id"].as_str().unwrap().to_string();
    // Deterministic answers for factual questions.
    let (status, _) = call(server.put(
        &format!("/v1/agents/{agent}"),
        &key,
        json!({"temperature": 0}),
    ))
    .await;
    assert_eq!(status, 200);

    let (status, first) = chat(
        &server,
        &key,
        &agent,
        json!({"message": "How many days do I have to return something?"}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert!(first["reply"].as_str().unwrap().contains("45"), "{first}");
    assert_eq!(first["turnIndex"], 0);
    assert!(
        first["usage"]["inputTokens"].as_u64().unwrap() > 20,
        "{first}"
    );
    assert!(first["usage"]["outputTokens"].as_u64().unwrap() > 0);
    assert!(first["toolCalls"].is_array());
    let conversation = first["conversationId"].as_str().unwrap().to_string();

    let (status, second) = chat(
        &server,
        &key,
        &agent,
        json!({"message": "And how soon is the refund paid?", "conversationId": conversation}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["conversationId"], conversation.as_str());
    assert_eq!(second["turnIndex"], 1);
    assert!(!second["reply"].as_str().unwrap().is_empty());
}

/// Each turn's request to the model begins with the previous turn's, up to that turn's
/// facts: the system prompt stays the same and the facts come right before the message, so a
/// model's prompt cache keeps the conversation (here the OpenAI wire format, as sent).
#[tokio::test]
async fn each_turns_request_begins_with_the_last_one() {
    let vendors = VendorMock::start();
    let server = vendors
        .server(&[("SWITCHBOARD__VENDORS__OPENAI__API_KEY", "platform-extract")])
        .await;
    let key = server.key().to_string();
    let (status, provisioned) = call(server.post(
        "/v1/agents/provision",
        &key,
        json!({
            "name": "Returns desk",
            "systemPrompt": "You answer questions about returns for the Acme store.",
            "llmProvider": "openai",
            "initialContent": [{"content": "Acme accepts returns within 45 days of purchase. \
                Refunds are paid to the original card within 5 business days."}]
        }),
    ))
    .await;
    assert_eq!(status, 201, "{provisioned}");
    let agent = provisioned["agent"]["id"].as_str().unwrap().to_string();
    let (status, first) = chat(
        &server,
        &key,
        &agent,
        json!({"message": "How many days do I have to return something?"}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert!(
        first["reply"].as_str().unwrap().contains("45 days"),
        "{first}"
    );
    let conversation = first["conversationId"].as_str().unwrap().to_string();
    let (status, second) = chat(
        &server,
        &key,
        &agent,
        json!({"message": "And how soon are refunds paid?", "conversationId": conversation}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert!(
        second["reply"]
            .as_str()
            .unwrap()
            .contains("5 business days"),
        "{second}"
    );

    let requests: Vec<Vec<Value>> = vendors
        .seen_at("/chat/completions")
        .iter()
        .map(|seen| {
            seen.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let roles = |messages: &[Value]| -> Vec<String> {
        messages
            .iter()
            .map(|m| m["role"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(roles(&requests[0]), ["system", "system", "user"]);
    assert_eq!(
        roles(&requests[1]),
        ["system", "user", "assistant", "system", "user"]
    );
    let facts = |m: &Value| {
        m["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Facts:")
    };
    assert!(!facts(&requests[0][0]) && facts(&requests[0][1]) && facts(&requests[1][3]));
    assert!(!requests[0][0]["content"]
        .as_str()
        .unwrap()
        .contains("45 days"));
    // The second request is the first one without its facts, then the answer, the second
    // turn's facts and the new message.
    assert_eq!(requests[1][0], requests[0][0]);
    assert_eq!(requests[1][1], requests[0][2]);
    assert_eq!(requests[1][2]["content"], first["reply"]);
    assert_eq!(requests[1][4]["content"], "And how soon are refunds paid?");
}

#[tokio::test]
async fn instances_are_picked_by_id_or_caller_phone() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, _) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "desk", "name": "Desk", "systemPrompt": "You work at the {{store}} store.", "maxTokens": 24}),
    ))
    .await;
    assert_eq!(status, 201);
    let (_, instance) = call(server.post(
        "/v1/agents/desk/instances",
        &key,
        json!({"phoneNumber": "+14155550100", "variables": {"store": "Downtown"}}),
    ))
    .await;
    let instance_id = instance["id"].as_str().unwrap();

    let (status, by_phone) = chat(
        &server,
        &key,
        "desk",
        json!({"message": "Hi", "callerPhone": "+14155550100"}),
    )
    .await;
    assert_eq!(status, 200, "{by_phone}");
    assert_eq!(by_phone["instanceId"], instance_id);
    // The conversation keeps its instance on later turns.
    let (_, later) = chat(
        &server,
        &key,
        "desk",
        json!({"message": "Thanks", "conversationId": by_phone["conversationId"]}),
    )
    .await;
    assert_eq!(later["instanceId"], instance_id);

    let (_, by_id) = chat(
        &server,
        &key,
        "desk",
        json!({"message": "Hi", "instanceId": instance_id}),
    )
    .await;
    assert_eq!(by_id["instanceId"], instance_id);
    let (_, unknown_phone) = chat(
        &server,
        &key,
        "desk",
        json!({"message": "Hi", "callerPhone": "+14155559999"}),
    )
    .await;
    assert_eq!(
        unknown_phone["instanceId"],
        Value::Null,
        "an unknown caller gets the plain agent"
    );
    let (status, error) = chat(
        &server,
        &key,
        "desk",
        json!({"message": "Hi", "instanceId": "inst_nope"}),
    )
    .await;
    assert_invalid(status, &error, "instanceId", "an unknown instance");
}

#[tokio::test]
async fn chat_requests_are_validated_and_scoped() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, _) =
        call(server.post("/v1/agents", &key, json!({"id": "desk", "name": "Desk"}))).await;
    assert_eq!(status, 201);
    for (body, param) in [
        (json!({}), "message"),
        (json!({"message": ""}), "message"),
        (json!({"message": "x".repeat(10_001)}), "message"),
        (json!({"message": "hi", "maxSteps": 0}), "maxSteps"),
        (json!({"message": "hi", "maxSteps": 9}), "maxSteps"),
        (
            json!({"message": "hi", "callerPhone": "555-0100"}),
            "callerPhone",
        ),
    ] {
        let (status, error) = chat(&server, &key, "desk", body.clone()).await;
        assert_invalid(status, &error, param, &short(&body));
    }
    let (status, body) = chat(
        &server,
        &key,
        "desk",
        json!({"message": "hi", "conversationId": "conv_nope"}),
    )
    .await;
    assert_not_found(status, &body, "an unknown conversation");
    let (status, body) = chat(&server, &key, "nobody", json!({"message": "hi"})).await;
    assert_not_found(status, &body, "an unknown agent");

    let (_, mine) = chat(&server, &key, "desk", json!({"message": "hi"})).await;
    let stranger = server.storage.create_key("dev_other");
    let (status, _) = call(server.post(
        "/v1/agents",
        &stranger,
        json!({"id": "desk", "name": "Desk"}),
    ))
    .await;
    assert_eq!(status, 201, "ids are per developer");
    let (status, body) = chat(
        &server,
        &stranger,
        "desk",
        json!({"message": "hi", "conversationId": mine["conversationId"]}),
    )
    .await;
    assert_not_found(status, &body, "another developer's conversation");
}
