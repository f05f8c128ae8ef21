//! Outbound campaigns against the real server and the local Twilio stand-in: the calls are
//! placed no more than `maxConcurrent` at a time, each contact's outcome (reported by
//! Twilio's signed status callbacks) is kept, no-answers are tried again by the retry policy,
//! the campaign completes once every contact has an end, a contact's variables reach the
//! agent on its call, and pausing and cancelling stop new calls.

mod common;
#[path = "common/media_stream.rs"]
mod media_stream;
#[path = "common/twilio_mock.rs"]
mod twilio_mock;

use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;
use twilio_mock::{form, signed, twilio_post, TwilioMock, TwilioRequest, ACCOUNT_SID};

const CALLER_ID: &str = "+14155550199";
const CONTACTS: [&str; 4] = [
    "+14155550101",
    "+14155550102",
    "+14155550103",
    "+14155550104",
];

/// The server with Twilio on the stand-in, campaigns looked at every 100 ms, a `dialer`
/// agent whose greeting names the contact, and the caller id proven.
async fn dialer(mock: &TwilioMock) -> (Server, String) {
    dialer_on(mock, Storage::fresh().await, &[]).await
}

/// The environment of a dialing node: Twilio on the stand-in, campaigns looked at every
/// 100 ms, and `extra`.
fn dialer_env(mock: &TwilioMock, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = mock.sms_env("+15005550006");
    env.push(("SWITCHBOARD__CAMPAIGNS__POLL_MS".into(), "100".into()));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

/// [`dialer`] on `storage`, with `extra` in the environment.
async fn dialer_on(
    mock: &TwilioMock,
    storage: Storage,
    extra: &[(&str, &str)],
) -> (Server, String) {
    let env = dialer_env(mock, extra);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start_with(storage, &env).await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "dialer", "name": "Reminder", "firstMessage": "Hello {{name}}, this is the clinic."}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, route) = call(server.post(
        "/v1/phone-numbers",
        &key,
        json!({"phoneNumber": CALLER_ID, "agentId": "dialer"}),
    ))
    .await;
    assert_eq!(status, 201, "{route}");
    let code = mock.last_code_for(CALLER_ID).expect("a code was texted");
    let (status, verified) = call(server.post(
        &format!("/v1/phone-numbers/{}/verify", route["id"].as_str().unwrap()),
        &key,
        json!({"code": code}),
    ))
    .await;
    assert_eq!(status, 200, "{verified}");
    (server, key)
}

/// The calls Twilio was asked to place, in order.
fn placed(mock: &TwilioMock) -> Vec<TwilioRequest> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/Calls.json"))
        .collect()
}

/// Waits until Twilio has been asked for `count` calls; answers them.
async fn wait_for_calls(mock: &TwilioMock, count: usize) -> Vec<TwilioRequest> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let calls = placed(mock);
        if calls.len() >= count {
            return calls;
        }
        assert!(
            Instant::now() < deadline,
            "{count} calls were not placed; got {}",
            calls.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn campaign(server: &Server, key: &str, id: &str) -> Value {
    let (status, body) = call(server.get(&format!("/v1/campaigns/{id}"), key)).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The campaign once it is completed (within 10 s).
async fn completed(server: &Server, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = campaign(server, key, id).await;
        if body["status"] == "completed" {
            return body;
        }
        assert!(Instant::now() < deadline, "not completed: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The contact called at `to`, once its call's task is known.
async fn contact_called(server: &Server, key: &str, id: &str, to: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = campaign(server, key, id).await;
        let contact = body["contacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["to"] == to)
            .cloned()
            .unwrap();
        if contact["status"] == "calling" && contact["taskId"].is_string() {
            return contact;
        }
        assert!(
            Instant::now() < deadline,
            "{to} is not being called: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Twilio reporting that the call of task `task_id` ended with `status`, signed.
async fn report(server: &Server, task_id: &str, call_sid: &str, status: &str) {
    let path = format!("/v1/sessions/twilio/task/{task_id}/status");
    let params = form(&[
        ("AccountSid", ACCOUNT_SID),
        ("CallSid", call_sid),
        ("CallStatus", status),
        ("SequenceNumber", "3"),
        ("CallDuration", "0"),
    ]);
    let response = twilio_post(server, &path, &params, signed(server, &path, &params)).await;
    assert_eq!(response.status(), 204, "{status}");
}

/// Reports the end of `to`'s current call as `status`.
async fn end_call(server: &Server, key: &str, id: &str, to: &str, status: &str) {
    let contact = contact_called(server, key, id, to).await;
    let task_id = contact["taskId"].as_str().unwrap();
    let (_, task) = call(server.get(&format!("/v1/sessions/twilio/tasks/{task_id}"), key)).await;
    report(server, task_id, task["callSid"].as_str().unwrap(), status).await;
}

/// Waits until the campaign's counts say `calling` calls are in progress.
async fn calling(server: &Server, key: &str, id: &str, count: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let body = campaign(server, key, id).await;
        let now = body["counts"]["calling"].as_i64().unwrap();
        assert!(now <= 2, "more calls at once than maxConcurrent: {body}");
        if now == count {
            return body;
        }
        assert!(Instant::now() < deadline, "not {count} calling: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_campaign_calls_within_its_concurrency_retries_and_reports_each_contact() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    let contacts: Vec<Value> = CONTACTS
        .iter()
        .zip(["Ada", "Ben", "Cy", "Di"])
        .map(|(to, name)| json!({"to": to, "variables": {"name": name}}))
        .collect();
    let (status, created) = call(server.post(
        "/v1/campaigns",
        &key,
        json!({"agentId": "dialer", "from": CALLER_ID, "name": "Reminders", "contacts": contacts,
               "maxConcurrent": 2, "retry": {"maxAttempts": 2, "delaySeconds": 1, "on": ["no-answer"]}}),
    ))
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("cmp_"), "{created}");
    assert_eq!(created["status"], "active", "{created}");
    assert_eq!(
        created["retry"],
        json!({"maxAttempts": 2, "delaySeconds": 1, "on": ["no-answer"]})
    );
    assert_eq!(created["contacts"][1]["variables"], json!({"name": "Ben"}));

    // Two at once, in the order given, from the caller id.
    let calls = wait_for_calls(&mock, 2).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        placed(&mock).len(),
        2,
        "no third call while two are in progress"
    );
    let called: Vec<&str> = calls.iter().map(|c| c.param("To").unwrap()).collect();
    assert_eq!(called, [CONTACTS[0], CONTACTS[1]]);
    assert!(calls.iter().all(|c| c.param("From") == Some(CALLER_ID)));
    calling(&server, &key, &id, 2).await;

    // The first is answered; the second rings out and will be tried again.
    end_call(&server, &key, &id, CONTACTS[0], "completed").await;
    end_call(&server, &key, &id, CONTACTS[1], "no-answer").await;
    let calls = wait_for_calls(&mock, 4).await;
    let called: Vec<&str> = calls[2..].iter().map(|c| c.param("To").unwrap()).collect();
    assert_eq!(
        called,
        [CONTACTS[2], CONTACTS[3]],
        "the waiting contacts first"
    );
    let body = calling(&server, &key, &id, 2).await;
    let ben = &body["contacts"][1];
    assert_eq!(ben["status"], "pending", "{body}");
    assert_eq!(ben["lastOutcome"], "no-answer", "{body}");
    assert!(ben["nextAttemptAt"].is_string(), "{body}");

    // A busy line is not in the retry policy: it ends there. The no-answer gets its second
    // call once a line is free.
    end_call(&server, &key, &id, CONTACTS[3], "busy").await;
    let calls = wait_for_calls(&mock, 5).await;
    assert_eq!(calls[4].param("To"), Some(CONTACTS[1]), "the retry");
    end_call(&server, &key, &id, CONTACTS[2], "completed").await;
    end_call(&server, &key, &id, CONTACTS[1], "no-answer").await;

    // Every contact has its end: the campaign is completed, and stays so.
    let body = completed(&server, &key, &id).await;
    assert!(body["completedAt"].is_string(), "{body}");
    assert_eq!(
        body["counts"],
        json!({"pending": 0, "calling": 0, "completed": 2, "noAnswer": 1, "busy": 1,
               "failed": 0, "canceled": 0}),
        "{body}"
    );
    let ends: Vec<(&str, i64)> = body["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["status"].as_str().unwrap(),
                c["attempts"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("completed", 1),
            ("no-answer", 2),
            ("completed", 1),
            ("busy", 1)
        ]
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(placed(&mock).len(), 5, "nothing more is called");

    // Lists show it with its counts but without the contacts.
    let (status, list) = call(server.get("/v1/campaigns", &key)).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"][0]["id"], id.as_str(), "{list}");
    assert_eq!(list["data"][0]["counts"]["completed"], 2, "{list}");
    assert!(list["data"][0].get("contacts").is_none(), "{list}");
    // A finished campaign cannot be paused; another developer cannot see it.
    let (status, answer) =
        call(server.post(&format!("/v1/campaigns/{id}/pause"), &key, json!({}))).await;
    assert_eq!(status, 409, "{answer}");
    let other = server.storage.create_key("dev_other");
    let (status, answer) = call(server.get(&format!("/v1/campaigns/{id}"), &other)).await;
    assert_not_found(status, &answer, "another developer's campaign");
}

#[tokio::test]
async fn a_contacts_variables_reach_the_agent_on_its_call() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    let (status, created) = call(server.post(
        "/v1/campaigns",
        &key,
        json!({"agentId": "dialer", "from": CALLER_ID,
               "contacts": [{"to": CONTACTS[0], "variables": {"name": "Ada Lovelace"}}]}),
    ))
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    wait_for_calls(&mock, 1).await;
    let contact = contact_called(&server, &key, &id, CONTACTS[0]).await;
    let task_id = contact["taskId"].as_str().unwrap();
    let (_, task) = call(server.get(&format!("/v1/sessions/twilio/tasks/{task_id}"), &key)).await;
    let call_sid = task["callSid"].as_str().unwrap();

    // The callee answers: Twilio fetches the connect markup and opens the stream.
    let path = format!("/v1/sessions/twilio/task/{task_id}/connect");
    let answer = form(&[
        ("CallSid", call_sid),
        ("From", CALLER_ID),
        ("To", CONTACTS[0]),
        ("CallStatus", "in-progress"),
    ]);
    let response = twilio_post(&server, &path, &answer, signed(&server, &path, &answer)).await;
    assert_eq!(response.status(), 200);
    let markup = response.text().await.unwrap();
    let attribute = |after: &str| {
        markup
            .split(after)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("{after} in {markup}"))
            .to_string()
    };
    let (url, token) = (
        attribute("<Stream url=\""),
        attribute("name=\"token\" value=\""),
    );
    let mut live = media_stream::open_stream(&url, &token, call_sid).await;
    // The greeting plays out: its marks come back as Twilio sends them, until the agent is
    // quiet.
    let mut frames = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let quiet = if frames == 0 { 30_000 } else { 1_500 };
        let next = tokio::time::timeout(Duration::from_millis(quiet), live.next()).await;
        let Ok(Some(Ok(Message::Text(text)))) = next else {
            break;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        match event["event"].as_str() {
            Some("media") => frames += 1,
            Some("mark") => {
                let name = event["mark"]["name"].as_str().unwrap();
                live.send(media_stream::mark_echo(name)).await.unwrap();
            }
            _ => {}
        }
    }
    assert!(frames > 0, "the agent greeted the callee");

    // The callee asks for a person, who does not answer: the call comes back to the agent in
    // a new session, which goes on as the same task (and so with the contact's variables).
    let (_, task) = call(server.get(&format!("/v1/sessions/twilio/tasks/{task_id}"), &key)).await;
    let session_id = task["sessionId"].as_str().unwrap().to_string();
    let (status, body) = call(server.post(
        &format!("/v1/sessions/twilio/{call_sid}/transfer"),
        &key,
        json!({"number": "+14155550123"}),
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    let stop = json!({"event": "stop", "sequenceNumber": "99", "streamSid": media_stream::STREAM_SID,
                      "stop": {"accountSid": ACCOUNT_SID, "callSid": call_sid}});
    live.send(Message::text(stop.to_string())).await.unwrap();
    let session = ended_session(&server, &key, &session_id).await;
    assert!(
        session["turns"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Hello Ada Lovelace")),
        "the greeting named the contact: {session}"
    );
    let action = format!("/v1/sessions/twilio/transfers/{session_id}/dialed");
    let dialed = form(&[
        ("AccountSid", ACCOUNT_SID),
        ("CallSid", call_sid),
        ("DialCallStatus", "no-answer"),
        ("DialCallDuration", "0"),
    ]);
    let response = twilio_post(&server, &action, &dialed, signed(&server, &action, &dialed)).await;
    assert_eq!(response.status(), 200);
    let markup = response.text().await.unwrap();
    let token = markup
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no relay token in {markup}"));
    use base64::Engine as _;
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["prev"], session_id.as_str(), "{claims}");
    assert_eq!(claims["task"], task_id, "{claims}");
    drop(live);
    report(&server, task_id, call_sid, "completed").await;
    let body = completed(&server, &key, &id).await;
    assert_eq!(body["contacts"][0]["status"], "completed", "{body}");
}

#[tokio::test]
async fn pausing_holds_new_calls_and_cancelling_ends_the_waiting_contacts() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    let contacts: Vec<Value> = CONTACTS.iter().map(|to| json!({"to": to})).collect();
    let (status, created) = call(server.post(
        "/v1/campaigns",
        &key,
        json!({"agentId": "dialer", "from": CALLER_ID, "contacts": contacts}),
    ))
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    wait_for_calls(&mock, 1).await;
    let (status, paused) =
        call(server.post(&format!("/v1/campaigns/{id}/pause"), &key, json!({}))).await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["status"], "paused");
    let (status, again) =
        call(server.post(&format!("/v1/campaigns/{id}/pause"), &key, json!({}))).await;
    assert_eq!(status, 409, "{again}");
    end_call(&server, &key, &id, CONTACTS[0], "completed").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(placed(&mock).len(), 1, "no call while paused");

    let (status, resumed) =
        call(server.post(&format!("/v1/campaigns/{id}/resume"), &key, json!({}))).await;
    assert_eq!(status, 200, "{resumed}");
    wait_for_calls(&mock, 2).await;
    let (status, canceled) =
        call(server.post(&format!("/v1/campaigns/{id}/cancel"), &key, json!({}))).await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"], "canceled");
    assert_eq!(canceled["counts"]["canceled"], 2, "{canceled}");
    assert_eq!(
        canceled["counts"]["calling"], 1,
        "the call in progress goes on: {canceled}"
    );
    // Its outcome is still kept; nothing more is called.
    end_call(&server, &key, &id, CONTACTS[1], "no-answer").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(placed(&mock).len(), 2);
    let body = campaign(&server, &key, &id).await;
    assert_eq!(body["status"], "canceled", "{body}");
    assert_eq!(
        body["contacts"][1]["status"], "canceled",
        "a retry is not placed: {body}"
    );
    assert_eq!(body["contacts"][1]["lastOutcome"], "no-answer", "{body}");
}

#[tokio::test]
async fn a_bad_campaign_is_refused_naming_the_field_and_nothing_is_called() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    let good = json!({"agentId": "dialer", "from": CALLER_ID, "contacts": [{"to": CONTACTS[0]}]});
    let with = |field: &str, value: Value| {
        let mut body = good.clone();
        body[field] = value;
        body
    };
    for (body, param) in [
        (with("contacts", json!([])), "contacts"),
        (
            with("contacts", json!([{"to": "4155550101"}])),
            "contacts[0].to",
        ),
        (
            with(
                "contacts",
                json!([{"to": CONTACTS[0]}, {"to": CONTACTS[0]}]),
            ),
            "contacts[1].to",
        ),
        (
            with(
                "contacts",
                json!([{"to": CONTACTS[0], "variables": {"a": {"b": 1}}}]),
            ),
            "contacts[0].variables",
        ),
        (with("from", json!("+14155550000")), "from"),
        (with("maxConcurrent", json!(51)), "maxConcurrent"),
        (
            with("window", json!({"start": "09:00", "end": "25:00"})),
            "window",
        ),
        (
            with(
                "window",
                json!({"start": "09:00", "end": "17:00", "timezone": "Nowhere/City"}),
            ),
            "window",
        ),
        (
            with("retry", json!({"maxAttempts": 0})),
            "retry.maxAttempts",
        ),
        (with("retry", json!({"on": ["completed"]})), "retry.on"),
        (
            with("machineDetection", json!("message")),
            "voicemailMessage",
        ),
    ] {
        let (status, answer) = call(server.post("/v1/campaigns", &key, body.clone())).await;
        assert_invalid(status, &answer, param, &body.to_string());
    }
    let (status, answer) =
        call(server.post("/v1/campaigns", &key, with("agentId", json!("nobody")))).await;
    assert_not_found(status, &answer, "an unknown agent");
    // A window that opens in two hours holds the calls.
    let hour = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 3600)
        % 24;
    let closed = with(
        "window",
        json!({"start": format!("{:02}:00", (hour + 2) % 24), "end": format!("{:02}:00", (hour + 3) % 24)}),
    );
    let (status, created) = call(server.post("/v1/campaigns", &key, closed)).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["window"]["timezone"], "UTC", "{created}");
    // Left out, the policy tries no-answers and busy lines again.
    assert_eq!(
        created["retry"],
        json!({"maxAttempts": 2, "delaySeconds": 300, "on": ["no-answer", "busy"]})
    );
    assert_eq!(created["maxConcurrent"], 1, "{created}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, list) = call(server.get("/v1/campaigns", &key)).await;
    assert_eq!(
        list["data"].as_array().unwrap().len(),
        1,
        "only the valid one: {list}"
    );
    assert!(placed(&mock).is_empty(), "no call outside the window");
    assert_eq!(list["data"][0]["counts"]["pending"], 1, "{list}");
}

/// Two nodes on one PostgreSQL database race for one campaign: one runs it at a time, so no
/// contact is called twice and never more than `maxConcurrent` at once; when the node running
/// it dies, the other takes it over once the lease lapses and calls the rest, nobody twice.
/// Skipped without `SWITCHBOARD_TEST_POSTGRES_URL` (one SQLite server has no second node).
#[tokio::test]
async fn two_nodes_share_a_campaign_without_calling_anyone_twice_and_take_it_over() {
    let storage = Storage::fresh().await;
    let Some(url) = storage.database_url.clone() else {
        eprintln!("skipped: needs SWITCHBOARD_TEST_POSTGRES_URL (scripts/test sets it)");
        return;
    };
    let mock = TwilioMock::start();
    let lease = [("SWITCHBOARD__CAMPAIGNS__LEASE_SECONDS", "1")];
    let (node_a, key) = dialer_on(&mock, storage, &lease).await;
    let env = dialer_env(&mock, &lease);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let node_b = Server::start_with(
        Storage {
            data_dir: tempfile::tempdir().unwrap(),
            database_url: Some(url.clone()),
        },
        &env,
    )
    .await;
    let six: Vec<String> = (1..=6).map(|n| format!("+1415555021{n}")).collect();
    let contacts: Vec<Value> = six.iter().map(|to| json!({"to": to})).collect();
    let (status, created) = call(node_b.post(
        "/v1/campaigns",
        &key,
        json!({"agentId": "dialer", "from": CALLER_ID, "contacts": contacts, "maxConcurrent": 2,
               "retry": {"maxAttempts": 1}}),
    ))
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();

    // Both nodes look every 100 ms; only the one holding the lease calls.
    wait_for_calls(&mock, 2).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(placed(&mock).len(), 2, "two at once across both nodes");
    for to in &six[..2] {
        end_call(&node_a, &key, &id, to, "completed").await;
    }
    wait_for_calls(&mock, 4).await;

    // The node running it dies without a word; the other one finishes it.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one("SELECT runner_node FROM campaigns WHERE id = $1", &[&id])
        .await
        .unwrap();
    let runner: String = row.get(0);
    let node_of = |server: &Server| {
        std::fs::read_to_string(server.storage.data_dir.path().join("node-id")).unwrap()
    };
    let (dead, survivor) = if node_of(&node_a).trim() == runner {
        (node_a, node_b)
    } else {
        assert_eq!(node_of(&node_b).trim(), runner, "one of the two runs it");
        (node_b, node_a)
    };
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &dead.pid().to_string()])
        .status();
    drop(dead);
    for to in &six[2..4] {
        end_call(&survivor, &key, &id, to, "completed").await;
    }
    wait_for_calls(&mock, 6).await;
    for to in &six[4..] {
        end_call(&survivor, &key, &id, to, "completed").await;
    }
    let body = completed(&survivor, &key, &id).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let called: Vec<String> = placed(&mock)
        .iter()
        .map(|c| c.param("To").unwrap().to_string())
        .collect();
    assert_eq!(called, six, "each contact once, in order");
    assert!(
        body["contacts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "completed" && c["attempts"] == 1),
        "{body}"
    );
}
