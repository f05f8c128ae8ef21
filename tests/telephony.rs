//! Telephony operations against the real server and a local Twilio stand-in: outbound calls
//! placed through Twilio's REST API, the signed connect and status callbacks (valid, invalid,
//! missing and stale), the inbound voice webhook with its phone-number routing table, and
//! isolation between developers.

mod common;
#[path = "common/media_stream.rs"]
mod media_stream;
#[path = "common/twilio_mock.rs"]
mod twilio_mock;

use std::time::Duration;

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use switchboard::telephony::signature;
use tokio_tungstenite::tungstenite::Message;
use twilio_mock::{form, signed, twilio_post, TwilioMock, ACCOUNT_SID, GONE_CALL_SID};

async fn server_with_twilio(mock: &TwilioMock) -> Server {
    server_with_twilio_and(mock, &[]).await
}

/// The server, with Twilio (calls and texts) on the stand-in, and `extra` settings.
async fn server_with_twilio_and(mock: &TwilioMock, extra: &[(&str, &str)]) -> Server {
    let env = mock.sms_env("+15005550006");
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.extend_from_slice(extra);
    Server::start_with(Storage::fresh().await, &env).await
}

/// Routes `number` to `key`'s `agent` and proves it with the code texted to it, as its owner
/// would: answers the route's id.
async fn own_number(
    server: &Server,
    mock: &TwilioMock,
    key: &str,
    number: &str,
    agent: &str,
) -> String {
    let (status, route) = call(server.post(
        "/v1/phone-numbers",
        key,
        json!({"phoneNumber": number, "agentId": agent}),
    ))
    .await;
    assert_eq!(status, 201, "{route}");
    let id = route["id"].as_str().unwrap().to_string();
    let code = mock
        .last_code_for(number)
        .expect("a code was texted to the number");
    let (status, verified) = call(server.post(
        &format!("/v1/phone-numbers/{id}/verify"),
        key,
        json!({"code": code}),
    ))
    .await;
    assert_eq!(status, 200, "{verified}");
    assert_eq!(verified["verified"], true);
    id
}

/// The claims of the relay token in stream markup.
fn token_claims(markup: &str) -> Value {
    use base64::Engine as _;
    let token = markup
        .split("value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap()
}

async fn new_agent(server: &Server, key: &str, id: &str) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": id, "name": "Caller", "firstMessage": "Hello from the agent."}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

async fn task(server: &Server, key: &str, id: &str) -> Value {
    let (status, body) = call(server.get(&format!("/v1/sessions/twilio/tasks/{id}"), key)).await;
    assert_eq!(status, 200, "{body}");
    body
}

fn status_event(call_sid: &str, status: &str, sequence: u32) -> Vec<(String, String)> {
    let sequence = sequence.to_string();
    form(&[
        ("AccountSid", ACCOUNT_SID),
        ("ApiVersion", "2010-04-01"),
        ("CallSid", call_sid),
        ("CallStatus", status),
        ("CallbackSource", "call-progress-events"),
        ("Called", "+14155550100"),
        ("Caller", "+14155550199"),
        ("Direction", "outbound-api"),
        ("From", "+14155550199"),
        ("SequenceNumber", &sequence),
        ("Timestamp", "Mon, 23 Nov 2026 17:00:01 +0000"),
        ("To", "+14155550100"),
    ])
}

#[tokio::test]
async fn an_outbound_call_is_placed_connected_and_tracked_through_signed_callbacks() {
    let mock = TwilioMock::start();
    let server = server_with_twilio(&mock).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "dialer").await;
    own_number(&server, &mock, &key, "+14155550199", "dialer").await;

    let (status, placed) = call(server.post(
        "/v1/sessions/twilio/outbound",
        &key,
        json!({"agentId": "dialer", "to": "+14155550100", "from": "+14155550199", "record": true}),
    ))
    .await;
    assert_eq!(status, 201, "{placed}");
    let task_id = placed["taskId"].as_str().unwrap().to_string();
    let call_sid = placed["callSid"].as_str().unwrap().to_string();
    assert!(call_sid.starts_with("CA"), "{placed}");
    assert_eq!(placed["status"], "queued");

    // What reached Twilio, field for field.
    let requests = mock.calls();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        request.path,
        format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls.json")
    );
    assert!(request
        .content_type
        .starts_with("application/x-www-form-urlencoded"));
    assert_eq!(request.param("To"), Some("+14155550100"));
    assert_eq!(request.param("From"), Some("+14155550199"));
    let task_base = server.url(&format!("/v1/sessions/twilio/task/{task_id}"));
    assert_eq!(
        request.param("Url"),
        Some(format!("{task_base}/connect").as_str())
    );
    assert_eq!(request.param("Method"), Some("POST"));
    assert_eq!(
        request.param("StatusCallback"),
        Some(format!("{task_base}/status").as_str())
    );
    assert_eq!(
        request.params("StatusCallbackEvent"),
        ["initiated", "ringing", "answered", "completed"]
    );
    assert_eq!(request.param("Record"), Some("true"));

    let status_path = format!("/v1/sessions/twilio/task/{task_id}/status");
    let connect_path = format!("/v1/sessions/twilio/task/{task_id}/connect");

    // Twilio reports progress; a signed event moves the task.
    let ringing = status_event(&call_sid, "ringing", 1);
    let response = twilio_post(
        &server,
        &status_path,
        &ringing,
        signed(&server, &status_path, &ringing),
    )
    .await;
    assert_eq!(response.status(), 204);
    assert_eq!(task(&server, &key, &task_id).await["status"], "ringing");

    // Forged, missing or misdirected signatures are refused and change nothing.
    let completed = status_event(&call_sid, "completed", 2);
    let forged = signature::sign("not-the-token", &server.url(&status_path), &completed);
    let tampered = signed(&server, &status_path, &ringing); // signed for other parameters
    let other_url = signed(&server, &connect_path, &completed);
    for (case, signature) in [
        ("forged", Some(forged)),
        ("missing", None),
        ("empty", Some(String::new())),
        ("other parameters", tampered),
        ("other url", other_url),
        ("garbage", Some("%%%".to_string())),
    ] {
        let response = twilio_post(&server, &status_path, &completed, signature).await;
        assert_eq!(response.status(), 403, "{case}");
        let (_, body) = json_of(response).await;
        assert_eq!(error_code(&body), "forbidden", "{case}: {body}");
        assert_eq!(
            task(&server, &key, &task_id).await["status"],
            "ringing",
            "{case}"
        );
    }
    // The connect callback is guarded the same way: no markup without a valid signature.
    let answer = form(&[
        ("CallSid", &call_sid),
        ("From", "+14155550199"),
        ("To", "+14155550100"),
        ("CallStatus", "in-progress"),
    ]);
    let response = twilio_post(
        &server,
        &connect_path,
        &answer,
        Some(signature::sign("x", &server.url(&connect_path), &answer)),
    )
    .await;
    assert_eq!(response.status(), 403);

    // Answered: the connect callback answers the stream markup with a relay token.
    let response = twilio_post(
        &server,
        &connect_path,
        &answer,
        signed(&server, &connect_path, &answer),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/xml"));
    let markup = response.text().await.unwrap();
    assert!(markup.contains("<Connect><Stream url=\"ws://"), "{markup}");
    assert!(
        markup.contains("/v1/sessions/twilio/stream\"><Parameter name=\"token\" value=\""),
        "{markup}"
    );
    let current = task(&server, &key, &task_id).await;
    assert_eq!(current["status"], "in-progress");
    assert_eq!(current["callSid"], call_sid.as_str());
    assert!(current["sessionId"].as_str().unwrap().starts_with("ses_"));

    // An older event arriving late does not move the task back.
    let late = status_event(&call_sid, "ringing", 0);
    let response = twilio_post(
        &server,
        &status_path,
        &late,
        signed(&server, &status_path, &late),
    )
    .await;
    assert_eq!(response.status(), 204);
    assert_eq!(task(&server, &key, &task_id).await["status"], "in-progress");

    let mut done = status_event(&call_sid, "completed", 3);
    done.push(("CallDuration".into(), "42".into()));
    let response = twilio_post(
        &server,
        &status_path,
        &done,
        signed(&server, &status_path, &done),
    )
    .await;
    assert_eq!(response.status(), 204);
    let finished = task(&server, &key, &task_id).await;
    assert_eq!(finished["status"], "completed");
    assert_eq!(finished["durationSeconds"], 42);
    // The session set up for the call never connected a stream: it ended with the call.
    let session_id = finished["sessionId"].as_str().unwrap();
    let (status, session) =
        call(server.get(&format!("/v1/observability/sessions/{session_id}"), &key)).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["status"], "failed");
    assert_eq!(session["endReason"], "completed");
    // A completed task stays completed; a connect after the end hangs up.
    let response = twilio_post(
        &server,
        &connect_path,
        &answer,
        signed(&server, &connect_path, &answer),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("<Hangup/>"));

    // Unknown tasks are 404 even with a valid signature.
    let path = "/v1/sessions/twilio/task/task_missing/status";
    let response = twilio_post(&server, path, &done, signed(&server, path, &done)).await;
    assert_eq!(response.status(), 404);

    // Another developer cannot see the task.
    let other = server.storage.create_key("dev_other");
    let (status, body) =
        call(server.get(&format!("/v1/sessions/twilio/tasks/{task_id}"), &other)).await;
    assert_not_found(status, &body, "another developer's task");
    let (status, body) = call(server.post(
        "/v1/sessions/twilio/outbound",
        &other,
        json!({"agentId": "dialer", "to": "+14155550100", "from": "+14155550199"}),
    ))
    .await;
    assert_not_found(status, &body, "another developer's agent");
    assert_eq!(mock.calls().len(), 1, "nothing placed for a foreign agent");
}

/// Places a call for `key`'s agent `dialer` and answers its task id and call SID.
async fn place(server: &Server, key: &str) -> (String, String) {
    let (status, placed) = call(server.post(
        "/v1/sessions/twilio/outbound",
        key,
        json!({"agentId": "dialer", "to": "+14155550100", "from": "+14155550199"}),
    ))
    .await;
    assert_eq!(status, 201, "{placed}");
    (
        placed["taskId"].as_str().unwrap().to_string(),
        placed["callSid"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn a_replayed_connect_webhook_gets_no_second_relay_token() {
    let mock = TwilioMock::start();
    let server = server_with_twilio(&mock).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "dialer").await;
    own_number(&server, &mock, &key, "+14155550199", "dialer").await;
    let (task_id, call_sid) = place(&server, &key).await;
    let connect_path = format!("/v1/sessions/twilio/task/{task_id}/connect");
    let answer = form(&[
        ("CallSid", &call_sid),
        ("From", "+14155550199"),
        ("To", "+14155550100"),
        ("CallStatus", "in-progress"),
    ]);
    let signature = signed(&server, &connect_path, &answer);

    let response = twilio_post(&server, &connect_path, &answer, signature.clone()).await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("name=\"token\""));
    let session_id = task(&server, &key, &task_id).await["sessionId"].clone();

    // The same signed request again, twice at once: each is refused with markup that hangs
    // up and carries no token, and the task keeps its one session.
    let replays = futures_util::future::join_all(
        (0..2).map(|_| twilio_post(&server, &connect_path, &answer, signature.clone())),
    )
    .await;
    for response in replays {
        assert_eq!(response.status(), 409);
        assert!(response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/xml"));
        let markup = response.text().await.unwrap();
        assert!(markup.contains("<Hangup/>"), "{markup}");
        assert!(!markup.contains("token"), "{markup}");
    }
    let current = task(&server, &key, &task_id).await;
    assert_eq!(current["sessionId"], session_id);
    assert_eq!(current["status"], "in-progress");
}

#[tokio::test]
async fn outbound_calls_are_gated_on_caller_id_destination_tier_and_credits() {
    let mock = TwilioMock::start();
    let server = server_with_twilio_and(
        &mock,
        &[("SWITCHBOARD__TIERS__STARTER__MAX_CONCURRENT_SESSIONS", "1")],
    )
    .await;
    let key = server.key().to_string();
    let other = server.storage.create_key("dev_other");
    new_agent(&server, &key, "dialer").await;
    new_agent(&server, &other, "dialer").await;
    own_number(&server, &mock, &key, "+14155550199", "dialer").await;
    own_number(&server, &mock, &other, "+14155550188", "dialer").await;
    // A claim not yet proven is no caller id either.
    let (status, pending) = call(server.post(
        "/v1/phone-numbers",
        &key,
        json!({"phoneNumber": "+14155550166", "agentId": "dialer"}),
    ))
    .await;
    assert_eq!(status, 201, "{pending}");
    assert_eq!(pending["verified"], false);

    let outbound = |to: &str, from: &str| {
        server.post(
            "/v1/sessions/twilio/outbound",
            &key,
            json!({"agentId": "dialer", "to": to, "from": from}),
        )
    };
    for (to, from, param) in [
        ("+14155550100", "+14155550188", "from"), // another developer's number
        ("+14155550100", "+14155550177", "from"), // nobody's
        ("+14155550100", "+14155550166", "from"), // pending
        ("+19005550100", "+14155550199", "to"),   // US premium rate
        ("+18095550100", "+14155550199", "to"),   // a costly Caribbean code
        ("+8816555010", "+14155550199", "to"),    // satellite
    ] {
        let (status, body) = call(outbound(to, from)).await;
        assert_invalid(status, &body, param, &format!("{to} from {from}"));
    }
    assert!(mock.calls().is_empty(), "no refused call reached Twilio");

    // The tier allows one session at once: a ringing call holds it until it ends.
    let (status, first) = call(outbound("+14155550100", "+14155550199")).await;
    assert_eq!(status, 201, "{first}");
    let (status, body) = call(outbound("+14155550101", "+14155550199")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(error_code(&body), "session_limit_exceeded");
    let task_id = first["taskId"].as_str().unwrap();
    let status_path = format!("/v1/sessions/twilio/task/{task_id}/status");
    let busy = status_event(first["callSid"].as_str().unwrap(), "busy", 1);
    let response = twilio_post(
        &server,
        &status_path,
        &busy,
        signed(&server, &status_path, &busy),
    )
    .await;
    assert_eq!(response.status(), 204);
    let (status, body) = call(outbound("+14155550101", "+14155550199")).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(mock.calls().len(), 2);
    let storage = server.stop();

    // No credits, no call; an operator's allow list keeps calls to the listed prefixes.
    let server = Server::start_with(
        storage,
        &mock
            .sms_env("+15005550006")
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([
                ("SWITCHBOARD__TIERS__STARTER__MONTHLY_CREDITS", "0"),
                (
                    "SWITCHBOARD__TELEPHONY__OUTBOUND__ALLOW_PREFIXES",
                    "[\"+1415\"]",
                ),
            ])
            .collect::<Vec<_>>(),
    )
    .await;
    let key = server.storage.create_key("dev_local");
    let outbound = |to: &str| {
        server.post(
            "/v1/sessions/twilio/outbound",
            &key,
            json!({"agentId": "dialer", "to": to, "from": "+14155550199"}),
        )
    };
    let (status, body) = call(outbound("+14165550100")).await;
    assert_invalid(status, &body, "to", "a prefix outside the allow list");
    let (status, body) = call(outbound("+14155550102")).await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(error_code(&body), "insufficient_credits");
    assert_eq!(mock.calls().len(), 2, "nothing placed without credits");
}

#[tokio::test]
async fn routing_a_number_needs_the_code_texted_to_it_and_a_squatter_blocks_no_one() {
    let mock = TwilioMock::start();
    let server = server_with_twilio(&mock).await;
    let owner = server.storage.create_key("dev_owner");
    let squatter = server.storage.create_key("dev_squatter");
    new_agent(&server, &owner, "desk").await;
    new_agent(&server, &squatter, "desk").await;
    let number = "+14155550123";
    let inbound = "/v1/sessions/twilio/inbound";
    let params = form(&[
        ("AccountSid", ACCOUNT_SID),
        ("CallSid", "CA22222222222222222222222222222222"),
        ("CallStatus", "ringing"),
        ("Direction", "inbound"),
        ("From", "+14155550777"),
        ("To", number),
    ]);
    let ring = || twilio_post(&server, inbound, &params, signed(&server, inbound, &params));

    // The squatter claims the number first: a pending route, and a code texted to the number.
    let (status, claim) = call(server.post(
        "/v1/phone-numbers",
        &squatter,
        json!({"phoneNumber": number, "agentId": "desk"}),
    ))
    .await;
    assert_eq!(status, 201, "{claim}");
    assert_eq!(claim["verified"], false);
    assert!(claim["verifiedAt"].is_null());
    assert!(is_iso_millis(&claim["codeExpiresAt"]), "{claim}");
    let claim_id = claim["id"].as_str().unwrap().to_string();
    let texts = mock.messages();
    assert_eq!(texts.len(), 1);
    assert_eq!(texts[0].param("To"), Some(number));
    assert_eq!(texts[0].param("From"), Some("+15005550006"));
    let squatters_code = mock.last_code_for(number).unwrap();
    // A pending route takes no calls.
    let markup = ring().await.text().await.unwrap();
    assert!(!markup.contains("<Stream"), "{markup}");
    // Guessing costs tries.
    let wrong = if squatters_code == "000000" {
        "111111"
    } else {
        "000000"
    };
    let verify = |key: &str, id: &str, code: &str| {
        server.post(
            &format!("/v1/phone-numbers/{id}/verify"),
            key,
            json!({"code": code}),
        )
    };
    let (status, body) = call(verify(&squatter, &claim_id, wrong)).await;
    assert_invalid(status, &body, "code", "a wrong code");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4 tries left"),
        "{body}"
    );
    let (status, body) = call(verify(&squatter, &claim_id, "12345")).await;
    assert_invalid(status, &body, "code", "five digits");

    // The owner is not blocked by the pending claim: their code proves the number.
    let (status, mine) = call(server.post(
        "/v1/phone-numbers",
        &owner,
        json!({"phoneNumber": number, "agentId": "desk"}),
    ))
    .await;
    assert_eq!(status, 201, "{mine}");
    let mine_id = mine["id"].as_str().unwrap().to_string();
    let owners_code = mock.last_code_for(number).unwrap();
    // One route's code does not prove another's.
    if owners_code != squatters_code {
        let (status, body) = call(verify(&owner, &mine_id, &squatters_code)).await;
        assert_invalid(status, &body, "code", "another route's code");
    }
    let (status, verified) = call(verify(&owner, &mine_id, &owners_code)).await;
    assert_eq!(status, 200, "{verified}");
    assert_eq!(verified["verified"], true);
    assert!(is_iso_millis(&verified["verifiedAt"]));
    let markup = ring().await.text().await.unwrap();
    assert_eq!(token_claims(&markup)["dev"], "dev_owner", "{markup}");

    // Once proven, the number is the owner's: the squatter's own code is too late.
    let (status, body) = call(verify(&squatter, &claim_id, &squatters_code)).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(error_code(&body), "conflict");
    // Another's route is not found; a route's number cannot be swapped for an unproven one.
    let (status, body) = call(verify(&squatter, &mine_id, &owners_code)).await;
    assert_not_found(status, &body, "another developer's route");
    let (status, body) = call(server.put(
        &format!("/v1/phone-numbers/{mine_id}"),
        &owner,
        json!({"phoneNumber": "+14155550124"}),
    ))
    .await;
    assert_invalid(status, &body, "phoneNumber", "changing a route's number");

    // Claims waiting for their code are capped per developer (3 by default).
    for n in ["+14155550131", "+14155550132"] {
        let (status, body) = call(server.post(
            "/v1/phone-numbers",
            &squatter,
            json!({"phoneNumber": n, "agentId": "desk"}),
        ))
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let texts_before = mock.messages().len();
    let (status, body) = call(server.post(
        "/v1/phone-numbers",
        &squatter,
        json!({"phoneNumber": "+14155550133", "agentId": "desk"}),
    ))
    .await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(error_code(&body), "rate_limited");
    assert_eq!(mock.messages().len(), texts_before, "no text past the cap");
}

#[tokio::test]
async fn outbound_calls_validate_their_input_and_report_twilio_failures() {
    let mock = TwilioMock::start();
    let server = server_with_twilio(&mock).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "dialer").await;
    own_number(&server, &mock, &key, "+14155550199", "dialer").await;
    for (body, param) in [
        (
            json!({"to": "+14155550100", "from": "+14155550199"}),
            "agentId",
        ),
        (json!({"agentId": "dialer", "from": "+14155550199"}), "to"),
        (
            json!({"agentId": "dialer", "to": "4155550100", "from": "+14155550199"}),
            "to",
        ),
        (
            json!({"agentId": "dialer", "to": "+14155550100", "from": "+0"}),
            "from",
        ),
        (
            json!({"agentId": "dialer", "to": "+14155550100", "from": "+14155550199", "instanceId": "nope"}),
            "instanceId",
        ),
        (
            json!({"agentId": "dialer", "to": "+14155550100", "from": "+14155550199", "extra": 1}),
            "",
        ),
    ] {
        let (status, answer) =
            call(server.post("/v1/sessions/twilio/outbound", &key, body.clone())).await;
        assert_eq!(status, 400, "{body}: {answer}");
        if !param.is_empty() {
            assert_eq!(answer["error"]["param"], param, "{body}: {answer}");
        }
    }
    assert!(
        mock.calls().is_empty(),
        "invalid requests never reach Twilio"
    );

    // Twilio refuses the number: 400 with Twilio's reason; the task is kept as failed.
    let (status, answer) = call(server.post(
        "/v1/sessions/twilio/outbound",
        &key,
        json!({"agentId": "dialer", "to": "+15005550001", "from": "+14155550199"}),
    ))
    .await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("twilio:") && message.contains("21211"),
        "{message}"
    );
}

#[tokio::test]
async fn outbound_calls_and_webhooks_need_a_twilio_account() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key, "dialer").await;
    let (status, body) = call(server.post(
        "/v1/sessions/twilio/outbound",
        &key,
        json!({"agentId": "dialer", "to": "+14155550100", "from": "+14155550199"}),
    ))
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "unavailable");
    let params = form(&[("To", "+14155550100")]);
    let response = twilio_post(
        &server,
        "/v1/sessions/twilio/inbound",
        &params,
        Some("x".into()),
    )
    .await;
    assert_eq!(response.status(), 503);
    let hang_up = "/v1/sessions/twilio/CA11111111111111111111111111111111/hangup";
    let (status, body) = call(server.post(hang_up, &key, json!({}))).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "unavailable");

    // Twilio's webhooks carry no API key and need none; the key-guarded routes still do.
    let response = server
        .http
        .post(server.url("/v1/sessions/twilio/outbound"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn phone_numbers_route_inbound_calls_to_their_owners_agents() {
    let mock = TwilioMock::start();
    let server = server_with_twilio(&mock).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "front-desk").await;
    new_agent(&server, &key, "night-desk").await;
    let other = server.storage.create_key("dev_other");

    // CRUD with validation.
    let (status, created) = call(server.post(
        "/v1/phone-numbers",
        &key,
        json!({"phoneNumber": "+14155550123", "agentId": "front-desk", "name": "Main line"}),
    ))
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["phoneNumber"], "+14155550123");
    let code = mock.last_code_for("+14155550123").unwrap();
    let (status, verified) = call(server.post(
        &format!("/v1/phone-numbers/{id}/verify"),
        &key,
        json!({"code": code}),
    ))
    .await;
    assert_eq!(status, 200, "{verified}");
    assert_eq!(created["agentId"], "front-desk");
    assert!(is_iso_millis(&created["createdAt"]));
    for (body, param) in [
        (
            json!({"phoneNumber": "4155550123", "agentId": "front-desk"}),
            "phoneNumber",
        ),
        (
            json!({"phoneNumber": "+1415555012345678", "agentId": "front-desk"}),
            "phoneNumber",
        ),
        (json!({"agentId": "front-desk"}), "phoneNumber"),
        (json!({"phoneNumber": "+14155550124"}), "agentId"),
        (
            json!({"phoneNumber": "+14155550124", "agentId": "missing"}),
            "agentId",
        ),
        (
            json!({"phoneNumber": "+14155550124", "agentId": "front-desk", "instanceId": "nope"}),
            "instanceId",
        ),
        (
            json!({"phoneNumber": "+14155550124", "agentId": "front-desk", "name": ""}),
            "name",
        ),
    ] {
        let (status, answer) = call(server.post("/v1/phone-numbers", &key, body.clone())).await;
        assert_invalid(status, &answer, param, &body.to_string());
    }
    // A number routes to one developer only.
    let (status, body) = call(server.post(
        "/v1/phone-numbers",
        &key,
        json!({"phoneNumber": "+14155550123", "agentId": "night-desk"}),
    ))
    .await;
    assert_eq!(status, 409, "{body}");
    // Another developer cannot route to this developer's agent, nor see or change the route.
    let (status, body) = call(server.post(
        "/v1/phone-numbers",
        &other,
        json!({"phoneNumber": "+14155550999", "agentId": "front-desk"}),
    ))
    .await;
    assert_invalid(status, &body, "agentId", "another developer's agent");
    for request in [
        server.get(&format!("/v1/phone-numbers/{id}"), &other),
        server.put(
            &format!("/v1/phone-numbers/{id}"),
            &other,
            json!({"name": "Mine"}),
        ),
        server.delete(&format!("/v1/phone-numbers/{id}"), &other),
    ] {
        let (status, body) = call(request).await;
        assert_not_found(status, &body, "another developer's route");
    }
    let (status, list) = call(server.get("/v1/phone-numbers", &other)).await;
    assert_eq!(status, 200);
    assert!(list["data"].as_array().unwrap().is_empty());
    let (status, list) = call(server.get("/v1/phone-numbers?limit=1", &key)).await;
    assert_eq!(status, 200);
    assert_eq!(page_ids(&list), std::slice::from_ref(&id));
    let (status, _) = call(server.get("/v1/phone-numbers?limit=0", &key)).await;
    assert_eq!(status, 400);

    // An inbound call to the number reaches the agent: signed webhook in, stream markup out.
    let inbound = "/v1/sessions/twilio/inbound";
    let params = form(&[
        ("AccountSid", ACCOUNT_SID),
        ("ApiVersion", "2010-04-01"),
        ("CallSid", "CA11111111111111111111111111111111"),
        ("CallStatus", "ringing"),
        ("Called", "+14155550123"),
        ("Caller", "+14155550777"),
        ("Direction", "inbound"),
        ("From", "+14155550777"),
        ("To", "+14155550123"),
    ]);
    let response = twilio_post(&server, inbound, &params, signed(&server, inbound, &params)).await;
    assert_eq!(response.status(), 200);
    let markup = response.text().await.unwrap();
    assert!(
        markup.contains("<Stream url=") && markup.contains("name=\"token\""),
        "{markup}"
    );
    // The relay token names this developer's agent: the stream will run front-desk.
    let token = markup
        .split("value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let payload = token.split('.').next().unwrap();
    use base64::Engine as _;
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["agent"], "front-desk");
    assert_eq!(claims["from"], "+14155550777");

    // Repointing the number moves the next call.
    let (status, updated) = call(server.put(
        &format!("/v1/phone-numbers/{id}"),
        &key,
        json!({"agentId": "night-desk", "name": null}),
    ))
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["agentId"], "night-desk");
    assert!(updated["name"].is_null());
    let response = twilio_post(&server, inbound, &params, signed(&server, inbound, &params)).await;
    let markup = response.text().await.unwrap();
    let token = markup
        .split("value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["agent"], "night-desk");

    // A forged webhook gets nothing.
    let response = twilio_post(
        &server,
        inbound,
        &params,
        Some(signature::sign("wrong", &server.url(inbound), &params)),
    )
    .await;
    assert_eq!(response.status(), 403);

    // Deleted: the number is out of service (TwiML that says so and hangs up).
    let (status, _) = call(server.delete(&format!("/v1/phone-numbers/{id}"), &key)).await;
    assert_eq!(status, 204);
    let (status, _) = call(server.get(&format!("/v1/phone-numbers/{id}"), &key)).await;
    assert_eq!(status, 404);
    let response = twilio_post(&server, inbound, &params, signed(&server, inbound, &params)).await;
    assert_eq!(response.status(), 200);
    let markup = response.text().await.unwrap();
    assert!(
        markup.contains("<Say>") && markup.contains("<Hangup/>") && !markup.contains("<Stream"),
        "{markup}"
    );
}

/// Twilio fetching the connect callback of task `task_id` for call `call_sid` once the callee
/// answers: answers the stream URL and the relay token of the markup.
async fn answer_task(server: &Server, task_id: &str, call_sid: &str) -> (String, String) {
    let path = format!("/v1/sessions/twilio/task/{task_id}/connect");
    let answer = form(&[
        ("CallSid", call_sid),
        ("From", "+14155550199"),
        ("To", "+14155550100"),
        ("CallStatus", "in-progress"),
    ]);
    let response = twilio_post(server, &path, &answer, signed(server, &path, &answer)).await;
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
    (
        attribute("<Stream url=\""),
        attribute("name=\"token\" value=\""),
    )
}

#[tokio::test]
async fn an_outbound_calls_stream_is_refused_once_the_key_that_placed_it_is_revoked() {
    let mock = TwilioMock::start();
    let server = server_with_twilio(&mock).await;
    let key = server.key().to_string();
    new_agent(&server, &key, "dialer").await;
    own_number(&server, &mock, &key, "+14155550199", "dialer").await;
    let (status, campaign) = call(server.post("/v1/keys", &key, json!({"name": "campaign"}))).await;
    assert_eq!(status, 201, "{campaign}");
    let mut placed = Vec::new();
    for placer in [campaign["key"].as_str().unwrap(), key.as_str()] {
        let (status, task) = call(server.post(
            "/v1/sessions/twilio/outbound",
            placer,
            json!({"agentId": "dialer", "to": "+14155550100", "from": "+14155550199"}),
        ))
        .await;
        assert_eq!(status, 201, "{task}");
        let id = |field: &str| task[field].as_str().unwrap().to_string();
        placed.push((id("taskId"), id("callSid")));
    }
    // The campaign's key is revoked while its call rings.
    let revoke = format!("/v1/keys/{}", campaign["id"].as_str().unwrap());
    let (status, body) = call(server.delete(&revoke, &key)).await;
    assert_eq!(status, 204, "{body}");

    let (task_id, call_sid) = &placed[0];
    let (url, token) = answer_task(&server, task_id, call_sid).await;
    media_stream::assert_refused_as_revoked(&server, &key, &url, &token, call_sid).await;

    // The call placed with the developer's other key connects and is greeted.
    let (task_id, call_sid) = &placed[1];
    let (url, token) = answer_task(&server, task_id, call_sid).await;
    let mut live = media_stream::open_stream(&url, &token, call_sid).await;
    let greeted = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(Ok(message)) = live.next().await {
            if let Message::Text(text) = message {
                if text.contains(r#""event":"media""#) {
                    return true;
                }
            }
        }
        false
    })
    .await;
    assert_eq!(greeted, Ok(true), "{}", server.log());
}

/// The signed voice webhook of an inbound call from `caller` to `number`.
async fn inbound_call(server: &Server, number: &str, caller: &str, call_sid: &str) -> String {
    let inbound = "/v1/sessions/twilio/inbound";
    let params = form(&[
        ("AccountSid", ACCOUNT_SID),
        ("ApiVersion", "2010-04-01"),
        ("CallSid", call_sid),
        ("CallStatus", "ringing"),
        ("Direction", "inbound"),
        ("From", caller),
        ("To", number),
    ]);
    let response = twilio_post(server, inbound, &params, signed(server, inbound, &params)).await;
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// The value of one sample of the metrics text, 0 when it is not there yet.
async fn metric(server: &Server, key: &str, sample: &str) -> f64 {
    let response = server
        .http
        .get(server.url("/metrics"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(sample))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn a_call_over_the_tiers_limit_is_told_the_lines_are_busy_and_never_connected() {
    let busy = "Every line is taken. Please try again soon.";
    let mock = TwilioMock::start();
    let server = server_with_twilio_and(
        &mock,
        &[
            ("SWITCHBOARD__TIERS__STARTER__MAX_CONCURRENT_SESSIONS", "1"),
            ("SWITCHBOARD__TELEPHONY__BUSY_MESSAGE", busy),
        ],
    )
    .await;
    let key = server.key().to_string();
    new_agent(&server, &key, "front-desk").await;
    own_number(&server, &mock, &key, "+14155550123", "front-desk").await;
    let rejected = r#"switchboard_sessions_rejected_total{reason="busy",transport="twilio"}"#;
    assert_eq!(metric(&server, &key, rejected).await, 0.0);

    // The first call takes the tier's one line as soon as its markup is answered.
    let first = media_stream::place_call(&server, &key, "front-desk").await;

    // A second call through the API is answered with the busy message, not a stream.
    let session = json!({"agentId": "front-desk", "from": "+14155550100", "to": "+14155550199"});
    let (status, body) = call(server.post("/v1/sessions/twilio", &key, session.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "busy", "{body}");
    let twiml = body["twiml"].as_str().unwrap();
    assert!(
        twiml.contains(&format!("<Say>{busy}</Say><Hangup/>")),
        "{twiml}"
    );
    assert!(!twiml.contains("<Stream"), "{twiml}");
    assert!(
        body.get("sessionId").is_none() && body.get("streamUrl").is_none(),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("allows 1"),
        "{body}"
    );
    // The same, as the markup itself, for a voice webhook that passes it through.
    let response = server
        .post("/v1/sessions/twilio", &key, session)
        .header("Accept", "text/xml")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let markup = response.text().await.unwrap();
    assert!(
        markup.contains(&format!("<Say>{busy}</Say><Hangup/>")),
        "{markup}"
    );
    // An inbound call to the developer's number hears it too.
    let markup = inbound_call(&server, "+14155550123", "+14155550777", "CA2").await;
    assert!(
        markup.contains(&format!("<Say>{busy}</Say><Hangup/>")),
        "{markup}"
    );
    assert!(!markup.contains("<Stream"), "{markup}");
    assert_eq!(metric(&server, &key, rejected).await, 3.0);

    // The first call's stream connects on the line it holds and is greeted.
    let mut live = media_stream::open_stream(&first.stream_url, &first.token, "CA1").await;
    assert!(greeted(&mut live).await, "{}", server.log());
    // While it runs, the line is still taken.
    let markup = inbound_call(&server, "+14155550123", "+14155550778", "CA3").await;
    assert!(markup.contains(busy), "{markup}");

    // Once it hangs up, the next call is connected.
    drop(live);
    ended_call(&server, &key, "CA1").await;
    let started = std::time::Instant::now();
    let mut refused = 4.0;
    loop {
        let markup = inbound_call(&server, "+14155550123", "+14155550779", "CA4").await;
        if markup.contains("<Stream url=") {
            break;
        }
        assert!(markup.contains(busy), "{markup}");
        refused += 1.0;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still busy: {markup}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(metric(&server, &key, rejected).await, refused);
}

/// Waits for the first agent audio on a media stream.
async fn greeted(live: &mut media_stream::Socket) -> bool {
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(Ok(message)) = live.next().await {
            if let Message::Text(text) = message {
                if text.contains(r#""event":"media""#) {
                    return true;
                }
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

#[tokio::test]
async fn an_integrator_hangs_up_a_live_call_through_twilio() {
    let mock = TwilioMock::start();
    let server = server_with_twilio(&mock).await;
    let key = server.key().to_string();
    let other = server.storage.create_key("dev_other");
    new_agent(&server, &key, "front-desk").await;
    let call_sid = "CA11111111111111111111111111111111";
    let placed = media_stream::place_call(&server, &key, "front-desk").await;
    let mut live = media_stream::open_stream(&placed.stream_url, &placed.token, call_sid).await;
    assert!(greeted(&mut live).await, "{}", server.log());

    // Nobody else's call, and no call that does not exist, can be hung up.
    let path = format!("/v1/sessions/twilio/{call_sid}/hangup");
    let (status, body) = call(server.post(&path, &other, json!({}))).await;
    assert_not_found(status, &body, "another developer's call");
    let unknown = "/v1/sessions/twilio/CA99999999999999999999999999999999/hangup";
    let (status, body) = call(server.post(unknown, &key, json!({}))).await;
    assert_not_found(status, &body, "an unknown call");
    assert!(
        !mock.requests().iter().any(|r| r.path.contains("/Calls/CA")),
        "nothing reached Twilio"
    );

    // The owner hangs it up: Twilio is asked to complete the call.
    let (status, body) = call(server.post(&path, &key, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["callSid"], call_sid);
    assert_eq!(body["sessionId"], placed.session_id.as_str());
    assert_eq!(body["status"], "completed");
    let update = mock
        .requests()
        .into_iter()
        .find(|r| r.path == format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}.json"))
        .expect("the call update reached Twilio");
    assert_eq!(
        update.form,
        vec![("Status".to_string(), "completed".to_string())]
    );
    assert!(update
        .content_type
        .starts_with("application/x-www-form-urlencoded"));

    // Twilio ends the call's stream as it hangs up: the session ends as a hang-up, with the
    // request on its record.
    let stop = json!({"event": "stop", "sequenceNumber": "99", "streamSid": media_stream::STREAM_SID,
                      "stop": {"accountSid": ACCOUNT_SID, "callSid": call_sid}});
    live.send(Message::text(stop.to_string())).await.unwrap();
    let ended = ended_call(&server, &key, call_sid).await;
    assert_eq!(ended["endReason"], "hangup", "{ended}");
    let events = ended["callEvents"].as_array().expect("callEvents");
    assert_eq!(events.len(), 1, "{ended}");
    assert_eq!(events[0]["kind"], "hangup_requested");
    assert!(events[0]["atMs"].as_i64().unwrap() >= 0, "{ended}");
    // A call that already ended cannot be hung up again.
    let (status, body) = call(server.post(&path, &key, json!({}))).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(error_code(&body), "conflict");

    // A call Twilio already let go of (404, code 20404) is hung up all the same.
    let placed = media_stream::place_call(&server, &key, "front-desk").await;
    let mut live =
        media_stream::open_stream(&placed.stream_url, &placed.token, GONE_CALL_SID).await;
    assert!(greeted(&mut live).await, "{}", server.log());
    let gone = format!("/v1/sessions/twilio/{GONE_CALL_SID}/hangup");
    let (status, body) = call(server.post(&gone, &key, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "already_ended", "{body}");
}
