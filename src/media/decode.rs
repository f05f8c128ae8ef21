//! Decoding uploaded audio: WAV, FLAC, MP3, Ogg Vorbis, M4A/AAC, AIFF, CAF and Matroska
//! through symphonia, and Ogg Opus through libopus (symphonia has no Opus decoder). The result
//! keeps every channel so diarization can split a stereo call recording by channel.

use std::io::Cursor;

use audiopus::coder::Decoder as OpusDecoder;
use audiopus::packet::Packet as OpusPacket;
use audiopus::{Channels, MutSignals, SampleRate};
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;

use super::pcm::{DecodedAudio, MediaError};
use super::sink::{check_format, DecodeTarget, PcmSink};

/// Decodes a whole file held in memory, every channel at the file's own rate. `extension`
/// (from an upload's file name or a URL path) helps the probe but is never trusted over the
/// content.
pub fn decode(bytes: &[u8], extension: Option<&str>) -> Result<DecodedAudio, MediaError> {
    decode_to(bytes, extension, DecodeTarget::ORIGINAL)
}

/// Decodes a file to what `target` asks for, packet by packet: implausible rates and channel
/// counts are refused before any decoder or resampler is built, and each packet is mixed
/// down and resampled as soon as it is decoded.
pub fn decode_to(
    bytes: &[u8],
    extension: Option<&str>,
    target: DecodeTarget,
) -> Result<DecodedAudio, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Corrupt("the file is empty".into()));
    }
    if is_ogg_opus(bytes) {
        return decode_ogg_opus(bytes, target);
    }
    decode_with_symphonia(bytes, extension, target)
}

/// Reads only the headers of a file and refuses what decoding would refuse from them: an
/// implausible sample rate or channel count, or a declared length over the duration cap.
/// Anything else (an unknown format, damage further in) is left for decoding to report, so
/// this can run before a job is accepted without changing what the job reports. The cap is
/// the one of a decode that keeps every channel, as transcription decodes.
pub fn check_header(bytes: &[u8], extension: Option<&str>) -> Result<(), MediaError> {
    if is_ogg_opus(bytes) {
        // The channel count is checked by the decoder; Opus always decodes at 48 kHz.
        return Ok(());
    }
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes.to_vec())), Default::default());
    let mut hint = Hint::new();
    if let Some(extension) = extension {
        hint.with_extension(extension);
    }
    let format = match symphonia::default::get_probe().probe(
        &hint,
        source,
        FormatOptions::default(),
        MetadataOptions::default(),
    ) {
        Ok(format) => format,
        Err(e @ SymphoniaError::DecodeError(_)) => return Err(probe_error(&e)),
        Err(_) => return Ok(()),
    };
    let Some(track) = format.default_track(TrackType::Audio) else {
        return Ok(());
    };
    let Some(params) = track.codec_params.as_ref().and_then(|p| p.audio()) else {
        return Ok(());
    };
    if let Some(rate) = params.sample_rate {
        let channels = params.channels.as_ref().map_or(1, |c| c.count());
        check_format(rate, channels)?;
        PcmSink::new(DecodeTarget::ORIGINAL).check_declared(rate, channels, track.num_frames)?;
    }
    Ok(())
}

fn decode_with_symphonia(
    bytes: &[u8],
    extension: Option<&str>,
    target: DecodeTarget,
) -> Result<DecodedAudio, MediaError> {
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes.to_vec())), Default::default());
    let mut hint = Hint::new();
    if let Some(extension) = extension {
        hint.with_extension(extension);
    }
    let mut format = symphonia::default::get_probe()
        .probe(
            &hint,
            source,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|e| probe_error(&e))?;
    let track = format
        .default_track(TrackType::Audio)
        .ok_or_else(|| MediaError::Unsupported("the file has no audio track".into()))?;
    let track_id = track.id;
    let declared_frames = track.num_frames;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .ok_or_else(|| MediaError::Unsupported("the audio track has no codec parameters".into()))?
        .clone();
    let mut sink = PcmSink::new(target);
    // What the header declares is checked before the decoder is made: some decoders size
    // their buffers from it.
    if let Some(rate) = params.sample_rate {
        let channels = params.channels.as_ref().map_or(1, |c| c.count());
        check_format(rate, channels)?;
        sink.check_declared(rate, channels, declared_frames)?;
    }
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| MediaError::Unsupported(describe(&e)))?;

    let mut interleaved: Vec<f32> = Vec::new();
    loop {
        let packet = match format.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            // A truncated file ends where the data ends; what was decoded is kept.
            Err(SymphoniaError::IoError(_)) => break,
            Err(e) => return Err(MediaError::Corrupt(describe(&e))),
        };
        if packet.track_id != track_id {
            continue;
        }
        let buffer = match decoder.decode(&packet) {
            Ok(buffer) => buffer,
            // One damaged packet is skipped, as players do.
            Err(SymphoniaError::DecodeError(_)) | Err(SymphoniaError::IoError(_)) => continue,
            Err(e) => return Err(MediaError::Corrupt(describe(&e))),
        };
        let planes = buffer.spec().channels().count();
        let rate = buffer.spec().rate();
        check_format(rate, planes)?;
        buffer.copy_to_vec_interleaved(&mut interleaved);
        sink.push(&interleaved, planes, rate)?;
    }
    sink.finish()
        .ok_or_else(|| MediaError::Corrupt("no audio could be decoded".into()))
}

/// A format reader that recognised the container and then refused its header (a WAV
/// declaring 1000 channels) reports a damaged file; no reader recognising it is unsupported.
fn probe_error(error: &SymphoniaError) -> MediaError {
    match error {
        SymphoniaError::DecodeError(_) => MediaError::Corrupt(describe(error)),
        _ => MediaError::Unsupported(describe(error)),
    }
}

fn describe(error: &SymphoniaError) -> String {
    match error {
        SymphoniaError::Unsupported(what) => format!("unsupported {what}"),
        SymphoniaError::DecodeError(what) => format!("malformed data ({what})"),
        SymphoniaError::IoError(_) => "the data ended unexpectedly".into(),
        other => other.to_string(),
    }
}

fn is_ogg_opus(bytes: &[u8]) -> bool {
    bytes.starts_with(b"OggS") && bytes.len() > 36 && &bytes[28..36] == b"OpusHead"
}

/// Ogg Opus (RFC 7845): OpusHead gives the channel count and pre-skip; audio packets decode
/// at 48 kHz.
fn decode_ogg_opus(bytes: &[u8], target: DecodeTarget) -> Result<DecodedAudio, MediaError> {
    const RATE: u32 = 48_000;
    let corrupt = |what: &str| MediaError::Corrupt(format!("Ogg Opus: {what}"));
    let mut reader = ogg::reading::PacketReader::new(Cursor::new(bytes));
    let head = reader
        .read_packet()
        .map_err(|e| corrupt(&e.to_string()))?
        .ok_or_else(|| corrupt("no header"))?;
    if head.data.len() < 19 || &head.data[..8] != b"OpusHead" {
        return Err(corrupt("bad OpusHead"));
    }
    let channel_count = head.data[9];
    let pre_skip = u16::from_le_bytes([head.data[10], head.data[11]]) as usize;
    let opus_channels = match channel_count {
        1 => Channels::Mono,
        2 => Channels::Stereo,
        n => {
            return Err(MediaError::Unsupported(format!(
                "Ogg Opus with {n} channels (1 or 2 are supported)"
            )))
        }
    };
    let count = channel_count as usize;
    let mut decoder = OpusDecoder::new(SampleRate::Hz48000, opus_channels)
        .map_err(|e| corrupt(&e.to_string()))?;
    // The largest Opus packet holds 120 ms.
    let mut pcm = vec![0f32; 5760 * count];
    let mut sink = PcmSink::new(target);
    let mut packets = 0usize;
    // The encoder's pre-skip (priming samples) is dropped from the start.
    let mut skip = pre_skip * count;
    while let Some(packet) = reader.read_packet().map_err(|e| corrupt(&e.to_string()))? {
        packets += 1;
        if packets == 1 && packet.data.starts_with(b"OpusTags") {
            continue;
        }
        let Ok(input) = OpusPacket::try_from(packet.data.as_slice()) else {
            continue;
        };
        let output =
            MutSignals::try_from(pcm.as_mut_slice()).map_err(|e| corrupt(&e.to_string()))?;
        let frames = match decoder.decode_float(Some(input), output, false) {
            Ok(frames) => frames,
            Err(_) => continue,
        };
        let decoded = &pcm[..frames * count];
        let dropped = skip.min(decoded.len());
        skip -= dropped;
        if dropped < decoded.len() {
            sink.push(&decoded[dropped..], count, RATE)?;
        }
    }
    sink.finish().ok_or_else(|| corrupt("no audio packets"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/audio")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    }

    #[test]
    fn decodes_the_fixtures_with_their_real_shapes() {
        let flac = decode(&fixture("jfk.flac"), Some("flac")).unwrap();
        assert_eq!(flac.sample_rate, 44_100);
        assert_eq!(flac.channels.len(), 2);
        assert!(
            (flac.duration_seconds() - 11.0).abs() < 0.1,
            "{}",
            flac.duration_seconds()
        );

        let wav = decode(&fixture("stereo_diarization.wav"), None).unwrap();
        assert_eq!((wav.sample_rate, wav.channels.len()), (16_000, 2));
        assert!((wav.duration_seconds() - 5.0).abs() < 0.1);
        // One speaker per channel: the channels differ.
        let diff: f32 = wav.channels[0]
            .iter()
            .zip(&wav.channels[1])
            .map(|(a, b)| (a - b).abs())
            .sum();
        assert!(diff > 100.0);

        let mp3 = decode(&fixture("multilingual.mp3"), Some("mp3")).unwrap();
        assert_eq!((mp3.sample_rate, mp3.channels.len()), (24_000, 1));
        assert!(
            (mp3.duration_seconds() - 60.0).abs() < 1.5,
            "{}",
            mp3.duration_seconds()
        );
    }

    #[test]
    fn a_wrong_extension_hint_does_not_matter() {
        let audio = decode(&fixture("jfk.flac"), Some("mp3")).unwrap();
        assert_eq!(audio.sample_rate, 44_100);
    }

    #[test]
    fn garbage_and_empty_input_are_clear_errors() {
        assert!(matches!(decode(b"", None), Err(MediaError::Corrupt(_))));
        let text = b"this is a text file, not audio at all. ".repeat(100);
        assert!(matches!(
            decode(&text, Some("txt")),
            Err(MediaError::Unsupported(_))
        ));
        // A FLAC header cut off right after the magic.
        let cut = &fixture("jfk.flac")[..64];
        assert!(decode(cut, Some("flac")).is_err());
    }

    #[test]
    fn mono_averages_channels() {
        let audio = DecodedAudio {
            sample_rate: 8_000,
            channels: vec![vec![1.0, 0.0], vec![0.0, 0.5]],
        };
        assert_eq!(audio.mono(), vec![0.5, 0.25]);
    }
}
