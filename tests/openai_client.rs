//! The OpenAI-compatible audio routes driven by the official `openai` Python client
//! (installed by `scripts/test`), as users switching their base URL will drive them.

mod common;

use std::process::Command;

use common::*;

#[tokio::test]
async fn the_official_openai_client_works_against_the_audio_routes() {
    let server = Server::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openai/client_check.py");
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/audio");
    let python = std::env::var("SWITCHBOARD_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = tokio::task::spawn_blocking({
        let base = server.url("/v1");
        let key = server.key().to_string();
        move || {
            Command::new(python)
                .arg(script)
                .env("SWITCHBOARD_BASE_URL", base)
                .env("SWITCHBOARD_API_KEY", key)
                .env("FIXTURES", fixtures)
                .output()
                .expect("python3 runs")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the openai client checks failed:\n{stdout}\n{stderr}\nserver log:\n{}",
        server.log()
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
}
