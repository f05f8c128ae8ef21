//! The command line: `serve`, `migrate`, operator key and developer (tier, usage, portal
//! phone) management that works beside a running server on the same data dir or database,
//! and `transcribe` for the embedded speech recogniser.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::engines::pool::WorkerPool;
use crate::engines::whisper::WhisperEngine;
use crate::ids::{DeveloperId, KeyId};
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
    /// Manage developers' tiers and see their usage.
    Developers {
        #[command(subcommand)]
        command: DevelopersCommand,
    },
    /// Transcribe an audio file with the embedded Whisper engine; prints the transcript JSON.
    Transcribe(TranscribeArgs),
    /// Drive many concurrent real-time sessions against a running server and report what the
    /// callers experienced. Exits with status 1 when a session failed or the server sent errors.
    Loadtest(crate::loadtest::LoadTestArgs),
}

/// Arguments of `transcribe`.
#[derive(Debug, clap::Args)]
pub struct TranscribeArgs {
    /// An audio file in any common container and codec (WAV, FLAC, MP3, Ogg, ...).
    pub file: PathBuf,
    /// `fast`: greedy decoding on the smallest model that knows the language;
    /// `accurate`: beam search on the multilingual model.
    #[arg(long, value_enum, default_value_t = ModeArg::Accurate)]
    pub mode: ModeArg,
    /// ISO 639-1 code of the spoken language; detected when omitted.
    #[arg(long)]
    pub language: Option<String>,
    /// Word-level timestamps as well as segments.
    #[arg(long)]
    pub words: bool,
}

/// Recognition mode on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    Fast,
    Accurate,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; the raw key is printed alone on the last line of stdout.
    Create {
        /// The developer who will own the key (created if new).
        #[arg(long)]
        developer: DeveloperId,
        #[arg(long, default_value = "Default")]
        name: String,
        /// 1-365; no expiry when omitted.
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..=365))]
        expires_in_days: Option<i64>,
    },
    /// List a developer's live keys (never the raw keys).
    List {
        #[arg(long)]
        developer: DeveloperId,
    },
    /// Revoke a key by id; every server sharing the database refuses it within moments.
    Revoke { key_id: KeyId },
}

#[derive(Debug, Subcommand)]
pub enum DevelopersCommand {
    /// Put a developer on a tier (starter, pro or scale) with no expiry; running servers
    /// pick it up within one metering flush interval.
    SetTier {
        developer_id: DeveloperId,
        tier: String,
    },
    /// Print a developer's usage in the current billing period, as stored (a running server
    /// adds its counts every metering flush interval).
    Usage { developer_id: DeveloperId },
    /// Attach a phone number (E.164) to an existing developer: signing in to the portal with
    /// it then opens that developer's account.
    LinkPhone {
        #[arg(long)]
        developer: DeveloperId,
        /// E.164, e.g. +14155550100.
        #[arg(long)]
        phone: String,
    },
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

/// Runs a `developers` subcommand.
pub async fn developers(config: &Config, command: DevelopersCommand) -> anyhow::Result<()> {
    use crate::billing::period::{self, Clock, SystemClock};
    use crate::store::developers::{self, SubscriptionChange};
    use crate::store::usage;

    let db = open(config).await?;
    match command {
        DevelopersCommand::SetTier { developer_id, tier } => {
            if !crate::billing::TIERS.contains(&tier.as_str()) {
                anyhow::bail!("tier must be one of: {}", crate::billing::TIERS.join(", "));
            }
            let change = SubscriptionChange {
                tier: Some(tier.clone()),
                tier_expires_at: Some(None),
                ..SubscriptionChange::default()
            };
            if !developers::change_subscription(&db, &developer_id, &change).await? {
                anyhow::bail!("no developer with id {developer_id}");
            }
            println!("developer {developer_id} is now on the {tier} tier");
        }
        DevelopersCommand::Usage { developer_id } => {
            let Some(developer) = developers::get(&db, &developer_id).await? else {
                anyhow::bail!("no developer with id {developer_id}");
            };
            let clock = SystemClock {
                offset_ms: config.metering.clock_offset_seconds.saturating_mul(1000),
            };
            let now = clock.now_ms();
            let current = period::period_of(now);
            let lapsed = developer.tier_expires_at.is_some_and(|at| at <= now);
            let tier_name = if lapsed {
                crate::billing::FREE_TIER
            } else {
                &developer.tier
            };
            let tier = config.tier(tier_name);
            let row = usage::get(&db, &developer_id, &current)
                .await?
                .unwrap_or_else(|| usage::UsageRow::empty(&developer_id, &current));
            let limit = tier.monthly_credits + row.carryover;
            let used = row.credits_used();
            let show = crate::billing::pricing::format_credits;
            println!("developer  {developer_id}");
            println!("tier       {tier_name} ({})", tier.display);
            println!(
                "expires    {}",
                iso_opt(developer.tier_expires_at).unwrap_or_else(|| "never".into())
            );
            println!("period     {current}");
            println!(
                "credits    used {} of {} ({} carried over), {} remaining",
                show(used),
                show(limit),
                show(row.carryover),
                show((limit - used).max(0.0))
            );
            println!(
                "breakdown  tts {}  stt {}  llm {}  rag {}",
                show(row.credits_tts),
                show(row.credits_stt),
                show(row.credits_llm),
                show(row.credits_rag)
            );
            println!("requests   {}", row.request_count);
        }
        DevelopersCommand::LinkPhone { developer, phone } => {
            use crate::store::portal::{link_phone, Link};
            let Some(phone) = crate::portal::normalise_phone(&phone) else {
                anyhow::bail!(
                    "--phone must be an E.164 number: + and country code, 8-15 digits \
                     (e.g. +14155550100)"
                );
            };
            match link_phone(&db, &developer, &phone, now_ms()).await? {
                Link::Linked => {
                    println!("{phone} now signs in to the portal as developer {developer}")
                }
                Link::AlreadyLinked => {
                    println!("{phone} already signs in as developer {developer}")
                }
                Link::TakenBy(owner) => anyhow::bail!(
                    "{phone} already signs in as developer {owner}; a number belongs to one \
                     developer"
                ),
                Link::NoSuchDeveloper => anyhow::bail!("no developer with id {developer}"),
            }
        }
    }
    Ok(())
}

/// Runs `transcribe`: decodes and transcribes the file as the speech endpoints do (each voice
/// of a multi-channel recording recognised on its own), on a one-thread worker pool, and
/// prints the transcript as JSON.
pub async fn transcribe(config: &Config, args: TranscribeArgs) -> anyhow::Result<()> {
    use switchboard_actors::engine::{SpeechToText, SttMode, TranscribeOptions};

    use crate::speech::transcription::{transcribe_file, TranscriptionRequest};

    let path = args.file.display().to_string();
    let audio = std::fs::read(&args.file).with_context(|| format!("cannot read {path}"))?;
    let extension = args
        .file
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    // Room in the queue for every voice of the file: the voices of a multi-channel recording
    // are submitted together and run one after the other on the one thread.
    let engine: Arc<dyn SpeechToText> = Arc::new(WhisperEngine::new(
        &config.server.models_dir,
        WorkerPool::new(1, crate::media::pcm::MAX_CHANNELS),
    ));
    let options = TranscribeOptions {
        language: args.language,
        mode: match args.mode {
            ModeArg::Fast => SttMode::Fast,
            ModeArg::Accurate => SttMode::Accurate,
        },
        word_timestamps: args.words,
        ..Default::default()
    };
    let request = TranscriptionRequest {
        options,
        diarize: false,
    };
    let transcript = transcribe_file(engine, audio, extension, request)
        .await
        .with_context(|| format!("cannot transcribe {path}"))?;
    let segments: Vec<serde_json::Value> = transcript
        .segments
        .iter()
        .map(|s| {
            let mut segment = serde_json::json!({
                "start": s.start,
                "end": s.end,
                "text": s.text,
            });
            if let Some(language) = &s.language {
                segment["language"] = language.as_str().into();
            }
            segment
        })
        .collect();
    let mut out = serde_json::json!({
        "text": transcript.text,
        "language": transcript.language,
        "duration": transcript.duration,
        "segments": segments,
    });
    if args.words {
        out["words"] = transcript
            .words
            .iter()
            .map(|w| serde_json::json!({"start": w.start, "end": w.end, "word": w.word}))
            .collect();
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// Runs `loadtest`: prints the summary (text, or JSON with `--json`) and fails when a session
/// failed, the server sent error events, a caller's turn got no answer within
/// `--answer-timeout-ms`, or the callers spoke and not one turn was answered (turns the end of
/// the call cut short are not unanswered, but a run of nothing else served nobody), so scripts
/// can gate on it.
pub async fn loadtest(args: crate::loadtest::LoadTestArgs) -> anyhow::Result<()> {
    let summary = crate::loadtest::run(&args).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.text());
    }
    if summary.sessions.failed > 0 || summary.server_errors > 0 {
        anyhow::bail!(
            "{} of {} sessions failed, {} server errors",
            summary.sessions.failed,
            summary.sessions.target,
            summary.server_errors
        );
    }
    if summary.turns.unanswered > 0 {
        anyhow::bail!(
            "{} of {} spoken turns got no answer within {} ms",
            summary.turns.unanswered,
            summary.turns.spoken,
            args.answer_timeout_ms
        );
    }
    if summary.turns.spoken > 0 && summary.turns.answered == 0 {
        anyhow::bail!(
            "the callers spoke {} turns and none was answered",
            summary.turns.spoken
        );
    }
    Ok(())
}
