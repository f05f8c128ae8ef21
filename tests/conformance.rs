//! Conformance of the running server to its own `/openapi.json`, checked by schemathesis
//! (installed, pinned, by `scripts/test`): every operation is called with generated valid and
//! invalid input under a real API key, and every answer must be no server error, have a status
//! the document lists, the content type it names and a body that matches its schema. The
//! server's log must then hold no panic.
//!
//! The bounded run here fits CI. `SWITCHBOARD_CONFORMANCE=long` runs the long one docs/operations.md
//! describes (many more examples, every engine-backed operation at full count, a longer time
//! budget).

mod common;
#[path = "common/twilio_mock.rs"]
mod twilio_mock;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::path::Path;
use std::process::Command;

use common::*;
use twilio_mock::TwilioMock;
use vendor_mock::VendorMock;

/// Operations whose valid requests run the embedded speech or language engines: CPU-heavy, so
/// the bounded run gives each a few examples (their invalid requests are refused before any
/// engine runs and are just as cheap as any other).
const ENGINE_OPERATIONS: &str = "^/v1/(synthesize|audio/speech|agents/\\{id\\}/speak|agents/\\{id\\}/chat|transcribe|transcribe/async|audio/transcriptions|audio/translations)$";
/// Operations whose valid requests embed text (the sentence-embedding model): lighter, but
/// still inference.
const EMBEDDING_OPERATIONS: &str =
    "^/v1/(agents/provision|collections/\\{id\\}/ingest|collections/\\{id\\}/search)$";

struct Budget {
    examples: u32,
    engine_examples: u32,
    embedding_examples: u32,
    max_seconds: u32,
}

fn budget() -> Budget {
    match std::env::var("SWITCHBOARD_CONFORMANCE").as_deref() {
        Ok("long") => Budget {
            examples: 200,
            engine_examples: 40,
            embedding_examples: 100,
            max_seconds: 3600,
        },
        _ => Budget {
            examples: 25,
            engine_examples: 3,
            embedding_examples: 8,
            max_seconds: 150,
        },
    }
}

/// The schemathesis configuration of this run: per-operation example counts and timeouts.
fn config(budget: &Budget) -> String {
    format!(
        r#"# Written by tests/conformance.rs.
generation.max-examples = {examples}
# A NUL inside a JSON string is answered like any other character; it only makes reports
# unreadable.
generation.allow-x00 = false
request-timeout = 30.0

[[operations]]
include-path-regex = "{engine}"
generation.max-examples = {engine_examples}
request-timeout = 180.0

[[operations]]
include-path-regex = "{embedding}"
generation.max-examples = {embedding_examples}
request-timeout = 120.0
"#,
        examples = budget.examples,
        engine = ENGINE_OPERATIONS.replace('\\', "\\\\"),
        engine_examples = budget.engine_examples,
        embedding = EMBEDDING_OPERATIONS.replace('\\', "\\\\"),
        embedding_examples = budget.embedding_examples,
    )
}

#[tokio::test]
async fn the_server_conforms_to_its_openapi_document() {
    let Ok(python) = std::env::var("SWITCHBOARD_TEST_PYTHON") else {
        eprintln!(
            "skipped: SWITCHBOARD_TEST_PYTHON is not set (scripts/test sets it to a virtualenv \
             with schemathesis)"
        );
        return;
    };
    // Every outside party the server can be configured to use stands in locally, so no
    // operation answers 503 "not configured" and each reaches its real code path.
    let vendors = VendorMock::start();
    let twilio = TwilioMock::start();
    let platforms = platforms_stand_in();
    let mut env: Vec<(String, String)> = vendors.env();
    env.extend(twilio.env());
    env.extend(
        [
            ("SWITCHBOARD__BILLING__STRIPE__BASE_URL", platforms.as_str()),
            ("SWITCHBOARD__BILLING__STRIPE__SECRET_KEY", STRIPE_SECRET),
            (
                "SWITCHBOARD__BILLING__STRIPE__WEBHOOK_SECRET",
                "whsec_conformance",
            ),
            ("SWITCHBOARD__TIERS__PRO__PRICE_ID", "price_pro"),
            ("SWITCHBOARD__TIERS__SCALE__PRICE_ID", "price_scale"),
            ("SWITCHBOARD__SYNC__PROVIDER", "elevenlabs"),
            ("SWITCHBOARD__SYNC__BASE_URL", platforms.as_str()),
            ("SWITCHBOARD__SYNC__API_KEY", "el-conformance"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start_with(Storage::fresh().await, &env).await;
    let key = server.key().to_string();

    let budget = budget();
    let work = tempfile::tempdir().expect("temp dir");
    let config_path = work.path().join("schemathesis.toml");
    std::fs::write(&config_path, config(&budget)).expect("write the schemathesis config");
    // Revoking or rotating a key by id would, once schemathesis has listed the keys, revoke
    // the very key it authenticates with and turn the rest of the run into 401s. So the run
    // has two parts: everything else with every phase (stateful links included), then the
    // two key-by-id operations alone, with generated ids only.
    let by_id = "^/v1/keys/\\{id\\}";
    let runs = [
        (
            "every operation but revoke and rotate",
            vec!["--exclude-path-regex", by_id],
            "examples,coverage,fuzzing,stateful",
            budget.max_seconds,
        ),
        (
            "revoke and rotate by id",
            vec!["--include-path-regex", by_id],
            "coverage,fuzzing",
            30,
        ),
    ];
    for (name, filter, phases, max_seconds) in runs {
        let output = tokio::task::spawn_blocking({
            let (python, config_path, key) = (python.clone(), config_path.clone(), key.clone());
            let schema = server.url("/openapi.json");
            let work = work.path().to_path_buf();
            let filter: Vec<String> = filter.iter().map(|f| f.to_string()).collect();
            move || {
                schemathesis(&python, &config_path, &schema, &key, &work)
                    .args(&filter)
                    .args(["--phases", phases, "--max-time", &max_seconds.to_string()])
                    .output()
                    .expect("the test python runs schemathesis")
            }
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "schemathesis found failures ({name}):\n{stdout}\n{stderr}\nserver log (tail):\n{}",
            tail(&server.log(), 80)
        );
        // A schema schemathesis could not read, or a filter that matched nothing, must not
        // pass as "no failures"; nor may a run whose key stopped working.
        assert!(
            stdout.contains("Tested:") && !stdout.contains("No operations"),
            "schemathesis tested nothing ({name}):\n{stdout}"
        );
        // (Twilio's webhooks answer only 403 without Twilio's signature, as they must.)
        assert!(
            !stdout.contains("401 Unauthorized ("),
            "schemathesis ran without a working key ({name}):\n{stdout}"
        );
        println!("{name}:\n{stdout}");
    }
    let log = server.log();
    assert!(
        !log.contains("panicked"),
        "the server panicked during the run:\n{}",
        tail(&log, 200)
    );
}

/// The served document is valid OpenAPI for an independent validator (openapi-spec-validator,
/// installed, pinned, by `scripts/test`): what client generators read must have each path
/// parameter declared once, under the name the path uses, and unique operation ids.
#[tokio::test]
async fn the_openapi_document_is_valid_for_an_independent_validator() {
    let Ok(python) = std::env::var("SWITCHBOARD_TEST_PYTHON") else {
        eprintln!(
            "skipped: SWITCHBOARD_TEST_PYTHON is not set (scripts/test sets it to a virtualenv \
             with openapi-spec-validator)"
        );
        return;
    };
    let server = Server::start().await;
    let document = reqwest::get(server.url("/openapi.json"))
        .await
        .expect("fetch /openapi.json")
        .text()
        .await
        .expect("read /openapi.json");
    let work = tempfile::tempdir().expect("temp dir");
    let path = work.path().join("openapi.json");
    std::fs::write(&path, &document).expect("write the document");
    const VALIDATE: &str = "
import json, sys
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator
document = json.load(open(sys.argv[1]))
version = document.get('openapi', '')
validator = OpenAPIV31SpecValidator if version.startswith('3.1') else OpenAPIV30SpecValidator
errors = [error.message for error in validator(document).iter_errors()]
print(version, len(errors))
for error in errors:
    print(error)
sys.exit(1 if errors else 0)
";
    let output = Command::new(&python)
        .args(["-c", VALIDATE])
        .arg(&path)
        .output()
        .expect("the test python runs openapi-spec-validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "/openapi.json is not valid OpenAPI:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.starts_with("3.1"),
        "the document names its version: {stdout}"
    );
}

const STRIPE_SECRET: &str = "sk_test_conformance";

/// A local stand-in for the payment processor (customers, Checkout and billing-portal
/// sessions: form bodies, the secret key as bearer token) and the agent-sync platform
/// (ElevenLabs' `POST /v1/convai/agents/create` and `PATCH /v1/convai/agents/{id}` with
/// `xi-api-key`), answering as they do. Answers its base URL.
fn platforms_stand_in() -> String {
    use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
    use serde_json::json;

    async fn stripe(req: HttpRequest, path: web::Path<String>) -> HttpResponse {
        let authorized = req
            .headers()
            .get("authorization")
            .is_some_and(|v| v.as_bytes() == format!("Bearer {STRIPE_SECRET}").as_bytes());
        if !authorized {
            return HttpResponse::Unauthorized().json(json!({"error": {
                "type": "invalid_request_error", "message": "Invalid API Key provided"}}));
        }
        match path.as_str() {
            "customers" => HttpResponse::Ok().json(json!({"id": "cus_conf", "object": "customer"})),
            "checkout/sessions" => HttpResponse::Ok().json(json!({
                "id": "cs_conf", "object": "checkout.session", "mode": "subscription",
                "status": "open", "url": "https://checkout.stripe.test/c/pay/cs_conf"})),
            "billing_portal/sessions" => HttpResponse::Ok().json(json!({
                "id": "bps_conf", "object": "billing_portal.session",
                "url": "https://billing.stripe.test/p/session/bps_conf"})),
            _ => HttpResponse::NotFound().json(json!({"error": {
                "type": "invalid_request_error", "message": "Unrecognized request URL"}})),
        }
    }
    async fn create_agent() -> HttpResponse {
        HttpResponse::Ok().json(json!({"agent_id": "agent_conf"}))
    }
    async fn update_agent(path: web::Path<String>) -> HttpResponse {
        HttpResponse::Ok().json(json!({"agent_id": path.as_str()}))
    }

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the stand-in");
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            HttpServer::new(|| {
                App::new()
                    .route("/v1/convai/agents/create", web::post().to(create_agent))
                    .route("/v1/convai/agents/{id}", web::patch().to(update_agent))
                    .route("/v1/{path:.*}", web::post().to(stripe))
            })
            .workers(1)
            .listen(listener)
            .expect("listen")
            .run()
            .await
            .expect("the stand-in runs")
        })
    });
    url
}

/// The schemathesis command for one run: the four conformance checks, a fixed seed, the key.
fn schemathesis(python: &str, config: &Path, schema: &str, key: &str, work: &Path) -> Command {
    let mut command = Command::new(python);
    command
        .current_dir(work)
        .args(["-m", "schemathesis.cli", "--config-file"])
        .arg(config)
        .args([
            "run",
            schema,
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--workers",
            "2",
            "--seed",
            "20261123",
            "--no-color",
            "--generation-database",
            "none",
            "--header",
            &format!("Authorization: Bearer {key}"),
        ]);
    command
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
