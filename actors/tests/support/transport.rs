//! A fake transport that behaves like Twilio: it "plays" agent audio in real time, echoes
//! each mark once the audio before it has played, and on `clear` drops the queued audio and
//! echoes every pending mark at once. It can also loop the agent's audio back as caller audio
//! (an open speaker next to the microphone) for the echo-gate test.

use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use switchboard_actors::session::{AudioIn, CallSession, PlaybackMark, SessionOutput};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// An output with the time it arrived.
#[derive(Debug, Clone)]
pub struct Stamped {
    pub at: Instant,
    pub output: SessionOutput,
}

/// How the fake transport behaves.
#[derive(Debug, Clone, Copy, Default)]
pub struct FakeTransportConfig {
    /// Echo marks (Twilio does).
    pub no_marks: bool,
    /// Loop agent PCM16 audio back to the session attenuated by this many dB.
    pub echo_db: Option<f32>,
}

/// One session output, delivered to the fake as its socket task would hand it on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Deliver(pub SessionOutput);

/// Gives the fake transport its session.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Attach(pub Addr<CallSession>);

pub struct FakeTransport {
    tx: mpsc::UnboundedSender<Stamped>,
    config: FakeTransportConfig,
    session: Option<Addr<CallSession>>,
    play_until: Instant,
    pending_marks: Vec<(u64, String)>,
    generation: u64,
}

impl FakeTransport {
    pub fn start(tx: mpsc::UnboundedSender<Stamped>, config: FakeTransportConfig) -> Addr<Self> {
        FakeTransport {
            tx,
            config,
            session: None,
            play_until: Instant::now(),
            pending_marks: Vec::new(),
            generation: 0,
        }
        .start()
    }
}

impl Actor for FakeTransport {
    type Context = Context<Self>;
}

impl Handler<Attach> for FakeTransport {
    type Result = ();

    fn handle(&mut self, msg: Attach, _: &mut Self::Context) {
        self.session = Some(msg.0);
    }
}

impl Handler<Deliver> for FakeTransport {
    type Result = ();

    fn handle(&mut self, Deliver(msg): Deliver, ctx: &mut Self::Context) {
        let now = Instant::now();
        let _ = self.tx.send(Stamped {
            at: now,
            output: msg.clone(),
        });
        match msg {
            SessionOutput::Audio(bytes) => {
                let start = self.play_until.max(now);
                self.play_until = start + Duration::from_millis(20);
                if let Some(db) = self.config.echo_db {
                    let gain = 10f32.powf(-db / 20.0);
                    let mut echoed = Vec::with_capacity(bytes.len());
                    for pair in bytes.chunks_exact(2) {
                        let s = i16::from_le_bytes([pair[0], pair[1]]) as f32 * gain;
                        echoed.extend_from_slice(&(s as i16).to_le_bytes());
                    }
                    let echoed = Bytes::from(echoed);
                    let generation = self.generation;
                    ctx.run_later(start.saturating_duration_since(now), move |act, _| {
                        if act.generation == generation {
                            if let Some(s) = act.session.as_ref() {
                                s.do_send(AudioIn(echoed));
                            }
                        }
                    });
                }
            }
            SessionOutput::Mark(name) => {
                if self.config.no_marks {
                    return;
                }
                let generation = self.generation;
                self.pending_marks.push((generation, name.clone()));
                ctx.run_later(
                    self.play_until.saturating_duration_since(now),
                    move |act, _| {
                        if act.generation != generation {
                            return;
                        }
                        act.pending_marks.retain(|(_, n)| *n != name);
                        if let Some(s) = act.session.as_ref() {
                            s.do_send(PlaybackMark { name });
                        }
                    },
                );
            }
            SessionOutput::Clear { .. } => {
                self.generation += 1;
                self.play_until = now;
                for (_, name) in self.pending_marks.drain(..) {
                    if let Some(s) = self.session.as_ref() {
                        s.do_send(PlaybackMark { name });
                    }
                }
            }
            SessionOutput::Event(_) | SessionOutput::Ended => {}
        }
    }
}
