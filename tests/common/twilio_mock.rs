#![allow(dead_code)]
//! A local stand-in for Twilio's REST API (reference/protocols.md §3.1): `POST
//! /2010-04-01/Accounts/{AccountSid}/Calls.json` with HTTP Basic auth (account SID and auth
//! token) and a form body, answered 201 with a Call resource (`sid`, `status: queued`,
//! `direction: outbound-api`, RFC 2822 dates, ...). Wrong credentials answer 401 with
//! Twilio's error body (code 20003); `To` = `+15005550001` (Twilio's magic "invalid number")
//! answers 400 with code 21211. Every request's form is kept, repeated keys included.
//!
//! Calls are updated at `POST .../Calls/{CallSid}.json` (`Status=completed`, `Twiml=`):
//! [`GONE_CALL_SID`] answers Twilio's 404 with code 20404, [`BROKEN_CALL_SID`] a 500.
//!
//! Also Twilio's Messages API: `POST .../Messages.json` (`To`, `From` or
//! `MessagingServiceSid`, `Body`), answered 201 with a Message resource (`status: queued`);
//! `To` = `+15005550009` (Twilio's magic "cannot receive SMS") answers 400 with code 21614.
//! `GET .../Messages.json?To=` lists the messages sent, newest first, as Twilio's list
//! resource does, so a browser test can read the code a developer would receive.
//!
//! Also Twilio's side of its webhooks to the server: [`twilio_post`] posts a form the way
//! Twilio does, with the signature [`signed`] computes.

use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::Engine as _;
use bytes::Bytes;
use serde_json::json;

pub const ACCOUNT_SID: &str = "AC0123456789abcdef0123456789abcdef";
pub const AUTH_TOKEN: &str = "twilio-auth-token-for-tests";

/// Form parameters as Twilio posts them.
pub fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Twilio's signature of a webhook to `path` on `server` with `params`.
pub fn signed(
    server: &crate::common::Server,
    path: &str,
    params: &[(String, String)],
) -> Option<String> {
    Some(switchboard::telephony::signature::sign(
        AUTH_TOKEN,
        &server.url(path),
        params,
    ))
}

/// POSTs a form as Twilio does, with the given signature header (if any).
pub async fn twilio_post(
    server: &crate::common::Server,
    path: &str,
    params: &[(String, String)],
    signature: Option<String>,
) -> reqwest::Response {
    let mut request = server
        .http
        .post(server.url(path))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(params)
                .finish(),
        );
    if let Some(signature) = signature {
        request = request.header("X-Twilio-Signature", signature);
    }
    request.send().await.unwrap()
}

/// One REST request the stand-in received.
#[derive(Debug, Clone)]
pub struct TwilioRequest {
    pub path: String,
    pub authorization: String,
    pub content_type: String,
    pub form: Vec<(String, String)>,
}

impl TwilioRequest {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn params(&self, name: &str) -> Vec<&str> {
        self.form
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

pub struct TwilioMock {
    pub url: String,
    pub seen: Arc<Mutex<Vec<TwilioRequest>>>,
}

impl TwilioMock {
    pub fn start() -> TwilioMock {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = seen.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::new(shared.clone()))
                        .route(
                            "/2010-04-01/Accounts/{sid}/Calls.json",
                            web::post().to(create_call),
                        )
                        .route(
                            "/2010-04-01/Accounts/{sid}/Calls/{call}",
                            web::post().to(update_call),
                        )
                        .route(
                            "/2010-04-01/Accounts/{sid}/Messages.json",
                            web::post().to(create_message),
                        )
                        .route(
                            "/2010-04-01/Accounts/{sid}/Messages.json",
                            web::get().to(list_messages),
                        )
                })
                .workers(1)
                .listen(listener)
                .unwrap()
                .run()
                .await
                .unwrap();
            });
        });
        TwilioMock { url, seen }
    }

    /// Environment pointing the server's Twilio client at this stand-in.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "SWITCHBOARD__TELEPHONY__TWILIO__BASE_URL".into(),
                self.url.clone(),
            ),
            (
                "SWITCHBOARD__TELEPHONY__TWILIO__ACCOUNT_SID".into(),
                ACCOUNT_SID.into(),
            ),
            (
                "SWITCHBOARD__TELEPHONY__TWILIO__AUTH_TOKEN".into(),
                AUTH_TOKEN.into(),
            ),
        ]
    }

    pub fn requests(&self) -> Vec<TwilioRequest> {
        self.seen.lock().unwrap().clone()
    }

    /// The calls placed (`Calls.json` requests, accepted or not), oldest first.
    pub fn calls(&self) -> Vec<TwilioRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/Calls.json"))
            .collect()
    }

    /// The SMS requests received (accepted or not), oldest first.
    pub fn messages(&self) -> Vec<TwilioRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/Messages.json"))
            .collect()
    }

    /// The 6-digit code in the newest SMS sent to `to`.
    pub fn last_code_for(&self, to: &str) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .find(|m| m.param("To") == Some(to))
            .and_then(|m| code_in(m.param("Body")?))
    }

    /// Environment that also makes the server send SMS from `from`.
    pub fn sms_env(&self, from: &str) -> Vec<(String, String)> {
        let mut env = self.env();
        env.push((
            "SWITCHBOARD__TELEPHONY__TWILIO__SMS_FROM".into(),
            from.to_string(),
        ));
        env
    }
}

/// The first run of exactly six digits in a text.
pub fn code_in(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_digit())
        .find(|run| run.len() == 6)
        .map(str::to_string)
}

fn authorised(req: &HttpRequest, sid: &str) -> bool {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT_SID}:{AUTH_TOKEN}"))
    );
    req.headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(expected.as_str())
        && sid == ACCOUNT_SID
}

/// Reads a form-encoded REST request as the stand-in keeps it, and keeps it.
fn record(req: &HttpRequest, body: &Bytes, seen: &Mutex<Vec<TwilioRequest>>) -> TwilioRequest {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let request = TwilioRequest {
        path: req.path().to_string(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        form: url::form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
    };
    seen.lock().unwrap().push(request.clone());
    request
}

fn unauthorised() -> HttpResponse {
    HttpResponse::Unauthorized().json(json!({
        "code": 20003, "message": "Authenticate",
        "more_info": "https://www.twilio.com/docs/errors/20003", "status": 401}))
}

fn message_json(
    sid: &str,
    to: &str,
    from: &str,
    body: &str,
    service: Option<&str>,
) -> serde_json::Value {
    let date = "Mon, 23 Nov 2026 17:00:00 +0000";
    json!({
        "sid": sid, "account_sid": ACCOUNT_SID, "api_version": "2010-04-01",
        "body": body, "date_created": date, "date_updated": date, "date_sent": null,
        "direction": "outbound-api", "error_code": null, "error_message": null,
        "from": from, "messaging_service_sid": service, "num_media": "0", "num_segments": "1",
        "price": null, "price_unit": "USD", "status": "queued", "to": to,
        "uri": format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/{sid}.json"),
        "subresource_uris": {"media": format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/{sid}/Media.json")}
    })
}

async fn create_message(
    req: HttpRequest,
    sid: web::Path<String>,
    body: Bytes,
    seen: web::Data<Arc<Mutex<Vec<TwilioRequest>>>>,
) -> HttpResponse {
    let request = record(&req, &body, &seen);
    if !authorised(&req, &sid) {
        return unauthorised();
    }
    let to = request.param("To").unwrap_or("").to_string();
    let from = request.param("From").unwrap_or("").to_string();
    let service = request.param("MessagingServiceSid");
    let text = request.param("Body").unwrap_or("");
    if to.is_empty() || text.is_empty() || (from.is_empty() && service.is_none()) {
        return HttpResponse::BadRequest().json(json!({
            "code": 21604, "message": "A 'To', 'Body' and 'From' or 'MessagingServiceSid' are required.",
            "more_info": "https://www.twilio.com/docs/errors/21604", "status": 400}));
    }
    if to == "+15005550009" {
        return HttpResponse::BadRequest().json(json!({
            "code": 21614, "message": format!("'To' number {to} is not a valid mobile number"),
            "more_info": "https://www.twilio.com/docs/errors/21614", "status": 400}));
    }
    let message_sid = format!("SM{}", uuid::Uuid::new_v4().simple());
    HttpResponse::Created().json(message_json(&message_sid, &to, &from, text, service))
}

async fn list_messages(
    req: HttpRequest,
    sid: web::Path<String>,
    query: web::Query<std::collections::HashMap<String, String>>,
    seen: web::Data<Arc<Mutex<Vec<TwilioRequest>>>>,
) -> HttpResponse {
    if !authorised(&req, &sid) {
        return unauthorised();
    }
    let to = query.get("To").cloned();
    let messages: Vec<serde_json::Value> = seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .filter(|r| r.path.ends_with("/Messages.json"))
        .filter(|r| to.as_deref().is_none_or(|to| r.param("To") == Some(to)))
        .enumerate()
        .map(|(i, r)| {
            message_json(
                &format!("SM{i:032}"),
                r.param("To").unwrap_or(""),
                r.param("From").unwrap_or(""),
                r.param("Body").unwrap_or(""),
                r.param("MessagingServiceSid"),
            )
        })
        .collect();
    HttpResponse::Ok().json(json!({
        "messages": messages,
        "end": messages.len().saturating_sub(1), "first_page_uri": req.uri().to_string(),
        "next_page_uri": null, "page": 0, "page_size": 50, "previous_page_uri": null,
        "start": 0, "uri": req.uri().to_string()
    }))
}

async fn create_call(
    req: HttpRequest,
    sid: web::Path<String>,
    body: Bytes,
    seen: web::Data<Arc<Mutex<Vec<TwilioRequest>>>>,
) -> HttpResponse {
    let request = record(&req, &body, &seen);
    if !authorised(&req, &sid) {
        return unauthorised();
    }
    let to = request.param("To").unwrap_or("").to_string();
    let from = request.param("From").unwrap_or("").to_string();
    if to == "+15005550001" {
        return HttpResponse::BadRequest().json(json!({
            "code": 21211, "message": format!("The 'To' number {to} is not a valid phone number."),
            "more_info": "https://www.twilio.com/docs/errors/21211", "status": 400}));
    }
    let call_sid = format!("CA{}", uuid::Uuid::new_v4().simple());
    let date = "Mon, 23 Nov 2026 17:00:00 +0000";
    HttpResponse::Created().json(json!({
        "sid": call_sid, "account_sid": ACCOUNT_SID, "parent_call_sid": null,
        "to": to, "to_formatted": to, "from": from, "from_formatted": from,
        "phone_number_sid": null, "status": "queued", "start_time": null, "end_time": null,
        "duration": null, "price": null, "price_unit": "USD", "direction": "outbound-api",
        "answered_by": null, "api_version": "2010-04-01", "forwarded_from": null,
        "group_sid": null, "caller_name": null, "queue_time": "0", "trunk_sid": null,
        "date_created": date, "date_updated": date,
        "uri": format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}.json"),
        "subresource_uris": {
            "recordings": format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}/Recordings.json"),
            "streams": format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}/Streams.json")
        }
    }))
}

/// The call SID the stand-in answers as already gone: Twilio's 404 with code 20404.
pub const GONE_CALL_SID: &str = "CA00000000000000000000000000000404";

/// The call SID the stand-in cannot update: Twilio's 500 (an outage on its side).
pub const BROKEN_CALL_SID: &str = "CA00000000000000000000000000000500";

/// `POST .../Calls/{CallSid}.json`: a live call updated (`Status=completed` hangs it up).
async fn update_call(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: Bytes,
    seen: web::Data<Arc<Mutex<Vec<TwilioRequest>>>>,
) -> HttpResponse {
    let (sid, call) = path.into_inner();
    let request = record(&req, &body, &seen);
    if !authorised(&req, &sid) {
        return unauthorised();
    }
    let Some(call_sid) = call.strip_suffix(".json") else {
        return HttpResponse::NotFound().finish();
    };
    if call_sid == GONE_CALL_SID {
        return HttpResponse::NotFound().json(json!({
            "code": 20404, "message": format!("The requested resource /2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}.json was not found"),
            "more_info": "https://www.twilio.com/docs/errors/20404", "status": 404}));
    }
    if call_sid == BROKEN_CALL_SID {
        return HttpResponse::InternalServerError().json(json!({
            "code": 20500, "message": "Internal Server Error",
            "more_info": "https://www.twilio.com/docs/errors/20500", "status": 500}));
    }
    let status = request.param("Status").unwrap_or("in-progress").to_string();
    let date = "Mon, 23 Nov 2026 17:00:00 +0000";
    HttpResponse::Ok().json(json!({
        "sid": call_sid, "account_sid": ACCOUNT_SID, "status": status,
        "direction": "inbound", "api_version": "2010-04-01",
        "date_created": date, "date_updated": date,
        "uri": format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{call_sid}.json"),
    }))
}
