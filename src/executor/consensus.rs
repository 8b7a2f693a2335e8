//! `consensus`: puts one proposal to several models, each arguing an
//! assigned stance, and returns every answer for the agent to weigh.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ExecContext, ExecError, Executor, RequestShape,
    support::{
        PromptBudget, check_paths, embed, load_images, parse_request, provider_error, record_turn,
        schema_default,
    },
};
use crate::{
    conversation::Turn,
    providers::{Message, ModelRequest, ProviderError},
};

#[derive(Deserialize)]
struct ModelSeat {
    model: String,
    /// Filled from the schema's default when the request leaves it out.
    #[serde(default)]
    stance: String,
    #[serde(default)]
    stance_prompt: Option<String>,
}

/// Where the manifest defines a seat's default stance.
const STANCE_DEFAULT: &str = "/properties/models/items/properties/stance/default";

pub const REQUEST: RequestShape = RequestShape::of::<ConsensusRequest>().with_nested(&[(
    "models",
    serde_aux::serde_introspection::serde_introspect::<'static, ModelSeat>,
)]);

#[derive(Deserialize)]
struct ConsensusRequest {
    step: String,
    #[serde(default)]
    findings: String,
    models: Vec<ModelSeat>,
    #[serde(default)]
    relevant_files: Vec<String>,
    #[serde(default)]
    images: Vec<String>,
    #[serde(default)]
    continuation_id: Option<String>,
}

/// The brief for each stance, in our words.
fn stance_brief(stance: &str) -> &'static str {
    match stance {
        "for" => {
            "Make the strongest honest case FOR the proposal: its benefits, why the risks are manageable, and how to make it succeed. Do not invent benefits; if the proposal is clearly harmful, say so despite your stance."
        }
        "against" => {
            "Make the strongest honest case AGAINST the proposal: its costs, risks, hidden complexity and better alternatives. Do not invent problems; if the proposal is clearly sound, say so despite your stance."
        }
        _ => {
            "Weigh the proposal evenly: what it gains, what it costs, what is uncertain, and what you would recommend."
        }
    }
}

const SYSTEM_PROMPT: &str = "You are one of several reviewers asked for an independent opinion on a technical proposal. \
Give a verdict in one sentence first, then your reasoning, the main risks, and what evidence would change your mind.";

pub struct Consensus;

#[async_trait]
impl Executor for Consensus {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let mut request: ConsensusRequest = parse_request(request)?;
        let default_stance = schema_default(context.mode, STANCE_DEFAULT).unwrap_or_default();
        for seat in request.models.iter_mut().filter(|s| s.stance.is_empty()) {
            seat.stance = default_stance.to_owned();
        }
        let services = context.services;
        if let Err(error @ ProviderError::NotConfigured { .. }) =
            services.providers.resolve(None, "consensus")
        {
            return Err(provider_error(error));
        }
        check_paths(context, &request.relevant_files)?;
        let images = load_images(context, &request.images)?;
        let turn = Turn::user(
            "consensus",
            format!(
                "Proposal: {}\nAgent's view: {}",
                request.step, request.findings
            ),
        )
        .with_files(request.relevant_files.clone());
        let thread_id = record_turn(context, request.continuation_id.as_deref(), turn).await?;

        let mut responses = Vec::new();
        for (index, seat) in request.models.iter().enumerate() {
            let resolved = services.providers.resolve(Some(&seat.model), "consensus");
            let (provider, model) = match resolved {
                Ok(found) => found,
                Err(error) => {
                    responses.push(json!({"model": seat.model, "stance": seat.stance, "status": "failed", "error": error.kind(), "message": error.to_string()}));
                    continue;
                }
            };
            let budget = PromptBudget::for_window(model.context_window);
            let embedded = embed(context, request.relevant_files.clone(), budget.files).await;
            let brief = seat
                .stance_prompt
                .clone()
                .unwrap_or_else(|| stance_brief(&seat.stance).to_owned());
            let mut content = format!("## Your stance\n{brief}\n\n## Proposal\n{}\n", request.step);
            if !request.findings.is_empty() {
                content.push_str(&format!(
                    "\n## The agent's own analysis\n{}\n",
                    request.findings
                ));
            }
            if !embedded.text.is_empty() {
                content.push_str(&format!("\n## Files\n{}\n", embedded.text));
            }
            let model_request = ModelRequest {
                model: model.name.clone(),
                system_prompt: SYSTEM_PROMPT.to_owned(),
                messages: vec![
                    Message::user(content).with_images(if model.supports_images {
                        images.clone()
                    } else {
                        Vec::new()
                    }),
                ],
                ..ModelRequest::default()
            };
            let call = context.call;
            call.report(
                index as f64,
                format!("Consulting {} ({})", model.name, seat.stance),
            )
            .await;
            let answer = call.ask_model(provider.as_ref(), &model_request).await;
            match answer {
                None => return Err(ExecError::new("cancelled", "the client cancelled the request")),
                Some(Ok(response)) => {
                    let turn = Turn::assistant("consensus", format!("[{}] {}", seat.stance, response.text)).with_model(response.model.clone());
                    if let Err(error) = services.memory.append(&thread_id, turn).await {
                        tracing::warn!(%error, "could not record a consensus answer");
                    }
                    responses.push(json!({"model": response.model, "provider": response.provider, "stance": seat.stance, "status": "complete", "content": response.text}));
                }
                Some(Err(error)) => responses.push(json!({"model": model.name, "stance": seat.stance, "status": "failed", "error": error.kind(), "message": error.to_string()})),
            }
        }
        let answered = responses
            .iter()
            .filter(|r| r["status"] == "complete")
            .count();
        Ok(json!({
            "status": "consensus_complete",
            "continuation_id": thread_id,
            "proposal": request.step,
            "models_consulted": answered,
            "responses": responses,
            "next_steps": "Synthesize the answers yourself: where they agree, where and why they differ, which concerns are backed by evidence, and a recommendation for the user.",
        }))
    }
}
