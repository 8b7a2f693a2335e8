//! The `full` strategy: every mode listed as its own tool, with its whole
//! description, schema and annotations, as the original suite listed them.
//! It is the baseline the other strategies are measured against.

use std::borrow::Cow;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::{SessionView, Strategy, UnknownTool, call_mode_by_name, mode_tool};
use crate::{
    call::CallContext,
    catalog::Catalog,
    engine::{Engine, Outcome},
};

const INSTRUCTIONS: &str =
    "Each tool is one mode; call the tool that fits your task with its fields.";

pub struct Full {
    tools: Vec<Value>,
}

impl Full {
    pub fn new(catalog: &Catalog) -> Self {
        Full {
            tools: catalog.modes().iter().map(|mode| mode_tool(mode)).collect(),
        }
    }
}

#[async_trait]
impl Strategy for Full {
    fn name(&self) -> &'static str {
        "full"
    }

    fn tools(&self, _: SessionView<'_>) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.tools)
    }

    fn instructions(&self) -> &'static str {
        INSTRUCTIONS
    }

    async fn call(
        &self,
        engine: &Engine,
        _: SessionView<'_>,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool> {
        call_mode_by_name(engine, name, arguments, call).await
    }
}
