//! `GET /health`: liveness, storage reachability and the state of each embedded engine,
//! without authentication. A draining node (stopping after SIGTERM) answers 503 `draining`,
//! so a load balancer stops sending it work while its live calls finish.

use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthBody {
    /// `ok` when storage answers, `unavailable` otherwise, `draining` (503) while the node
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

/// Answers 200 `{"status":"ok"}` when the database is reachable, 503 otherwise, and 503
/// `{"status":"draining"}` while the node stops.
#[utoipa::path(get, path = "/health", tag = "service",
    responses((status = 200, body = HealthBody), (status = 503, body = HealthBody)))]
#[get("/health")]
async fn health(state: web::Data<AppState>) -> HttpResponse {
    let database = match state.db.backend() {
        crate::store::Backend::Sqlite => "sqlite",
        crate::store::Backend::Postgres => "postgres",
    }
    .to_string();
    let live_sessions = state.drain.live_sessions();
    if state.drain.is_draining() {
        return HttpResponse::ServiceUnavailable().json(HealthBody {
            status: "draining".into(),
            database,
            error: Some(
                "the server is shutting down: it refuses new sessions while live ones finish"
                    .into(),
            ),
            engines: state.engines.status(),
            live_sessions,
        });
    }
    match state.db.ping().await {
        Ok(()) => HttpResponse::Ok().json(HealthBody {
            status: "ok".into(),
            database,
            error: None,
            engines: state.engines.status(),
            live_sessions,
        }),
        Err(err) => HttpResponse::ServiceUnavailable().json(HealthBody {
            status: "unavailable".into(),
            database,
            error: Some(format!("database unreachable: {err}")),
            engines: state.engines.status(),
            live_sessions,
        }),
    }
}
