//! `/v1/collections`: knowledge collections (create, list, read, delete with everything in
//! them).

use actix_web::{delete, get, post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use super::validate;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::CollectionId;
use crate::registry::collections::{
    CreateCollection, DeleteCollection, GetCollection, ListCollections,
};
use crate::registry::knowledge::CollectionDropped;
use crate::store::collections::CollectionRow;
use crate::time::{self, iso};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_collection)
        .service(list_collections)
        .service(get_collection)
        .service(delete_collection);
    methods::other_methods(cfg, &["/collections", "/collections/{id}"]);
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CollectionBody {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub created_at: String,
}

impl From<CollectionRow> for CollectionBody {
    fn from(row: CollectionRow) -> CollectionBody {
        CollectionBody {
            id: row.id.into(),
            name: row.name,
            description: row.description,
            metadata: validate::stored_json(&row.metadata),
            created_at: iso(row.created_at),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateCollectionRequest {
    /// 1-100 characters, required.
    pub name: Option<String>,
    /// Up to 500 characters.
    pub description: Option<String>,
    /// Arbitrary key-value pairs (at most 64 KiB serialized).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// Creates a collection.
#[utoipa::path(post, path = "/v1/collections", tag = "collections", request_body = CreateCollectionRequest,
    responses((status = 201, body = CollectionBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 415, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/collections")]
async fn create_collection(
    state: web::Data<AppState>,
    developer: Developer,
    body: ApiJson<CreateCollectionRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    validate::required_text("name", request.name.as_deref(), 100)?;
    validate::optional_text("description", request.description.as_deref(), 500)?;
    let metadata = validate::metadata("metadata", request.metadata.as_ref())?;
    let collection = CollectionRow {
        seq: 0,
        id: CollectionId::new(),
        developer_id: developer.id().clone(),
        name: request.name.unwrap_or_default(),
        description: request.description,
        metadata,
        created_at: time::now_ms(),
    };
    let collection = state
        .collections()
        .send(CreateCollection { collection })
        .await??;
    Ok(HttpResponse::Created().json(CollectionBody::from(collection)))
}

/// Lists the caller's collections in creation order.
#[utoipa::path(get, path = "/v1/collections", tag = "collections", params(PageQuery),
    responses((status = 200, body = PageBody<CollectionBody>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/collections")]
async fn list_collections(
    state: web::Data<AppState>,
    developer: Developer,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let ask = ListCollections {
        developer_id: developer.id().clone(),
        page,
    };
    pagination::answer_page(state.collections(), ask, CollectionBody::from).await
}

/// Reads one collection.
#[utoipa::path(get, path = "/v1/collections/{id}", tag = "collections", params(("id" = String, Path)),
    responses((status = 200, body = CollectionBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/collections/{id}")]
async fn get_collection(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let collection = state
        .collections()
        .send(GetCollection {
            developer_id: developer.id().clone(),
            collection_id: id.into_inner().into(),
        })
        .await??;
    Ok(HttpResponse::Ok().json(CollectionBody::from(collection)))
}

/// Deletes the collection with all its documents and chunks; agents that used it are
/// detached (their `collectionId` becomes null).
#[utoipa::path(delete, path = "/v1/collections/{id}", tag = "collections", params(("id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/collections/{id}")]
async fn delete_collection(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let collection_id = CollectionId::from(id.into_inner());
    state
        .collections()
        .send(DeleteCollection {
            developer_id: developer.id().clone(),
            collection_id: collection_id.clone(),
        })
        .await??;
    state
        .knowledge()
        .do_send(CollectionDropped { collection_id });
    Ok(HttpResponse::NoContent().finish())
}
