//! A live session's parts from its request: the agent's profile (prompt, greeting, voice,
//! model, tools, turn taking), its engines (provider, key and fallback choice through
//! `crate::providers`, each stage wrapped so it marks which provider served), which of its
//! stages are charged, and the recorder that writes its turns with those providers; and
//! whether and how the session is recorded.

use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_actors::engine::{KnowledgeRetriever, SttMode};
use switchboard_actors::session::{AgentProfile, SessionEngines, SessionObserver, TurnPreferences};

use super::call::{resumed_prompt, PhoneCall};
use super::SessionRequest;
use crate::app::AppState;
use crate::conversation::grounding::GroundedModel;
use crate::conversation::prompt::{substitute, system_prompt, without_tool_mentions};
use crate::conversation::retrieval::CollectionKnowledge;
use crate::conversation::tools::{
    http_tools, tool_names, AgentTools, CallContext, CallControl, HttpTools,
};
use crate::conversation::transfer::stored_targets;
use crate::conversation::turn_taking;
use crate::engines::pool::Lane;
use crate::observability::recorder::SessionRecorder;
use crate::observability::served::StageSlots;
use crate::providers::{self, Caller, Chosen, Llm, Stage, Stt, Tts};
use crate::recording::{RecordingOf, RecordingTap, TapFormat, DIRECT_RATE, PHONE_RATE};
use crate::registry::agents::GetAgent;
use crate::registry::instances::{GetInstance, InstanceLookup};
use crate::registry::metering::SessionMetering;
use crate::registry::sessions::{GetSession, SessionLookup};
use crate::registry::telephony::GetTask;
use crate::store::agents::AgentRow;
use crate::store::stored_json;
use crate::vendors::fallback::ServedBy;

/// Answer length of the agent in calls when it sets no maxTokens: short, spoken replies.
const CALL_MAX_TOKENS: u32 = 160;

/// What a session runs with.
pub struct Assembled {
    pub profile: AgentProfile,
    pub engines: SessionEngines,
    pub observer: Arc<dyn SessionObserver>,
    /// Which stages are charged: those on the embedded engines or the platform's keys.
    pub metered: SessionMetering,
    /// The phone call the agent's call tools act on (phone calls only).
    pub call: Option<Arc<PhoneCall>>,
    /// The agent's metadata, which says whether its sessions are recorded.
    metadata: Value,
    /// The agent, when it asks for a post-call analysis of its calls.
    pub analysed_by: Option<AgentRow>,
}

/// Builds the agent's profile and engines for `request` from the stored agent and instance;
/// `transport` names the transport on the session's turn records. `Err` says why the agent
/// cannot run.
pub async fn assemble(
    state: &AppState,
    request: &SessionRequest,
    transport: &'static str,
) -> Result<Assembled, String> {
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: request.developer_id.clone(),
            agent_id: request.agent_id.clone(),
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let instance = match &request.instance_id {
        Some(id) => state
            .agents()
            .send(GetInstance {
                developer_id: request.developer_id.clone(),
                agent_id: agent.id.clone(),
                lookup: InstanceLookup::Id(id.clone()),
            })
            .await
            .map_err(|e| e.to_string())?
            .ok(),
        None => None,
    };
    let mut variables: Map<String, Value> = instance
        .as_ref()
        .and_then(|i| stored_json(&i.metadata).as_object().cloned())
        .unwrap_or_default();
    // An outbound call placed with variables of its own (a campaign contact's) adds them,
    // over the instance's.
    if let Some(task_id) = &request.task_id {
        let task = state
            .telephony()
            .send(GetTask {
                developer_id: Some(request.developer_id.clone()),
                id: task_id.clone(),
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        if let Some(Value::Object(own)) = task.variables.map(|v| stored_json(&v)) {
            variables.extend(own);
        }
    }
    let metadata = stored_json(&agent.metadata);
    // Checked when the agent was written; an older row with a bad section keeps the
    // defaults rather than failing the call.
    let mut turn = turn_taking::from_metadata(&metadata).unwrap_or_else(|reason| {
        tracing::warn!(agent = %agent.id, "turn taking ignored: {reason}");
        TurnPreferences::default()
    });
    let http = http_tools(&metadata).unwrap_or_default();
    // The embedded model cannot call tools; offering them, or naming them in its prompt,
    // only has it tell the caller to use them.
    let offer_tools = agent.llm_provider != crate::vendors::catalog::DEFAULT_PROVIDER;
    let mut prompt = system_prompt(
        agent.system_prompt.as_deref(),
        &variables,
        instance.as_ref().map(|i| i.context.as_str()),
    );
    if !offer_tools {
        prompt = without_tool_mentions(&prompt, &tool_names(&http));
    }
    if turn.detection.is_none() {
        turn.detection = turn_taking::detection_named(&state.config().engines.turn_detection);
    }
    turn.early_recognition_ms = Some(state.config().engines.early_recognition_ms);
    let mut tools = AgentTools::new(
        state.engines().live.embedder.clone(),
        state.knowledge().clone(),
        state.fetcher().clone(),
        agent.collection_id.clone(),
        HttpTools {
            tools: http,
            secrets: state.tool_secrets().clone(),
            developer_id: agent.developer_id.clone(),
        },
    )
    .for_context(CallContext {
        session_id: Some(request.session_id.clone()),
        agent_id: Some(agent.id.clone()),
        call_sid: request.call_sid.clone(),
        from: request.from.clone(),
        to: request.to.clone(),
        instance_id: request.instance_id.clone(),
    });
    // A phone call's agent acts on its call: hangs up, hands over, presses keys.
    let call = request
        .call_sid
        .as_ref()
        .map(|_| PhoneCall::new(stored_targets(&agent.transfer)));
    if let Some(call) = &call {
        tools = tools.on_call(call.clone());
    }
    // A session that carries on an earlier one of the same call knows what was said there.
    let earlier = match &request.resumes {
        Some(previous) => state
            .sessions()
            .send(GetSession {
                developer_id: request.developer_id.clone(),
                lookup: SessionLookup::Id(previous.clone()),
            })
            .await
            .ok()
            .and_then(Result::ok)
            .map(|trace| resumed_prompt(&trace)),
        None => None,
    };
    let profile = AgentProfile {
        system_prompt: prompt + earlier.as_deref().unwrap_or_default(),
        first_message: match &request.resumes {
            // Carrying on: no second greeting.
            Some(_) => request.opening.clone().unwrap_or_default(),
            None => agent
                .first_message
                .as_deref()
                .map(|m| substitute(m, &variables))
                .unwrap_or_default(),
        },
        voice: agent.voice_id.clone(),
        language: agent.forced_language().map(str::to_string),
        model: agent.llm_model.clone(),
        tts_model: agent.tts_model.clone(),
        temperature: agent.temperature as f32,
        max_tokens: agent
            .max_tokens
            .map_or(CALL_MAX_TOKENS, |t| t.max(1) as u32),
        tools: if offer_tools {
            tools.specs()
        } else {
            Vec::new()
        },
        max_steps: 4,
        recognition: if state.config().engines.live_recognition == "accurate" {
            SttMode::Accurate
        } else {
            SttMode::Fast
        },
        turn,
    };
    // A call has no request headers: the developer's stored key, else the platform's.
    // Its embedded engines' jobs wait in the pool's live lane, ahead of batch work.
    let caller = Caller {
        developer_id: &request.developer_id,
        headers: None,
        lane: Lane::Live,
    };
    let stt = providers::for_agent::<Stt>(state, &agent, caller)
        .await
        .map_err(|e| e.to_string())?;
    let llm = providers::for_agent::<Llm>(state, &agent, caller)
        .await
        .map_err(|e| e.to_string())?;
    let tts = providers::for_agent::<Tts>(state, &agent, caller)
        .await
        .map_err(|e| e.to_string())?;
    let metered = SessionMetering {
        stt: stt.metered_up_front(),
        llm: llm.metered_up_front(),
        tts: tts.metered_up_front(),
    };
    // Each stage's engine marks the provider that served it, for the turn records.
    let (stt, stt_slot) = track::<Stt>(stt, &agent.stt_provider);
    let (llm, llm_slot) = track::<Llm>(llm, &agent.llm_provider);
    // No number, price, date or address the model was not given reaches the caller.
    let can_transfer = call.as_ref().is_some_and(|c| !c.targets().is_empty()) && offer_tools;
    let llm: Arc<dyn switchboard_actors::engine::LanguageModel> =
        Arc::new(GroundedModel::new(llm, can_transfer));
    let (tts, tts_slot) = track::<Tts>(tts, &agent.tts_provider);
    let engines = SessionEngines {
        stt,
        llm,
        tts,
        tools: Arc::new(tools),
        knowledge: agent.collection_id.clone().map(|collection_id| {
            Arc::new(CollectionKnowledge {
                embedder: state.engines().live.embedder.clone(),
                knowledge: state.knowledge().clone(),
                collection_id,
            }) as Arc<dyn KnowledgeRetriever>
        }),
        turn_end: Some(state.engines().turn_model()),
    };
    let observer: Arc<dyn SessionObserver> = Arc::new(SessionRecorder::new(
        state.sessions().clone(),
        state.metering().clone(),
        state.traces().clone(),
        transport,
        Arc::new(StageSlots {
            stt: stt_slot,
            llm: llm_slot,
            tts: tts_slot,
        }),
    ));
    Ok(Assembled {
        profile,
        engines,
        observer,
        metered,
        call,
        metadata,
        analysed_by: agent.analysis.is_some().then_some(agent),
    })
}

impl Assembled {
    /// Starts recording the session when it should be recorded (by configuration and the
    /// agent's choice: calls unless the agent opts out, direct sessions when it opts in);
    /// `format` is the transport's audio encoding.
    pub fn recording(
        &self,
        state: &AppState,
        request: &SessionRequest,
        format: TapFormat,
    ) -> Option<RecordingTap> {
        if !state.recordings().enabled() {
            return None;
        }
        let (wanted, rate) = match format {
            TapFormat::Mulaw8k => (
                self.metadata["recordCalls"].as_bool().unwrap_or(true),
                PHONE_RATE,
            ),
            TapFormat::Pcm16(_) | TapFormat::Opus(_) => (
                self.metadata["recordDirectSessions"]
                    .as_bool()
                    .unwrap_or(false),
                DIRECT_RATE,
            ),
        };
        if !wanted {
            return None;
        }
        state.recordings().start(RecordingOf {
            session_id: request.session_id.clone(),
            developer_id: request.developer_id.clone(),
            call_sid: request.call_sid.clone(),
            format,
            rate,
        })
    }
}

/// The engine a session runs for stage `S`, and the slot it marks with the provider that
/// served: a fallback chain marks it already; a single engine (the agent's own provider,
/// `primary`) is wrapped in a chain of one so it does too.
fn track<S: Stage>(chosen: Chosen<S::Engine>, primary: &str) -> (Arc<S::Engine>, ServedBy) {
    match chosen.served_by() {
        Some(slot) => (chosen.engine, slot),
        None => {
            let slot = ServedBy::default();
            let engine = S::chain(vec![chosen.engine], slot.clone(), primary);
            (engine, slot)
        }
    }
}
