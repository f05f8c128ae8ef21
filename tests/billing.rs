//! Credits, usage and billing as a developer meets them: what each kind of work costs, the
//! usage report and headers, 402 once the allowance is spent (reads still work), period
//! rollover with carryover, checkout and portal at a local payment-processor stand-in, and
//! the processor's signed webhooks moving the developer's tier.

mod common;

use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use chrono::{Datelike, NaiveDate, Utc};
use common::*;
use serde_json::{json, Value};
use switchboard::billing::webhook::sign;

const SECRET_KEY: &str = "sk_test_standin";
const WEBHOOK_SECRET: &str = "whsec_test_secret";

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("{name} is present"))
}

async fn usage(server: &Server, key: &str) -> Value {
    let (status, body) = call(server.get("/v1/usage", key)).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn subscription(server: &Server, key: &str) -> Value {
    let (status, body) = call(server.get("/v1/billing/subscription", key)).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn new_collection(server: &Server, key: &str) -> String {
    let (status, body) = call(server.post("/v1/collections", key, json!({"name": "docs"}))).await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn each_kind_of_work_is_charged_by_the_price_list_and_reported() {
    let server = Server::start_with(
        Storage::fresh().await,
        &[
            ("SWITCHBOARD__PRICING__TTS_PER_1K_CHARACTERS", "100"),
            ("SWITCHBOARD__PRICING__STT_PER_MINUTE", "60"),
            ("SWITCHBOARD__PRICING__LLM_PER_1K_INPUT_TOKENS", "1"),
            ("SWITCHBOARD__PRICING__LLM_PER_1K_OUTPUT_TOKENS", "1"),
            ("SWITCHBOARD__PRICING__RAG_PER_1K_EMBEDDED_TOKENS", "10"),
            ("SWITCHBOARD__PRICING__RAG_PER_SEARCH", "2"),
        ],
    )
    .await;
    let key = server.key().to_string();
    let start = usage(&server, &key).await;
    assert_eq!(start["credits"]["used"], 0.0, "{start}");
    assert_eq!(start["credits"]["limit"], 1000.0, "{start}");

    // Speech synthesis: 10 characters at 100 credits per 1,000.
    let response = server
        .post("/v1/synthesize", &key, json!({"text": "Hello you."}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let _ = response.bytes().await.unwrap();
    let after_tts = usage(&server, &key).await;
    assert_eq!(after_tts["breakdown"]["tts"], 1.0, "{after_tts}");

    // Transcription: 11 s of speech at 60 credits per minute = 1 credit per second.
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(fixture("jfk.flac")).file_name("jfk.flac"),
        )
        .text("mode", "fast")
        .text("language", "en");
    let (status, transcript) = call(
        server
            .request(reqwest::Method::POST, "/v1/transcribe", &key)
            .multipart(form),
    )
    .await;
    assert_eq!(status, 200, "{transcript}");
    let seconds = transcript["duration"].as_f64().unwrap();
    let after_stt = usage(&server, &key).await;
    let stt = after_stt["breakdown"]["stt"].as_f64().unwrap();
    assert!(
        (stt - seconds).abs() < 0.05,
        "{stt} credits for {seconds} s"
    );

    // Knowledge: embedded tokens at ingest, then a flat price per search.
    let collection = new_collection(&server, &key).await;
    let (status, ingested) = call(server.post(
        &format!("/v1/collections/{collection}/ingest"),
        &key,
        json!({"content": "The library opens at nine and closes at five on weekdays."}),
    ))
    .await;
    assert_eq!(status, 201, "{ingested}");
    let tokens = ingested["tokensUsed"].as_f64().unwrap();
    let (status, _) = call(server.post(
        &format!("/v1/collections/{collection}/search"),
        &key,
        json!({"query": "opening hours"}),
    ))
    .await;
    assert_eq!(status, 200);
    let after_rag = usage(&server, &key).await;
    let rag = after_rag["breakdown"]["rag"].as_f64().unwrap();
    assert!(
        (rag - (tokens / 1000.0 * 10.0 + 2.0)).abs() < 0.001,
        "{rag} for {tokens} tokens and one search"
    );

    // Language model: prompt and generated tokens, as the chat reports them.
    let (status, agent) = call(server.post(
        "/v1/agents",
        &key,
        json!({"name": "Terse", "systemPrompt": "Answer in one short sentence.", "maxTokens": 16}),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");
    let (status, chat) = call(server.post(
        &format!("/v1/agents/{}/chat", agent["id"].as_str().unwrap()),
        &key,
        json!({"message": "Say hello."}),
    ))
    .await;
    assert_eq!(status, 200, "{chat}");
    let tokens = chat["usage"]["inputTokens"].as_f64().unwrap()
        + chat["usage"]["outputTokens"].as_f64().unwrap();
    let response = server.get("/v1/usage", &key).send().await.unwrap();
    let (current, remaining) = (
        header(&response, "x-usage-current").to_string(),
        header(&response, "x-usage-remaining").to_string(),
    );
    assert_eq!(header(&response, "x-usage-bypassed"), "false");
    let (_, report) = json_of(response).await;
    let llm = report["breakdown"]["llm"].as_f64().unwrap();
    assert!(
        (llm - tokens / 1000.0).abs() < 0.001,
        "{llm} for {tokens} tokens"
    );

    // The report adds up, and the headers agree with it.
    let breakdown = &report["breakdown"];
    let sum: f64 = ["tts", "stt", "llm", "rag"]
        .iter()
        .map(|k| breakdown[k].as_f64().unwrap())
        .sum();
    let used = report["credits"]["used"].as_f64().unwrap();
    assert!((used - sum).abs() < 0.001, "{report}");
    assert!((current.parse::<f64>().unwrap() - used).abs() < 0.001);
    assert!(
        (remaining.parse::<f64>().unwrap() - report["credits"]["remaining"].as_f64().unwrap())
            .abs()
            < 0.001
    );
    assert!(report["requestCount"].as_i64().unwrap() >= 8, "{report}");

    // What is counted survives a restart (flushed to storage).
    let server = server.restart().await;
    let after = usage(&server, &key).await;
    assert!(
        (after["credits"]["used"].as_f64().unwrap() - used).abs() < 0.001,
        "{after}"
    );
}

#[tokio::test]
async fn spent_credits_refuse_metered_work_with_402_while_reads_keep_working() {
    let server = Server::start_with(
        Storage::fresh().await,
        &[
            ("SWITCHBOARD__TIERS__STARTER__MONTHLY_CREDITS", "1"),
            ("SWITCHBOARD__PRICING__RAG_PER_SEARCH", "0.6"),
        ],
    )
    .await;
    let key = server.key().to_string();
    let collection = new_collection(&server, &key).await;
    let search = || {
        server.post(
            &format!("/v1/collections/{collection}/search"),
            &key,
            json!({"query": "anything"}),
        )
    };
    // 0.6, then 1.2: work that starts with credits left runs to its end.
    for _ in 0..2 {
        let (status, body) = call(search()).await;
        assert_eq!(status, 200, "{body}");
    }
    let response = search().send().await.unwrap();
    assert_eq!(header(&response, "x-usage-remaining"), "0");
    assert_eq!(header(&response, "x-usage-limit"), "1");
    let (status, body) = json_of(response).await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(error_code(&body), "insufficient_credits");
    // Nothing more was charged for the refused search.
    let report = usage(&server, &key).await;
    assert!(
        (report["credits"]["used"].as_f64().unwrap() - 1.2).abs() < 1e-9,
        "{report}"
    );
    assert_eq!(report["credits"]["remaining"], 0.0);

    // Reads, key management and billing keep working.
    for path in [
        "/v1/collections",
        "/v1/keys",
        "/v1/billing/subscription",
        "/v1/agents",
    ] {
        let (status, body) = call(server.get(path, &key)).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (status, body) = call(server.post("/v1/keys", &key, json!({"name": "more"}))).await;
    assert_eq!(status, 201, "{body}");
    // Metered work of every kind is refused.
    let (status, body) = call(server.post("/v1/synthesize", &key, json!({"text": "hi"}))).await;
    assert_eq!(status, 402, "{body}");

    // A tier with overage keeps working and counts what goes beyond.
    let (ok, _, stderr) = server
        .storage
        .cli(&["developers", "set-tier", "dev_local", "pro"]);
    assert!(ok, "{stderr}");
    let server = server.restart().await;
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "pro", "{sub}");
    assert_eq!(sub["tierExpiresAt"], Value::Null);
    assert_eq!(sub["plan"]["overageRate"], 0.002, "{sub}");
}

#[tokio::test]
async fn overage_is_counted_on_tiers_that_allow_it() {
    let storage = Storage::fresh().await;
    let env = [
        ("SWITCHBOARD__TIERS__PRO__MONTHLY_CREDITS", "1"),
        ("SWITCHBOARD__TIERS__PRO__OVERAGE_RATE", "0.5"),
        ("SWITCHBOARD__PRICING__RAG_PER_SEARCH", "2"),
    ];
    let server = Server::start_with(storage, &env).await;
    let key = server.key().to_string();
    let storage = server.stop();
    let (ok, _, stderr) = storage.cli(&["developers", "set-tier", "dev_local", "pro"]);
    assert!(ok, "{stderr}");
    let server = Server::start_with(storage, &env).await;
    let collection = new_collection(&server, &key).await;
    for _ in 0..2 {
        let (status, body) = call(server.post(
            &format!("/v1/collections/{collection}/search"),
            &key,
            json!({"query": "anything"}),
        ))
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let report = usage(&server, &key).await;
    assert_eq!(report["credits"]["used"], 4.0, "{report}");
    assert_eq!(report["credits"]["remaining"], 0.0);
    assert_eq!(report["overage"]["credits"], 3.0, "{report}");
    assert_eq!(report["overage"]["cost"], 1.5, "{report}");
}

/// Seconds from now to one day into the next calendar month (UTC).
fn offset_into_next_month() -> i64 {
    let now = Utc::now();
    let (year, month) = if now.month() == 12 {
        (now.year() + 1, 1)
    } else {
        (now.year(), now.month() + 1)
    };
    let target = NaiveDate::from_ymd_opt(year, month, 2)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    (target - now).num_seconds()
}

#[tokio::test]
async fn a_new_period_starts_empty_and_carries_unused_credits_per_the_tier() {
    let prices = [
        ("SWITCHBOARD__TIERS__PRO__MONTHLY_CREDITS", "10"),
        ("SWITCHBOARD__PRICING__RAG_PER_SEARCH", "3"),
    ];
    let server = Server::start_with(Storage::fresh().await, &prices).await;
    let key = server.key().to_string();
    let other_key = server.storage.create_key("dev_starter");
    let storage = server.stop();
    let (ok, _, stderr) = storage.cli(&["developers", "set-tier", "dev_local", "pro"]);
    assert!(ok, "{stderr}");
    let server = Server::start_with(storage, &prices).await;
    let collection = new_collection(&server, &key).await;
    let (status, _) = call(server.post(
        &format!("/v1/collections/{collection}/search"),
        &key,
        json!({"query": "hours"}),
    ))
    .await;
    assert_eq!(status, 200);
    let before = usage(&server, &key).await;
    assert_eq!(before["credits"]["used"], 3.0, "{before}");
    assert_eq!(before["credits"]["limit"], 10.0, "{before}");
    let starter_before = usage(&server, &other_key).await;
    let period = before["period"].as_str().unwrap().to_string();

    // The same store, a clock one day into the next month.
    let storage = server.stop();
    let output = storage
        .command()
        .envs(prices)
        .args(["developers", "usage", "dev_local"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("used 3 of 10"), "{stdout}");
    let offset = offset_into_next_month().to_string();
    let mut env = prices.to_vec();
    env.push(("SWITCHBOARD__METERING__CLOCK_OFFSET_SECONDS", &offset));
    let server = Server::start_with(storage, &env).await;
    let after = usage(&server, &key).await;
    assert_ne!(after["period"], period.as_str(), "{after}");
    assert_eq!(after["credits"]["used"], 0.0, "{after}");
    assert_eq!(after["breakdown"]["rag"], 0.0, "{after}");
    // Pro carries one month: the 7 unused credits join this month's 10.
    assert_eq!(after["carryover"], 7.0, "{after}");
    assert_eq!(after["credits"]["limit"], 17.0, "{after}");
    assert_eq!(after["requestCount"], 1, "{after}");
    // Starter carries nothing.
    let starter = usage(&server, &other_key).await;
    assert_eq!(starter["carryover"], 0.0, "{starter}");
    assert_eq!(
        starter["credits"]["limit"],
        starter_before["credits"]["limit"]
    );
}

/// A request one stand-in saw.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: String,
    content_type: String,
    form: Vec<(String, String)>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A local stand-in for the payment processor's REST API, following its wire format:
/// form-encoded bodies, the secret key as bearer token, JSON answers and error bodies.
struct StripeStandIn {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl StripeStandIn {
    fn start() -> StripeStandIn {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::new(recorded.clone()))
                        .default_service(web::to(stripe_api))
                })
                .workers(1)
                .bind("127.0.0.1:0")
                .expect("bind the stand-in");
                tx.send(server.addrs()[0]).expect("report the address");
                server.run().await
            })
        });
        let addr = rx.recv().expect("the stand-in starts");
        StripeStandIn {
            base: format!("http://{addr}"),
            seen,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn stripe_api(
    req: HttpRequest,
    body: web::Bytes,
    seen: web::Data<Arc<Mutex<Vec<Seen>>>>,
) -> HttpResponse {
    let text = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let request = Seen {
        path: req.path().to_string(),
        authorization: text("authorization"),
        content_type: text("content-type"),
        form: url::form_urlencoded::parse(&body).into_owned().collect(),
    };
    seen.lock().unwrap().push(request.clone());
    if request.authorization != format!("Bearer {SECRET_KEY}") {
        return HttpResponse::Unauthorized().json(json!({"error": {
            "type": "invalid_request_error",
            "message": "Invalid API Key provided: sk_wrong",
        }}));
    }
    if !request
        .content_type
        .starts_with("application/x-www-form-urlencoded")
    {
        return HttpResponse::BadRequest().json(json!({"error": {
            "type": "invalid_request_error", "message": "Invalid request (check your POST parameters)"}}));
    }
    match request.path.as_str() {
        "/v1/customers" => HttpResponse::Ok().json(json!({
            "id": "cus_test_1", "object": "customer",
            "metadata": {"developerId": request.field("metadata[developerId]")}})),
        "/v1/checkout/sessions" => HttpResponse::Ok().json(json!({
            "id": "cs_test_1", "object": "checkout.session", "mode": "subscription",
            "status": "open", "url": "https://checkout.stripe.test/c/pay/cs_test_1",
            "customer": request.field("customer"),
            "client_reference_id": request.field("client_reference_id")})),
        "/v1/billing_portal/sessions" => HttpResponse::Ok().json(json!({
            "id": "bps_test_1", "object": "billing_portal.session",
            "url": "https://billing.stripe.test/p/session/bps_test_1",
            "customer": request.field("customer")})),
        _ => HttpResponse::NotFound().json(json!({"error": {
            "type": "invalid_request_error", "message": "Unrecognized request URL"}})),
    }
}

fn billing_env(base: &str, secret_key: &'static str) -> Vec<(&'static str, String)> {
    vec![
        ("SWITCHBOARD__BILLING__STRIPE__BASE_URL", base.to_string()),
        (
            "SWITCHBOARD__BILLING__STRIPE__SECRET_KEY",
            secret_key.to_string(),
        ),
        (
            "SWITCHBOARD__BILLING__STRIPE__WEBHOOK_SECRET",
            WEBHOOK_SECRET.to_string(),
        ),
        (
            "SWITCHBOARD__BILLING__STRIPE__PORTAL_RETURN_URL",
            "https://app.example.com/account".to_string(),
        ),
        (
            "SWITCHBOARD__TIERS__PRO__PRICE_ID",
            "price_pro_monthly".to_string(),
        ),
        (
            "SWITCHBOARD__TIERS__SCALE__PRICE_ID",
            "price_scale_monthly".to_string(),
        ),
    ]
}

async fn billing_server(base: &str, secret_key: &'static str) -> Server {
    let env = billing_env(base, secret_key);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_with(Storage::fresh().await, &env).await
}

#[tokio::test]
async fn checkout_and_portal_are_created_at_the_processor_with_its_wire_format() {
    let stripe = StripeStandIn::start();
    let server = billing_server(&stripe.base, SECRET_KEY).await;
    let key = server.key().to_string();
    let before = subscription(&server, &key).await;
    assert_eq!(before["tier"], "starter");
    assert_eq!(before["tierDisplay"], "Starter ($0/month)");
    assert_eq!(before["stripeCustomerId"], Value::Null);
    assert_eq!(before["plan"]["monthlyCredits"], 1000.0, "{before}");

    let (status, body) = call(server.post(
        "/v1/billing/checkout",
        &key,
        json!({"tier": "pro", "successUrl": "https://app.example.com/ok?session_id={CHECKOUT_SESSION_ID}",
               "cancelUrl": "https://app.example.com/cancel"}),
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sessionId"], "cs_test_1");
    assert_eq!(body["url"], "https://checkout.stripe.test/c/pay/cs_test_1");
    let seen = stripe.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].path, "/v1/customers");
    assert_eq!(seen[0].field("metadata[developerId]"), Some("dev_local"));
    let checkout = &seen[1];
    assert_eq!(checkout.path, "/v1/checkout/sessions");
    for (name, value) in [
        ("mode", "subscription"),
        ("line_items[0][price]", "price_pro_monthly"),
        ("line_items[0][quantity]", "1"),
        ("customer", "cus_test_1"),
        ("client_reference_id", "dev_local"),
        ("metadata[developerId]", "dev_local"),
        ("metadata[tier]", "pro"),
        ("subscription_data[metadata][developerId]", "dev_local"),
        (
            "success_url",
            "https://app.example.com/ok?session_id={CHECKOUT_SESSION_ID}",
        ),
        ("cancel_url", "https://app.example.com/cancel"),
    ] {
        assert_eq!(checkout.field(name), Some(value), "{name} in {checkout:?}");
    }
    let after = subscription(&server, &key).await;
    assert_eq!(after["stripeCustomerId"], "cus_test_1", "{after}");
    // Checkout alone does not change the tier; the processor's events do.
    assert_eq!(after["tier"], "starter");

    // The portal reuses the customer.
    let (status, body) =
        call(server.request(reqwest::Method::POST, "/v1/billing/portal", &key)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["url"],
        "https://billing.stripe.test/p/session/bps_test_1"
    );
    let seen = stripe.seen();
    assert_eq!(seen.len(), 3, "no second customer: {seen:?}");
    assert_eq!(seen[2].path, "/v1/billing_portal/sessions");
    assert_eq!(seen[2].field("customer"), Some("cus_test_1"));
    assert_eq!(
        seen[2].field("return_url"),
        Some("https://app.example.com/account")
    );

    // Bad requests are refused before the processor hears of them.
    for (body, param) in [
        (
            json!({"tier": "gold", "successUrl": "https://a.example/s", "cancelUrl": "https://a.example/c"}),
            "tier",
        ),
        (
            json!({"successUrl": "https://a.example/s", "cancelUrl": "https://a.example/c"}),
            "tier",
        ),
        (
            json!({"tier": "pro", "cancelUrl": "https://a.example/c"}),
            "successUrl",
        ),
        (
            json!({"tier": "pro", "successUrl": "ftp://a.example/s", "cancelUrl": "https://a.example/c"}),
            "successUrl",
        ),
        (
            json!({"tier": "pro", "successUrl": "https://a.example/s", "cancelUrl": "not a url"}),
            "cancelUrl",
        ),
    ] {
        let (status, error) = call(server.post("/v1/billing/checkout", &key, body.clone())).await;
        assert_invalid(status, &error, param, &body.to_string());
    }
    assert_eq!(stripe.seen().len(), 3);
}

#[tokio::test]
async fn a_processor_refusal_is_a_502_and_missing_configuration_a_503() {
    let stripe = StripeStandIn::start();
    let server = billing_server(&stripe.base, "sk_wrong").await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/billing/checkout",
        &key,
        json!({"tier": "scale", "successUrl": "https://a.example/s", "cancelUrl": "https://a.example/c"}),
    ))
    .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(error_code(&body), "upstream_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Invalid API Key"),
        "{body}"
    );
    assert_eq!(stripe.seen()[0].authorization, "Bearer sk_wrong");

    let unconfigured = Server::start().await;
    let key = unconfigured.key().to_string();
    let (status, body) = call(unconfigured.post(
        "/v1/billing/checkout",
        &key,
        json!({"tier": "pro", "successUrl": "https://a.example/s", "cancelUrl": "https://a.example/c"}),
    ))
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "billing_not_configured");
    let (status, body) =
        call(unconfigured.request(reqwest::Method::POST, "/v1/billing/portal", &key)).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "billing_not_configured");
    let (status, body) = call(
        unconfigured
            .http
            .post(unconfigured.url("/v1/billing/webhook"))
            .body("{}"),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "billing_not_configured");
    // The subscription is readable without billing.
    let sub = subscription(&unconfigured, &key).await;
    assert_eq!(sub["tier"], "starter");
}

/// Posts `event` to the webhook signed at `timestamp` with `secret`.
async fn deliver(server: &Server, event: &Value, secret: &str, timestamp: i64) -> (u16, Value) {
    let payload = serde_json::to_vec(event).unwrap();
    let signature = sign(&payload, secret, timestamp);
    call(
        server
            .http
            .post(server.url("/v1/billing/webhook"))
            .header("Content-Type", "application/json")
            .header("Stripe-Signature", format!("t={timestamp},v1={signature}"))
            .body(payload),
    )
    .await
}

fn event(id: &str, kind: &str, object: Value) -> Value {
    json!({"id": id, "object": "event", "api_version": "2026-06-24.dahlia", "created": 1_790_000_000,
           "type": kind, "livemode": false, "pending_webhooks": 1,
           "data": {"object": object}})
}

fn now_s() -> i64 {
    Utc::now().timestamp()
}

#[tokio::test]
async fn webhook_signatures_are_verified_and_events_apply_once() {
    let stripe = StripeStandIn::start();
    let server = billing_server(&stripe.base, SECRET_KEY).await;
    let key = server.key().to_string();
    let completed = event(
        "evt_checkout_1",
        "checkout.session.completed",
        json!({"id": "cs_test_1", "object": "checkout.session", "mode": "subscription",
               "status": "complete", "payment_status": "paid", "client_reference_id": "dev_local",
               "customer": "cus_hook_1", "subscription": "sub_1",
               "metadata": {"developerId": "dev_local", "tier": "pro"}}),
    );

    // Forged (another secret), stale (older than 300 s), missing or malformed: 400, no change.
    let (status, body) = deliver(&server, &completed, "whsec_forged", now_s()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_code(&body), "validation_error");
    let (status, _) = deliver(&server, &completed, WEBHOOK_SECRET, now_s() - 400).await;
    assert_eq!(status, 400);
    let (status, _) = call(
        server
            .http
            .post(server.url("/v1/billing/webhook"))
            .body(serde_json::to_vec(&completed).unwrap()),
    )
    .await;
    assert_eq!(status, 400);
    let payload = serde_json::to_vec(&completed).unwrap();
    let good = sign(&payload, WEBHOOK_SECRET, now_s());
    let (status, body) = call(
        server
            .http
            .post(server.url("/v1/billing/webhook"))
            .header("Stripe-Signature", format!("t={},v1={good}", now_s()))
            .body(b"{\"id\":\"evt_tampered\"}".to_vec()),
    )
    .await;
    assert_eq!(status, 400, "a signature over another body: {body}");
    assert_eq!(subscription(&server, &key).await["tier"], "starter");

    // Valid, with a second v1 signature from a rolled secret beside it.
    let t = now_s();
    let (status, body) = call(
        server
            .http
            .post(server.url("/v1/billing/webhook"))
            .header(
                "Stripe-Signature",
                format!(
                    "t={t},v1={},v1={}",
                    sign(&payload, "whsec_old", t),
                    sign(&payload, WEBHOOK_SECRET, t)
                ),
            )
            .body(payload.clone()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["applied"], true);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "pro", "{sub}");
    assert_eq!(sub["stripeCustomerId"], "cus_hook_1");

    // The subscription ends...
    let deleted = event(
        "evt_deleted_1",
        "customer.subscription.deleted",
        json!({"id": "sub_1", "object": "subscription", "customer": "cus_hook_1",
               "status": "canceled", "ended_at": 1_790_000_000, "metadata": {}}),
    );
    let (status, _) = deliver(&server, &deleted, WEBHOOK_SECRET, now_s()).await;
    assert_eq!(status, 200);
    assert_eq!(subscription(&server, &key).await["tier"], "starter");
    // ...and a replay of the earlier checkout event changes nothing.
    let (status, body) = deliver(&server, &completed, WEBHOOK_SECRET, now_s()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["applied"], false, "{body}");
    assert_eq!(subscription(&server, &key).await["tier"], "starter");
}

#[tokio::test]
async fn each_subscription_event_moves_the_tier_in_both_payload_shapes() {
    let stripe = StripeStandIn::start();
    let server = billing_server(&stripe.base, SECRET_KEY).await;
    let key = server.key().to_string();
    let period_end = now_s() + 30 * 86_400;
    let iso_end = |s: i64| {
        chrono::DateTime::from_timestamp(s, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S.000Z")
            .to_string()
    };
    // The checkout names the developer and records the customer.
    let (status, _) = deliver(
        &server,
        &event("evt_1", "checkout.session.completed", json!({
            "id": "cs_1", "object": "checkout.session", "mode": "subscription", "status": "complete",
            "payment_status": "paid", "client_reference_id": "dev_local", "customer": "cus_7",
            "subscription": "sub_7", "metadata": {"developerId": "dev_local", "tier": "pro"}})),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(subscription(&server, &key).await["tier"], "pro");

    // Since 2025-03-31: the period end is on the items; the price names the tier.
    let (status, _) = deliver(
        &server,
        &event(
            "evt_2",
            "customer.subscription.updated",
            json!({
            "id": "sub_7", "object": "subscription", "customer": "cus_7", "status": "active",
            "items": {"object": "list", "data": [{"id": "si_1", "quantity": 1,
                "current_period_end": period_end, "price": {"id": "price_scale_monthly"}}]},
            "metadata": {}}),
        ),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "scale", "{sub}");
    assert_eq!(sub["tierDisplay"], "Scale ($499/month)");
    assert_eq!(sub["tierExpiresAt"], iso_end(period_end).as_str(), "{sub}");
    assert!(is_iso_millis(&sub["tierExpiresAt"]));

    // A failed payment with retries left holds the tier until the next attempt.
    let retry_at = now_s() + 3 * 86_400;
    let (status, _) = deliver(
        &server,
        &event(
            "evt_3",
            "invoice.payment_failed",
            json!({
            "id": "in_1", "object": "invoice", "customer": "cus_7", "attempt_count": 1,
            "next_payment_attempt": retry_at, "amount_due": 49900,
            "parent": {"type": "subscription_details", "subscription_details": {
                "subscription": "sub_7", "metadata": {"developerId": "dev_local"}}}}),
        ),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "scale");
    assert_eq!(sub["tierExpiresAt"], iso_end(retry_at).as_str(), "{sub}");

    // Paid after all (2025-03-31 shape): the tier runs to the end of the paid line.
    let next_end = period_end + 30 * 86_400;
    let (status, _) = deliver(
        &server,
        &event("evt_4", "invoice.paid", json!({
            "id": "in_2", "object": "invoice", "customer": "cus_7", "status": "paid",
            "amount_paid": 49900, "billing_reason": "subscription_cycle",
            "period_end": period_end,
            "lines": {"data": [{"period": {"start": period_end, "end": next_end}}]},
            "parent": {"type": "subscription_details", "subscription_details": {
                "subscription": "sub_7", "metadata": {"developerId": "dev_local", "tier": "scale"}}}})),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "scale");
    assert_eq!(sub["tierExpiresAt"], iso_end(next_end).as_str(), "{sub}");

    // No retries left: back to the free tier.
    let (status, _) = deliver(
        &server,
        &event(
            "evt_5",
            "invoice.payment_failed",
            json!({
            "id": "in_3", "object": "invoice", "customer": "cus_7", "attempt_count": 4,
            "next_payment_attempt": null, "subscription": "sub_7"}),
        ),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "starter", "{sub}");
    assert_eq!(sub["tierExpiresAt"], Value::Null);

    // Before 2025-03-31: the period end on the subscription, the developer found by customer.
    let (status, _) = deliver(
        &server,
        &event("evt_6", "customer.subscription.created", json!({
            "id": "sub_8", "object": "subscription", "customer": "cus_7", "status": "active",
            "current_period_end": period_end,
            "items": {"object": "list", "data": [{"id": "si_2", "price": {"id": "price_pro_monthly"}}]},
            "metadata": {}})),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "pro", "{sub}");
    assert_eq!(sub["tierExpiresAt"], iso_end(period_end).as_str());
    // Its credits follow the tier at once.
    assert_eq!(sub["credits"]["limit"], 100_000.0, "{sub}");

    // Pre-2025-03-31 invoice shape: subscription and metadata at the top level.
    let (status, _) = deliver(
        &server,
        &event(
            "evt_7",
            "invoice.paid",
            json!({
            "id": "in_4", "object": "invoice", "customer": "cus_7", "status": "paid",
            "subscription": "sub_8", "period_end": next_end,
            "subscription_details": {"metadata": {"tier": "scale"}}}),
        ),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "scale", "{sub}");
    assert_eq!(sub["tierExpiresAt"], iso_end(next_end).as_str());

    // The end of the subscription.
    let (status, _) = deliver(
        &server,
        &event(
            "evt_8",
            "customer.subscription.deleted",
            json!({
            "id": "sub_8", "object": "subscription", "customer": "cus_7", "status": "canceled"}),
        ),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let sub = subscription(&server, &key).await;
    assert_eq!(sub["tier"], "starter");
    assert_eq!(sub["tierExpiresAt"], Value::Null);

    // Unknown event types are acknowledged and change nothing.
    let (status, body) = deliver(
        &server,
        &event(
            "evt_9",
            "customer.created",
            json!({"id": "cus_9", "object": "customer"}),
        ),
        WEBHOOK_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn the_openapi_document_describes_usage_and_billing() {
    let server = Server::start().await;
    let (status, doc) = call(server.http.get(server.url("/openapi.json"))).await;
    assert_eq!(status, 200);
    for (path, method) in [
        ("/v1/usage", "get"),
        ("/v1/billing/subscription", "get"),
        ("/v1/billing/checkout", "post"),
        ("/v1/billing/portal", "post"),
        ("/v1/billing/webhook", "post"),
    ] {
        assert!(
            doc["paths"][path].get(method).is_some(),
            "{method} {path} is documented"
        );
    }
    // The webhook is the one billing route without an API key.
    assert!(doc["paths"]["/v1/billing/webhook"]["post"]
        .get("security")
        .is_none());
    let description = doc["info"]["description"].as_str().unwrap();
    for words in [
        "X-RateLimit-Remaining",
        "insufficient_credits",
        "billing_not_configured",
    ] {
        assert!(description.contains(words), "{words}");
    }
}
