//! Model providers: the HTTP clients that ask a model, the registry of
//! models zenmode knows, and the choice of provider and model for a request.
//!
//! Configuration comes from the environment (read once, through a function
//! so tests can pass a map):
//!
//! | variable | enables |
//! | --- | --- |
//! | `GEMINI_API_KEY` (+ `GEMINI_BASE_URL`) | Google Gemini, native API |
//! | `OPENAI_API_KEY` (+ `OPENAI_BASE_URL`) | OpenAI |
//! | `XAI_API_KEY` (+ `XAI_BASE_URL`) | xAI Grok |
//! | `OPENROUTER_API_KEY` (+ `OPENROUTER_BASE_URL`) | OpenRouter |
//! | `CUSTOM_API_URL` (+ `CUSTOM_API_KEY`, `CUSTOM_MODEL_NAME`) | an OpenAI-compatible local server |
//! | `DEFAULT_MODEL` | the model used when a request names none (`auto` chooses per mode) |
//! | `ZEN_MODEL_TIMEOUT_SECS` | the time limit of one model HTTP attempt (default 120) |
//!
//! Keys are held in [`http_client::Secret`]s: no `Debug`, log line or error shows
//! them, and text that servers send back is scrubbed of them.

mod configured;
mod error;
mod gemini;
mod http_client;
mod model;
mod openai;
mod registry;

pub use error::ProviderError;
pub(crate) use http_client::build_client;
pub use http_client::{DEFAULT_TIMEOUT_SECS, HttpConfig, MAX_ANSWER_BYTES};

pub use configured::Providers;
pub use model::{Image, Message, ModelInfo, ModelRequest, ModelResponse, Provider, Role, Usage};
