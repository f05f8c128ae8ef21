//! The command line: `serve`, `migrate`, and operator key management that works beside a
//! running server on the same data dir or database.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::registry::keys::create_key;
use crate::store::{self, keys, Db};
use crate::time::{iso, iso_opt, now_ms};

#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about = "Real-time voice-agent engine")]
pub struct Cli {
    /// A TOML file layered over the embedded defaults (environment variables still win).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP + WebSocket service (the default).
    Serve,
    /// Bring the database schema up to date, then exit.
    Migrate,
    /// Manage API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; the raw key is printed alone on the last line of stdout.
    Create {
        /// The developer who will own the key (created if new).
        #[arg(long)]
        developer: String,
        #[arg(long, default_value = "Default")]
        name: String,
        /// 1-365; no expiry when omitted.
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..=365))]
        expires_in_days: Option<i64>,
    },
    /// List a developer's live keys (never the raw keys).
    List {
        #[arg(long)]
        developer: String,
    },
    /// Revoke a key by id; every server sharing the database refuses it within moments.
    Revoke { key_id: String },
}

impl Cli {
    pub fn config(&self) -> anyhow::Result<Config> {
        Config::load(self.config.as_deref()).context("invalid configuration")
    }
}

async fn open(config: &Config) -> anyhow::Result<Db> {
    std::fs::create_dir_all(&config.server.data_dir)?;
    Db::open(
        &config.database_url(),
        2,
        config.database.sqlite_busy_timeout_ms,
    )
    .await
}

/// Runs `migrate`.
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.server.data_dir)?;
    store::migrate(
        &config.database_url(),
        config.database.sqlite_busy_timeout_ms,
    )
    .await?;
    println!("database schema is up to date");
    Ok(())
}

/// Runs a `keys` subcommand.
pub async fn keys(config: &Config, command: KeysCommand) -> anyhow::Result<()> {
    let db = open(config).await?;
    match command {
        KeysCommand::Create {
            developer,
            name,
            expires_in_days,
        } => {
            if name.trim().is_empty() || name.chars().count() > 100 {
                anyhow::bail!("--name must be 1-100 characters");
            }
            let issued = create_key(
                &db,
                &config.auth.key_prefix,
                &developer,
                &name,
                expires_in_days,
            )
            .await?;
            println!(
                "Created key {} ({}) for developer {developer}, expires {}. It is shown only once:",
                issued.info.id,
                issued.info.name,
                iso_opt(issued.info.expires_at).unwrap_or_else(|| "never".into())
            );
            println!("{}", issued.raw);
        }
        KeysCommand::List { developer } => {
            let rows = keys::list(&db, &developer, 0, i64::MAX).await?;
            println!(
                "{:<38} {:<14} {:<26} {:<26} NAME",
                "ID", "PREFIX", "CREATED", "EXPIRES"
            );
            for row in rows {
                println!(
                    "{:<38} {:<14} {:<26} {:<26} {}",
                    row.id,
                    row.prefix,
                    iso(row.created_at),
                    iso_opt(row.expires_at).unwrap_or_else(|| "never".into()),
                    row.name
                );
            }
        }
        KeysCommand::Revoke { key_id } => {
            let revoked = keys::revoke_any(&db, &key_id, now_ms()).await?;
            if !revoked {
                anyhow::bail!("no live key with id {key_id}");
            }
            println!("revoked {key_id}");
        }
    }
    Ok(())
}
