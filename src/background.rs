//! The scheduling priority of the server's background threads. The threads that carry live
//! audio (the HTTP and WebSocket workers, where every session runs) keep the process's
//! priority. Threads whose work can wait a moment (model inference and the search-graph
//! builders, whose jobs wait in bounded queues) lower their own priority when they start, by
//! [`BackgroundPriority::nice`] steps, so that on a busy machine the kernel runs a caller's
//! frame, a barge-in's `clear` or the next 20 ms of an answer first, and the background work
//! takes the CPU that is left. Only the background threads change: lowering a thread's own
//! priority needs no privilege.
//!
//! The recording writers stay at the workers' priority: their work grows with every second
//! of live audio, and a writer that yields on a saturated machine falls behind while each
//! call's queued frames grow in memory (measured: 529 KB per session at 1,000 calls, against
//! 250-280 KB at the same priority).

use std::io;

/// How far below the real-time workers the background threads run (`server.background_nice`,
/// read from the configuration as its nice steps and refused there when out of range).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "i32")]
pub struct BackgroundPriority {
    nice: i32,
}

impl BackgroundPriority {
    /// The highest nice value: the thread runs only when nothing else wants the CPU.
    pub const MAX_NICE: i32 = 19;

    /// `nice` steps below the process's own priority, 0 (the same) to [`Self::MAX_NICE`].
    pub fn new(nice: i32) -> Result<Self, String> {
        if !(0..=Self::MAX_NICE).contains(&nice) {
            return Err(format!(
                "server.background_nice must be 0 to {}, not {nice}",
                Self::MAX_NICE
            ));
        }
        Ok(Self { nice })
    }

    /// The same priority as the real-time workers.
    pub const fn same() -> Self {
        Self { nice: 0 }
    }

    /// Nice steps below the process's priority.
    pub fn nice(self) -> i32 {
        self.nice
    }

    /// Lowers the calling thread's priority. Called by each background thread as it starts;
    /// a failure is logged and the thread goes on at the process's priority.
    pub fn apply_to_current_thread(self) {
        if self.nice == 0 {
            return;
        }
        if let Err(e) = lower_current_thread(self.nice) {
            tracing::warn!(error = %e, nice = self.nice, "could not lower a background thread's priority");
        }
    }
}

impl TryFrom<i32> for BackgroundPriority {
    type Error = String;

    fn try_from(nice: i32) -> Result<Self, String> {
        Self::new(nice)
    }
}

/// Adds `steps` to the calling thread's nice value (capped at 19).
#[cfg(target_os = "linux")]
fn lower_current_thread(steps: i32) -> io::Result<()> {
    // On Linux the nice value belongs to each thread: `PRIO_PROCESS` with the thread's own id
    // changes that thread alone.
    // SAFETY: gettid takes nothing and cannot fail.
    let tid = unsafe { libc::gettid() } as libc::id_t;
    // getpriority may answer -1 as a value: errno tells an error from it.
    nix::errno::Errno::clear();
    // SAFETY: getpriority and setpriority take plain integers and touch no memory of ours.
    let current = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
    if current == -1 && nix::errno::Errno::last_raw() != 0 {
        return Err(io::Error::last_os_error());
    }
    let wanted = (current + steps).min(BackgroundPriority::MAX_NICE);
    // SAFETY: as above.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, wanted) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Elsewhere the nice value is the whole process's: background threads keep it.
#[cfg(not(target_os = "linux"))]
fn lower_current_thread(_steps: i32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice_of_current_thread() -> i32 {
        // SAFETY: gettid takes nothing and cannot fail.
        let tid = unsafe { libc::gettid() };
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Field 19 is the nice value; fields are counted after the command name's `)`.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        fields[16].parse().unwrap()
    }

    #[test]
    fn a_background_thread_lowers_its_own_priority_and_no_other() {
        let before = nice_of_current_thread();
        let lowered = std::thread::spawn(|| {
            BackgroundPriority::new(7)
                .unwrap()
                .apply_to_current_thread();
            nice_of_current_thread()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (before + 7).min(BackgroundPriority::MAX_NICE));
        assert_eq!(nice_of_current_thread(), before);
    }

    #[test]
    fn the_same_priority_changes_nothing() {
        let kept = std::thread::spawn(|| {
            let before = nice_of_current_thread();
            BackgroundPriority::same().apply_to_current_thread();
            (before, nice_of_current_thread())
        })
        .join()
        .unwrap();
        assert_eq!(kept.0, kept.1);
    }

    #[test]
    fn a_nice_value_out_of_range_is_refused() {
        assert!(BackgroundPriority::new(-1).is_err());
        assert!(BackgroundPriority::new(20).is_err());
        assert_eq!(BackgroundPriority::new(19).unwrap().nice(), 19);
    }
}
