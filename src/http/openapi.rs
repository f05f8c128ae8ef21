//! `GET /openapi.json`: the OpenAPI 3 description of every route the service serves,
//! generated from the handlers' annotations so it cannot drift from them.

use std::sync::OnceLock;

use actix_web::{get, HttpResponse};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    agent_sync, agents, billing, call_transfer, campaigns, chat, collections, direct, health,
    instances, keys, knowledge, metrics, observability, openai_audio, openai_transcription,
    phone_numbers, provider_keys, provision, recordings, sessions, synthesize, transcribe,
    twilio_calls, webhooks, widget,
};
use crate::error::{ErrorBody, ErrorDetail};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Switchboard API",
        description = "Real-time voice agents: speech, agents, knowledge, sessions.\n\n\
Every `/v1` route needs `Authorization: Bearer <API key>` (except `POST /v1/billing/webhook`, \
proven by `Stripe-Signature`, and Twilio's webhooks `POST /v1/sessions/twilio/inbound` and \
`POST /v1/sessions/twilio/task/{taskId}/connect|status`, proven by `X-Twilio-Signature`; a \
missing or invalid signature is 403 forbidden). Every response carries `X-Request-Id`; authenticated responses \
also carry `X-Usage-Current`, `X-Usage-Limit`, `X-Usage-Remaining` and `X-Usage-Bypassed` \
(credits of the current billing period; `true` when a caller's own vendor key was used and \
nothing was deducted), `X-Provider-Used` (the engine that served the request: `default` for the \
embedded engines, a vendor id, or `none` when no engine ran), and `X-RateLimit-Limit` / `X-RateLimit-Remaining` (requests of this \
API key in the sliding rate-limit window).\n\n\
Metered work costs credits by the price list (speech synthesis per 1,000 characters, \
transcription per audio minute, language model per 1,000 prompt and generated tokens, \
knowledge per 1,000 embedded tokens and per search); once a period's credits are spent, \
metered requests answer 402 insufficient_credits unless the tier allows overage, while \
reads, key management and billing keep working.\n\n\
Vendor keys: a request may carry the caller's own key in `X-Provider-Key-<Vendor>` \
(`X-Provider-Key-OpenAI`, `-Anthropic`, `-Google`, `-Groq`, `-Deepgram`, `-ElevenLabs`, \
`-Cartesia`, `-AssemblyAI`, `-Azure`, `-PlayHT` (`<user id>:<secret key>`), `-Rime`, `-LMNT`, \
`-HuggingFace`, `-Neuphonic`, `-Inworld`, `-Kokoro`; the name in any case; \
`GET /v1/audio/models` lists every provider id with its header); otherwise \
the developer's stored key (`/v1/provider-keys`) is used, then the platform's. The caller's \
own or stored key bypasses credit metering (`X-Usage-Bypassed: true`).\n\n\
Errors are `{\"error\": {\"code\", \"message\", \"param\", \"requestId\"}}` with codes: \
400 validation_error, 401 unauthorized, 402 insufficient_credits, 404 not_found, \
405 method_not_allowed, 408 request_timeout (the request body did not arrive in time: it \
must start within `body_read_timeout_seconds` and then keep coming at \
`body_min_bytes_per_second`), 409 conflict, 413 payload_too_large, \
415 unsupported_media_type, \
429 rate_limited (with X-RateLimit-Limit, X-RateLimit-Remaining and Retry-After in seconds) \
or session_limit_exceeded (the tier's concurrent real-time sessions are all live), \
500 internal_error, 502 upstream_error, 503 unavailable (retry later; \
sent with Retry-After when the inference queue is full), engine_unavailable (a model is not \
installed: run `scripts/fetch-models`), billing_not_configured, or draining (the node is \
stopping: the real-time sockets `GET /v1/agents/{id}/session` and \
`GET /v1/sessions/twilio/stream` are refused before their upgrade, with Retry-After; \
`GET /health` then answers 503 `{\"status\": \"draining\"}`).\n\n\
Lists take `limit` (1-100, default 20) and `cursor` (the id after which to continue) and \
answer `{data, nextCursor, hasMore}` in creation order.\n\n\
Webhooks (`/v1/webhooks`): each event is a `POST` of JSON `{id, type, createdAt, data}` to \
every endpoint subscribed to its type, with `Switchboard-Signature: t=<unix seconds>,v1=<hex>`, \
the HMAC-SHA256 of `<t>.<body>` keyed with the endpoint's secret (Stripe's scheme). Types: \
`call.started` (a session started), `call.ended` (its transcript, duration, cost in credits, \
end reason, recording URL and root-cause findings), `transfer.completed` (a transfer's \
outcome), and `call.analyzed` (the post-call analysis an agent's `analysis` asks for: \
summary, success verdict and extracted fields, sent after `call.ended`). A 2xx answer delivers; anything else is retried with doubling waits for a day, so \
an event may arrive more than once (deduplicate by `id`) and out of order (see `createdAt`). \
The exact shapes are in docs/api.md."
    ),
    paths(
        health::health,
        openapi_json,
        metrics::scrape,
        keys::create_key,
        keys::list_keys,
        keys::revoke_key,
        keys::rotate_key,
        provider_keys::store_key,
        provider_keys::list_keys,
        provider_keys::verify_key,
        provider_keys::delete_key,
        agents::create_agent,
        agents::list_agents,
        agents::get_agent,
        agents::update_agent,
        agents::delete_agent,
        provision::provision,
        chat::chat,
        sessions::create_twilio_session,
        twilio_calls::place_call,
        twilio_calls::get_task,
        twilio_calls::task_connect,
        twilio_calls::task_status,
        twilio_calls::task_amd,
        twilio_calls::inbound_call,
        twilio_calls::hang_up,
        call_transfer::transfer_call,
        call_transfer::dialed,
        call_transfer::person_status,
        phone_numbers::create_number,
        phone_numbers::list_numbers,
        phone_numbers::get_number,
        phone_numbers::update_number,
        phone_numbers::delete_number,
        phone_numbers::verify_number,
        recordings::get_recording,
        agent_sync::sync_agent,
        direct::session_token,
        direct::direct_session,
        observability::list_sessions,
        observability::get_session,
        observability::get_call,
        observability::session_root_cause,
        observability::call_root_cause,
        observability::interruption_quality,
        instances::create_instance,
        instances::list_instances,
        instances::get_instance,
        instances::update_instance,
        instances::delete_instance,
        collections::create_collection,
        collections::list_collections,
        collections::get_collection,
        collections::delete_collection,
        webhooks::create_webhook,
        webhooks::list_webhooks,
        webhooks::get_webhook,
        webhooks::delete_webhook,
        webhooks::list_deliveries,
        campaigns::create_campaign,
        campaigns::list_campaigns,
        campaigns::get_campaign,
        campaigns::pause_campaign,
        campaigns::resume_campaign,
        campaigns::cancel_campaign,
        knowledge::ingest,
        knowledge::search,
        knowledge::delete_document,
        synthesize::synthesize,
        synthesize::speak,
        transcribe::transcribe,
        transcribe::transcribe_async,
        transcribe::get_job,
        openai_audio::speech,
        openai_transcription::transcriptions,
        openai_transcription::translations,
        openai_audio::models,
        openai_audio::openai_models,
        openai_audio::openai_model,
        billing::usage,
        billing::subscription,
        billing::checkout,
        billing::portal,
        billing::webhook,
        widget::demo,
        widget::asset,
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&BearerAuth, &CommonResponses, &PageItemsByReference),
)]
pub struct ApiDoc;

/// Routes under `/v1` proven by something other than an API key (see `http::configure`).
const NOT_KEYED: &[&str] = &[
    "/v1/billing/webhook",
    "/v1/sessions/twilio/inbound",
    "/v1/sessions/twilio/task/{taskId}/connect",
    "/v1/sessions/twilio/task/{taskId}/status",
    "/v1/sessions/twilio/stream",
];

/// The answers every operation of a kind can give, written once instead of on each handler:
/// every API-key route can answer 401 (no, unknown, revoked or expired key) and 429 (its key's
/// rate limit); every body can be too slow (408) or too large (413); every JSON or multipart
/// body can be malformed (400) or of another content type (415). The OpenAI-compatible routes answer these in OpenAI's error
/// shape, the others in `ErrorBody`.
struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
        for (path, item) in openapi.paths.paths.iter_mut() {
            let keyed = path.starts_with("/v1/") && !NOT_KEYED.contains(&path.as_str());
            let openai = path.starts_with("/v1/audio/");
            let error = |description: &str| {
                let response = ResponseBuilder::new().description(description);
                let response = if openai {
                    response
                } else {
                    response.content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("ErrorBody")))
                            .build(),
                    )
                };
                RefOr::T(response.build())
            };
            for operation in [
                item.get.as_mut(),
                item.post.as_mut(),
                item.put.as_mut(),
                item.delete.as_mut(),
            ]
            .into_iter()
            .flatten()
            {
                let mut common = Vec::new();
                if keyed {
                    common.push(("401", "Missing, unknown, revoked or expired API key"));
                    common.push(("429", "This API key's rate limit (with Retry-After)"));
                }
                let has_body = operation.request_body.as_ref().is_some_and(|body| {
                    body.content.keys().any(|t| {
                        t.starts_with("application/json") || t.starts_with("multipart/form-data")
                    })
                });
                let has_query = operation.parameters.iter().flatten().any(|parameter| {
                    parameter.parameter_in == utoipa::openapi::path::ParameterIn::Query
                });
                if has_body || has_query {
                    common.push(("400", "Malformed body, query or field"));
                }
                if operation.request_body.is_some() {
                    common.push((
                        "408",
                        "The body did not arrive in time (too slow, or stopped)",
                    ));
                    common.push(("413", "Body larger than the route accepts"));
                }
                if has_body {
                    common.push(("415", "Body of another content type"));
                }
                for (status, description) in common {
                    if !operation.responses.responses.contains_key(status) {
                        operation
                            .responses
                            .responses
                            .insert(status.to_string(), error(description));
                    }
                }
            }
        }
    }
}

/// Each page schema (`PageBody_AgentBody`, ...) refers to its item's schema instead of
/// holding a copy of it (utoipa writes a generic's type argument inline), so that client
/// generators make one type of an agent, listed or not.
struct PageItemsByReference;

impl Modify for PageItemsByReference {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{ArrayItems, Schema};
        use utoipa::openapi::{Ref, RefOr};
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        let names: Vec<String> = components.schemas.keys().cloned().collect();
        for (name, schema) in components.schemas.iter_mut() {
            let Some(item) = name.strip_prefix("PageBody_") else {
                continue;
            };
            if !names.iter().any(|n| n == item) {
                continue;
            }
            if let RefOr::T(Schema::Object(page)) = schema {
                if let Some(RefOr::T(Schema::Array(data))) = page.properties.get_mut("data") {
                    data.items =
                        ArrayItems::RefOrSchema(Box::new(RefOr::Ref(Ref::from_schema_name(item))));
                }
            }
        }
    }
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key, e.g. `sb_live_…`"))
                    .build(),
            ),
        );
    }
}

/// The OpenAPI 3 document of this service.
#[utoipa::path(get, path = "/openapi.json", tag = "service",
    responses((status = 200, description = "OpenAPI 3 document", content_type = "application/json")))]
#[get("/openapi.json")]
async fn openapi_json() -> HttpResponse {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    let document = DOCUMENT.get_or_init(|| {
        ApiDoc::openapi()
            .to_json()
            .expect("the OpenAPI document serializes")
    });
    HttpResponse::Ok()
        .content_type("application/json")
        .body(document.as_str())
}
