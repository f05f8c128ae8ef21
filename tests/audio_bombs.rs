//! Audio bombs: small uploads that claim or expand into enormous audio. A header declaring an
//! absurd sample rate or channel count is refused with 400 on every route that decodes
//! audio and by the CLI; a silent multi-channel high-rate FLAC (kilobytes that decode to
//! hundreds of megabytes of PCM) is decoded as a stream, so the server's memory grows by less
//! than the documented budget and it answers within seconds; a job that keeps taking its node
//! down is failed instead of being resumed for ever, and a job past its time bound fails.
//!
//! The bombs are made here, by hand: WAV headers and FLAC frames of CONSTANT subframes (the
//! way a FLAC encoder stores digital silence), so no tool is needed at test time.

mod common;

use std::time::{Duration, Instant};

use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};

use common::*;

/// A 16-bit PCM WAV of `frames` silent frames whose header declares `rate` and `channels`.
fn wav(rate: u32, channels: u16, frames: usize) -> Vec<u8> {
    let block = 2 * channels as u32;
    let data = vec![0u8; frames * block as usize];
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&rate.wrapping_mul(block).to_le_bytes());
    out.extend_from_slice(&(block as u16).to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&data);
    out
}

/// The 3 KB WAV of the report: a header declaring 4294967295 Hz.
fn absurd_rate_wav() -> Vec<u8> {
    wav(u32::MAX, 1, 1_500)
}

fn crc8(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |mut crc, &b| {
        crc ^= b;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
        crc
    })
}

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |mut crc, &b| {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x8005
            } else {
                crc << 1
            };
        }
        crc
    })
}

/// FLAC's UTF-8-like coding of a frame number.
fn utf8_number(n: u32) -> Vec<u8> {
    match n {
        0..=0x7f => vec![n as u8],
        0x80..=0x7ff => vec![0xc0 | (n >> 6) as u8, 0x80 | (n & 0x3f) as u8],
        0x800..=0xffff => vec![
            0xe0 | (n >> 12) as u8,
            0x80 | ((n >> 6) & 0x3f) as u8,
            0x80 | (n & 0x3f) as u8,
        ],
        _ => vec![
            0xf0 | (n >> 18) as u8,
            0x80 | ((n >> 12) & 0x3f) as u8,
            0x80 | ((n >> 6) & 0x3f) as u8,
            0x80 | (n & 0x3f) as u8,
        ],
    }
}

/// Silent 16-bit FLAC: `channels` at `rate` for `seconds`, every subframe CONSTANT 0. With
/// `declare_length` false the STREAMINFO leaves the total length unknown (0), as a streaming
/// encoder does, so only decoding can tell how long it is.
fn silent_flac(channels: u8, rate: u32, seconds: u32, declare_length: bool) -> Vec<u8> {
    const BLOCK: u64 = 16_384;
    let total = rate as u64 * seconds as u64;
    let mut out = b"fLaC".to_vec();
    // The last (and only) metadata block: STREAMINFO, 34 bytes.
    out.extend_from_slice(&[0x80, 0, 0, 34]);
    out.extend_from_slice(&(BLOCK as u16).to_be_bytes());
    out.extend_from_slice(&(BLOCK as u16).to_be_bytes());
    out.extend_from_slice(&[0; 6]);
    let declared = if declare_length { total } else { 0 };
    let packed: u64 = (u64::from(rate) << 44)
        | (u64::from(channels - 1) << 41)
        | (15u64 << 36)
        | (declared & 0xf_ffff_ffff);
    out.extend_from_slice(&packed.to_be_bytes());
    out.extend_from_slice(&[0; 16]);
    let mut done = 0u64;
    let mut number = 0u32;
    while done < total {
        let block = BLOCK.min(total - done);
        // Sync, fixed block size; block size as a 16-bit field after the number; the rate
        // from STREAMINFO; independent channels; 16 bits per sample.
        let mut frame = vec![0xff, 0xf8, 0x70, ((channels - 1) << 4) | 0x08];
        frame.extend_from_slice(&utf8_number(number));
        frame.extend_from_slice(&((block - 1) as u16).to_be_bytes());
        frame.push(crc8(&frame));
        for _ in 0..channels {
            // CONSTANT subframe, no wasted bits, value 0 in 16 bits.
            frame.extend_from_slice(&[0x00, 0x00, 0x00]);
        }
        let crc = crc16(&frame);
        frame.extend_from_slice(&crc.to_be_bytes());
        out.extend_from_slice(&frame);
        done += block;
        number += 1;
    }
    out
}

/// One field of /proc/<pid>/status, in kB.
fn proc_status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

async fn upload(server: &Server, path: &str, bytes: Vec<u8>, name: &str) -> (u16, Value) {
    let mut form = Form::new().part("file", Part::bytes(bytes).file_name(name.to_string()));
    if path == "/v1/audio/transcriptions" {
        form = form.text("model", "whisper-1");
    } else {
        form = form.text("mode", "fast").text("language", "en");
    }
    call(
        server
            .request(reqwest::Method::POST, path, server.key())
            .multipart(form),
    )
    .await
}

/// Serves `bytes` on loopback for every request, as an audio host would.
async fn serve(bytes: Vec<u8>, name: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let bytes = bytes.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    bytes.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&bytes).await;
            });
        }
    });
    format!("http://{addr}/media/{name}")
}

/// Headers no recording has: each is refused before anything is sized from it.
fn implausible_files() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    vec![
        ("4294967295 Hz WAV", absurd_rate_wav(), "bomb.wav"),
        ("500 Hz WAV", wav(500, 1, 1_500), "low.wav"),
        ("20-channel WAV", wav(16_000, 20, 100), "many.wav"),
        ("1000-channel WAV", wav(16_000, 1_000, 2), "more.wav"),
        (
            "1 MHz FLAC",
            silent_flac(1, 1_048_575, 1, true),
            "fast.flac",
        ),
    ]
}

#[tokio::test]
async fn implausible_rates_and_channel_counts_are_refused_on_every_decoding_route() {
    let storage = Storage::fresh().await;
    let server =
        Server::start_with(storage, &[("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.1\"]")]).await;
    let key = server.key().to_string();
    let (status, collection) =
        call(server.post("/v1/collections", &key, json!({"name": "Calls"}))).await;
    assert_eq!(status, 201, "{collection}");
    let collection = collection["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    for (case, bytes, name) in implausible_files() {
        for path in [
            "/v1/transcribe",
            "/v1/transcribe/async",
            "/v1/audio/transcriptions",
        ] {
            let (status, body) = upload(&server, path, bytes.clone(), name).await;
            assert_eq!(status, 400, "{case} on {path}: {body}");
            assert_eq!(body["error"]["param"], "file", "{case} on {path}: {body}");
            if path == "/v1/transcribe" {
                assert_invalid(status, &body, "file", case);
            }
        }
        let url = serve(bytes.clone(), name).await;
        let (status, body) = call(server.post(
            "/v1/transcribe",
            &key,
            json!({"audioUrl": url, "mode": "fast"}),
        ))
        .await;
        assert_invalid(status, &body, "file", &format!("{case} by audioUrl"));
        // Ingest reports the field the audio came from.
        let (status, body) = call(server.post(
            &format!("/v1/collections/{collection}/ingest"),
            &key,
            json!({"contentType": "audio", "sourceUrl": url}),
        ))
        .await;
        assert_invalid(status, &body, "sourceUrl", &format!("{case} ingested"));
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("channel") || m.contains("rate")),
            "{case}: the reason is given: {body}"
        );
    }
    // Nothing was left behind: the async route kept no upload for a job.
    let kept = std::fs::read_dir(server.storage.data_dir.path().join("jobs"))
        .map(|dir| dir.count())
        .unwrap_or(0);
    assert_eq!(kept, 0, "uploads kept for refused jobs");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "refusals are immediate: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_cli_refuses_an_absurd_sample_rate_with_a_clear_message() {
    let storage = Storage::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bomb.wav");
    std::fs::write(&file, absurd_rate_wav()).unwrap();
    let started = Instant::now();
    let (ok, _, stderr) = storage.cli(&["transcribe", file.to_str().unwrap()]);
    assert!(!ok, "the CLI fails: {stderr}");
    assert!(
        stderr.contains("4294967295 Hz") && !stderr.contains("memory allocation"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Peak memory one bomb's transcription may add over the server's RSS before it (recogniser
/// already loaded on an 11 s file), in MiB. The decoded audio itself is small (120 s of
/// 16 kHz mono is 7.7 MB); most of what is measured, 140-165 MiB, is the peak the 11 s
/// warm-up transcription already reached and Whisper's working memory for several 30 s
/// windows. Before decoding was streamed the 60 s bomb added 466 MiB and the 120 s one 956.
const BOMB_BUDGET_MIB: u64 = 256;

#[tokio::test]
async fn silent_high_rate_multichannel_flacs_are_decoded_within_a_fixed_memory_budget() {
    let server = Server::start().await;
    let pid = server.pid();
    // The recogniser is loaded first, so what follows measures decoding, not the model.
    let (status, body) = upload(&server, "/v1/transcribe", fixture("jfk.flac"), "jfk.flac").await;
    assert_eq!(status, 200, "{body}");
    for (case, seconds) in [("60 s", 60), ("120 s", 120)] {
        let bomb = silent_flac(8, 192_000, seconds, true);
        assert!(bomb.len() < 64 * 1024, "{case}: {} bytes", bomb.len());
        let before = proc_status_kb(pid, "VmRSS");
        let peak_before = proc_status_kb(pid, "VmHWM");
        let started = Instant::now();
        let (status, body) = upload(&server, "/v1/transcribe", bomb, "bomb.flac").await;
        let took = started.elapsed();
        assert_eq!(status, 200, "{case}: {body}");
        assert!(
            (body["duration"].as_f64().unwrap() - seconds as f64).abs() < 0.1,
            "{case}: {body}"
        );
        let peak = proc_status_kb(pid, "VmHWM");
        let grew_mib = peak.saturating_sub(before.max(peak_before.min(peak))) / 1024;
        let grew_from_rss_mib = peak.saturating_sub(before) / 1024;
        eprintln!(
            "{case} bomb: {} KiB upload, RSS {before} kB before, peak {peak} kB, +{grew_from_rss_mib} MiB, answered in {took:?}",
            silent_flac(8, 192_000, seconds, true).len() / 1024
        );
        assert!(
            grew_from_rss_mib < BOMB_BUDGET_MIB,
            "{case}: peak RSS grew {grew_from_rss_mib} MiB (budget {BOMB_BUDGET_MIB}); {grew_mib}"
        );
        assert!(took < Duration::from_secs(30), "{case}: {took:?}");
    }
    // 4 hours and a second of 8 channels at 192 kHz (about 88 GB of PCM) is refused from its
    // header, before a sample is decoded.
    let long = silent_flac(8, 192_000, 4 * 3600 + 1, true);
    let started = Instant::now();
    let (status, body) = upload(&server, "/v1/transcribe", long.clone(), "long.flac").await;
    assert_eq!(status, 413, "{body}");
    let (status, body) = upload(&server, "/v1/transcribe/async", long, "long.flac").await;
    assert_eq!(status, 413, "{body}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_bomb_that_hides_its_length_is_stopped_at_the_duration_cap_by_decoding() {
    // Without a declared length only decoding finds the end; the 120 s bomb still decodes
    // within the budget (the cap itself is checked packet by packet, see media::sink).
    let server = Server::start().await;
    let pid = server.pid();
    let (status, body) = upload(&server, "/v1/transcribe", fixture("jfk.flac"), "jfk.flac").await;
    assert_eq!(status, 200, "{body}");
    let before = proc_status_kb(pid, "VmRSS");
    let bomb = silent_flac(8, 192_000, 120, false);
    let (status, body) = upload(&server, "/v1/transcribe", bomb, "bomb.flac").await;
    assert_eq!(status, 200, "{body}");
    let grew = proc_status_kb(pid, "VmHWM").saturating_sub(before) / 1024;
    assert!(grew < BOMB_BUDGET_MIB, "+{grew} MiB");
}

#[tokio::test]
async fn diarizing_a_stereo_recording_by_channel_still_works() {
    let server = Server::start().await;
    let form = Form::new()
        .part(
            "file",
            Part::bytes(fixture("stereo_diarization.wav")).file_name("call.wav"),
        )
        .text("diarize", "true")
        .text("mode", "fast")
        .text("language", "en");
    let (status, body) = call(
        server
            .request(reqwest::Method::POST, "/v1/transcribe", server.key())
            .multipart(form),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let speakers: std::collections::BTreeSet<&str> = body["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["speaker"].as_str())
        .collect();
    assert_eq!(
        speakers.into_iter().collect::<Vec<_>>(),
        ["speaker_1", "speaker_2"],
        "{body}"
    );
    assert!(
        (body["duration"].as_f64().unwrap() - 5.0).abs() < 0.1,
        "{body}"
    );
}

/// Kills the server without warning and hands back its store.
fn kill_hard(mut server: Server) -> Storage {
    // SAFETY: a plain kill(2) of the child process this test started.
    let killed = unsafe { libc::kill(server.pid() as i32, libc::SIGKILL) };
    assert_eq!(killed, 0, "SIGKILL reaches the server");
    assert!(server.wait_exit(Duration::from_secs(10)).is_some());
    server.into_storage()
}

/// The times a job has started, read from the server's own database.
async fn job_runs(storage: &Storage, id: &str) -> i32 {
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    use switchboard::store::schema::transcription_jobs as t;
    let db = switchboard::store::Db::connect(&storage.resolved_url(), 1, 5_000).unwrap();
    let id = id.to_string();
    let query = async {
        switchboard::db_run!(db, |conn| {
            let runs: i32 = t::table
                .filter(t::id.eq(&id))
                .select(t::runs)
                .first(conn)
                .await?;
            Ok::<_, switchboard::store::StoreError>(runs)
        })
    };
    query.await.expect("the job's runs")
}

async fn wait_for_runs(server: &Server, id: &str, runs: i32) {
    let started = Instant::now();
    loop {
        if job_runs(&server.storage, id).await >= runs {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "run {runs} never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_job_cut_by_a_crash_twice_is_failed_instead_of_resumed_again() {
    let server = Server::start().await;
    let key = server.key().to_string();
    // 60 s of speech: long enough to be cut while it runs.
    let (status, accepted) = upload(
        &server,
        "/v1/transcribe/async",
        fixture("multilingual.mp3"),
        "speech.mp3",
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_string();
    wait_for_runs(&server, &id, 1).await;
    let storage = kill_hard(server);

    // Resumed once more after the restart...
    let server = Server::start_on(storage).await;
    wait_for_runs(&server, &id, 2).await;
    let (_, job) = call(server.get(&format!("/v1/transcribe/{id}"), &key)).await;
    assert_eq!(job["status"], "processing", "{job}");
    let storage = kill_hard(server);

    // ...but not a third time.
    let server = Server::start_on(storage).await;
    let started = Instant::now();
    let job = loop {
        let (status, job) = call(server.get(&format!("/v1/transcribe/{id}"), &key)).await;
        assert_eq!(status, 200, "{job}");
        if job["status"] != "processing" {
            break job;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["error"]
            .as_str()
            .is_some_and(|e| e.contains("running when the server stopped")),
        "{job}"
    );
    assert_eq!(job_runs(&server.storage, &id).await, 2);
}

#[tokio::test]
async fn a_job_past_its_time_bound_fails_with_the_reason() {
    let storage = Storage::fresh().await;
    let server = Server::start_with(storage, &[("SWITCHBOARD__JOBS__TIMEOUT_SECONDS", "1")]).await;
    let key = server.key().to_string();
    let (status, accepted) = upload(
        &server,
        "/v1/transcribe/async",
        fixture("multilingual.mp3"),
        "speech.mp3",
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap();
    let started = Instant::now();
    let job = loop {
        let (_, job) = call(server.get(&format!("/v1/transcribe/{id}"), &key)).await;
        if job["status"] != "processing" {
            break job;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["error"]
            .as_str()
            .is_some_and(|e| e.contains("longer than the 1 s limit")),
        "{job}"
    );
}
