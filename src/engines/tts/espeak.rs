//! A thin, safe wrapper over libespeak-ng (through `espeakng-sys`): the one place in the
//! speech engine with `unsafe` code.
//!
//! eSpeak NG keeps all of its state in C globals and is not thread-safe. The library is
//! initialised once per process (synchronous output: no audio device, samples arrive through
//! the synthesis callback on the calling thread) and every call goes through [`Espeak`], a
//! guard on one process-wide mutex. A caller that needs several calls in a row (set a voice,
//! then phonemize) holds one guard for all of them.
//!
//! Three services are offered: IPA phonemes clause by clause (for the neural voices), audio
//! synthesis (the eSpeak voices themselves) and the list of installed voices.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_short, c_void, CStr, CString};
use std::ops::Range;
use std::sync::{Mutex, MutexGuard, OnceLock};

use espeakng_sys as sys;
use switchboard_actors::engine::EngineError;

/// eSpeak's own speaking rate, in words per minute, for speed 1.0.
pub const NORMAL_RATE: i32 = sys::espeakRATE_NORMAL as i32;
/// The slowest and fastest rates eSpeak accepts.
pub const RATE_RANGE: (i32, i32) = (
    sys::espeakRATE_MINIMUM as i32,
    sys::espeakRATE_MAXIMUM as i32,
);
/// eSpeak's base pitch parameter (0-100) for a voice's own pitch.
pub const NORMAL_PITCH: i32 = 50;

/// The library's state behind the process-wide lock.
struct State {
    sample_rate: u32,
    /// The voice last selected, so that repeated calls skip reloading it.
    current_voice: Option<String>,
}

static ESPEAK: OnceLock<Result<Mutex<State>, String>> = OnceLock::new();

thread_local! {
    /// Where the synthesis callback puts samples. Synthesis is synchronous, so the callback
    /// runs on the thread that called `espeak_Synth`, which holds the global lock.
    static SINK: RefCell<Vec<i16>> = const { RefCell::new(Vec::new()) };
}

/// One clause as `espeak_TextToPhonemes` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhonemeClause {
    /// IPA phonemes, words separated by spaces, language switches as `(xx)` flags.
    pub phonemes: String,
    /// The bytes of the input text this clause covers, its terminating punctuation (and
    /// any spaces after it) included.
    pub text: Range<usize>,
}

/// An installed eSpeak NG voice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EspeakVoice {
    /// The voice file, relative to the data directory's `voices`/`lang` folder (`gmw/en-US`).
    pub identifier: String,
    /// The human name (`English (America)`).
    pub name: String,
    /// Languages the voice speaks, with eSpeak's priority (lower is a better match).
    pub languages: Vec<(u8, String)>,
}

/// Exclusive access to eSpeak NG. Obtained with [`Espeak::lock`].
pub struct Espeak {
    state: MutexGuard<'static, State>,
}

/// The synthesis callback: copies the samples into this thread's [`SINK`].
unsafe extern "C" fn collect_samples(
    wav: *mut c_short,
    count: c_int,
    _events: *mut sys::espeak_EVENT,
) -> c_int {
    if wav.is_null() || count <= 0 {
        return 0;
    }
    // SAFETY: eSpeak passes a buffer of `count` valid samples that lives for this call.
    let samples = unsafe { std::slice::from_raw_parts(wav, count as usize) };
    SINK.with(|sink| {
        if let Ok(mut sink) = sink.try_borrow_mut() {
            sink.extend_from_slice(samples);
        }
    });
    0
}

fn initialise() -> Result<Mutex<State>, String> {
    // SAFETY: called once (inside a OnceLock). A null path lets eSpeak find its data
    // directory (its compiled-in default or ESPEAK_DATA_PATH); DONT_EXIT stops it from ending
    // the process when the data is missing, returning an error code instead.
    let rate = unsafe {
        sys::espeak_Initialize(
            sys::espeak_AUDIO_OUTPUT_AUDIO_OUTPUT_SYNCHRONOUS,
            0,
            std::ptr::null(),
            sys::espeakINITIALIZE_DONT_EXIT as c_int,
        )
    };
    if rate <= 0 {
        return Err(format!(
            "eSpeak NG could not be initialised (code {rate}): its data directory is missing; \
             install espeak-ng-data or set ESPEAK_DATA_PATH"
        ));
    }
    // SAFETY: `collect_samples` has the callback's signature and never unwinds.
    unsafe { sys::espeak_SetSynthCallback(Some(collect_samples)) };
    Ok(Mutex::new(State {
        sample_rate: rate as u32,
        current_voice: None,
    }))
}

impl Espeak {
    /// Initialises eSpeak NG on first use and takes the process-wide lock.
    pub fn lock() -> Result<Espeak, EngineError> {
        let global = ESPEAK
            .get_or_init(initialise)
            .as_ref()
            .map_err(|message| EngineError::unavailable(message.clone()))?;
        // A panic while holding the lock cannot leave eSpeak half-called (no Rust code runs
        // inside its calls), so a poisoned lock is still usable.
        let state = global
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(Espeak { state })
    }

    /// The rate of the audio eSpeak synthesizes, in Hz (22050).
    pub fn sample_rate(&self) -> u32 {
        self.state.sample_rate
    }

    /// The library's version string.
    pub fn version(&self) -> String {
        // SAFETY: espeak_Info accepts a null out-pointer and returns a static string.
        let version = unsafe { sys::espeak_Info(std::ptr::null_mut()) };
        if version.is_null() {
            return String::new();
        }
        // SAFETY: non-null, NUL-terminated, static for the life of the library.
        unsafe { CStr::from_ptr(version) }
            .to_string_lossy()
            .into_owned()
    }

    /// Selects a voice by name, identifier or language (`en-us`, `gmw/en-US`).
    pub fn set_voice(&mut self, voice: &str) -> Result<(), EngineError> {
        if self.state.current_voice.as_deref() == Some(voice) {
            return Ok(());
        }
        let name = CString::new(voice)
            .map_err(|_| EngineError::invalid("an eSpeak voice name cannot contain NUL"))?;
        // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
        let status = unsafe { sys::espeak_SetVoiceByName(name.as_ptr()) };
        if status != sys::espeak_ERROR_EE_OK {
            self.state.current_voice = None;
            return Err(EngineError::invalid(format!(
                "eSpeak NG has no voice `{voice}`"
            )));
        }
        self.state.current_voice = Some(voice.to_owned());
        Ok(())
    }

    /// Phonemizes `text` with the current voice, one clause at a time, as IPA.
    pub fn phonemize(&mut self, text: &str) -> Result<Vec<PhonemeClause>, EngineError> {
        let buffer = c_text(text);
        let start = buffer.as_ptr();
        let end_offset = buffer.as_bytes().len();
        let mut cursor: *const c_void = start.cast();
        let mut clauses = Vec::new();
        let mut offset = 0usize;
        // eSpeak consumes at least one character per clause, so the text's length bounds the
        // number of calls; the bound guards against a library that stops advancing.
        for _ in 0..=end_offset {
            if cursor.is_null() || offset >= end_offset {
                break;
            }
            // SAFETY: `cursor` points into `buffer` (NUL-terminated, alive for this scope);
            // eSpeak advances it past the clause it read, or sets it to null at the end. The
            // returned string is eSpeak's internal buffer, copied before the next call.
            let phonemes = unsafe {
                let result = sys::espeak_TextToPhonemes(
                    &mut cursor,
                    sys::espeakCHARS_UTF8 as c_int,
                    sys::espeakPHONEMES_IPA as c_int,
                );
                if result.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(result).to_string_lossy().into_owned()
                }
            };
            let next = if cursor.is_null() {
                end_offset
            } else {
                // Both pointers are into `buffer`; the difference is the bytes consumed.
                // eSpeak reads one character past a clause's end (to see what follows its
                // punctuation): that character belongs to the next clause.
                let read = (cursor as usize)
                    .saturating_sub(start as usize)
                    .min(end_offset);
                let lookahead = text
                    .get(offset..read)
                    .and_then(|consumed| consumed.chars().last())
                    .map_or(0, char::len_utf8);
                if read - lookahead > offset {
                    read - lookahead
                } else {
                    read
                }
            };
            if next <= offset && !cursor.is_null() {
                return Err(EngineError::internal(
                    "eSpeak NG stopped advancing through the text while phonemizing",
                ));
            }
            clauses.push(PhonemeClause {
                phonemes,
                text: offset..next,
            });
            offset = next;
        }
        Ok(clauses)
    }

    /// Synthesizes `text` with `voice` at eSpeak's sample rate, as f32 samples in [-1, 1].
    /// `rate` is in words per minute, `pitch` eSpeak's 0-100 base pitch.
    pub fn synthesize(
        &mut self,
        voice: &str,
        text: &str,
        rate: i32,
        pitch: i32,
    ) -> Result<Vec<f32>, EngineError> {
        self.set_voice(voice)?;
        let rate = rate.clamp(RATE_RANGE.0, RATE_RANGE.1);
        let pitch = pitch.clamp(0, 100);
        // SAFETY: plain integer parameters on an initialised library.
        let status = unsafe {
            let rate_status = sys::espeak_SetParameter(sys::espeak_PARAMETER_espeakRATE, rate, 0);
            let pitch_status =
                sys::espeak_SetParameter(sys::espeak_PARAMETER_espeakPITCH, pitch, 0);
            rate_status.max(pitch_status)
        };
        if status != sys::espeak_ERROR_EE_OK {
            return Err(EngineError::internal(format!(
                "eSpeak NG refused rate {rate} / pitch {pitch} (code {status})"
            )));
        }
        let buffer = c_text(text);
        SINK.with(|sink| sink.borrow_mut().clear());
        // SAFETY: `buffer` is NUL-terminated and its size includes the NUL, as espeak_Synth
        // wants. In synchronous mode the call returns when synthesis is complete, having
        // called `collect_samples` on this thread for every block of audio.
        let status = unsafe {
            sys::espeak_Synth(
                buffer.as_ptr().cast(),
                buffer.as_bytes_with_nul().len(),
                0,
                sys::espeak_POSITION_TYPE_POS_CHARACTER,
                0,
                sys::espeakCHARS_UTF8 | sys::espeakENDPAUSE,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        let samples = SINK.with(|sink| std::mem::take(&mut *sink.borrow_mut()));
        if status != sys::espeak_ERROR_EE_OK {
            return Err(EngineError::internal(format!(
                "eSpeak NG failed to synthesize (code {status})"
            )));
        }
        Ok(samples
            .into_iter()
            .map(|s| f32::from(s) / 32768.0)
            .collect())
    }

    /// Every installed voice, mbrola voices and variants left out.
    pub fn voices(&mut self) -> Vec<EspeakVoice> {
        // SAFETY: a null spec lists all voices. The result is a null-terminated array of
        // pointers to voice records owned by eSpeak, valid until the next listing; it is
        // copied out entirely before the lock is released.
        let list = unsafe { sys::espeak_ListVoices(std::ptr::null_mut()) };
        let mut voices = Vec::new();
        if list.is_null() {
            return voices;
        }
        for index in 0.. {
            // SAFETY: the array is null-terminated, and `index` never passes the terminator.
            let entry = unsafe { *list.add(index) };
            if entry.is_null() {
                break;
            }
            // SAFETY: a non-null entry is a valid espeak_VOICE record.
            let voice = unsafe { &*entry };
            let identifier = lossy(voice.identifier);
            if identifier.is_empty() {
                continue;
            }
            voices.push(EspeakVoice {
                identifier,
                name: lossy(voice.name).trim().to_owned(),
                // SAFETY: `languages` follows eSpeak's documented layout (see below).
                languages: unsafe { languages(voice.languages) },
            });
        }
        voices
    }
}

/// The text as a C string; NUL characters (which would end it early) become spaces.
fn c_text(text: &str) -> CString {
    let cleaned: String = text
        .chars()
        .map(|c| if c == '\0' { ' ' } else { c })
        .collect();
    // No NUL remains, so this cannot fail; an empty string is the harmless fallback.
    CString::new(cleaned).unwrap_or_default()
}

fn lossy(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: eSpeak's voice strings are NUL-terminated and alive while the list is.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// Parses a voice's language list: repeated (priority byte, NUL-terminated name), ended by a
/// zero priority byte.
///
/// # Safety
/// `cursor` is null or points to such a list.
unsafe fn languages(mut cursor: *const c_char) -> Vec<(u8, String)> {
    let mut languages = Vec::new();
    if cursor.is_null() {
        return languages;
    }
    // A language list has a handful of entries; the bound guards against a malformed one.
    for _ in 0..64 {
        // SAFETY: within the list, per the function's contract.
        let priority = unsafe { *cursor } as u8;
        if priority == 0 {
            break;
        }
        // SAFETY: the name starts after the priority byte and is NUL-terminated.
        let name = unsafe { CStr::from_ptr(cursor.add(1)) };
        let length = name.to_bytes().len();
        languages.push((priority, name.to_string_lossy().into_owned()));
        // SAFETY: skips the priority byte, the name and its NUL: the next entry or the end.
        cursor = unsafe { cursor.add(length + 2) };
    }
    languages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phonemizes_clause_by_clause_with_positions() {
        let mut espeak = Espeak::lock().unwrap();
        espeak.set_voice("en-us").unwrap();
        let text = "Hello, world. This is a test";
        let clauses = espeak.phonemize(text).unwrap();
        assert_eq!(clauses.len(), 3, "{clauses:?}");
        assert_eq!(&text[clauses[0].text.clone()].trim_end(), &"Hello,");
        assert!(clauses[0].phonemes.contains("həl"), "{clauses:?}");
        assert_eq!(clauses.last().unwrap().text.end, text.len());
        assert!(clauses[2].phonemes.contains("tˈɛst"), "{clauses:?}");
    }

    #[test]
    fn synthesizes_audio_at_its_sample_rate() {
        let mut espeak = Espeak::lock().unwrap();
        assert_eq!(espeak.sample_rate(), 22_050);
        let audio = espeak
            .synthesize("en-us", "Testing one two three.", NORMAL_RATE, NORMAL_PITCH)
            .unwrap();
        let seconds = audio.len() as f32 / 22_050.0;
        assert!((0.7..4.0).contains(&seconds), "{seconds} s");
        assert!(audio.iter().any(|s| s.abs() > 0.05));
    }

    #[test]
    fn lists_voices_with_languages() {
        let mut espeak = Espeak::lock().unwrap();
        let voices = espeak.voices();
        assert!(voices.len() > 50, "{}", voices.len());
        let english = voices
            .iter()
            .find(|voice| voice.identifier == "gmw/en-US")
            .expect("an American English voice");
        assert!(english.languages.iter().any(|(_, l)| l == "en-us"));
        assert!(espeak.set_voice("no-such-voice-xx").is_err());
    }
}
