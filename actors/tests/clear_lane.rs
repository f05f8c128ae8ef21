//! A barge-in's clear through the transport's clear lane: written the moment the session
//! decides, while the transport's socket task has not yet read the agent audio queued before
//! it, and that audio never reaches the transport afterwards. Real speech over a scripted
//! call, on tokio's paused clock.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::*;
use switchboard_actors::session::{
    AgentProfile, ClearLane, SessionConfig, SessionEvent, SessionOutput,
};

/// A lane that writes (or, when `writes` is false, cannot) and remembers each reply it
/// cleared.
struct Lane {
    writes: bool,
    cleared: Mutex<Vec<u64>>,
}

impl ClearLane for Lane {
    fn clear_now(&self, response_id: u64) -> bool {
        self.cleared.lock().expect("not poisoned").push(response_id);
        self.writes
    }
}

/// What the transport was given between the end of its hold and the clear.
struct HeldThrough {
    /// Outputs read from the queue after the hold, up to and without the clear.
    before_clear: Vec<SessionOutput>,
    clear: SessionOutput,
    /// Replies the lane was asked to clear, by the time the hold ended.
    lane_calls: Vec<u64>,
    /// `audio.clear` events, all outputs of the call.
    audio_clear_events: usize,
}

/// Interrupts a long answer while the transport holds the output queue (a socket task waiting
/// for its turn), then lets it read on.
async fn barge_in_while_the_transport_is_held(writes: bool) -> HeldThrough {
    let long_answer = "Our opening hours are from nine in the morning until six in the evening. \
        On Saturdays we open at ten and close at four. On Sundays and public holidays the \
        office stays closed, but the hotline answers calls all day long.";
    let engines = Scripted::new(
        &["When are you open?", "Thanks, that is all."],
        vec![
            LlmTurn::Say(long_answer.into()),
            LlmTurn::Say("Goodbye.".into()),
        ],
    );
    let lane = Arc::new(Lane {
        writes,
        cleared: Mutex::new(Vec::new()),
    });
    let config = SessionConfig::twilio("CA-lane", AgentProfile::default());
    let mut h = Harness::start_with_lane(config, engines, lane.clone());
    let (first, second) = caller_utterances_mulaw();
    h.speak(&first, 160).await;
    h.speak(&mulaw_silence(800), 160).await;
    h.wait_for("agent audio", Duration::from_secs(5), |o| {
        matches!(
            o,
            SessionOutput::Event(SessionEvent::AgentAudioStart { .. })
        )
    })
    .await;
    h.speak(&mulaw_silence(500), 160).await;

    h.hold_outputs(true);
    // The playback goes on queueing audio and marks that nobody reads.
    h.speak(&mulaw_silence(300), 160).await;
    let held_from = h.seen.len();
    h.speak(&second, 160).await;
    let lane_calls = lane.cleared.lock().expect("not poisoned").clone();
    assert_eq!(h.seen.len(), held_from, "nothing is read while held");
    h.hold_outputs(false);

    let clear = h
        .wait_for("clear", Duration::from_secs(1), |o| {
            matches!(o, SessionOutput::Clear { .. })
        })
        .await;
    let clear_at = h
        .seen
        .iter()
        .position(|s| matches!(s.output, SessionOutput::Clear { .. }))
        .expect("seen");
    let before_clear = h.seen[held_from..clear_at]
        .iter()
        .map(|s| s.output.clone())
        .collect();
    h.drain_for(Duration::from_millis(200)).await;
    let audio_clear_events =
        h.count(|o| matches!(o, SessionOutput::Event(SessionEvent::AudioClear { .. })));
    HeldThrough {
        before_clear,
        clear: clear.output,
        lane_calls,
        audio_clear_events,
    }
}

fn audio_and_marks(outputs: &[SessionOutput]) -> usize {
    outputs
        .iter()
        .filter(|o| matches!(o, SessionOutput::Audio(_) | SessionOutput::Mark(_)))
        .count()
}

#[actix::test]
async fn a_barge_in_is_cleared_through_the_lane_before_the_transport_reads_the_queue() {
    tokio::time::pause();
    let lane = barge_in_while_the_transport_is_held(true).await;
    // Written while the transport was still held, for the reply being spoken (the first: the
    // call has no greeting).
    assert_eq!(lane.lane_calls, vec![1]);
    assert!(
        matches!(
            lane.clear,
            SessionOutput::Clear {
                written_at: Some(_)
            }
        ),
        "{:?}",
        lane.clear
    );
    // The audio queued before the clear was cleared at the client: none of it is sent.
    assert_eq!(
        audio_and_marks(&lane.before_clear),
        0,
        "{:?}",
        lane.before_clear.iter().map(describe).collect::<Vec<_>>()
    );
    // The lane's write is the client's `audio.clear`: no second one is queued.
    assert_eq!(lane.audio_clear_events, 0);
}

/// The control: a lane that cannot write leaves the clear where it was queued, behind the
/// audio queued before it, and the transport writes it as before.
#[actix::test]
async fn a_lane_that_cannot_write_leaves_the_clear_in_its_place() {
    tokio::time::pause();
    let lane = barge_in_while_the_transport_is_held(false).await;
    assert_eq!(lane.lane_calls, vec![1]);
    assert!(
        matches!(lane.clear, SessionOutput::Clear { written_at: None }),
        "{:?}",
        lane.clear
    );
    assert!(
        audio_and_marks(&lane.before_clear) > 0,
        "the hold queued agent audio: {:?}",
        lane.before_clear.iter().map(describe).collect::<Vec<_>>()
    );
    assert_eq!(lane.audio_clear_events, 1);
}
