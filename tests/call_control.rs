//! Call control a contact center uses, end to end over Twilio's real protocol against the
//! local Twilio stand-in: the agent hangs up after its goodbye, presses keys and comes back,
//! hands the caller to a person (cold and warm), and the integrator transfers a live call.
//! Each asserts the exact REST request and TwiML Twilio receives, what the caller's stream
//! sees, and the call events on the session's record.

mod common;
#[path = "common/media_stream.rs"]
mod media_stream;
#[path = "common/twilio_mock.rs"]
mod twilio_mock;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use common::*;
use futures_util::{SinkExt, StreamExt};
use media_stream::{mark_echo, TwilioStream, STREAM_SID};
use serde_json::{json, Value};
use switchboard::telephony::signature;
use tokio_tungstenite::tungstenite::Message;
use twilio_mock::{TwilioMock, TwilioRequest, ACCOUNT_SID, AUTH_TOKEN};
use vendor_mock::VendorMock;

/// A server with its vendors on `vendors` and Twilio on `twilio`.
async fn server(vendors: &VendorMock, twilio: &TwilioMock) -> Server {
    let env = twilio.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    vendors.server(&env).await
}

/// An agent on the mocked vendors whose model calls `[call:TOOL]` when the prompt says so.
async fn new_agent(server: &Server, key: &str, id: &str, prompt: &str, extra: Value) {
    let mut agent = json!({"id": id, "name": id, "firstMessage": "Hello from the agent.",
        "systemPrompt": prompt, "sttProvider": "openai", "llmProvider": "openai",
        "ttsProvider": "openai"});
    if let (Some(agent), Some(extra)) = (agent.as_object_mut(), extra.as_object()) {
        agent.extend(extra.clone());
    }
    let (status, body) = call(server.post("/v1/agents", key, agent)).await;
    assert_eq!(status, 201, "{body}");
}

/// What the caller's stream saw until the server closed it (or `limit` passed).
#[derive(Debug, Default)]
struct Heard {
    media_frames: usize,
    /// The close code, when the server closed the stream.
    closed: Option<u16>,
    /// Twilio's requests as the close arrived.
    twilio_at_close: Vec<TwilioRequest>,
}

/// Plays the call as Twilio does (silence from the caller, the agent's audio played in real
/// time, marks echoed when played), pressing `key` once the greeting has played, until the
/// server closes the stream or `limit` passes.
async fn play_call(
    stream: &mut TwilioStream,
    twilio: &TwilioMock,
    key: Option<&str>,
    limit: Duration,
) -> Heard {
    let TwilioStream { socket, playback } = stream;
    let started = Instant::now();
    let mut heard = Heard::default();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut chunk = 1u64;
    let mut greeted_at: Option<Instant> = None;
    let mut pressed = key.is_none();
    while started.elapsed() < limit {
        tokio::select! {
            _ = tick.tick() => {
                for name in playback.due(Instant::now()) {
                    let _ = socket.send(mark_echo(&name)).await;
                }
                // The greeting has played: the caller presses a key (a caller turn).
                if !pressed && greeted_at.is_some_and(|at| at.elapsed() > Duration::from_millis(1500)) {
                    pressed = true;
                    let dtmf = json!({"event": "dtmf", "streamSid": STREAM_SID, "sequenceNumber": "900",
                                      "dtmf": {"track": "inbound_track", "digit": key.unwrap_or("5")}});
                    let _ = socket.send(Message::text(dtmf.to_string())).await;
                }
                let media = json!({"event": "media", "sequenceNumber": (chunk + 1).to_string(),
                    "streamSid": STREAM_SID,
                    "media": {"track": "inbound", "chunk": chunk.to_string(), "timestamp": (chunk * 20).to_string(),
                              "payload": BASE64.encode([0xFFu8; 160])}});
                chunk += 1;
                let _ = socket.send(Message::text(media.to_string())).await;
            }
            message = socket.next() => {
                match message {
                    Some(Ok(Message::Text(text))) => {
                        let event: Value = serde_json::from_str(&text).unwrap();
                        match event["event"].as_str().unwrap_or_default() {
                            "media" => {
                                heard.media_frames += 1;
                                greeted_at.get_or_insert_with(Instant::now);
                                playback.media(Instant::now());
                            }
                            "mark" => playback.mark(event["mark"]["name"].as_str().unwrap(), Instant::now()),
                            "clear" => {
                                for name in playback.clear() {
                                    let _ = socket.send(mark_echo(&name)).await;
                                }
                            }
                            _ => {}
                        }
                    }
                    Some(Ok(Message::Close(frame))) => {
                        heard.twilio_at_close = twilio.requests();
                        heard.closed = Some(frame.map_or(1005, |f| u16::from(f.code)));
                        return heard;
                    }
                    Some(Ok(_)) => {}
                    _ => {
                        heard.twilio_at_close = twilio.requests();
                        return heard;
                    }
                }
            }
        }
    }
    heard
}

/// The call update Twilio received for `call_sid` (`POST .../Calls/{sid}.json`), in order.
fn updates(requests: &[TwilioRequest], call_sid: &str) -> Vec<TwilioRequest> {
    let path = format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}.json");
    requests
        .iter()
        .filter(|r| r.path == path)
        .cloned()
        .collect()
}

/// The chat requests the model received, oldest first.
fn chats(vendors: &VendorMock) -> Vec<Value> {
    vendors
        .seen_at("/chat/completions")
        .into_iter()
        .map(|s| s.body)
        .collect()
}

fn tool_names(chat: &Value) -> Vec<String> {
    chat["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// POSTs a form to `path` as Twilio does, signed with the account's auth token.
async fn twilio_webhook(
    server: &Server,
    path: &str,
    params: &[(&str, &str)],
    sign: bool,
) -> reqwest::Response {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut request = server
        .http
        .post(server.url(path))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(&params)
                .finish(),
        );
    if sign {
        request = request.header(
            "X-Twilio-Signature",
            signature::sign(AUTH_TOKEN, &server.url(path), &params),
        );
    }
    request.send().await.unwrap()
}

/// The relay token and its claims in stream markup.
fn stream_token(markup: &str) -> (String, Value) {
    let token = markup
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no relay token in {markup}"))
        .to_string();
    let claims = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    (token, claims)
}

fn call_events(ended: &Value) -> Vec<Value> {
    ended["callEvents"].as_array().cloned().unwrap_or_default()
}

/// The session's record once `check` holds for it (call events settle after the session
/// ends), or the last read.
async fn session_once(
    server: &Server,
    key: &str,
    id: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..50 {
        let (status, body) =
            call(server.get(&format!("/v1/observability/sessions/{id}"), key)).await;
        assert_eq!(status, 200, "{body}");
        if check(&body) {
            return body;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    last
}

#[tokio::test]
async fn the_agent_hangs_up_after_its_goodbye_and_twilio_ends_the_call() {
    let vendors = VendorMock::start();
    let twilio = TwilioMock::start();
    let server = server(&vendors, &twilio).await;
    let key = server.key().to_string();
    new_agent(
        &server,
        &key,
        "closer",
        "You answer calls. [call:end_call]",
        json!({}),
    )
    .await;
    let call_sid = "CA21000000000000000000000000000001";
    let placed = media_stream::place_call(&server, &key, "closer").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, call_sid).await;

    let heard = play_call(&mut stream, &twilio, Some("5"), Duration::from_secs(30)).await;
    assert_eq!(
        heard.closed,
        Some(1000),
        "the server closed the stream: {}",
        server.log()
    );
    // Twilio was told to end the call before the stream closed, and only that.
    let updates = updates(&heard.twilio_at_close, call_sid);
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(
        updates[0].form,
        vec![("Status".to_string(), "completed".to_string())]
    );

    // On a phone call the model is offered the call's tools instead of end_conversation,
    // and no transfer when the agent lists nobody to hand over to.
    let offered = tool_names(&chats(&vendors)[0]);
    assert!(offered.contains(&"end_call".to_string()), "{offered:?}");
    assert!(offered.contains(&"send_dtmf".to_string()), "{offered:?}");
    assert!(
        !offered.contains(&"end_conversation".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"transfer_call".to_string()),
        "{offered:?}"
    );

    // The call event is written as the call is acted on, just after the session ended.
    let ended = session_once(&server, &key, &placed.session_id, |s| {
        s["status"] != "active" && !call_events(s).is_empty()
    })
    .await;
    assert_eq!(ended["endReason"], "agent_ended", "{ended}");
    let events = call_events(&ended);
    assert_eq!(events.len(), 1, "{ended}");
    assert_eq!(events[0]["kind"], "agent_hung_up", "{ended}");
    // The goodbye was heard: the agent's last turn is on the record, after the greeting.
    let agent_turns: Vec<&Value> = ended["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["speaker"] == "agent")
        .collect();
    assert!(agent_turns.len() >= 2, "{ended}");
    assert!(
        agent_turns.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("The call will end"),
        "{ended}"
    );
}

#[tokio::test]
async fn the_agent_presses_keys_and_the_call_comes_back_to_a_session_that_remembers() {
    let vendors = VendorMock::start();
    let twilio = TwilioMock::start();
    let server = server(&vendors, &twilio).await;
    let key = server.key().to_string();
    new_agent(
        &server,
        &key,
        "navigator",
        "You navigate phone menus. [call:send_dtmf]",
        json!({}),
    )
    .await;
    let call_sid = "CA21000000000000000000000000000002";
    let placed = media_stream::place_call(&server, &key, "navigator").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, call_sid).await;

    let heard = play_call(&mut stream, &twilio, Some("9"), Duration::from_secs(30)).await;
    assert_eq!(heard.closed, Some(1000), "{}", server.log());
    // Before the stream closed, Twilio got markup that presses the keys, then streams the
    // call back to a new session.
    let updates = updates(&heard.twilio_at_close, call_sid);
    assert_eq!(updates.len(), 1, "{updates:?}");
    let markup = updates[0].param("Twiml").expect("Twiml=").to_string();
    assert!(
        markup.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Play digits=\"1w2#\"/><Connect><Stream url=\""),
        "{markup}"
    );
    assert!(
        markup.ends_with("</Stream></Connect></Response>"),
        "{markup}"
    );
    let (token, claims) = stream_token(&markup);
    assert_eq!(claims["prev"], placed.session_id.as_str(), "{claims}");
    assert!(
        claims.get("say").is_none(),
        "no opening: it listens: {claims}"
    );
    let next_session = claims["sid"].as_str().unwrap().to_string();
    assert_ne!(next_session, placed.session_id);

    // The call event is written as the call is acted on, just after the session ended.
    let ended = session_once(&server, &key, &placed.session_id, |s| {
        s["status"] != "active" && !call_events(s).is_empty()
    })
    .await;
    assert_eq!(ended["endReason"], "redirected", "{ended}");
    let events = call_events(&ended);
    assert_eq!(events.len(), 1, "{ended}");
    assert_eq!(events[0]["kind"], "keypad");
    assert_eq!(
        events[0]["detail"],
        json!({"digits": "1w2#", "nextSessionId": next_session})
    );

    // Twilio plays the keys and opens the new stream: the agent does not greet again, and
    // its model knows what was said and pressed before.
    let url = media_stream::open_stream(&placed.stream_url, &token, call_sid).await;
    let mut stream = TwilioStream {
        socket: url,
        playback: Default::default(),
    };
    let quiet = play_call(&mut stream, &twilio, None, Duration::from_millis(1500)).await;
    assert_eq!(quiet.media_frames, 0, "no second greeting");
    let chats_before = chats(&vendors).len();
    let stop = json!({"event": "dtmf", "streamSid": STREAM_SID, "sequenceNumber": "901",
                      "dtmf": {"track": "inbound_track", "digit": "3"}});
    stream
        .socket
        .send(Message::text(stop.to_string()))
        .await
        .unwrap();
    let mut resumed_chat = Value::Null;
    for _ in 0..100 {
        if let Some(chat) = chats(&vendors).get(chats_before) {
            resumed_chat = chat.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let system = resumed_chat["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        system.contains("This phone call goes on from an earlier part"),
        "{resumed_chat}"
    );
    assert!(
        system.contains("You pressed the keys 1w2# on the phone line"),
        "{system}"
    );
    assert!(system.contains("You: Hello from the agent."), "{system}");
    let (status, resumed) =
        call(server.get(&format!("/v1/observability/sessions/{next_session}"), &key)).await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["callSid"], call_sid);
}

#[tokio::test]
async fn an_integrator_transfers_a_call_and_the_caller_returns_to_the_agent_when_nobody_answers() {
    let vendors = VendorMock::start();
    let twilio = TwilioMock::start();
    let server = server(&vendors, &twilio).await;
    let key = server.key().to_string();
    let other = server.storage.create_key("dev_other");
    new_agent(&server, &key, "desk", "You answer calls.", json!({})).await;
    let call_sid = "CA21000000000000000000000000000003";
    let placed = media_stream::place_call(&server, &key, "desk").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, call_sid).await;
    let greeting = play_call(&mut stream, &twilio, None, Duration::from_secs(3)).await;
    assert!(greeting.media_frames > 0, "{}", server.log());

    // Bad requests are refused with the field named, and nothing reaches Twilio.
    let path = format!("/v1/sessions/twilio/{call_sid}/transfer");
    for (body, param) in [
        (json!({}), "number"),
        (json!({"number": "4155550123"}), "number"),
        (json!({"number": "+14155550123", "mode": "hot"}), "mode"),
        (
            json!({"number": "+14155550123", "summary": "cold calls tell nobody"}),
            "summary",
        ),
        (
            json!({"number": "+14155550123", "mode": "warm", "summary": "x".repeat(1001)}),
            "summary",
        ),
    ] {
        let (status, answer) = call(server.post(&path, &key, body.clone())).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["param"], param, "{body}: {answer}");
    }
    let (status, body) = call(server.post(&path, &other, json!({"number": "+14155550123"}))).await;
    assert_not_found(status, &body, "another developer's call");
    assert!(updates(&twilio.requests(), call_sid).is_empty());

    // A cold transfer: Twilio dials the person, and reports the dial's end to our action URL.
    let (status, body) = call(server.post(
        &path,
        &key,
        json!({"number": "+14155550123", "name": "Billing"}),
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"callSid": call_sid, "sessionId": placed.session_id, "status": "dialing"})
    );
    let update = updates(&twilio.requests(), call_sid);
    assert_eq!(update.len(), 1);
    let action = format!("/v1/sessions/twilio/transfers/{}/dialed", placed.session_id);
    assert_eq!(
        update[0].param("Twiml"),
        Some(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Dial action=\"{}\" method=\"POST\" timeout=\"20\"><Number>+14155550123</Number></Dial></Response>",
            server.url(&action)
        ).as_str())
    );
    // The new markup stops the stream: the session ends as transferred.
    let stop = json!({"event": "stop", "sequenceNumber": "99", "streamSid": STREAM_SID,
                      "stop": {"accountSid": ACCOUNT_SID, "callSid": call_sid}});
    stream
        .socket
        .send(Message::text(stop.to_string()))
        .await
        .unwrap();
    // The call event is written as the call is acted on, just after the session ended.
    let ended = session_once(&server, &key, &placed.session_id, |s| {
        s["status"] != "active" && !call_events(s).is_empty()
    })
    .await;
    assert_eq!(ended["endReason"], "transferred", "{ended}");
    let events = call_events(&ended);
    assert_eq!(events.len(), 1, "{ended}");
    assert_eq!(events[0]["kind"], "transfer");
    assert_eq!(
        events[0]["detail"],
        json!({"name": "Billing", "number": "+14155550123", "mode": "cold", "by": "api", "outcome": "dialing"})
    );

    // Only Twilio may report the dial.
    let dialed = [
        ("AccountSid", ACCOUNT_SID),
        ("CallSid", call_sid),
        ("DialCallStatus", "no-answer"),
        ("DialCallSid", "CA21000000000000000000000000000099"),
        ("DialCallDuration", "0"),
    ];
    let forged = twilio_webhook(&server, &action, &dialed, false).await;
    assert_eq!(forged.status(), 403);
    // Nobody answered: the caller comes back to the agent, which says so first.
    let answer = twilio_webhook(&server, &action, &dialed, true).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/xml"));
    let markup = answer.text().await.unwrap();
    assert!(markup.contains("<Connect><Stream url="), "{markup}");
    let (token, claims) = stream_token(&markup);
    assert_eq!(claims["prev"], placed.session_id.as_str());
    assert_eq!(
        claims["say"],
        "I'm sorry, I could not reach Billing: nobody answered. Is there anything else I can help you with?"
    );
    let settled = session_once(&server, &key, &placed.session_id, |s| {
        s["callEvents"][0]["detail"]["outcome"] == "no-answer"
    })
    .await;
    assert_eq!(
        settled["callEvents"][0]["detail"]["durationSeconds"], 0,
        "{settled}"
    );
    let mut back = TwilioStream::open(&placed.stream_url, &token, call_sid).await;
    let heard = play_call(&mut back, &twilio, None, Duration::from_secs(3)).await;
    assert!(
        heard.media_frames > 0,
        "the agent speaks again: {}",
        server.log()
    );
    let resumed = claims["sid"].as_str().unwrap();
    let resumed = session_once(&server, &key, resumed, |s| {
        s["turns"].as_array().is_some_and(|t| !t.is_empty())
    })
    .await;
    assert!(
        resumed["turns"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("I'm sorry, I could not reach Billing"),
        "{resumed}"
    );

    // A dial a person answered ends the call there.
    let done = [
        ("AccountSid", ACCOUNT_SID),
        ("CallSid", call_sid),
        ("DialCallStatus", "completed"),
        ("DialCallDuration", "42"),
    ];
    let answer = twilio_webhook(&server, &action, &done, true).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.text().await.unwrap(),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Hangup/></Response>"
    );
    // A session that made no transfer has no dial to report.
    let unknown = twilio_webhook(
        &server,
        "/v1/sessions/twilio/transfers/ses_unknown/dialed",
        &done,
        true,
    )
    .await;
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn the_agent_hands_a_caller_to_a_person_warm_and_takes_them_back_when_the_line_is_busy() {
    let vendors = VendorMock::start();
    let twilio = TwilioMock::start();
    let server = server(&vendors, &twilio).await;
    let key = server.key().to_string();
    let targets = json!({"transfer": [
        {"name": "nurse", "number": "+14155550143", "description": "symptoms and medication", "mode": "warm"},
        {"name": "billing", "number": "+14155550142"}
    ]});
    new_agent(
        &server,
        &key,
        "clinic",
        "You answer a clinic's calls. [call:transfer_call]",
        targets,
    )
    .await;
    let call_sid = "CA21000000000000000000000000000004";
    let placed = media_stream::place_call(&server, &key, "clinic").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, call_sid).await;

    let heard = play_call(&mut stream, &twilio, Some("1"), Duration::from_secs(30)).await;
    assert_eq!(heard.closed, Some(1000), "{}", server.log());
    // The model was offered the people by name, with what each is for.
    let chat = &chats(&vendors)[0];
    let transfer = chat["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "transfer_call")
        .unwrap_or_else(|| panic!("transfer_call offered: {chat}"));
    assert_eq!(
        transfer["function"]["parameters"]["properties"]["target"]["enum"],
        json!(["nurse", "billing"])
    );
    assert!(transfer["function"]["description"]
        .as_str()
        .unwrap()
        .contains("nurse (symptoms and medication)"));

    // Before the stream closed: the nurse is called with the summary and the conference,
    // and the caller is put on hold in the same conference.
    let placed_calls: Vec<&TwilioRequest> = heard
        .twilio_at_close
        .iter()
        .filter(|r| r.path.ends_with("/Calls.json"))
        .collect();
    assert_eq!(placed_calls.len(), 1, "{:?}", heard.twilio_at_close);
    let nurse = placed_calls[0];
    let room = format!("transfer-{}", placed.session_id);
    assert_eq!(nurse.param("To"), Some("+14155550143"));
    assert_eq!(
        nurse.param("From"),
        Some("+14155550199"),
        "the line the caller is on"
    );
    assert_eq!(nurse.param("Timeout"), Some("20"));
    assert_eq!(
        nurse.param("Twiml"),
        Some(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say>The caller asks about opening hours.</Say><Dial><Conference endConferenceOnExit=\"true\">{room}</Conference></Dial></Response>").as_str())
    );
    let person_callback = format!("/v1/sessions/twilio/transfers/{}/person", placed.session_id);
    assert_eq!(
        nurse.param("StatusCallback"),
        Some(server.url(&person_callback).as_str())
    );
    assert_eq!(
        nurse.params("StatusCallbackEvent"),
        vec!["answered", "completed"]
    );
    let hold = updates(&heard.twilio_at_close, call_sid);
    assert_eq!(hold.len(), 1, "{hold:?}");
    assert_eq!(
        hold[0].param("Twiml"),
        Some(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say>Please hold while I connect you.</Say><Dial><Conference startConferenceOnEnter=\"false\" endConferenceOnExit=\"true\">{room}</Conference></Dial></Response>").as_str())
    );
    let ended = session_once(&server, &key, &placed.session_id, |s| {
        s["status"] != "active" && !call_events(s).is_empty()
    })
    .await;
    assert_eq!(ended["endReason"], "transferred", "{ended}");
    assert_eq!(
        call_events(&ended)[0]["detail"],
        json!({"name": "nurse", "number": "+14155550143", "mode": "warm", "by": "agent", "outcome": "calling"})
    );

    // The nurse's line is busy: the caller's call is brought back to the agent.
    let busy = [
        ("AccountSid", ACCOUNT_SID),
        ("CallSid", "CA21000000000000000000000000000044"),
        ("CallStatus", "busy"),
    ];
    assert_eq!(
        twilio_webhook(&server, &person_callback, &busy, false)
            .await
            .status(),
        403
    );
    let answer = twilio_webhook(&server, &person_callback, &busy, true).await;
    assert_eq!(answer.status(), 204);
    let back = updates(&twilio.requests(), call_sid);
    assert_eq!(back.len(), 2, "{back:?}");
    let (_, claims) = stream_token(back[1].param("Twiml").unwrap());
    assert_eq!(claims["prev"], placed.session_id.as_str());
    assert_eq!(
        claims["say"],
        "I'm sorry, I could not reach nurse: the line was busy. Is there anything else I can help you with?"
    );
    let settled = session_once(&server, &key, &placed.session_id, |s| {
        call_events(s)[0]["detail"]["outcome"] == "busy"
    })
    .await;
    assert_eq!(
        call_events(&settled)[0]["detail"]["outcome"],
        "busy",
        "{settled}"
    );
    // The same report again changes nothing more.
    let again = twilio_webhook(&server, &person_callback, &busy, true).await;
    assert_eq!(again.status(), 204);
    assert_eq!(updates(&twilio.requests(), call_sid).len(), 2);
}
