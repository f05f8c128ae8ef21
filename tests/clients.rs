//! The published API clients in `clients/`: the committed OpenAPI document is the one the
//! server serves; the Python client (openapi-python-client) and the TypeScript types
//! (openapi-typescript) are what their pinned generators make of it; and each client, run
//! against the real server, creates, reads and lists an agent and reads an error in its
//! documented shape (tests/clients/smoke.py, tests/clients/smoke.ts).
//!
//! The Python tests need `SWITCHBOARD_TEST_PYTHON` (the test virtualenv with the generator
//! of clients/requirements.txt), the TypeScript ones `SWITCHBOARD_TEST_CLIENT_NODE_MODULES`
//! (scripts/client-deps); scripts/test sets both.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::{json, Value};

const REGENERATE: &str = "run scripts/generate-clients to regenerate clients/ (it starts the \
                          server and reads its /openapi.json) and commit the result";

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients")
}

fn smoke_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// The test virtualenv's python, or `None` (with the reason printed) when it is not set.
fn test_python(test: &str) -> Option<String> {
    let python = std::env::var("SWITCHBOARD_TEST_PYTHON").ok();
    if python.is_none() {
        eprintln!(
            "skipped {test}: SWITCHBOARD_TEST_PYTHON is not set (scripts/test sets it to a \
             virtualenv with the packages of clients/requirements.txt)"
        );
    }
    python
}

/// Where scripts/client-deps installed the TypeScript client's packages, or `None` (with
/// the reason printed) when it is not set.
fn client_node_modules(test: &str) -> Option<PathBuf> {
    let modules = std::env::var_os("SWITCHBOARD_TEST_CLIENT_NODE_MODULES").map(PathBuf::from);
    if modules.is_none() {
        eprintln!(
            "skipped {test}: SWITCHBOARD_TEST_CLIENT_NODE_MODULES is not set (scripts/test sets \
             it to what scripts/client-deps prints)"
        );
    }
    modules
}

/// Runs `command`; answers its standard output, failing with everything it printed.
fn run(command: &mut Command, what: &str) -> String {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("{what}: cannot run {command:?}: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Every file under `dir` (relative path → content), leaving out caches.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).expect("read a client directory") {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "__pycache__" || name == ".ruff_cache" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let relative = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.push((relative, std::fs::read(&path).expect("read a client file")));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    files
}

/// The served `/openapi.json` of `server`.
async fn served_document(server: &Server) -> Value {
    let response = reqwest::get(server.url("/openapi.json"))
        .await
        .expect("fetch /openapi.json");
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.expect("/openapi.json is JSON")
}

#[tokio::test]
async fn the_committed_document_is_the_one_the_server_serves() {
    let server = Server::start().await;
    let served = served_document(&server).await;
    let committed: Value = serde_json::from_slice(
        &std::fs::read(clients_dir().join("openapi.json")).expect("read clients/openapi.json"),
    )
    .expect("clients/openapi.json is JSON");
    if committed != served {
        let differing: Vec<String> = served["paths"]
            .as_object()
            .unwrap()
            .keys()
            .chain(
                committed["paths"]
                    .as_object()
                    .into_iter()
                    .flat_map(|p| p.keys()),
            )
            .filter(|path| served["paths"][path.as_str()] != committed["paths"][path.as_str()])
            .cloned()
            .collect();
        panic!(
            "clients/openapi.json is not the served /openapi.json (paths that differ: {differing:?}; \
             components differ: {}): {REGENERATE}",
            served["components"] != committed["components"]
        );
    }
}

#[test]
fn the_python_client_is_what_its_generator_makes_of_the_document() {
    let Some(python) = test_python("the_python_client_is_what_its_generator_makes_of_the_document")
    else {
        return;
    };
    let bin = Path::new(&python).parent().unwrap().to_path_buf();
    let work = tempfile::tempdir().expect("temp dir");
    let output = work.path().join("python");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    run(
        Command::new(bin.join("openapi-python-client"))
            .args([
                "generate",
                "--meta",
                "uv",
                "--overwrite",
                "--fail-on-warning",
            ])
            .arg("--path")
            .arg(clients_dir().join("openapi.json"))
            .arg("--config")
            .arg(clients_dir().join("python-config.yml"))
            .arg("--output-path")
            .arg(&output)
            .env("PATH", path),
        "openapi-python-client",
    );
    let generated = tree(&output);
    let committed = tree(&clients_dir().join("python"));
    let names = |files: &[(String, Vec<u8>)]| -> Vec<String> {
        files.iter().map(|(name, _)| name.clone()).collect()
    };
    assert_eq!(
        names(&committed),
        names(&generated),
        "clients/python has other files than the generator makes: {REGENERATE}"
    );
    for ((name, committed), (_, generated)) in committed.iter().zip(&generated) {
        assert!(
            committed == generated,
            "clients/python/{name} is not what the generator makes: {REGENERATE}"
        );
    }
}

#[test]
fn the_typescript_types_are_what_their_generator_makes_of_the_document() {
    let Some(modules) =
        client_node_modules("the_typescript_types_are_what_their_generator_makes_of_the_document")
    else {
        return;
    };
    let work = tempfile::tempdir().expect("temp dir");
    let schema = work.path().join("schema.ts");
    run(
        Command::new("node")
            .arg(modules.join("openapi-typescript/bin/cli.js"))
            .arg(clients_dir().join("openapi.json"))
            .arg("--empty-objects-unknown")
            .arg("--output")
            .arg(&schema),
        "openapi-typescript",
    );
    let generated = std::fs::read_to_string(&schema).expect("read the generated types");
    let committed = std::fs::read_to_string(clients_dir().join("typescript/src/schema.ts"))
        .expect("read clients/typescript/src/schema.ts");
    assert!(
        committed == generated,
        "clients/typescript/src/schema.ts is not what openapi-typescript makes: {REGENERATE}"
    );
}

/// What a smoke script printed: one JSON line of what it created and read.
fn smoke_report(stdout: &str) -> Value {
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .unwrap_or_else(|_| panic!("the smoke script printed JSON:\n{stdout}"))
}

/// Checks what a client reported against the server's own answers: the agent it created
/// exists with the fields it sent, the client read back and listed the same agent, it
/// read `/health` and a 404 in the documented error shape.
async fn check_round_trip(server: &Server, key: &str, report: &Value, name: &str) {
    assert_eq!(report["health"]["status"], "ok", "{report}");
    let database = match server.storage.database_url {
        Some(_) => "postgres",
        None => "sqlite",
    };
    assert_eq!(report["health"]["database"], database, "{report}");
    let id = report["created"]["id"]
        .as_str()
        .expect("the created agent's id");
    let (status, agent) = call(server.get(&format!("/v1/agents/{id}"), key)).await;
    assert_eq!(status, 200, "the agent the client created exists: {agent}");
    assert_eq!(agent["name"], name);
    assert_eq!(agent["systemPrompt"], "Answer in one short sentence.");
    assert_eq!(agent["temperature"], json!(0.25));
    assert_eq!(agent["metadata"], json!({"team": "clients"}));
    assert_eq!(
        report["created"], agent,
        "the client read the created agent as served"
    );
    assert_eq!(
        report["fetched"], agent,
        "the client read the agent back as served"
    );
    assert_eq!(
        report["listed"],
        json!([id]),
        "the client listed the one agent"
    );
    assert_eq!(report["missing"]["status"], 404, "{report}");
    assert_eq!(report["missing"]["code"], "not_found", "{report}");
    assert!(
        report["missing"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{report}"
    );
}

#[tokio::test]
async fn the_python_client_creates_reads_and_lists_an_agent() {
    let Some(python) = test_python("the_python_client_creates_reads_and_lists_an_agent") else {
        return;
    };
    let server = Server::start().await;
    let key = server.key().to_string();
    let name = "Python client agent";
    let stdout = tokio::task::spawn_blocking({
        let base = server.url("");
        let key = key.clone();
        move || {
            run(
                Command::new(&python)
                    .arg(smoke_dir().join("smoke.py"))
                    .args([base.as_str(), key.as_str(), name])
                    .env("PYTHONPATH", clients_dir().join("python")),
                "the Python client's smoke script",
            )
        }
    })
    .await
    .unwrap();
    check_round_trip(&server, &key, &smoke_report(&stdout), name).await;
}

#[tokio::test]
async fn the_typescript_client_compiles_and_creates_reads_and_lists_an_agent() {
    let Some(modules) =
        client_node_modules("the_typescript_client_compiles_and_creates_reads_and_lists_an_agent")
    else {
        return;
    };
    // The client's sources and the smoke script compiled together, strictly, with the pinned
    // compiler: a request or answer the types do not allow fails here.
    let work = tempfile::tempdir().expect("temp dir");
    let src = work.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for file in ["index.ts", "schema.ts"] {
        std::fs::copy(
            clients_dir().join("typescript/src").join(file),
            src.join(file),
        )
        .unwrap();
    }
    std::fs::copy(smoke_dir().join("smoke.ts"), src.join("smoke.ts")).unwrap();
    std::fs::copy(
        clients_dir().join("typescript/tsconfig.json"),
        work.path().join("tsconfig.json"),
    )
    .unwrap();
    std::fs::write(work.path().join("package.json"), r#"{"type": "module"}"#).unwrap();
    std::os::unix::fs::symlink(&modules, work.path().join("node_modules")).unwrap();
    run(
        Command::new("node")
            .arg(modules.join("typescript/bin/tsc"))
            .arg("--project")
            .arg(work.path().join("tsconfig.json")),
        "tsc",
    );

    let server = Server::start().await;
    let key = server.key().to_string();
    let name = "TypeScript client agent";
    let stdout = tokio::task::spawn_blocking({
        let base = server.url("");
        let key = key.clone();
        let script = work.path().join("dist/smoke.js");
        move || {
            run(
                Command::new("node")
                    .arg(script)
                    .args([base.as_str(), key.as_str(), name]),
                "the TypeScript client's smoke script",
            )
        }
    })
    .await
    .unwrap();
    check_round_trip(&server, &key, &smoke_report(&stdout), name).await;
}
