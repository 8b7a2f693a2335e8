//! The registry: which executor runs each manifest's key, how it is built
//! on its mode's first request, and the request type it reads.

use std::sync::Arc;

use super::{
    apilookup, challenge, chat, clink, consensus,
    contract::{Executor, RequestShape},
    forward, listmodels, planner, script, version, workflow,
};
use crate::catalog::{Manifest, Mode};

/// Builds an executor for a mode; errors explain a manifest that cannot be run.
type Constructor = fn(&Mode) -> Result<Arc<dyn Executor>, String>;

/// One executor this build implements.
pub struct Registration {
    pub key: &'static str,
    construct: Constructor,
    /// The types it reads a mode's requests into (none when it reads nothing).
    request: fn(&Manifest) -> Vec<RequestShape>,
}

/// The executors that cannot answer without a model provider (the others
/// run without one; a workflow then skips its expert step).
const NEED_A_PROVIDER: &[&str] = &["chat", "consensus"];

/// Whether the executor of key `key` needs a configured model provider.
pub fn needs_provider(key: &str) -> bool {
    NEED_A_PROVIDER.contains(&key)
}

/// Executor keys this build implements, how to build each, and what each reads.
pub static REGISTRY: &[Registration] = &[
    Registration {
        key: "apilookup",
        construct: |_| Ok(Arc::new(apilookup::ApiLookup)),
        request: |_| vec![apilookup::REQUEST],
    },
    Registration {
        key: "challenge",
        construct: |_| Ok(Arc::new(challenge::Challenge)),
        request: |_| vec![challenge::REQUEST],
    },
    Registration {
        key: "chat",
        construct: |_| Ok(Arc::new(chat::Chat)),
        request: |_| vec![chat::REQUEST],
    },
    Registration {
        key: "clink",
        construct: |_| Ok(Arc::new(clink::Clink)),
        request: |_| vec![clink::REQUEST],
    },
    Registration {
        key: "consensus",
        construct: |_| Ok(Arc::new(consensus::Consensus)),
        request: |_| vec![consensus::REQUEST],
    },
    Registration {
        key: "listmodels",
        construct: |_| Ok(Arc::new(listmodels::ListModels)),
        request: |_| Vec::new(),
    },
    Registration {
        key: "planner",
        construct: |_| Ok(Arc::new(planner::Planner)),
        request: |_| vec![planner::REQUEST],
    },
    Registration {
        key: crate::catalog::gateway_modes::EXECUTOR_KEY,
        construct: |mode| Ok(Arc::new(forward::UpstreamCall::for_mode(mode)?)),
        request: |_| Vec::new(),
    },
    Registration {
        key: "script",
        construct: |_| Ok(Arc::new(script::Script)),
        request: |_| vec![script::REQUEST],
    },
    Registration {
        key: "version",
        construct: |_| Ok(Arc::new(version::Version)),
        request: |_| Vec::new(),
    },
    Registration {
        key: "workflow",
        construct: |mode| Ok(Arc::new(workflow::WorkflowExecutor::for_mode(mode)?)),
        request: workflow::request_shapes,
    },
];

fn registration(key: &str) -> Option<&'static Registration> {
    REGISTRY.iter().find(|entry| entry.key == key)
}

/// Builds the executor registered under `key` for `mode`: `None` when this
/// build has no such executor, `Some(Err)` when the manifest cannot run.
pub fn construct(key: &str, mode: &Mode) -> Option<Result<Arc<dyn Executor>, String>> {
    registration(key).map(|entry| (entry.construct)(mode))
}

/// Whether this build has an executor registered under `key`.
pub fn is_registered(key: &str) -> bool {
    registration(key).is_some()
}

/// The types the executor of `manifest` reads its requests into; empty when
/// it reads none or this build has no such executor.
pub fn request_shapes(manifest: &Manifest) -> Vec<RequestShape> {
    manifest
        .executor
        .as_deref()
        .and_then(registration)
        .map(|entry| (entry.request)(manifest))
        .unwrap_or_default()
}

/// The executor keys of this build, in registry order.
pub fn keys() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|entry| entry.key)
}
