//! Isolation between developers, swept over the whole API: developer A owns one of every
//! resource; developer B tries every verb of every route that names one of them and gets 404
//! `not_found` (never 403, never 200, never A's data); B's lists never show A's rows; and A's
//! resources are unchanged afterwards. The sweep is checked against `/openapi.json`, so a new
//! route with a path parameter fails this test until it is swept (or listed with the reason
//! it names nothing a developer owns).

mod common;
#[path = "common/twilio_mock.rs"]
mod twilio_mock;

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::multipart::{Form, Part};
use reqwest::Method;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use common::*;
use twilio_mock::TwilioMock;

/// Paths with a parameter that name nothing a developer owns, and why.
const NOT_OWNED: &[(&str, &str)] = &[
    (
        "/v1/provider-keys/{provider}",
        "a vendor id, not an owned id: swept below as B deleting its own (absent) key",
    ),
    (
        "/v1/provider-keys/{provider}/verify",
        "a vendor id, not an owned id: swept below as B verifying its own (absent) key",
    ),
    (
        "/v1/sessions/twilio/task/{taskId}/connect",
        "Twilio's webhook, proven by X-Twilio-Signature, not by a developer's key",
    ),
    (
        "/v1/sessions/twilio/task/{taskId}/status",
        "Twilio's webhook, proven by X-Twilio-Signature, not by a developer's key",
    ),
    (
        "/v1/sessions/twilio/task/{taskId}/amd",
        "Twilio's webhook, proven by X-Twilio-Signature, not by a developer's key",
    ),
    (
        "/v1/sessions/twilio/transfers/{sessionId}/dialed",
        "Twilio's webhook, proven by X-Twilio-Signature, not by a developer's key",
    ),
    (
        "/v1/sessions/twilio/transfers/{sessionId}/person",
        "Twilio's webhook, proven by X-Twilio-Signature, not by a developer's key",
    ),
    (
        "/v1/models/{model}",
        "a model of the server's catalog, the same for every developer",
    ),
    ("/widget/{file}", "the widget's public static files"),
];

/// What A owns, by the name of the path parameter that names it.
struct Owned {
    agent: String,
    instance: String,
    collection: String,
    document: String,
    key_id: String,
    number: String,
    session: String,
    task: String,
    /// Twilio's SID of A's outbound call.
    call_sid: String,
    job: String,
    conversation: String,
    webhook: String,
    campaign: String,
}

impl Owned {
    fn fill(&self, template: &str) -> String {
        template
            .replace(
                "{id}/instances/{instanceId}",
                &format!("{}/instances/{}", self.agent, self.instance),
            )
            .replace("/agents/{id}", &format!("/agents/{}", self.agent))
            .replace(
                "/collections/{id}/documents/{documentId}",
                &format!(
                    "/collections/{}/documents/{}",
                    self.collection, self.document
                ),
            )
            .replace(
                "/collections/{id}",
                &format!("/collections/{}", self.collection),
            )
            .replace("/keys/{id}", &format!("/keys/{}", self.key_id))
            .replace("/webhooks/{id}", &format!("/webhooks/{}", self.webhook))
            .replace("/campaigns/{id}", &format!("/campaigns/{}", self.campaign))
            .replace(
                "/phone-numbers/{id}",
                &format!("/phone-numbers/{}", self.number),
            )
            .replace("{sessionId}", &self.session)
            .replace("{callId}", &self.session)
            .replace("{taskId}", &self.task)
            .replace("{callSid}", &self.call_sid)
            .replace("{jobId}", &self.job)
    }
}

/// Every verb B tries on a route naming A's resource, with a body valid for B's own.
fn attempts() -> Vec<(Method, &'static str, Option<Value>)> {
    let agent_fields = json!({"name": "Taken over"});
    vec![
        (Method::GET, "/v1/agents/{id}", None),
        (Method::PUT, "/v1/agents/{id}", Some(agent_fields)),
        (Method::DELETE, "/v1/agents/{id}", None),
        (
            Method::POST,
            "/v1/agents/{id}/chat",
            Some(json!({"message": "Hello"})),
        ),
        (
            Method::POST,
            "/v1/agents/{id}/speak",
            Some(json!({"text": "Hello"})),
        ),
        (Method::POST, "/v1/agents/{id}/sync", Some(json!({}))),
        (
            Method::POST,
            "/v1/agents/{id}/session-token",
            Some(json!({})),
        ),
        (Method::GET, "/v1/agents/{id}/instances", None),
        (
            Method::POST,
            "/v1/agents/{id}/instances",
            Some(json!({"name": "Mine"})),
        ),
        (Method::GET, "/v1/agents/{id}/instances/{instanceId}", None),
        (
            Method::PUT,
            "/v1/agents/{id}/instances/{instanceId}",
            Some(json!({"name": "Mine"})),
        ),
        (
            Method::DELETE,
            "/v1/agents/{id}/instances/{instanceId}",
            None,
        ),
        (Method::GET, "/v1/collections/{id}", None),
        (Method::DELETE, "/v1/collections/{id}", None),
        (
            Method::POST,
            "/v1/collections/{id}/ingest",
            Some(json!({"content": "Planted by another developer."})),
        ),
        (
            Method::POST,
            "/v1/collections/{id}/search",
            Some(json!({"query": "returns", "threshold": 0.0})),
        ),
        (
            Method::DELETE,
            "/v1/collections/{id}/documents/{documentId}",
            None,
        ),
        (Method::DELETE, "/v1/keys/{id}", None),
        (Method::POST, "/v1/keys/{id}/rotate", Some(json!({}))),
        (Method::GET, "/v1/phone-numbers/{id}", None),
        (
            Method::PUT,
            "/v1/phone-numbers/{id}",
            Some(json!({"name": "Mine"})),
        ),
        (Method::DELETE, "/v1/phone-numbers/{id}", None),
        (
            Method::POST,
            "/v1/phone-numbers/{id}/verify",
            Some(json!({"code": "123456"})),
        ),
        (Method::GET, "/v1/observability/sessions/{sessionId}", None),
        (
            Method::GET,
            "/v1/observability/sessions/{sessionId}/root-cause",
            None,
        ),
        (Method::GET, "/v1/observability/calls/{callId}", None),
        (
            Method::GET,
            "/v1/observability/calls/{callId}/root-cause",
            None,
        ),
        (Method::GET, "/v1/recordings/{callId}", None),
        (Method::GET, "/v1/sessions/twilio/tasks/{taskId}", None),
        (
            Method::POST,
            "/v1/sessions/twilio/{callSid}/hangup",
            Some(json!({})),
        ),
        (
            Method::POST,
            "/v1/sessions/twilio/{callSid}/transfer",
            Some(json!({"number": "+15550000009"})),
        ),
        (Method::GET, "/v1/transcribe/{jobId}", None),
        (Method::GET, "/v1/webhooks/{id}", None),
        (Method::DELETE, "/v1/webhooks/{id}", None),
        (Method::GET, "/v1/webhooks/{id}/deliveries", None),
        (Method::GET, "/v1/campaigns/{id}", None),
        (Method::POST, "/v1/campaigns/{id}/pause", Some(json!({}))),
        (Method::POST, "/v1/campaigns/{id}/resume", Some(json!({}))),
        (Method::POST, "/v1/campaigns/{id}/cancel", Some(json!({}))),
    ]
}

/// A's resources as A reads them: compared before and after B's attempts.
async fn snapshot(server: &Server, key: &str, owned: &Owned) -> Vec<(String, u16, Value)> {
    let mut seen = Vec::new();
    for path in [
        "/v1/agents/{id}",
        "/v1/agents/{id}/instances/{instanceId}",
        "/v1/collections/{id}",
        "/v1/phone-numbers/{id}",
        "/v1/observability/sessions/{sessionId}",
        "/v1/sessions/twilio/tasks/{taskId}",
        "/v1/transcribe/{jobId}",
        "/v1/webhooks/{id}",
        "/v1/webhooks",
        "/v1/campaigns/{id}",
        "/v1/campaigns",
        "/v1/agents",
        "/v1/agents/{id}/instances",
        "/v1/collections",
        "/v1/phone-numbers",
        "/v1/provider-keys",
        "/v1/observability/sessions",
    ] {
        let path = owned.fill(path);
        let (status, body) = call(server.get(&path, key)).await;
        seen.push((path, status, body));
    }
    // Keys: lastUsedAt moves with every request A makes, so compare the rest.
    let (status, mut keys) = call(server.get("/v1/keys?limit=100", key)).await;
    for entry in keys["data"].as_array_mut().into_iter().flatten() {
        entry.as_object_mut().unwrap().remove("lastUsedAt");
    }
    seen.push(("/v1/keys".into(), status, keys));
    let (status, found) = call(server.post(
        &owned.fill("/v1/collections/{id}/search"),
        key,
        json!({"query": "How long do refunds take?", "threshold": 0.0, "limit": 100}),
    ))
    .await;
    seen.push(("search".into(), status, found));
    seen
}

async fn provision_a(server: &Server, twilio: &TwilioMock, key: &str) -> Owned {
    let (status, provisioned) = call(server.post(
        "/v1/agents/provision",
        key,
        json!({
            "name": "A's desk",
            "initialContent": [{"content": "Refunds are paid within 5 business days."}]
        }),
    ))
    .await;
    assert_eq!(status, 201, "{provisioned}");
    let agent = provisioned["agent"]["id"].as_str().unwrap().to_string();
    let collection = provisioned["collection"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let document = provisioned["ingestResults"][0]["documentId"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, instance) = call(server.post(
        &format!("/v1/agents/{agent}/instances"),
        key,
        json!({"name": "Alice", "phoneNumber": "+15550000001", "context": "Alice's account."}),
    ))
    .await;
    assert_eq!(status, 201, "{instance}");
    let (status, number) = call(server.post(
        "/v1/phone-numbers",
        key,
        json!({"phoneNumber": "+15550000100", "agentId": agent}),
    ))
    .await;
    assert_eq!(status, 201, "{number}");
    // A proves the number with the code texted to it, so it may be A's caller id.
    let code = twilio.last_code_for("+15550000100").unwrap();
    let (status, verified) = call(server.post(
        &format!(
            "/v1/phone-numbers/{}/verify",
            number["id"].as_str().unwrap()
        ),
        key,
        json!({"code": code}),
    ))
    .await;
    assert_eq!(status, 200, "{verified}");
    let (status, new_key) = call(server.post("/v1/keys", key, json!({"name": "A's spare"}))).await;
    assert_eq!(status, 201, "{new_key}");
    let (status, stored) = call(server.post(
        "/v1/provider-keys",
        key,
        json!({"provider": "openai", "apiKey": "sk-a-secret-of-developer-a"}),
    ))
    .await;
    assert!(status == 200 || status == 201, "{stored}");
    let (status, task) = call(server.post(
        "/v1/sessions/twilio/outbound",
        key,
        json!({"agentId": agent, "to": "+15550000002", "from": "+15550000100"}),
    ))
    .await;
    assert_eq!(status, 201, "{task}");
    let form = Form::new().part(
        "file",
        Part::bytes(fixture("jfk.flac")).file_name("jfk.flac"),
    );
    let (status, job) = call(
        server
            .request(Method::POST, "/v1/transcribe/async", key)
            .multipart(form.text("mode", "fast")),
    )
    .await;
    assert_eq!(status, 202, "{job}");
    let (status, chat) = call(server.post(
        &format!("/v1/agents/{agent}/chat"),
        key,
        json!({"message": "How long do refunds take?"}),
    ))
    .await;
    assert_eq!(status, 200, "{chat}");
    let (status, webhook) = call(server.post(
        "/v1/webhooks",
        key,
        json!({"url": "https://hooks.example.com/a", "events": ["call.ended"]}),
    ))
    .await;
    assert_eq!(status, 201, "{webhook}");
    let (status, campaign) = call(server.post(
        "/v1/campaigns",
        key,
        json!({"agentId": agent, "from": "+15550000100", "contacts": [{"to": "+15550000003"}]}),
    ))
    .await;
    assert_eq!(status, 201, "{campaign}");
    let campaign = campaign["id"].as_str().unwrap().to_string();
    // Its one call placed, so that nothing of it moves while B tries.
    for _ in 0..100 {
        let (_, body) = call(server.get(&format!("/v1/campaigns/{campaign}"), key)).await;
        if body["contacts"][0]["taskId"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Owned {
        campaign,
        webhook: webhook["id"].as_str().unwrap().to_string(),
        session: direct_session(server, key, &agent).await,
        agent,
        instance: instance["id"].as_str().unwrap().to_string(),
        collection,
        document,
        key_id: new_key["id"].as_str().unwrap().to_string(),
        number: number["id"].as_str().unwrap().to_string(),
        task: task["taskId"].as_str().unwrap().to_string(),
        call_sid: task["callSid"].as_str().unwrap().to_string(),
        job: job["id"].as_str().unwrap().to_string(),
        conversation: chat["conversationId"].as_str().unwrap().to_string(),
    }
}

/// Opens and closes a direct session with the agent; answers its id once it has ended.
async fn direct_session(server: &Server, key: &str, agent: &str) -> String {
    let url = server
        .url(&format!("/v1/agents/{agent}/session"))
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
                break event["sessionId"].as_str().unwrap().to_string();
            }
        }
    };
    socket.close(None).await.ok();
    for _ in 0..100 {
        let (status, body) =
            call(server.get(&format!("/v1/observability/sessions/{session}"), key)).await;
        if status == 200 && body["status"] != "active" {
            return session;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the session {session} did not end");
}

#[tokio::test]
async fn another_developer_gets_404_for_every_verb_on_every_owned_route() {
    let twilio = TwilioMock::start();
    let env: Vec<(String, String)> = twilio.sms_env("+15005550006");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start_with(Storage::fresh().await, &env).await;
    let a = server.key().to_string();
    let b = server.storage.create_key("dev_b");
    let owned = provision_a(&server, &twilio, &a).await;

    // Every parameterised path of the API is either swept here or named as not owned.
    let (status, document) = call(server.http.get(server.url("/openapi.json"))).await;
    assert_eq!(status, 200);
    let swept: BTreeSet<&str> = attempts().iter().map(|(_, path, _)| *path).collect();
    let not_owned: BTreeSet<&str> = NOT_OWNED.iter().map(|(path, _)| *path).collect();
    // The socket route is swept separately below.
    let socket = "/v1/agents/{id}/session";
    let mut missing = Vec::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        if !path.contains('{') || not_owned.contains(path.as_str()) || path == socket {
            continue;
        }
        if !swept.contains(path.as_str()) {
            missing.push(path.clone());
            continue;
        }
        for method in operations.as_object().unwrap().keys() {
            let covered = attempts()
                .iter()
                .any(|(m, p, _)| p == path && m.as_str().eq_ignore_ascii_case(method));
            if !covered {
                missing.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "routes with an owned id that the isolation sweep does not cover: {missing:?}"
    );

    let before = snapshot(&server, &a, &owned).await;
    for (method, template, body) in attempts() {
        let path = owned.fill(template);
        let mut request = server.request(method.clone(), &path, &b);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let (status, answer) = call(request).await;
        assert_not_found(status, &answer, &format!("B: {method} {template}"));
        let text = answer.to_string();
        assert!(
            !text.contains("A's desk") && !text.contains("Refunds are paid"),
            "B: {method} {template} leaks A's data: {text}"
        );
    }
    // References to A's resources inside B's own requests are as unknown as ids that exist
    // nowhere: the same refusal (status, code and field) as for a made-up id, never success
    // and never 403.
    let (status, b_agent) = call(server.post("/v1/agents", &b, json!({"name": "B's agent"}))).await;
    assert_eq!(status, 201, "{b_agent}");
    let b_agent = b_agent["id"].as_str().unwrap().to_string();
    let made_up = "zz_does_not_exist";
    for (case, path, body, field) in [
        (
            "B continues A's conversation",
            format!("/v1/agents/{b_agent}/chat"),
            json!({"message": "What did I say?", "conversationId": owned.conversation}),
            "conversationId",
        ),
        (
            "B uses A's instance",
            format!("/v1/agents/{b_agent}/chat"),
            json!({"message": "Who am I?", "instanceId": owned.instance}),
            "instanceId",
        ),
        (
            "B attaches A's collection",
            format!("/v1/agents/{b_agent}"),
            json!({"collectionId": owned.collection}),
            "collectionId",
        ),
        (
            "B routes a number to A's agent",
            "/v1/phone-numbers".to_string(),
            json!({"phoneNumber": "+15550000200", "agentId": owned.agent}),
            "agentId",
        ),
        (
            "B calls out with A's agent",
            "/v1/sessions/twilio/outbound".to_string(),
            json!({"agentId": owned.agent, "to": "+15550000003", "from": "+15550000100"}),
            "agentId",
        ),
        (
            "B sets up a phone session with A's agent",
            "/v1/sessions/twilio".to_string(),
            json!({"agentId": owned.agent, "from": "+15550000004", "to": "+15550000100"}),
            "agentId",
        ),
    ] {
        let method = if path.ends_with(&b_agent) {
            Method::PUT
        } else {
            Method::POST
        };
        let (status, answer) = call(server.request(method.clone(), &path, &b).json(&body)).await;
        let mut unknown = body.clone();
        unknown[field] = json!(made_up);
        let (expected, refusal) = call(server.request(method, &path, &b).json(&unknown)).await;
        assert!(status == 400 || status == 404, "{case} → {status} {answer}");
        assert_eq!(
            (status, error_code(&answer), &answer["error"]["param"]),
            (expected, error_code(&refusal), &refusal["error"]["param"]),
            "{case}: A's id is told apart from a made-up one: {answer} / {refusal}"
        );
    }
    // B's own vendor key routes name B's keys only: A's stored key is not B's to use or drop.
    for (method, path) in [
        (Method::POST, "/v1/provider-keys/openai/verify"),
        (Method::DELETE, "/v1/provider-keys/openai"),
    ] {
        let (status, answer) = call(server.request(method.clone(), path, &b)).await;
        assert_not_found(status, &answer, &format!("B: {method} {path}"));
    }
    // B cannot open a session with A's agent.
    let url = server
        .url(&format!("/v1/agents/{}/session", owned.agent))
        .replacen("http://", "ws://", 1);
    let mut request = url.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {b}").parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(
                response.status().as_u16(),
                404,
                "B opens A's agent's socket"
            )
        }
        other => panic!("B opened a session with A's agent: {:?}", other.map(|_| ())),
    }

    // B's lists hold none of A's rows.
    for path in [
        "/v1/agents",
        "/v1/collections",
        "/v1/keys",
        "/v1/phone-numbers",
        "/v1/observability/sessions",
        "/v1/webhooks",
        "/v1/campaigns",
    ] {
        let ids = all_ids_at(&server, &b, path, 100).await;
        for own in [
            &owned.campaign,
            &owned.webhook,
            &owned.agent,
            &owned.collection,
            &owned.key_id,
            &owned.number,
            &owned.session,
        ] {
            assert!(!ids.contains(own), "B's {path} lists A's {own}: {ids:?}");
        }
    }
    let (status, stored) = call(server.get("/v1/provider-keys", &b)).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        stored["data"],
        json!([]),
        "B sees A's provider keys: {stored}"
    );
    let (status, quality) =
        call(server.get("/v1/observability/sessions/interruption-quality", &b)).await;
    assert_eq!(status, 200, "{quality}");
    assert_eq!(
        quality["sessions"], 0,
        "B's aggregates count A's sessions: {quality}"
    );
    let (status, usage) = call(server.get("/v1/usage", &b)).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(
        usage["breakdown"]["rag"], 0.0,
        "B is charged for A's work: {usage}"
    );

    // A's resources are as they were.
    let after = snapshot(&server, &a, &owned).await;
    for ((path, status_before, body_before), (_, status_after, body_after)) in
        before.iter().zip(after.iter())
    {
        assert_eq!(status_before, status_after, "A's {path}");
        // The job may have finished meanwhile; everything else is untouched.
        if path.starts_with("/v1/transcribe/") {
            continue;
        }
        assert_eq!(body_before, body_after, "A's {path} changed");
    }
    let (status, _) = call(server.get("/v1/usage", &a)).await;
    assert_eq!(status, 200, "A's key still works");
}
