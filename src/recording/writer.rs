//! The recording tap and its writers. A transport holds a [`RecordingTap`] for the length of a
//! call and hands it every caller frame it receives, every agent frame it sends and every
//! clear; the tap stamps each with the time and queues it without ever waiting (past the
//! queue's cap the frame is dropped and counted; the queue takes memory only for what is in
//! it). A [`WriterPool`] of a few threads serves every recording: each tick a thread takes
//! its recordings' queued frames, decodes them, resamples them to the recording's rate, lines
//! them up on the [`Timeline`] and streams what is final into a two-channel 16-bit WAV file,
//! so a call is never held in memory whole and costs no thread of its own. When the tap is
//! dropped the writer finishes the file and reports it.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use switchboard_actors::audio::{mulaw, OpusDecoder, SampleRate};

use super::page_aligned::PageAlignedWriter;
use super::timeline::{Frames, Timeline};
use crate::ids::RecordingId;

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

/// Turns one channel's frames into samples: Opus keeps decoder state across a channel's
/// packets, and 16-bit PCM the odd byte a frame may end with (the direct socket takes frames
/// of any length), which begins the next frame's first sample.
enum ChannelDecoder {
    Mulaw,
    Pcm16 { odd_byte: Option<u8> },
    Opus(Box<OpusDecoder>),
}

impl ChannelDecoder {
    fn new(format: TapFormat) -> Result<Self, String> {
        Ok(match format {
            TapFormat::Mulaw8k => ChannelDecoder::Mulaw,
            TapFormat::Pcm16(_) => ChannelDecoder::Pcm16 { odd_byte: None },
            TapFormat::Opus(rate) => ChannelDecoder::Opus(Box::new(
                OpusDecoder::new(rate).map_err(|e| format!("cannot start an Opus decoder: {e}"))?,
            )),
        })
    }

    /// Decodes a frame into `out` (cleared first); a packet that does not decode counts as
    /// nothing (the session itself reports bad caller audio).
    fn decode_into(&mut self, bytes: &[u8], out: &mut Vec<i16>) {
        out.clear();
        match self {
            ChannelDecoder::Mulaw => out.extend(bytes.iter().map(|&b| mulaw::decode(b))),
            ChannelDecoder::Pcm16 { odd_byte } => {
                let mut bytes = bytes;
                if let (Some(low), Some((&high, rest))) = (*odd_byte, bytes.split_first()) {
                    out.push(i16::from_le_bytes([low, high]));
                    *odd_byte = None;
                    bytes = rest;
                }
                let pairs = bytes.chunks_exact(2);
                if let [last] = pairs.remainder() {
                    *odd_byte = Some(*last);
                }
                out.extend(pairs.map(|p| i16::from_le_bytes([p[0], p[1]])));
            }
            ChannelDecoder::Opus(decoder) => {
                if let Ok(samples) = decoder.decode(bytes) {
                    out.extend_from_slice(samples);
                }
            }
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
    tx: Sender<TapEvent>,
    /// Events sent and not yet taken by the writer, capped at `queue`.
    depth: Arc<AtomicUsize>,
    queue: usize,
    started: Instant,
    dropped: Arc<AtomicU64>,
    id: RecordingId,
}

impl RecordingTap {
    /// The recording's id.
    pub fn id(&self) -> &RecordingId {
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

    /// The caller's playback queue was cleared (barge-in): now, or at `written_at` when the
    /// clear was written before the transport heard of it (a session's clear lane).
    pub fn clear(&self, written_at: Option<Instant>) {
        let at = written_at.unwrap_or_else(Instant::now);
        self.send(TapEvent::Clear(at.saturating_duration_since(self.started)));
    }

    fn send(&self, event: TapEvent) {
        if self.depth.fetch_add(1, Ordering::AcqRel) >= self.queue {
            self.depth.fetch_sub(1, Ordering::AcqRel);
            if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(recording = %self.id, "the recording writer is behind; dropping audio frames");
            }
            return;
        }
        if self.tx.send(event).is_err() {
            // The writer gave up on this recording (the failure is in its report).
            self.depth.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How often a writer thread takes the queued frames of its recordings and writes what is
/// final. Well under the timeline's hold, so no frame arrives after its place was written.
const WRITER_TICK: Duration = Duration::from_millis(100);
/// The file buffer of one recording: a write of whole pages about every half second of a
/// phone call.
const FILE_BUFFER: usize = 16 * 1024;

type Done = Box<dyn FnOnce(Result<Written, String>) + Send>;

/// A recording handed to a writer thread.
struct Job {
    path: PathBuf,
    format: TapFormat,
    rate: u32,
    started: Instant,
    rx: Receiver<TapEvent>,
    depth: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
    done: Done,
}

/// The recording writers: a few threads, each streaming many recordings to disk, so a call
/// costs no thread and no wake-up per frame. Recordings are dealt to the threads in turn;
/// each thread sleeps while it has none.
#[derive(Clone)]
pub struct WriterPool {
    threads: Arc<[Sender<Job>]>,
    next: Arc<AtomicUsize>,
}

impl WriterPool {
    /// Starts `threads` writer threads (at least one). They end once the pool is dropped and
    /// their last recording is finished.
    pub fn new(threads: usize) -> Result<WriterPool, String> {
        let senders = (0..threads.max(1))
            .map(|index| {
                let (tx, rx) = mpsc::channel();
                std::thread::Builder::new()
                    .name(format!("recording-{index}"))
                    .spawn(move || run_writer(rx))
                    .map(|_| tx)
                    .map_err(|e| format!("cannot start a recording writer: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(WriterPool {
            threads: senders.into(),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Starts a recording at `path`: at most `queue` events wait for the writer. `done` is
    /// called with the result on the writer thread once the tap is dropped and the file is
    /// complete (or as soon as the recording fails).
    pub fn start(
        &self,
        id: RecordingId,
        path: PathBuf,
        format: TapFormat,
        rate: u32,
        queue: usize,
        done: Done,
    ) -> Result<RecordingTap, String> {
        let (tx, rx) = mpsc::channel();
        let started = Instant::now();
        let depth = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicU64::new(0));
        let job = Job {
            path,
            format,
            rate,
            started,
            rx,
            depth: depth.clone(),
            dropped: dropped.clone(),
            done,
        };
        let thread = self.next.fetch_add(1, Ordering::Relaxed) % self.threads.len();
        self.threads[thread]
            .send(job)
            .map_err(|_| "the recording writer has stopped".to_string())?;
        Ok(RecordingTap {
            tx,
            depth,
            queue: queue.max(1),
            started,
            dropped,
            id,
        })
    }
}

/// One writer thread: takes new recordings, and every tick writes what each has queued.
fn run_writer(jobs: Receiver<Job>) {
    let mut open: Vec<OpenRecording> = Vec::new();
    let mut pool_gone = false;
    loop {
        let job = if pool_gone {
            if open.is_empty() {
                return;
            }
            std::thread::sleep(WRITER_TICK);
            None
        } else if open.is_empty() {
            match jobs.recv() {
                Ok(job) => Some(job),
                Err(_) => return,
            }
        } else {
            match jobs.recv_timeout(WRITER_TICK) {
                Ok(job) => Some(job),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    pool_gone = true;
                    None
                }
            }
        };
        for job in job
            .into_iter()
            .chain(std::iter::from_fn(|| jobs.try_recv().ok()))
        {
            match OpenRecording::create(job) {
                Ok(recording) => open.push(recording),
                Err((done, e)) => done(Err(e)),
            }
        }
        open.retain_mut(|recording| recording.pump());
    }
}

/// A recording being written: its file, its timeline and the decoders of both channels.
struct OpenRecording {
    path: PathBuf,
    rate: u32,
    started: Instant,
    rx: Receiver<TapEvent>,
    depth: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
    done: Option<Done>,
    /// Taken when the file is finished.
    wav: Option<hound::WavWriter<PageAlignedWriter<File>>>,
    timeline: Timeline,
    caller_decoder: ChannelDecoder,
    agent_decoder: ChannelDecoder,
    caller_resampler: Linear,
    agent_resampler: Linear,
    scratch: Vec<i16>,
    /// One frame as decoded, before resampling.
    decoded: Vec<i16>,
}

impl OpenRecording {
    fn create(job: Job) -> Result<OpenRecording, (Done, String)> {
        let Job {
            path,
            format,
            rate,
            started,
            rx,
            depth,
            dropped,
            done,
        } = job;
        let opened = (|| {
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
            let file = File::create(&path)
                .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            let wav = hound::WavWriter::new(PageAlignedWriter::new(file, FILE_BUFFER), spec)
                .map_err(|e| format!("cannot start the WAV file: {e}"))?;
            Ok::<_, String>((
                wav,
                ChannelDecoder::new(format)?,
                ChannelDecoder::new(format)?,
            ))
        })();
        let (wav, caller_decoder, agent_decoder) = match opened {
            Ok(opened) => opened,
            Err(e) => return Err((done, e)),
        };
        Ok(OpenRecording {
            path,
            rate,
            started,
            rx,
            depth,
            dropped,
            done: Some(done),
            wav: Some(wav),
            timeline: Timeline::new(rate),
            caller_decoder,
            agent_decoder,
            caller_resampler: Linear::new(format.rate(), rate),
            agent_resampler: Linear::new(format.rate(), rate),
            scratch: Vec::new(),
            decoded: Vec::new(),
        })
    }

    fn position(&self, at: Duration) -> u64 {
        (at.as_micros() as u64) * self.rate as u64 / 1_000_000
    }

    /// Takes what is queued and writes what is final; at the end of the call finishes the
    /// file. Answers whether the recording is still open.
    fn pump(&mut self) -> bool {
        match self.take_queued() {
            Ok(true) => true,
            Ok(false) => {
                let result = self.finish();
                self.report(result);
                false
            }
            Err(e) => {
                self.report(Err(e));
                false
            }
        }
    }

    /// Answers false once the tap is gone and everything it sent is written.
    fn take_queued(&mut self) -> Result<bool, String> {
        let open = loop {
            let event = match self.rx.try_recv() {
                Ok(event) => event,
                Err(TryRecvError::Empty) => break true,
                Err(TryRecvError::Disconnected) => break false,
            };
            self.depth.fetch_sub(1, Ordering::AcqRel);
            match event {
                TapEvent::Caller(audio, at) => {
                    self.scratch.clear();
                    self.caller_decoder.decode_into(&audio, &mut self.decoded);
                    self.caller_resampler
                        .process(&self.decoded, &mut self.scratch);
                    let at = self.position(at);
                    self.timeline.caller(&self.scratch, at);
                }
                TapEvent::Agent(audio, at) => {
                    self.scratch.clear();
                    self.agent_decoder.decode_into(&audio, &mut self.decoded);
                    self.agent_resampler
                        .process(&self.decoded, &mut self.scratch);
                    let at = self.position(at);
                    self.timeline.agent(&self.scratch, at);
                }
                TapEvent::Clear(at) => {
                    let at = self.position(at);
                    self.timeline.clear(at);
                }
            }
        };
        let now = self.position(self.started.elapsed());
        let frames = self.timeline.commit(now);
        self.put(frames)?;
        Ok(open)
    }

    fn put(&mut self, frames: Frames) -> Result<(), String> {
        let wav = self
            .wav
            .as_mut()
            .ok_or("the recording is already finished")?;
        // The 16-bit writer fills one buffer for the whole batch and writes it at once.
        let mut samples = wav.get_i16_writer(2 * frames.len() as u32);
        for [l, r] in frames {
            samples.write_sample(l);
            samples.write_sample(r);
        }
        samples
            .flush()
            .map_err(|e| format!("cannot write the recording: {e}"))
    }

    fn finish(&mut self) -> Result<Written, String> {
        let frames = self.timeline.finish();
        self.put(frames)?;
        self.wav
            .take()
            .ok_or("the recording is already finished")?
            .finalize()
            .map_err(|e| format!("cannot finish the recording: {e}"))?;
        let samples = self.timeline.written();
        let bytes = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        Ok(Written {
            path: self.path.clone(),
            bytes,
            duration_ms: (samples * 1000 / self.rate as u64) as i64,
            dropped_frames: self.dropped.load(Ordering::Relaxed),
        })
    }

    fn report(&mut self, result: Result<Written, String>) {
        if let Some(done) = self.done.take() {
            done(result);
        }
    }
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
    use std::path::Path;

    use super::*;

    #[test]
    fn pcm_frames_of_odd_lengths_decode_as_one_stream() {
        let samples: Vec<i16> = (0..100).map(|i| i * 300 - 15_000).collect();
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        let mut decoder = ChannelDecoder::new(TapFormat::Pcm16(16_000)).unwrap();
        let (mut decoded, mut out) = (Vec::new(), Vec::new());
        for frame in [&bytes[..41], &bytes[41..42], &bytes[42..119], &bytes[119..]] {
            decoder.decode_into(frame, &mut out);
            decoded.extend_from_slice(&out);
        }
        assert_eq!(decoded, samples);
    }

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

    fn record(
        pool: &WriterPool,
        path: &Path,
        queue: usize,
    ) -> (RecordingTap, mpsc::Receiver<Result<Written, String>>) {
        let (tx, rx) = mpsc::channel();
        let tap = pool
            .start(
                RecordingId::from("rec_1"),
                path.to_path_buf(),
                TapFormat::Mulaw8k,
                8_000,
                queue,
                Box::new(move |r| tx.send(r).unwrap()),
            )
            .unwrap();
        (tap, rx)
    }

    #[test]
    fn a_recording_is_a_stereo_wav_of_the_calls_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.wav");
        let pool = WriterPool::new(1).unwrap();
        let (tap, rx) = record(&pool, &path, 100);
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
        assert_eq!(written.dropped_frames, 0);
    }

    #[test]
    fn one_thread_writes_many_recordings_each_in_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let pool = WriterPool::new(1).unwrap();
        let calls: Vec<_> = (0..50)
            .map(|i| {
                let path = dir.path().join(format!("{i}.wav"));
                let (tap, rx) = record(&pool, &path, 100);
                (path, tap, rx, i as u8)
            })
            .collect();
        // Each call's caller sends its own byte, 10 frames (200 ms) of it.
        for _ in 0..10 {
            for (_, tap, _, byte) in &calls {
                tap.caller(&Bytes::from(vec![*byte; 160]));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for (path, tap, rx, byte) in calls {
            drop(tap);
            let written = rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
            let samples: Vec<i16> = hound::WavReader::open(&path)
                .unwrap()
                .samples::<i16>()
                .map(Result::unwrap)
                .collect();
            // The call's 200 ms in one piece, with silence around it: the recording runs
            // from the call's start to its end.
            let caller: Vec<i16> = samples.chunks(2).map(|lr| lr[0]).collect();
            let voice = mulaw::decode(byte);
            let first = caller.iter().position(|&s| s == voice).unwrap();
            assert!(caller[first..first + 1_600].iter().all(|&s| s == voice));
            assert!(caller[first + 1_600..].iter().all(|&s| s == 0));
            assert!(caller[..first].iter().all(|&s| s == 0));
            assert_eq!(written.duration_ms, caller.len() as i64 / 8);
        }
    }

    #[test]
    fn past_the_queue_frames_are_dropped_and_counted_and_the_rest_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.wav");
        let pool = WriterPool::new(1).unwrap();
        let (tap, rx) = record(&pool, &path, 5);
        let loud = Bytes::from(vec![mulaw::encode(8_000); 160]);
        // Far faster than the writer's tick: at most five wait at a time. (A tick may still
        // fall inside the burst on a busy machine and make room for a few more.)
        for _ in 0..20 {
            tap.caller(&loud);
        }
        drop(tap);
        let written = rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
        let kept = (written.duration_ms / 20) as u64;
        assert_eq!(
            kept + written.dropped_frames,
            20,
            "every frame is written or counted as dropped: {written:?}"
        );
        assert!(written.dropped_frames >= 5, "{written:?}");
        assert!(kept >= 5, "the first five are always written: {written:?}");
    }

    #[test]
    fn a_file_that_cannot_be_created_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"not a directory").unwrap();
        let pool = WriterPool::new(1).unwrap();
        let (tap, rx) = record(&pool, &blocker.join("x.wav"), 100);
        let error = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap()
            .unwrap_err();
        assert!(error.contains("cannot create"), "{error}");
        // The call goes on; its frames go nowhere.
        tap.caller(&Bytes::from_static(&[0xff; 160]));
        // The pool still records.
        let path = dir.path().join("ok.wav");
        let (tap, rx) = record(&pool, &path, 100);
        tap.caller(&Bytes::from_static(&[0xff; 160]));
        drop(tap);
        assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap().is_ok());
    }
}
