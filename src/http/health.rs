//! `GET /health`: liveness, storage reachability and the state of each embedded engine,
//! without authentication.

use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct HealthBody {
    /// `ok` when storage answers, `unavailable` otherwise.
    pub status: String,
    /// `sqlite` or `postgres`.
    pub database: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each engine's models: `ready`/`loaded`, `not_loaded` (loads on first use), `missing`
    /// (run `scripts/fetch-models`) or `failed`; and the inference queue.
    #[schema(value_type = Object)]
    pub engines: serde_json::Value,
}

/// Answers 200 `{"status":"ok"}` when the database is reachable, 503 otherwise.
#[utoipa::path(get, path = "/health", tag = "service",
    responses((status = 200, body = HealthBody), (status = 503, body = HealthBody)))]
#[get("/health")]
async fn health(state: web::Data<AppState>) -> HttpResponse {
    let database = match state.db.backend() {
        crate::store::Backend::Sqlite => "sqlite",
        crate::store::Backend::Postgres => "postgres",
    }
    .to_string();
    match state.db.ping().await {
        Ok(()) => HttpResponse::Ok().json(HealthBody {
            status: "ok".into(),
            database,
            error: None,
            engines: state.engines.status(),
        }),
        Err(err) => HttpResponse::ServiceUnavailable().json(HealthBody {
            status: "unavailable".into(),
            database,
            error: Some(format!("database unreachable: {err}")),
            engines: state.engines.status(),
        }),
    }
}
