//! The `switchboard` binary: parses the command line and runs the chosen command.

use clap::Parser;
use switchboard::cli::{self, Cli, Command};
use tracing_subscriber::EnvFilter;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("SWITCHBOARD_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(switchboard::observability::log::LossyStderr)
        .log_internal_errors(false)
        .init();
    let cli = Cli::parse();
    let config = cli.config()?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            raise_open_files_limit();
            limit_inference_threads(config.engines.threads_per_job);
            actix_web::rt::System::new().block_on(switchboard::server::serve(config))
        }
        Command::Migrate => runtime()?.block_on(cli::migrate(&config)),
        Command::Keys { command } => runtime()?.block_on(cli::keys(&config, command)),
        Command::Developers { command } => runtime()?.block_on(cli::developers(&config, command)),
        Command::Transcribe(args) => runtime()?.block_on(cli::transcribe(&config, args)),
        Command::Loadtest(args) => {
            raise_open_files_limit();
            runtime()?.block_on(cli::loadtest(args))
        }
    }
}

/// The server runs several inference jobs side by side on its worker pool, so each job keeps
/// to `threads` threads: on a busy machine candle's own threads otherwise wait on each other
/// at every step (measured: a token took 391 ms with two threads beside a build, 36 ms with
/// one). An operator's own `CANDLE_NUM_THREADS` wins.
fn limit_inference_threads(threads: usize) {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        // Set before any other thread exists: nothing reads the environment concurrently.
        std::env::set_var("CANDLE_NUM_THREADS", threads.max(1).to_string());
    }
}

/// Every call holds a socket (two with a vendor recogniser): the usual soft limit of 1,024
/// open files would cap a node far below what it can serve, so the soft limit is raised to
/// the hard one.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open files limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open files limit"),
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}
