//! What the speech-synthesis adapters add to a vendor's own latency, and what they hold in
//! memory. A local stand-in vendor (raw HTTP/1.1 over loopback, chunked) streams audio in the
//! vendor's framing in 20 ms pieces at real-time pace and notes when it writes the first
//! audio byte; the adapter's first speech chunk (what the session turns into the caller's
//! first frame) is timed against it. Then each framing is streamed ten minutes of audio as fast
//! as the loopback carries it, with a counting allocator tracking the peak of live heap bytes
//! above the start.
//!
//! Run: `cargo bench --bench vendor_adapters` (no models or network needed).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use switchboard::vendors::http::Endpoint;
use switchboard_actors::engine::SpeechRequest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Live heap bytes, and their peak since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// How the stand-in wraps audio pieces.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Framing {
    Raw,
    /// Neuphonic: server-sent events with base64 pieces.
    Sse,
    /// Inworld: JSON lines with base64 pieces.
    Lines,
    /// Google Cloud TTS: one JSON document (the whole audio at once).
    Document,
    /// Hugging Face: one WAV file (the whole audio at once).
    File,
}

#[derive(Clone, Copy)]
struct Plan {
    framing: Framing,
    rate: u32,
    bytes_per_sample: usize,
    pieces: usize,
    pace: Duration,
}

#[derive(Default)]
struct Shared {
    plan: Option<Plan>,
    first_byte: Option<Instant>,
}

async fn serve(listener: TcpListener, shared: Arc<Mutex<Shared>>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _ = answer(socket, shared).await;
        });
    }
}

/// Reads one request (headers and a Content-Length body) and streams the planned answer.
async fn answer(mut socket: TcpStream, shared: Arc<Mutex<Shared>>) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut request = Vec::new();
    let mut buffer = [0u8; 8192];
    let body_start = loop {
        let read = socket.read(&mut buffer).await?;
        if read == 0 {
            return Ok(());
        }
        request.extend_from_slice(&buffer[..read]);
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&request[..body_start]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while request.len() < body_start + length {
        let read = socket.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        request.extend_from_slice(&buffer[..read]);
    }
    let plan = shared.lock().unwrap().plan.expect("a plan");
    let samples_per_piece = plan.rate as usize / 50;
    let piece: Vec<u8> = (0..samples_per_piece * plan.bytes_per_sample)
        .map(|i| (i % 251) as u8)
        .collect();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let content_type = match plan.framing {
        Framing::Raw => "application/octet-stream",
        Framing::Sse => "text/event-stream",
        Framing::Lines | Framing::Document => "application/json",
        Framing::File => "audio/wav",
    };
    socket
        .write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await?;
    let whole = || {
        let mut all = Vec::with_capacity(piece.len() * plan.pieces);
        for _ in 0..plan.pieces {
            all.extend_from_slice(&piece);
        }
        all
    };
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    match plan.framing {
        Framing::Document => pieces.push(
            format!(
                "{{\"audioContent\": \"{}\"}}",
                b64(&wav(&whole(), plan.rate))
            )
            .into_bytes(),
        ),
        Framing::File => pieces.push(wav(&whole(), plan.rate)),
        _ => {}
    }
    let mut sent = 0;
    loop {
        let data = match plan.framing {
            Framing::Document | Framing::File => match pieces.pop() {
                Some(data) => data,
                None => break,
            },
            _ if sent == plan.pieces => break,
            Framing::Raw => piece.clone(),
            Framing::Sse => format!(
                "data: {{\"status_code\":200,\"data\":{{\"audio\":\"{}\"}}}}\n\n",
                b64(&piece)
            )
            .into_bytes(),
            Framing::Lines => format!(
                "{{\"result\":{{\"audioContent\":\"{}\"}}}}\n",
                b64(&wav(&piece, plan.rate))
            )
            .into_bytes(),
        };
        if sent > 0 && !plan.pace.is_zero() {
            tokio::time::sleep(plan.pace).await;
        }
        let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
        frame.extend_from_slice(&data);
        frame.extend_from_slice(b"\r\n");
        if sent == 0 {
            shared
                .lock()
                .unwrap()
                .first_byte
                .get_or_insert_with(Instant::now);
        }
        socket.write_all(&frame).await?;
        sent += 1;
    }
    socket.write_all(b"0\r\n\r\n").await?;
    Ok(())
}

/// PCM16 mono WAV of `data` at `rate`.
fn wav(data: &[u8], rate: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(44 + data.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    out
}

fn endpoint(vendor: &str, base: &str) -> Endpoint {
    Endpoint {
        vendor: vendor.into(),
        base_url: base.into(),
        alt_base_url: base.into(),
        key: "user:bench-key".into(),
        timeout: Duration::from_secs(10),
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap(),
        llm_model: None,
        stt_model: None,
        tts_model: None,
        default_voice: None,
    }
}

fn request(output_rate: Option<u32>) -> SpeechRequest {
    SpeechRequest {
        output_rate,
        ..SpeechRequest::new(
            "Thank you for calling, how can I help you today?",
            "default",
        )
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shared = Arc::new(Mutex::new(Shared::default()));
    tokio::spawn(serve(listener, shared.clone()));

    // (vendor, framing, rate, bytes a sample) as each is asked on a phone call; the OpenAI
    // protocol and Hugging Face answer at their own rate.
    let vendors: &[(&str, Framing, u32, usize)] = &[
        ("openai", Framing::Raw, 24_000, 2),
        ("kokoro", Framing::Raw, 24_000, 2),
        ("deepgram", Framing::Raw, 8_000, 1),
        ("elevenlabs", Framing::Raw, 8_000, 1),
        ("cartesia", Framing::Raw, 8_000, 1),
        ("playht", Framing::Raw, 8_000, 1),
        ("rime", Framing::Raw, 8_000, 1),
        ("lmnt", Framing::Raw, 8_000, 1),
        ("azure", Framing::Raw, 8_000, 1),
        ("neuphonic", Framing::Sse, 8_000, 1),
        ("inworld", Framing::Lines, 8_000, 1),
        ("google", Framing::Document, 8_000, 1),
        ("huggingface", Framing::File, 16_000, 2),
    ];
    let runs = 200;
    println!("first vendor audio byte -> first speech chunk out of the adapter ({runs} runs each, 20 ms pieces at real-time pace)");
    println!("| vendor | framing | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|");
    for &(vendor, framing, rate, bytes_per_sample) in vendors {
        let pieces = if matches!(framing, Framing::Document | Framing::File) {
            50
        } else {
            25
        };
        shared.lock().unwrap().plan = Some(Plan {
            framing,
            rate,
            bytes_per_sample,
            pieces,
            pace: Duration::from_millis(20),
        });
        let engine = switchboard::vendors::tts_adapter(endpoint(vendor, &base)).unwrap();
        let mut latencies = Vec::with_capacity(runs);
        for _ in 0..runs {
            shared.lock().unwrap().first_byte = None;
            let mut stream = engine.synthesize(request(Some(8_000))).unwrap();
            let chunk = stream.recv().await.expect("a chunk").expect("audio");
            let out = Instant::now();
            assert!(!chunk.samples.is_empty());
            let first = shared.lock().unwrap().first_byte.expect("the first byte");
            latencies.push(out.duration_since(first).as_secs_f64() * 1000.0);
            drop(stream);
        }
        latencies.sort_by(f64::total_cmp);
        println!(
            "| {vendor} | {framing:?} | {:.3} | {:.3} | {:.3} |",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            latencies.last().unwrap()
        );
    }

    println!();
    println!(
        "ten minutes of audio streamed as fast as loopback carries it (24 kHz PCM16, 28.8 MB)"
    );
    println!("| vendor | framing | audio s | wall s | peak live heap above start |");
    println!("|---|---|---|---|---|");
    for (vendor, framing) in [
        ("lmnt", Framing::Raw),
        ("neuphonic", Framing::Sse),
        ("inworld", Framing::Lines),
    ] {
        shared.lock().unwrap().plan = Some(Plan {
            framing,
            rate: 24_000,
            bytes_per_sample: 2,
            pieces: 10 * 60 * 50,
            pace: Duration::ZERO,
        });
        let engine = switchboard::vendors::tts_adapter(endpoint(vendor, &base)).unwrap();
        let started = Instant::now();
        let baseline = CURRENT.load(Ordering::Relaxed);
        PEAK.store(baseline, Ordering::Relaxed);
        let mut stream = engine.synthesize(request(Some(24_000))).unwrap();
        let mut samples = 0usize;
        while let Some(chunk) = stream.recv().await {
            samples += chunk.expect("audio").samples.len();
        }
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(baseline);
        println!(
            "| {vendor} | {framing:?} | {:.0} | {:.2} | {:.1} KiB |",
            samples as f64 / 24_000.0,
            started.elapsed().as_secs_f64(),
            peak as f64 / 1024.0
        );
    }
}
