#![allow(dead_code)]
//! A local stand-in for Twilio's REST API (reference/protocols.md §3.1): `POST
//! /2010-04-01/Accounts/{AccountSid}/Calls.json` with HTTP Basic auth (account SID and auth
//! token) and a form body, answered 201 with a Call resource (`sid`, `status: queued`,
//! `direction: outbound-api`, RFC 2822 dates, ...). Wrong credentials answer 401 with
//! Twilio's error body (code 20003); `To` = `+15005550001` (Twilio's magic "invalid number")
//! answers 400 with code 21211. Every request's form is kept, repeated keys included.

use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::Engine as _;
use bytes::Bytes;
use serde_json::json;

pub const ACCOUNT_SID: &str = "AC0123456789abcdef0123456789abcdef";
pub const AUTH_TOKEN: &str = "twilio-auth-token-for-tests";

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
                    App::new().app_data(web::Data::new(shared.clone())).route(
                        "/2010-04-01/Accounts/{sid}/Calls.json",
                        web::post().to(create_call),
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
}

async fn create_call(
    req: HttpRequest,
    sid: web::Path<String>,
    body: Bytes,
    seen: web::Data<Arc<Mutex<Vec<TwilioRequest>>>>,
) -> HttpResponse {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let request = TwilioRequest {
        path: req.path().to_string(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        form,
    };
    seen.lock().unwrap().push(request.clone());
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT_SID}:{AUTH_TOKEN}"))
    );
    if request.authorization != expected || sid.as_str() != ACCOUNT_SID {
        return HttpResponse::Unauthorized().json(json!({
            "code": 20003, "message": "Authenticate",
            "more_info": "https://www.twilio.com/docs/errors/20003", "status": 401}));
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
