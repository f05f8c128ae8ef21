//! Scripted engines: deterministic stand-ins for the real ones, with configurable delays, that
//! notice when the session drops their streams (cancellation) and count it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_actors::engine::{
    ChatRequest, EngineError, EngineErrorKind, EngineFuture, EngineStream, FinishReason,
    KnowledgeRetriever, LanguageModel, LlmEvent, SpeechChunk, SpeechRequest, SpeechToText,
    TextToSpeech, ToolCall, ToolExecutor, TranscribeOptions, Transcript, TurnAudio, TurnEndModel,
};
use tokio::sync::mpsc;

/// Waits `d`; returns at once for zero, where a timer would still cost a tick of tokio's
/// millisecond wheel.
async fn pause(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

/// One scripted model answer.
#[derive(Debug, Clone)]
pub enum LlmTurn {
    /// Stream this text word by word.
    Say(String),
    /// Ask for a tool call (after optional text).
    CallTool { say: String, call: ToolCall },
    /// Fail the request.
    Fail,
}

/// Speech to text: the next scripted transcript per utterance, after a delay.
pub struct ScriptedStt {
    pub script: Mutex<VecDeque<String>>,
    pub delay: Duration,
    /// Delays of the first utterances, one each, before `delay` applies.
    pub delays: Mutex<VecDeque<Duration>>,
    /// How many of the next utterances fail to be recognised.
    pub failing: AtomicUsize,
    pub utterances: AtomicUsize,
    pub samples: AtomicUsize,
    /// The length in samples of every clip it was given, in order.
    pub clips: Mutex<Vec<usize>>,
    /// Whether it asks to start on a caller's pause ([`SpeechToText::starts_early`]).
    pub starts_early: bool,
}

impl SpeechToText for ScriptedStt {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn starts_early(&self) -> bool {
        self.starts_early
    }

    fn transcribe(&self, audio: Arc<[f32]>, _: TranscribeOptions) -> EngineFuture<Transcript> {
        self.utterances.fetch_add(1, Ordering::SeqCst);
        self.samples.fetch_add(audio.len(), Ordering::SeqCst);
        self.clips.lock().expect("not poisoned").push(audio.len());
        let fail = self
            .failing
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Box::pin(async {
                Err(EngineError::new(
                    EngineErrorKind::Upstream,
                    "the recognizer failed",
                ))
            });
        }
        let text = self
            .script
            .lock()
            .expect("not poisoned")
            .pop_front()
            .unwrap_or_default();
        let delay = self
            .delays
            .lock()
            .expect("not poisoned")
            .pop_front()
            .unwrap_or(self.delay);
        let duration = audio.len() as f32 / 16_000.0;
        Box::pin(async move {
            pause(delay).await;
            Ok(Transcript {
                text,
                segments: Vec::new(),
                words: Vec::new(),
                language: "en".into(),
                language_probability: None,
                duration,
            })
        })
    }
}

/// Language model: streams scripted answers word by word.
pub struct ScriptedLlm {
    pub script: Mutex<VecDeque<LlmTurn>>,
    pub token_delay: Duration,
    pub first_token_delay: Duration,
    pub requests: Mutex<Vec<ChatRequest>>,
    /// The requests it was asked to read ahead ([`LanguageModel::warm`]).
    pub warmed: Mutex<Vec<ChatRequest>>,
    pub cancelled: Arc<AtomicUsize>,
    pub active: Arc<AtomicUsize>,
}

impl LanguageModel for ScriptedLlm {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn warm(&self, request: ChatRequest) {
        self.warmed.lock().expect("not poisoned").push(request);
    }

    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError> {
        self.requests.lock().expect("not poisoned").push(request);
        let turn = self
            .script
            .lock()
            .expect("not poisoned")
            .pop_front()
            .unwrap_or(LlmTurn::Say("Okay.".into()));
        let (tx, rx) = mpsc::channel(4);
        let (token_delay, first) = (self.token_delay, self.first_token_delay);
        let cancelled = self.cancelled.clone();
        let active = self.active.clone();
        active.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let run = async {
                pause(first).await;
                let (say, call) = match turn {
                    LlmTurn::Say(s) => (s, None),
                    LlmTurn::CallTool { say, call } => (say, Some(call)),
                    LlmTurn::Fail => {
                        let _ = tx
                            .send(Err(EngineError::internal("scripted model failure")))
                            .await;
                        return Ok(());
                    }
                };
                let words: Vec<&str> = say.split_inclusive(' ').collect();
                for w in words {
                    tx.send(Ok(LlmEvent::TextDelta(w.to_owned())))
                        .await
                        .map_err(|_| ())?;
                    pause(token_delay).await;
                }
                let reason = if let Some(call) = call {
                    tx.send(Ok(LlmEvent::ToolCall(call)))
                        .await
                        .map_err(|_| ())?;
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                tx.send(Ok(LlmEvent::Done {
                    reason,
                    prompt_tokens: 10,
                    completion_tokens: 10,
                }))
                .await
                .map_err(|_| ())
            };
            if run.await.is_err() {
                cancelled.fetch_add(1, Ordering::SeqCst);
            }
            active.fetch_sub(1, Ordering::SeqCst);
        });
        Ok(rx)
    }
}

/// Speech synthesis: a tone as long as the text (or given speech), in 100 ms chunks.
pub struct ScriptedTts {
    pub ms_per_char: u32,
    pub sample_rate: u32,
    pub first_chunk_delay: Duration,
    pub chunk_delay: Duration,
    /// Instead of a tone, loop this audio (at `sample_rate`).
    pub voice: Option<Arc<[f32]>>,
    /// Sentences containing this text fail.
    pub fail_on: Option<String>,
    pub requests: Mutex<Vec<String>>,
    pub cancelled: Arc<AtomicUsize>,
    pub active: Arc<AtomicUsize>,
}

impl TextToSpeech for ScriptedTts {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        self.requests
            .lock()
            .expect("not poisoned")
            .push(request.text.clone());
        let (tx, rx) = mpsc::channel(4);
        let fail = self
            .fail_on
            .as_ref()
            .is_some_and(|f| request.text.contains(f.as_str()));
        let rate = self.sample_rate;
        let total = (request.text.chars().count() as u32 * self.ms_per_char * rate / 1000) as usize;
        let voice = self.voice.clone();
        let (first, between) = (self.first_chunk_delay, self.chunk_delay);
        let cancelled = self.cancelled.clone();
        let active = self.active.clone();
        active.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let run = async {
                pause(first).await;
                if fail {
                    let _ = tx
                        .send(Err(EngineError::internal("scripted synthesis failure")))
                        .await;
                    return Ok(());
                }
                let chunk = rate as usize / 10;
                let mut n = 0;
                while n < total {
                    let len = chunk.min(total - n);
                    let samples: Vec<f32> = (n..n + len)
                        .map(|i| match voice.as_ref() {
                            Some(v) => v[i % v.len()],
                            None => {
                                0.25 * (2.0 * std::f32::consts::PI * 300.0 * i as f32 / rate as f32)
                                    .sin()
                            }
                        })
                        .collect();
                    n += len;
                    tx.send(Ok(SpeechChunk {
                        samples,
                        sample_rate: rate,
                        text: request.text.clone(),
                    }))
                    .await
                    .map_err(|_| ())?;
                    pause(between).await;
                }
                Ok::<(), ()>(())
            };
            if run.await.is_err() {
                cancelled.fetch_add(1, Ordering::SeqCst);
            }
            active.fetch_sub(1, Ordering::SeqCst);
        });
        Ok(rx)
    }
}

/// Tools: answers every call with a fixed text after a delay.
pub struct ScriptedTools {
    pub answer: String,
    pub delay: Duration,
    pub calls: Mutex<Vec<ToolCall>>,
}

impl ToolExecutor for ScriptedTools {
    fn execute(&self, call: ToolCall) -> EngineFuture<String> {
        self.calls.lock().expect("not poisoned").push(call);
        let (answer, delay) = (self.answer.clone(), self.delay);
        Box::pin(async move {
            pause(delay).await;
            Ok(answer)
        })
    }
}

/// Knowledge: answers every lookup with a fixed section after a delay, recording the queries.
pub struct ScriptedKnowledge {
    pub section: Option<String>,
    pub delay: Duration,
    pub queries: Mutex<Vec<String>>,
}

impl ScriptedKnowledge {
    pub fn new(section: Option<&str>, delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            section: section.map(str::to_string),
            delay,
            queries: Mutex::new(Vec::new()),
        })
    }
}

impl KnowledgeRetriever for ScriptedKnowledge {
    fn retrieve(&self, query: String) -> EngineFuture<Option<String>> {
        self.queries.lock().expect("not poisoned").push(query);
        let (section, delay) = (self.section.clone(), self.delay);
        Box::pin(async move {
            pause(delay).await;
            Ok(section)
        })
    }
}

/// An end-of-turn model answering what `judge` says of the audio it is asked about, after
/// `delay`; it records how much audio it heard each time.
pub struct ScriptedTurnEnd {
    pub judge: Box<dyn Fn(&TurnAudio) -> f32 + Send + Sync>,
    pub delay: Duration,
    pub heard: Mutex<Vec<usize>>,
}

impl ScriptedTurnEnd {
    pub fn new(
        judge: impl Fn(&TurnAudio) -> f32 + Send + Sync + 'static,
        delay: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            judge: Box::new(judge),
            delay,
            heard: Mutex::new(Vec::new()),
        })
    }
}

impl TurnEndModel for ScriptedTurnEnd {
    fn complete_probability(&self, audio: TurnAudio) -> EngineFuture<f32> {
        self.heard.lock().unwrap().push(audio.len());
        let (p, delay) = ((self.judge)(&audio), self.delay);
        Box::pin(async move {
            pause(delay).await;
            Ok(p)
        })
    }
}

/// The scripted engines of one session (no knowledge or end-of-turn model unless a test gives
/// them).
#[derive(Clone)]
pub struct Scripted {
    pub stt: Arc<ScriptedStt>,
    pub llm: Arc<ScriptedLlm>,
    pub tts: Arc<ScriptedTts>,
    pub tools: Arc<ScriptedTools>,
    pub knowledge: Option<Arc<ScriptedKnowledge>>,
    pub turn_end: Option<Arc<dyn TurnEndModel>>,
}

impl Scripted {
    /// Engines answering `transcripts` and `answers` in order, with small realistic delays.
    pub fn new(transcripts: &[&str], answers: Vec<LlmTurn>) -> Self {
        Self {
            stt: Arc::new(ScriptedStt {
                script: Mutex::new(transcripts.iter().map(|s| s.to_string()).collect()),
                delay: Duration::from_millis(80),
                delays: Mutex::default(),
                failing: AtomicUsize::new(0),
                utterances: AtomicUsize::new(0),
                samples: AtomicUsize::new(0),
                clips: Mutex::default(),
                starts_early: false,
            }),
            llm: Arc::new(ScriptedLlm {
                script: Mutex::new(answers.into()),
                token_delay: Duration::from_millis(10),
                first_token_delay: Duration::from_millis(60),
                requests: Mutex::new(Vec::new()),
                warmed: Mutex::new(Vec::new()),
                cancelled: Arc::new(AtomicUsize::new(0)),
                active: Arc::new(AtomicUsize::new(0)),
            }),
            tts: Arc::new(ScriptedTts {
                ms_per_char: 50,
                sample_rate: 22_050,
                first_chunk_delay: Duration::from_millis(40),
                chunk_delay: Duration::from_millis(5),
                voice: None,
                fail_on: None,
                requests: Mutex::new(Vec::new()),
                cancelled: Arc::new(AtomicUsize::new(0)),
                active: Arc::new(AtomicUsize::new(0)),
            }),
            tools: Arc::new(ScriptedTools {
                answer: "{\"temperature_c\": 21, \"sky\": \"sunny\"}".into(),
                delay: Duration::from_millis(30),
                calls: Mutex::new(Vec::new()),
            }),
            knowledge: None,
            turn_end: None,
        }
    }

    /// The same engines with every delay zero (for measuring the platform's own overhead).
    pub fn instant(transcripts: &[&str], answers: Vec<LlmTurn>) -> Self {
        let mut s = Self::new(transcripts, answers);
        let stt = Arc::get_mut(&mut s.stt).expect("fresh");
        stt.delay = Duration::ZERO;
        let llm = Arc::get_mut(&mut s.llm).expect("fresh");
        llm.token_delay = Duration::ZERO;
        llm.first_token_delay = Duration::ZERO;
        let tts = Arc::get_mut(&mut s.tts).expect("fresh");
        tts.first_chunk_delay = Duration::ZERO;
        tts.chunk_delay = Duration::ZERO;
        s
    }

    /// Streams still running in the model and the voice.
    pub fn active_streams(&self) -> usize {
        self.llm.active.load(Ordering::SeqCst) + self.tts.active.load(Ordering::SeqCst)
    }

    pub fn cancelled(&self) -> (usize, usize) {
        (
            self.llm.cancelled.load(Ordering::SeqCst),
            self.tts.cancelled.load(Ordering::SeqCst),
        )
    }
}
