//! Post-call analysis of a finished session whose agent asks for one (its `analysis`): the
//! agent's own language model (with its fallbacks and keys, on the batch lane, so live calls
//! go first) reads the stored transcript and writes the summary, the success verdict and
//! the extracted fields ([`crate::conversation::analysis`]). The analysis is stored on the
//! session (`pending` while it runs), charged like any other language-model use, and sent as
//! `call.analyzed`.

use actix_web::web;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::app::AppState;
use crate::billing::Usage;
use crate::conversation::analysis::{self, AnalysisSpec, CallAnalysis, Line};
use crate::engines::pool::Lane;
use crate::ids::DeveloperId;
use crate::providers::{self, Caller};
use crate::registry::meter;
use crate::registry::sessions::{FinishAnalysis, SessionTrace, StartAnalysis};
use crate::registry::webhooks::Emit;
use crate::store::agents::AgentRow;
use crate::store::sessions::{AnalysisResult, AnalysisRow, AnalysisStatus};
use crate::store::stored_json;
use crate::time::{iso, iso_opt, now_ms};
use crate::webhooks::EventType;

/// What a session's analysis is run with: its agent as it was when the session started.
#[derive(Clone)]
pub struct PostCall {
    state: web::Data<AppState>,
    agent: AgentRow,
    spec: AnalysisSpec,
}

impl PostCall {
    /// The analysis `agent` asks of its calls; `None` when it asks for none.
    pub fn of(state: &web::Data<AppState>, agent: &AgentRow) -> Option<PostCall> {
        let spec = analysis::stored(agent.analysis.as_deref())?;
        Some(PostCall {
            state: state.clone(),
            agent: agent.clone(),
            spec,
        })
    }

    /// Analyses the ended session `trace`, stores the result and sends `call.analyzed`.
    pub async fn run(self, trace: &SessionTrace) {
        let session = &trace.session;
        let created_at = now_ms();
        let started = self
            .state
            .sessions()
            .send(StartAnalysis(AnalysisRow {
                session_id: session.id.clone(),
                developer_id: session.developer_id.clone(),
                status: AnalysisStatus::Pending,
                summary: None,
                success: None,
                success_reason: None,
                data: None,
                errors: "[]".to_string(),
                provider: None,
                input_tokens: 0,
                output_tokens: 0,
                created_at,
                completed_at: None,
            }))
            .await;
        if !matches!(started, Ok(Ok(()))) {
            tracing::warn!(session = %session.id, "post-call analysis: its record could not be made");
            return;
        }
        let transcript = analysis::transcript(trace.turns.iter().map(|t| Line {
            speaker: &t.speaker,
            text: &t.text,
        }));
        let (outcome, provider) = match transcript {
            Some(transcript) => self.ask(&session.developer_id, &transcript).await,
            None => (
                failed("nobody spoke on the call: there is no transcript to analyse"),
                None,
            ),
        };
        let status = if outcome.answered() {
            AnalysisStatus::Completed
        } else {
            AnalysisStatus::Failed
        };
        let result = AnalysisResult {
            status,
            summary: outcome.summary,
            success: outcome.success,
            success_reason: outcome.success_reason,
            data: outcome.data.map(|d| d.to_string()),
            errors: Value::from(outcome.errors).to_string(),
            provider,
            input_tokens: outcome.input_tokens as i64,
            output_tokens: outcome.output_tokens as i64,
            completed_at: Some(now_ms()),
        };
        let stored = self
            .state
            .sessions()
            .send(FinishAnalysis {
                session_id: session.id.clone(),
                result,
            })
            .await;
        let row = match stored {
            Ok(Ok(Some(row))) => row,
            _ => {
                tracing::warn!(session = %session.id, "post-call analysis: its result could not be stored");
                return;
            }
        };
        self.state.webhooks().do_send(Emit {
            developer_id: session.developer_id.clone(),
            kind: EventType::CallAnalyzed,
            data: json!({
                "sessionId": session.id,
                "agentId": session.agent_id,
                "callSid": session.call_sid,
                "from": session.from_number,
                "to": session.to_number,
                "analysis": AnalysisBody::from(&row),
            }),
        });
    }

    /// Puts the questions to the agent's language model; answers what came of them and the
    /// provider that answered.
    async fn ask(
        &self,
        developer_id: &DeveloperId,
        transcript: &str,
    ) -> (CallAnalysis, Option<String>) {
        let caller = Caller {
            developer_id,
            headers: None,
            lane: Lane::Batch,
        };
        let llm =
            match providers::for_agent::<providers::Llm>(&self.state, &self.agent, caller).await {
                Ok(llm) => llm,
                Err(e) => {
                    return (
                        failed(&format!("the agent's language model cannot be used: {e}")),
                        None,
                    )
                }
            };
        let metering = self.state.metering();
        if let Err(e) = meter::ensure_credits(metering, developer_id, llm.metered_up_front()).await
        {
            return (failed(&e.to_string()), Some(llm.provider.clone()));
        }
        let outcome = analysis::analyse(
            llm.engine.as_ref(),
            self.agent.llm_model.clone(),
            &self.spec,
            transcript,
        )
        .await;
        meter::charge(
            metering,
            developer_id,
            Usage::Llm {
                input_tokens: outcome.input_tokens,
                output_tokens: outcome.output_tokens,
            },
            !llm.bypasses_metering(),
        );
        (outcome, Some(llm.served().0))
    }
}

/// An analysis of which nothing could be asked, and why.
fn failed(reason: &str) -> CallAnalysis {
    CallAnalysis {
        errors: vec![reason.to_string()],
        ..CallAnalysis::default()
    }
}

/// A session's post-call analysis as the API (`GET /v1/observability/sessions/{id}`) and
/// `call.analyzed` show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CallAnalysis)]
pub struct AnalysisBody {
    /// `pending` (running), `completed` (at least one part answered) or `failed`.
    pub status: String,
    /// A few sentences on who called, what they wanted and how it ended; `null` when not
    /// asked for or not answered.
    pub summary: Option<String>,
    /// Whether the call met the agent's `successCriteria`; `null` when not asked or not
    /// answered.
    pub success: Option<bool>,
    /// Why, in one sentence.
    pub success_reason: Option<String>,
    /// The fields extracted, valid against the agent's `dataSchema`; `null` when not asked or
    /// not answered.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// What could not be answered, in words (`data: the extracted fields do not match…`).
    pub errors: Vec<String>,
    /// The language model's provider that answered.
    pub provider: Option<String>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub created_at: String,
    pub completed_at: Option<String>,
}

impl From<&AnalysisRow> for AnalysisBody {
    fn from(row: &AnalysisRow) -> AnalysisBody {
        AnalysisBody {
            status: row.status.to_string(),
            summary: row.summary.clone(),
            success: row.success,
            success_reason: row.success_reason.clone(),
            data: row.data.as_deref().map(stored_json),
            errors: serde_json::from_str(&row.errors).unwrap_or_default(),
            provider: row.provider.clone(),
            input_tokens: row.input_tokens,
            output_tokens: row.output_tokens,
            created_at: iso(row.created_at),
            completed_at: iso_opt(row.completed_at),
        }
    }
}
