//! Which provider served each stage of a live session's turns. A session's engines report
//! the provider whose output was used (for an agent with fallbacks, the one that ended up
//! serving) into one slot per stage; the recorder takes the slot's value when it records a
//! turn, so each turn names what served it, and an empty slot means nothing did (the stage
//! failed, or did not run). Sessions are found by id in a process-wide table from the moment
//! their engines are built until they end.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use switchboard_actors::engine::{LanguageModel, SpeechToText, TextToSpeech};

use crate::http::providers::Chosen;
use crate::vendors::fallback::{FallbackLlm, FallbackStt, FallbackTts, ServedBy};

/// The serving slots of one session.
#[derive(Default)]
pub struct StageSlots {
    pub stt: ServedBy,
    pub llm: ServedBy,
    pub tts: ServedBy,
}

static LIVE: LazyLock<Mutex<HashMap<String, Arc<StageSlots>>>> = LazyLock::new(Default::default);

/// Makes `slots` the session's.
pub fn register(session_id: &str, slots: StageSlots) {
    if let Ok(mut live) = LIVE.lock() {
        live.insert(session_id.to_string(), Arc::new(slots));
    }
}

/// The session's slots, while it runs.
pub fn lookup(session_id: &str) -> Option<Arc<StageSlots>> {
    LIVE.lock().ok()?.get(session_id).cloned()
}

/// The session ended: its slots go.
pub fn forget(session_id: &str) {
    if let Ok(mut live) = LIVE.lock() {
        live.remove(session_id);
    }
}

/// The provider that served since the last take, emptying the slot.
pub fn take(slot: &ServedBy) -> Option<String> {
    slot.lock().ok()?.take()
}

/// The engine a session runs for a stage, marking its slot: a fallback chain already marks
/// the provider that served; a single engine is wrapped in a chain of one so it does too.
pub fn track_tts(chosen: Chosen<dyn TextToSpeech>) -> (Arc<dyn TextToSpeech>, ServedBy) {
    match chosen.served_by() {
        Some(slot) => (chosen.engine, slot),
        None => {
            let slot = ServedBy::default();
            let engine = Arc::new(FallbackTts {
                engines: vec![chosen.engine],
                served_by: slot.clone(),
            });
            (engine, slot)
        }
    }
}

/// [`track_tts`] for the language model.
pub fn track_llm(chosen: Chosen<dyn LanguageModel>) -> (Arc<dyn LanguageModel>, ServedBy) {
    match chosen.served_by() {
        Some(slot) => (chosen.engine, slot),
        None => {
            let slot = ServedBy::default();
            let engine = Arc::new(FallbackLlm {
                engines: vec![chosen.engine],
                served_by: slot.clone(),
            });
            (engine, slot)
        }
    }
}

/// [`track_tts`] for the recogniser; `streams_live` when the engine has its own live stream
/// (deepgram), which is then kept.
pub fn track_stt(
    chosen: Chosen<dyn SpeechToText>,
    streams_live: bool,
) -> (Arc<dyn SpeechToText>, ServedBy) {
    match chosen.served_by() {
        Some(slot) => (chosen.engine, slot),
        None => {
            let slot = ServedBy::default();
            let engine = Arc::new(FallbackStt {
                engines: vec![chosen.engine],
                primary_streams_live: streams_live,
                served_by: slot.clone(),
            });
            (engine, slot)
        }
    }
}
