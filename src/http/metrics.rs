//! `GET /metrics`: the Prometheus scrape endpoint (text exposition format). It carries no
//! developer's data, so it needs no API key; it is open unless the operator sets
//! `metrics.bearer_token`, which a scraper then sends as `Authorization: Bearer <token>`
//! (compared in constant time). `metrics.enabled = false` removes it (404).

use actix_web::http::header::AUTHORIZATION;
use actix_web::{get, web, HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};

use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::metrics::metrics;
use crate::observability::log;

/// Whether `presented` equals `expected`, in time that does not depend on where they differ.
fn same_secret(presented: &str, expected: &str) -> bool {
    let (a, b) = (Sha256::digest(presented), Sha256::digest(expected));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// Prometheus metrics: sessions active and ended, turns, stage latency histograms, barge-in
/// latency, vendor errors and the inference worker pool's queue depth.
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses((status = 200, description = "Prometheus text exposition format", content_type = "text/plain"),
        (status = 401, body = ErrorBody, description = "metrics.bearer_token is set and was not presented"),
        (status = 404, body = ErrorBody, description = "metrics.enabled is false")))]
#[get("/metrics")]
async fn scrape(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let config = &state.config().metrics;
    if !config.enabled {
        return Err(ApiError::NotFound("no route for GET /metrics".into()));
    }
    let token = config.bearer_token.trim();
    if !token.is_empty() {
        let presented = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().strip_prefix("Bearer "))
            .map(str::trim);
        if !presented.is_some_and(|p| same_secret(p, token)) {
            return Err(ApiError::Unauthorized(
                "send `Authorization: Bearer <metrics.bearer_token>`".into(),
            ));
        }
    }
    for registry in state.registries() {
        metrics().registry_restarts(registry.name(), registry.restarts());
    }
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(metrics().render(state.engines().pool.stats(), log::lines_lost())))
}
