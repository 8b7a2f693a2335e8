//! Token metrics: what each tool-list strategy costs the model's context.
//!
//! Counted with real BPE tokenizers (tiktoken's o200k_base and cl100k_base,
//! embedded in `tiktoken-rs`, so this works offline). Only this module loads
//! them, and only the `tokens` command and tests call it: never the server.

use serde::Serialize;
use serde_json::{Map, Value, json};
use tiktoken_rs::CoreBPE;

use crate::{
    call::CallContext,
    catalog::Catalog,
    engine::Engine,
    surface::{
        self, Session, SessionView, Strategy, StrategyKind, SurfaceOptions, categories, discover,
        groups, lazy,
        zen::{self, select_mode},
    },
};

/// The cost of one way of listing tools.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StrategyCost {
    pub name: &'static str,
    pub tools: usize,
    pub bytes: usize,
    pub tokens_o200k: usize,
    pub tokens_cl100k: usize,
    /// Meta-tool calls a typical task makes before it can call its tool (median).
    pub task_calls: usize,
    /// Median o200k tokens those calls add to the context: their replies,
    /// plus the tools the list gains (`lazy`, `groups`).
    pub task_tokens_o200k: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TokenReport {
    pub strategies: Vec<StrategyCost>,
    /// Median o200k tokens of one `zen_select_mode` reply per mode's first example task.
    pub select_reply_tokens_o200k_median: usize,
    pub select_reply_samples: usize,
    pub select_reply_tokens_o200k_max: usize,
}

/// Both tokenizers, loaded once per call site.
pub struct Tokenizers {
    o200k: CoreBPE,
    cl100k: CoreBPE,
}

impl Tokenizers {
    pub fn load() -> anyhow::Result<Self> {
        Ok(Tokenizers {
            o200k: tiktoken_rs::o200k_base()?,
            cl100k: tiktoken_rs::cl100k_base()?,
        })
    }

    pub fn o200k(&self, text: &str) -> usize {
        self.o200k.encode_ordinary(text).len()
    }

    pub fn cl100k(&self, text: &str) -> usize {
        self.cl100k.encode_ordinary(text).len()
    }
}

/// How many tasks the per-strategy task costs are sampled over, at most.
const TASK_SAMPLES: usize = 18;

/// Measures every strategy's list over `catalog`, what a typical task costs
/// under each, and the select replies.
pub fn measure(catalog: Catalog, tokenizers: &Tokenizers) -> anyhow::Result<TokenReport> {
    // Replies as where the AI modes can run, as `zenmode eval` scores them.
    let engine = Engine::with_assumed_provider(catalog).map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(anyhow::Error::from)?;
    let tasks = sample_tasks(&engine.catalog());
    // Where each tool sits among the groups: the same for every sample task.
    let grouping =
        groups::Groups::new(&engine.catalog(), &[], false).map_err(anyhow::Error::msg)?;
    let mut strategies = Vec::new();
    for kind in StrategyKind::ALL {
        let strategy = kind
            .over(&engine.catalog(), &SurfaceOptions::default())
            .map_err(anyhow::Error::msg)?;
        let list = surface::initial_tools(strategy.as_ref());
        let text = serde_json::to_string(&surface::model_facing(&list))?;
        let list_tokens = tokenizers.o200k(&text);
        let mut task_tokens = Vec::new();
        let mut task_calls = Vec::new();
        for task in &tasks {
            let (calls, tokens) = runtime.block_on(task_cost(
                kind,
                strategy.as_ref(),
                &engine,
                &grouping,
                task,
                list_tokens,
                tokenizers,
            ))?;
            task_calls.push(calls);
            task_tokens.push(tokens);
        }
        task_tokens.sort_unstable();
        task_calls.sort_unstable();
        strategies.push(StrategyCost {
            name: strategy.name(),
            tools: list.len(),
            bytes: text.len(),
            tokens_o200k: list_tokens,
            tokens_cl100k: tokenizers.cl100k(&text),
            task_calls: median(&task_calls),
            task_tokens_o200k: median(&task_tokens),
        });
    }

    let mut reply_tokens: Vec<usize> = engine
        .catalog()
        .modes()
        .iter()
        .filter_map(|mode| mode.manifest().examples.first())
        .map(|task| {
            let args = select_mode::SelectArgs {
                task_description: Some(task.clone()),
                ..Default::default()
            };
            let reply = select_mode::run(&engine, &args);
            tokenizers.o200k(&reply.body.to_string())
        })
        .collect();
    reply_tokens.sort_unstable();
    Ok(TokenReport {
        strategies,
        select_reply_tokens_o200k_median: median(&reply_tokens),
        select_reply_samples: reply_tokens.len(),
        select_reply_tokens_o200k_max: reply_tokens.last().copied().unwrap_or(0),
    })
}

/// A task aimed at one tool: the tool, and the words a user would use.
struct Task {
    tool: String,
    words: String,
}

/// Up to [`TASK_SAMPLES`] tools spread evenly over the catalog, each with its
/// first example phrasing (built-in modes) or its summary (imported tools).
fn sample_tasks(catalog: &Catalog) -> Vec<Task> {
    let step = catalog.len().div_ceil(TASK_SAMPLES).max(1);
    catalog
        .modes()
        .iter()
        .step_by(step)
        .map(|mode| Task {
            tool: mode.name().to_owned(),
            words: mode
                .manifest()
                .examples
                .first()
                .cloned()
                .unwrap_or_else(|| mode.manifest().summary.clone()),
        })
        .collect()
}

/// Plays the meta-tool calls a strategy needs before the task's tool can be
/// called, through the strategy itself; returns how many calls and the
/// o200k tokens they add (replies, and the list's growth).
async fn task_cost(
    kind: StrategyKind,
    strategy: &dyn Strategy,
    engine: &Engine,
    grouping: &groups::Groups,
    task: &Task,
    list_tokens: usize,
    tokenizers: &Tokenizers,
) -> anyhow::Result<(usize, usize)> {
    let category = engine
        .catalog()
        .get(&task.tool)
        .map(|mode| categories::category_of(mode).0)
        .unwrap_or_default();

    let calls: Vec<(String, Value)> = match kind {
        StrategyKind::Full => Vec::new(),
        StrategyKind::Zen => vec![(
            zen::SELECT_MODE.into(),
            json!({"task_description": task.words}),
        )],
        StrategyKind::Lazy => vec![
            (lazy::MANAGE_TOOLS.into(), json!({"action": "list"})),
            (
                lazy::MANAGE_TOOLS.into(),
                json!({"action": "enable", "names": [task.tool]}),
            ),
        ],
        StrategyKind::Categories => vec![
            (categories::LIST_CATEGORIES.into(), json!({})),
            (
                categories::CATEGORY_TOOLS.into(),
                json!({"category": category}),
            ),
            (
                categories::TOOL_SCHEMA.into(),
                json!({"toolName": task.tool}),
            ),
        ],
        StrategyKind::Groups => grouping
            .activation_path(&task.tool)
            .into_iter()
            .map(|group| (format!("{}{group}", groups::ACTIVATE_PREFIX), json!({})))
            .collect(),
        StrategyKind::Discover => vec![
            (
                discover::DISCOVER.into(),
                json!({"search": task.words, "limit": 10}),
            ),
            (discover::DETAIL.into(), json!({"names": [task.tool]})),
        ],
    };
    let session = Session::default();
    let view = SessionView {
        state: &session,
        list_may_change: true,
    };
    let mut tokens = 0;
    for (name, arguments) in &calls {
        let Value::Object(arguments) = arguments.clone() else {
            continue;
        };
        let outcome = strategy
            .call(engine, view, name, arguments, &CallContext::default())
            .await
            .map_err(|e| anyhow::anyhow!("{} {name}: {e}", strategy.name()))?;
        tokens += tokenizers.o200k(&outcome.body.to_string());
    }
    if strategy.is_dynamic() {
        let grown = strategy.tools(view);
        let text = serde_json::to_string(&surface::model_facing(&grown))?;
        tokens += tokenizers.o200k(&text).saturating_sub(list_tokens);
    }
    Ok((calls.len(), tokens))
}

/// Median of a sorted slice (lower middle for even lengths; 0 when empty).
fn median(sorted: &[usize]) -> usize {
    if sorted.is_empty() {
        0
    } else {
        sorted[(sorted.len() - 1) / 2]
    }
}

/// The report as `tokens --json` prints it.
/// Each upstream server's own tool list (as `--full` lists it), in o200k
/// tokens: what that server alone costs a client that loads it directly.
pub fn per_server(catalog: &Catalog, tokenizers: &Tokenizers) -> Vec<(String, usize, usize)> {
    let mut servers: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
    for mode in catalog.modes() {
        if let crate::catalog::Origin::Upstream(server) = &mode.origin {
            servers
                .entry(server.clone())
                .or_default()
                .push(surface::mode_tool(mode));
        }
    }
    servers
        .into_iter()
        .map(|(server, tools)| {
            let text = serde_json::to_string(&surface::model_facing(&tools)).unwrap_or_default();
            (server, tools.len(), tokenizers.o200k(&text))
        })
        .collect()
}

pub fn to_json(report: &TokenReport) -> Value {
    serde_json::to_value(report).unwrap_or_else(|_| Value::Object(Map::new()))
}

/// The report as a table for people.
pub fn to_table(report: &TokenReport) -> String {
    let mut out =
        String::from("strategy    tools     bytes   o200k  cl100k   task calls  task o200k\n");
    for s in &report.strategies {
        out.push_str(&format!(
            "{:<10} {:>6} {:>9} {:>7} {:>7} {:>12} {:>11}\n",
            s.name,
            s.tools,
            s.bytes,
            s.tokens_o200k,
            s.tokens_cl100k,
            s.task_calls,
            s.task_tokens_o200k
        ));
    }
    out.push_str("(task: the meta-tool calls a typical task makes before calling its tool, and the tokens their replies and any list growth add; median)\n");
    if let [optimized, full, ..] = report.strategies.as_slice()
        && optimized.tokens_o200k > 0
    {
        out.push_str(&format!(
            "\nfull / zen: {:.1}x the tokens\n",
            full.tokens_o200k as f64 / optimized.tokens_o200k as f64
        ));
    }
    out.push_str(&format!(
        "select reply (o200k): median {} over {} example tasks, max {}\n",
        report.select_reply_tokens_o200k_median,
        report.select_reply_samples,
        report.select_reply_tokens_o200k_max
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn median_of_sorted_values() {
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[5]), 5);
        assert_eq!(median(&[1, 2, 3, 4]), 2);
        assert_eq!(median(&[1, 2, 9]), 2);
    }

    #[test]
    fn tokenizers_count_real_tokens() {
        let t = Tokenizers::load().unwrap();
        assert_eq!(t.o200k(""), 0);
        assert!(t.o200k("hello world") >= 2);
        assert!(t.cl100k(&json!({"a": "b"}).to_string()) > 1);
    }
}
