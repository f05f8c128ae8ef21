//! The developer portal as a developer and an attacker meet it: sign-in with a code sent by
//! SMS through the Twilio stand-in (or written to the log), burnt and expired codes, rate
//! limits per number and per address, the session cookie and its CSRF token, sign-out and
//! expiry on the server, API keys and portal sessions kept apart, developers kept apart, the
//! operator's `developers link-phone` and a developer's own linking with an API key (its
//! refusals and its rate limit), and the whole thing in headless Chromium: sign in, create a
//! key, open a real session's timeline; link an empty account, create, edit, talk to and
//! archive an agent in the editor.
//!
//! The browser test needs `node`, Debian's `chromium` (`scripts/system-deps --test`) and
//! playwright-core (`scripts/browser-deps`). It fails when one is missing, unless
//! `SWITCHBOARD_TEST_NO_BROWSER` is set, which skips it.

mod common;
#[path = "common/twilio_mock.rs"]
mod twilio_mock;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, SET_COOKIE};
use reqwest::{Method, RequestBuilder};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use twilio_mock::TwilioMock;

const SMS_FROM: &str = "+15005550006";
const PHONE_A: &str = "+14155550100";
const PHONE_B: &str = "+14155550199";

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn server_with(env: &[(String, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Server::start_with(Storage::fresh().await, &env).await
}

fn header(response: &reqwest::Response, name: impl reqwest::header::AsHeaderName) -> &str {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

async fn request_code(server: &Server, phone: &str) -> (u16, Value) {
    call(
        server
            .http
            .post(server.url("/portal/api/sign-in/code"))
            .json(&json!({ "phone": phone })),
    )
    .await
}

/// The challenge id a code request answered.
fn challenge(sent: &Value) -> String {
    let id = sent["challengeId"].as_str().expect("a challengeId");
    assert!(id.len() >= 40, "{sent}");
    id.to_string()
}

/// Asks for a code (it must be sent) and answers its challenge id.
async fn code_requested(server: &Server, phone: &str) -> String {
    let (status, sent) = request_code(server, phone).await;
    assert_eq!(status, 202, "{sent}");
    challenge(&sent)
}

/// The `Set-Cookie` header of `response` that sets cookie `name`, whole.
fn set_cookie_of(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_string)
}

/// The `name=value` of a Set-Cookie header, when it sets a value.
fn cookie_pair(set_cookie: &str) -> Option<String> {
    let pair = set_cookie.split(';').next()?;
    pair.split_once('=')
        .filter(|(_, value)| !value.is_empty())
        .map(|_| pair.to_string())
}

/// Presents a code for the challenge `challenge`; answers (status, body, the session cookie's
/// `name=value` if one was set, the session's whole Set-Cookie header).
async fn verify(
    server: &Server,
    phone: &str,
    challenge: &str,
    code: &str,
) -> (u16, Value, Option<String>, String) {
    let response = server
        .http
        .post(server.url("/portal/api/sign-in/verify"))
        .json(&json!({ "phone": phone, "challengeId": challenge, "code": code }))
        .send()
        .await
        .unwrap();
    let set_cookie = set_cookie_of(&response, "sb_portal").unwrap_or_default();
    let cookie = cookie_pair(&set_cookie);
    let (status, body) = json_of(response).await;
    (status, body, cookie, set_cookie)
}

/// The newest code the server wrote to its log for `phone` (no SMS sender configured).
fn code_from_log(server: &Server, phone: &str) -> Option<String> {
    let marker = format!("sign-in code for {phone} is ");
    server.log().lines().rev().find_map(|line| {
        let rest = &line[line.find(&marker)? + marker.len()..];
        let code: String = rest.chars().take(6).collect();
        (code.len() == 6 && code.chars().all(|c| c.is_ascii_digit())).then_some(code)
    })
}

/// A signed-in browser, as far as HTTP goes: its cookie and CSRF token.
struct Browser<'a> {
    server: &'a Server,
    cookie: String,
    csrf: String,
    developer: String,
}

impl Browser<'_> {
    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        no_redirects()
            .request(method, self.server.url(path))
            .header("Cookie", &self.cookie)
    }

    fn get(&self, path: &str) -> RequestBuilder {
        self.request(Method::GET, path)
    }

    /// A state-changing request as the portal's own page sends it.
    fn send(&self, method: Method, path: &str) -> RequestBuilder {
        self.request(method, path)
            .header("X-CSRF-Token", &self.csrf)
            .header("Origin", &self.server.base)
    }

    fn post(&self, path: &str, body: Value) -> RequestBuilder {
        self.send(Method::POST, path).json(&body)
    }
}

async fn finish_sign_in<'a>(
    server: &'a Server,
    phone: &str,
    challenge: &str,
    code: &str,
) -> Browser<'a> {
    let (status, body, cookie, _) = verify(server, phone, challenge, code).await;
    assert_eq!(status, 200, "{body}");
    let browser = Browser {
        server,
        cookie: cookie.expect("a session cookie"),
        csrf: body["csrfToken"].as_str().unwrap().to_string(),
        developer: body["developerId"].as_str().unwrap().to_string(),
    };
    assert!(!browser.csrf.is_empty());
    browser
}

/// Signs in with the code written to the log.
async fn sign_in<'a>(server: &'a Server, phone: &str) -> Browser<'a> {
    let (status, sent) = request_code(server, phone).await;
    assert_eq!(status, 202, "{sent}");
    assert_eq!(sent["channel"], "log", "{sent}");
    let code = code_from_log(server, phone).expect("the code is in the server log");
    finish_sign_in(server, phone, &challenge(&sent), &code).await
}

/// A six-digit code other than `code`.
fn other_code(code: &str, n: u32) -> String {
    let value: u32 = code.parse().unwrap();
    format!("{:06}", (value + n) % 1_000_000)
}

#[tokio::test]
async fn a_developer_signs_in_with_a_code_sent_by_sms() {
    let twilio = TwilioMock::start();
    let server = server_with(&twilio.sms_env(SMS_FROM)).await;

    let (status, sent) = request_code(&server, "+1 (415) 555-0100").await;
    assert_eq!(status, 202, "{sent}");
    assert_eq!(sent["phone"], PHONE_A);
    assert_eq!(sent["channel"], "sms");
    assert!(is_iso_millis(&sent["expiresAt"]), "{sent}");

    // Twilio's Messages API got the code, with the account's credentials.
    let messages = twilio.messages();
    assert_eq!(messages.len(), 1);
    let message = &messages[0];
    assert_eq!(
        message.path,
        format!(
            "/2010-04-01/Accounts/{}/Messages.json",
            twilio_mock::ACCOUNT_SID
        )
    );
    assert!(message.authorization.starts_with("Basic "));
    assert!(message
        .content_type
        .starts_with("application/x-www-form-urlencoded"));
    assert_eq!(message.param("To"), Some(PHONE_A));
    assert_eq!(message.param("From"), Some(SMS_FROM));
    let code = twilio.last_code_for(PHONE_A).expect("a 6-digit code");
    assert!(message
        .param("Body")
        .unwrap()
        .contains("expires in 10 minutes"));
    // The code is nowhere in the server's log when it went by SMS.
    assert!(!server.log().contains(&code), "{}", server.log());

    let first = challenge(&sent);
    let (status, body, cookie, set_cookie) = verify(&server, PHONE_A, &first, &code).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["created"], true);
    let developer = body["developerId"].as_str().unwrap().to_string();
    assert!(developer.starts_with("dev_"), "{body}");
    let lower = set_cookie.to_ascii_lowercase();
    assert!(lower.contains("httponly"), "{set_cookie}");
    assert!(lower.contains("samesite=lax"), "{set_cookie}");
    assert!(lower.contains("path=/portal"), "{set_cookie}");
    assert!(!lower.contains("secure"), "plain-http server: {set_cookie}");
    let cookie = cookie.expect("session cookie");
    // The cookie holds a random id, not the developer or the phone.
    assert!(!cookie.contains(&developer) && !cookie.contains("4155550100"));

    let browser = Browser {
        server: &server,
        cookie: cookie.clone(),
        csrf: body["csrfToken"].as_str().unwrap().to_string(),
        developer: developer.clone(),
    };
    let (status, me) = json_of(browser.get("/portal/api/session").send().await.unwrap()).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["developerId"], developer.as_str());
    assert_eq!(me["phone"], PHONE_A);
    assert_eq!(me["csrfToken"], body["csrfToken"]);
    assert_eq!(me["billingConfigured"], false);
    for field in ["signedInAt", "idleExpiresAt", "expiresAt"] {
        assert!(is_iso_millis(&me[field]), "{field}: {me}");
    }

    // A used code cannot sign in again.
    let (status, again, cookie_again, _) = verify(&server, PHONE_A, &first, &code).await;
    assert_eq!(status, 401, "{again}");
    assert_eq!(error_code(&again), "unauthorized");
    assert!(cookie_again.is_none());

    // The pages open with the session.
    let response = browser.get("/portal/keys").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, CONTENT_TYPE), "text/html; charset=utf-8");
    assert!(header(&response, CONTENT_SECURITY_POLICY).contains("frame-ancestors 'none'"));
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("/portal/assets/app.js"));

    // The same number signs in to the same developer next time.
    let again = code_requested(&server, PHONE_A).await;
    let code = twilio.last_code_for(PHONE_A).unwrap();
    let second = finish_sign_in(&server, PHONE_A, &again, &code).await;
    assert_eq!(second.developer, developer);
    assert_ne!(second.cookie, browser.cookie);
    // Both sessions live side by side (two browsers).
    let response = browser.get("/portal/api/session").send().await.unwrap();
    assert_eq!(response.status(), 200);

    // A number Twilio cannot text is the caller's error; nothing is kept for it.
    let (status, body) = request_code(&server, "+15005550009").await;
    assert_invalid(status, &body, "phone", "an unreachable number");
    // Twilio refusing our credentials is the upstream's failure.
    let server_bad = server_with(
        &twilio
            .sms_env(SMS_FROM)
            .into_iter()
            .map(|(k, v)| {
                if k.ends_with("AUTH_TOKEN") {
                    (k, "wrong".to_string())
                } else {
                    (k, v)
                }
            })
            .collect::<Vec<_>>(),
    )
    .await;
    let (status, body) = request_code(&server_bad, PHONE_B).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(error_code(&body), "upstream_error");
}

#[tokio::test]
async fn without_an_sms_sender_the_code_is_written_to_the_log() {
    let server = Server::start().await;
    assert!(
        server
            .log()
            .contains("portal sign-in codes are written to this log"),
        "{}",
        server.log()
    );
    let browser = sign_in(&server, PHONE_A).await;
    assert!(browser.developer.starts_with("dev_"));
    let (status, _) = json_of(browser.get("/portal/api/session").send().await.unwrap()).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn bad_numbers_and_codes_are_refused_with_the_field_named() {
    let server = Server::start().await;
    for phone in ["", "4155550100", "+0155550100", "+1415", "+1415555010x"] {
        let (status, body) = request_code(&server, phone).await;
        assert_invalid(status, &body, "phone", phone);
    }
    let (status, body) = call(
        server
            .http
            .post(server.url("/portal/api/sign-in/code"))
            .json(&json!({ "phone": PHONE_A, "extra": 1 })),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = call(
        server
            .http
            .post(server.url("/portal/api/sign-in/code"))
            .body("phone=+14155550100")
            .header("Content-Type", "application/x-www-form-urlencoded"),
    )
    .await;
    assert_eq!(status, 415, "{body}");
    assert!(
        code_from_log(&server, PHONE_A).is_none(),
        "no code was made"
    );

    let asked = code_requested(&server, PHONE_A).await;
    for code in ["", "12345", "1234567", "12a456"] {
        let (status, body, cookie, _) = verify(&server, PHONE_A, &asked, code).await;
        assert_invalid(status, &body, "code", code);
        assert!(cookie.is_none());
    }
    // A code without the challenge it was sent for is refused on that field.
    let code = code_from_log(&server, PHONE_A).unwrap();
    for missing in ["", "   "] {
        let (status, body, cookie, _) = verify(&server, PHONE_A, missing, &code).await;
        assert_invalid(status, &body, "challengeId", missing);
        assert!(cookie.is_none());
    }
    let (status, body) = call(
        server
            .http
            .post(server.url("/portal/api/sign-in/verify"))
            .json(&json!({ "phone": PHONE_A, "code": code })),
    )
    .await;
    assert_invalid(status, &body, "challengeId", "no challengeId");
    // Malformed codes and missing challenges cost no try: the real code still works.
    finish_sign_in(&server, PHONE_A, &asked, &code).await;
    // GET on the sign-in routes is the documented 405.
    let (status, body) = call(server.http.get(server.url("/portal/api/sign-in/code"))).await;
    assert_eq!(status, 405, "{body}");
    assert_eq!(error_code(&body), "method_not_allowed");
}

#[tokio::test]
async fn five_wrong_codes_burn_the_code() {
    let server = Server::start().await;
    let asked = code_requested(&server, PHONE_A).await;
    let code = code_from_log(&server, PHONE_A).unwrap();
    for n in 1..=4 {
        let (status, body, cookie, _) =
            verify(&server, PHONE_A, &asked, &other_code(&code, n)).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(error_code(&body), "unauthorized");
        let left = 5 - n;
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("{left} tr")),
            "{body}"
        );
        assert!(cookie.is_none());
    }
    let (status, body, _, _) = verify(&server, PHONE_A, &asked, &other_code(&code, 5)).await;
    assert_eq!(status, 401);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no longer works"),
        "{body}"
    );
    // The right code no longer signs in.
    let (status, body, cookie, _) = verify(&server, PHONE_A, &asked, &code).await;
    assert_eq!(status, 401, "{body}");
    assert!(cookie.is_none());

    // A new code works; a code works only with its own challenge, and a newer request does
    // not replace an older code (each answers its own browser).
    let older_challenge = code_requested(&server, PHONE_A).await;
    let older = code_from_log(&server, PHONE_A).unwrap();
    let newer_challenge = code_requested(&server, PHONE_A).await;
    let newer = code_from_log(&server, PHONE_A).unwrap();
    if older != newer {
        let (status, body, cookie, _) = verify(&server, PHONE_A, &newer_challenge, &older).await;
        assert_eq!(status, 401, "{body}");
        assert!(cookie.is_none());
    }
    finish_sign_in(&server, PHONE_A, &older_challenge, &older).await;
    finish_sign_in(&server, PHONE_A, &newer_challenge, &newer).await;
}

#[tokio::test]
async fn an_expired_code_is_refused() {
    let server = server_with(&[("SWITCHBOARD__PORTAL__CODE_TTL_SECONDS".into(), "1".into())]).await;
    let asked = code_requested(&server, PHONE_A).await;
    let code = code_from_log(&server, PHONE_A).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, body, cookie, _) = verify(&server, PHONE_A, &asked, &code).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{body}"
    );
    assert!(cookie.is_none());
}

#[tokio::test]
async fn code_requests_are_rate_limited_per_number_and_per_address() {
    let twilio = TwilioMock::start();
    let mut env = twilio.sms_env(SMS_FROM);
    env.push((
        "SWITCHBOARD__PORTAL__CODE_REQUESTS_PER_PHONE".into(),
        "2".into(),
    ));
    env.push((
        "SWITCHBOARD__PORTAL__CODE_REQUESTS_PER_IP".into(),
        "3".into(),
    ));
    let server = server_with(&env).await;
    let mut challenges = Vec::new();
    for _ in 0..2 {
        challenges.push(code_requested(&server, PHONE_A).await);
    }
    let response = server
        .http
        .post(server.url("/portal/api/sign-in/code"))
        .json(&json!({ "phone": PHONE_A }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(header(&response, "x-ratelimit-limit"), "2");
    let retry: u64 = header(&response, "retry-after").parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    let (_, body) = json_of(response).await;
    assert_eq!(error_code(&body), "rate_limited");
    assert_eq!(twilio.messages().len(), 2, "no SMS for a refused request");

    // Another number from the same address: the third request of the address passes...
    let (status, body) = request_code(&server, PHONE_B).await;
    assert_eq!(status, 202, "{body}");
    // ...and the fourth is refused, whatever the number.
    let response = server
        .http
        .post(server.url("/portal/api/sign-in/code"))
        .json(&json!({ "phone": "+14155550142" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(header(&response, "x-ratelimit-limit"), "3");
    assert_eq!(twilio.messages().len(), 3);

    // The codes already sent still work.
    let code = twilio.last_code_for(PHONE_A).unwrap();
    finish_sign_in(&server, PHONE_A, &challenges[1], &code).await;
}

/// Asks for a code for `phone` as a browser at `address` (behind a proxy that sets
/// `X-Forwarded-For`), with the `cookies` it holds.
async fn request_code_as(
    server: &Server,
    phone: &str,
    address: &str,
    cookies: &str,
) -> (u16, Value) {
    let mut request = server
        .http
        .post(server.url("/portal/api/sign-in/code"))
        .header("X-Forwarded-For", address)
        .json(&json!({ "phone": phone }));
    if !cookies.is_empty() {
        request = request.header("Cookie", cookies);
    }
    call(request).await
}

/// A stranger who asks for codes for the owner's number, from many addresses, and tries
/// wrong codes for it, used to lock the owner out for the hour: now the owner's browser (known
/// to the number since its last sign-in) still gets a code, a code the owner waits for is
/// neither replaced nor burnt by the stranger, and an IPv6 stranger counts by its /64.
#[tokio::test]
async fn a_stranger_cannot_lock_the_owner_out_of_sign_in() {
    let twilio = TwilioMock::start();
    let mut env = twilio.sms_env(SMS_FROM);
    for (name, value) in [
        ("CODE_REQUESTS_PER_PHONE", "5"),
        ("CODE_REQUESTS_PER_PHONE_PER_IP", "2"),
        ("CODE_REQUESTS_PER_IP", "20"),
        ("TRUST_FORWARDED_FOR", "true"),
    ] {
        env.push((format!("SWITCHBOARD__PORTAL__{name}"), value.into()));
    }
    let server = server_with(&env).await;
    const OWNER: &str = "198.51.100.7";

    // The owner signs in once: the browser is given the device cookie, bound to the number.
    let (status, sent) = request_code_as(&server, PHONE_A, OWNER, "").await;
    assert_eq!(status, 202, "{sent}");
    let code = twilio.last_code_for(PHONE_A).unwrap();
    let response = server
        .http
        .post(server.url("/portal/api/sign-in/verify"))
        .json(&json!({ "phone": PHONE_A, "challengeId": challenge(&sent), "code": code }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let device_header = set_cookie_of(&response, "sb_portal_device").expect("a device cookie");
    let lower = device_header.to_ascii_lowercase();
    assert!(lower.contains("httponly"), "{device_header}");
    assert!(lower.contains("samesite=strict"), "{device_header}");
    assert!(
        lower.contains("path=/portal/api/sign-in"),
        "{device_header}"
    );
    let device = cookie_pair(&device_header).unwrap();
    assert!(!device.contains("4155550100"), "{device}");

    // The owner starts signing in again, and waits for the code.
    let (status, sent) = request_code_as(&server, PHONE_A, OWNER, &device).await;
    assert_eq!(status, 202, "{sent}");
    let owners_challenge = challenge(&sent);
    let owners_code = twilio.last_code_for(PHONE_A).unwrap();

    // A stranger asks for codes for the number: two per address, from an IPv4 address and
    // from two addresses of one IPv6 /64 (whose every address counts as one).
    let mut strangers_challenges = Vec::new();
    for address in [
        "203.0.113.1",
        "203.0.113.1",
        "2001:db8:7:7::1",
        "2001:db8:7:7::2",
    ] {
        let (status, sent) = request_code_as(&server, PHONE_A, address, "").await;
        assert_eq!(status, 202, "{address}: {sent}");
        strangers_challenges.push(challenge(&sent));
    }
    let (status, body) = request_code_as(&server, PHONE_A, "203.0.113.1", "").await;
    assert_eq!(status, 429, "a third from one address: {body}");
    let (status, body) = request_code_as(&server, PHONE_A, "2001:db8:7:7::3", "").await;
    assert_eq!(status, 429, "a third from the same /64: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this address, for this number"),
        "{body}"
    );
    // Five codes for browsers that had not signed in with the number (the owner's first and
    // the stranger's four): the number-wide limit is reached, whatever the address.
    let (status, body) = request_code_as(&server, PHONE_A, "203.0.113.99", "").await;
    assert_eq!(status, 429, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("have not signed in with this number"),
        "{body}"
    );
    // A device cookie made for another number, or forged, does not lift it.
    for forged in [
        "sb_portal_device=abc.def".to_string(),
        device.replace("sb_portal_device=", "sb_portal_device=x"),
    ] {
        let (status, body) = request_code_as(&server, PHONE_A, "203.0.113.99", &forged).await;
        assert_eq!(status, 429, "{forged}: {body}");
    }
    let (status, body) = request_code_as(&server, PHONE_B, OWNER, &device).await;
    assert_eq!(status, 202, "another number is its own count: {body}");

    // The stranger's wrong tries, with its own challenges or none of the owner's, burn only
    // the stranger's codes.
    for n in 1..=5 {
        let wrong = other_code(&owners_code, n);
        let (status, body, cookie, _) =
            verify(&server, PHONE_A, &strangers_challenges[0], &wrong).await;
        assert_eq!(status, 401, "{body}");
        assert!(cookie.is_none());
        let (status, body, cookie, _) = verify(
            &server,
            PHONE_A,
            "made-up-challenge-id-of-forty-chars-0000",
            &wrong,
        )
        .await;
        assert_eq!(status, 401, "{body}");
        assert!(cookie.is_none());
    }
    // The owner's code with a stranger's challenge is refused too: the code is not theirs.
    let (status, body, cookie, _) =
        verify(&server, PHONE_A, &strangers_challenges[1], &owners_code).await;
    assert_eq!(status, 401, "{body}");
    assert!(cookie.is_none());

    // The owner still signs in with the code it waited for...
    let owner = finish_sign_in(&server, PHONE_A, &owners_challenge, &owners_code).await;
    // ...and, the number-wide limit notwithstanding, gets new codes in its own browser,
    // wherever it is now.
    let (status, sent) = request_code_as(&server, PHONE_A, "198.51.100.8", &device).await;
    assert_eq!(status, 202, "{sent}");
    let code = twilio.last_code_for(PHONE_A).unwrap();
    let again = finish_sign_in(&server, PHONE_A, &challenge(&sent), &code).await;
    assert_eq!(again.developer, owner.developer);
    // Per address it stays bounded like anyone (two for the number in the window).
    let (status, body) = request_code_as(&server, PHONE_A, OWNER, &device).await;
    assert_eq!(status, 429, "{body}");
}

#[tokio::test]
async fn an_api_key_gets_nothing_from_the_portal() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let http = no_redirects();
    let (status, agent) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "secret-agent", "name": "Secret"}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    let keys_before = all_ids_at(&server, &key, "/v1/keys", 100).await;

    for path in [
        "/portal/api/session",
        "/portal/api/keys",
        "/portal/api/agents",
        "/portal/api/agents/secret-agent",
        "/portal/api/collections",
        "/portal/api/usage",
        "/portal/api/billing/subscription",
        "/portal/api/observability/sessions",
        "/portal/api/recordings/anything",
        "/portal/api/no-such-route",
    ] {
        let response = http
            .get(server.url(path))
            .header("Authorization", format!("Bearer {key}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{path}");
        assert_eq!(header(&response, "www-authenticate"), "", "{path}");
        let (_, body) = json_of(response).await;
        assert_eq!(error_code(&body), "unauthorized", "{path}");
        assert!(!body.to_string().contains("secret-agent"), "{path}: {body}");
    }
    for (method, path) in [
        (Method::POST, "/portal/api/keys"),
        (Method::DELETE, "/portal/api/agents/secret-agent"),
        (Method::POST, "/portal/api/sign-out"),
    ] {
        let (status, body) = call(
            http.request(method, server.url(path))
                .header("Authorization", format!("Bearer {key}"))
                .header("X-CSRF-Token", "anything")
                .json(&json!({"name": "sneaky"})),
        )
        .await;
        assert_eq!(status, 401, "{path}: {body}");
    }
    for path in [
        "/portal",
        "/portal/",
        "/portal/keys",
        "/portal/usage",
        "/portal/agents",
        "/portal/sessions",
        "/portal/sessions/sess_1",
    ] {
        let response = http
            .get(server.url(path))
            .header("Authorization", format!("Bearer {key}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303, "{path}");
        assert_eq!(header(&response, LOCATION), "/portal/sign-in", "{path}");
        assert!(response.bytes().await.unwrap().is_empty(), "{path}");
    }
    // Nothing changed: the key made no key and archived no agent.
    assert_eq!(
        all_ids_at(&server, &key, "/v1/keys", 100).await,
        keys_before
    );
    let (status, _) = call(server.get("/v1/agents/secret-agent", &key)).await;
    assert_eq!(status, 200);
    // The sign-in page itself is public.
    let response = http
        .get(server.url("/portal/sign-in"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = http
        .get(server.url("/portal/assets/sign-in.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        header(&response, CONTENT_TYPE),
        "text/javascript; charset=utf-8"
    );
    let (status, _) = call(http.get(server.url("/portal/assets/index.html"))).await;
    assert_eq!(status, 404, "pages are served only through their routes");
}

#[tokio::test]
async fn a_portal_session_gets_nothing_from_v1() {
    let server = Server::start().await;
    let browser = sign_in(&server, PHONE_A).await;
    for path in ["/v1/keys", "/v1/agents", "/v1/usage"] {
        let (status, body) = call(
            no_redirects()
                .get(server.url(path))
                .header("Cookie", &browser.cookie)
                .header("X-CSRF-Token", &browser.csrf),
        )
        .await;
        assert_eq!(status, 401, "{path}: {body}");
        assert_eq!(error_code(&body), "unauthorized");
    }
    let (status, _) = call(
        no_redirects()
            .post(server.url("/v1/keys"))
            .header("Cookie", &browser.cookie)
            .header("X-CSRF-Token", &browser.csrf)
            .json(&json!({})),
    )
    .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn state_changing_requests_need_the_csrf_token_and_the_same_origin() {
    let server = Server::start().await;
    let browser = sign_in(&server, PHONE_A).await;
    let attempts: Vec<(&str, RequestBuilder)> = vec![
        (
            "no token",
            browser
                .request(Method::POST, "/portal/api/keys")
                .json(&json!({"name": "x"})),
        ),
        (
            "wrong token",
            browser
                .request(Method::POST, "/portal/api/keys")
                .header("X-CSRF-Token", "bm90LXRoZS10b2tlbg")
                .json(&json!({"name": "x"})),
        ),
        (
            "another site's origin",
            browser
                .request(Method::POST, "/portal/api/keys")
                .header("X-CSRF-Token", &browser.csrf)
                .header("Origin", "http://evil.example")
                .json(&json!({"name": "x"})),
        ),
        (
            "a cross-site fetch",
            browser
                .request(Method::POST, "/portal/api/keys")
                .header("X-CSRF-Token", &browser.csrf)
                .header("Sec-Fetch-Site", "cross-site")
                .json(&json!({"name": "x"})),
        ),
        (
            "sign-out without a token",
            browser.request(Method::POST, "/portal/api/sign-out"),
        ),
    ];
    for (case, request) in attempts {
        let (status, body) = call(request).await;
        assert_eq!(status, 403, "{case}: {body}");
        assert_eq!(error_code(&body), "forbidden", "{case}");
    }
    // Nothing was created, and the session still works.
    let (status, keys) = json_of(browser.get("/portal/api/keys").send().await.unwrap()).await;
    assert_eq!(status, 200, "{keys}");
    assert_eq!(keys["data"], json!([]), "{keys}");
    // Sign-in from another site is refused as well.
    let (status, body) = call(
        server
            .http
            .post(server.url("/portal/api/sign-in/code"))
            .header("Origin", "http://evil.example")
            .json(&json!({"phone": PHONE_B})),
    )
    .await;
    assert_eq!(status, 403, "{body}");

    // With the token and the same origin, a key is made, shown once, and works on /v1.
    let (status, issued) = call(browser.post("/portal/api/keys", json!({"name": "ci"}))).await;
    assert_eq!(status, 201, "{issued}");
    let raw = issued["key"].as_str().unwrap().to_string();
    assert!(raw.starts_with("sb_live_"));
    let (status, _) = call(server.get("/v1/keys", &raw)).await;
    assert_eq!(status, 200);
    let (status, keys) = json_of(browser.get("/portal/api/keys").send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(keys["data"].as_array().unwrap().len(), 1);
    assert!(
        !keys.to_string().contains(&raw),
        "lists never show the raw key"
    );
    // Revoked through the portal: refused on the very next /v1 request.
    let id = issued["id"].as_str().unwrap();
    let (status, _) = call(browser.send(Method::DELETE, &format!("/portal/api/keys/{id}"))).await;
    assert_eq!(status, 204);
    let (status, _) = call(server.get("/v1/keys", &raw)).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn signing_out_ends_the_session_on_the_server() {
    let server = Server::start().await;
    let browser = sign_in(&server, PHONE_A).await;
    let response = browser
        .send(Method::POST, "/portal/api/sign-out")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let cleared = header(&response, SET_COOKIE).to_ascii_lowercase();
    assert!(
        cleared.starts_with("sb_portal=;") && cleared.contains("max-age=0"),
        "{cleared}"
    );
    // The old cookie, replayed, is refused everywhere.
    let (status, body) = json_of(browser.get("/portal/api/session").send().await.unwrap()).await;
    assert_eq!(status, 401, "{body}");
    let response = browser.get("/portal/keys").send().await.unwrap();
    assert_eq!(response.status(), 303);
    let (status, _) = call(browser.post("/portal/api/keys", json!({}))).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn sessions_end_when_idle_and_at_their_absolute_limit() {
    let server = server_with(&[(
        "SWITCHBOARD__PORTAL__SESSION_IDLE_SECONDS".into(),
        "2".into(),
    )])
    .await;
    let browser = sign_in(&server, PHONE_A).await;
    // Used every half second, the session lives on past its idle limit...
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(3000) {
        let response = browser.get("/portal/api/session").send().await.unwrap();
        assert_eq!(response.status(), 200, "{:?}", started.elapsed());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // ...and left alone, it ends.
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let response = browser.get("/portal/api/session").send().await.unwrap();
    assert_eq!(response.status(), 401);

    let server = server_with(&[(
        "SWITCHBOARD__PORTAL__SESSION_MAX_SECONDS".into(),
        "2".into(),
    )])
    .await;
    let browser = sign_in(&server, PHONE_A).await;
    let started = Instant::now();
    let mut ended = None;
    while started.elapsed() < Duration::from_secs(5) {
        let response = browser.get("/portal/api/session").send().await.unwrap();
        if response.status() == 401 {
            ended = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let ended = ended.expect("the session ended at its absolute limit");
    assert!(ended >= Duration::from_millis(1500), "{ended:?}");
}

#[tokio::test]
async fn operators_link_a_phone_to_an_existing_developer() {
    let server = Server::start().await;
    let storage = &server.storage;
    let (ok, _, stderr) = storage.cli(&[
        "developers",
        "link-phone",
        "--developer",
        "dev_local",
        "--phone",
        "415-555-0100",
    ]);
    assert!(!ok, "not E.164");
    assert!(stderr.contains("E.164"), "{stderr}");
    let (ok, _, stderr) = storage.cli(&[
        "developers",
        "link-phone",
        "--developer",
        "dev_nobody",
        "--phone",
        PHONE_A,
    ]);
    assert!(!ok);
    assert!(stderr.contains("no developer"), "{stderr}");
    let (ok, stdout, stderr) = storage.cli(&[
        "developers",
        "link-phone",
        "--developer",
        "dev_local",
        "--phone",
        "+1 415 555 0100",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(PHONE_A), "{stdout}");

    let browser = sign_in(&server, PHONE_A).await;
    assert_eq!(browser.developer, "dev_local");
    // The developer's existing key is listed in the portal.
    let (status, keys) = json_of(browser.get("/portal/api/keys").send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(keys["data"].as_array().unwrap().len(), 1, "{keys}");

    // A number belongs to one developer.
    let other = sign_in(&server, PHONE_B).await;
    let (ok, _, stderr) = storage.cli(&[
        "developers",
        "link-phone",
        "--developer",
        "dev_local",
        "--phone",
        PHONE_B,
    ]);
    assert!(!ok);
    assert!(stderr.contains(&other.developer), "{stderr}");
}

/// Links the signed-in browser's number with `key`; answers (status, body, the new session
/// cookie's `name=value` when the session was re-issued).
async fn link(browser: &Browser<'_>, key: &str) -> (u16, Value, Option<String>) {
    let response = browser
        .post("/portal/api/account/link", json!({ "apiKey": key }))
        .send()
        .await
        .unwrap();
    let cookie = set_cookie_of(&response, "sb_portal").and_then(|c| cookie_pair(&c));
    let (status, body) = json_of(response).await;
    (status, body, cookie)
}

#[tokio::test]
async fn a_developer_links_their_phone_to_the_account_of_an_api_key() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, revoked) = call(server.post("/v1/keys", &key, json!({"name": "old"}))).await;
    assert_eq!(status, 201, "{revoked}");
    let revoked_id = revoked["id"].as_str().unwrap();
    let (status, _) = call(
        server
            .http
            .delete(server.url(&format!("/v1/keys/{revoked_id}")))
            .bearer_auth(&key),
    )
    .await;
    assert_eq!(status, 204);

    // A number no developer knew signs in to a new, empty developer.
    let browser = sign_in(&server, PHONE_A).await;
    assert_ne!(browser.developer, "dev_local");

    // Like every state-changing portal request: the CSRF token and the same origin.
    let body = json!({ "apiKey": key });
    let (status, refused) = call(
        browser
            .request(Method::POST, "/portal/api/account/link")
            .json(&body),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    let (status, refused) = call(
        browser
            .request(Method::POST, "/portal/api/account/link")
            .header("X-CSRF-Token", &browser.csrf)
            .header("Origin", "https://evil.example")
            .json(&body),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "forbidden");

    // Unknown, revoked and missing keys are refused naming the field.
    for (presented, says) in [
        ("sb_live_not_a_key", "invalid API key"),
        ("something else", "invalid API key"),
        (revoked["key"].as_str().unwrap(), "revoked"),
        ("  ", "required"),
    ] {
        let (status, refused, cookie) = link(&browser, presented).await;
        assert_eq!(status, 400, "{presented}: {refused}");
        assert_eq!(refused["error"]["code"], "validation_error", "{refused}");
        assert_eq!(refused["error"]["param"], "apiKey", "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{presented}: {message}");
        assert!(cookie.is_none());
    }
    let (status, refused) =
        call(browser.post("/portal/api/account/link", json!({"key": key}))).await;
    assert_eq!(status, 400, "{refused}");

    // A live key moves the number: the session is re-issued for the key's developer and the
    // old cookie ends.
    let (status, linked, cookie) = link(&browser, &key).await;
    assert_eq!(status, 200, "{linked}");
    assert_eq!(linked["developerId"], "dev_local");
    assert_eq!(linked["linked"], true);
    let cookie = cookie.expect("a new session cookie");
    assert_ne!(cookie, browser.cookie);
    let (status, _) = json_of(browser.get("/portal/api/session").send().await.unwrap()).await;
    assert_eq!(status, 401, "the empty developer's session ended");
    let relinked = Browser {
        server: &server,
        cookie,
        csrf: linked["csrfToken"].as_str().unwrap().to_string(),
        developer: "dev_local".into(),
    };
    let (status, me) = json_of(relinked.get("/portal/api/session").send().await.unwrap()).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["developerId"], "dev_local");
    assert_eq!(me["phone"], PHONE_A);
    assert_eq!(me["csrfToken"], linked["csrfToken"]);
    let (status, keys) = json_of(relinked.get("/portal/api/keys").send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(keys["data"].as_array().unwrap().len(), 1, "{keys}");
    // Linking again changes nothing.
    let (status, again, cookie) = link(&relinked, &key).await;
    assert_eq!((status, &again["linked"]), (200, &json!(false)), "{again}");
    assert!(cookie.is_none());
    // The next sign-in lands on the key's developer.
    assert_eq!(sign_in(&server, PHONE_A).await.developer, "dev_local");

    // A developer that a number already signs in to cannot be taken with a key alone.
    let stranger = sign_in(&server, PHONE_B).await;
    let (status, refused, cookie) = link(&stranger, &key).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "conflict");
    assert!(cookie.is_none());
    assert_eq!(
        sign_in(&server, PHONE_B).await.developer,
        stranger.developer
    );
    assert_eq!(sign_in(&server, PHONE_A).await.developer, "dev_local");
}

#[tokio::test]
async fn an_account_with_keys_of_its_own_is_not_left_behind_by_linking() {
    let server = Server::start().await;
    let (status, other) = json_of(
        server
            .post("/v1/keys", server.key(), json!({"name": "ci"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{other}");
    let browser = sign_in(&server, PHONE_B).await;
    let (status, own) = call(browser.post("/portal/api/keys", json!({"name": "mine"}))).await;
    assert_eq!(status, 201, "{own}");
    let (status, refused, cookie) = link(&browser, other["key"].as_str().unwrap()).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("API keys"),
        "{refused}"
    );
    assert!(cookie.is_none());
    let (status, me) = json_of(browser.get("/portal/api/session").send().await.unwrap()).await;
    assert_eq!(
        (status, &me["developerId"]),
        (200, &json!(browser.developer))
    );
}

#[tokio::test]
async fn guessing_keys_to_link_is_rate_limited() {
    let server = Server::start().await;
    let browser = sign_in(&server, PHONE_A).await;
    // portal.code_max_attempts (5) refused keys in the window, then 429 even for a good one.
    for n in 0..5 {
        let (status, refused, _) = link(&browser, &format!("sb_live_guess{n}")).await;
        assert_eq!(status, 400, "{refused}");
    }
    let (status, limited, _) = link(&browser, server.key()).await;
    assert_eq!(status, 429, "{limited}");
    assert_eq!(limited["error"]["code"], "rate_limited");
    // Another number from the same address is held back too.
    let other = sign_in(&server, PHONE_B).await;
    let (status, _, _) = link(&other, server.key()).await;
    assert_eq!(status, 429);
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Reads events until one satisfies `until` (or 30 s pass); answers them.
async fn read_until(socket: &mut Socket, until: impl Fn(&Value) -> bool) -> Vec<Value> {
    let started = Instant::now();
    let limit = Duration::from_secs(30);
    let mut events = Vec::new();
    while started.elapsed() < limit {
        let Ok(Some(Ok(message))) =
            tokio::time::timeout(limit - started.elapsed(), socket.next()).await
        else {
            break;
        };
        if let Message::Text(text) = message {
            let event: Value = serde_json::from_str(&text).unwrap();
            let done = until(&event);
            events.push(event);
            if done {
                break;
            }
        }
    }
    events
}

/// A recorded direct session with agent `agent`: the greeting is interrupted, then a typed
/// question is answered. Answers the session id.
async fn run_session(server: &Server, key: &str, agent: &str) -> String {
    let greeting = "Thank you for calling the city library. Our opening hours are nine to five \
                    on weekdays and ten to two on Saturdays, and the reading room stays open late.";
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": agent, "name": "Library", "firstMessage": greeting, "maxTokens": 30,
               "metadata": {"recordDirectSessions": true}}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
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
    let events = read_until(&mut socket, |e| e["type"] == "agent.audio.start").await;
    let session_id = events
        .iter()
        .find(|e| e["type"] == "session.started")
        .and_then(|e| e["sessionId"].as_str())
        .map(str::to_string);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let send = |value: Value| Message::text(value.to_string());
    socket
        .send(send(json!({"type": "interrupt"})))
        .await
        .unwrap();
    read_until(&mut socket, |e| e["type"] == "turn.metrics").await;
    socket
        .send(send(
            json!({"type": "text", "text": "When do you open on Saturday?"}),
        ))
        .await
        .unwrap();
    read_until(&mut socket, |e| {
        e["type"] == "turn.metrics" && e["speaker"] == "agent"
    })
    .await;
    socket.send(send(json!({"type": "end"}))).await.unwrap();
    read_until(&mut socket, |e| e["type"] == "session.ended").await;
    // The session's id, from its start event or else from the list.
    let (status, page) =
        call(server.get(&format!("/v1/observability/sessions?agentId={agent}"), key)).await;
    assert_eq!(status, 200, "{page}");
    let listed = page["data"][0]["id"].as_str().unwrap().to_string();
    if let Some(id) = session_id {
        assert_eq!(id, listed);
    }
    // The recording is finished once the session is stored as ended.
    let started = Instant::now();
    loop {
        let response = server
            .get(&format!("/v1/recordings/{listed}"), key)
            .send()
            .await
            .unwrap();
        if response.status() == 200 || started.elapsed() > Duration::from_secs(10) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    listed
}

#[tokio::test]
async fn developers_only_see_and_touch_their_own() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (ok, _, stderr) = server.storage.cli(&[
        "developers",
        "link-phone",
        "--developer",
        "dev_local",
        "--phone",
        PHONE_A,
    ]);
    assert!(ok, "{stderr}");
    let session_id = run_session(&server, &key, "library").await;
    let (status, listed) = call(server.get("/v1/keys", &key)).await;
    assert_eq!(status, 200);
    let key_id = listed["data"][0]["id"].as_str().unwrap().to_string();

    let owner = sign_in(&server, PHONE_A).await;
    let intruder = sign_in(&server, PHONE_B).await;
    assert_ne!(owner.developer, intruder.developer);

    // The owner sees the session, its root cause and its recording.
    let (status, detail) = json_of(
        owner
            .get(&format!("/portal/api/observability/sessions/{session_id}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{detail}");
    assert!(detail["turns"].as_array().unwrap().len() >= 3, "{detail}");
    let response = owner
        .get(&format!("/portal/api/recordings/{session_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, CONTENT_TYPE), "audio/wav");

    // The intruder gets 404 for each of them, and empty lists.
    for path in [
        format!("/portal/api/observability/sessions/{session_id}"),
        format!("/portal/api/observability/sessions/{session_id}/root-cause"),
        format!("/portal/api/recordings/{session_id}"),
        "/portal/api/agents/library".to_string(),
    ] {
        let (status, body) = json_of(intruder.get(&path).send().await.unwrap()).await;
        assert_not_found(status, &body, &path);
    }
    for path in [
        "/portal/api/keys",
        "/portal/api/agents",
        "/portal/api/observability/sessions",
    ] {
        let (status, page) = json_of(intruder.get(path).send().await.unwrap()).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(page["data"], json!([]), "{path}: {page}");
    }
    for (method, path) in [
        (Method::DELETE, format!("/portal/api/keys/{key_id}")),
        (Method::POST, format!("/portal/api/keys/{key_id}/rotate")),
        (Method::DELETE, "/portal/api/agents/library".to_string()),
    ] {
        let (status, body) = call(intruder.send(method, &path)).await;
        assert_not_found(status, &body, &path);
    }
    // The owner's key and agent are untouched.
    let (status, _) = call(server.get("/v1/agents/library", &key)).await;
    assert_eq!(status, 200);
}

/// Finds `node`.
fn node() -> Option<String> {
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| "node".to_string())
}

fn browser_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Where scripts/browser-deps installed playwright-core.
fn node_modules() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("SWITCHBOARD_TEST_NODE_MODULES") {
        candidates.push(PathBuf::from(dir));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/switchboard/browser-node/node_modules"));
    }
    candidates.push(browser_dir().join("node_modules"));
    candidates
        .into_iter()
        .find(|dir| dir.join("playwright-core").is_dir())
}

#[tokio::test]
async fn a_developer_signs_in_creates_a_key_and_reads_a_timeline_in_a_real_browser() {
    if std::env::var_os("SWITCHBOARD_TEST_NO_BROWSER").is_some() {
        eprintln!("skipping the portal browser test: SWITCHBOARD_TEST_NO_BROWSER is set");
        return;
    }
    let node = node().expect("node is not installed: run scripts/system-deps --test");
    let chromium = std::env::var("SWITCHBOARD_TEST_CHROMIUM")
        .unwrap_or_else(|_| "/usr/bin/chromium".to_string());
    assert!(
        Path::new(&chromium).exists(),
        "Chromium is not installed at {chromium}: run scripts/system-deps --test"
    );
    let modules =
        node_modules().expect("playwright-core is not installed: run scripts/browser-deps");

    let twilio = TwilioMock::start();
    let server = server_with(&twilio.sms_env(SMS_FROM)).await;
    let key = server.key().to_string();
    let (ok, _, stderr) = server.storage.cli(&[
        "developers",
        "link-phone",
        "--developer",
        "dev_local",
        "--phone",
        PHONE_A,
    ]);
    assert!(ok, "{stderr}");
    let session_id = run_session(&server, &key, "library").await;
    let (status, detail) =
        call(server.get(&format!("/v1/observability/sessions/{session_id}"), &key)).await;
    assert_eq!(status, 200, "{detail}");
    let turns = detail["turns"].as_array().unwrap().clone();

    let scratch = tempfile::tempdir().unwrap();
    let screenshot = scratch.path().join("portal-timeline.png");
    let started = Instant::now();
    let run = tokio::process::Command::new(node)
        .arg(browser_dir().join("portal.mjs"))
        .arg(&server.base)
        .arg(PHONE_A)
        .arg(&session_id)
        .arg(&screenshot)
        .env("SWITCHBOARD_TEST_NODE_MODULES", &modules)
        .env("SWITCHBOARD_TEST_CHROMIUM", &chromium)
        .env("SWITCHBOARD_TEST_TWILIO_URL", &twilio.url)
        .env("SWITCHBOARD_TEST_TWILIO_SID", twilio_mock::ACCOUNT_SID)
        .env("SWITCHBOARD_TEST_TWILIO_TOKEN", twilio_mock::AUTH_TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the browser run finished within 120 s")
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser run failed ({:?}):\n{stdout}\n{stderr}\nserver log:\n{}",
        output.status,
        server.log()
    );
    let result: Value = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no RESULT line in:\n{stdout}\n{stderr}"));
    eprintln!(
        "browser run took {:.1} s: {result}",
        started.elapsed().as_secs_f32()
    );

    // Signed in through the sign-in page with the code the stand-in received.
    assert_eq!(result["redirectedTo"], "/portal/sign-in", "{result}");
    assert_eq!(result["developer"], "dev_local", "{result}");
    assert!(!twilio.messages().is_empty());
    // The raw key was shown once, works on /v1, and is not shown again.
    let raw = result["rawKey"].as_str().unwrap();
    assert!(raw.starts_with("sb_live_"), "{result}");
    let (status, _) = call(server.get("/v1/agents", raw)).await;
    assert_eq!(status, 200);
    assert_eq!(result["rawKeyShownAfterReload"], false, "{result}");
    assert!(result["keyRows"].as_u64().unwrap() >= 2, "{result}");

    // The timeline has a row per turn, bars where stages ran, and the interruption.
    let timeline = &result["timeline"];
    assert_eq!(
        timeline["rows"].as_u64().unwrap() as usize,
        turns.len(),
        "{result}"
    );
    let count = |stage: &str| {
        turns
            .iter()
            .filter(|t| t[format!("{stage}Ms")].as_i64().unwrap_or(0) > 0)
            .count() as u64
    };
    assert_eq!(timeline["stt"], count("stt"), "{result}");
    assert_eq!(timeline["llm"], count("llm"), "{result}");
    assert_eq!(timeline["tts"], count("tts"), "{result}");
    assert!(count("tts") >= 2 && count("llm") >= 1, "{detail}");
    let interrupted = turns.iter().filter(|t| t["interrupted"] == true).count() as u64;
    assert!(interrupted >= 1, "{detail}");
    assert_eq!(timeline["interruptions"], interrupted, "{result}");
    assert!(
        timeline["barWidths"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w.as_f64().unwrap() > 0.0),
        "{result}"
    );
    assert_eq!(result["turnRows"].as_u64().unwrap() as usize, turns.len());
    assert!(
        result["recordingSrc"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/portal/api/recordings/{session_id}")),
        "{result}"
    );
    assert!(
        result["recordingDuration"].as_f64().unwrap() > 0.5,
        "{result}"
    );
    // The screenshot was taken: a PNG of some size.
    let png = std::fs::read(&screenshot).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 5_000);
    if let Some(dir) = std::env::var_os("SWITCHBOARD_TEST_ARTIFACTS") {
        let kept = PathBuf::from(dir).join("portal-timeline.png");
        std::fs::write(&kept, &png).expect("keep the screenshot");
    }
}

#[tokio::test]
async fn a_developer_links_their_account_then_creates_edits_and_talks_to_an_agent_in_a_real_browser(
) {
    if std::env::var_os("SWITCHBOARD_TEST_NO_BROWSER").is_some() {
        eprintln!("skipping the portal browser test: SWITCHBOARD_TEST_NO_BROWSER is set");
        return;
    }
    let node = node().expect("node is not installed: run scripts/system-deps --test");
    let chromium = std::env::var("SWITCHBOARD_TEST_CHROMIUM")
        .unwrap_or_else(|_| "/usr/bin/chromium".to_string());
    assert!(
        Path::new(&chromium).exists(),
        "Chromium is not installed at {chromium}: run scripts/system-deps --test"
    );
    let modules =
        node_modules().expect("playwright-core is not installed: run scripts/browser-deps");

    let twilio = TwilioMock::start();
    let server = server_with(&twilio.sms_env(SMS_FROM)).await;
    let key = server.key().to_string();
    let (status, revoked) = call(server.post("/v1/keys", &key, json!({"name": "old"}))).await;
    assert_eq!(status, 201, "{revoked}");
    let revoked_id = revoked["id"].as_str().unwrap();
    let (status, _) = call(server.delete(&format!("/v1/keys/{revoked_id}"), &key)).await;
    assert_eq!(status, 204);
    let (status, collection) =
        call(server.post("/v1/collections", &key, json!({"name": "Front desk facts"}))).await;
    assert_eq!(status, 201, "{collection}");
    let collection_id = collection["id"].as_str().unwrap().to_string();

    let shots = std::env::var_os("SWITCHBOARD_TEST_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("switchboard-portal-shots"));
    let run = tokio::process::Command::new(node)
        .arg(browser_dir().join("portal-agents.mjs"))
        .arg(&server.base)
        .arg(PHONE_B)
        .arg(&shots)
        .env("SWITCHBOARD_TEST_NODE_MODULES", &modules)
        .env("SWITCHBOARD_TEST_CHROMIUM", &chromium)
        .env("SWITCHBOARD_TEST_TWILIO_URL", &twilio.url)
        .env("SWITCHBOARD_TEST_TWILIO_SID", twilio_mock::ACCOUNT_SID)
        .env("SWITCHBOARD_TEST_TWILIO_TOKEN", twilio_mock::AUTH_TOKEN)
        .env("SWITCHBOARD_TEST_LINK_KEY", &key)
        .env(
            "SWITCHBOARD_TEST_REVOKED_KEY",
            revoked["key"].as_str().unwrap(),
        )
        .env("SWITCHBOARD_TEST_COLLECTION", &collection_id)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(150), run)
        .await
        .expect("the browser run finished within 150 s")
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser run failed ({:?}):\n{stdout}\n{stderr}\nserver log:\n{}",
        output.status,
        server.log()
    );
    let result: Value = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no RESULT line in:\n{stdout}\n{stderr}"));
    eprintln!("browser run: {result}");

    // The empty account said it can be linked; a revoked key was refused at the field; the
    // live key linked the number, and the page is now the key's account.
    assert!(!result["whoBefore"].as_str().unwrap().contains("dev_local"));
    assert!(
        result["emptyPageText"]
            .as_str()
            .unwrap()
            .contains("Already have an API key?"),
        "{result}"
    );
    assert!(
        result["revokedError"].as_str().unwrap().contains("revoked"),
        "{result}"
    );
    assert_eq!(result["revokedInvalid"], "true");
    assert!(
        result["whoAfter"].as_str().unwrap().ends_with("dev_local"),
        "{result}"
    );
    assert_eq!(
        result["linkFormAfter"], 0,
        "an account with keys is not offered linking"
    );
    assert_eq!(result["keyInRequests"], false);

    // The editor offered the account's collections and the catalog's providers and voices.
    let options = result["collectionOptions"].as_array().unwrap();
    assert!(options.contains(&json!(collection_id)), "{result}");
    assert!(
        result["ttsProviders"]
            .as_array()
            .unwrap()
            .contains(&json!("default")),
        "{result}"
    );
    assert!(result["voiceCount"].as_u64().unwrap() > 1, "{result}");
    assert_eq!(result["created"]["id"], "front-desk", "{result}");
    assert_eq!(result["created"]["collection"], json!(collection_id));
    // The API's validation error stood next to the field.
    assert!(
        result["temperatureError"]
            .as_str()
            .unwrap()
            .contains("temperature"),
        "{result}"
    );
    assert_eq!(result["temperatureInvalid"], "true");

    // The edit saved (the editor shows the stored agent the save answered), metadata intact.
    let saved = &result["afterSave"];
    assert_eq!(
        saved["description"], "Answers the front desk line.",
        "{result}"
    );
    assert_eq!(saved["temperature"], "0.3", "{result}");
    assert_eq!(saved["maxTokens"], "40", "{result}");
    assert_eq!(saved["collection"], json!(collection_id), "{result}");
    assert_eq!(
        saved["metadata"],
        json!({"note": "kept", "turnTaking": {"endpointSilenceMs": 700}}),
        "{result}"
    );
    // Archived through the page: gone from the list and from /v1.
    assert_eq!(result["listedAfterArchive"], 0, "{result}");
    let (status, body) = call(server.get("/v1/agents/front-desk", &key)).await;
    assert_not_found(status, &body, "the archived agent");

    // "Talk to it" connected the widget to that agent, which greeted the caller.
    assert_eq!(result["widgetAgent"], "front-desk");
    assert!(
        result["greeting"]
            .as_str()
            .unwrap()
            .contains("front desk test line"),
        "{result}"
    );
    let (status, sessions) =
        call(server.get("/v1/observability/sessions?agentId=front-desk", &key)).await;
    assert_eq!(status, 200);
    assert!(
        !sessions["data"].as_array().unwrap().is_empty(),
        "{sessions}"
    );

    // No page asked for anything that is not there (a favicon included).
    assert_eq!(result["notFound"], json!([]), "{result}");
    assert_eq!(result["faviconRequests"], 0, "{result}");
}
