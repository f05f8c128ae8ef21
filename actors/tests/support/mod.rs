//! Test harness for sessions: scripted engines, real speech fixtures converted to the wire
//! formats with the crate's own resampler and encoders, a fake Twilio that plays audio in real
//! time and echoes marks, and a recording observer.

#![allow(dead_code)]

pub mod engines;
pub mod fixtures;
pub mod transport;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use switchboard_actors::engine::KnowledgeRetriever;
use switchboard_actors::session::{
    AudioIn, CallSession, ClearLane, OutputQueue, SessionConfig, SessionEngines, SessionHandle,
    SessionObserver, SessionOutput, SessionSummary, TurnRecord,
};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

pub use engines::*;
pub use fixtures::*;
pub use transport::*;

/// Records everything a session reports.
#[derive(Default)]
pub struct RecordingObserver {
    pub turns: Mutex<Vec<TurnRecord>>,
    pub summary: Mutex<Option<SessionSummary>>,
}

impl SessionObserver for RecordingObserver {
    fn turn_completed(&self, _: &str, turn: &TurnRecord) {
        self.turns.lock().expect("not poisoned").push(turn.clone());
    }

    fn session_ended(&self, _: &str, summary: &SessionSummary) {
        *self.summary.lock().expect("not poisoned") = Some(summary.clone());
    }
}

impl Scripted {
    /// The engines as a session takes them.
    pub fn session(&self) -> SessionEngines {
        SessionEngines {
            stt: self.stt.clone(),
            llm: self.llm.clone(),
            tts: self.tts.clone(),
            tools: self.tools.clone(),
            knowledge: self
                .knowledge
                .clone()
                .map(|k| k as Arc<dyn KnowledgeRetriever>),
            turn_end: self.turn_end.clone(),
        }
    }
}

/// A started session with its scripted engines, fake transport and observer.
pub struct Harness {
    pub session: SessionHandle,
    pub engines: Scripted,
    pub observer: Arc<RecordingObserver>,
    pub outputs: mpsc::UnboundedReceiver<Stamped>,
    pub seen: Vec<Stamped>,
    /// Outputs before this index have been matched by `wait_for` already.
    pub cursor: usize,
    pub start: Instant,
    hold: watch::Sender<bool>,
}

impl Harness {
    /// Starts a session over a fake Twilio transport.
    pub fn start(config: SessionConfig, engines: Scripted) -> Self {
        Self::start_with(config, engines, FakeTransportConfig::default())
    }

    pub fn start_with(
        config: SessionConfig,
        engines: Scripted,
        transport: FakeTransportConfig,
    ) -> Self {
        Self::start_full(config, engines, transport, None)
    }

    /// Starts a session whose output queue writes clears through `lane`.
    pub fn start_with_lane(
        config: SessionConfig,
        engines: Scripted,
        lane: Arc<dyn ClearLane>,
    ) -> Self {
        Self::start_full(config, engines, FakeTransportConfig::default(), Some(lane))
    }

    fn start_full(
        config: SessionConfig,
        engines: Scripted,
        transport: FakeTransportConfig,
        lane: Option<Arc<dyn ClearLane>>,
    ) -> Self {
        let (tx, outputs) = mpsc::unbounded_channel();
        let fake = FakeTransport::start(tx, transport);
        // The fake hears the session's outputs in order, as a transport's socket task would,
        // except while the harness holds them (a socket task waiting for its turn).
        let (output, mut queued) = match lane {
            Some(lane) => OutputQueue::with_clear_lane(lane),
            None => OutputQueue::new(),
        };
        let (hold, mut held) = watch::channel(false);
        let listener = fake.clone();
        actix::spawn(async move {
            loop {
                if held.wait_for(|held| !*held).await.is_err() {
                    return;
                }
                let Some(output) = queued.recv().await else {
                    return;
                };
                listener.do_send(Deliver(output));
            }
        });
        let observer = Arc::new(RecordingObserver::default());
        let session = CallSession::start(config, engines.session(), output, observer.clone())
            .expect("valid configuration");
        fake.do_send(Attach(session.addr().clone()));
        Self {
            session,
            engines,
            observer,
            outputs,
            seen: Vec::new(),
            cursor: 0,
            start: Instant::now(),
            hold,
        }
    }

    /// Stops (`true`) or resumes reading the session's output queue.
    pub fn hold_outputs(&self, hold: bool) {
        self.hold.send_replace(hold);
    }

    /// Waits until an output matching `pred` arrives (keeping everything seen).
    pub async fn wait_for(
        &mut self,
        what: &str,
        within: Duration,
        pred: impl Fn(&SessionOutput) -> bool,
    ) -> Stamped {
        if let Some(i) = self.seen[self.cursor..]
            .iter()
            .position(|s| pred(&s.output))
        {
            self.cursor += i + 1;
            return self.seen[self.cursor - 1].clone();
        }
        self.cursor = self.seen.len();
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.outputs.recv()).await {
                Ok(Some(out)) => {
                    self.seen.push(out.clone());
                    self.cursor = self.seen.len();
                    if pred(&out.output) {
                        return out;
                    }
                }
                Ok(None) => panic!("transport closed while waiting for {what}"),
                Err(_) => panic!(
                    "no {what} within {within:?}; seen: {:?}",
                    self.seen
                        .iter()
                        .map(|s| describe(&s.output))
                        .collect::<Vec<_>>()
                ),
            }
        }
    }

    /// Collects outputs for `period` without waiting for anything in particular.
    pub async fn drain_for(&mut self, period: Duration) {
        let deadline = Instant::now() + period;
        while let Ok(Some(out)) = tokio::time::timeout(
            deadline.saturating_duration_since(Instant::now()),
            self.outputs.recv(),
        )
        .await
        {
            self.seen.push(out);
        }
    }

    /// Sends caller audio in real-time-paced frames of `frame_bytes`.
    pub async fn speak(&mut self, audio: &[u8], frame_bytes: usize) {
        self.speak_paced(audio, frame_bytes, 20).await;
    }

    /// Sends caller audio in messages of `chunk_bytes`, one every `chunk_ms` (several frames
    /// in one message, as a transport that read them together forwards them).
    pub async fn speak_paced(&mut self, audio: &[u8], chunk_bytes: usize, chunk_ms: u64) {
        for chunk in audio.chunks(chunk_bytes) {
            self.session
                .addr()
                .do_send(AudioIn(Bytes::copy_from_slice(chunk)));
            tokio::time::sleep(Duration::from_millis(chunk_ms)).await;
            while let Ok(out) = self.outputs.try_recv() {
                self.seen.push(out);
            }
        }
    }

    pub fn turns(&self) -> Vec<TurnRecord> {
        self.observer.turns.lock().expect("not poisoned").clone()
    }

    pub fn summary(&self) -> Option<SessionSummary> {
        self.observer.summary.lock().expect("not poisoned").clone()
    }

    /// Outputs seen so far that match `pred`.
    pub fn count(&self, pred: impl Fn(&SessionOutput) -> bool) -> usize {
        self.seen.iter().filter(|s| pred(&s.output)).count()
    }
}

/// A short description of an output for failure messages.
pub fn describe(output: &SessionOutput) -> String {
    match output {
        SessionOutput::Audio(b) => format!("audio({})", b.len()),
        SessionOutput::Mark(m) => format!("mark({m})"),
        SessionOutput::Clear { .. } => "clear".into(),
        SessionOutput::Event(e) => e.name().to_owned(),
        SessionOutput::Ended => "ended".into(),
    }
}
