//! The load tester (`switchboard loadtest`): drives many concurrent real-time sessions against
//! a running server over its real WebSocket protocols (Twilio Media Streams or the direct
//! socket), each a caller speaking recorded speech at real time with pauses and optional
//! barge-ins, and reports what the callers experienced: connections, turn latency, first
//! response, barge-in clear latency, late frames and server errors.

mod arrival;
mod caller;
mod protocol;
mod report;
mod speech;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

pub use arrival::{Arrivals, StampedTcp};
pub use caller::{Script, LATE_FRAME_MS};
pub use protocol::{Direct, Inbound, Protocol, Twilio};
pub use report::{Cleared, Live, Percentiles, SessionReport, Summary};
pub use speech::{CallerSpeech, Encoding};

/// Which real-time protocol the callers speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// Twilio Media Streams: 8 kHz mu-law in JSON, marks answered as Twilio does.
    Twilio,
    /// The direct socket: binary PCM16 with `acks=marks`.
    Direct,
}

/// `switchboard loadtest` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadTestArgs {
    /// The server: ws://host:port or wss://host (http and https are taken as ws and wss).
    #[arg(long)]
    pub url: String,
    #[arg(long, value_enum, default_value_t = Transport::Twilio)]
    pub transport: Transport,
    /// Concurrent sessions.
    #[arg(long, default_value_t = 10)]
    pub sessions: u64,
    /// Seconds over which the sessions start, evenly spaced.
    #[arg(long, default_value_t = 10.0)]
    pub ramp_up: f64,
    /// Seconds each session stays on the line.
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// What every caller says each turn: an audio file (WAV, FLAC, MP3, Ogg, ...).
    #[arg(long)]
    pub audio: PathBuf,
    /// The agent the sessions talk to.
    #[arg(long)]
    pub agent: String,
    /// An API key of the agent's owner.
    #[arg(long, env = "SWITCHBOARD_API_KEY", hide_env_values = true)]
    pub key: String,
    /// Silence after an answer has played before the caller speaks again, in ms.
    #[arg(long, default_value_t = 1000)]
    pub pause_ms: u64,
    /// Talk over every n-th answer (0: never).
    #[arg(long, default_value_t = 0)]
    pub barge_in_every: u32,
    /// How much of an answer plays before the caller talks over it, in ms.
    #[arg(long, default_value_t = 600)]
    pub barge_in_after_ms: u64,
    /// A turn with no answer within this many ms counts as unanswered.
    #[arg(long, default_value_t = 10_000)]
    pub answer_timeout_ms: u64,
    /// Direct socket only: the PCM16 sample rate (8000, 16000, 24000 or 48000).
    #[arg(long, default_value_t = 16_000)]
    pub sample_rate: u32,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

impl LoadTestArgs {
    /// What caller number `caller` does.
    fn script(&self, caller: u64) -> Script {
        Script {
            duration: Duration::from_secs_f64(self.duration),
            pause: Duration::from_millis(self.pause_ms),
            barge_in_every: self.barge_in_every,
            barge_in_after: Duration::from_millis(self.barge_in_after_ms),
            answer_timeout: Duration::from_millis(self.answer_timeout_ms),
            frame_phase: caller::frame_phase(caller),
        }
    }

    fn encoding(&self) -> Encoding {
        match self.transport {
            Transport::Twilio => Encoding::Mulaw8k,
            Transport::Direct => Encoding::Pcm16(self.sample_rate),
        }
    }
}

/// The server's WebSocket and HTTP bases.
#[derive(Debug, Clone)]
struct Target {
    ws: String,
    http: String,
}

impl Target {
    fn parse(url: &str) -> anyhow::Result<Self> {
        let url = url.trim_end_matches('/');
        let (secure, rest) = match url.split_once("://") {
            Some(("ws" | "http", rest)) => (false, rest),
            Some(("wss" | "https", rest)) => (true, rest),
            _ => bail!("--url must start with ws://, wss://, http:// or https://: {url}"),
        };
        let (ws, http) = if secure {
            ("wss", "https")
        } else {
            ("ws", "http")
        };
        Ok(Self {
            ws: format!("{ws}://{rest}"),
            http: format!("{http}://{rest}"),
        })
    }
}

/// Runs the load test and answers its summary; the progress line goes to stderr.
pub async fn run(args: &LoadTestArgs) -> anyhow::Result<Summary> {
    if args.sessions == 0 {
        bail!("--sessions must be at least 1");
    }
    if !(args.duration > 0.0 && args.ramp_up >= 0.0) {
        bail!("--duration must be positive and --ramp-up not negative");
    }
    if args.transport == Transport::Direct
        && ![8_000, 16_000, 24_000, 48_000].contains(&args.sample_rate)
    {
        bail!("--sample-rate must be 8000, 16000, 24000 or 48000");
    }
    let target = Target::parse(&args.url)?;
    let speech = CallerSpeech::load(&args.audio, args.encoding())?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .context("building the HTTP client")?;
    let live = Arc::new(Live::default());
    let started = tokio::time::Instant::now();

    let total = args.ramp_up + args.duration;
    let progress = ProgressBar::new(total.ceil() as u64);
    progress.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    let ticker = {
        let (progress, live) = (progress.clone(), live.clone());
        tokio::spawn(async move {
            loop {
                progress.set_position(started.elapsed().as_secs());
                progress.set_message(live.line());
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };

    let mut callers = JoinSet::new();
    for i in 0..args.sessions {
        let delay = Duration::from_secs_f64(args.ramp_up * i as f64 / args.sessions as f64);
        let (args, target, http, speech, live) = (
            args.clone(),
            target.clone(),
            http.clone(),
            speech.clone(),
            live.clone(),
        );
        callers.spawn(async move {
            tokio::time::sleep_until(started + delay).await;
            one_session(i, &args, &target, &http, speech, live).await
        });
    }
    let mut reports = Vec::with_capacity(args.sessions as usize);
    while let Some(report) = callers.join_next().await {
        reports.push(report.unwrap_or_else(|e| {
            let mut report = SessionReport::default();
            report.fail(&format!("the caller task failed: {e}"));
            report
        }));
    }
    ticker.abort();
    progress.finish_and_clear();
    let transport = match args.transport {
        Transport::Twilio => "twilio",
        Transport::Direct => "direct",
    };
    Ok(Summary::of(
        transport,
        args.sessions,
        started.elapsed().as_secs_f64(),
        &reports,
    ))
}

/// Caller number `caller`, from setup to hang-up.
async fn one_session(
    caller: u64,
    args: &LoadTestArgs,
    target: &Target,
    http: &reqwest::Client,
    speech: CallerSpeech,
    live: Arc<Live>,
) -> SessionReport {
    let mut report = SessionReport::default();
    let script = args.script(caller);
    let outcome: Result<(), String> = async {
        match args.transport {
            Transport::Twilio => {
                let (call_sid, token) = twilio_setup(args, target, http).await?;
                let url = format!("{}/v1/sessions/twilio/stream", target.ws);
                let socket = connect(&url, None).await?;
                let protocol = Twilio::new(call_sid, token);
                talk(socket, protocol, speech, script, &live, &mut report).await;
            }
            Transport::Direct => {
                let url = format!(
                    "{}/v1/agents/{}/session?sampleRate={}&acks=marks",
                    target.ws, args.agent, args.sample_rate
                );
                let socket = connect(&url, Some(&args.key)).await?;
                let protocol = Direct::new(args.sample_rate);
                talk(socket, protocol, speech, script, &live, &mut report).await;
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = outcome {
        report.fail(&e);
    }
    if !report.completed {
        live.failed.fetch_add(1, Ordering::Relaxed);
    }
    report
}

async fn talk<P: Protocol>(
    (socket, arrivals): (Socket, Arc<Arrivals>),
    protocol: P,
    speech: CallerSpeech,
    script: Script,
    live: &Arc<Live>,
    report: &mut SessionReport,
) {
    report.connected = true;
    live.connected.fetch_add(1, Ordering::Relaxed);
    caller::converse(
        socket,
        arrivals,
        protocol,
        speech,
        script,
        live.clone(),
        report,
    )
    .await;
    live.finished.fetch_add(1, Ordering::Relaxed);
}

/// Asks the server for a phone session as Twilio's webhook would; answers (callSid, token).
async fn twilio_setup(
    args: &LoadTestArgs,
    target: &Target,
    http: &reqwest::Client,
) -> Result<(String, String), String> {
    let response = http
        .post(format!("{}/v1/sessions/twilio", target.http))
        .bearer_auth(&args.key)
        .json(&json!({"agentId": args.agent, "from": "+15005550006", "to": "+15005550001"}))
        .send()
        .await
        .map_err(|e| format!("setup: {}", short_reqwest_error(&e)))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let code = body["error"]["code"].as_str().unwrap_or("");
        return Err(format!("setup: HTTP {} {code}", status.as_u16()));
    }
    let token = body["twiml"]
        .as_str()
        .and_then(|twiml| twiml.split(r#"name="token" value=""#).nth(1))
        .and_then(|rest| rest.split('"').next())
        .ok_or("setup: the answer has no stream token")?;
    let call_sid = format!("CA{}", uuid::Uuid::new_v4().simple());
    Ok((call_sid, token.to_string()))
}

/// Read buffer of a caller's socket: a few media messages (a larger frame still gets the room
/// it needs). The library zero-fills the whole buffer before each read, so it is kept small.
const READ_BUFFER_BYTES: usize = 4 * 1024;

/// A caller's socket: a WebSocket over TCP whose reads are stamped with their arrival.
type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<StampedTcp>>;

/// Opens a caller's socket to `url`, with the arrival times of what it reads.
async fn connect(url: &str, key: Option<&str>) -> Result<(Socket, Arc<Arrivals>), String> {
    let mut request = url
        .into_client_request()
        .map_err(|e| format!("connect: bad URL: {e}"))?;
    if let Some(key) = key {
        let value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| "connect: the key is not a valid header value".to_string())?;
        request.headers_mut().insert("authorization", value);
    }
    let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
    let uri = request.uri();
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_string();
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("wss") {
            443
        } else {
            80
        });
    let connecting = async move {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        // No Nagle: each 20 ms frame is sent as it is due, as Twilio and a browser send theirs.
        tcp.set_nodelay(true)?;
        let (stamped, arrivals) = StampedTcp::new(tcp)?;
        let (socket, _) =
            tokio_tungstenite::client_async_tls_with_config(request, stamped, Some(config), None)
                .await?;
        Ok::<_, tokio_tungstenite::tungstenite::Error>((socket, arrivals))
    };
    match tokio::time::timeout(Duration::from_secs(10), connecting).await {
        Ok(Ok(opened)) => Ok(opened),
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
            Err(format!("connect: HTTP {}", response.status().as_u16()))
        }
        Ok(Err(e)) => Err(format!("connect: {e}")),
        Err(_) => Err("connect: timed out after 10 s".to_string()),
    }
}

fn short_reqwest_error(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection refused or failed"
    } else {
        "request failed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_gives_both_bases() {
        let t = Target::parse("ws://127.0.0.1:8080/").unwrap();
        assert_eq!(
            (t.ws.as_str(), t.http.as_str()),
            ("ws://127.0.0.1:8080", "http://127.0.0.1:8080")
        );
        let t = Target::parse("https://voice.example.com").unwrap();
        assert_eq!(t.ws, "wss://voice.example.com");
        assert!(Target::parse("ftp://x").is_err());
        assert!(Target::parse("localhost:8080").is_err());
    }
}
