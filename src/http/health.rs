//! `GET /health`: liveness, storage reachability, whether every registry answers, and the
//! state of each embedded engine, without authentication. A draining node (stopping after SIGTERM) answers 503 `draining`,
//! so a load balancer stops sending it work while its live calls finish.

use std::time::Duration;

use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthBody {
    /// `ok` when storage and every registry answer, `unavailable` otherwise, `draining` (503) while the node
    /// stops: it refuses new real-time sessions and finishes the live ones.
    pub status: String,
    /// `sqlite` or `postgres`.
    pub database: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each engine's models: `ready`/`loaded`, `not_loaded` (loads on first use), `missing`
    /// (run `scripts/fetch-models`) or `failed`; and the inference queue.
    #[schema(value_type = Object)]
    pub engines: serde_json::Value,
    /// Real-time sessions (phone calls and direct sockets) live on this node.
    pub live_sessions: usize,
}

/// Answers 200 `{"status":"ok"}` when the database is reachable and every registry answers
/// within 2 s, 503 `unavailable` otherwise (naming what did not answer), and 503
/// `{"status":"draining"}` while the node stops.
#[utoipa::path(get, path = "/health", tag = "service",
    responses((status = 200, body = HealthBody), (status = 503, body = HealthBody)))]
#[get("/health")]
async fn health(state: web::Data<AppState>) -> HttpResponse {
    let database = match state.db().backend() {
        crate::store::Backend::Sqlite => "sqlite",
        crate::store::Backend::Postgres => "postgres",
    }
    .to_string();
    let live_sessions = state.drain().live_sessions();
    if state.drain().is_draining() {
        return HttpResponse::ServiceUnavailable().json(HealthBody {
            status: "draining".into(),
            database,
            error: Some(
                "the server is shutting down: it refuses new sessions while live ones finish"
                    .into(),
            ),
            engines: state.engines().status(),
            live_sessions,
        });
    }
    let (database_answer, registries) =
        futures_util::future::join(state.db().ping(), registries_answer(&state)).await;
    let error = match (database_answer, registries) {
        (Ok(()), Ok(())) => None,
        (Err(err), _) => Some(format!("database unreachable: {err}")),
        (Ok(()), Err(silent)) => Some(silent),
    };
    let body = HealthBody {
        status: if error.is_none() { "ok" } else { "unavailable" }.into(),
        database,
        error,
        engines: state.engines().status(),
        live_sessions,
    };
    if body.error.is_none() {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

/// How long a registry may take to answer `/health`'s ping: a healthy one answers in
/// microseconds, a mailbox stuck behind work is a sick node.
const REGISTRY_ANSWER: Duration = Duration::from_secs(2);

/// Pings every registry at once; answers which did not answer, and why.
async fn registries_answer(state: &AppState) -> Result<(), String> {
    let pings = state
        .registries()
        .map(|registry| (registry.name(), registry.ping(REGISTRY_ANSWER)));
    let (names, pings): (Vec<_>, Vec<_>) = pings.into_iter().unzip();
    let silent: Vec<String> = futures_util::future::join_all(pings)
        .await
        .into_iter()
        .zip(names)
        .filter_map(|(answer, name)| answer.err().map(|e| format!("{name} ({e})")))
        .collect();
    if silent.is_empty() {
        Ok(())
    } else {
        Err(format!("a registry did not answer: {}", silent.join(", ")))
    }
}
