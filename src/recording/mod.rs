//! Call recordings: every phone call (and, when its agent asks, every direct session) is
//! recorded as a two-channel 16-bit WAV, caller on the left and agent on the right, lined up
//! in time ([`timeline`]); 8 kHz for calls, 16 kHz for direct sessions. A pool of [`writer`]
//! threads streams every recording to disk while its call runs; [`storage`] keeps it locally or in an
//! S3-compatible store and serves it back in byte ranges. The records live in the
//! `TelephonyRegistry`, which also deletes recordings past their retention.

pub mod storage;
pub mod timeline;
pub mod writer;

use std::sync::Arc;

use actix::Addr;

pub use storage::RecordingStorage;
pub use writer::{RecordingTap, TapFormat, WriterPool};

use crate::cluster::drain::Drain;
use crate::config::RecordingsConfig;
use crate::registry::new_id;
use crate::registry::telephony::{RecordingFinished, StartRecording, TelephonyRegistry};
use crate::store::telephony::{RecordingRow, RECORDING_ACTIVE};
use crate::time::now_ms;

/// Sample rate of phone-call recordings.
pub const PHONE_RATE: u32 = 8_000;
/// Sample rate of direct-session recordings.
pub const DIRECT_RATE: u32 = 16_000;

/// Starts recordings for the transports.
#[derive(Clone)]
pub struct Recordings {
    config: RecordingsConfig,
    storage: RecordingStorage,
    registry: Addr<TelephonyRegistry>,
    writers: WriterPool,
    /// Counts recordings until their record is complete, so a stopping server waits for them.
    drain: Arc<Drain>,
}

/// What a recording is of.
#[derive(Debug, Clone)]
pub struct RecordingOf {
    pub session_id: String,
    pub developer_id: String,
    pub call_sid: Option<String>,
    pub format: TapFormat,
    pub rate: u32,
}

impl Recordings {
    /// Starts the writer threads.
    pub fn new(
        config: RecordingsConfig,
        storage: RecordingStorage,
        registry: Addr<TelephonyRegistry>,
        drain: Arc<Drain>,
    ) -> Result<Recordings, String> {
        Ok(Recordings {
            writers: WriterPool::new(config.writer_threads)?,
            config,
            storage,
            registry,
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
        let id = new_id("rec");
        let location = format!("{}/{}.wav", safe(&of.developer_id), id);
        let row = RecordingRow {
            seq: 0,
            id: id.clone(),
            developer_id: of.developer_id.clone(),
            session_id: of.session_id.clone(),
            call_sid: of.call_sid.clone(),
            sample_rate: of.rate as i32,
            status: RECORDING_ACTIVE.into(),
            storage: storage::LOCAL.into(),
            location: location.clone(),
            bytes: 0,
            duration_ms: 0,
            created_at: now_ms(),
            completed_at: None,
        };
        self.registry.do_send(StartRecording(row.clone()));
        let registry = self.registry.clone();
        let hold = self.drain.recording();
        let done = Box::new(move |result| {
            registry.do_send(RecordingFinished { row, result, hold });
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
