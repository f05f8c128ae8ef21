//! `/v1/collections/{id}/ingest`, `/search` and `/documents/{documentId}`: putting documents
//! into a collection (text, transcripts, transcribed audio, web pages), semantic search, and
//! deleting a document.

use actix_web::{delete, post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::auth::{Developer, PROVIDER_USED};
use super::body::ApiJson;
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::billing::Usage;
use crate::error::{ApiError, ErrorBody};
use crate::fetch::FetchError;
use crate::ids::{CollectionId, DeveloperId, DocumentId};
use crate::knowledge::chunking::{chunk, Layout};
use crate::knowledge::html::readable_text;
use crate::registry::collections::GetCollection;
use crate::registry::jobs::extension_of;
use crate::registry::knowledge::{DeleteDocument, StoreDocument};
use crate::registry::meter;
use crate::registry::search::{search_collection, KnowledgeHit};
use crate::speech::transcription::{transcribe_file, TranscriptionRequest};
use crate::store::documents::{bytes_of, ChunkRow, DocumentRow};
use crate::time;
use crate::vendors::catalog::DEFAULT_PROVIDER;

/// Largest `content`, in bytes of UTF-8.
pub const MAX_CONTENT_BYTES: usize = 1024 * 1024;
const CONTENT_TYPES: [&str; 4] = ["text", "transcript", "audio", "url"];
const MAX_QUERY_CHARS: usize = 2000;
const MAX_URL_CHARS: usize = 2048;
/// Texts embedded per engine call during ingest.
const EMBED_BATCH: usize = 64;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(ingest).service(search).service(delete_document);
    methods::other_methods(
        cfg,
        &[
            "/collections/{id}/ingest",
            "/collections/{id}/search",
            "/collections/{id}/documents/{documentId}",
        ],
    );
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IngestRequest {
    /// The text (`text`, `transcript`), up to 1 MB. Not used for `audio` and `url`.
    pub content: Option<String>,
    /// `text` (default), `transcript` (one speaker turn per line), `audio` (sourceUrl is
    /// transcribed) or `url` (sourceUrl is fetched; HTML becomes readable text).
    pub content_type: Option<String>,
    /// Required for `audio` and `url`; stored with the document otherwise.
    pub source_url: Option<String>,
    /// Characters per chunk, 100-4000, default 1000.
    pub chunk_size: Option<i64>,
    /// Characters carried over between chunks, 0-500 and less than chunkSize, default 200.
    pub chunk_overlap: Option<i64>,
    /// Attached to every chunk of the document.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngestBody {
    pub document_id: String,
    pub chunks_created: usize,
    /// Tokens embedded, as the embedding model's tokenizer counts them.
    pub tokens_used: usize,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchRequest {
    /// 1-2000 characters.
    pub query: Option<String>,
    /// 1-100, default 10.
    pub limit: Option<i64>,
    /// 0-1, default 0.7; score = (cosine similarity + 1) / 2.
    pub threshold: Option<f64>,
    /// Default true.
    pub include_metadata: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchBody {
    pub results: Vec<KnowledgeHit>,
}

/// A validated ingest request.
struct Ingest {
    layout: Layout,
    content_type: String,
    content: Option<String>,
    source_url: Option<String>,
    size: usize,
    overlap: usize,
    metadata: Map<String, Value>,
}

fn validate_ingest(request: IngestRequest) -> Result<Ingest, ApiError> {
    let content_type = request.content_type.unwrap_or_else(|| "text".into());
    validate::one_of("contentType", &content_type, &CONTENT_TYPES)?;
    let size = request.chunk_size.unwrap_or(1000);
    validate::integer_in("chunkSize", size, 100, 4000)?;
    let overlap = request.chunk_overlap.unwrap_or(200);
    validate::integer_in("chunkOverlap", overlap, 0, 500)?;
    if overlap >= size {
        return Err(ApiError::invalid(
            "chunkOverlap",
            "chunkOverlap must be less than chunkSize",
        ));
    }
    let metadata = request.metadata.unwrap_or_default();
    validate::metadata("metadata", Some(&metadata))?;
    if let Some(url) = &request.source_url {
        validate::length("sourceUrl", url, 1, MAX_URL_CHARS)?;
        if !url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https")) {
            return Err(ApiError::invalid(
                "sourceUrl",
                "sourceUrl must be an http or https URL",
            ));
        }
    }
    let needs_url = matches!(content_type.as_str(), "audio" | "url");
    if needs_url && request.source_url.is_none() {
        return Err(ApiError::invalid(
            "sourceUrl",
            format!("sourceUrl is required for contentType {content_type}"),
        ));
    }
    if !needs_url {
        let content = request.content.as_deref().unwrap_or("");
        if content.trim().is_empty() {
            return Err(ApiError::invalid(
                "content",
                "content is required and must not be blank",
            ));
        }
        if content.len() > MAX_CONTENT_BYTES {
            return Err(ApiError::invalid("content", "content must be at most 1 MB"));
        }
        validate::length("content", content, 1, MAX_CONTENT_BYTES)?;
    }
    Ok(Ingest {
        layout: if content_type == "text" || content_type == "url" {
            Layout::Text
        } else {
            Layout::Transcript
        },
        content_type,
        content: request.content,
        source_url: request.source_url,
        size: size as usize,
        overlap: overlap as usize,
        metadata,
    })
}

fn source_error(error: FetchError) -> ApiError {
    match error {
        FetchError::TooLarge(_) => ApiError::PayloadTooLarge(error.to_string()),
        other => ApiError::invalid(
            "sourceUrl",
            format!("sourceUrl could not be fetched: {other}"),
        ),
    }
}

/// One piece of text to chunk, with metadata of its own (audio segment times).
struct Section {
    text: String,
    extra: Map<String, Value>,
}

/// Turns the request into text sections: the content itself, a transcript of the audio
/// (segment times kept), or a web page's readable text.
async fn sections_of(state: &AppState, request: &Ingest) -> Result<Vec<Section>, ApiError> {
    let url = request.source_url.as_deref().unwrap_or_default();
    match request.content_type.as_str() {
        "audio" => {
            let fetched = state.fetcher().fetch(url).await.map_err(source_error)?;
            let extension = extension_of(fetched.url.path());
            let transcript = transcribe_file(
                state.engines().batch.stt.clone(),
                fetched.bytes,
                extension,
                TranscriptionRequest::default(),
            )
            .await
            .map_err(|e| match ApiError::from(e) {
                ApiError::Validation { message, .. } => ApiError::invalid("sourceUrl", message),
                ApiError::UnsupportedMediaType(message) => ApiError::invalid("sourceUrl", message),
                other => other,
            })?;
            Ok(transcript
                .segments
                .into_iter()
                .filter(|s| !s.text.trim().is_empty())
                .map(|s| {
                    let mut extra = Map::new();
                    extra.insert("startTime".into(), Value::from(round(s.start)));
                    extra.insert("endTime".into(), Value::from(round(s.end)));
                    Section {
                        text: s.text.trim().to_string(),
                        extra,
                    }
                })
                .collect())
        }
        "url" => {
            let fetched = state.fetcher().fetch(url).await.map_err(source_error)?;
            let content_type = fetched
                .content_type
                .unwrap_or_default()
                .to_ascii_lowercase();
            let body = String::from_utf8_lossy(&fetched.bytes).into_owned();
            let text = if content_type.contains("html") || body.trim_start().starts_with('<') {
                tokio::task::spawn_blocking(move || readable_text(&body))
                    .await
                    .map_err(|_| ApiError::Internal("reading the page failed".into()))?
            } else if content_type.starts_with("text/") || content_type.is_empty() {
                body
            } else {
                return Err(ApiError::invalid(
                    "sourceUrl",
                    format!("sourceUrl serves {content_type}, not a web page or text"),
                ));
            };
            if text.len() > MAX_CONTENT_BYTES {
                return Err(ApiError::PayloadTooLarge(
                    "the page's text is over the 1 MB content limit".into(),
                ));
            }
            Ok(vec![Section {
                text,
                extra: Map::new(),
            }])
        }
        _ => Ok(vec![Section {
            text: request.content.clone().unwrap_or_default(),
            extra: Map::new(),
        }]),
    }
}

fn round(seconds: f32) -> f64 {
    (f64::from(seconds) * 1000.0).round() / 1000.0
}

/// A document ready to store: its row, its chunks and their vectors.
pub struct PreparedDocument {
    pub document: DocumentRow,
    pub chunks: Vec<ChunkRow>,
    pub vectors: Vec<Vec<f32>>,
}

impl PreparedDocument {
    pub fn body(&self) -> IngestBody {
        IngestBody {
            document_id: self.document.id.to_string(),
            chunks_created: self.chunks.len(),
            tokens_used: self.document.tokens as usize,
        }
    }
}

/// Validates an ingest request and turns it into a document: its text (fetched or
/// transcribed when asked), chunked and embedded. Nothing is stored.
pub async fn prepare_document(
    state: &AppState,
    developer_id: &DeveloperId,
    collection_id: &CollectionId,
    request: IngestRequest,
) -> Result<PreparedDocument, ApiError> {
    let plan = validate_ingest(request)?;
    let sections = sections_of(state, &plan).await?;

    // Chunks: text and transcripts as one body; audio keeps each chunk's segment times.
    let mut pieces: Vec<(String, Map<String, Value>)> = Vec::new();
    if plan.content_type == "audio" {
        let lines: Vec<String> = sections.iter().map(|s| s.text.clone()).collect();
        let joined = lines.join("\n");
        for text in chunk(&joined, Layout::Transcript, plan.size, plan.overlap) {
            let covered: Vec<&Section> = sections
                .iter()
                .filter(|s| text.contains(s.text.as_str()))
                .collect();
            let mut extra = Map::new();
            if let (Some(first), Some(last)) = (covered.first(), covered.last()) {
                extra.insert("startTime".into(), first.extra["startTime"].clone());
                extra.insert("endTime".into(), last.extra["endTime"].clone());
            }
            pieces.push((text, extra));
        }
    } else {
        for section in &sections {
            for text in chunk(&section.text, plan.layout, plan.size, plan.overlap) {
                pieces.push((text, section.extra.clone()));
            }
        }
    }
    if pieces.is_empty() {
        return Err(ApiError::invalid(
            if plan.content_type == "text" || plan.content_type == "transcript" {
                "content"
            } else {
                "sourceUrl"
            },
            "the source holds no text to ingest",
        ));
    }

    let embedder = state.engines().batch.embedder.clone();
    let texts: Vec<String> = pieces.iter().map(|(t, _)| t.clone()).collect();
    let tokens_used: usize = texts.iter().map(|t| embedder.count_tokens(t)).sum();
    let mut vectors = Vec::with_capacity(texts.len());
    for batch in texts.chunks(EMBED_BATCH) {
        vectors.extend(embedder.embed(batch.to_vec()).await?);
    }

    let document_id = DocumentId::new();
    let now = time::now_ms();
    let rows: Vec<ChunkRow> = pieces
        .iter()
        .zip(&vectors)
        .enumerate()
        .map(|(index, ((text, extra), vector))| {
            let mut metadata = plan.metadata.clone();
            for (key, value) in extra {
                metadata.entry(key.clone()).or_insert_with(|| value.clone());
            }
            ChunkRow {
                document_id: document_id.clone(),
                collection_id: collection_id.clone(),
                chunk_index: index as i32,
                content: text.clone(),
                metadata: Value::Object(metadata).to_string(),
                embedding: Some(bytes_of(vector)),
            }
        })
        .collect();
    let document = DocumentRow {
        id: document_id.clone(),
        developer_id: developer_id.clone(),
        collection_id: collection_id.clone(),
        content_type: plan.content_type.clone(),
        source_url: plan.source_url.clone(),
        metadata: Value::Object(plan.metadata.clone()).to_string(),
        chunk_count: rows.len() as i32,
        tokens: tokens_used as i64,
        created_at: now,
    };
    Ok(PreparedDocument {
        document,
        chunks: rows,
        vectors,
    })
}

/// Adds a document to a collection: chunks, embeds and stores it in one transaction.
#[utoipa::path(post, path = "/v1/collections/{id}/ingest", tag = "collections",
    params(("id" = String, Path, description = "Collection id")),
    request_body = IngestRequest,
    responses((status = 201, body = IngestBody), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/collections/{id}/ingest")]
async fn ingest(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
    body: ApiJson<IngestRequest>,
) -> Result<HttpResponse, ApiError> {
    let collection_id = CollectionId::from(id.into_inner());
    let plan = body.into_inner();
    state
        .collections()
        .send(GetCollection {
            developer_id: developer.id().clone(),
            collection_id: collection_id.clone(),
        })
        .await??;
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    let prepared = prepare_document(&state, developer.id(), &collection_id, plan).await?;
    meter::charge(
        state.metering(),
        developer.id(),
        Usage::RagEmbed {
            tokens: prepared.document.tokens.max(0) as u64,
        },
        true,
    );
    let body = prepared.body();
    let stored = state
        .knowledge()
        .send(StoreDocument {
            document: prepared.document,
            chunks: prepared.chunks,
            vectors: prepared.vectors,
        })
        .await??;
    if !stored {
        return Err(ApiError::not_found("collection", collection_id.as_str()));
    }
    // The embedded embedder (and for audio the embedded recogniser) did the work.
    Ok(HttpResponse::Created()
        .insert_header((PROVIDER_USED, DEFAULT_PROVIDER))
        .json(body))
}

/// Finds the chunks closest in meaning to a query.
#[utoipa::path(post, path = "/v1/collections/{id}/search", tag = "collections",
    params(("id" = String, Path, description = "Collection id")),
    request_body = SearchRequest,
    responses((status = 200, body = SearchBody), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/collections/{id}/search")]
async fn search(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
    body: ApiJson<SearchRequest>,
) -> Result<HttpResponse, ApiError> {
    let collection_id = CollectionId::from(id.into_inner());
    let request = body.into_inner();
    validate::required_text("query", request.query.as_deref(), MAX_QUERY_CHARS)?;
    let limit = request.limit.unwrap_or(10);
    validate::integer_in("limit", limit, 1, 100)?;
    let threshold = request.threshold.unwrap_or(0.7);
    validate::number_in("threshold", threshold, 0.0, 1.0)?;
    let include_metadata = request.include_metadata.unwrap_or(true);
    state
        .collections()
        .send(GetCollection {
            developer_id: developer.id().clone(),
            collection_id: collection_id.clone(),
        })
        .await??;
    meter::ensure_credits(state.metering(), developer.id(), true).await?;
    let results = search_collection(
        state.engines().batch.embedder.as_ref(),
        state.knowledge(),
        &collection_id,
        request.query.unwrap_or_default(),
        limit as usize,
        threshold as f32,
    )
    .await?;
    meter::charge(
        state.metering(),
        developer.id(),
        Usage::RagSearch { searches: 1 },
        true,
    );
    let results = results
        .into_iter()
        .map(|mut hit| {
            if !include_metadata {
                hit.metadata = None;
            }
            hit
        })
        .collect();
    Ok(HttpResponse::Ok()
        .insert_header((PROVIDER_USED, DEFAULT_PROVIDER))
        .json(SearchBody { results }))
}

/// Deletes one document and its chunks; they leave search results at once.
#[utoipa::path(delete, path = "/v1/collections/{id}/documents/{documentId}", tag = "collections",
    params(("id" = String, Path, description = "Collection id"), ("documentId" = String, Path, description = "Document id")),
    responses((status = 204, description = "Deleted"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/collections/{id}/documents/{documentId}")]
async fn delete_document(
    state: web::Data<AppState>,
    developer: Developer,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (collection_id, document_id) = path.into_inner();
    let deleted = state
        .knowledge()
        .send(DeleteDocument {
            developer_id: developer.id().clone(),
            collection_id: collection_id.into(),
            document_id: DocumentId::from(document_id.as_str()),
        })
        .await??;
    if !deleted {
        return Err(ApiError::not_found("document", &document_id));
    }
    Ok(HttpResponse::NoContent().finish())
}
