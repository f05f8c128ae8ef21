//! List pagination: `?limit=` (default 20, 1-100) and `?cursor=` (the id after which to
//! continue); answers `{data, nextCursor, hasMore}`.

use actix::dev::ToEnvelope;
use actix::{Actor, Context, Handler, Message};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::registry::{Page, PageRequest};
use crate::supervision::Supervised;

pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 100;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page, 1-100 (default 20).
    #[param(value_type = Option<i64>)]
    pub limit: Option<String>,
    /// The id of the last item of the previous page.
    pub cursor: Option<String>,
}

impl PageQuery {
    pub fn validate(self) -> Result<PageRequest, ApiError> {
        let limit = match self.limit.as_deref() {
            None => DEFAULT_LIMIT,
            Some(text) => text.trim().parse::<i64>().map_err(|_| {
                ApiError::invalid(
                    "limit",
                    format!("limit must be an integer between 1 and {MAX_LIMIT}"),
                )
            })?,
        };
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::invalid(
                "limit",
                format!("limit must be between 1 and {MAX_LIMIT}"),
            ));
        }
        let cursor = self.cursor.filter(|cursor| !cursor.is_empty());
        Ok(PageRequest { limit, cursor })
    }
}

/// A page of items as the API answers it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageBody<T> {
    pub data: Vec<T>,
    pub next_cursor: Option<String>,
    pub has_more: bool,
}

impl<T> PageBody<T> {
    pub fn from_page<R>(page: Page<R>, view: impl FnMut(R) -> T) -> PageBody<T> {
        let page = page.map(view);
        PageBody {
            data: page.items,
            next_cursor: page.next_cursor,
            has_more: page.has_more,
        }
    }
}

/// A list endpoint's answer: sends `message` (a list request with its page validated by
/// [`PageQuery::validate`]) to `registry` and answers `200` with the page, each row shown as
/// `view` shows it.
pub async fn answer_page<A, M, R, T>(
    registry: &Supervised<A>,
    message: M,
    view: impl FnMut(R) -> T,
) -> Result<HttpResponse, ApiError>
where
    A: Actor<Context = Context<A>> + Handler<M>,
    A::Context: ToEnvelope<A, M>,
    M: Message<Result = Result<Page<R>, ApiError>> + Send + 'static,
    R: Send,
    T: Serialize,
{
    let page = registry.send(message).await??;
    Ok(HttpResponse::Ok().json(PageBody::from_page(page, view)))
}
