//! One simulated caller: opens a session, listens to the greeting, then speaks a turn, waits
//! for the answer and listens to it, again and again until its time is up, sometimes talking
//! over the agent (barge-in). Its playback clock plays agent audio at real time as a phone or a
//! browser would, answers marks when their audio has played, and counts frames that arrived
//! after the moment they should have started playing.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::Message;

use super::arrival::Arrivals;
use super::protocol::{Inbound, Protocol};
use super::report::{Cleared, Live, SessionReport};
use super::speech::{CallerSpeech, FRAME_MS};

/// How long a frame may arrive after its playback slot before it counts as late: the same
/// threshold the server counts its own late frames by.
pub const LATE_FRAME_MS: f64 = switchboard_actors::session::SENT_LATE_MS as f64;

/// What a caller does.
#[derive(Debug, Clone)]
pub struct Script {
    /// How long the caller stays on the line.
    pub duration: Duration,
    /// Silence after the agent's answer has played before the caller speaks again.
    pub pause: Duration,
    /// Every n-th turn the caller talks over the answer (0: never).
    pub barge_in_every: u32,
    /// How much of the answer plays before the caller talks over it.
    pub barge_in_after: Duration,
    /// A turn with no answer within this time counts as unanswered.
    pub answer_timeout: Duration,
    /// How long after the socket opened the caller's first frame goes out, within one frame
    /// period: see [`frame_phase`].
    pub frame_phase: Duration,
}

/// Where caller number `caller` puts its frames within the 20 ms frame period. Independent
/// calls send theirs at unrelated moments, so a server sees their frames spread evenly over
/// the period. Simulated callers that all started their clocks on one schedule would not be:
/// a ramp whose step is a whole number of frames (60 s over 1,000 callers is 60 ms) put the
/// frames of most callers within the same 3 ms of every period (measured: 60% of 1,000
/// callers), a burst every 20 ms that neither a phone network nor browsers ever send. Each
/// caller therefore delays its first frame by the fractional part of `caller` times the
/// golden ratio, in frame periods: any number of consecutive callers spread evenly over the
/// period, whatever the ramp and however long each setup took.
pub fn frame_phase(caller: u64) -> Duration {
    const GOLDEN_RATIO_FRACTION: f64 = 0.618_033_988_749_894_9;
    let fraction = (caller as f64 * GOLDEN_RATIO_FRACTION).fract();
    Duration::from_secs_f64(fraction * FRAME_MS as f64 / 1000.0)
}

/// Agent audio as the caller hears it.
struct Playback {
    /// When the audio received so far has finished playing.
    busy_until: Instant,
    /// Marks waiting for the audio before them to play, with when that is.
    marks: VecDeque<(String, Instant)>,
    /// Audio has started arriving for the current answer.
    in_answer: bool,
}

impl Playback {
    fn new(now: Instant) -> Self {
        Self {
            busy_until: now,
            marks: VecDeque::new(),
            in_answer: false,
        }
    }

    /// Audio of `ms` arrived at `now`; answers how late it was for its playback slot.
    fn receive(&mut self, ms: f64, now: Instant) -> f64 {
        let late = if self.in_answer && now > self.busy_until {
            (now - self.busy_until).as_secs_f64() * 1000.0
        } else {
            0.0
        };
        self.in_answer = true;
        self.busy_until = self.busy_until.max(now) + Duration::from_secs_f64(ms / 1000.0);
        late
    }

    fn playing(&self, now: Instant) -> bool {
        now < self.busy_until
    }

    fn clear(&mut self, now: Instant) -> Vec<String> {
        self.busy_until = now;
        self.in_answer = false;
        self.marks.drain(..).map(|(name, _)| name).collect()
    }

    fn played_marks(&mut self, now: Instant) -> Vec<String> {
        let mut played = Vec::new();
        while self.marks.front().is_some_and(|(_, at)| *at <= now) {
            played.extend(self.marks.pop_front().map(|(name, _)| name));
        }
        played
    }
}

/// Where the caller is in the conversation.
enum Phase {
    /// Listening to the greeting.
    Greeting,
    /// Speaking frame `next` of the utterance, over the agent's answer when `barge_in`.
    Speaking { next: usize, barge_in: bool },
    /// Silent after speaking, waiting for and listening to the answer.
    Listening {
        spoke_until: Instant,
        answered_at: Option<Instant>,
        barge_in: bool,
    },
}

/// Runs one caller on an open socket until its time is up or the server hangs up;
/// `arrivals` tells when what the socket read reached it.
pub async fn converse<P: Protocol>(
    mut socket: super::Socket,
    arrivals: Arc<Arrivals>,
    mut protocol: P,
    speech: CallerSpeech,
    script: Script,
    live: Arc<Live>,
    report: &mut SessionReport,
) {
    let opened = Instant::now();
    for message in protocol.opening() {
        if socket.send(message).await.is_err() {
            report.fail("the socket closed during the opening");
            return;
        }
    }
    let mut playback = Playback::new(opened);
    let mut phase = Phase::Greeting;
    let mut turns = 0u32;
    // A barge-in waiting for its clear: when its speech started, and how far behind that
    // speech's own schedule the caller has sent it at worst so far.
    let mut pending_clear: Option<(Instant, f64)> = None;
    let mut tick =
        tokio::time::interval_at(opened + script.frame_phase, Duration::from_millis(FRAME_MS));
    tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let end = opened + script.duration;

    loop {
        tokio::select! {
            due = tick.tick() => {
                // `due`: when this frame was due on the caller's real-time schedule.
                let now = Instant::now();
                // How far behind that schedule the caller's own audio is: the load generator's
                // health, not the server's.
                report.send_lag_ms = report.send_lag_ms.max(ms_since(due, now));
                if now >= end {
                    // A barge-in the end of the call cut short was never measured.
                    if pending_clear.is_some() {
                        report.barge_ins -= 1;
                    }
                    let _ = socket.send(protocol.hangup()).await;
                    let _ = socket.close(None).await;
                    report.completed = true;
                    return;
                }
                for name in playback.played_marks(now) {
                    if let Some(answer) = protocol.mark_played(&name) {
                        if socket.send(answer).await.is_err() {
                            report.fail("the socket closed");
                            return;
                        }
                    }
                }
                let frame = match &mut phase {
                    Phase::Speaking { next, barge_in } => {
                        // A barge-in starts when its first frame was due, not when a busy
                        // generator got to it: the frames after it keep to the schedule, so
                        // timing from a late first frame would credit the server with the
                        // generator's delay. That delay is counted as caller lag instead.
                        // The first frame is always the quiet lead-in before the speech
                        // (`CallerSpeech`), but a frame goes out at the start of its slot, 20 ms
                        // before a phone could send it (when its audio is complete): its due
                        // time is when the speech in the next frame begins on the caller's
                        // side. Timing from the first frame of speech instead measured 20 ms
                        // less than a phone would see.
                        if *next == 0 && *barge_in {
                            pending_clear = Some((due, 0.0));
                        }
                        if let Some((started, lag)) = &mut pending_clear {
                            let due = *started + Duration::from_millis(FRAME_MS * *next as u64);
                            *lag = lag.max(ms_since(due, now));
                        }
                        let frame = speech.frames[*next].clone();
                        *next += 1;
                        frame
                    }
                    _ => speech.silence.as_ref().clone(),
                };
                if socket.send(protocol.audio(&frame)).await.is_err() {
                    report.fail("the socket closed while the caller spoke");
                    return;
                }
                phase = advance(phase, &script, &speech, &mut playback, &mut turns, report, &live, now, opened);
            }
            message = socket.next() => {
                let now = Instant::now();
                let message = match message {
                    Some(Ok(message)) => message,
                    Some(Err(e)) => { report.fail(&format!("socket error: {e}")); return; }
                    None => { report.fail("the server closed the socket"); return; }
                };
                if let Message::Close(frame) = &message {
                    let reason = frame.as_ref().map(|f| f.reason.to_string()).unwrap_or_default();
                    report.fail(&format!("the server closed the socket {reason}"));
                    return;
                }
                match protocol.inbound(&message) {
                    Inbound::Audio(ms) => {
                        let late = playback.receive(ms, now);
                        report.frames += 1;
                        report.max_late_ms = report.max_late_ms.max(late);
                        if late > LATE_FRAME_MS {
                            report.late_frames += 1;
                        }
                        match &mut phase {
                            Phase::Greeting if report.first_response_ms.is_none() => {
                                report.first_response_ms = Some(ms_since(opened, now));
                            }
                            Phase::Listening { spoke_until, answered_at: answered @ None, .. } => {
                                *answered = Some(now);
                                report.turn_latencies_ms.push(ms_since(*spoke_until, now));
                                live.answered.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {}
                        }
                    }
                    Inbound::Mark(name) => {
                        let at = playback.busy_until.max(now);
                        playback.marks.push_back((name, at));
                    }
                    Inbound::Clear => {
                        for name in playback.clear(now) {
                            if let Some(answer) = protocol.mark_played(&name) {
                                let _ = socket.send(answer).await;
                            }
                        }
                        if let Some((started, lag)) = pending_clear.take() {
                            // The clear reached the socket no later than the latest read's
                            // last segment did.
                            let arrived = arrivals.last().map_or(now, |at| at.clamp(started, now));
                            report.clears.push(Cleared {
                                after_ms: ms_since(started, now),
                                caller_lag_ms: lag,
                                read_lag_ms: ms_since(arrived, now),
                            });
                        }
                    }
                    Inbound::Error(e) => {
                        report.server_errors += 1;
                        live.errors.fetch_add(1, Ordering::Relaxed);
                        report.last_error = Some(e);
                    }
                    Inbound::TurnMetrics { latency_ms, engine_ms } => {
                        report.platform_ms.push(latency_ms.saturating_sub(engine_ms) as f64);
                    }
                    Inbound::Other => {}
                }
            }
        }
    }
}

fn ms_since(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1000.0
}

/// The caller's next step after a frame was sent at `now`.
#[allow(clippy::too_many_arguments)]
fn advance(
    phase: Phase,
    script: &Script,
    speech: &CallerSpeech,
    playback: &mut Playback,
    turns: &mut u32,
    report: &mut SessionReport,
    live: &Live,
    now: Instant,
    opened: Instant,
) -> Phase {
    let speak = |barge_in: bool| Phase::Speaking { next: 0, barge_in };
    match phase {
        Phase::Greeting => {
            let heard_it = report.first_response_ms.is_some() && !playback.playing(now);
            let waited_enough = now - opened > script.answer_timeout;
            if (heard_it && now - playback.busy_until >= script.pause) || waited_enough {
                playback.in_answer = false;
                speak(false)
            } else {
                Phase::Greeting
            }
        }
        Phase::Speaking { next, .. } if next >= speech.frames.len() => {
            *turns += 1;
            report.turns += 1;
            live.turns.fetch_add(1, Ordering::Relaxed);
            playback.in_answer = false;
            Phase::Listening {
                spoke_until: now,
                answered_at: None,
                barge_in: script.barge_in_every > 0 && turns.is_multiple_of(script.barge_in_every),
            }
        }
        speaking @ Phase::Speaking { .. } => speaking,
        Phase::Listening {
            spoke_until,
            answered_at: None,
            barge_in,
        } => {
            if now - spoke_until > script.answer_timeout {
                report.unanswered += 1;
                speak(false)
            } else {
                Phase::Listening {
                    spoke_until,
                    answered_at: None,
                    barge_in,
                }
            }
        }
        Phase::Listening {
            spoke_until,
            answered_at: Some(answered),
            barge_in,
        } => {
            if barge_in && now - answered >= script.barge_in_after && playback.playing(now) {
                report.barge_ins += 1;
                speak(true)
            } else if !playback.playing(now) && now - playback.busy_until >= script.pause {
                speak(false)
            } else {
                Phase::Listening {
                    spoke_until,
                    answered_at: Some(answered),
                    barge_in,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_callers_spread_their_frames_evenly_over_the_period() {
        for (first, count) in [(0u64, 1_000u64), (137, 300), (500, 20)] {
            let mut per_ms = [0u32; FRAME_MS as usize];
            for caller in first..first + count {
                let phase = frame_phase(caller);
                assert!(phase < Duration::from_millis(FRAME_MS), "{phase:?}");
                per_ms[phase.as_millis() as usize] += 1;
            }
            let even = count as f64 / FRAME_MS as f64;
            let allowed = (even * 0.1).max(2.0);
            for (ms, n) in per_ms.iter().enumerate() {
                assert!(
                    (*n as f64 - even).abs() <= allowed,
                    "callers {first}..{}: {n} in ms {ms} of the period, {even} expected: {per_ms:?}",
                    first + count
                );
            }
        }
    }
}
