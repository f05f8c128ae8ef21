//! `/v1/agents`: stored voice agents (create, list, read, partial update, archive).

use actix_web::{delete, get, post, put, web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::openapi::schema::{
    AdditionalProperties, Array, ArrayBuilder, Object, ObjectBuilder, SchemaType, Type,
};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use super::validate::{self, not_null, nullable};
use crate::app::AppState;
use crate::conversation::analysis;
use crate::conversation::tools::http_tools;
use crate::conversation::transfer::{self, TransferTarget};
use crate::error::{ApiError, ErrorBody};
use crate::ids::{AgentId, CollectionId, DeveloperId};
use crate::registry::agents::{ArchiveAgent, CreateAgent, GetAgent, ListAgents, UpdateAgent};
use crate::registry::tool_secrets;
use crate::store::agents::{AgentChanges, AgentRow, AgentStatus, DETECTED_LANGUAGE};
use crate::time::{self, iso};
use crate::vendors::catalog::{DEFAULT_PROVIDER, LLM_PROVIDERS, STT_PROVIDERS, TTS_PROVIDERS};

const DEFAULT_TEMPERATURE: f64 = 0.7;
const MAX_MODEL_CHARS: usize = 200;
const MAX_VOICE_CHARS: usize = 200;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_agent)
        .service(list_agents)
        .service(get_agent)
        .service(update_agent)
        .service(delete_agent);
    methods::other_methods(cfg, &["/agents", "/agents/{id}"]);
}

/// An agent as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentBody {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub system_prompt: Option<String>,
    pub first_message: Option<String>,
    pub voice_id: String,
    pub tts_provider: String,
    pub tts_model: Option<String>,
    /// Speech-to-text provider (an addition to the spec's fields); default `default`.
    pub stt_provider: String,
    pub llm_provider: String,
    pub llm_model: Option<String>,
    pub collection_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub style_profile: Option<Value>,
    pub language: String,
    pub temperature: f64,
    pub max_tokens: Option<i32>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// The people the agent may hand a phone call to with its `transfer_call` tool (at most
    /// 10); `[]` for none.
    pub transfer: Vec<TransferTargetBody>,
    /// What the agent's language model makes of each finished call: see [`ANALYSIS_DOC`];
    /// `null` for nothing.
    #[schema(schema_with = analysis_schema)]
    pub analysis: Option<Value>,
    /// `active`; archived agents are not served.
    pub status: String,
    pub created_at: String,
    pub updated_at: String,
    /// What in the agent will not work as written, in words (an addition to the spec's
    /// fields; `[]` when nothing): today, tools (`metadata.tools`, `transfer`) on the embedded
    /// language model, which cannot call them. The agent is saved all the same.
    pub warnings: Vec<String>,
}

impl From<AgentRow> for AgentBody {
    fn from(row: AgentRow) -> AgentBody {
        let warnings = warnings(&row);
        AgentBody {
            warnings,
            id: row.id.into(),
            name: row.name,
            description: row.description,
            system_prompt: row.system_prompt,
            first_message: row.first_message,
            voice_id: row.voice_id,
            tts_provider: row.tts_provider,
            tts_model: row.tts_model,
            stt_provider: row.stt_provider,
            llm_provider: row.llm_provider,
            llm_model: row.llm_model,
            collection_id: row.collection_id.map(String::from),
            style_profile: row.style_profile.as_deref().map(validate::stored_json),
            language: row.language,
            temperature: row.temperature,
            max_tokens: row.max_tokens,
            metadata: tool_secrets::shown(&validate::stored_json(&row.metadata)),
            transfer: transfer::stored_targets(&row.transfer)
                .into_iter()
                .map(TransferTargetBody::from)
                .collect(),
            analysis: analysis::stored(row.analysis.as_deref())
                .and_then(|spec| serde_json::to_value(spec).ok()),
            status: row.status.to_string(),
            created_at: iso(row.created_at),
            updated_at: iso(row.updated_at),
        }
    }
}

/// What will not work in agent `row` as written: tools on a model that cannot call them.
fn warnings(row: &AgentRow) -> Vec<String> {
    if row.llm_provider != DEFAULT_PROVIDER {
        return Vec::new();
    }
    let mut unusable = Vec::new();
    let metadata = validate::stored_json(&row.metadata);
    let tools = http_tools(&metadata).unwrap_or_default();
    if !tools.is_empty() {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        unusable.push(format!("metadata.tools ({})", names.join(", ")));
    }
    if !transfer::stored_targets(&row.transfer).is_empty() {
        unusable.push("transfer (the transfer_call tool)".to_string());
    }
    if unusable.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "llmProvider `{DEFAULT_PROVIDER}` (the embedded model) cannot call tools, so {} will not \
         run: the model is not offered them and sentences of the systemPrompt that name them are \
         left out of its prompt. Choose a vendor llmProvider for an agent that uses tools.",
        unusable.join(" and ")
    )]
}

/// A person an agent may hand a phone call to.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TransferTarget)]
pub struct TransferTargetBody {
    /// How the agent names them (`billing`, `Dr. Lee`): 1-64 characters, unique within the
    /// agent (case aside).
    pub name: String,
    /// E.164, such as `+14155550100`.
    pub number: String,
    /// When to hand the call to them, for the agent's language model: up to 500 characters,
    /// default empty.
    pub description: String,
    /// `cold` or `warm`: see [`MODE_DOC`].
    #[schema(schema_with = transfer_mode_schema)]
    pub mode: &'static str,
}

impl From<TransferTarget> for TransferTargetBody {
    fn from(target: TransferTarget) -> TransferTargetBody {
        TransferTargetBody {
            name: target.name,
            number: target.number,
            description: target.description,
            mode: target.mode.as_str(),
        }
    }
}

const MODE_DOC: &str = "`cold` (the default) redirects the call to the number; `warm` holds \
    the caller while the person is told what the call is about, then joins them.";

const TRANSFER_DOC: &str = "Up to 10 people the agent may hand a phone call to with its \
    `transfer_call` tool: `[{name, number, description, mode}]`. `name` is 1-64 characters, \
    unique within the agent (case aside); `number` is E.164; `description` (optional, up to 500 \
    characters) tells the agent when to hand over; `mode` `cold` (the default) redirects the \
    call, `warm` holds the caller while the person is told what the call is about, then joins \
    them. A list replaces the agent's whole list; `null` clears it to `[]`.";

fn transfer_mode_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["cold", "warm"]))
        .default(Some(Value::from("cold")))
        .description(Some(MODE_DOC))
        .build()
}

const ANALYSIS_DOC: &str = "Post-call analysis: after each of the agent's calls, its language \
    model reads the transcript and writes what is asked here, stored on the session \
    (`GET /v1/observability/sessions/{id}`, `analysis`) and sent as the `call.analyzed` webhook. \
    `{summary, successCriteria, dataSchema}`: `summary` (default true) a few sentences on who \
    called, what they wanted and how it ended; `successCriteria` (1-2000 characters) what a \
    successful call achieves, judged yes or no with a reason; `dataSchema` a JSON Schema of an \
    object (1-50 properties, at most 16 KiB, no references outside it) whose fields are \
    extracted from the call and checked against it. `null` turns analysis off.";

fn analysis_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .property(
            "summary",
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .default(Some(Value::Bool(true))),
        )
        .property(
            "successCriteria",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .min_length(Some(1))
                .max_length(Some(analysis::MAX_CRITERIA_CHARS)),
        )
        .property(
            "dataSchema",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
                .description(Some(
                    "A JSON Schema with \"type\": \"object\" and 1-50 properties.",
                )),
        )
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .description(Some(ANALYSIS_DOC))
        .build()
}

/// The request's `transfer`: a list or `null`, each target needing only `name` and `number`.
fn transfer_fields_schema() -> Array {
    let text = || ObjectBuilder::new().schema_type(Type::String);
    let target = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("name", text().min_length(Some(1)))
        .required("name")
        .property(
            "number",
            text()
                .pattern(Some(r"^\+[1-9][0-9]{1,14}$"))
                .description(Some("E.164, such as `+14155550100`.")),
        )
        .required("number")
        .property("description", text().max_length(Some(500)))
        .property("mode", transfer_mode_schema());
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(target)
        .max_items(Some(transfer::MAX_TARGETS))
        .description(Some(TRANSFER_DOC))
        .build()
}

/// The fields of an agent a client sets. On create, absent fields take their defaults; on
/// update, absent fields stay as they are and `null` clears a nullable field.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentFields {
    /// Custom id on create: 1-60 letters, digits, `_` or `-`. Generated when omitted.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub id: Option<Option<String>>,
    /// 1-100 characters; required on create.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
    /// Up to 1000 characters.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    /// Up to 10,000 characters.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub system_prompt: Option<Option<String>>,
    /// Greeting spoken at session start, up to 1000 characters.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub first_message: Option<Option<String>>,
    /// Default `default`.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub voice_id: Option<Option<String>>,
    /// A speech vendor id; default `default` (the embedded engine).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub tts_provider: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub tts_model: Option<Option<String>>,
    /// A transcription vendor id; default `default` (the embedded engine).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub stt_provider: Option<Option<String>>,
    /// A language-model vendor id; default `default` (the embedded engine).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub llm_provider: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub llm_model: Option<Option<String>>,
    /// A collection of the same developer, for retrieval.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub collection_id: Option<Option<String>>,
    /// Voice style configuration: an object, or null.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Object>)]
    pub style_profile: Option<Option<Map<String, Value>>>,
    /// Language code (`en`, `pt-BR`), default `en`; or `auto`: the caller's language is
    /// detected turn by turn, and the voice speaks its own. With `sttProvider` (or an stt
    /// fallback) `default`, a language the embedded recognizer hears (else 400 on create, and
    /// on an update that changes this, `sttProvider` or `metadata`).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub language: Option<Option<String>>,
    /// 0 to 2, default 0.7.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<f64>)]
    pub temperature: Option<Option<f64>>,
    /// 1 to 16384.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<i64>)]
    pub max_tokens: Option<Option<i64>>,
    /// Arbitrary key-value pairs (at most 64 KiB serialized). Three keys are read: `tools`
    /// (HTTP tools: `[{name, description, parameters, url, method, timeoutMs, secret,
    /// headers}]`; `secret` and the `headers` values are stored sealed and read back as
    /// `{"hint": "<last characters>"}`, which sent back keeps the stored value), `fallbacks` (providers to try in order) and `turnTaking`, the agent's own
    /// turn taking in voice sessions: `{endpointSilenceMs: 100-10000 (600), bargeInMs: 20-2000
    /// (200), turnDetection: "smart" | "silence" (the server's engines.turn_detection,
    /// "silence" by default), smartPauseMs: 60-2000 (200), completeThreshold: 0-1 (0.5),
    /// incompleteSilenceMs: 100-10000 (1500)}`. With "smart", the end-of-turn model judges
    /// each pause of `smartPauseMs`: at `completeThreshold` or above the turn ends there,
    /// below it the pause may last `incompleteSilenceMs`; `endpointSilenceMs` decides when
    /// the model gives no verdict in time. All three are checked when the agent is
    /// written.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Option<Map<String, Value>>>,
    /// The people the agent may hand a phone call to: see [`TRANSFER_DOC`].
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = transfer_fields_schema)]
    pub transfer: Option<Option<Value>>,
    /// Post-call analysis: see [`ANALYSIS_DOC`].
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = analysis_schema)]
    pub analysis: Option<Option<Value>>,
}

/// The agent fields after validation, ready for storage.
struct ValidFields {
    name: Option<String>,
    description: Option<Option<String>>,
    system_prompt: Option<Option<String>>,
    first_message: Option<Option<String>>,
    voice_id: Option<String>,
    tts_provider: Option<String>,
    tts_model: Option<Option<String>>,
    stt_provider: Option<String>,
    llm_provider: Option<String>,
    llm_model: Option<Option<String>>,
    collection_id: Option<Option<String>>,
    style_profile: Option<Option<String>>,
    language: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<Option<i32>>,
    metadata: Option<String>,
    transfer: Option<String>,
    analysis: Option<Option<String>>,
}

fn optional_text(
    param: &str,
    value: Option<Option<String>>,
    max: usize,
) -> Result<Option<Option<String>>, ApiError> {
    if let Some(Some(text)) = &value {
        validate::length(param, text, 0, max)?;
    }
    Ok(value)
}

fn provider(
    param: &str,
    value: Option<Option<String>>,
    known: &[&str],
) -> Result<Option<String>, ApiError> {
    let value = not_null(param, value)?;
    if let Some(id) = &value {
        validate::one_of(param, id, known)?;
    }
    Ok(value)
}

fn language(value: Option<Option<String>>) -> Result<Option<String>, ApiError> {
    let value = not_null("language", value)?;
    if value
        .as_deref()
        .is_some_and(|code| code.eq_ignore_ascii_case(DETECTED_LANGUAGE))
    {
        return Ok(Some(DETECTED_LANGUAGE.to_string()));
    }
    if let Some(code) = &value {
        let well_formed = (2..=35).contains(&code.len())
            && code.split('-').all(|part| {
                !part.is_empty()
                    && part.len() <= 8
                    && part.chars().all(|c| c.is_ascii_alphanumeric())
            });
        if !well_formed {
            return Err(ApiError::invalid(
                "language",
                format!("language '{code}' is not a language code such as `en` or `pt-BR`"),
            ));
        }
    }
    Ok(value)
}

/// A `transfer` value, read and checked, as the JSON array stored for it (`null` is `[]`).
fn transfer_json(value: &Value) -> Result<String, ApiError> {
    let targets =
        transfer::targets(value).map_err(|reason| ApiError::invalid("transfer", reason))?;
    serde_json::to_string(&targets).map_err(|e| ApiError::invalid("transfer", e.to_string()))
}

impl AgentFields {
    fn validate(self) -> Result<ValidFields, ApiError> {
        let name = not_null("name", self.name)?;
        if let Some(name) = &name {
            validate::required_text("name", Some(name), 100)?;
        }
        let voice_id = not_null("voiceId", self.voice_id)?;
        if let Some(voice) = &voice_id {
            validate::length("voiceId", voice, 1, MAX_VOICE_CHARS)?;
        }
        let collection_id = self.collection_id;
        if let Some(Some(id)) = &collection_id {
            validate::length("collectionId", id, 1, 100)?;
        }
        let temperature = not_null("temperature", self.temperature)?;
        if let Some(t) = temperature {
            validate::number_in("temperature", t, 0.0, 2.0)?;
        }
        let max_tokens = match self.max_tokens {
            Some(Some(n)) => {
                validate::integer_in("maxTokens", n, 1, 16_384)?;
                Some(Some(n as i32))
            }
            Some(None) => Some(None),
            None => None,
        };
        let metadata = match not_null("metadata", self.metadata)? {
            Some(map) => {
                crate::vendors::fallback::check_fallbacks(&map)
                    .map_err(|reason| ApiError::invalid("metadata", reason))?;
                crate::conversation::turn_taking::from_metadata(&Value::Object(map.clone()))
                    .map_err(|reason| ApiError::invalid("metadata", reason))?;
                crate::conversation::tools::http_tools(&Value::Object(map.clone()))
                    .map_err(|reason| ApiError::invalid("metadata", reason))?;
                Some(validate::metadata("metadata", Some(&map))?)
            }
            None => None,
        };
        let transfer = match self.transfer {
            Some(value) => Some(transfer_json(&value.unwrap_or(Value::Null))?),
            None => None,
        };
        let analysis =
            match self.analysis {
                Some(value) => {
                    let spec = analysis::parse(&value.unwrap_or(Value::Null))
                        .map_err(|reason| ApiError::invalid("analysis", reason))?;
                    Some(spec.map(|spec| {
                        serde_json::to_string(&spec).expect("an analysis spec serializes")
                    }))
                }
                None => None,
            };
        let style_profile = match self.style_profile {
            Some(Some(map)) => Some(Some(validate::metadata("styleProfile", Some(&map))?)),
            Some(None) => Some(None),
            None => None,
        };
        Ok(ValidFields {
            name,
            description: optional_text("description", self.description, 1000)?,
            system_prompt: optional_text("systemPrompt", self.system_prompt, 10_000)?,
            first_message: optional_text("firstMessage", self.first_message, 1000)?,
            voice_id,
            tts_provider: provider("ttsProvider", self.tts_provider, TTS_PROVIDERS)?,
            tts_model: optional_text("ttsModel", self.tts_model, MAX_MODEL_CHARS)?,
            stt_provider: provider("sttProvider", self.stt_provider, STT_PROVIDERS)?,
            llm_provider: provider("llmProvider", self.llm_provider, LLM_PROVIDERS)?,
            llm_model: optional_text("llmModel", self.llm_model, MAX_MODEL_CHARS)?,
            collection_id,
            style_profile,
            language: language(self.language)?,
            temperature,
            max_tokens,
            metadata,
            transfer,
            analysis,
        })
    }
}

/// Creates an agent.
#[utoipa::path(post, path = "/v1/agents", tag = "agents", request_body = AgentFields,
    responses((status = 201, body = AgentBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "an agent with this id already exists (archived ones included)"),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/agents")]
async fn create_agent(
    state: web::Data<AppState>,
    developer: Developer,
    body: ApiJson<AgentFields>,
) -> Result<HttpResponse, ApiError> {
    let agent = new_agent_row(developer.id(), body.into_inner())?;
    let agent = state.agents().send(CreateAgent { agent }).await??;
    Ok(HttpResponse::Created().json(AgentBody::from(agent)))
}

/// A new agent from create fields: validated, with every default filled in.
pub(crate) fn new_agent_row(
    developer_id: &DeveloperId,
    mut fields: AgentFields,
) -> Result<AgentRow, ApiError> {
    let id = not_null("id", fields.id.take())?;
    if let Some(id) = &id {
        validate::identifier("id", id, 60)?;
    }
    let fields = fields.validate()?;
    let name = fields
        .name
        .ok_or_else(|| ApiError::invalid("name", "name is required"))?;
    let now = time::now_ms();
    Ok(AgentRow {
        seq: 0,
        id: id.map_or_else(AgentId::new, AgentId::from),
        developer_id: developer_id.clone(),
        name,
        description: fields.description.flatten(),
        system_prompt: fields.system_prompt.flatten(),
        first_message: fields.first_message.flatten(),
        voice_id: fields.voice_id.unwrap_or_else(|| "default".to_string()),
        tts_provider: fields
            .tts_provider
            .unwrap_or_else(|| DEFAULT_PROVIDER.to_string()),
        tts_model: fields.tts_model.flatten(),
        stt_provider: fields
            .stt_provider
            .unwrap_or_else(|| DEFAULT_PROVIDER.to_string()),
        llm_provider: fields
            .llm_provider
            .unwrap_or_else(|| DEFAULT_PROVIDER.to_string()),
        llm_model: fields.llm_model.flatten(),
        collection_id: fields.collection_id.flatten().map(CollectionId::from),
        style_profile: fields.style_profile.flatten(),
        language: fields.language.unwrap_or_else(|| "en".to_string()),
        temperature: fields.temperature.unwrap_or(DEFAULT_TEMPERATURE),
        max_tokens: fields.max_tokens.flatten(),
        metadata: fields.metadata.unwrap_or_else(|| "{}".to_string()),
        transfer: fields.transfer.unwrap_or_else(|| "[]".to_string()),
        analysis: fields.analysis.flatten(),
        status: AgentStatus::Active,
        created_at: now,
        updated_at: now,
    })
}

/// Lists the caller's agents in creation order; archived agents are left out.
#[utoipa::path(get, path = "/v1/agents", tag = "agents", params(PageQuery),
    responses((status = 200, body = PageBody<AgentBody>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/agents")]
async fn list_agents(
    state: web::Data<AppState>,
    developer: Developer,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let ask = ListAgents {
        developer_id: developer.id().clone(),
        page,
    };
    pagination::answer_page(state.agents(), ask, AgentBody::from).await
}

/// Reads one agent.
#[utoipa::path(get, path = "/v1/agents/{id}", tag = "agents", params(("id" = String, Path)),
    responses((status = 200, body = AgentBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/agents/{id}")]
async fn get_agent(
    state: web::Data<AppState>,
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
    Ok(HttpResponse::Ok().json(AgentBody::from(agent)))
}

/// Changes the provided fields only; `null` clears a nullable field.
#[utoipa::path(put, path = "/v1/agents/{id}", tag = "agents", params(("id" = String, Path)), request_body = AgentFields,
    responses((status = 200, body = AgentBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[put("/agents/{id}")]
async fn update_agent(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
    body: ApiJson<AgentFields>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let mut fields = body.into_inner();
    match not_null("id", fields.id.take())? {
        Some(new_id) if new_id != id => {
            return Err(ApiError::invalid("id", "an agent's id cannot be changed"));
        }
        _ => {}
    }
    let fields = fields.validate()?;
    let changes = AgentChanges {
        name: fields.name,
        description: fields.description,
        system_prompt: fields.system_prompt,
        first_message: fields.first_message,
        voice_id: fields.voice_id,
        tts_provider: fields.tts_provider,
        tts_model: fields.tts_model,
        stt_provider: fields.stt_provider,
        llm_provider: fields.llm_provider,
        llm_model: fields.llm_model,
        collection_id: fields.collection_id.map(|c| c.map(CollectionId::from)),
        style_profile: fields.style_profile,
        language: fields.language,
        temperature: fields.temperature,
        max_tokens: fields.max_tokens,
        metadata: fields.metadata,
        transfer: fields.transfer,
        analysis: fields.analysis,
        updated_at: time::now_ms(),
    };
    let agent = state
        .agents()
        .send(UpdateAgent {
            developer_id: developer.id().clone(),
            agent_id: id.into(),
            changes,
        })
        .await??;
    Ok(HttpResponse::Ok().json(AgentBody::from(agent)))
}

/// Archives the agent: it is no longer served or listed, and its id stays taken.
#[utoipa::path(delete, path = "/v1/agents/{id}", tag = "agents", params(("id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/agents/{id}")]
async fn delete_agent(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .agents()
        .send(ArchiveAgent {
            developer_id: developer.id().clone(),
            agent_id: id.into_inner().into(),
        })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}
