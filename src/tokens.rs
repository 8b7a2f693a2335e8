//! Token metrics: what each tool-list strategy costs the model's context.
//!
//! Counted with real BPE tokenizers (tiktoken's o200k_base and cl100k_base,
//! embedded in `tiktoken-rs`, so this works offline). Only this module loads
//! them, and only the `tokens` command and tests call it: never the server.

use serde::Serialize;
use serde_json::{Map, Value};
use tiktoken_rs::CoreBPE;

use crate::{
    catalog::Catalog,
    engine::Engine,
    surface::{self, StrategyKind, SurfaceOptions, zen::select_mode},
};

/// The cost of one way of listing tools.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StrategyCost {
    pub name: &'static str,
    pub tools: usize,
    pub bytes: usize,
    pub tokens_o200k: usize,
    pub tokens_cl100k: usize,
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

/// Measures both listings of `catalog` and the select replies.
///
/// Takes the catalog by value: the select replies need an engine over it.
pub fn measure(catalog: Catalog, tokenizers: &Tokenizers) -> anyhow::Result<TokenReport> {
    let mut strategies = Vec::new();
    for kind in StrategyKind::ALL {
        let strategy = kind
            .over(&catalog, &SurfaceOptions::default())
            .map_err(anyhow::Error::msg)?;
        let list = surface::initial_tools(strategy.as_ref());
        let text = serde_json::to_string(&surface::model_facing(&list))?;
        strategies.push(StrategyCost {
            name: strategy.name(),
            tools: list.len(),
            bytes: text.len(),
            tokens_o200k: tokenizers.o200k(&text),
            tokens_cl100k: tokenizers.cl100k(&text),
        });
    }

    let engine = Engine::new(catalog).map_err(anyhow::Error::msg)?;
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

/// Median of a sorted slice (lower middle for even lengths; 0 when empty).
fn median(sorted: &[usize]) -> usize {
    if sorted.is_empty() {
        0
    } else {
        sorted[(sorted.len() - 1) / 2]
    }
}

/// The report as `tokens --json` prints it.
pub fn to_json(report: &TokenReport) -> Value {
    serde_json::to_value(report).unwrap_or_else(|_| Value::Object(Map::new()))
}

/// The report as a table for people.
pub fn to_table(report: &TokenReport) -> String {
    let mut out = String::from("strategy    tools     bytes   o200k  cl100k\n");
    for s in &report.strategies {
        out.push_str(&format!(
            "{:<10} {:>6} {:>9} {:>7} {:>7}\n",
            s.name, s.tools, s.bytes, s.tokens_o200k, s.tokens_cl100k
        ));
    }
    if let [optimized, full, ..] = report.strategies.as_slice()
        && optimized.tokens_o200k > 0
    {
        out.push_str(&format!(
            "\nfull / optimized: {:.1}x the tokens\n",
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
