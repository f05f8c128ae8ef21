//! Voicemail on outbound calls, against the real server and the local Twilio stand-in: a call
//! placed with `machineDetection` asks Twilio for asynchronous answering-machine detection;
//! Twilio's signed verdict then hangs up on a machine, leaves it the voicemail message after
//! the beep, or lets a person talk to the agent, once; the task and the call's session keep
//! what was done.

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
use twilio_mock::{
    form, signed, twilio_post, TwilioMock, TwilioRequest, ACCOUNT_SID, BROKEN_CALL_SID,
};

const CALLEE: &str = "+14155550100";
const CALLER_ID: &str = "+14155550199";
const MESSAGE: &str = "Hi, this is Acme & Sons about your order. Please call us back.";
/// The markup that says [`MESSAGE`] and hangs up, as Twilio receives it.
const MESSAGE_TWIML: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say>Hi, this is Acme &amp; Sons about your order. Please call us back.</Say><Hangup/></Response>";

/// The server with Twilio on the stand-in, a `dialer` agent and the caller id proven.
async fn dialer(mock: &TwilioMock) -> (Server, String) {
    let env = mock.sms_env("+15005550006");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start_with(Storage::fresh().await, &env).await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "dialer", "name": "Caller", "firstMessage": "Hello from the agent."}),
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
    let code = mock
        .last_code_for(CALLER_ID)
        .expect("a code was texted to the number");
    let (status, verified) = call(server.post(
        &format!("/v1/phone-numbers/{}/verify", route["id"].as_str().unwrap()),
        &key,
        json!({"code": code}),
    ))
    .await;
    assert_eq!(status, 200, "{verified}");
    (server, key)
}

/// Places a call with `extra` request fields; answers the task id and the call SID.
async fn place(server: &Server, key: &str, extra: Value) -> (String, String) {
    let mut body = json!({"agentId": "dialer", "to": CALLEE, "from": CALLER_ID});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, placed) = call(server.post("/v1/sessions/twilio/outbound", key, body)).await;
    assert_eq!(status, 201, "{placed}");
    (
        placed["taskId"].as_str().unwrap().to_string(),
        placed["callSid"].as_str().unwrap().to_string(),
    )
}

async fn task(server: &Server, key: &str, id: &str) -> Value {
    let (status, body) = call(server.get(&format!("/v1/sessions/twilio/tasks/{id}"), key)).await;
    assert_eq!(status, 200, "{body}");
    body
}

fn amd_path(task_id: &str) -> String {
    format!("/v1/sessions/twilio/task/{task_id}/amd")
}

/// Twilio's `AsyncAmdStatusCallback` parameters for call `call_sid`.
fn verdict(call_sid: &str, answered_by: &str, duration_ms: &str) -> Vec<(String, String)> {
    form(&[
        ("AccountSid", ACCOUNT_SID),
        ("AnsweredBy", answered_by),
        ("CallSid", call_sid),
        ("MachineDetectionDuration", duration_ms),
    ])
}

/// Twilio reporting its verdict on task `task_id`, signed; answers the HTTP status.
async fn report(server: &Server, task_id: &str, params: &[(String, String)]) -> u16 {
    let path = amd_path(task_id);
    twilio_post(server, &path, params, signed(server, &path, params))
        .await
        .status()
        .as_u16()
}

/// The updates of live calls the stand-in received (`.../Calls/{CallSid}.json`).
fn call_updates(mock: &TwilioMock) -> Vec<TwilioRequest> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path.contains("/Calls/CA"))
        .collect()
}

fn update_path(call_sid: &str) -> String {
    format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}.json")
}

/// What a task says about answering machines.
fn machine_fields(task: &Value) -> Value {
    json!({
        "machineDetection": task["machineDetection"],
        "answeredBy": task["answeredBy"],
        "machineAction": task["machineAction"],
    })
}

/// Twilio fetching task `task_id`'s connect callback as the callee answers: the stream URL
/// and relay token of the markup.
async fn answer_task(server: &Server, task_id: &str, call_sid: &str) -> (String, String) {
    let path = format!("/v1/sessions/twilio/task/{task_id}/connect");
    let answer = form(&[
        ("CallSid", call_sid),
        ("From", CALLER_ID),
        ("To", CALLEE),
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

/// The call events of session `session_id` once there are `count` of them (up to 5 s).
async fn call_events(server: &Server, key: &str, session_id: &str, count: usize) -> Value {
    let path = format!("/v1/observability/sessions/{session_id}");
    let mut events = Value::Null;
    for _ in 0..50 {
        let (status, session) = call(server.get(&path, key)).await;
        assert_eq!(status, 200, "{session}");
        events = session["callEvents"].clone();
        if events.as_array().is_some_and(|e| e.len() >= count) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    events
}

const AMD_FIELDS: [&str; 4] = [
    "MachineDetection",
    "AsyncAmd",
    "AsyncAmdStatusCallback",
    "AsyncAmdStatusCallbackMethod",
];

/// The request's answering-machine fields (any `MachineDetection…` or `AsyncAmd…` key).
fn amd_form(request: &TwilioRequest) -> Vec<(String, String)> {
    request
        .form
        .iter()
        .filter(|(k, _)| k.starts_with("MachineDetection") || k.starts_with("AsyncAmd"))
        .cloned()
        .collect()
}

#[tokio::test]
async fn detection_asks_twilio_for_asynchronous_amd_and_off_asks_for_none() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;

    for (extra, case) in [
        (json!({"machineDetection": "hangup"}), "hangup"),
        (
            json!({"machineDetection": "message", "voicemailMessage": MESSAGE}),
            "message",
        ),
    ] {
        let (task_id, _) = place(&server, &key, extra).await;
        let request = mock.calls().pop().unwrap();
        let callback = server.url(&amd_path(&task_id));
        assert_eq!(
            amd_form(&request),
            form(&[
                ("MachineDetection", "DetectMessageEnd"),
                ("AsyncAmd", "true"),
                ("AsyncAmdStatusCallback", &callback),
                ("AsyncAmdStatusCallbackMethod", "POST"),
            ]),
            "{case}"
        );
        for field in AMD_FIELDS {
            assert_eq!(request.params(field).len(), 1, "{case}: {field} once");
        }
        // The rest of the call is placed as always.
        assert_eq!(request.param("To"), Some(CALLEE), "{case}");
        assert_eq!(
            request.param("Url"),
            Some(
                server
                    .url(&format!("/v1/sessions/twilio/task/{task_id}/connect"))
                    .as_str()
            ),
            "{case}"
        );
        assert_eq!(
            machine_fields(&task(&server, &key, &task_id).await),
            json!({"machineDetection": case, "answeredBy": null, "machineAction": null}),
            "{case}"
        );
    }

    for (extra, case) in [
        (json!({}), "default"),
        (json!({"machineDetection": "off"}), "off"),
    ] {
        let (task_id, _) = place(&server, &key, extra).await;
        let request = mock.calls().pop().unwrap();
        assert_eq!(amd_form(&request), vec![], "{case}");
        assert_eq!(request.param("StatusCallbackMethod"), Some("POST"));
        assert_eq!(
            machine_fields(&task(&server, &key, &task_id).await),
            json!({"machineDetection": "off", "answeredBy": null, "machineAction": null}),
            "{case}"
        );
    }
    assert_eq!(mock.calls().len(), 4);
}

#[tokio::test]
async fn invalid_machine_detection_settings_are_refused_and_place_no_call() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    let too_long = "x".repeat(1001);
    for (extra, param, case) in [
        (
            json!({"machineDetection": "voicemail"}),
            "machineDetection",
            "unknown mode",
        ),
        (
            json!({"machineDetection": "HANGUP"}),
            "machineDetection",
            "modes are lower case",
        ),
        (
            json!({"machineDetection": "message"}),
            "voicemailMessage",
            "message mode without a message",
        ),
        (
            json!({"machineDetection": "message", "voicemailMessage": "  \n "}),
            "voicemailMessage",
            "a blank message",
        ),
        (
            json!({"machineDetection": "message", "voicemailMessage": too_long}),
            "voicemailMessage",
            "a message over 1000 characters",
        ),
        (
            json!({"machineDetection": "hangup", "voicemailMessage": MESSAGE}),
            "voicemailMessage",
            "a message in hangup mode",
        ),
        (
            json!({"voicemailMessage": MESSAGE}),
            "voicemailMessage",
            "a message without detection",
        ),
    ] {
        let mut body = json!({"agentId": "dialer", "to": CALLEE, "from": CALLER_ID});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (status, error) = call(server.post("/v1/sessions/twilio/outbound", &key, body)).await;
        assert_invalid(status, &error, param, case);
    }
    assert_eq!(mock.calls().len(), 0, "no call reached Twilio");

    // 1000 characters are enough.
    let (task_id, _) = place(
        &server,
        &key,
        json!({"machineDetection": "message", "voicemailMessage": "x".repeat(1000)}),
    )
    .await;
    assert_eq!(
        task(&server, &key, &task_id).await["machineDetection"],
        "message"
    );
}

#[tokio::test]
async fn a_machine_is_left_the_message_after_the_beep_once_and_the_session_keeps_it() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    let (task_id, call_sid) = place(
        &server,
        &key,
        json!({"machineDetection": "message", "voicemailMessage": MESSAGE}),
    )
    .await;
    let (url, token) = answer_task(&server, &task_id, &call_sid).await;
    let session_id = task(&server, &key, &task_id).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut live = media_stream::open_stream(&url, &token, &call_sid).await;
    assert!(greeted(&mut live).await, "{}", server.log());

    // The greeting ends with a beep: the call's markup becomes the message and a hang-up.
    let status = report(
        &server,
        &task_id,
        &verdict(&call_sid, "machine_end_beep", "4210"),
    )
    .await;
    assert_eq!(status, 204, "{}", server.log());
    let updates = call_updates(&mock);
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].path, update_path(&call_sid));
    assert_eq!(updates[0].form, form(&[("Twiml", MESSAGE_TWIML)]));
    assert_eq!(
        machine_fields(&task(&server, &key, &task_id).await),
        json!({"machineDetection": "message", "answeredBy": "machine_end_beep",
               "machineAction": "left_message"})
    );

    // A repeated (or contradicting) verdict changes nothing: the first one stands.
    for again in ["machine_end_beep", "human"] {
        let status = report(&server, &task_id, &verdict(&call_sid, again, "5000")).await;
        assert_eq!(status, 204, "{again}");
    }
    assert_eq!(call_updates(&mock).len(), 1, "no second call update");
    assert_eq!(
        task(&server, &key, &task_id).await["machineAction"],
        "left_message"
    );

    // Twilio stops the stream as the new markup takes over: the session's record keeps the
    // verdict, once.
    let stop = json!({"event": "stop", "sequenceNumber": "99", "streamSid": media_stream::STREAM_SID,
                      "stop": {"accountSid": ACCOUNT_SID, "callSid": call_sid}});
    live.send(Message::text(stop.to_string())).await.unwrap();
    let ended = ended_session(&server, &key, &session_id).await;
    assert_ne!(ended, Value::Null, "the session ended");
    let events = ended["callEvents"].as_array().expect("callEvents");
    assert_eq!(events.len(), 1, "{ended}");
    assert_eq!(events[0]["kind"], "machine_detection");
    assert_eq!(
        events[0]["detail"],
        json!({"answeredBy": "machine_end_beep", "action": "left_message", "detectionMs": 4210})
    );
    assert!(events[0]["atMs"].as_i64().unwrap() >= 0, "{ended}");
}

#[tokio::test]
async fn hangup_mode_hangs_up_on_a_machine_and_a_fax_is_hung_up_on_in_message_mode() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;

    let (task_id, call_sid) = place(&server, &key, json!({"machineDetection": "hangup"})).await;
    answer_task(&server, &task_id, &call_sid).await;
    let session_id = task(&server, &key, &task_id).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let status = report(
        &server,
        &task_id,
        &verdict(&call_sid, "machine_end_silence", "6120"),
    )
    .await;
    assert_eq!(status, 204, "{}", server.log());
    let updates = call_updates(&mock);
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].path, update_path(&call_sid));
    assert_eq!(updates[0].form, form(&[("Status", "completed")]));
    assert_eq!(
        machine_fields(&task(&server, &key, &task_id).await),
        json!({"machineDetection": "hangup", "answeredBy": "machine_end_silence",
               "machineAction": "hung_up"})
    );
    // The call connected (its stream had not started yet): its session has the verdict.
    let events = call_events(&server, &key, &session_id, 1).await;
    assert_eq!(
        events,
        json!([{"kind": "machine_detection", "atMs": events[0]["atMs"],
                "detail": {"answeredBy": "machine_end_silence", "action": "hung_up", "detectionMs": 6120}}])
    );

    // A fax is hung up on even when a message was to be left; a call that never connected
    // has no session to keep the verdict on, only its task.
    let (task_id, call_sid) = place(
        &server,
        &key,
        json!({"machineDetection": "message", "voicemailMessage": MESSAGE}),
    )
    .await;
    let status = report(&server, &task_id, &verdict(&call_sid, "fax", "900")).await;
    assert_eq!(status, 204);
    let updates = call_updates(&mock);
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(updates[1].path, update_path(&call_sid));
    assert_eq!(updates[1].form, form(&[("Status", "completed")]));
    let fax = task(&server, &key, &task_id).await;
    assert_eq!(
        machine_fields(&fax),
        json!({"machineDetection": "message", "answeredBy": "fax", "machineAction": "hung_up"})
    );
    assert_eq!(fax["sessionId"], Value::Null);
}

#[tokio::test]
async fn a_person_goes_on_talking_to_the_agent() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    for (answered_by, duration) in [("human", "2400"), ("unknown", "30000")] {
        let (task_id, call_sid) = place(
            &server,
            &key,
            json!({"machineDetection": "message", "voicemailMessage": MESSAGE}),
        )
        .await;
        answer_task(&server, &task_id, &call_sid).await;
        let status = report(
            &server,
            &task_id,
            &verdict(&call_sid, answered_by, duration),
        )
        .await;
        assert_eq!(status, 204, "{answered_by}");
        let current = task(&server, &key, &task_id).await;
        assert_eq!(
            machine_fields(&current),
            json!({"machineDetection": "message", "answeredBy": answered_by,
                   "machineAction": "none"})
        );
        assert_eq!(current["status"], "in-progress", "{answered_by}");
        let events = call_events(&server, &key, current["sessionId"].as_str().unwrap(), 1).await;
        assert_eq!(events.as_array().map(Vec::len), Some(1), "{events}");
        assert_eq!(
            events[0]["detail"],
            json!({"answeredBy": answered_by, "action": "none",
                   "detectionMs": duration.parse::<i64>().unwrap()})
        );
    }
    assert_eq!(call_updates(&mock).len(), 0, "Twilio was asked for nothing");
}

#[tokio::test]
async fn a_verdict_without_a_valid_signature_or_with_bad_parameters_changes_nothing() {
    let mock = TwilioMock::start();
    let (server, key) = dialer(&mock).await;
    let (task_id, call_sid) = place(&server, &key, json!({"machineDetection": "hangup"})).await;
    let path = amd_path(&task_id);
    let machine = verdict(&call_sid, "machine_end_beep", "3000");
    let untouched =
        json!({"machineDetection": "hangup", "answeredBy": null, "machineAction": null});

    let forged = signature::sign("not-the-token", &server.url(&path), &machine);
    let other_params = signed(&server, &path, &verdict(&call_sid, "human", "3000"));
    let status_path = format!("/v1/sessions/twilio/task/{task_id}/status");
    let other_url = signed(&server, &status_path, &machine);
    for (case, signature) in [
        ("forged", Some(forged)),
        ("missing", None),
        ("empty", Some(String::new())),
        ("other parameters", other_params),
        ("other url", other_url),
    ] {
        let (status, body) = json_of(twilio_post(&server, &path, &machine, signature).await).await;
        assert_eq!(status, 403, "{case}: {body}");
        assert_eq!(error_code(&body), "forbidden", "{case}");
        assert_eq!(
            machine_fields(&task(&server, &key, &task_id).await),
            untouched,
            "{case}"
        );
    }

    for (params, param) in [
        (verdict(&call_sid, "robot", "3000"), "AnsweredBy"),
        (
            form(&[
                ("CallSid", call_sid.as_str()),
                ("MachineDetectionDuration", "10"),
            ]),
            "AnsweredBy",
        ),
        (
            verdict(&call_sid, "machine_end_beep", "soon"),
            "MachineDetectionDuration",
        ),
    ] {
        let response = twilio_post(&server, &path, &params, signed(&server, &path, &params)).await;
        let (status, body) = json_of(response).await;
        assert_invalid(status, &body, param, param);
        assert_eq!(
            machine_fields(&task(&server, &key, &task_id).await),
            untouched
        );
    }
    assert_eq!(call_updates(&mock).len(), 0, "nothing reached Twilio");

    // An unknown task is 404, even signed.
    let unknown = amd_path("task_missing");
    let response = twilio_post(
        &server,
        &unknown,
        &machine,
        signed(&server, &unknown, &machine),
    )
    .await;
    let (status, body) = json_of(response).await;
    assert_not_found(status, &body, "an unknown task");

    // When Twilio cannot hang up, the verdict is not kept and a retry acts on it.
    let broken = verdict(BROKEN_CALL_SID, "machine_end_beep", "3000");
    let response = twilio_post(&server, &path, &broken, signed(&server, &path, &broken)).await;
    let (status, body) = json_of(response).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(error_code(&body), "upstream_error");
    assert_eq!(
        machine_fields(&task(&server, &key, &task_id).await),
        untouched
    );
    assert_eq!(report(&server, &task_id, &machine).await, 204);
    let updates = call_updates(&mock);
    assert_eq!(
        updates.iter().map(|u| u.path.clone()).collect::<Vec<_>>(),
        [update_path(BROKEN_CALL_SID), update_path(&call_sid)]
    );
    assert_eq!(
        machine_fields(&task(&server, &key, &task_id).await),
        json!({"machineDetection": "hangup", "answeredBy": "machine_end_beep",
               "machineAction": "hung_up"})
    );
}
