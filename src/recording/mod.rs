//! Call recordings: every phone call (and, when its agent asks, every direct session) is
//! recorded as a two-channel 16-bit WAV, caller on the left and agent on the right, lined up
//! in time ([`timeline`]); 8 kHz for calls, 16 kHz for direct sessions. A pool of [`writer`]
//! threads streams every recording to disk while its call runs, in whole pages
//! ([`page_aligned`]); [`storage`] keeps it locally or in an S3-compatible store and serves
//! it back in byte ranges. The records live in the
//! `TelephonyRegistry`, which takes this module's [`StartRecording`] and
//! [`RecordingFinished`] reports and also deletes recordings past their retention.

pub mod page_aligned;
pub mod storage;
pub mod timeline;
pub mod writer;

use std::sync::Arc;

use actix::Message;

pub use storage::RecordingStorage;
pub use writer::{RecordingTap, TapFormat, WriterPool, Written};

use crate::cluster::drain::{Drain, RecordingHold};
use crate::config::RecordingsConfig;
use crate::ids::{DeveloperId, RecordingId, SessionId};
use crate::store::telephony::{RecordingRow, RecordingStatus};
use crate::supervision::Notifier;
use crate::time::now_ms;

/// Sample rate of phone-call recordings.
pub const PHONE_RATE: u32 = 8_000;
/// Sample rate of direct-session recordings.
pub const DIRECT_RATE: u32 = 16_000;

/// A recording began (fire and forget: the call does not wait for storage).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StartRecording(pub RecordingRow);

/// The writer finished a recording's file (or failed): it is to be published to the
/// configured store and its record completed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordingFinished {
    pub row: RecordingRow,
    pub result: Result<Written, String>,
    /// Released once the record is complete (a stopping server waits for it).
    pub hold: RecordingHold,
}

/// Where recordings report their start and end (the telephony registry).
#[derive(Clone)]
pub struct RecordingReports {
    pub started: Notifier<StartRecording>,
    pub finished: Notifier<RecordingFinished>,
}

/// Starts recordings for the transports.
#[derive(Clone)]
pub struct Recordings {
    config: RecordingsConfig,
    storage: RecordingStorage,
    reports: RecordingReports,
    writers: WriterPool,
    /// Counts recordings until their record is complete, so a stopping server waits for them.
    drain: Arc<Drain>,
}

/// What a recording is of.
#[derive(Debug, Clone)]
pub struct RecordingOf {
    pub session_id: SessionId,
    pub developer_id: DeveloperId,
    pub call_sid: Option<String>,
    pub format: TapFormat,
    pub rate: u32,
}

impl Recordings {
    /// Starts the writer threads.
    pub fn new(
        config: RecordingsConfig,
        storage: RecordingStorage,
        reports: RecordingReports,
        drain: Arc<Drain>,
    ) -> Result<Recordings, String> {
        Ok(Recordings {
            writers: WriterPool::new(config.writer_threads)?,
            config,
            storage,
            reports,
            drain,
        })
    }

    /// Whether recording is on at all.
    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// Starts recording a session; `None` (logged) if the writer cannot start. The row is
    /// written without waiting, so the call never waits for storage.
    pub fn start(&self, of: RecordingOf) -> Option<RecordingTap> {
        let id = RecordingId::new();
        let location = format!("{}/{}.wav", safe(of.developer_id.as_str()), id);
        let row = RecordingRow {
            seq: 0,
            id: id.clone(),
            developer_id: of.developer_id.clone(),
            session_id: of.session_id.clone(),
            call_sid: of.call_sid.clone(),
            sample_rate: of.rate as i32,
            status: RecordingStatus::Recording,
            storage: storage::LOCAL.into(),
            location: location.clone(),
            bytes: 0,
            duration_ms: 0,
            created_at: now_ms(),
            completed_at: None,
        };
        self.reports.started.do_send(StartRecording(row.clone()));
        let finished = self.reports.finished.clone();
        let hold = self.drain.recording();
        let done = Box::new(move |result| {
            finished.do_send(RecordingFinished { row, result, hold });
        });
        match self.writers.start(
            id,
            self.storage.local_path(&location),
            of.format,
            of.rate,
            self.config.queue_frames,
            done,
        ) {
            Ok(tap) => Some(tap),
            Err(e) => {
                tracing::error!(session = %of.session_id, "not recorded: {e}");
                None
            }
        }
    }
}

/// A developer id as one path segment.
fn safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
