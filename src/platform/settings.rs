//! Every `ZEN_*` environment variable zenmode reads, named once here.
//!
//! The command line reads most of them as the environment form of a flag
//! (clap's `env = settings::NAME`); the rest are read where they apply, but
//! always through these names, so a grep for one finds every use and a
//! test keeps other files from spelling a `ZEN_` name of their own.
//! docs/configuration.md lists what each one does.

/// Extra allowed roots for file access, `:`-separated (`;` on Windows).
pub const ALLOWED_ROOTS: &str = "ZEN_ALLOWED_ROOTS";
/// `1` keeps the model's encoder off AMX tiles (f32 products instead).
pub const BERT_NO_AMX: &str = "ZEN_BERT_NO_AMX";
/// The bearer token `serve --transport http` requires.
pub const AUTH_TOKEN: &str = "ZEN_AUTH_TOKEN";
/// HTTP: seconds a request body may take.
pub const BODY_TIMEOUT_SECS: &str = "ZEN_BODY_TIMEOUT_SECS";
/// The gateway's cache directory (catalogs, the model's vector cache).
pub const CACHE_DIR: &str = "ZEN_CACHE_DIR";
/// Which CLIs `clink` may run, as a JSON file.
pub const CLINK_CONFIG: &str = "ZEN_CLINK_CONFIG";
/// How long a `clink` run may take.
pub const CLINK_TIMEOUT_SECS: &str = "ZEN_CLINK_TIMEOUT_SECS";
/// zenmode's configuration directory (the upstreams file, OAuth tokens).
pub const CONFIG_DIR: &str = "ZEN_CONFIG_DIR";
/// The full embedding model's directory (`--embedding-model`).
pub const EMBEDDING_MODEL: &str = "ZEN_EMBEDDING_MODEL";
/// HTTP: seconds the request headers may take.
pub const HEADER_TIMEOUT_SECS: &str = "ZEN_HEADER_TIMEOUT_SECS";
/// HTTP: connections one address may hold.
pub const MAX_CONNECTIONS_PER_IP: &str = "ZEN_MAX_CONNECTIONS_PER_IP";
/// HTTP: sessions the server keeps.
pub const MAX_SESSIONS: &str = "ZEN_MAX_SESSIONS";
/// How long a model provider may take to answer.
pub const MODEL_TIMEOUT_SECS: &str = "ZEN_MODEL_TIMEOUT_SECS";
/// More mode manifests (`--modes-dir`).
pub const MODES_DIR: &str = "ZEN_MODES_DIR";
/// Modes listed as their own tools beside the meta tools (`--pin`).
pub const PINNED_MODES: &str = "ZEN_PINNED_MODES";
/// The key that signs the gateway's `requestState`s (shared by instances).
pub const REQUEST_STATE_KEY: &str = "ZEN_REQUEST_STATE_KEY";
/// `serve --result-handles`: whether large results become handles.
pub const RESULT_HANDLES: &str = "ZEN_RESULT_HANDLES";
/// `serve --result-handle-bytes`: the size from which a result is a handle.
pub const RESULT_HANDLE_BYTES: &str = "ZEN_RESULT_HANDLE_BYTES";
/// `serve --result-handle-ttl-secs`: how long a handle can be read.
pub const RESULT_HANDLE_TTL_SECS: &str = "ZEN_RESULT_HANDLE_TTL_SECS";
/// `serve --script-writes`: whether a script may call tools that change things.
pub const SCRIPT_WRITES: &str = "ZEN_SCRIPT_WRITES";
/// `serve --script-max-ms`: the longest a script may run.
pub const SCRIPT_MAX_MS: &str = "ZEN_SCRIPT_MAX_MS";
/// `serve --learn-examples`: whether a select followed by a successful
/// call becomes a local example.
pub const LEARN_EXAMPLES: &str = "ZEN_LEARN_EXAMPLES";
/// Weights for the model-backed ranking, for tuning experiments.
pub const SELECT_MODEL_TUNING: &str = "ZEN_SELECT_MODEL_TUNING";
/// Weights for the table ranking, for tuning experiments.
pub const SELECT_TUNING: &str = "ZEN_SELECT_TUNING";
/// `serve --shared --idle-stop-secs`: the shared instance stops after this
/// long with no client connected.
pub const SHARED_IDLE_STOP_SECS: &str = "ZEN_SHARED_IDLE_STOP_SECS";
/// A request adapter file to use instead of the shipped one (experiments:
/// scripts/embedding/measure_adapter.py); `none` turns it off.
pub const REQUEST_ADAPTER: &str = "ZEN_REQUEST_ADAPTER";
/// A fine-tuned overlay of the embedding model's weights to use instead of
/// the shipped one (experiments: scripts/embedding/measure_finetune.py);
/// `none` runs the model as published.
pub const ENCODER_OVERLAY: &str = "ZEN_ENCODER_OVERLAY";
/// A tool classifier to use instead of the shipped one (`PATH` for
/// `PATH.f32` and `PATH.json`; experiments: scripts/embedding/
/// measure_classifier.py); `none` turns it off.
pub const TOOL_CLASSIFIER: &str = "ZEN_TOOL_CLASSIFIER";
/// zenmode's state directory (pins, status, the thread database).
pub const STATE_DIR: &str = "ZEN_STATE_DIR";
/// The conversation store (`--store`).
pub const STORE: &str = "ZEN_STORE";
/// The tool-list strategy (`--strategy`).
pub const STRATEGY: &str = "ZEN_STRATEGY";
/// `disabled` lists every mode as its own tool (the original suite's list).
pub const TOKEN_OPTIMIZATION: &str = "ZEN_TOKEN_OPTIMIZATION";
/// A prefix before every meta tool's name (`--tool-prefix`).
pub const TOOL_PREFIX: &str = "ZEN_TOOL_PREFIX";
/// The upstreams file (`--upstreams`).
pub const UPSTREAMS: &str = "ZEN_UPSTREAMS";

/// The value of the variable `name`, when it is set and not empty (an
/// empty variable means "not set" everywhere in zenmode).
pub fn get_os(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}
