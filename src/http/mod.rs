//! The HTTP API: routes, request and response bodies, and how malformed requests become
//! documented errors. The state handlers share is `crate::app::AppState`.

pub mod agent_sync;
pub mod agents;
pub mod auth;
pub mod billing;
pub mod body;
pub mod body_timeout;
pub mod call_transfer;
pub mod campaigns;
pub mod chat;
pub mod collections;
pub mod direct;
pub mod health;
pub mod instances;
pub mod keys;
pub mod knowledge;
pub mod methods;
pub mod metrics;
pub mod observability;
pub mod openai_audio;
pub mod openai_transcription;
pub mod openapi;
pub mod pagination;
pub mod phone_numbers;
pub mod portal;
pub mod provider_keys;
pub mod provision;
pub mod recordings;
pub mod request_id;
pub mod sessions;
pub mod synthesize;
pub mod transcribe;
pub mod twilio_calls;
pub mod upgrade;
pub mod upload;
pub mod validate;
pub mod webhooks;
pub mod widget;

use actix_web::error::{PathError, QueryPayloadError};
use actix_web::middleware::from_fn;
use actix_web::web;

use crate::error::ApiError;

/// Registers every route and the extractor error mappings.
pub fn configure(cfg: &mut web::ServiceConfig, max_json_bytes: usize) {
    cfg.app_data(body::JsonLimit(max_json_bytes))
        .app_data(web::QueryConfig::default().error_handler(|err, _| query_error(err).into()))
        .app_data(web::PathConfig::default().error_handler(|err, _| path_error(err).into()))
        .service(health::health)
        .service(openapi::openapi_json)
        // Proven by metrics.bearer_token when one is set, not an API key.
        .service(metrics::scrape)
        // Authenticated by its relay token, not an API key: outside the /v1 key check.
        .service(
            web::resource("/v1/sessions/twilio/stream")
                .route(web::get().to(sessions::twilio_stream)),
        )
        // Twilio's webhooks, proven by X-Twilio-Signature, not an API key.
        .configure(twilio_calls::webhooks)
        .configure(call_transfer::webhooks)
        // Proven by its Stripe-Signature, not an API key.
        .service(web::resource("/v1/billing/webhook").route(web::post().to(billing::webhook)))
        // API key or session token, checked by the handler itself.
        .service(
            web::resource("/v1/agents/{id}/session").route(web::get().to(direct::direct_session)),
        )
        // The browser widget's public files.
        .configure(widget::routes)
        // The developer portal: its own session cookie, never an API key.
        .configure(portal::routes)
        .service(
            web::scope("/v1")
                .wrap(from_fn(auth::require_api_key))
                .configure(keys::routes)
                .configure(provider_keys::routes)
                .configure(billing::routes)
                // Before the agents' routes, whose /agents/{id} would take "provision".
                .configure(provision::routes)
                .configure(agent_sync::routes)
                .configure(agents::routes)
                .configure(instances::routes)
                .configure(chat::routes)
                .configure(twilio_calls::routes)
                .configure(call_transfer::routes)
                .configure(sessions::routes)
                .configure(phone_numbers::routes)
                .configure(recordings::routes)
                .configure(direct::routes)
                .configure(observability::routes)
                .configure(collections::routes)
                .configure(knowledge::routes)
                .configure(webhooks::routes)
                .configure(campaigns::routes)
                .configure(synthesize::routes)
                .configure(transcribe::routes)
                .configure(openai_audio::routes)
                .configure(openai_transcription::routes),
        )
        .default_service(web::to(methods::not_found));
}

fn query_error(err: QueryPayloadError) -> ApiError {
    ApiError::bad_request(format!("invalid query string: {err}"))
}

fn path_error(err: PathError) -> ApiError {
    ApiError::bad_request(format!("invalid path: {err}"))
}
