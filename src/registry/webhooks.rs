//! `WebhookRegistry`: the developers' webhook endpoints and the deliveries made to them.
//! Creating an endpoint seals its signing secret (as provider keys are sealed) and holds a
//! developer to `webhooks.max_endpoints`; an event ([`Emit`]) is stored as one delivery per
//! subscribed endpoint before anything is sent, so a restart loses none.
//!
//! Every `webhooks.poll_ms` (and at once after an event) the registry looks for due
//! deliveries, claims each in storage (so of several nodes on one database one attempt is
//! made) and posts it in a future of its own, up to `webhooks.concurrency` at a time. A
//! delivery answered 2xx is done; any other outcome is retried with doubling waits until
//! `webhooks.retry_for_seconds` after the event, then given up as `failed`. Endpoints are
//! read from storage on each event (no cache), so a deletion on another node takes effect
//! at once.

use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::{cursor_position, Page, PageRequest};
use crate::config::WebhooksConfig;
use crate::error::ApiError;
use crate::fetch::Fetcher;
use crate::ids::{DeliveryId, DeveloperId, EventId, WebhookId};
use crate::store::webhooks::{
    self, AttemptResult, AttemptRow, DeliveryRow, DeliveryStatus, EndpointRow,
};
use crate::store::Db;
use crate::time::now_ms;
use crate::vendors::sealing::KeySealer;
use crate::webhooks::{attempt, Envelope, EventType, RetryPolicy};

/// How long a claimed attempt may take beyond its deadline before another node may make it.
const LEASE_MARGIN_MS: i64 = 30_000;

pub struct WebhookRegistry {
    db: Db,
    sealer: KeySealer,
    fetcher: Fetcher,
    config: WebhooksConfig,
    /// Deliveries being attempted by this node.
    in_flight: usize,
    /// A look for due deliveries is under way.
    looking: bool,
    /// An event arrived while looking: look again when done.
    look_again: bool,
}

impl WebhookRegistry {
    pub fn new(db: Db, sealer: KeySealer, fetcher: Fetcher, config: WebhooksConfig) -> Self {
        Self {
            db,
            sealer,
            fetcher,
            config,
            in_flight: 0,
            looking: false,
            look_again: false,
        }
    }

    /// What an endpoint's secret is sealed under: its developer and its own id.
    fn purpose(endpoint_id: &WebhookId) -> String {
        format!("webhook:{endpoint_id}")
    }

    /// Looks for due deliveries and starts an attempt of each this node can claim.
    fn deliver_due(&mut self, ctx: &mut Context<Self>) {
        if self.looking {
            self.look_again = true;
            return;
        }
        let room = self.config.concurrency.saturating_sub(self.in_flight);
        if room == 0 {
            return;
        }
        self.looking = true;
        let db = self.db.clone();
        let lease = self.config.timeout_ms as i64 + LEASE_MARGIN_MS;
        let claimed = async move {
            let now = now_ms();
            let due = webhooks::due_deliveries(&db, now, room as i64).await?;
            let mut won = Vec::new();
            for delivery in due {
                if webhooks::claim(&db, &delivery.id, delivery.next_attempt_at, now + lease).await?
                {
                    won.push(delivery);
                }
            }
            Ok::<_, crate::store::StoreError>(won)
        };
        ctx.spawn(claimed.into_actor(self).map(|claimed, registry, ctx| {
            registry.looking = false;
            match claimed {
                Ok(deliveries) => {
                    for delivery in deliveries {
                        registry.start_attempt(delivery, ctx);
                    }
                }
                Err(e) => tracing::warn!("could not look for due webhook deliveries: {e}"),
            }
            if std::mem::take(&mut registry.look_again) {
                registry.deliver_due(ctx);
            }
        }));
    }

    /// Makes one attempt of a claimed delivery and records it.
    fn start_attempt(&mut self, delivery: DeliveryRow, ctx: &mut Context<Self>) {
        self.in_flight += 1;
        let (db, fetcher, sealer) = (self.db.clone(), self.fetcher.clone(), self.sealer.clone());
        let timeout = Duration::from_millis(self.config.timeout_ms);
        let policy = RetryPolicy::from_config(&self.config);
        let work = async move {
            let attempt_no = delivery.attempts + 1;
            let started = now_ms();
            let endpoint = webhooks::endpoint_by_id(&db, &delivery.endpoint_id).await;
            let attempted = match endpoint {
                Ok(Some(endpoint)) => {
                    let purpose = WebhookRegistry::purpose(&endpoint.id);
                    match sealer.open(&endpoint.developer_id, &purpose, &endpoint.secret) {
                        Some(secret) => {
                            attempt(&fetcher, &endpoint.url, &delivery.payload, &secret, timeout)
                                .await
                        }
                        None => crate::webhooks::Attempted {
                            status_code: None,
                            error: Some(
                                "the endpoint's secret cannot be opened (was the master key \
                                 changed?)"
                                    .into(),
                            ),
                            duration_ms: 0,
                        },
                    }
                }
                // Deleted meanwhile: its deliveries went with it.
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(delivery = %delivery.id, "could not read a webhook endpoint: {e}");
                    return;
                }
            };
            let now = now_ms();
            let result = if attempted.delivered() {
                AttemptResult::Delivered { at: now }
            } else {
                match policy.next_attempt(delivery.created_at, attempt_no, now) {
                    Some(at) => AttemptResult::RetryAt(at),
                    None => AttemptResult::GivenUp { at: now },
                }
            };
            let row = AttemptRow {
                seq: 0,
                delivery_id: delivery.id.clone(),
                attempt: attempt_no,
                attempted_at: started,
                duration_ms: attempted.duration_ms,
                status_code: attempted.status_code.map(i32::from),
                error: attempted.error,
            };
            if let Err(e) = webhooks::record_attempt(&db, &row, result).await {
                // The claim lapses and the attempt is made again: at least once.
                tracing::warn!(delivery = %delivery.id, "could not record a webhook attempt: {e}");
            }
        };
        ctx.spawn(work.into_actor(self).map(|(), registry, ctx| {
            registry.in_flight -= 1;
            registry.deliver_due(ctx);
        }));
    }
}

impl Actor for WebhookRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(
            Duration::from_millis(self.config.poll_ms),
            |registry, ctx| registry.deliver_due(ctx),
        );
        // What was due when the node stopped goes now.
        self.deliver_due(ctx);
    }
}

/// A new endpoint: `secret` in the clear, sealed before it is stored.
#[derive(Message)]
#[rtype(result = "Result<EndpointRow, ApiError>")]
pub struct CreateEndpoint {
    pub endpoint: EndpointRow,
}

impl Handler<CreateEndpoint> for WebhookRegistry {
    type Result = ResponseFuture<Result<EndpointRow, ApiError>>;

    fn handle(&mut self, msg: CreateEndpoint, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        let max = self.config.max_endpoints;
        let mut sealed = msg.endpoint.clone();
        sealed.secret = self.sealer.seal(
            &sealed.developer_id,
            &WebhookRegistry::purpose(&sealed.id),
            &msg.endpoint.secret,
        );
        Box::pin(async move {
            let stored = webhooks::insert_endpoint(&db, &sealed, max as i64)
                .await?
                .ok_or_else(|| {
                    ApiError::Conflict(format!(
                        "a developer may have at most {max} webhook endpoints; delete one first"
                    ))
                })?;
            // The secret is shown in the clear this once.
            Ok(EndpointRow {
                secret: msg.endpoint.secret,
                ..stored
            })
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<EndpointRow, ApiError>")]
pub struct GetEndpoint {
    pub developer_id: DeveloperId,
    pub endpoint_id: WebhookId,
}

impl Handler<GetEndpoint> for WebhookRegistry {
    type Result = ResponseFuture<Result<EndpointRow, ApiError>>;

    fn handle(&mut self, msg: GetEndpoint, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move { owned_endpoint(&db, &msg.developer_id, &msg.endpoint_id).await })
    }
}

async fn owned_endpoint(
    db: &Db,
    developer: &DeveloperId,
    id: &WebhookId,
) -> Result<EndpointRow, ApiError> {
    webhooks::get_endpoint(db, developer, id)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook", id.as_str()))
}

#[derive(Message)]
#[rtype(result = "Result<Page<EndpointRow>, ApiError>")]
pub struct ListEndpoints {
    pub developer_id: DeveloperId,
    pub page: PageRequest,
}

impl Handler<ListEndpoints> for WebhookRegistry {
    type Result = ResponseFuture<Result<Page<EndpointRow>, ApiError>>;

    fn handle(&mut self, msg: ListEndpoints, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let dev = &msg.developer_id;
            let cursor = msg.page.cursor.as_deref();
            let after = cursor_position(cursor, async |id: WebhookId| {
                webhooks::endpoint_seq_of(&db, dev, &id).await
            })
            .await?;
            let rows = webhooks::list_endpoints(&db, dev, after, msg.page.limit + 1).await?;
            Ok(Page::from_rows(rows, msg.page.limit, |row| row.id.as_str()))
        })
    }
}

/// Removes an endpoint with its deliveries (pending ones are not sent).
#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct DeleteEndpoint {
    pub developer_id: DeveloperId,
    pub endpoint_id: WebhookId,
}

impl Handler<DeleteEndpoint> for WebhookRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: DeleteEndpoint, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            if webhooks::delete_endpoint(&db, &msg.developer_id, &msg.endpoint_id).await? {
                Ok(())
            } else {
                Err(ApiError::not_found("webhook", msg.endpoint_id.as_str()))
            }
        })
    }
}

/// A delivery with the attempts made of it.
#[derive(Debug, Clone)]
pub struct DeliveryTrace {
    pub delivery: DeliveryRow,
    pub attempts: Vec<AttemptRow>,
}

/// A developer's endpoint's deliveries, oldest first.
#[derive(Message)]
#[rtype(result = "Result<Page<DeliveryTrace>, ApiError>")]
pub struct ListDeliveries {
    pub developer_id: DeveloperId,
    pub endpoint_id: WebhookId,
    pub page: PageRequest,
}

impl Handler<ListDeliveries> for WebhookRegistry {
    type Result = ResponseFuture<Result<Page<DeliveryTrace>, ApiError>>;

    fn handle(&mut self, msg: ListDeliveries, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let endpoint = owned_endpoint(&db, &msg.developer_id, &msg.endpoint_id).await?;
            let cursor = msg.page.cursor.as_deref();
            let after = cursor_position(cursor, async |id: DeliveryId| {
                webhooks::delivery_seq_of(&db, &endpoint.id, &id).await
            })
            .await?;
            let rows =
                webhooks::list_deliveries(&db, &endpoint.id, after, msg.page.limit + 1).await?;
            let page = Page::from_rows(rows, msg.page.limit, |row| row.id.as_str());
            let ids: Vec<DeliveryId> = page.items.iter().map(|d| d.id.clone()).collect();
            let mut attempts = webhooks::attempts_of(&db, &ids).await?;
            Ok(page.map(|delivery| {
                let (mine, rest): (Vec<AttemptRow>, Vec<AttemptRow>) =
                    std::mem::take(&mut attempts)
                        .into_iter()
                        .partition(|a| a.delivery_id == delivery.id);
                attempts = rest;
                DeliveryTrace {
                    delivery,
                    attempts: mine,
                }
            }))
        })
    }
}

/// Whether any endpoint of the developer receives `kind` (so the work of an event nobody
/// receives is skipped).
#[derive(Message)]
#[rtype(result = "Result<bool, ApiError>")]
pub struct Subscribed {
    pub developer_id: DeveloperId,
    pub kind: EventType,
}

impl Handler<Subscribed> for WebhookRegistry {
    type Result = ResponseFuture<Result<bool, ApiError>>;

    fn handle(&mut self, msg: Subscribed, _: &mut Context<Self>) -> Self::Result {
        let db = self.db.clone();
        Box::pin(async move {
            let endpoints = webhooks::endpoints_of(&db, &msg.developer_id).await?;
            Ok(endpoints.iter().any(|e| receives(e, msg.kind)))
        })
    }
}

fn receives(endpoint: &EndpointRow, kind: EventType) -> bool {
    endpoint
        .event_names()
        .iter()
        .any(|name| name == kind.as_str())
}

/// Something happened that a developer's endpoints may receive: stored as one delivery per
/// subscribed endpoint (the same event id on each), then sent.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Emit {
    pub developer_id: DeveloperId,
    pub kind: EventType,
    pub data: Value,
}

impl Handler<Emit> for WebhookRegistry {
    type Result = ();

    fn handle(&mut self, msg: Emit, ctx: &mut Context<Self>) {
        let db = self.db.clone();
        let stored = async move {
            let endpoints = webhooks::endpoints_of(&db, &msg.developer_id).await?;
            let now = now_ms();
            let event_id = EventId::new();
            let payload = Envelope::body(&event_id, msg.kind, now, &msg.data);
            let deliveries: Vec<DeliveryRow> = endpoints
                .iter()
                .filter(|e| receives(e, msg.kind))
                .map(|endpoint| DeliveryRow {
                    seq: 0,
                    id: DeliveryId::new(),
                    endpoint_id: endpoint.id.clone(),
                    developer_id: msg.developer_id.clone(),
                    event_id: event_id.clone(),
                    event_type: msg.kind.as_str().to_string(),
                    payload: payload.clone(),
                    status: DeliveryStatus::Pending,
                    attempts: 0,
                    next_attempt_at: now,
                    created_at: now,
                    completed_at: None,
                })
                .collect();
            webhooks::insert_deliveries(&db, &deliveries).await?;
            Ok::<_, crate::store::StoreError>(deliveries.len())
        };
        let kind = msg.kind;
        ctx.spawn(
            stored
                .into_actor(self)
                .map(move |stored, registry, ctx| match stored {
                    Ok(0) => {}
                    Ok(_) => registry.deliver_due(ctx),
                    Err(e) => tracing::error!(
                        event = kind.as_str(),
                        "could not store a webhook event: {e}"
                    ),
                }),
        );
    }
}
