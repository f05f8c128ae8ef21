//! The service's log: tracing events go to standard error, and a write that fails (a full
//! disk under a redirected log, a closed pipe) loses that line and is counted
//! (`switchboard_log_lines_lost_total`). It never reaches the code that logged: an actor
//! that logs on a full disk keeps running.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use tracing_subscriber::fmt::MakeWriter;

static LINES_LOST: AtomicU64 = AtomicU64::new(0);

/// Log writes that failed since the process started.
pub fn lines_lost() -> u64 {
    LINES_LOST.load(Ordering::Relaxed)
}

/// Standard error for the tracing subscriber, losing (and counting) what cannot be written.
#[derive(Debug, Clone, Copy, Default)]
pub struct LossyStderr;

impl<'a> MakeWriter<'a> for LossyStderr {
    type Writer = LossyWriter<io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        LossyWriter(io::stderr())
    }
}

/// A writer whose failures are counted and swallowed.
#[derive(Debug)]
pub struct LossyWriter<W>(pub W);

impl<W: Write> Write for LossyWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.0.write(buf) {
            Ok(written) => Ok(written),
            Err(_) => {
                LINES_LOST.fetch_add(1, Ordering::Relaxed);
                // Claim the whole line: a retry would fail the same way.
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// Prints a line to standard output (the listening address, a first key) without panicking
/// when standard output is gone.
pub fn say(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_is_counted_and_swallowed() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
        let Ok(full) = full else { return };
        let before = lines_lost();
        let mut writer = LossyWriter(full);
        writer
            .write_all(b"a line that cannot be written\n")
            .expect("a lost line is not an error");
        writer.flush().expect("flush is not an error");
        assert!(lines_lost() > before);
    }
}
