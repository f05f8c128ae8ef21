//! Storage: one query layer over SQLite (the embedded default) and PostgreSQL, chosen by the
//! database URL. Queries are written once and expanded for each backend by [`db_run!`] and
//! [`db_tx!`]; migrations are embedded per backend and run at start-up.

pub mod agents;
pub mod campaigns;
pub mod collections;
pub mod conversations;
mod crud;
pub mod developers;
pub mod documents;
pub mod instances;
pub mod jobs;
pub mod keys;
pub mod portal;
pub mod provider_keys;
pub mod provision;
pub mod rate_limits;
pub mod schema;
pub mod sessions;
pub mod status;
pub mod telephony;
pub mod usage;
pub mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::{Connection, QueryResult, RunQueryDsl as _, SqliteConnection};
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");
/// Serialises schema migrations of several nodes starting at once on one PostgreSQL.
const MIGRATION_LOCK_ID: i64 = 0x5357_4254_4348;

pub type SqliteConn = SyncConnectionWrapper<SqliteConnection>;

/// A storage failure, as the layers above need to tell them apart.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule was broken (duplicate id, duplicate key hash).
    #[error("{0}")]
    Conflict(String),
    /// No connection could be had (pool exhausted, server down).
    #[error("{0}")]
    Unavailable(String),
    /// Any other query failure.
    #[error("{0}")]
    Query(String),
    /// The caller's own check refused the row a write would have left; the write was rolled
    /// back.
    #[error("{0}")]
    Refused(String),
}

impl From<DieselError> for StoreError {
    fn from(err: DieselError) -> StoreError {
        match err {
            DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
                StoreError::Conflict(info.message().to_string())
            }
            DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, info) => {
                StoreError::Unavailable(info.message().to_string())
            }
            other => StoreError::Query(other.to_string()),
        }
    }
}

impl StoreError {
    /// Maps a pool failure (timeout, connection refused) to `Unavailable`.
    pub fn pool(err: impl std::fmt::Display) -> StoreError {
        StoreError::Unavailable(err.to_string())
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The connection pool of whichever backend the URL chose.
#[derive(Clone)]
pub enum Db {
    Sqlite {
        pool: Pool<SqliteConn>,
        /// SQLite allows one writer: transactions of this process take turns here, and each
        /// begins IMMEDIATE, instead of failing with SQLITE_BUSY when a read lock must be
        /// upgraded.
        write_lock: Arc<tokio::sync::Mutex<()>>,
    },
    Postgres {
        pool: Pool<AsyncPgConnection>,
    },
}

/// Which backend a database URL selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn of(url: &str) -> Backend {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            Backend::Sqlite
        }
    }
}

/// Runs `$body` with `$conn` bound to a pooled connection of the active backend. The body
/// is written once and compiled for each backend; it must evaluate to a `StoreResult`.
#[macro_export]
macro_rules! db_run {
    ($db:expr, |$conn:ident| $body:expr) => {{
        match $db {
            $crate::store::Db::Sqlite { pool, .. } => {
                let mut pooled = pool.get().await.map_err($crate::store::StoreError::pool)?;
                let $conn: &mut $crate::store::SqliteConn = &mut pooled;
                $body
            }
            $crate::store::Db::Postgres { pool } => {
                let mut pooled = pool.get().await.map_err($crate::store::StoreError::pool)?;
                let $conn: &mut diesel_async::AsyncPgConnection = &mut pooled;
                $body
            }
        }
    }};
}

/// Like [`db_run!`], inside one transaction: committed when the body returns `Ok`, rolled
/// back on `Err`.
#[macro_export]
macro_rules! db_tx {
    ($db:expr, |$conn:ident| $body:expr) => {{
        use diesel_async::AsyncConnection as _;
        match $db {
            $crate::store::Db::Sqlite { pool, write_lock } => {
                let _writer = write_lock.lock().await;
                let mut pooled = pool.get().await.map_err($crate::store::StoreError::pool)?;
                let conn: &mut $crate::store::SqliteConn = &mut pooled;
                // BEGIN IMMEDIATE: the transaction holds SQLite's write lock from its first
                // statement, so a single-statement write that commits between its reads and
                // its writes (a key's last use, a usage flush) makes it wait its turn (busy
                // timeout) instead of failing at once with SQLITE_BUSY_SNAPSHOT.
                conn.immediate_transaction::<_, $crate::store::StoreError, _>(async |$conn| $body)
                    .await
            }
            $crate::store::Db::Postgres { pool } => {
                let mut pooled = pool.get().await.map_err($crate::store::StoreError::pool)?;
                let conn: &mut diesel_async::AsyncPgConnection = &mut pooled;
                conn.transaction::<_, $crate::store::StoreError, _>(async |$conn| $body)
                    .await
            }
        }
    }};
}

/// Like [`db_run!`], with every read of `body` seeing the store as of one moment: a
/// read-only `REPEATABLE READ` transaction on PostgreSQL, a deferred transaction on SQLite
/// (in WAL mode its snapshot is taken at the first read and kept to the end, and it never
/// holds up the writer). For what is read in several queries and must agree with itself,
/// such as a record whose parts are written together.
#[macro_export]
macro_rules! db_snapshot {
    ($db:expr, |$conn:ident| $body:expr) => {{
        use diesel_async::AsyncConnection as _;
        match $db {
            $crate::store::Db::Sqlite { pool, .. } => {
                let mut pooled = pool.get().await.map_err($crate::store::StoreError::pool)?;
                let conn: &mut $crate::store::SqliteConn = &mut pooled;
                conn.transaction::<_, $crate::store::StoreError, _>(async |$conn| $body)
                    .await
            }
            $crate::store::Db::Postgres { pool } => {
                let mut pooled = pool.get().await.map_err($crate::store::StoreError::pool)?;
                let conn: &mut diesel_async::AsyncPgConnection = &mut pooled;
                conn.build_transaction()
                    .read_only()
                    .repeatable_read()
                    .run::<_, $crate::store::StoreError, _>(async |$conn| $body)
                    .await
            }
        }
    }};
}

/// Runs `body` as one IMMEDIATE transaction on a pooled SQLite connection, from `BEGIN` to
/// `COMMIT` in a single trip to a blocking thread. [`db_tx!`] makes a trip per statement,
/// each waking a blocking thread and then the caller's arbiter, and holds SQLite's write lock
/// across all of them: for the hot writes of many statements (session records) this is one
/// wake-up each way and the lock is held only while the statements run.
pub async fn sqlite_transaction_in_one_trip<R: Send + 'static>(
    pool: &Pool<SqliteConn>,
    write_lock: &tokio::sync::Mutex<()>,
    body: impl FnOnce(&mut SqliteConnection) -> QueryResult<R> + Send + 'static,
) -> StoreResult<R> {
    let _writer = write_lock.lock().await;
    let mut pooled = pool.get().await.map_err(StoreError::pool)?;
    let conn: &mut SqliteConn = &mut pooled;
    conn.spawn_blocking(move |conn| conn.immediate_transaction(body))
        .await
        .map_err(StoreError::from)
}

impl Db {
    /// Runs pending migrations, then opens the pool. Blocking: call before serving.
    pub async fn open(url: &str, pool_size: usize, busy_timeout_ms: u64) -> anyhow::Result<Db> {
        migrate(url, busy_timeout_ms).await?;
        Db::connect(url, pool_size, busy_timeout_ms)
    }

    /// Opens the pool without migrating (the schema must already be current).
    pub fn connect(url: &str, pool_size: usize, busy_timeout_ms: u64) -> anyhow::Result<Db> {
        let timeouts = deadpool::managed::Timeouts {
            wait: Some(Duration::from_secs(10)),
            create: Some(Duration::from_secs(10)),
            recycle: Some(Duration::from_secs(5)),
        };
        match Backend::of(url) {
            Backend::Postgres => {
                let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new(url);
                let pool = Pool::builder(manager)
                    .max_size(pool_size)
                    .timeouts(timeouts)
                    .runtime(deadpool::Runtime::Tokio1)
                    .build()?;
                Ok(Db::Postgres { pool })
            }
            Backend::Sqlite => {
                let mut config = ManagerConfig::<SqliteConn>::default();
                // A connection to a local file cannot go stale: checking one out of the pool
                // needs no `SELECT 1` round trip (a blocking-thread hop) first.
                config.recycling_method = RecyclingMethod::Fast;
                config.custom_setup = Box::new(move |url| {
                    let url = url.to_string();
                    Box::pin(async move {
                        let mut conn = SqliteConn::establish(&url).await?;
                        conn.batch_execute(&sqlite_pragmas(busy_timeout_ms))
                            .await
                            .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
                        Ok(conn)
                    })
                });
                let manager =
                    AsyncDieselConnectionManager::<SqliteConn>::new_with_config(url, config);
                let pool = Pool::builder(manager)
                    .max_size(pool_size)
                    .timeouts(timeouts)
                    .runtime(deadpool::Runtime::Tokio1)
                    .build()?;
                Ok(Db::Sqlite {
                    pool,
                    write_lock: Arc::new(tokio::sync::Mutex::new(())),
                })
            }
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Db::Sqlite { .. } => Backend::Sqlite,
            Db::Postgres { .. } => Backend::Postgres,
        }
    }

    /// A trivial round trip, for the health check.
    pub async fn ping(&self) -> StoreResult<()> {
        db_run!(self, |conn| {
            conn.batch_execute("SELECT 1").await?;
            Ok(())
        })
    }
}

fn sqlite_pragmas(busy_timeout_ms: u64) -> String {
    // WAL lets the CLI and the server share the file: readers never wait for the writer.
    format!(
        "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = {busy_timeout_ms}; \
         PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
    )
}

/// Brings the schema up to date. Safe to run from several processes at once.
pub async fn migrate(url: &str, busy_timeout_ms: u64) -> anyhow::Result<()> {
    let url = url.to_string();
    // Migrations use diesel's synchronous harness; keep it off the async runtime's threads.
    tokio::task::spawn_blocking(move || migrate_blocking(&url, busy_timeout_ms)).await?
}

fn migrate_blocking(url: &str, busy_timeout_ms: u64) -> anyhow::Result<()> {
    let run_error = |err: Box<dyn std::error::Error + Send + Sync>| anyhow::anyhow!("{err}");
    match Backend::of(url) {
        Backend::Sqlite => {
            if let Some(parent) = std::path::Path::new(url).parent() {
                if !parent.as_os_str().is_empty() {
                    std::fs::create_dir_all(parent)?;
                }
            }
            let mut conn = SqliteConnection::establish(url)?;
            diesel::connection::SimpleConnection::batch_execute(
                &mut conn,
                &sqlite_pragmas(busy_timeout_ms),
            )?;
            conn.run_pending_migrations(SQLITE_MIGRATIONS)
                .map_err(run_error)?;
        }
        Backend::Postgres => {
            let mut conn: AsyncConnectionWrapper<AsyncPgConnection> = Connection::establish(url)?;
            diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK_ID})"))
                .execute(&mut conn)?;
            let result = conn.run_pending_migrations(POSTGRES_MIGRATIONS).map(|_| ());
            diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_ID})"))
                .execute(&mut conn)?;
            result.map_err(run_error)?;
        }
    }
    Ok(())
}

/// Parses a stored JSON object column back into a value (an empty object if unreadable).
pub fn stored_json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::Object(Default::default()))
}
