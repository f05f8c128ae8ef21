//! The engine traits the session actors call: speech-to-text, language model, text-to-speech,
//! end-of-turn judgement, tool execution and the session observer.
//!
//! This crate only defines them. The server implements them with the embedded engines and the
//! vendor adapters; tests and benchmarks implement them with scripted engines. Every call is
//! asynchronous and cancellable: streams are `tokio::sync::mpsc` receivers, and dropping the
//! receiver tells the producer to stop (this is how barge-in cancels the LLM and TTS).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use dasp_sample::Sample as _;
use tokio::sync::mpsc;

use crate::audio::{FrameDuration, SampleRate, StreamResampler};

/// A boxed, sendable future: what every one-shot engine call returns.
pub type EngineFuture<T> = Pin<Box<dyn Future<Output = Result<T, EngineError>> + Send + 'static>>;

/// A stream of engine output. Dropping it cancels the work that produces it.
pub type EngineStream<T> = mpsc::Receiver<Result<T, EngineError>>;

/// Why an engine call failed. The kind decides the status a client sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    pub kind: EngineErrorKind,
    pub message: String,
    /// The request field an invalid input is about, when it is one field the engine can name
    /// (`text`: nothing in it can be spoken). `None` leaves it to the caller's context.
    pub param: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineErrorKind {
    /// The request cannot be served as asked (unknown voice, unsupported language, ...).
    InvalidInput,
    /// The engine is not loaded or not installed (a missing model, a missing library).
    Unavailable,
    /// The bounded worker queue is full; the caller may retry later.
    Overloaded,
    /// The engine took longer than its deadline.
    Timeout,
    /// A vendor answered with an error or broke the stream.
    Upstream,
    /// Anything else: a bug or a corrupt model.
    Internal,
}

impl EngineError {
    pub fn new(kind: EngineErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            param: None,
        }
    }

    /// Invalid input that concerns one named field of the request.
    pub fn invalid_field(param: &'static str, message: impl Into<String>) -> Self {
        Self {
            param: Some(param),
            ..Self::invalid(message)
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(EngineErrorKind::InvalidInput, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(EngineErrorKind::Unavailable, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(EngineErrorKind::Internal, message)
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}

// ---------------------------------------------------------------------------------------------
// Speech to text
// ---------------------------------------------------------------------------------------------

/// Mono audio as f32 samples in [-1, 1] at 16 kHz: what every recogniser is given.
pub const STT_SAMPLE_RATE: u32 = 16_000;

/// Speed against accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SttMode {
    /// Beam search on the larger model.
    #[default]
    Accurate,
    /// Greedy decoding on the smallest model that knows the language.
    Fast,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscribeOptions {
    /// ISO 639-1 code. `None` detects the language.
    pub language: Option<String>,
    pub mode: SttMode,
    /// Word-level timestamps as well as segments.
    pub word_timestamps: bool,
    /// Text that biases recognition (names, jargon), as OpenAI's `prompt`.
    pub prompt: Option<String>,
    /// Sampling temperature for decoding; 0 is deterministic.
    pub temperature: f32,
    /// The audio is one short caller turn, waited for in a live conversation: a recognizer
    /// may trade a little context for latency (the embedded Whisper encodes the turn and 10 s
    /// of padding instead of a full 30 s window).
    pub live_turn: bool,
    /// The language of the conversation so far (ISO 639-1), when `language` is not forced: a
    /// recognizer that detects the language keeps to this one unless the audio is clearly in
    /// another. Short turns are where detection goes wrong (a lone "not" heard as German), and a
    /// turn in the wrong language comes out as nonsense. Streams set it from earlier turns (see
    /// [`utterance_stream`]); the embedded Whisper honours it, vendors detect as they do.
    pub language_hint: Option<String>,
    /// Sample rate of a stream's [`SttInput::Audio`] when it is not [`STT_SAMPLE_RATE`]: what
    /// the recognizer's [`SpeechToText::live_rate`] asked for, for a caller whose audio
    /// arrives below 16 kHz (a phone line). `None` for 16 kHz, and for `transcribe`.
    pub input_rate: Option<u32>,
}

impl TranscribeOptions {
    /// Sample rate of a stream's [`SttInput::Audio`].
    pub fn input_rate(&self) -> u32 {
        self.input_rate.unwrap_or(STT_SAMPLE_RATE)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub text: String,
    pub segments: Vec<TranscriptSegment>,
    /// Filled when word timestamps were asked for.
    pub words: Vec<TranscriptWord>,
    /// The language spoken (detected or as forced), ISO 639-1.
    pub language: String,
    /// How sure the recognizer was of `language` when it detected it (0-1); `None` when the
    /// language was forced or the recognizer does not say.
    pub language_probability: Option<f32>,
    /// Seconds of audio transcribed.
    pub duration: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptSegment {
    pub start: f32,
    pub end: f32,
    pub text: String,
    /// Set by diarization.
    pub speaker: Option<String>,
    /// Set when this segment's language differs from the transcript's.
    pub language: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptWord {
    pub start: f32,
    pub end: f32,
    pub word: String,
}

/// Events of a streaming recognition.
#[derive(Debug, Clone, PartialEq)]
pub enum SttEvent {
    /// A hypothesis that may still change.
    Partial(String),
    /// The final text of one utterance.
    Final(Transcript),
}

/// Live input to a streaming recognition.
#[derive(Debug, Clone, PartialEq)]
pub enum SttInput {
    /// Mono 16-bit samples at the stream's [`TranscribeOptions::input_rate`] (16 kHz unless
    /// the recognizer asked for the caller's own), as the caller's audio was decoded: a live
    /// recognizer streams them as they are, bit for bit.
    Audio(Arc<[i16]>),
    /// The caller has been silent for a moment: the utterance may be over. A batch recognizer
    /// that [starts early](SpeechToText::starts_early) begins on the audio so far, so that the
    /// end of the turn only collects the result. Audio sent after it, until [`Resumed`]
    /// (`SttInput::Resumed`), is the pause's silence. Live recognizers ignore it.
    Paused,
    /// The caller spoke again after [`Paused`](SttInput::Paused): what was started early is
    /// not the utterance.
    Resumed,
    /// The caller stopped speaking (VAD endpoint): finish the utterance now.
    EndOfUtterance,
}

pub trait SpeechToText: Send + Sync + 'static {
    /// The provider id (`default`, `deepgram`, ...), reported as X-Provider-Used.
    fn provider(&self) -> &str;

    /// Transcribes a whole clip of 16 kHz mono audio.
    fn transcribe(&self, audio: Arc<[f32]>, options: TranscribeOptions)
        -> EngineFuture<Transcript>;

    /// The sample rate this recognizer wants a stream's audio at, for a caller whose audio
    /// arrives at `caller_rate`: 16 kHz by default, what [`transcribe`](Self::transcribe)
    /// reads. A live vendor that takes audio at any rate asks for the caller's own when it is
    /// lower (a phone line's 8 kHz), so nothing is upsampled for it and half the bytes go.
    fn live_rate(&self, caller_rate: u32) -> u32 {
        let _ = caller_rate;
        STT_SAMPLE_RATE
    }

    /// Whether [`utterance_stream`] should start on an utterance when the caller pauses
    /// ([`SttInput::Paused`]) rather than wait for its end. Worth it where a recognition costs
    /// only our own CPU (the embedded Whisper): a pause the caller goes on after throws one
    /// away. A vendor that bills per request keeps the default, false.
    fn starts_early(&self) -> bool {
        false
    }

    /// Starts a streaming recognition. The default buffers each utterance and transcribes it
    /// when the session signals its end, which is what batch recognisers do in a call.
    fn stream(
        self: Arc<Self>,
        options: TranscribeOptions,
    ) -> Result<(mpsc::Sender<SttInput>, EngineStream<SttEvent>), EngineError> {
        Ok(utterance_stream(self, options))
    }
}

/// A language detected at least this surely becomes the conversation's
/// ([`TranscribeOptions::language_hint`]) for the turns after it. Of 284 short turns (1-8
/// words, English and German, 16 kHz and phone band) whose language Whisper detected right,
/// 258 were detected this surely; of the 32 it detected wrong, 1.
pub const CONVERSATION_LANGUAGE_PROBABILITY: f32 = 0.6;

/// The conversation's language after `transcript`: the language it was detected in when the
/// recognizer was sure enough of it, else the one before.
fn conversation_language(hint: &mut Option<String>, transcript: &Transcript) {
    let sure = transcript
        .language_probability
        .is_some_and(|p| p >= CONVERSATION_LANGUAGE_PROBABILITY);
    if sure && !transcript.text.trim().is_empty() && !transcript.language.is_empty() {
        *hint = Some(transcript.language.clone());
    }
}

/// Streaming on top of one-shot recognition: buffers audio, transcribes on each end of
/// utterance. Stops when either side is dropped.
///
/// The utterance is buffered as the 16-bit samples it arrives in; the `f32` clip is built once,
/// at its final length, when the utterance ends. Nothing is allocated between utterances, so
/// an idle call holds no buffer.
///
/// When the engine [starts early](SpeechToText::starts_early), a [`SttInput::Paused`] starts
/// the recognition of the utterance so far beside the stream; the end of the utterance takes
/// its result if the caller did not speak again in between ([`SttInput::Resumed`] drops it),
/// and recognises the whole utterance as usual if it failed. The end of a turn then waits
/// only for what the recognition has left after the pause.
///
/// Unless `options` force a language, each utterance after the first is recognised with the
/// conversation's language as a hint: the last one detected with at least
/// [`CONVERSATION_LANGUAGE_PROBABILITY`].
pub fn utterance_stream<E: SpeechToText + ?Sized>(
    engine: Arc<E>,
    mut options: TranscribeOptions,
) -> (mpsc::Sender<SttInput>, EngineStream<SttEvent>) {
    let (input_tx, mut input_rx) = mpsc::channel::<SttInput>(256);
    let (event_tx, event_rx) = mpsc::channel(16);
    let starts_early = engine.starts_early();
    tokio::spawn(async move {
        let mut utterance: Vec<i16> = Vec::new();
        // The recognition started when the caller paused, while it can still be the turn's.
        let mut early: Option<EarlyRecognition> = None;
        while let Some(input) = input_rx.recv().await {
            match input {
                SttInput::Audio(samples) => utterance.extend_from_slice(&samples),
                SttInput::Paused => {
                    if starts_early && early.is_none() && !utterance.is_empty() {
                        early = utterance_clip(utterance.clone(), &options)
                            .ok()
                            .map(|clip| {
                                EarlyRecognition::start(engine.transcribe(clip, options.clone()))
                            });
                    }
                }
                SttInput::Resumed => early = None,
                SttInput::EndOfUtterance => {
                    let started = early.take();
                    if utterance.is_empty() {
                        continue;
                    }
                    let samples = std::mem::take(&mut utterance);
                    let early_result = match started {
                        Some(started) => started.result().await,
                        None => None,
                    };
                    let result = match early_result {
                        Some(transcript) => Ok(transcript),
                        None => match utterance_clip(samples, &options) {
                            Ok(clip) => engine.transcribe(clip, options.clone()).await,
                            Err(err) => Err(err),
                        },
                    };
                    if let (Ok(transcript), None) = (&result, &options.language) {
                        conversation_language(&mut options.language_hint, transcript);
                    }
                    let result = result.map(SttEvent::Final);
                    if event_tx.send(result).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    (input_tx, event_rx)
}

/// A recognition started on an utterance before its end, running beside the stream; dropping
/// it abandons the recognition (the embedded Whisper then skips a job still queued).
struct EarlyRecognition(tokio::task::JoinHandle<Result<Transcript, EngineError>>);

impl EarlyRecognition {
    fn start(recognition: EngineFuture<Transcript>) -> Self {
        Self(tokio::spawn(recognition))
    }

    /// The transcript, or `None` when the recognition failed (the whole utterance is then
    /// recognised again, as if nothing had started early).
    async fn result(mut self) -> Option<Transcript> {
        match (&mut self.0).await {
            Ok(Ok(transcript)) => Some(transcript),
            Ok(Err(_)) | Err(_) => None,
        }
    }
}

impl Drop for EarlyRecognition {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One buffered utterance as the `f32` clip at [`STT_SAMPLE_RATE`] that `transcribe` reads,
/// brought up from the stream's own rate when that is lower (a stream opened for a live
/// recognizer that could not start and left the call to the batch path).
fn utterance_clip(
    samples: Vec<i16>,
    options: &TranscribeOptions,
) -> Result<Arc<[f32]>, EngineError> {
    let rate = options.input_rate();
    if rate == STT_SAMPLE_RATE {
        return Ok(samples.into_iter().map(|s| s.to_sample::<f32>()).collect());
    }
    let unsupported = |e: crate::audio::AudioError| {
        EngineError::invalid(format!("stream audio at {rate} Hz: {e}"))
    };
    let from = SampleRate::from_hz(rate).ok_or_else(|| {
        EngineError::invalid(format!("stream audio at {rate} Hz is not supported"))
    })?;
    let mut resampler = StreamResampler::new(from, SampleRate::Hz16000, FrameDuration::Ms20)
        .map_err(unsupported)?;
    let mut frame = vec![0i16; resampler.input_frame_len()];
    let mut out = vec![0i16; resampler.output_frame_len()];
    let mut clip = Vec::with_capacity(samples.len() * STT_SAMPLE_RATE as usize / rate as usize);
    for chunk in samples.chunks(frame.len()) {
        // The last frame is padded with silence.
        frame[..chunk.len()].copy_from_slice(chunk);
        frame[chunk.len()..].fill(0);
        let n = resampler
            .process_i16(&frame, &mut out)
            .map_err(unsupported)?;
        clip.extend(out[..n].iter().map(|s| s.to_sample::<f32>()));
    }
    Ok(clip.into())
}

// ---------------------------------------------------------------------------------------------
// Language model
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// Tool calls the assistant asked for in this message.
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this message answers.
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool the model may call: a name, what it does, and a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema text of the arguments object.
    pub parameters: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// JSON text of the arguments.
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// Model name as the provider knows it; `None` is the provider's default.
    pub model: Option<String>,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub temperature: f32,
    pub max_tokens: u32,
    /// The conversation this request continues (a session's or a chat's id), for a model that
    /// keeps conversations' prompts: the embedded model keeps one entry of its prompt cache
    /// per conversation. `None` for a request that stands alone.
    pub conversation: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LlmEvent {
    /// A piece of the answer text.
    TextDelta(String),
    /// A complete tool call.
    ToolCall(ToolCall),
    /// The end of the answer, with token counts.
    Done {
        reason: FinishReason,
        prompt_tokens: u32,
        completion_tokens: u32,
    },
}

pub trait LanguageModel: Send + Sync + 'static {
    fn provider(&self) -> &str;

    /// Streams one assistant answer. Dropping the stream stops generation.
    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError>;

    /// Reads `request`'s messages into what the model keeps between requests (the embedded
    /// model's prompt cache) without answering, so that a request that starts with the same
    /// messages soon after answers sooner: a call's system prompt and greeting, read while
    /// the greeting plays. Nothing is charged and nothing is sent anywhere; the default (a
    /// vendor's model) does nothing.
    fn warm(&self, request: ChatRequest) {
        let _ = request;
    }
}

// ---------------------------------------------------------------------------------------------
// Text to speech
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub struct SpeechRequest {
    pub text: String,
    /// The provider's voice id; `default` is the provider's default voice.
    pub voice: String,
    /// 0.5-2.0; 1.0 is the voice's own pace.
    pub speed: f32,
    /// 0.5-2.0; 1.0 is the voice's own pitch.
    pub pitch: f32,
    /// ISO 639-1 code for voices that speak several languages.
    pub language: Option<String>,
    /// The rate the audio will be played at, when the caller knows it (8000 on a phone call).
    /// Vendors that can produce that rate directly do, so no resampling is needed; the
    /// embedded voices ignore it.
    pub output_rate: Option<u32>,
    /// The provider's model (an agent's `ttsModel`); `None` is the provider's default.
    pub model: Option<String>,
}

impl SpeechRequest {
    /// `text` in `voice` at the voice's own pace and pitch; language, output rate and model
    /// left to the provider.
    pub fn new(text: impl Into<String>, voice: impl Into<String>) -> Self {
        SpeechRequest {
            text: text.into(),
            voice: voice.into(),
            speed: 1.0,
            pitch: 1.0,
            language: None,
            output_rate: None,
            model: None,
        }
    }
}

/// A piece of synthesized speech: mono f32 samples in [-1, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechChunk {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
    /// The text this audio speaks (one sentence, usually).
    pub text: String,
}

pub trait TextToSpeech: Send + Sync + 'static {
    fn provider(&self) -> &str;

    /// Synthesizes sentence by sentence, each chunk sent as soon as it is ready. Dropping the
    /// stream stops delivery at once; an adapter may still read the rest of a sentence it
    /// already asked for, in the background, to keep its connection.
    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError>;
}

// ---------------------------------------------------------------------------------------------
// End of turn
// ---------------------------------------------------------------------------------------------

/// The caller's audio up to a pause, as a session hands it to a [`TurnEndModel`]: the turn's
/// chunks as they were captured for the recognizer (no copy is made on the audio path), mono
/// 16-bit PCM at `rate` Hz, oldest first.
#[derive(Debug, Clone)]
pub struct TurnAudio {
    pub chunks: Vec<Arc<[i16]>>,
    pub rate: u32,
    /// How long after the question an answer is still of use (the session's silence timer
    /// decides after that): a model that cannot start on it in time skips it.
    pub answer_within: std::time::Duration,
}

impl TurnAudio {
    /// How many samples the chunks hold.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    /// Whether there is no audio at all.
    pub fn is_empty(&self) -> bool {
        self.chunks.iter().all(|c| c.is_empty())
    }
}

/// Judges from how the caller sounds whether their turn is over: a pause at the end of a
/// finished sentence from one in the middle of it (semantic end of turn).
pub trait TurnEndModel: Send + Sync + 'static {
    /// The probability, within 0-1, that the caller has finished their turn, from the turn's
    /// audio up to now (its last seconds are what count).
    fn complete_probability(&self, audio: TurnAudio) -> EngineFuture<f32>;
}

// ---------------------------------------------------------------------------------------------
// Tools and observation
// ---------------------------------------------------------------------------------------------

pub trait ToolExecutor: Send + Sync + 'static {
    /// Runs one tool call and returns the text handed back to the model.
    fn execute(&self, call: ToolCall) -> EngineFuture<String>;

    /// Whether `call`, once it has run without error, ends the session, and how (a tool such
    /// as `end_conversation`): the reply goes on to its last words, and the session ends when
    /// they have played.
    fn ends_session(&self, call: &ToolCall) -> Option<SessionEnding> {
        let _ = call;
        None
    }
}

/// How a tool call that ran ends its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnding {
    /// The conversation is over (`end_conversation`, `end_call`).
    Conversation,
    /// The call is handed to a person (`transfer_call`).
    Transfer,
    /// The call leaves the session for other markup and comes back in a new session
    /// (`send_dtmf`: keys pressed on the line).
    Redirect,
}

/// Knowledge looked up before the model answers a caller, for models that cannot search on
/// their own (and to spare the others a tool round).
pub trait KnowledgeRetriever: Send + Sync + 'static {
    /// The system-prompt section with what the knowledge base holds about `query` (the
    /// caller's latest words, then their previous turn), or `None` when nothing matches.
    fn retrieve(&self, query: String) -> EngineFuture<Option<String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` heard in English in a clip of `samples` at 16 kHz.
    fn english(text: String, samples: usize) -> Transcript {
        Transcript {
            text,
            segments: Vec::new(),
            words: Vec::new(),
            language: "en".into(),
            language_probability: None,
            duration: samples as f32 / STT_SAMPLE_RATE as f32,
        }
    }

    /// Reports the samples of each clip it is given as the transcript's text.
    struct Echo;

    impl SpeechToText for Echo {
        fn provider(&self) -> &str {
            "echo"
        }

        fn transcribe(&self, audio: Arc<[f32]>, _: TranscribeOptions) -> EngineFuture<Transcript> {
            let text = audio
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ");
            Box::pin(async move { Ok(english(text, audio.len())) })
        }
    }

    /// Hears each utterance in the next of its scripted languages (code, probability, text)
    /// and keeps the hint it was given for each.
    struct Scripted {
        heard: std::sync::Mutex<Vec<(&'static str, Option<f32>, &'static str)>>,
        hints: std::sync::Mutex<Vec<Option<String>>>,
    }

    impl SpeechToText for Scripted {
        fn provider(&self) -> &str {
            "scripted"
        }

        fn transcribe(
            &self,
            _: Arc<[f32]>,
            options: TranscribeOptions,
        ) -> EngineFuture<Transcript> {
            self.hints.lock().unwrap().push(options.language_hint);
            let (language, probability, text) = self.heard.lock().unwrap().remove(0);
            Box::pin(async move {
                Ok(Transcript {
                    text: text.into(),
                    segments: Vec::new(),
                    words: Vec::new(),
                    language: options.language.unwrap_or_else(|| language.into()),
                    language_probability: probability,
                    duration: 1.0,
                })
            })
        }
    }

    /// The hints a stream with `options` gives its recognizer for utterances heard as `heard`.
    async fn hints_for(
        options: TranscribeOptions,
        heard: Vec<(&'static str, Option<f32>, &'static str)>,
    ) -> Vec<Option<String>> {
        let turns = heard.len();
        let engine = Arc::new(Scripted {
            heard: std::sync::Mutex::new(heard),
            hints: std::sync::Mutex::new(Vec::new()),
        });
        let (input, mut events) = utterance_stream(engine.clone(), options);
        for _ in 0..turns {
            input
                .send(SttInput::Audio(Arc::from(&[1i16][..])))
                .await
                .unwrap();
            input.send(SttInput::EndOfUtterance).await.unwrap();
            text(events.recv().await);
        }
        let hints = engine.hints.lock().unwrap().clone();
        hints
    }

    #[tokio::test]
    async fn later_turns_are_heard_with_the_language_last_detected_surely() {
        let hints = hints_for(
            TranscribeOptions::default(),
            vec![
                ("de", Some(0.4), "Ja."),           // unsure: not the conversation's yet
                ("de", Some(0.9), "Guten Tag."),    // sure: German from here on
                ("th", Some(0.5), "ไม่"),            // unsure: German holds
                ("de", Some(0.95), ""),             // nothing said: German holds
                ("en", Some(0.97), "Hello there."), // sure: English from here on
                ("en", None, "Yes."),               // no probability: English holds
                ("en", Some(0.99), "Fine."),
            ],
        )
        .await;
        let de = Some("de".to_string());
        let en = Some("en".to_string());
        assert_eq!(
            hints,
            [None, None, de.clone(), de.clone(), de, en.clone(), en]
        );
    }

    #[tokio::test]
    async fn a_forced_language_is_never_second_guessed() {
        let forced = TranscribeOptions {
            language: Some("fr".into()),
            ..TranscribeOptions::default()
        };
        let hints = hints_for(forced, vec![("de", Some(0.99), "Guten Tag."); 3]).await;
        assert_eq!(hints, [None, None, None]);
    }

    fn text(event: Option<Result<SttEvent, EngineError>>) -> String {
        match event {
            Some(Ok(SttEvent::Final(t))) => t.text,
            other => panic!("expected a final transcript, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn each_utterance_is_transcribed_whole_with_the_samples_it_was_sent() {
        let (input, mut events) = utterance_stream(Arc::new(Echo), TranscribeOptions::default());
        // Full scale both ways, zero and the smallest steps, scaled by 1/32768.
        let samples = |v: &[i16]| -> Arc<[i16]> { Arc::from(v) };
        input
            .send(SttInput::Audio(samples(&[-32768, 1])))
            .await
            .unwrap();
        input
            .send(SttInput::Audio(samples(&[0, -1, 32767])))
            .await
            .unwrap();
        input.send(SttInput::EndOfUtterance).await.unwrap();
        let expected = [-32768i16, 1, 0, -1, 32767]
            .iter()
            .map(|&s| (f32::from(s) / 32_768.0).to_string())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(text(events.recv().await), expected);

        // An end with nothing said is skipped; the next utterance starts empty.
        input.send(SttInput::EndOfUtterance).await.unwrap();
        input
            .send(SttInput::Audio(samples(&[16384])))
            .await
            .unwrap();
        input.send(SttInput::EndOfUtterance).await.unwrap();
        assert_eq!(text(events.recv().await), "0.5");

        drop(input);
        assert!(
            events.recv().await.is_none(),
            "the stream ends with its input"
        );
    }

    #[tokio::test]
    async fn an_utterance_streamed_at_8_khz_is_transcribed_at_16_khz() {
        // A 400 Hz tone on a phone line, 70 ms of it: three whole frames and a half.
        let tone: Vec<i16> = (0..560)
            .map(|i| (8_000.0 * (i as f32 * 400.0 * std::f32::consts::TAU / 8_000.0).sin()) as i16)
            .collect();
        let options = TranscribeOptions {
            input_rate: Some(8_000),
            ..TranscribeOptions::default()
        };
        let (input, mut events) = utterance_stream(Arc::new(Echo), options);
        input
            .send(SttInput::Audio(tone.clone().into()))
            .await
            .unwrap();
        input.send(SttInput::EndOfUtterance).await.unwrap();
        let clip: Vec<f32> = text(events.recv().await)
            .split(' ')
            .map(|s| s.parse().unwrap())
            .collect();
        // Four frames (the last padded with silence), each 320 samples at 16 kHz.
        assert_eq!(clip.len(), 4 * 320);
        // The same frames through the session's own resampler.
        let mut resampler =
            StreamResampler::new(SampleRate::Hz8000, SampleRate::Hz16000, FrameDuration::Ms20)
                .unwrap();
        let mut padded = tone.clone();
        padded.resize(640, 0);
        let mut expected = Vec::new();
        let mut out = [0i16; 320];
        for frame in padded.chunks(160) {
            resampler.process_i16(frame, &mut out).unwrap();
            expected.extend(out.iter().map(|&s| f32::from(s) / 32_768.0));
        }
        assert_eq!(clip, expected);
        // A rate the audio path has no resampler for is an error, not a wrong-speed clip.
        let options = TranscribeOptions {
            input_rate: Some(11_025),
            ..TranscribeOptions::default()
        };
        let (input, mut events) = utterance_stream(Arc::new(Echo), options);
        input.send(SttInput::Audio(tone.into())).await.unwrap();
        input.send(SttInput::EndOfUtterance).await.unwrap();
        let error = events.recv().await.unwrap().unwrap_err();
        assert_eq!(error.kind, EngineErrorKind::InvalidInput, "{error:?}");
    }

    /// Answers each clip with its length in samples; starts early when `early`, fails its
    /// first recognition when `fail_first`, and keeps the length of every clip it was given.
    struct Counting {
        early: bool,
        fail_first: std::sync::atomic::AtomicBool,
        clips: std::sync::Mutex<Vec<usize>>,
    }

    impl Counting {
        fn new(early: bool, fail_first: bool) -> Arc<Self> {
            Arc::new(Self {
                early,
                fail_first: std::sync::atomic::AtomicBool::new(fail_first),
                clips: std::sync::Mutex::new(Vec::new()),
            })
        }

        fn clips(&self) -> Vec<usize> {
            self.clips.lock().unwrap().clone()
        }
    }

    impl SpeechToText for Counting {
        fn provider(&self) -> &str {
            "counting"
        }

        fn starts_early(&self) -> bool {
            self.early
        }

        fn transcribe(&self, audio: Arc<[f32]>, _: TranscribeOptions) -> EngineFuture<Transcript> {
            self.clips.lock().unwrap().push(audio.len());
            let fail = self
                .fail_first
                .swap(false, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move {
                if fail {
                    return Err(EngineError::unavailable("busy"));
                }
                Ok(english(audio.len().to_string(), audio.len()))
            })
        }
    }

    async fn send_all(input: &mpsc::Sender<SttInput>, inputs: Vec<SttInput>) {
        for item in inputs {
            input.send(item).await.unwrap();
        }
    }

    fn audio(samples: usize) -> SttInput {
        SttInput::Audio(vec![100i16; samples].into())
    }

    /// Three samples of speech, the pause, two of the pause's silence, the end.
    fn paused_turn() -> Vec<SttInput> {
        vec![
            audio(3),
            SttInput::Paused,
            audio(2),
            SttInput::EndOfUtterance,
        ]
    }

    /// One utterance sent as `inputs` through a stream on `engine`: its transcript, and the
    /// length of every clip the engine was given.
    async fn heard(engine: Arc<Counting>, inputs: Vec<SttInput>) -> (String, Vec<usize>) {
        let (input, mut events) = utterance_stream(engine.clone(), TranscribeOptions::default());
        send_all(&input, inputs).await;
        (text(events.recv().await), engine.clips())
    }

    #[tokio::test]
    async fn a_pause_starts_the_recognition_and_the_end_of_the_turn_takes_its_result() {
        let engine = Counting::new(true, false);
        let (input, mut events) = utterance_stream(engine.clone(), TranscribeOptions::default());
        send_all(&input, paused_turn()).await;
        assert_eq!(text(events.recv().await), "3");
        assert_eq!(engine.clips(), [3], "recognised once, from the pause");
        // The next utterance starts afresh; a pause before any audio starts nothing.
        send_all(
            &input,
            vec![SttInput::Paused, audio(4), SttInput::EndOfUtterance],
        )
        .await;
        assert_eq!(text(events.recv().await), "4");
        assert_eq!(engine.clips(), [3, 4]);
    }

    #[tokio::test]
    async fn speech_after_the_pause_is_recognised_with_the_whole_utterance() {
        let inputs = vec![
            audio(3),
            SttInput::Paused,
            SttInput::Resumed,
            audio(2),
            SttInput::Paused,
            audio(1),
            SttInput::EndOfUtterance,
        ];
        let (text, clips) = heard(Counting::new(true, false), inputs).await;
        assert_eq!(text, "5");
        assert_eq!(
            clips,
            [3, 5],
            "the first early start is dropped, the second is the turn's"
        );
    }

    #[tokio::test]
    async fn a_failed_early_recognition_is_done_again_on_the_whole_utterance() {
        let (text, clips) = heard(Counting::new(true, true), paused_turn()).await;
        assert_eq!(text, "5");
        assert_eq!(clips, [3, 5]);
    }

    #[tokio::test]
    async fn a_recognizer_that_does_not_start_early_waits_for_the_end_of_the_turn() {
        let (text, clips) = heard(Counting::new(false, false), paused_turn()).await;
        assert_eq!(text, "5");
        assert_eq!(clips, [5]);
    }
}
