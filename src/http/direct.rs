//! The direct agent WebSocket's routes: `GET /v1/agents/{id}/session` (for browsers and
//! server-side clients; its wire is `crate::transports::direct`, its messages are listed in
//! docs/realtime.md), which authenticates the socket and hands it to the live session, and
//! `POST /v1/agents/{id}/session-token`, which mints the short-lived token a browser presents
//! instead of an API key (`?token=`).

use actix_web::{post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::{bearer_credentials, Developer};
use super::methods;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::{DeveloperId, KeyId, SessionId};
use crate::live::{self, Record, SessionRequest};
use crate::registry::agents::GetAgent;
use crate::registry::keys::{hash_key, CheckKey, KeyCheck};
use crate::registry::metering::Admit;
use crate::registry::sessions::ClaimTokenSession;
use crate::telephony::token::RelayClaims;
use crate::time::{self, iso};
use crate::transports::direct::DirectWire;
use crate::transports::socket::{self, SocketLimits};

/// Longest a browser session token lives.
pub const SESSION_TOKEN_TTL_MS: i64 = 10 * 60 * 1000;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(session_token);
    methods::other_methods(cfg, &["/agents/{id}/session-token"]);
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTokenBody {
    /// Present as `?token=` on `GET /v1/agents/{id}/session`; valid for one session of this
    /// agent.
    pub token: String,
    pub expires_at: String,
    /// The WebSocket URL to open, token included.
    pub url: String,
}

/// Mints a 10-minute token for one direct session with the agent (for browsers, which must
/// never see an API key).
#[utoipa::path(post, path = "/v1/agents/{id}/session-token", tag = "sessions",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = SessionTokenBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/agents/{id}/session-token")]
async fn session_token(
    state: web::Data<AppState>,
    req: HttpRequest,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer.id().clone(),
            agent_id: id.into_inner().into(),
        })
        .await??;
    // A browser opens the socket right after it has the token.
    live::warm_agent_voice(&state, &agent);
    let expires = time::now_ms() + SESSION_TOKEN_TTL_MS;
    let token = state.signer().sign(&RelayClaims {
        sid: SessionId::new(),
        dev: developer.id().clone(),
        agent: agent.id.clone(),
        from: None,
        to: None,
        inst: None,
        // A token minted in the portal has no API key behind it to revoke it with; it is the
        // signed-in developer's, for its ten minutes.
        key: developer.api_key_id().cloned(),
        prev: None,
        say: None,
        task: None,
        exp: expires,
    });
    let base = state.public_base(&req);
    let ws_base = base
        .replacen("https://", "wss://", 1)
        .replacen("http://", "ws://", 1);
    Ok(HttpResponse::Ok().json(SessionTokenBody {
        url: format!("{ws_base}/v1/agents/{}/session?token={token}", agent.id),
        token,
        expires_at: iso(expires),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectQuery {
    token: Option<String>,
    /// Read as text, so that a rate that is not a number is refused naming the parameter.
    sample_rate: Option<String>,
    acks: Option<String>,
    encoding: Option<String>,
}

/// `GET /v1/agents/{id}/session`: authenticated by `Authorization: Bearer <API key>` or by a
/// session token in `?token=`.
#[utoipa::path(get, path = "/v1/agents/{id}/session", tag = "sessions",
    description = "Opens a real-time session with the agent as a WebSocket (101 Switching \
Protocols). Text frames carry JSON control messages and events; binary frames carry audio both \
ways: PCM16 little-endian mono (`encoding=pcm16`) or one 20 ms Opus packet per frame \
(`encoding=opus`), at `sampleRate`. The message and event types are listed in docs/realtime.md.",
    params(
        ("id" = String, Path, description = "Agent id"),
        ("token" = Option<String>, Query, description = "A session token from POST /v1/agents/{id}/session-token, instead of an API key"),
        ("sampleRate" = Option<u32>, Query, description = "8000, 16000 (default), 24000 or 48000"),
        ("encoding" = Option<String>, Query, description = "pcm16 (default) or opus (one 20 ms packet per binary frame, both ways)"),
        ("acks" = Option<String>, Query, description = "clock (default) or marks (the client answers each audio.mark when the audio before it has played)")),
    responses((status = 101, description = "Switched to the WebSocket protocol"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 402, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = []), ()))]
pub async fn direct_session(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    query: web::Query<DirectQuery>,
) -> Result<HttpResponse, ApiError> {
    // A stopping node takes no new session (a load balancer retries it on another node).
    state.drain().refuse_if_draining()?;
    let agent_id = path.into_inner();
    let query = query.into_inner();
    let wire = DirectWire::from_query(
        query.sample_rate.as_deref(),
        query.encoding.as_deref(),
        query.acks.as_deref(),
    )?;
    // Not a WebSocket handshake: refused before a session token is spent or a session made.
    actix_http::ws::verify_handshake(req.head())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let Opener {
        developer_id,
        rate_key,
        token_session,
        issuer_key,
    } = authenticate(&state, &req, query.token.as_deref(), &agent_id).await?;
    // A socket counts once against the rate limit, at connect.
    let admission = state
        .metering()
        .send(Admit {
            developer_id: developer_id.clone(),
            key_id: rate_key,
        })
        .await??;
    if !admission.rate.allowed {
        return Err(ApiError::RateLimited {
            message: format!(
                "too many requests; retry in {} s",
                admission.rate.retry_after_seconds
            ),
            limit: admission.rate.limit,
            retry_after_seconds: admission.rate.retry_after_seconds,
        });
    }
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: agent_id.as_str().into(),
        })
        .await??;
    // A session token is good for one session: the one it names, claimed here once.
    let session_id = match token_session {
        Some((session_id, expires_at)) => {
            let claimed = state
                .sessions()
                .send(ClaimTokenSession {
                    session_id: session_id.clone(),
                    expires_at,
                })
                .await??;
            if !claimed {
                return Err(ApiError::Unauthorized(
                    "session token refused: it was already used; mint a new one".into(),
                ));
            }
            session_id
        }
        None => SessionId::new(),
    };
    let request = SessionRequest {
        session_id,
        developer_id,
        agent_id: agent.id,
        issuer_key,
        // Where its recording is served, for the developer's webhooks.
        public_base: Some(state.public_base(&req)),
        instance_id: None,
        from: None,
        to: None,
        call_sid: None,
        resumes: None,
        opening: None,
        task_id: None,
    };
    let admitted = live::admit(&state, request, Record::New, &wire)
        .await
        .map_err(|error| match error {
            // Another node opened this token's session first.
            ApiError::Conflict(_) => ApiError::Unauthorized(
                "session token refused: it was already used; mint a new one".into(),
            ),
            ApiError::Unauthorized(reason) => {
                ApiError::Unauthorized(format!("session token refused: {reason}"))
            }
            error => error,
        })?;
    let (response, socket, messages) = match socket::accept(&req, SocketLimits::of(&req)) {
        Ok(accepted) => accepted,
        Err(e) => {
            admitted.abandon(&e.to_string());
            return Err(ApiError::bad_request(e.to_string()));
        }
    };
    admitted.run(wire, socket, messages)?;
    Ok(response)
}

/// Who opens a direct socket.
struct Opener {
    developer_id: DeveloperId,
    /// What the socket counts against in the rate limits.
    rate_key: String,
    /// For a session token: the session it names and the token's expiry.
    token_session: Option<(SessionId, i64)>,
    /// For a session token: the API key that minted it, which must still be in force.
    issuer_key: Option<KeyId>,
}

/// The API key in the Authorization header, or a session token for this agent (whose minting
/// key is checked as the session is let in).
async fn authenticate(
    state: &AppState,
    req: &HttpRequest,
    token: Option<&str>,
    agent_id: &str,
) -> Result<Opener, ApiError> {
    if let Some(token) = token {
        let claims = state
            .signer()
            .verify(token, time::now_ms())
            .map_err(|e| ApiError::Unauthorized(format!("session token refused: {e}")))?;
        if claims.agent != agent_id {
            return Err(ApiError::Unauthorized(
                "this session token is for another agent".into(),
            ));
        }
        return Ok(Opener {
            rate_key: format!("session-token:{}", claims.dev),
            developer_id: claims.dev,
            token_session: Some((claims.sid, claims.exp)),
            issuer_key: claims.key,
        });
    }
    let raw = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(bearer_credentials)
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "send `Authorization: Bearer <API key>` or `?token=<session token>`".into(),
            )
        })?;
    match state
        .keys()
        .send(CheckKey {
            hash: hash_key(raw),
        })
        .await??
    {
        KeyCheck::Valid(principal) => Ok(Opener {
            developer_id: principal.developer_id,
            rate_key: principal.key_id.to_string(),
            token_session: None,
            issuer_key: None,
        }),
        _ => Err(ApiError::Unauthorized("invalid API key".into())),
    }
}
