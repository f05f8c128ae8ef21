//! The browser voice widget: its files as the engine serves them, its audio code under Node's
//! test runner, and a whole conversation in headless Chromium — the demo page, a pasted key,
//! the fake microphone speaking a real recording, the caller's words on screen and the
//! agent's reply played; latencies only with the `diagnostics` attribute, the `launcher`
//! state, and no request answered 404 (a favicon included).
//!
//! The browser test needs `node`, Debian's `chromium` (`scripts/system-deps --test`) and
//! playwright-core (`scripts/browser-deps`); `scripts/test` installs all three. It fails when
//! one is missing, unless `SWITCHBOARD_TEST_NO_BROWSER` is set, which skips it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use reqwest::header::{
    ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG,
    IF_NONE_MATCH, LOCATION, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
};
use serde_json::{json, Value};
use switchboard::media::{decode, resample};

/// What the recording says; the page must show it.
const SENTENCE: &str =
    "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.";
/// How far the recognised words may be from it: at most 3 of its 22 words wrong. The English
/// recogniser's accuracy is measured on its own (tests/speech.rs); through a browser's audio
/// processing it mishears a word now and then ("American asked not"), which is not the widget's
/// to answer for.
const MAX_WER: f64 = 0.15;

/// The widget's source folder, whose files the engine embeds.
fn widget_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("widget")
}

fn browser_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

fn header(response: &reqwest::Response, name: impl reqwest::header::AsHeaderName) -> &str {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn widget_files_are_served_with_their_types_and_validators() {
    let server = Server::start().await;
    let http = no_redirects();
    let cases = [
        (
            "/widget/widget.js",
            "text/javascript; charset=utf-8",
            "widget.js",
        ),
        (
            "/widget/session.js",
            "text/javascript; charset=utf-8",
            "session.js",
        ),
        (
            "/widget/capture-worklet.js",
            "text/javascript; charset=utf-8",
            "capture-worklet.js",
        ),
        (
            "/widget/playback-worklet.js",
            "text/javascript; charset=utf-8",
            "playback-worklet.js",
        ),
        (
            "/widget/resampler.js",
            "text/javascript; charset=utf-8",
            "resampler.js",
        ),
        (
            "/widget/widget.css",
            "text/css; charset=utf-8",
            "widget.css",
        ),
        ("/widget/demo", "text/html; charset=utf-8", "demo.html"),
    ];
    for (path, content_type, file) in cases {
        let response = http.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(header(&response, CONTENT_TYPE), content_type, "{path}");
        assert_eq!(header(&response, CACHE_CONTROL), "no-cache", "{path}");
        assert_eq!(
            header(&response, X_CONTENT_TYPE_OPTIONS),
            "nosniff",
            "{path}"
        );
        assert!(!header(&response, "x-request-id").is_empty(), "{path}");
        let etag = header(&response, ETAG).to_string();
        assert!(
            etag.starts_with('"') && etag.len() == 34,
            "{path}: etag {etag}"
        );
        let is_page = file.ends_with(".html");
        if is_page {
            let csp = header(&response, CONTENT_SECURITY_POLICY);
            assert!(csp.contains("connect-src 'self'"), "{csp}");
            assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
            assert_eq!(header(&response, REFERRER_POLICY), "no-referrer");
            assert_eq!(header(&response, ACCESS_CONTROL_ALLOW_ORIGIN), "");
        } else {
            // Module scripts and worklets are fetched in CORS mode by embedding sites.
            assert_eq!(
                header(&response, ACCESS_CONTROL_ALLOW_ORIGIN),
                "*",
                "{path}"
            );
        }
        let body = response.bytes().await.unwrap();
        let source = std::fs::read(widget_dir().join(file)).unwrap();
        assert_eq!(
            body.as_ref(),
            source.as_slice(),
            "{path} is the file itself"
        );

        // Revalidation: the same version is a bodiless 304, a changed one the file.
        let response = http
            .get(server.url(path))
            .header(IF_NONE_MATCH, &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 304, "{path}");
        assert_eq!(header(&response, ETAG), etag);
        assert!(response.bytes().await.unwrap().is_empty());
        let response = http
            .get(server.url(path))
            .header(IF_NONE_MATCH, "\"an-older-version\"")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");

        let response = http.head(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "HEAD {path}");
        assert_eq!(header(&response, CONTENT_TYPE), content_type);
        assert!(
            response.bytes().await.unwrap().is_empty(),
            "HEAD has no body"
        );
    }

    // /widget/ leads to the demo.
    for path in ["/widget", "/widget/"] {
        let response = http.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 302, "{path}");
        assert_eq!(header(&response, LOCATION), "/widget/demo");
    }
}

#[tokio::test]
async fn unknown_widget_paths_and_other_methods_are_documented_errors() {
    let server = Server::start().await;
    let http = no_redirects();
    for path in [
        "/widget/nope.js",
        "/widget/demo.js.map",
        "/widget/%2e%2e/Cargo.toml",
        "/widget/..%2fCargo.toml",
        "/widget/widget.js/extra",
    ] {
        let (status, body) = json_of(http.get(server.url(path)).send().await.unwrap()).await;
        assert_not_found(status, &body, path);
    }
    for method in [
        reqwest::Method::POST,
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
    ] {
        let response = http
            .request(method.clone(), server.url("/widget/widget.js"))
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(response).await;
        assert_eq!(status, 405, "{method} → {body}");
        assert_eq!(error_code(&body), "method_not_allowed");
    }
    // No API key is needed, and one sent is not looked at.
    let response = http
        .get(server.url("/widget/widget.js"))
        .header("Authorization", "Bearer sb_live_not-a-key")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

/// Every `import … from './x.js'`, `src="x"`, `href="x"` and `new URL('x', import.meta.url)`
/// of the widget names a file the engine serves: a renamed module cannot break the embed.
#[tokio::test]
async fn every_file_the_widget_loads_is_served() {
    let server = Server::start().await;
    let mut referenced = Vec::new();
    for entry in std::fs::read_dir(widget_dir()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let openings = [
            ("from './", '\''),
            ("import './", '\''),
            ("new URL('", '\''),
            ("src=\"", '"'),
            ("href=\"", '"'),
        ];
        for (opening, close) in openings {
            for (at, _) in text.match_indices(opening) {
                let rest = &text[at + opening.len()..];
                let name = &rest[..rest.find(close).unwrap_or(rest.len())];
                // Files beside the one that names them (examples name whole URLs).
                if (name.ends_with(".js") || name.ends_with(".css")) && !name.contains('/') {
                    referenced.push(name.to_string());
                }
            }
        }
    }
    referenced.sort();
    referenced.dedup();
    for needed in [
        "capture-worklet.js",
        "playback-worklet.js",
        "widget.css",
        "demo.js",
        "widget.js",
    ] {
        assert!(
            referenced.iter().any(|r| r == needed),
            "{needed} in {referenced:?}"
        );
    }
    for file in &referenced {
        let response = server
            .http
            .get(server.url(&format!("/widget/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "/widget/{file}");
    }
}

#[tokio::test]
async fn widget_is_described_in_the_api_document() {
    let server = Server::start().await;
    let (status, document) = call(server.http.get(server.url("/openapi.json"))).await;
    assert_eq!(status, 200);
    for path in ["/widget/{file}", "/widget/demo"] {
        let operation = &document["paths"][path]["get"];
        assert!(operation.is_object(), "{path} in /openapi.json");
        assert!(
            operation["security"].is_null() || operation["security"] == json!([]),
            "{path} needs no key"
        );
    }
}

/// Finds `node`, or fails saying how to install it.
fn node() -> Option<String> {
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some("node".into())
    } else {
        None
    }
}

/// Whether the browser tests are switched off for this run.
fn browser_tests_disabled(test: &str) -> bool {
    if std::env::var_os("SWITCHBOARD_TEST_NO_BROWSER").is_some() {
        eprintln!("skipping {test}: SWITCHBOARD_TEST_NO_BROWSER is set");
        return true;
    }
    false
}

#[tokio::test]
async fn widget_audio_code_passes_its_unit_tests() {
    if browser_tests_disabled("widget_audio_code_passes_its_unit_tests") {
        return;
    }
    let node = node().expect("node is not installed: run scripts/system-deps --test");
    let output = tokio::process::Command::new(node)
        .arg("--test")
        .arg(browser_dir().join("unit"))
        .output()
        .await
        .expect("run node --test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let passed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(passed >= 15, "the unit tests ran: {stdout}");
}

/// The fixture as Chromium's fake microphone plays it: 48 kHz mono PCM16, a pause before the
/// speech (the agent's greeting starts meanwhile, so the speech barges in on it), and a long
/// silence after it for the agent to answer in. Chromium loops the file; the silence outlasts
/// the test.
fn microphone_wav(dir: &Path) -> PathBuf {
    let decoded = decode(&fixture("jfk.flac"), Some("flac")).expect("decode the fixture");
    let channels = decoded.channels.len() as f32;
    let mono: Vec<f32> = (0..decoded.frames())
        .map(|i| decoded.channels.iter().map(|c| c[i]).sum::<f32>() / channels)
        .collect();
    let speech = resample(&mono, decoded.sample_rate, 48_000);
    let path = dir.join("microphone.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(&path, spec).expect("create the WAV");
    let silence = |seconds: f32| std::iter::repeat_n(0.0f32, (48_000.0 * seconds) as usize);
    for sample in silence(3.0).chain(speech).chain(silence(80.0)) {
        writer
            .write_sample((sample.clamp(-1.0, 1.0) * 32767.0) as i16)
            .expect("write a sample");
    }
    writer.finalize().expect("finish the WAV");
    path
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
async fn a_caller_talks_to_an_agent_through_the_widget_in_a_real_browser() {
    if browser_tests_disabled("a_caller_talks_to_an_agent_through_the_widget_in_a_real_browser") {
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

    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, agent) = call(server.post(
        "/v1/agents",
        &key,
        json!({
            "id": "widget-demo",
            "name": "Widget demo",
            "systemPrompt": "You are a friendly assistant. Answer in one short sentence.",
            "firstMessage": "Hello, and thank you for calling the demo line. I can tell you about \
                our opening hours, our products and your orders. What would you like to know today?",
            "maxTokens": 40,
            // JFK pauses a second inside his sentence ("ask not … what your country"): a turn
            // ends after 1.5 s of silence here, so his words reach the recognizer as one turn.
            // Split at the default 600 ms, one-word turns ("ask not") come out of Whisper base
            // differently from run to run through Chromium's audio processing, and the answer
            // to each fragment plays over the next one.
            "metadata": {"turnTaking": {"endpointSilenceMs": 1500}}
        }),
    ))
    .await;
    assert_eq!(status, 201, "{agent}");

    let scratch = tempfile::tempdir().unwrap();
    let wav = microphone_wav(scratch.path());
    let artifacts = std::env::var("SWITCHBOARD_TEST_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| scratch.path().to_path_buf());
    let started = Instant::now();
    let run = tokio::process::Command::new(node)
        .arg(browser_dir().join("widget.mjs"))
        .arg(server.url("/widget/demo?agentId=widget-demo"))
        .arg("widget-demo")
        .arg(&wav)
        .arg(SENTENCE)
        .arg(MAX_WER.to_string())
        .arg(&artifacts)
        .env("SWITCHBOARD_TEST_KEY", &key)
        .env("SWITCHBOARD_TEST_NODE_MODULES", &modules)
        .env("SWITCHBOARD_TEST_CHROMIUM", &chromium)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    // The script bounds itself at 90 s; this catches a hung browser.
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

    let caller = result["caller"].as_str().unwrap();
    assert!(
        word_error_rate(SENTENCE, caller) <= MAX_WER,
        "the page showed {caller:?}: {result}"
    );
    assert!(
        !result["reply"].as_str().unwrap().trim().is_empty(),
        "{result}"
    );
    assert!(
        result["replySamplesPlayed"].as_f64().unwrap() > 0.0,
        "{result}"
    );
    // Typing over an answer cut it after some of it had played.
    assert!(
        result["cutSamplesPlayed"].as_f64().unwrap() > 0.0,
        "{result}"
    );
    assert!(
        result["agentSamplesPlayed"].as_f64().unwrap() > 0.0,
        "{result}"
    );
    assert!(
        result["shownPlayed"].as_f64().unwrap() > 0.0,
        "the page shows it: {result}"
    );
    assert!(
        !result["latenciesShown"].as_array().unwrap().is_empty(),
        "{result}"
    );
    assert!(
        result["callerFramesSent"].as_u64().unwrap() > 500,
        "{result}"
    );
    assert!(result["marksAnswered"].as_u64().unwrap() > 0, "{result}");
    let sockets = result["socketUrls"].as_array().unwrap();
    assert_eq!(sockets.len(), 1, "{result}");
    let socket = sockets[0].as_str().unwrap();
    assert!(
        socket.contains("/v1/agents/widget-demo/session?token=") && socket.contains("acks=marks"),
        "{socket}"
    );

    // Per-stage milliseconds show only on an element with the `diagnostics` attribute (the
    // demo page has it).
    let diagnostics = &result["diagnostics"];
    assert_eq!(diagnostics["off"]["rowLatency"], "", "{result}");
    assert_eq!(diagnostics["off"]["summaryHidden"], true, "{result}");
    assert_eq!(diagnostics["on"]["rowLatency"], "812 ms", "{result}");
    assert_eq!(diagnostics["on"]["summaryHidden"], false, "{result}");
    assert!(
        diagnostics["on"]["summary"]
            .as_str()
            .unwrap()
            .contains("model 400 ms"),
        "{result}"
    );
    // The launcher: a small button that opens the panel, and minimise folds it back.
    let launcher = &result["launcher"];
    for (state, launcher_shown, panel_shown) in [
        ("closed", true, false),
        ("open", false, true),
        ("folded", true, false),
    ] {
        assert_eq!(
            launcher[state]["launcher"], launcher_shown,
            "{state}: {result}"
        );
        assert_eq!(launcher[state]["panel"], panel_shown, "{state}: {result}");
        assert_eq!(
            launcher[state]["minimised"], !panel_shown,
            "{state}: {result}"
        );
    }
    assert!(launcher["closed"]["launcherWidth"].as_u64().unwrap() <= 64);
    assert_eq!(launcher["open"]["expanded"], "true");
    // Nothing the page asked for was missing (a favicon included).
    assert_eq!(result["notFound"], json!([]), "{result}");
    assert_eq!(result["faviconRequests"], 0, "{result}");

    // The server saw the same conversation, and the key is in none of its logs.
    let (status, page) =
        call(server.get("/v1/observability/sessions?agentId=widget-demo", &key)).await;
    assert_eq!(status, 200, "{page}");
    let session = &page["data"][0];
    assert_eq!(session["transport"], "direct", "{page}");
    let id = session["id"].as_str().unwrap();
    let (status, detail) =
        call(server.get(&format!("/v1/observability/sessions/{id}"), &key)).await;
    assert_eq!(status, 200);
    // The caller's spoken side as the server recorded it (split at the speaker's pauses or
    // not; the typed turns end `text`).
    let said: String = detail["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["speaker"] == "user" && t["endpoint"] != "text")
        .map(|t| t["text"].as_str().unwrap_or("").to_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    let said: String = said
        .chars()
        .map(|c| if c.is_ascii_alphabetic() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let wer = word_error_rate(SENTENCE, &said);
    assert!(wer <= MAX_WER, "WER {wer:.2}: {said}");
    let leaked: Vec<String> = server
        .log()
        .lines()
        .filter(|l| l.contains(&key))
        .map(|l| l.replace(&key, "<KEY>"))
        .collect();
    assert!(
        leaked.is_empty(),
        "the key is in the server log: {leaked:?}"
    );
}
