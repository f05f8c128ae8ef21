//! Vendors of fixed latency for session benchmarks: an OpenAI-protocol recogniser and language
//! model and a Deepgram-protocol voice (8 kHz mu-law, as phone calls ask for, or 16-bit PCM at
//! the rate a direct socket asks for), each answering after a set delay with a fixed result.
//! They keep no record of requests, so they stay lean under thousands of calls; one actix
//! worker serves them all.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use bytes::Bytes;
use futures_util::stream;
use futures_util::StreamExt as _;
use serde_json::json;

/// What the stand-in says, and how long it takes.
#[derive(Clone)]
pub struct Behaviour {
    /// Delay before the first byte of every answer.
    pub latency: Duration,
    /// The caller's words as "recognised".
    pub transcript: String,
    /// The model's answer.
    pub answer: String,
    /// Length of the synthesized audio per request.
    pub speech: Duration,
}

/// The answers, built once: thousands of calls ask for the same ones.
struct Prepared {
    latency: Duration,
    transcript: String,
    /// The model's answer as server-sent events, a word a chunk, `[DONE]` last.
    answer_events: Vec<Bytes>,
    /// The voice's audio, µ-law 8 kHz, in 100 ms pieces.
    speech_pieces: Vec<Bytes>,
    /// The same as 16-bit PCM at 16, 24 and 48 kHz, in 100 ms pieces.
    linear_pieces: Vec<(u32, Vec<Bytes>)>,
}

/// `audio` cut into pieces of `piece` bytes.
fn pieces(audio: Bytes, piece: usize) -> Vec<Bytes> {
    (0..audio.len())
        .step_by(piece)
        .map(|at| audio.slice(at..(at + piece).min(audio.len())))
        .collect()
}

impl From<Behaviour> for Prepared {
    fn from(behaviour: Behaviour) -> Prepared {
        let mut answer_events: Vec<Bytes> = behaviour
            .answer
            .split_inclusive(' ')
            .map(|word| {
                let chunk = json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
                    "created": 0, "model": "bench",
                    "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": null}]});
                Bytes::from(format!("data: {chunk}\n\n"))
            })
            .collect();
        let done = json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
            "model": "bench", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        answer_events.push(Bytes::from(format!("data: {done}\n\n")));
        answer_events.push(Bytes::from_static(b"data: [DONE]\n\n"));
        // A 300 Hz tone at a speaking level.
        let tone = |rate: u32| -> Vec<i16> {
            let samples = behaviour.speech.as_millis() as usize * rate as usize / 1_000;
            (0..samples)
                .map(|i| {
                    let s = (i as f32 * 300.0 * std::f32::consts::TAU / rate as f32).sin();
                    (s * 6_000.0) as i16
                })
                .collect()
        };
        let mulaw: Vec<u8> = tone(8_000)
            .into_iter()
            .map(switchboard_actors::audio::mulaw::encode)
            .collect();
        let linear_pieces = [16_000, 24_000, 48_000]
            .into_iter()
            .map(|rate| {
                let pcm: Vec<u8> = tone(rate).iter().flat_map(|s| s.to_le_bytes()).collect();
                (rate, pieces(Bytes::from(pcm), rate as usize / 5))
            })
            .collect();
        Prepared {
            latency: behaviour.latency,
            transcript: behaviour.transcript,
            answer_events,
            speech_pieces: pieces(Bytes::from(mulaw), 800),
            linear_pieces,
        }
    }
}

/// Largest request body read: an utterance's WAV is 32 KB a second.
const MAX_UPLOAD: usize = 16 * 1024 * 1024;

/// A running stand-in; stops with the process.
pub struct FixedVendors {
    pub base_url: String,
}

impl FixedVendors {
    /// Starts on an ephemeral loopback port, on a thread of its own.
    pub fn start(behaviour: Behaviour) -> FixedVendors {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the stand-in");
        let port = listener.local_addr().expect("an address").port();
        let behaviour = Arc::new(Prepared::from(behaviour));
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::new(behaviour.clone()))
                        .app_data(web::PayloadConfig::new(MAX_UPLOAD))
                        .default_service(web::to(handle))
                })
                .workers(1)
                .max_connections(100_000)
                .listen(listener)
                .expect("listen")
                .run()
                .await
                .expect("the stand-in runs")
            })
        });
        FixedVendors {
            base_url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Environment that points the server's `openai` and `deepgram` vendors here.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "SWITCHBOARD__VENDORS__OPENAI__BASE_URL".into(),
                format!("{}/v1", self.base_url),
            ),
            (
                "SWITCHBOARD__VENDORS__OPENAI__API_KEY".into(),
                "bench-openai".into(),
            ),
            (
                "SWITCHBOARD__VENDORS__DEEPGRAM__BASE_URL".into(),
                self.base_url.clone(),
            ),
            (
                "SWITCHBOARD__VENDORS__DEEPGRAM__API_KEY".into(),
                "bench-deepgram".into(),
            ),
        ]
    }
}

/// Reads the whole request, as a vendor does before it answers: a body left unread makes
/// actix close the connection after the answer, which would cost the server a new connection
/// for every upload (the recordings sent for transcription) that no real vendor makes it pay.
async fn handle(
    req: HttpRequest,
    _body: web::Bytes,
    behaviour: web::Data<Arc<Prepared>>,
) -> HttpResponse {
    tokio::time::sleep(behaviour.latency).await;
    match req.path() {
        "/v1/audio/transcriptions" => HttpResponse::Ok().json(json!({
            "task": "transcribe", "language": "english", "duration": 2.0,
            "text": behaviour.transcript,
            "segments": [{"id": 0, "seek": 0, "start": 0.0, "end": 2.0, "text": behaviour.transcript,
                          "tokens": [1], "temperature": 0.0, "avg_logprob": -0.2,
                          "compression_ratio": 1.0, "no_speech_prob": 0.01}]
        })),
        "/v1/chat/completions" => HttpResponse::Ok()
            .content_type("text/event-stream")
            .streaming(stream::iter(behaviour.answer_events.clone()).map(Ok::<_, std::io::Error>)),
        "/v1/speak" => {
            // The encoding and rate the server asked for, as Deepgram honours them.
            let query = req.query_string();
            let rate = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("sample_rate="))
                .and_then(|rate| rate.parse::<u32>().ok());
            let linear = query.split('&').any(|pair| pair == "encoding=linear16");
            let pieces = match rate.filter(|_| linear) {
                Some(rate) => match behaviour.linear_pieces.iter().find(|(r, _)| *r == rate) {
                    Some((_, pieces)) => pieces.clone(),
                    None => {
                        return HttpResponse::BadRequest()
                            .json(json!({"err_msg": format!("no stand-in audio at {rate} Hz")}))
                    }
                },
                None => behaviour.speech_pieces.clone(),
            };
            HttpResponse::Ok()
                .content_type(if linear { "audio/l16" } else { "audio/basic" })
                .streaming(stream::iter(pieces).map(Ok::<_, std::io::Error>))
        }
        path => HttpResponse::NotFound().json(json!({"error": {"message": format!("no route {path}")}})),
    }
}
