//! The answers for requests no handler takes: a known path with another method (405) and an
//! unknown path (404). Each route module registers its paths' catch-all here.

use actix_web::{web, HttpRequest, HttpResponse};

use crate::error::ApiError;

/// Registers, after a module's routes, a catch-all for its paths so a known path with an
/// unsupported method answers 405 instead of falling through to 404.
pub fn other_methods(cfg: &mut web::ServiceConfig, paths: &[&str]) {
    cfg.service(web::resource(paths.to_vec()).to(method_not_allowed));
}

/// The answer to a known path with a method it does not take: 405 `method_not_allowed`.
pub async fn method_not_allowed(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed(format!(
        "{} is not allowed on {}",
        req.method(),
        req.path()
    )))
}

/// The answer to a path no route has: 404 `not_found`.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "no route for {} {}",
        req.method(),
        req.path()
    )))
}
