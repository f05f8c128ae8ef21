//! Many concurrent real-time sessions against the real server, over real WebSockets on
//! loopback, with vendors of fixed latency: the load tester's callers speak recorded speech at
//! real time, a turn every few seconds, with a barge-in every third answer. Reports what the
//! callers measured (turn latency, barge-in clear latency, late frames) and what the server
//! process cost (CPU, RSS per session), sampled from /proc.
//!
//! ```text
//! cargo bench --bench sessions_load -- --sessions 1000 --ramp-up 60 --duration 180
//! cargo bench --bench sessions_load -- --sessions 1 --duration 60      # the one-call baseline
//! cargo bench --bench sessions_load -- --transport direct --sessions 500
//! cargo bench --bench sessions_load -- --sessions 20 --ramp-up 40 --duration 4 --tts default
//! cargo bench --bench sessions_load -- --sessions 40 --ramp-up 20 --duration 60 --stt default
//! cargo bench --bench sessions_load -- --sessions 300 --ramp-up 20 --duration 60 --transcribing 4
//! ```
//! Options: `--sessions N` (1000), `--ramp-up S` (60), `--duration S` (180, per session),
//! `--transport twilio|direct`, `--latency-ms MS` (vendor latency, 0), `--barge-in-every N` (3),
//! `--tts PROVIDER` (the agent's voice: `deepgram`, the stand-in, by default; `default` is the
//! embedded voice, whose first-response latency is the greeting's time to first audio),
//! `--stt PROVIDER` (the agent's recognizer: `openai`, the stand-in, by default; `default` is
//! the embedded Whisper, so every caller turn is an inference job on the server's workers),
//! `--transcribing N` (N clients transcribe the caller's recording with the embedded Whisper
//! through `/v1/audio/transcriptions`, one request after another, for as long as the calls
//! last: a node that serves calls while its inference workers are kept busy).
//!
//! The server loads its embedded models at start (`engines.preload`) only when the agent uses
//! one (`--tts default`, `--stt default`, `--transcribing N`): against the vendor stand-ins the
//! memory figures are the sessions' own.
//!
//! As a soak (`--duration 600` or `3600`), the RSS at the start, middle and end of the
//! window with every session live shows whether memory stays flat, and the server's own
//! `/metrics` after the callers hang up show whether any session or session actor leaked.

#[path = "support/fixed_vendors.rs"]
mod fixed_vendors;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use fixed_vendors::{Behaviour, FixedVendors};
use serde_json::{json, Value};
use switchboard::loadtest::{self, LoadTestArgs, Percentiles, Transport};
use switchboard::media::encode::encode_all;
use switchboard::media::{decode, OutputFormat};

struct Options {
    sessions: u64,
    ramp_up: f64,
    duration: f64,
    transport: Transport,
    latency_ms: u64,
    barge_in_every: u32,
    tts: String,
    stt: String,
    transcribing: usize,
}

impl Options {
    fn parse() -> anyhow::Result<Self> {
        let mut o = Options {
            sessions: 1000,
            ramp_up: 60.0,
            duration: 180.0,
            transport: Transport::Twilio,
            latency_ms: 0,
            barge_in_every: 3,
            tts: "deepgram".into(),
            stt: "openai".into(),
            transcribing: 0,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--sessions" => o.sessions = value()?.parse()?,
                "--ramp-up" => o.ramp_up = value()?.parse()?,
                "--duration" => o.duration = value()?.parse()?,
                "--latency-ms" => o.latency_ms = value()?.parse()?,
                "--barge-in-every" => o.barge_in_every = value()?.parse()?,
                "--tts" => o.tts = value()?,
                "--stt" => o.stt = value()?,
                "--transcribing" => o.transcribing = value()?.parse()?,
                "--transport" => {
                    o.transport = match value()?.as_str() {
                        "twilio" => Transport::Twilio,
                        "direct" => Transport::Direct,
                        other => bail!("unknown transport {other}"),
                    }
                }
                // cargo bench passes --bench to every bench binary.
                "--bench" => {}
                other => bail!("unknown option {other}"),
            }
        }
        Ok(o)
    }
}

/// One reading of the server process, this process (the callers and the vendor stand-in) and
/// the whole machine.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: f64,
    cpu_seconds: f64,
    rss_kb: u64,
    generator_cpu_seconds: f64,
    machine_busy_seconds: f64,
}

fn process_cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((fields[11].parse::<f64>().ok()? + fields[12].parse::<f64>().ok()?) / 100.0)
}

fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    let busy: f64 = cpu
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum();
    Some(busy / 100.0)
}

fn sample(pid: u32, started: Instant) -> Option<Sample> {
    let cpu_seconds = process_cpu_seconds(&pid.to_string())?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(Sample {
        at: started.elapsed().as_secs_f64(),
        cpu_seconds,
        rss_kb,
        generator_cpu_seconds: process_cpu_seconds("self")?,
        machine_busy_seconds: machine_busy_seconds()?,
    })
}

struct ServerProcess {
    child: Child,
    base: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cli(bin: &str, data: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(bin)
        .args(args)
        .env("SWITCHBOARD_DATA_DIR", data)
        .env("SWITCHBOARD_LOG", "warn")
        .output()?;
    if !out.status.success() {
        bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Starts the server. `embedded` says whether the agent uses an embedded engine: only then does
/// the server load its models at start (`engines.preload`), so a run against the vendor
/// stand-ins measures the sessions, not a gigabyte of models loading in the background.
fn start_server(
    bin: &str,
    data: &Path,
    vendors: &FixedVendors,
    embedded: bool,
) -> anyhow::Result<ServerProcess> {
    let log = std::fs::File::create(data.join("server.log"))?;
    let mut child = Command::new(bin)
        .arg("serve")
        .env("SWITCHBOARD__ENGINES__PRELOAD", embedded.to_string())
        .env("SWITCHBOARD_DATA_DIR", data)
        .env("SWITCHBOARD_BIND", "127.0.0.1:0")
        .env(
            "SWITCHBOARD_LOG",
            std::env::var("SWITCHBOARD_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .env(
            "SWITCHBOARD__TIERS__SCALE__MAX_CONCURRENT_SESSIONS",
            "100000",
        )
        .env("SWITCHBOARD__TIERS__SCALE__RATE_LIMIT_REQUESTS", "1000000")
        .envs(vendors.env())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let base = loop {
        let line = lines.next().context("the server exited")??;
        if let Some(url) = line.strip_prefix("switchboard listening on ") {
            break url.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Ok(ServerProcess { child, base })
}

/// What the server still runs once every caller has hung up, from its `/metrics`: live
/// sessions, session actors, threads; and the agent frames it sent, with those it sent more
/// than 40 ms after their time to play (the callers' late frames also count what waited in
/// the sockets and in this process).
async fn live_after(base: &str) -> anyhow::Result<String> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await?
        .text()
        .await?;
    let wanted = [
        "switchboard_sessions_active{transport=\"twilio\"}",
        "switchboard_sessions_active{transport=\"direct\"}",
        "switchboard_session_actors_live",
        "process_threads",
        "switchboard_playback_frames_sent_total",
        "switchboard_playback_frames_sent_late_total",
    ];
    let found: Vec<String> = text
        .lines()
        .filter(|line| wanted.iter().any(|w| line.starts_with(&format!("{w} "))))
        .map(str::to_string)
        .collect();
    Ok(found.join(", "))
}

/// What the server's session records say of the run's turns.
#[derive(Default)]
struct StoredTurns {
    /// Each answer's `latency.platformMs`: the turn latency minus the endpoint silence and the
    /// engines' time.
    platform_ms: Vec<f64>,
    /// Each interruption's `detectionLatencyMs` and `stopLatencyMs`.
    detection_ms: Vec<f64>,
    stop_ms: Vec<f64>,
    /// How many sessions ended for each `endReason`: every caller hangs up with `stop`, so
    /// anything but `hangup` is a call the server ended or lost.
    end_reasons: std::collections::BTreeMap<String, u64>,
}

/// Reads every session of the run back through the observability API once the calls ended.
async fn stored_turns(base: &str, key: &str) -> anyhow::Result<StoredTurns> {
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("agentId", "bench".to_string()), ("limit", "100".into())];
        if let Some(cursor) = cursor.take() {
            query.push(("cursor", cursor));
        }
        let page: Value = client
            .get(format!("{base}/v1/observability/sessions"))
            .bearer_auth(key)
            .query(&query)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        for session in page["data"].as_array().context("a page without data")? {
            ids.push(
                session["id"]
                    .as_str()
                    .context("a session without id")?
                    .to_string(),
            );
        }
        cursor = page["nextCursor"].as_str().map(str::to_string);
        if page["hasMore"] != true || cursor.is_none() {
            break;
        }
    }
    let mut stored = StoredTurns::default();
    for id in ids {
        let session: Value = client
            .get(format!("{base}/v1/observability/sessions/{id}"))
            .bearer_auth(key)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let reason = session["endReason"].as_str().unwrap_or("none").to_string();
        *stored.end_reasons.entry(reason).or_default() += 1;
        for turn in session["turns"]
            .as_array()
            .context("a session without turns")?
        {
            stored
                .platform_ms
                .extend(turn["latency"]["platformMs"].as_f64());
            let interruption = &turn["interruption"];
            stored
                .detection_ms
                .extend(interruption["detectionLatencyMs"].as_f64());
            stored
                .stop_ms
                .extend(interruption["stopLatencyMs"].as_f64());
        }
    }
    Ok(stored)
}

/// Transcribes `audio` with the embedded Whisper, one request after another, until `running`
/// is cleared; answers how many transcriptions succeeded and failed.
async fn transcribe_until_stopped(
    base: String,
    key: String,
    audio: PathBuf,
    running: Arc<AtomicBool>,
) -> (u64, u64) {
    let client = reqwest::Client::new();
    let Ok(wav) = std::fs::read(&audio) else {
        return (0, 1);
    };
    let (mut ok, mut failed) = (0, 0);
    while running.load(Ordering::Relaxed) {
        let form = reqwest::multipart::Form::new()
            .text("model", "whisper-1")
            .part(
                "file",
                reqwest::multipart::Part::bytes(wav.clone()).file_name("caller.wav"),
            );
        let answer = client
            .post(format!("{base}/v1/audio/transcriptions"))
            .bearer_auth(&key)
            .multipart(form)
            .send()
            .await;
        match answer {
            Ok(response) if response.status().is_success() => ok += 1,
            _ => {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    (ok, failed)
}

/// The right channel of the two-speaker fixture ("The horizon seems extremely distant."),
/// written as a mono WAV for the callers.
fn caller_audio(dir: &Path) -> anyhow::Result<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/audio");
    let stereo = std::fs::read(fixtures.join("stereo_diarization.wav"))?;
    let audio = decode(&stereo, Some("wav")).map_err(|e| anyhow::anyhow!("{e}"))?;
    let wav =
        encode_all(&audio.channels[1], OutputFormat::Wav).map_err(|e| anyhow::anyhow!("{e}"))?;
    let path = dir.join("caller.wav");
    std::fs::write(&path, wav)?;
    Ok(path)
}

fn main() -> anyhow::Result<()> {
    let o = Options::parse()?;
    let bin = env!("CARGO_BIN_EXE_switchboard");
    let data = tempfile::tempdir()?;
    let vendors = FixedVendors::start(Behaviour {
        latency: Duration::from_millis(o.latency_ms),
        transcript: "What are your opening hours?".into(),
        answer: "We open at nine every morning.".into(),
        speech: Duration::from_millis(1200),
    });
    let key = cli(
        bin,
        data.path(),
        &["keys", "create", "--developer", "bench"],
    )?
    .lines()
    .last()
    .context("no key printed")?
    .trim()
    .to_string();
    cli(
        bin,
        data.path(),
        &["developers", "set-tier", "bench", "scale"],
    )?;
    let embedded = o.tts == "default" || o.stt == "default" || o.transcribing > 0;
    let server = start_server(bin, data.path(), &vendors, embedded)?;
    let pid = server.child.id();
    let audio = caller_audio(data.path())?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let agent = json!({"id": "bench", "name": "Bench agent", "firstMessage": "Hello, how can I help?",
            "systemPrompt": "You are a phone agent.", "sttProvider": o.stt, "llmProvider": "openai",
            "ttsProvider": o.tts});
        let response = reqwest::Client::new()
            .post(format!("{}/v1/agents", server.base))
            .bearer_auth(&key)
            .json(&agent)
            .send()
            .await?;
        if response.status() != 201 {
            bail!("creating the agent: {}", response.text().await?);
        }
        anyhow::Ok(())
    })?;

    let started = Instant::now();
    let samples = Arc::new(Mutex::new(vec![
        sample(pid, started).context("reading /proc")?
    ]));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (samples, sampling) = (samples.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                if let Some(s) = sample(pid, started) {
                    samples.lock().unwrap().push(s);
                }
            }
        })
    };
    let args = LoadTestArgs {
        url: server.base.replace("http://", "ws://"),
        transport: o.transport,
        sessions: o.sessions,
        ramp_up: o.ramp_up,
        duration: o.duration,
        audio,
        agent: "bench".into(),
        key,
        pause_ms: 600,
        barge_in_every: o.barge_in_every,
        barge_in_after_ms: 400,
        answer_timeout_ms: 10_000,
        sample_rate: 16_000,
        json: false,
    };
    let transcribing = Arc::new(AtomicBool::new(true));
    let transcribers: Vec<_> = (0..o.transcribing)
        .map(|_| {
            runtime.spawn(transcribe_until_stopped(
                server.base.clone(),
                args.key.clone(),
                args.audio.clone(),
                transcribing.clone(),
            ))
        })
        .collect();
    let summary = runtime.block_on(loadtest::run(&args))?;
    transcribing.store(false, Ordering::Relaxed);
    let transcribed = runtime.block_on(async {
        let mut done = Vec::new();
        for transcriber in transcribers {
            done.push(transcriber.await.unwrap_or_default());
        }
        done
    });
    sampling.store(false, Ordering::Relaxed);
    sampler.join().expect("the sampler");
    // Sessions end when their callers hang up; give the server a moment to let go of them.
    std::thread::sleep(Duration::from_secs(3));
    let after = sample(pid, started).context("reading /proc")?;
    let leftovers = runtime.block_on(live_after(&server.base));
    // What the node holds once load has been gone a while (15 s after the last hang-up): the
    // allocator gives back what the peak took (`src/memory.rs`).
    std::thread::sleep(Duration::from_secs(12));
    let settled = sample(pid, started).context("reading /proc")?;
    let stored = runtime.block_on(stored_turns(&server.base, &args.key));

    let samples = samples.lock().unwrap().clone();
    let idle = samples[0];
    // All sessions are live between the end of the ramp-up and the first hang-up.
    let (from, to) = (o.ramp_up + 5.0, o.duration - 5.0);
    let steady: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.at >= from && s.at <= to)
        .collect();
    println!("{}", summary.text());
    if let (Some(first), Some(last)) = (steady.first(), steady.last()) {
        let span = last.at - first.at;
        let cpu = (last.cpu_seconds - first.cpu_seconds) / span;
        let generator = (last.generator_cpu_seconds - first.generator_cpu_seconds) / span;
        let machine = (last.machine_busy_seconds - first.machine_busy_seconds) / span;
        let rss_mean = steady.iter().map(|s| s.rss_kb).sum::<u64>() / steady.len() as u64;
        let per_session_kb = rss_mean.saturating_sub(idle.rss_kb) as f64 / o.sessions as f64;
        println!(
            "server process  {:.0}% of one core with all {} sessions live ({:.1} s to {:.1} s); \
             {:.2} CPU-seconds per session-minute",
            cpu * 100.0,
            o.sessions,
            first.at,
            last.at,
            cpu * 60.0 / o.sessions as f64
        );
        println!(
            "load generator  {:.0}% of one core (callers and vendor stand-in); machine {:.0}% busy of {} cores",
            generator * 100.0,
            machine * 100.0,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        println!(
            "server memory   RSS {} MB idle, {} MB mean with all sessions live, {:.0} KB per session; {} MB after they ended, {} MB 15 s after",
            idle.rss_kb / 1024,
            rss_mean / 1024,
            per_session_kb,
            after.rss_kb / 1024,
            settled.rss_kb / 1024
        );
        let middle = steady[steady.len() / 2];
        println!(
            "memory over time RSS {} MB at {:.0} s, {} MB at {:.0} s, {} MB at {:.0} s (start, middle, end of the window)",
            first.rss_kb / 1024,
            first.at,
            middle.rss_kb / 1024,
            middle.at,
            last.rss_kb / 1024,
            last.at
        );
    } else {
        println!("(no steady window: make --duration longer than --ramp-up + 10)");
    }
    if o.transcribing > 0 {
        let ok: u64 = transcribed.iter().map(|t| t.0).sum();
        let failed: u64 = transcribed.iter().map(|t| t.1).sum();
        println!(
            "transcriptions {ok} answered, {failed} failed, by {} clients beside the calls",
            o.transcribing
        );
    }
    match leftovers {
        Ok(series) => println!("after hang-up   {series}"),
        Err(e) => println!("after hang-up   /metrics unreadable: {e}"),
    }
    match stored {
        Ok(stored) => {
            let line = |name: &str, what: &str, values: Vec<f64>| match Percentiles::of(values) {
                Some(p) => println!(
                    "{name:<15} {what}: p50 {} ms · p90 {} ms · p99 {} ms · max {} ms ({} turns)",
                    p.p50, p.p90, p.p99, p.max, p.count
                ),
                None => println!("{name:<15} {what}: none recorded"),
            };
            line(
                "stored overhead",
                "the server's own share of each answer's latency (latency.platformMs)",
                stored.platform_ms,
            );
            line(
                "stored barge-in",
                "caller speech onset to the decision, as the server saw it (detectionLatencyMs)",
                stored.detection_ms,
            );
            line(
                "",
                "decision to the clear sent (stopLatencyMs)",
                stored.stop_ms,
            );
            let reasons: Vec<String> = stored
                .end_reasons
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            println!("stored endings  {}", reasons.join(", "));
        }
        Err(e) => println!("stored turns    the session records are unreadable: {e}"),
    }
    drop(server);
    let log = std::fs::read_to_string(data.path().join("server.log")).unwrap_or_default();
    let warnings: Vec<&str> = log.lines().collect();
    if !warnings.is_empty() {
        println!("server log (last lines of {}):", warnings.len());
        for line in &warnings[warnings.len().saturating_sub(15)..] {
            println!("  {line}");
        }
    }
    Ok(())
}
