//! Per-agent fallback: an agent's `metadata.fallbacks` lists, per stage, the providers to try
//! when its own fails before producing anything (a vendor outage, a rejected key, a timeout).
//! Once audio or text has started flowing the choice is final: switching mid-answer would
//! be heard. Every switch is logged with the stage, both providers and the reason.

use std::sync::Arc;

use serde_json::Value;
use switchboard_actors::engine::{
    utterance_stream, ChatRequest, EngineError, EngineFuture, EngineStream, LanguageModel,
    LlmEvent, SpeechChunk, SpeechRequest, SpeechToText, SttEvent, SttInput, TextToSpeech,
    TranscribeOptions, Transcript, STT_SAMPLE_RATE,
};
use tokio::sync::mpsc;

use super::catalog::Kind;

/// The provider that ended up serving a request through a fallback chain (set when one
/// yields its first output), so the response can name it in `X-Provider-Used`.
pub type ServedBy = Arc<std::sync::Mutex<Option<String>>>;

fn mark(served_by: &ServedBy, provider: &str) {
    if let Ok(mut slot) = served_by.lock() {
        *slot = Some(provider.to_string());
    }
}

/// Most providers a fallback list may name.
pub const MAX_FALLBACKS: usize = 3;

/// The fallback ids for one stage in agent metadata, `{"fallbacks": {"tts": ["default"]}}`.
pub fn fallback_ids(metadata: &Value, kind: Kind) -> Vec<String> {
    metadata
        .pointer(&format!("/fallbacks/{}", kind.as_str()))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .take(MAX_FALLBACKS)
        .collect()
}

/// Checks `metadata.fallbacks`: an object of `tts`/`stt`/`llm` to lists of at most three
/// known provider ids of that kind.
pub fn check_fallbacks(metadata: &serde_json::Map<String, Value>) -> Result<(), String> {
    let Some(fallbacks) = metadata.get("fallbacks") else {
        return Ok(());
    };
    let Some(fallbacks) = fallbacks.as_object() else {
        return Err("metadata.fallbacks must be an object of tts, stt and llm lists".into());
    };
    for (stage, ids) in fallbacks {
        let kind = match stage.as_str() {
            "tts" => Kind::Tts,
            "stt" => Kind::Stt,
            "llm" => Kind::Llm,
            other => {
                return Err(format!(
                    "metadata.fallbacks.{other}: stages are tts, stt and llm"
                ))
            }
        };
        let Some(ids) = ids.as_array() else {
            return Err(format!(
                "metadata.fallbacks.{stage} must be a list of provider ids"
            ));
        };
        if ids.len() > MAX_FALLBACKS {
            return Err(format!(
                "metadata.fallbacks.{stage} may name at most {MAX_FALLBACKS} providers"
            ));
        }
        for id in ids {
            match id.as_str() {
                Some(id) if kind.known_ids().contains(&id) => {}
                _ => {
                    return Err(format!(
                        "metadata.fallbacks.{stage}: {id} is not one of: {}",
                        kind.known_ids().join(", ")
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Forwards a live recognition's events, marking `provider` as serving at each final
/// transcript. Dropping the returned stream drops the live one.
fn mark_on_final(
    mut events: EngineStream<SttEvent>,
    provider: String,
    served_by: ServedBy,
) -> EngineStream<SttEvent> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                event = events.recv() => {
                    let Some(event) = event else { return };
                    if matches!(event, Ok(SttEvent::Final(_))) {
                        mark(&served_by, &provider);
                    }
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

fn log_switch(stage: &str, from: &str, to: &str, reason: &EngineError) {
    tracing::warn!(stage, from, to, reason = %reason, "provider failed; falling back");
}

/// Speech synthesis over several engines, first that starts wins.
pub struct FallbackTts {
    pub engines: Vec<Arc<dyn TextToSpeech>>,
    pub served_by: ServedBy,
}

impl TextToSpeech for FallbackTts {
    fn provider(&self) -> &str {
        self.engines[0].provider()
    }

    fn synthesize(&self, request: SpeechRequest) -> Result<EngineStream<SpeechChunk>, EngineError> {
        let engines = self.engines.clone();
        let served_by = self.served_by.clone();
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            let watcher = tx.clone();
            tokio::select! {
                _ = watcher.closed() => {}
                _ = first_that_starts(engines, tx, "tts", served_by, move |e| e.synthesize(request.clone()), |e| e.provider().to_string()) => {}
            }
        });
        Ok(rx)
    }
}

/// A language model over several, first that starts answering wins.
pub struct FallbackLlm {
    pub engines: Vec<Arc<dyn LanguageModel>>,
    pub served_by: ServedBy,
}

impl LanguageModel for FallbackLlm {
    fn provider(&self) -> &str {
        self.engines[0].provider()
    }

    /// The first engine, which serves unless it fails, reads the prompt.
    fn warm(&self, request: ChatRequest) {
        self.engines[0].warm(request);
    }

    fn stream(&self, request: ChatRequest) -> Result<EngineStream<LlmEvent>, EngineError> {
        let engines = self.engines.clone();
        let served_by = self.served_by.clone();
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            let watcher = tx.clone();
            tokio::select! {
                _ = watcher.closed() => {}
                _ = first_that_starts(engines, tx, "llm", served_by, move |e| e.stream(request.clone()), |e| e.provider().to_string()) => {}
            }
        });
        Ok(rx)
    }
}

/// Runs `start` on each engine in turn until one yields a first item, then forwards the
/// rest of that one's stream. When all fail, the last error is passed on.
async fn first_that_starts<E: ?Sized, T>(
    engines: Vec<Arc<E>>,
    tx: mpsc::Sender<Result<T, EngineError>>,
    stage: &str,
    served_by: ServedBy,
    start: impl Fn(&E) -> Result<EngineStream<T>, EngineError>,
    name: impl Fn(&E) -> String,
) {
    let mut last_error = None;
    for (i, engine) in engines.iter().enumerate() {
        if let (Some(err), Some(previous)) = (&last_error, i.checked_sub(1)) {
            log_switch(stage, &name(&engines[previous]), &name(engine), err);
        }
        let mut stream = match start(engine) {
            Ok(stream) => stream,
            Err(err) => {
                last_error = Some(err);
                continue;
            }
        };
        match stream.recv().await {
            Some(Ok(first)) => {
                mark(&served_by, &name(engine));
                if tx.send(Ok(first)).await.is_err() {
                    return;
                }
                while let Some(item) = stream.recv().await {
                    if tx.send(item).await.is_err() {
                        return;
                    }
                }
                return;
            }
            Some(Err(err)) => last_error = Some(err),
            None => return,
        }
    }
    if let Some(err) = last_error {
        let _ = tx.send(Err(err)).await;
    }
}

/// Speech recognition over several: each utterance is transcribed by the first engine that
/// succeeds. A live-streaming primary (Deepgram) keeps its own stream; the others only stand
/// in when it cannot open one.
pub struct FallbackStt {
    pub engines: Vec<Arc<dyn SpeechToText>>,
    pub primary_streams_live: bool,
    pub served_by: ServedBy,
}

impl SpeechToText for FallbackStt {
    fn provider(&self) -> &str {
        self.engines[0].provider()
    }

    fn transcribe(
        &self,
        audio: Arc<[f32]>,
        options: TranscribeOptions,
    ) -> EngineFuture<Transcript> {
        let engines = self.engines.clone();
        let served_by = self.served_by.clone();
        Box::pin(async move {
            let mut last_error = None;
            for (i, engine) in engines.iter().enumerate() {
                if let (Some(err), Some(previous)) = (&last_error, i.checked_sub(1)) {
                    log_switch("stt", engines[previous].provider(), engine.provider(), err);
                }
                match engine.transcribe(audio.clone(), options.clone()).await {
                    Ok(transcript) => {
                        mark(&served_by, engine.provider());
                        return Ok(transcript);
                    }
                    Err(err) => last_error = Some(err),
                }
            }
            Err(last_error.unwrap_or_else(|| EngineError::internal("no recogniser")))
        })
    }

    /// As the first engine: a paused caller's turn goes to it first.
    fn starts_early(&self) -> bool {
        !self.primary_streams_live && self.engines[0].starts_early()
    }

    /// A live primary's own rate: the chain streams through it (and a stream it cannot open
    /// falls back to the batch path, which brings the audio up to 16 kHz).
    fn live_rate(&self, caller_rate: u32) -> u32 {
        if self.primary_streams_live {
            self.engines[0].live_rate(caller_rate)
        } else {
            STT_SAMPLE_RATE
        }
    }

    fn stream(
        self: Arc<Self>,
        options: TranscribeOptions,
    ) -> Result<(mpsc::Sender<SttInput>, EngineStream<SttEvent>), EngineError> {
        if self.primary_streams_live {
            match self.engines[0].clone().stream(options.clone()) {
                Ok((input, events)) => {
                    let provider = self.engines[0].provider().to_string();
                    return Ok((
                        input,
                        mark_on_final(events, provider, self.served_by.clone()),
                    ));
                }
                Err(err) => log_switch("stt", self.engines[0].provider(), "the next", &err),
            }
        }
        Ok(utterance_stream(self, options))
    }
}
