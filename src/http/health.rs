//! `GET /health`: liveness and storage reachability, without authentication.

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
        }),
        Err(err) => HttpResponse::ServiceUnavailable().json(HealthBody {
            status: "unavailable".into(),
            database,
            error: Some(format!("database unreachable: {err}")),
        }),
    }
}
