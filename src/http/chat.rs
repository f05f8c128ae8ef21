//! `POST /v1/agents/{id}/chat`: one turn of a text conversation with an agent. Before the
//! language model runs, the agent's collection is searched for the message (and the previous
//! user message) and the best chunks go into the system prompt, so retrieval works even with
//! a model that cannot call tools; models that can also get `search_knowledge`,
//! `end_conversation` and the agent's HTTP tools, for up to `maxSteps` rounds.

use actix_web::{post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use switchboard_actors::engine::{ChatMessage, Role, ToolCall};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::billing::Usage;
use crate::conversation::grounding::GroundedModel;
use crate::conversation::prompt::{knowledge_section, system_prompt, without_tool_mentions};
use crate::conversation::retrieval;
use crate::conversation::tools::{http_tools, tool_names, AgentTools, CallContext, HttpTools};
use crate::conversation::turn::{run_turn, ToolCallRecord, TurnSettings};
use crate::engines::pool::Lane;
use crate::error::{ApiError, ErrorBody};
use crate::ids::ConversationId;
use crate::providers::{self, Caller};
use crate::registry::agents::GetAgent;
use crate::registry::conversations::{LoadConversation, SaveTurn};
use crate::registry::instances::{GetInstance, InstanceLookup};
use crate::registry::meter;
use crate::registry::search::KnowledgeHit;
use crate::store::conversations::{ConversationRow, MessageRow};
use crate::store::instances::InstanceRow;
use crate::telephony::is_e164;
use crate::time;

const MAX_MESSAGE_CHARS: usize = 10_000;
/// Answer length when the agent sets no maxTokens.
const DEFAULT_MAX_TOKENS: u32 = 256;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(chat);
    methods::other_methods(cfg, &["/agents/{id}/chat"]);
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChatRequestBody {
    /// 1-10,000 characters.
    pub message: Option<String>,
    /// Continues a stored conversation with this agent; a new one starts when absent.
    pub conversation_id: Option<String>,
    /// An instance of the agent whose context and variables personalise the prompt.
    pub instance_id: Option<String>,
    /// E.164; picks the agent's instance with this phone number, if there is one.
    pub caller_phone: Option<String>,
    /// 1-8, default 5: tool rounds per turn.
    pub max_steps: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatResponseBody {
    pub reply: String,
    pub conversation_id: String,
    /// 0 for a conversation's first turn.
    pub turn_index: i32,
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: TokenUsageBody,
    /// The instance that personalised this turn, if any.
    pub instance_id: Option<String>,
    /// True when the agent ended the conversation (it then takes no more turns).
    pub ended: bool,
}

/// Tokens one chat turn used. (Named apart from `GET /v1/usage`'s `UsageBody`: the OpenAPI
/// document keys schemas by name, and one name for both made chat answers fail their schema.)
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBody {
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// One turn of a conversation with an agent.
#[utoipa::path(post, path = "/v1/agents/{id}/chat", tag = "agents", request_body = ChatRequestBody,
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = ChatResponseBody), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "The conversation has ended", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/agents/{id}/chat")]
async fn chat(
    state: web::Data<AppState>,
    developer: Developer,
    http: HttpRequest,
    id: web::Path<String>,
    body: ApiJson<ChatRequestBody>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    validate::required_text("message", request.message.as_deref(), MAX_MESSAGE_CHARS)?;
    let max_steps = request.max_steps.unwrap_or(5);
    validate::integer_in("maxSteps", max_steps, 1, 8)?;
    if let Some(phone) = &request.caller_phone {
        if !is_e164(phone) {
            return Err(ApiError::invalid(
                "callerPhone",
                "callerPhone must be in E.164 form, e.g. +14155550123",
            ));
        }
    }
    let message = request.message.unwrap_or_default();
    let developer_id = developer.id().clone();
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: id.into_inner().into(),
        })
        .await??;
    let llm = providers::for_agent::<providers::Llm>(
        &state,
        &agent,
        Caller {
            developer_id: &developer_id,
            headers: Some(http.headers()),
            lane: Lane::Batch,
        },
    )
    .await?;
    let tools = http_tools(&validate::stored_json(&agent.metadata))
        .map_err(|reason| ApiError::invalid("agent.metadata.tools", reason))?;

    // The conversation: continued (with its history) or new.
    let (conversation, history, is_new) = match &request.conversation_id {
        Some(conversation_id) => {
            let (row, history) = state
                .conversations()
                .send(LoadConversation {
                    developer_id: developer_id.clone(),
                    agent_id: agent.id.clone(),
                    conversation_id: conversation_id.as_str().into(),
                })
                .await??;
            if row.ended {
                return Err(ApiError::Conflict(format!(
                    "conversation '{conversation_id}' has ended; start a new one"
                )));
            }
            (row, history, false)
        }
        None => {
            let now = time::now_ms();
            let row = ConversationRow {
                seq: 0,
                id: ConversationId::new(),
                developer_id: developer_id.clone(),
                agent_id: agent.id.clone(),
                instance_id: None,
                turns: 0,
                ended: false,
                created_at: now,
                updated_at: now,
            };
            (row, Vec::new(), true)
        }
    };

    // The instance: named, matched by phone, or the one the conversation started with.
    let lookup = match (
        &request.instance_id,
        &request.caller_phone,
        &conversation.instance_id,
    ) {
        (Some(id), _, _) => Some((InstanceLookup::Id(id.as_str().into()), true)),
        (None, Some(phone), _) => Some((InstanceLookup::Phone(phone.clone()), false)),
        (None, None, Some(id)) => Some((InstanceLookup::Id(id.clone()), false)),
        (None, None, None) => None,
    };
    let instance: Option<InstanceRow> = match lookup {
        None => None,
        Some((lookup, required)) => {
            let found = state
                .agents()
                .send(GetInstance {
                    developer_id: developer_id.clone(),
                    agent_id: agent.id.clone(),
                    lookup,
                })
                .await?;
            match found {
                Ok(row) => Some(row),
                Err(ApiError::NotFound(message)) if required => {
                    return Err(ApiError::invalid("instanceId", message))
                }
                Err(ApiError::NotFound(_)) => None,
                Err(other) => return Err(other),
            }
        }
    };
    let mut conversation = conversation;
    if is_new {
        conversation.instance_id = instance.as_ref().map(|i| i.id.clone());
    }

    // Retrieval for the message and the previous user message.
    let knowledge: Vec<KnowledgeHit> = match &agent.collection_id {
        Some(collection) => {
            let previous = history
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .map(|m| m.content.as_str());
            retrieval::retrieve(
                state.engines().batch.embedder.as_ref(),
                state.knowledge(),
                collection,
                &message,
                previous,
            )
            .await?
        }
        None => Vec::new(),
    };
    let variables: Map<String, Value> = instance
        .as_ref()
        .and_then(|i| validate::stored_json(&i.metadata).as_object().cloned())
        .unwrap_or_default();
    // The embedded model cannot call tools (retrieval is already in its prompt), so its
    // prompt does not name them either.
    let offer_tools = agent.llm_provider != crate::vendors::catalog::DEFAULT_PROVIDER;
    let mut system = system_prompt(
        agent.system_prompt.as_deref(),
        &variables,
        instance.as_ref().map(|i| i.context.as_str()),
    );
    if !offer_tools {
        system = without_tool_mentions(&system, &tool_names(&tools));
    }
    let mut messages = vec![ChatMessage::new(Role::System, system)];
    messages.extend(history.iter().filter_map(to_chat_message));
    // The turn's knowledge right before the message, so what comes before it is the prompt
    // the last turn began with (see `conversation::prompt`).
    if let Some(section) = knowledge_section(&knowledge) {
        messages.push(ChatMessage::new(Role::System, section));
    }
    messages.push(ChatMessage::new(Role::User, message.clone()));

    let agent_tools = AgentTools::new(
        state.engines().batch.embedder.clone(),
        state.knowledge().clone(),
        state.fetcher().clone(),
        agent.collection_id.clone(),
        HttpTools {
            tools,
            secrets: state.tool_secrets().clone(),
            developer_id: developer_id.clone(),
        },
    )
    // A chat is no call: its tools learn the agent, the instance and the caller's number.
    .for_context(CallContext {
        agent_id: Some(agent.id.clone()),
        instance_id: instance.as_ref().map(|i| i.id.clone()),
        from: request.caller_phone.clone(),
        ..CallContext::default()
    });
    let settings = TurnSettings {
        temperature: agent.temperature as f32,
        max_tokens: agent
            .max_tokens
            .map_or(DEFAULT_MAX_TOKENS, |t| t.max(1) as u32),
        max_steps: max_steps as u32,
        offer_tools,
        conversation: Some(conversation.id.to_string()),
    };
    meter::ensure_credits(state.metering(), &developer_id, llm.metered_up_front()).await?;
    // No number, price, date or address the model was not given reaches the caller.
    let grounded = std::sync::Arc::new(GroundedModel::new(llm.engine.clone(), false));
    let outcome = run_turn(grounded, &agent_tools, messages, settings).await?;
    meter::charge(
        state.metering(),
        &developer_id,
        Usage::Llm {
            input_tokens: u64::from(outcome.input_tokens),
            output_tokens: u64::from(outcome.output_tokens),
        },
        !llm.bypasses_metering(),
    );

    let turn_index = conversation.turns;
    let now = time::now_ms();
    let mut rows = vec![MessageRow {
        conversation_id: conversation.id.clone(),
        turn_index,
        role: "user".into(),
        content: message,
        tool_calls: "[]".into(),
        created_at: now,
    }];
    rows.extend(outcome.added.iter().map(|m| MessageRow {
        conversation_id: conversation.id.clone(),
        turn_index,
        role: role_name(m.role).into(),
        content: m.content.clone(),
        tool_calls: stored_calls(m),
        created_at: now,
    }));
    state
        .conversations()
        .send(SaveTurn {
            conversation: conversation.clone(),
            is_new,
            messages: rows,
            ended: outcome.ended,
        })
        .await??;
    let mut response = HttpResponse::Ok();
    super::auth::tag_provider(&llm, &mut response);
    Ok(response.json(ChatResponseBody {
        reply: outcome.reply,
        conversation_id: conversation.id.into(),
        turn_index,
        tool_calls: outcome.tool_calls,
        usage: TokenUsageBody {
            input_tokens: outcome.input_tokens,
            output_tokens: outcome.output_tokens,
        },
        ended: outcome.ended,
        instance_id: instance.map(|i| i.id.into()),
    }))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// An assistant message's calls, or the call a tool message answers, as stored JSON.
fn stored_calls(message: &ChatMessage) -> String {
    if let Some(id) = &message.tool_call_id {
        return json!([{ "id": id }]).to_string();
    }
    Value::Array(
        message
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect(),
    )
    .to_string()
}

/// A stored message back as a model message.
fn to_chat_message(row: &MessageRow) -> Option<ChatMessage> {
    let role = match row.role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => return None,
    };
    let mut message = ChatMessage::new(role, row.content.clone());
    let calls: Vec<Value> = serde_json::from_str(&row.tool_calls).unwrap_or_default();
    if role == Role::Tool {
        message.tool_call_id = calls
            .first()
            .and_then(|c| c["id"].as_str())
            .map(str::to_string);
    } else {
        message.tool_calls = calls
            .iter()
            .filter_map(|c| {
                Some(ToolCall {
                    id: c["id"].as_str()?.to_string(),
                    name: c["name"].as_str()?.to_string(),
                    arguments: c["arguments"].as_str().unwrap_or("{}").to_string(),
                })
            })
            .collect();
    }
    Some(message)
}
