//! The `categories` strategy: browse, then fetch. Three meta tools list the
//! categories, the tools of one category (a line each) and one tool's full
//! definition; the real tools are called by name.
//!
//! [`ToolLoading`] picks what else is listed: every tool with its schema
//! stripped to `{"type": "object"}` (eager), nothing (lazy, the default), or
//! the pinned modes in full (core). The list never changes within a process.

use std::{borrow::Cow, collections::BTreeMap};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

pub use super::category_of;
use super::{
    SessionView, Strategy, ToolLoading, UnknownTool, call_mode_by_name, mode_tool, one_line,
    parse_arguments, suggestions,
};
use crate::{
    call::CallContext,
    catalog::Catalog,
    engine::{Engine, Outcome},
};

pub const LIST_CATEGORIES: &str = "list_tool_categories";
pub const CATEGORY_TOOLS: &str = "get_category_tools";
pub const TOOL_SCHEMA: &str = "get_tool_schema";

const INSTRUCTIONS: &str = "Call list_tool_categories, then get_category_tools for the category that fits, then get_tool_schema for the tool you want; call that tool by its name with the fields the schema gives.";

pub struct Categories {
    listed: Vec<Value>,
    meta: Vec<Value>,
    /// Category -> its description and its modes, in catalog order.
    by_category: BTreeMap<String, (String, Vec<String>)>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CategoryArgs {
    category: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SchemaArgs {
    tool_name: String,
}

impl Categories {
    pub fn new(catalog: &Catalog, loading: ToolLoading, pinned: &[String]) -> Result<Self, String> {
        let meta = vec![
            json!({
                "name": LIST_CATEGORIES,
                "title": "List tool categories",
                "description": "Every category of tools, with what it is for and how many tools it holds.",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            }),
            json!({
                "name": CATEGORY_TOOLS,
                "title": "Tools of a category",
                "description": "The tools of one category: names and one-line descriptions.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"category": {"type": "string", "description": "A name from list_tool_categories"}},
                    "required": ["category"],
                    "additionalProperties": false
                },
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            }),
            json!({
                "name": TOOL_SCHEMA,
                "title": "A tool's definition",
                "description": "The full definition of one tool: description, input schema and annotations. Then call the tool by its name.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"toolName": {"type": "string", "description": "The tool's name"}},
                    "required": ["toolName"],
                    "additionalProperties": false
                },
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            }),
        ];
        let mut by_category: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
        for mode in catalog.modes() {
            let (category, description) = category_of(mode);
            by_category
                .entry(category)
                .or_insert_with(|| (description, Vec::new()))
                .1
                .push(mode.name().to_owned());
        }
        let extra: Vec<Value> = match loading {
            ToolLoading::Lazy => Vec::new(),
            ToolLoading::Eager => catalog.modes().iter().map(|mode| mode_tool(mode)).collect(),
            ToolLoading::Stripped => catalog
                .modes()
                .iter()
                .map(|mode| {
                    let mut tool = mode_tool(mode);
                    tool["inputSchema"] = json!({"type": "object"});
                    tool
                })
                .collect(),
            ToolLoading::Core => {
                let mut tools = Vec::new();
                for name in pinned {
                    let mode = catalog.get(name).ok_or_else(|| {
                        format!(
                            "cannot pin unknown mode {name:?} (closest: {})",
                            suggestions(catalog, name).join(", ")
                        )
                    })?;
                    let tool = mode_tool(mode);
                    if !tools.contains(&tool) {
                        tools.push(tool);
                    }
                }
                tools
            }
        };
        Ok(Categories {
            listed: meta.iter().cloned().chain(extra).collect(),
            meta,
            by_category,
        })
    }

    fn category_named(&self, name: &str) -> Option<&str> {
        self.by_category
            .keys()
            .find(|category| category.eq_ignore_ascii_case(name.trim()))
            .map(String::as_str)
    }

    fn list_categories(&self) -> Outcome {
        let categories: Vec<Value> = self
            .by_category
            .iter()
            .map(|(category, (description, tools))| {
                json!({"category": category, "toolCount": tools.len(), "description": description})
            })
            .collect();
        Outcome::ok(Value::Array(categories))
    }

    fn category_tools(&self, catalog: &Catalog, args: CategoryArgs) -> Outcome {
        let Some(category) = self.category_named(&args.category) else {
            let known: Vec<&str> = self.by_category.keys().map(String::as_str).collect();
            let closest = known
                .iter()
                .min_by_key(|name| strsim::levenshtein(name, &args.category.to_lowercase()))
                .copied();
            return Outcome::error(json!({
                "error": "unknown_category",
                "message": format!(
                    "There is no category {:?}.{} Call {LIST_CATEGORIES} to see them.",
                    args.category,
                    closest.map(|c| format!(" Did you mean {c:?}?")).unwrap_or_default()
                ),
                "categories": known,
            }));
        };
        let tools: Vec<Value> = self.by_category[category]
            .1
            .iter()
            .filter_map(|name| catalog.get(name))
            .map(|mode| json!({"name": mode.name(), "description": one_line(&mode.manifest().summary, 120)}))
            .collect();
        Outcome::ok(Value::Array(tools))
    }

    fn tool_schema(&self, catalog: &Catalog, args: SchemaArgs) -> Outcome {
        match catalog.get(&args.tool_name) {
            Some(mode) => Outcome::ok(mode_tool(mode)),
            None => Outcome::error(json!({
                "error": "unknown_tool",
                "message": format!("There is no tool {:?}.", args.tool_name),
                "suggestions": suggestions(catalog, &args.tool_name),
            })),
        }
    }
}

#[async_trait]
impl Strategy for Categories {
    fn name(&self) -> &'static str {
        "categories"
    }

    fn tools(&self, _: SessionView<'_>) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.listed)
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
        let catalog = engine.catalog();
        Ok(match name {
            LIST_CATEGORIES => self.list_categories(),
            CATEGORY_TOOLS => match parse_arguments(&self.meta, name, arguments) {
                Ok(args) => self.category_tools(&catalog, args),
                Err(outcome) => outcome,
            },
            TOOL_SCHEMA => match parse_arguments(&self.meta, name, arguments) {
                Ok(args) => self.tool_schema(&catalog, args),
                Err(outcome) => outcome,
            },
            _ => return call_mode_by_name(engine, name, arguments, call).await,
        })
    }
}
