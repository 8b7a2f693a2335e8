//! `chat`: a conversation with a model, with files and the thread's history as context.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ExecContext, ExecError, Executor, RequestShape,
    support::{
        PromptBudget, check_paths, embed, load_images, memory_error, parse_request, provider_error,
        record_turn,
    },
};
use crate::{
    conversation::{Turn, build_history},
    providers::{Message, ModelRequest},
};

const SYSTEM_PROMPT: &str = "You are a senior engineer talking a problem through with a colleague who is an AI coding agent. \
Answer the question directly, reason from the files and history you are given, say when something is uncertain or \
depends on facts you cannot see, and offer concrete alternatives when you disagree. Be concise: the agent will act on \
your answer.";

pub const REQUEST: RequestShape = RequestShape::of::<ChatRequest>();

#[derive(Deserialize)]
struct ChatRequest {
    prompt: String,
    #[serde(default)]
    absolute_file_paths: Vec<String>,
    #[serde(default)]
    images: Vec<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    thinking_mode: Option<String>,
    #[serde(default)]
    continuation_id: Option<String>,
}

pub struct Chat;

#[async_trait]
impl Executor for Chat {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let request: ChatRequest = parse_request(request)?;
        let services = context.services;
        let (provider, model) = services
            .providers
            .resolve(request.model.as_deref(), "chat")
            .map_err(provider_error)?;
        check_paths(context, &request.absolute_file_paths)?;
        let images = load_images(context, &request.images)?;
        let images_ignored = !images.is_empty() && !model.supports_images;

        let turn = Turn::user("chat", request.prompt.clone())
            .with_files(request.absolute_file_paths.clone());
        let thread_id = record_turn(context, request.continuation_id.as_deref(), turn).await?;
        let thread = services
            .memory
            .get(&thread_id)
            .await
            .map_err(memory_error)?;
        let budget = PromptBudget::for_window(model.context_window);

        // History without the turn just recorded: that one is the question.
        let mut earlier = thread.clone();
        earlier.turns.pop();
        let history = build_history(&earlier, budget.history);
        let mut paths = request.absolute_file_paths.clone();
        paths.extend(history.files.iter().cloned());
        let embedded = embed(context, paths, budget.files).await;

        let mut content = String::new();
        if !history.text.is_empty() {
            content.push_str(&format!("## Conversation so far\n{}\n\n", history.text));
        }
        if !embedded.text.is_empty() {
            content.push_str(&format!("## Files\n{}\n\n", embedded.text));
        }
        content.push_str(&format!("## Question\n{}", request.prompt));

        let model_request = ModelRequest {
            model: model.name.clone(),
            system_prompt: SYSTEM_PROMPT.to_owned(),
            messages: vec![Message::user(content).with_images(if images_ignored {
                Vec::new()
            } else {
                images.clone()
            })],
            temperature: request.temperature,
            thinking_mode: request.thinking_mode.clone(),
            max_output_tokens: None,
        };
        let call = context.call;
        let response = call
            .ask_model(provider.as_ref(), &model_request)
            .await
            .ok_or_else(|| ExecError::new("cancelled", "the client cancelled the request"))?
            .map_err(provider_error)?;

        let answer =
            Turn::assistant("chat", response.text.clone()).with_model(response.model.clone());
        services
            .memory
            .append(&thread_id, answer)
            .await
            .map_err(memory_error)?;
        let mut reply = json!({
            "status": "continuation_available",
            "content": response.text,
            "continuation_id": thread_id,
            "model": response.model,
            "provider": response.provider,
            "files_embedded": embedded.files.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>(),
        });
        if let Some(left_out) = embedded.left_out_summary() {
            reply["files_left_out"] = json!(left_out);
        }
        if images_ignored {
            reply["images_ignored"] = json!(format!(
                "{} does not accept images, so they were not sent; pick a model that does (listmodels shows supports_images)",
                model.name
            ));
        } else if !images.is_empty() {
            reply["images_sent"] = json!(images.len());
        }
        Ok(reply)
    }
}
