//! `switchboard loadtest` against the real server, with vendor stand-ins for the engines: the
//! callers connect over both real-time protocols, speak recorded speech, get answers, talk over
//! some of them and report it all; failures are reported by reason with a failing exit status.

mod common;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use switchboard::media::encode::encode_all;
use switchboard::media::{decode, OutputFormat};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// The right channel of the two-speaker fixture, one sentence, as a mono WAV file.
fn caller_wav(dir: &std::path::Path) -> PathBuf {
    let audio = decode(&fixture("stereo_diarization.wav"), Some("wav")).unwrap();
    let path = dir.join("caller.wav");
    std::fs::write(
        &path,
        encode_all(&audio.channels[1], OutputFormat::Wav).unwrap(),
    )
    .unwrap();
    path
}

async fn server_with_agent() -> (vendor_mock::VendorMock, Server, String) {
    server_with_agent_and(&[]).await
}

/// [`server_with_agent`] with `extra` environment (tier limits) on top of the stand-in's.
async fn server_with_agent_and(
    extra: &[(&str, &str)],
) -> (vendor_mock::VendorMock, Server, String) {
    let mock = vendor_mock::VendorMock::start();
    let server = mock.server(extra).await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "load", "name": "Load agent", "firstMessage": "Hello, thanks for calling.",
               "sttProvider": "openai", "llmProvider": "openai", "ttsProvider": "openai",
               "systemPrompt": "You are a phone agent."}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
    (mock, server, key)
}

/// Runs the load tester; answers (exit success, parsed JSON summary, stderr).
fn loadtest(
    server: &Server,
    key: &str,
    audio: &std::path::Path,
    extra: &[&str],
) -> (bool, Value, String) {
    let url = server.url("").replace("http://", "ws://");
    let output = Command::new(BIN)
        .args([
            "loadtest", "--url", &url, "--agent", "load", "--json", "--audio",
        ])
        .arg(audio)
        .args(extra)
        .env("SWITCHBOARD_API_KEY", key)
        .env("SWITCHBOARD_LOG", "warn")
        .output()
        .expect("run the load tester");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let summary = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}): {stdout}\n{stderr}"));
    (output.status.success(), summary, stderr)
}

fn assert_healthy_run(summary: &Value, sessions: u64) {
    assert_eq!(summary["sessions"]["connected"], sessions, "{summary:#}");
    assert_eq!(summary["sessions"]["completed"], sessions, "{summary:#}");
    assert_eq!(summary["sessions"]["failed"], 0, "{summary:#}");
    assert_eq!(summary["serverErrors"], 0, "{summary:#}");
    // The greeting, then at least two turns per caller, every one answered.
    assert_eq!(summary["firstResponseMs"]["count"], sessions, "{summary:#}");
    let spoken = summary["turns"]["spoken"].as_u64().unwrap();
    assert!(spoken >= 2 * sessions, "{summary:#}");
    assert_eq!(summary["turns"]["unanswered"], 0, "{summary:#}");
    // Answers come after the 600 ms of silence that ends a turn, and not much later with
    // vendors that answer at once.
    let latency = &summary["turnLatencyMs"];
    assert!(latency["p50"].as_f64().unwrap() >= 590.0, "{summary:#}");
    assert!(latency["max"].as_f64().unwrap() < 3_000.0, "{summary:#}");
    // Every barge-in was cleared, after the 200 ms of speech that makes one.
    let barge_in = &summary["bargeIn"];
    assert!(barge_in["count"].as_u64().unwrap() >= 1, "{summary:#}");
    assert_eq!(barge_in["cleared"], barge_in["count"], "{summary:#}");
    assert!(
        barge_in["clearMs"]["p50"].as_f64().unwrap() >= 200.0,
        "{summary:#}"
    );
    // The generator's own lag is part of each clear's latency, never more than all of it.
    assert_eq!(
        barge_in["callerLagMs"]["count"], barge_in["cleared"],
        "{summary:#}"
    );
    assert!(
        barge_in["callerLagMs"]["max"].as_f64().unwrap()
            <= barge_in["clearMs"]["max"].as_f64().unwrap(),
        "{summary:#}"
    );
    // So is its lateness reading the clear, timed from the kernel's receive timestamp: the
    // clear reached the socket at least 200 ms after the speech began (less the caller's
    // own lag, which these few callers hardly have) and no later than it was read.
    assert_eq!(
        barge_in["callerReadLagMs"]["count"], barge_in["cleared"],
        "{summary:#}"
    );
    let arrived = &barge_in["clearArrivedLessCallerLagMs"];
    assert!(
        arrived["p50"].as_f64().unwrap() >= 180.0
            && arrived["max"].as_f64().unwrap()
                <= barge_in["clearLessCallerLagMs"]["max"].as_f64().unwrap(),
        "{summary:#}"
    );
    assert!(
        summary["frames"]["received"].as_u64().unwrap() > 100,
        "{summary:#}"
    );
}

#[tokio::test]
async fn phone_callers_are_driven_over_the_twilio_protocol() {
    let (_mock, server, key) = server_with_agent().await;
    let dir = tempfile::tempdir().unwrap();
    let audio = caller_wav(dir.path());
    let args = [
        "--sessions",
        "3",
        "--ramp-up",
        "1",
        "--duration",
        "16",
        "--pause-ms",
        "500",
        "--barge-in-every",
        "2",
        "--barge-in-after-ms",
        "300",
    ];
    let (ok, summary, stderr) =
        tokio::task::spawn_blocking(move || loadtest(&server, &key, &audio, &args))
            .await
            .unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(summary["transport"], "twilio");
    assert_healthy_run(&summary, 3);
}

#[tokio::test]
async fn browser_callers_are_driven_over_the_direct_socket_with_the_servers_own_overhead() {
    let (_mock, server, key) = server_with_agent().await;
    let dir = tempfile::tempdir().unwrap();
    let audio = caller_wav(dir.path());
    let args = [
        "--transport",
        "direct",
        "--sessions",
        "2",
        "--ramp-up",
        "1",
        "--duration",
        "16",
        "--pause-ms",
        "500",
        "--barge-in-every",
        "2",
        "--barge-in-after-ms",
        "300",
    ];
    let (ok, summary, stderr) =
        tokio::task::spawn_blocking(move || loadtest(&server, &key, &audio, &args))
            .await
            .unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(summary["transport"], "direct");
    assert_healthy_run(&summary, 2);
    // The direct socket reports the server's own share of each answer's latency.
    let overhead = &summary["platformOverheadMs"];
    assert!(overhead["count"].as_u64().unwrap() >= 2, "{summary:#}");
    assert!(overhead["p99"].as_f64().unwrap() < 200.0, "{summary:#}");
}

/// A hundred phone calls at once over real sockets: every one connects, is greeted, speaks and
/// is answered, none fails; once they have hung up, no session and none of its actors is left
/// running on the server.
#[tokio::test]
async fn a_hundred_concurrent_phone_calls_are_served_and_leave_nothing_behind() {
    let (_mock, server, key) = server_with_agent_and(&[
        (
            "SWITCHBOARD__TIERS__STARTER__MAX_CONCURRENT_SESSIONS",
            "100",
        ),
        ("SWITCHBOARD__TIERS__STARTER__MONTHLY_CREDITS", "100000000"),
        ("SWITCHBOARD__RATE_LIMIT__REQUESTS", "1000"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let audio = caller_wav(dir.path());
    let args = [
        "--sessions",
        "100",
        "--ramp-up",
        "2",
        "--duration",
        "10",
        "--pause-ms",
        "500",
    ];
    let (ok, summary, stderr, server) = tokio::task::spawn_blocking(move || {
        let (ok, summary, stderr) = loadtest(&server, &key, &audio, &args);
        (ok, summary, stderr, server)
    })
    .await
    .unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(summary["sessions"]["connected"], 100, "{summary:#}");
    assert_eq!(summary["sessions"]["completed"], 100, "{summary:#}");
    assert_eq!(summary["sessions"]["failed"], 0, "{summary:#}");
    assert_eq!(summary["serverErrors"], 0, "{summary:#}");
    assert_eq!(summary["firstResponseMs"]["count"], 100, "{summary:#}");
    assert!(
        summary["turns"]["spoken"].as_u64().unwrap() >= 100,
        "{summary:#}"
    );
    assert_eq!(summary["turns"]["unanswered"], 0, "{summary:#}");

    // Every call hung up: the sessions end and all their actors stop.
    let mut left = (f64::NAN, f64::NAN);
    for _ in 0..100 {
        left = (
            server
                .metric("switchboard_sessions_active{transport=\"twilio\"}")
                .await,
            server.metric("switchboard_session_actors_live").await,
        );
        if left == (0.0, 0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        left,
        (0.0, 0.0),
        "(sessions, actors) still live after the calls"
    );
    assert_eq!(
        server
            .metric("switchboard_sessions_ended_total{status=\"completed\",transport=\"twilio\"}")
            .await,
        100.0
    );
    // The server counts the agent frames it sent: at least every one the callers received.
    let received = summary["frames"]["received"].as_f64().unwrap();
    let sent = server
        .metric("switchboard_playback_frames_sent_total")
        .await;
    assert!(
        received > 0.0 && sent >= received,
        "sent {sent}, received {received}"
    );
    assert!(
        server
            .metric("switchboard_playback_frames_sent_late_total")
            .await
            .is_finite(),
        "the late frames are exported"
    );
}

/// A run where callers spoke and got no answer in time is a failed run, whatever else went
/// well: here no answer can come within 1 ms (a turn ends after 600 ms of silence).
#[tokio::test]
async fn unanswered_turns_fail_the_run() {
    let (_mock, server, key) = server_with_agent().await;
    let dir = tempfile::tempdir().unwrap();
    let audio = caller_wav(dir.path());
    let args = [
        "--sessions",
        "1",
        "--ramp-up",
        "0",
        "--duration",
        "6",
        "--answer-timeout-ms",
        "1",
    ];
    let (ok, summary, stderr) =
        tokio::task::spawn_blocking(move || loadtest(&server, &key, &audio, &args))
            .await
            .unwrap();
    assert_eq!(summary["sessions"]["failed"], 0, "{summary:#}");
    let unanswered = summary["turns"]["unanswered"].as_u64().unwrap();
    assert!(unanswered >= 1, "{summary:#}");
    assert!(!ok, "unanswered turns must fail the run: {summary:#}");
    assert!(
        stderr.contains(&format!("{unanswered} of "))
            && stderr.contains("got no answer within 1 ms"),
        "{stderr}"
    );
}

/// Callers who spoke and were never answered fail the run even when the end of the call cut
/// every turn short of `--answer-timeout-ms` (here the recogniser hears no words, so no turn
/// is ever answered, and the 10 s default timeout outlasts the call); the session's record
/// reports no average reply latency rather than 0 ms.
#[tokio::test]
async fn callers_who_spoke_and_got_no_answer_fail_the_run() {
    let (_mock, server, key) = server_with_agent_and(&[(
        "SWITCHBOARD__VENDORS__OPENAI__API_KEY",
        "platform-openai-empty",
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let audio = caller_wav(dir.path());
    let args = [
        "--sessions",
        "1",
        "--ramp-up",
        "0",
        "--duration",
        "9",
        "--pause-ms",
        "200",
    ];
    let (ok, summary, stderr, server) = tokio::task::spawn_blocking(move || {
        let (ok, summary, stderr) = loadtest(&server, &key, &audio, &args);
        (ok, summary, stderr, server)
    })
    .await
    .unwrap();
    assert_eq!(summary["sessions"]["failed"], 0, "{summary:#}");
    assert_eq!(summary["serverErrors"], 0, "{summary:#}");
    let spoken = summary["turns"]["spoken"].as_u64().unwrap();
    assert!(spoken >= 1, "{summary:#}");
    assert_eq!(summary["turns"]["answered"], 0, "{summary:#}");
    assert_eq!(summary["turns"]["unanswered"], 0, "{summary:#}");
    assert!(
        !ok,
        "a run where no turn was answered must fail: {summary:#}"
    );
    assert!(
        stderr.contains(&format!(
            "the callers spoke {spoken} turns and none was answered"
        )),
        "{stderr}"
    );

    let key = server.key().to_string();
    let (status, page) = call(server.get("/v1/observability/sessions?agentId=load", &key)).await;
    assert_eq!(status, 200, "{page}");
    let id = page["data"][0]["id"].as_str().unwrap().to_string();
    let (status, detail) =
        call(server.get(&format!("/v1/observability/sessions/{id}"), &key)).await;
    assert_eq!(status, 200, "{detail}");
    let metrics = &detail["metrics"];
    assert!(metrics["avgTurnLatencyMs"].is_null(), "{detail:#}");
    assert!(
        detail["turns"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["latencyMs"].is_null()),
        "{detail:#}"
    );
}

#[tokio::test]
async fn failed_sessions_are_counted_by_reason_and_fail_the_run() {
    let (_mock, server, key) = server_with_agent().await;
    let dir = tempfile::tempdir().unwrap();
    let audio = caller_wav(dir.path());
    let args = ["--sessions", "2", "--ramp-up", "0", "--duration", "2"];
    let (ok, summary, stderr) = tokio::task::spawn_blocking(move || {
        let wrong_key = loadtest(&server, "sb_live_not_a_key", &audio, &args);
        let unknown_agent = {
            let url = server.url("").replace("http://", "ws://");
            let output = Command::new(BIN)
                .args([
                    "loadtest",
                    "--url",
                    &url,
                    "--agent",
                    "nobody",
                    "--json",
                    "--transport",
                    "direct",
                ])
                .args(["--sessions", "1", "--duration", "2", "--audio"])
                .arg(&audio)
                .env("SWITCHBOARD_API_KEY", &key)
                .output()
                .unwrap();
            (
                output.status.success(),
                serde_json::from_slice::<Value>(&output.stdout).unwrap(),
            )
        };
        (wrong_key, unknown_agent)
    })
    .await
    .map(|((ok, summary, stderr), unknown_agent)| {
        assert!(!unknown_agent.0, "an unknown agent must fail the run");
        assert_eq!(unknown_agent.1["sessions"]["failed"], 1);
        assert_eq!(
            unknown_agent.1["failures"]["connect: HTTP 404"], 1,
            "{}",
            unknown_agent.1
        );
        (ok, summary, stderr)
    })
    .unwrap();
    assert!(!ok, "a wrong key must fail the run");
    assert!(stderr.contains("2 of 2 sessions failed"), "{stderr}");
    assert_eq!(summary["sessions"]["connected"], 0);
    assert_eq!(
        summary["failures"]["setup: HTTP 401 unauthorized"], 2,
        "{summary:#}"
    );

    // Bad arguments are refused before anything starts.
    let output = Command::new(BIN)
        .args([
            "loadtest",
            "--url",
            "localhost:1",
            "--agent",
            "a",
            "--key",
            "k",
            "--audio",
            "/nonexistent",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--url must start with"));
}
