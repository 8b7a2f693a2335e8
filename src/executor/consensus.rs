//! `consensus`: puts one proposal to several models, each arguing an
//! assigned stance, and returns every answer for the agent to weigh.

use async_trait::async_trait;
use futures_util::{StreamExt, stream};
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
    providers::{Image, Message, ModelRequest, ProviderError},
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

/// At most this many models per call: each one is a paid request.
const MAX_MODELS: usize = 10;
/// How many models are asked at the same time.
const MAX_CONCURRENT_MODELS: usize = 4;

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

impl Consensus {
    /// Asks one model; its failure is an entry of the answer, only a
    /// cancellation ends the whole call.
    async fn consult(
        &self,
        context: &ExecContext<'_>,
        request: &ConsensusRequest,
        seat: &ModelSeat,
        index: usize,
        images: &[Image],
        thread_id: &str,
    ) -> Result<Value, ExecError> {
        let services = context.services;
        let failed = |model: &str, error: ProviderError| json!({"model": model, "stance": seat.stance, "status": "failed", "error": error.kind(), "message": error.to_string()});
        let (provider, model) = match services.providers.resolve(Some(&seat.model), "consensus") {
            Ok(found) => found,
            Err(error) => return Ok(failed(&seat.model, error)),
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
                    images.to_vec()
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
        match call.ask_model(provider.as_ref(), &model_request).await {
            None => Err(ExecError::new(
                "cancelled",
                "the client cancelled the request",
            )),
            Some(Ok(response)) => {
                let turn =
                    Turn::assistant("consensus", format!("[{}] {}", seat.stance, response.text))
                        .with_model(response.model.clone());
                if let Err(error) = services.memory.append(thread_id, turn).await {
                    tracing::warn!(%error, "could not record a consensus answer");
                }
                Ok(
                    json!({"model": response.model, "provider": response.provider, "stance": seat.stance, "status": "complete", "content": response.text}),
                )
            }
            Some(Err(error)) => Ok(failed(&model.name, error)),
        }
    }
}

#[async_trait]
impl Executor for Consensus {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let mut request: ConsensusRequest = parse_request(request)?;
        if request.models.len() > MAX_MODELS {
            return Err(ExecError::new(
                "too_many_models",
                format!(
                    "consensus asks at most {MAX_MODELS} models per call (got {}); split the panel",
                    request.models.len()
                ),
            ));
        }
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

        // Models are asked at the same time, a few at once, and answers are
        // kept in the order the models were given.
        let asks: Vec<_> = request
            .models
            .iter()
            .enumerate()
            .map(|(index, seat)| self.consult(context, &request, seat, index, &images, &thread_id))
            .collect();
        let outcomes: Vec<Result<Value, ExecError>> = stream::iter(asks)
            .buffered(MAX_CONCURRENT_MODELS)
            .collect()
            .await;
        let responses = outcomes
            .into_iter()
            .collect::<Result<Vec<Value>, ExecError>>()?;
        let answered = responses
            .iter()
            .filter(|r| r["status"] == "complete")
            .count();
        if answered == 0 {
            return Err(ExecError::new(
                "all_models_failed",
                format!(
                    "none of the {} models answered; each failure is listed",
                    responses.len()
                ),
            )
            .with("responses", responses)
            .with("continuation_id", thread_id));
        }
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
