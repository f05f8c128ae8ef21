//! The recording tap and its writer. A transport holds a [`RecordingTap`] for the length of a
//! call and hands it every caller frame it receives, every agent frame it sends and every
//! clear; the tap stamps each with the time and passes it on over a bounded channel without
//! ever waiting (a full queue drops the frame and counts it). One writer thread per recording
//! decodes the frames, resamples them to the recording's rate, lines them up on the
//! [`Timeline`] and streams them into a two-channel 16-bit WAV file, so a call is never held
//! in memory whole. When the tap is dropped the writer finishes the file and reports it.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use switchboard_actors::audio::{mulaw, OpusDecoder, SampleRate};

use super::timeline::Timeline;

/// How the transport's audio is encoded (both directions use the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapFormat {
    /// G.711 mu-law, 8 kHz (Twilio).
    Mulaw8k,
    /// 16-bit little-endian PCM at this rate (the direct socket).
    Pcm16(u32),
    /// One Opus packet per frame, decoded at this rate (the direct socket with Opus).
    Opus(SampleRate),
}

impl TapFormat {
    fn rate(self) -> u32 {
        match self {
            TapFormat::Mulaw8k => 8_000,
            TapFormat::Pcm16(rate) => rate,
            TapFormat::Opus(rate) => rate.hz(),
        }
    }
}

/// Turns one channel's frames into samples: Opus keeps decoder state across a channel's packets.
enum ChannelDecoder {
    Mulaw,
    Pcm16,
    Opus(Box<OpusDecoder>),
}

impl ChannelDecoder {
    fn new(format: TapFormat) -> Result<Self, String> {
        Ok(match format {
            TapFormat::Mulaw8k => ChannelDecoder::Mulaw,
            TapFormat::Pcm16(_) => ChannelDecoder::Pcm16,
            TapFormat::Opus(rate) => ChannelDecoder::Opus(Box::new(
                OpusDecoder::new(rate).map_err(|e| format!("cannot start an Opus decoder: {e}"))?,
            )),
        })
    }

    /// The frame's samples; a packet that does not decode counts as nothing (the session
    /// itself reports bad caller audio).
    fn decode(&mut self, bytes: &[u8]) -> Vec<i16> {
        match self {
            ChannelDecoder::Mulaw => bytes.iter().map(|&b| mulaw::decode(b)).collect(),
            ChannelDecoder::Pcm16 => bytes
                .chunks_exact(2)
                .map(|p| i16::from_le_bytes([p[0], p[1]]))
                .collect(),
            ChannelDecoder::Opus(decoder) => decoder
                .decode(bytes)
                .map(<[i16]>::to_vec)
                .unwrap_or_default(),
        }
    }
}

enum TapEvent {
    Caller(Bytes, Duration),
    Agent(Bytes, Duration),
    Clear(Duration),
}

/// What the writer made of a call.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub bytes: u64,
    pub duration_ms: i64,
    /// Frames the call produced faster than the disk took them.
    pub dropped_frames: u64,
}

/// The transport's handle on a recording. Never blocks; dropping it ends the recording.
pub struct RecordingTap {
    tx: SyncSender<TapEvent>,
    started: Instant,
    dropped: Arc<AtomicU64>,
    id: String,
}

impl RecordingTap {
    /// The recording's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Audio the caller sent (the transport's input format).
    pub fn caller(&self, audio: &Bytes) {
        self.send(TapEvent::Caller(audio.clone(), self.started.elapsed()));
    }

    /// Audio sent to the caller (the transport's output format).
    pub fn agent(&self, audio: &Bytes) {
        self.send(TapEvent::Agent(audio.clone(), self.started.elapsed()));
    }

    /// The caller's playback queue was cleared (barge-in).
    pub fn clear(&self) {
        self.send(TapEvent::Clear(self.started.elapsed()));
    }

    fn send(&self, event: TapEvent) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(event) {
            if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(recording = %self.id, "the recording writer is behind; dropping audio frames");
            }
        }
    }
}

/// Starts the writer thread of a recording at `path`; `done` is called with the result on that
/// thread once the tap is dropped and the file is complete.
pub fn start(
    id: String,
    path: PathBuf,
    format: TapFormat,
    rate: u32,
    queue: usize,
    done: Box<dyn FnOnce(Result<Written, String>) + Send>,
) -> Result<RecordingTap, String> {
    let (tx, rx) = mpsc::sync_channel(queue.max(1));
    let started = Instant::now();
    let dropped = Arc::new(AtomicU64::new(0));
    let counter = dropped.clone();
    std::thread::Builder::new()
        .name("recording".into())
        .spawn(move || {
            let result = write(rx, &path, format, rate, started).map(|(bytes, samples)| Written {
                path: path.clone(),
                bytes,
                duration_ms: (samples * 1000 / rate as u64) as i64,
                dropped_frames: counter.load(Ordering::Relaxed),
            });
            done(result);
        })
        .map_err(|e| format!("cannot start the recording writer: {e}"))?;
    Ok(RecordingTap {
        tx,
        started,
        dropped,
        id,
    })
}

/// Writes until the tap is dropped; answers (file bytes, samples per channel).
fn write(
    rx: Receiver<TapEvent>,
    path: &Path,
    format: TapFormat,
    rate: u32,
    started: Instant,
) -> Result<(u64, u64), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let file = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut wav = hound::WavWriter::new(BufWriter::with_capacity(64 * 1024, file), spec)
        .map_err(|e| format!("cannot start the WAV file: {e}"))?;
    let mut timeline = Timeline::new(rate);
    let mut caller_decoder = ChannelDecoder::new(format)?;
    let mut agent_decoder = ChannelDecoder::new(format)?;
    let mut caller_resampler = Linear::new(format.rate(), rate);
    let mut agent_resampler = Linear::new(format.rate(), rate);
    let position = |at: Duration| (at.as_micros() as u64) * rate as u64 / 1_000_000;
    let mut scratch = Vec::new();
    let put = |wav: &mut hound::WavWriter<_>, frames: Vec<[i16; 2]>| -> Result<(), String> {
        for [l, r] in frames {
            wav.write_sample(l)
                .and_then(|_| wav.write_sample(r))
                .map_err(|e| format!("cannot write the recording: {e}"))?;
        }
        Ok(())
    };
    loop {
        let now = match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(TapEvent::Caller(audio, at)) => {
                scratch.clear();
                caller_resampler.process(&caller_decoder.decode(&audio), &mut scratch);
                timeline.caller(&scratch, position(at));
                position(at)
            }
            Ok(TapEvent::Agent(audio, at)) => {
                scratch.clear();
                agent_resampler.process(&agent_decoder.decode(&audio), &mut scratch);
                timeline.agent(&scratch, position(at));
                position(at)
            }
            Ok(TapEvent::Clear(at)) => {
                timeline.clear(position(at));
                position(at)
            }
            Err(RecvTimeoutError::Timeout) => position(started.elapsed()),
            Err(RecvTimeoutError::Disconnected) => break,
        };
        put(&mut wav, timeline.commit(now))?;
    }
    put(&mut wav, timeline.finish())?;
    let samples = timeline.written();
    wav.finalize()
        .map_err(|e| format!("cannot finish the recording: {e}"))?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok((bytes, samples))
}

/// A streaming linear-interpolation resampler (recordings are for listening and review; the
/// sessions' own audio path has its own resampling).
struct Linear {
    /// Input samples per output sample.
    step: f64,
    /// Position of the next output sample, in input samples, where 0 is `last`.
    t: f64,
    last: f32,
    passthrough: bool,
}

impl Linear {
    fn new(from: u32, to: u32) -> Linear {
        Linear {
            step: from as f64 / to as f64,
            t: 1.0,
            last: 0.0,
            passthrough: from == to,
        }
    }

    fn process(&mut self, input: &[i16], out: &mut Vec<i16>) {
        if self.passthrough {
            out.extend_from_slice(input);
            return;
        }
        if input.is_empty() {
            return;
        }
        let len = input.len() as f64;
        let at = |i: usize| -> f32 {
            if i == 0 {
                self.last
            } else {
                input[i - 1] as f32
            }
        };
        while self.t < len {
            let i = self.t.floor() as usize;
            let frac = (self.t - i as f64) as f32;
            let value = at(i) + (at(i + 1) - at(i)) * frac;
            out.push(value.round().clamp(i16::MIN as f32, i16::MAX as f32) as i16);
            self.t += self.step;
        }
        self.t -= len;
        self.last = input[input.len() - 1] as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resampler_keeps_the_rate_across_frames() {
        for (from, to) in [(8_000, 16_000), (24_000, 16_000), (48_000, 16_000)] {
            let mut r = Linear::new(from, to);
            let mut out = Vec::new();
            let frame = vec![1000i16; (from / 50) as usize];
            for _ in 0..50 {
                r.process(&frame, &mut out);
            }
            let expected = to as i64;
            assert!(
                (out.len() as i64 - expected).abs() <= 2,
                "{from} -> {to}: {} samples",
                out.len()
            );
            assert!(out[10..].iter().all(|&s| s == 1000));
        }
    }

    #[test]
    fn a_recording_is_a_stereo_wav_of_the_calls_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.wav");
        let (tx, rx) = mpsc::channel();
        let tap = start(
            "rec_1".into(),
            path.clone(),
            TapFormat::Mulaw8k,
            8_000,
            100,
            Box::new(move |r| tx.send(r).unwrap()),
        )
        .unwrap();
        let loud = Bytes::from(vec![mulaw::encode(8_000); 160]);
        for _ in 0..25 {
            tap.caller(&loud);
            std::thread::sleep(Duration::from_millis(20));
        }
        tap.agent(&loud);
        drop(tap);
        let written = rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
        let reader = hound::WavReader::open(&path).unwrap();
        assert_eq!(reader.spec().channels, 2);
        assert_eq!(reader.spec().sample_rate, 8_000);
        let frames = reader.len() / 2;
        assert!((3_900..=4_600).contains(&frames), "{frames} frames");
        assert_eq!(written.bytes, std::fs::metadata(&path).unwrap().len());
        assert!(
            (480..=580).contains(&written.duration_ms),
            "{}",
            written.duration_ms
        );
    }
}
