//! Snapshots of what the model pays for: both tool lists and their token cost.
//!
//! Any change to a description or schema changes these files, so review shows
//! its token cost. Snapshots live in the top-level `snapshots/` folder.

mod common;

use common::Client;
use serde_json::Value;
#[cfg(feature = "tokens")]
use zenmode::cli::tokens::metrics as tokens;
use zenmode::{
    catalog::Catalog,
    surface::{self, StrategyKind, SurfaceOptions},
};

/// The exact `tools/list` entries of a strategy over the built-in modes.
fn tool_list(kind: StrategyKind) -> Vec<Value> {
    let catalog = Catalog::builtin().unwrap();
    let strategy = kind.over(&catalog, &SurfaceOptions::default()).unwrap();
    surface::initial_tools(strategy.as_ref())
}

macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_json_snapshot!($name, $value);
        })
    };
}

#[test]
fn optimized_tool_list() {
    snapshot!("tool_list_optimized", tool_list(StrategyKind::Zen));
}

#[test]
fn full_tool_list() {
    snapshot!("tool_list_full", tool_list(StrategyKind::Full));
}

#[cfg(feature = "tokens")]
#[test]
fn token_report() {
    let tokenizers = tokens::Tokenizers::load().unwrap();
    let report = tokens::measure(Catalog::builtin().unwrap(), &tokenizers).unwrap();
    snapshot!("tokens", tokens::to_json(&report));
}

/// Every strategy side by side over real catalogs (each beside the built-in
/// modes): tools at start, list tokens, and what a typical task adds.
#[cfg(feature = "tokens")]
#[test]
fn strategies_side_by_side_on_real_catalogs() {
    use zenmode::catalog::CatalogSources;
    let tokenizers = tokens::Tokenizers::load().unwrap();
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/catalogs");
    let mut table = serde_json::Map::new();
    for file in ["github.json", "huly_v0.1.35.json", "union_all.json"] {
        let sources = CatalogSources {
            no_builtin: false,
            modes_dirs: Vec::new(),
            foreign_catalogs: vec![shared.join(file)],
        };
        let report = tokens::measure(Catalog::load(&sources).unwrap(), &tokenizers).unwrap();
        let rows: Vec<Value> = report
            .strategies
            .iter()
            .map(|s| {
                serde_json::json!({
                    "strategy": s.name, "tools": s.tools, "list_o200k": s.tokens_o200k,
                    "task_calls": s.task_calls, "task_o200k": s.task_tokens_o200k,
                })
            })
            .collect();
        let zen = &report.strategies[0];
        let full = &report.strategies[1];
        // The two-tool list does not grow with the catalog: the mode index
        // in zen_execute's description stops at its byte budget.
        assert_eq!(zen.tools, 2, "{file}");
        assert!(zen.tokens_o200k < 800, "{file}: {}", zen.tokens_o200k);
        assert!(full.tokens_o200k > 30 * zen.tokens_o200k, "{file}");
        table.insert(file.to_owned(), Value::Array(rows));
    }
    snapshot!("strategies_side_by_side", Value::Object(table));
}

/// The wire format is our JSON, unchanged by the protocol layer.
#[test]
fn tools_list_on_the_wire_matches_the_engine() {
    for (args, listing) in [
        (&["serve"][..], StrategyKind::Zen),
        (&["serve", "--full"][..], StrategyKind::Full),
    ] {
        let mut client = Client::spawn(args);
        client.initialize();
        let wire = client.call("tools/list", Value::Null)["tools"].clone();
        let expected = Value::Array(tool_list(listing));
        assert_eq!(wire.to_string(), expected.to_string(), "{args:?}");
    }
}

/// `zenmode tokens --json` prints the snapshotted report.
#[cfg(feature = "tokens")]
#[test]
fn tokens_command_prints_the_report() {
    let output = common::zenmode(&["tokens", "--json"]).output().unwrap();
    assert!(output.status.success());
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let strategies = printed["strategies"].as_array().unwrap();
    assert_eq!(strategies[0]["name"], "zen");
    assert_eq!(strategies[0]["tools"], 2);
    assert_eq!(strategies[1]["name"], "full");
    assert_eq!(strategies[1]["tools"], 19);
    for strategy in strategies {
        for key in ["bytes", "tokens_o200k", "tokens_cl100k"] {
            assert!(strategy[key].as_u64().unwrap() > 0, "{strategy}");
        }
    }
    assert!(
        printed["select_reply_tokens_o200k_median"]
            .as_u64()
            .unwrap()
            > 0
    );

    let tokenizers = tokens::Tokenizers::load().unwrap();
    let report = tokens::measure(Catalog::builtin().unwrap(), &tokenizers).unwrap();
    assert_eq!(printed, tokens::to_json(&report));
}

/// `--catalog` adds foreign tools to the measurement.
#[cfg(feature = "tokens")]
#[test]
fn tokens_command_measures_foreign_catalogs() {
    let catalog = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/catalogs/github.json"
    );
    let output = common::zenmode(&["tokens", "--json", "--catalog", catalog])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["strategies"][1]["tools"], 19 + 117);
    // The optimized list does not grow with the catalog.
    assert_eq!(printed["strategies"][0]["tools"], 2);
    let optimized = printed["strategies"][0]["tokens_o200k"].as_u64().unwrap();
    let full = printed["strategies"][1]["tokens_o200k"].as_u64().unwrap();
    assert!(full > 30 * optimized, "{printed}");
}
