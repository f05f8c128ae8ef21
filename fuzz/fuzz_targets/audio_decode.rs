#![no_main]
//! Uploaded audio files through `media::decode`, the entry point of every speech endpoint,
//! with the documented shape of its result checked: 1 to 8 channels of the same length at a
//! non-zero rate.
//!
//! The same input is then decoded as the speech endpoints decode it (every channel at 16 kHz,
//! in a stream), which must give 1 to 8 channels of the same length at 16 kHz, and the voices
//! are found among them. scripts/fuzz runs this with a memory limit, so an input that expands
//! past it is a crash.
//!
//! The extension hint is picked from the input's length, so the seeds stay real files.

use libfuzzer_sys::fuzz_target;
use switchboard::media::{decode, decode_to};
use switchboard::speech::channels::voices;
use switchboard::speech::transcription::TRANSCRIPTION_TARGET;

const HINTS: [Option<&str>; 8] = [
    None,
    Some("wav"),
    Some("flac"),
    Some("mp3"),
    Some("ogg"),
    Some("m4a"),
    Some("aiff"),
    Some("mkv"),
];

fuzz_target!(|data: &[u8]| {
    let hint = HINTS[data.len() % HINTS.len()];
    if let Ok(split) = decode_to(data, hint, TRANSCRIPTION_TARGET) {
        assert_eq!(split.sample_rate, 16_000);
        assert!((1..=8).contains(&split.channels.len()));
        let frames = split.frames();
        assert!(split.channels.iter().all(|c| c.len() == frames));
        let groups = voices(&split.channels, split.sample_rate);
        assert!(!groups.is_empty() && groups.iter().all(|g| !g.is_empty()));
    }
    let Ok(audio) = decode(data, hint) else {
        return;
    };
    assert!(audio.sample_rate > 0, "decoded audio at 0 Hz");
    assert!(
        (1..=8).contains(&audio.channels.len()),
        "{} channels",
        audio.channels.len()
    );
    let frames = audio.frames();
    assert!(
        audio.channels.iter().all(|c| c.len() == frames),
        "channels of different lengths: {:?}",
        audio.channels.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let _ = audio.mono();
});
