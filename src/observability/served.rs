//! Which provider served each stage of a live session's turns. A session's engines report
//! the provider whose output was used (for an agent with fallbacks, the one that ended up
//! serving) into one slot per stage; the session's recorder holds the same slots and takes a
//! slot's value when it records a turn, so each turn names what served it, and an empty slot
//! means nothing did (the stage failed, or did not run). The slots belong to the session: no
//! table outlives it.

use crate::vendors::fallback::ServedBy;

/// The serving slots of one session.
#[derive(Default)]
pub struct StageSlots {
    pub stt: ServedBy,
    pub llm: ServedBy,
    pub tts: ServedBy,
}

impl StageSlots {
    /// The providers that served a turn's stages since the last take, emptying their slots:
    /// recognition for a caller turn; the model and the voice for an agent turn.
    pub fn take_caller_turn(&self) -> [Option<String>; 3] {
        [take(&self.stt), None, None]
    }

    /// See [`StageSlots::take_caller_turn`].
    pub fn take_agent_turn(&self) -> [Option<String>; 3] {
        [None, take(&self.llm), take(&self.tts)]
    }

    /// Forgets who recognised speech that gave no turn.
    pub fn clear_stt(&self) {
        take(&self.stt);
    }
}

/// The provider that served since the last take, emptying the slot.
fn take(slot: &ServedBy) -> Option<String> {
    slot.lock().ok()?.take()
}
