//! The `switchboard` binary: parses the command line and runs the chosen command.

use clap::Parser;
use switchboard::cli::{self, Cli, Command};
use tracing_subscriber::EnvFilter;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("SWITCHBOARD_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let config = cli.config()?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => actix_web::rt::System::new().block_on(switchboard::server::serve(config)),
        Command::Migrate => runtime()?.block_on(cli::migrate(&config)),
        Command::Keys { command } => runtime()?.block_on(cli::keys(&config, command)),
        Command::Transcribe(args) => runtime()?.block_on(cli::transcribe(&config, args)),
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}
