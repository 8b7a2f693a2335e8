//! What zenmode asks a model and what comes back, whichever provider
//! serves it: messages, requests, responses, usage, and the `Provider`
//! trait each provider implements.

use async_trait::async_trait;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::error::ProviderError;

use super::registry::OwnedSpec;

/// Who wrote a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One turn of the conversation handed to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Images shown with the text (only sent to models that accept images).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
            images: Vec::new(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
            images: Vec::new(),
        }
    }

    pub fn with_images(mut self, images: Vec<Image>) -> Self {
        self.images = images;
        self
    }
}

/// An image as providers take it: a media type and base64 data.
#[derive(Clone, PartialEq, Serialize)]
pub struct Image {
    pub media_type: String,
    pub base64: String,
}

impl Image {
    /// `data:<media type>;base64,<data>`, as OpenAI-compatible servers take it.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.base64)
    }
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Image({}, {} base64 chars)",
            self.media_type,
            self.base64.len()
        )
    }
}

/// Everything a provider needs for one call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    /// Canonical model name, as returned by [`Providers::resolve`](super::Providers::resolve).
    pub model: String,
    /// Sent as the system message (OpenAI) or system instruction (Gemini);
    /// left out when empty.
    pub system_prompt: String,
    pub messages: Vec<Message>,
    /// Dropped for models that only accept their default (OpenAI's
    /// reasoning models).
    pub temperature: Option<f64>,
    /// `minimal`, `low`, `medium`, `high` or `max`: mapped to the model's
    /// reasoning effort or thinking budget where it has one, else ignored.
    pub thinking_mode: Option<String>,
    pub max_output_tokens: Option<u32>,
}

/// Token counts as the provider reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    /// Includes thinking tokens where the provider counts them separately.
    pub output_tokens: Option<u64>,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelResponse {
    pub text: String,
    /// The canonical name that was requested (not the dated snapshot some
    /// providers report), so it matches [`ModelInfo::name`].
    pub model: String,
    pub provider: String,
    pub usage: Option<Usage>,
}

/// Something that can answer a [`ModelRequest`].
#[async_trait]
pub trait Provider: Send + Sync {
    /// The provider's name, as in [`ModelInfo::provider`].
    fn name(&self) -> &str;

    /// Asks the model. Returns [`ProviderError::Cancelled`] promptly once
    /// `cancel` fires, dropping the HTTP request in flight.
    async fn generate(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ProviderError>;
}

/// A model that can be asked, for `listmodels` and for budgeting prompts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelInfo {
    pub name: String,
    pub aliases: Vec<String>,
    pub provider: String,
    /// In tokens. Models outside the registry get a conservative 32k.
    pub context_window: u64,
    pub supports_images: bool,
    pub supports_thinking: bool,
}

impl From<&OwnedSpec> for ModelInfo {
    fn from(spec: &OwnedSpec) -> Self {
        ModelInfo {
            name: spec.name.clone(),
            aliases: spec.aliases.clone(),
            provider: spec.provider.name().to_owned(),
            context_window: spec.context_window,
            supports_images: spec.images,
            supports_thinking: spec.thinking.supported(),
        }
    }
}
