//! "Did you mean": every strategy answers an unknown or hidden name with
//! the catalog's one suggestion rule, which never offers another server's
//! destructive tool (a typo must not lead the model to delete something on
//! a server it did not name). In process, over a catalog with two servers'
//! tools beside the built-in modes.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use zenmode::{
    call::CallContext,
    catalog::{Catalog, gateway_modes::upstream_mode},
    engine::Engine,
    services::Services,
    surface::{self, Session, SessionView, Strategy, StrategyKind, SurfaceOptions},
};

/// `files` has a safe reader; `wiper` has a tool of nearly the same name
/// that its server marks destructive, and one whose name says it deletes.
fn engine() -> Engine {
    let tool = |name: &str, destructive: bool| {
        let mut tool = json!({
            "name": name,
            "description": format!("The {name} tool."),
            "inputSchema": {"type": "object"},
        });
        if destructive {
            tool["annotations"] = json!({"destructiveHint": true});
        }
        tool
    };
    let modes = [
        upstream_mode(
            "files",
            "files",
            &tool("read_notes", false),
            Default::default(),
        ),
        upstream_mode(
            "wiper",
            "wiper",
            &tool("read_notez", true),
            Default::default(),
        ),
        upstream_mode(
            "wiper",
            "wiper",
            &tool("delete_notes", false),
            Default::default(),
        ),
        upstream_mode(
            "wiper",
            "wiper",
            &tool("list_notes", false),
            Default::default(),
        ),
    ]
    .into_iter()
    .map(|mode| mode.expect("a valid tool"));
    let catalog = Catalog::builtin()
        .expect("the built-in modes load")
        .with_modes(modes);
    Engine::with_services(catalog, Services::offline()).expect("an engine")
}

fn strategy(kind: StrategyKind, engine: &Engine) -> Arc<dyn Strategy> {
    let options = SurfaceOptions {
        hidden_tool_hints: true,
        ..SurfaceOptions::default()
    };
    surface::build(kind, engine, &options).expect("the strategy builds")
}

/// The reply to `tool(arguments)` as text (an unknown tool is an error
/// without suggestions, which is fine: it offers nothing).
fn reply(strategy: &dyn Strategy, engine: &Engine, tool: &str, arguments: Value) -> String {
    let session = Session::default();
    let view = SessionView {
        state: &session,
        list_may_change: true,
    };
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome =
        runtime.block_on(strategy.call(engine, view, tool, arguments, &CallContext::default()));
    match outcome {
        Ok(outcome) => outcome.body.to_string(),
        Err(unknown) => unknown.to_string(),
    }
}

/// The names a reply offers for the typo `files__read_notse`: the named
/// server's reader, never the other server's destructive look-alikes.
fn check(label: &str, text: &str) {
    assert!(
        !text.contains("wiper__read_notez") && !text.contains("wiper__delete_notes"),
        "{label}: another server's destructive tool was suggested: {text}"
    );
    assert!(
        text.contains("files__read_notes"),
        "{label}: the named server's own tool should be suggested: {text}"
    );
}

const TYPO: &str = "files__read_notse";

#[test]
fn the_rule_on_the_catalog_leaves_out_other_servers_destructive_tools() {
    let engine = engine();
    let catalog = engine.catalog();
    let offered = catalog.suggestions(TYPO, 5);
    assert!(offered.contains(&"files__read_notes"), "{offered:?}");
    assert!(
        offered.contains(&"wiper__list_notes") || offered.len() < 5,
        "a safe tool of another server may be offered: {offered:?}"
    );
    assert!(!offered.contains(&"wiper__read_notez"), "{offered:?}");
    assert!(!offered.contains(&"wiper__delete_notes"), "{offered:?}");
    // Asking for that server by name, its destructive tools may be offered.
    let own = catalog.suggestions("wiper__read_note", 5);
    assert!(own.contains(&"wiper__read_notez"), "{own:?}");
}

#[test]
fn the_engine_and_zen_leave_them_out() {
    let engine = engine();
    let unknown = engine.mode(TYPO).expect_err("a typo is unknown");
    check("engine", &format!("{:?}", unknown.closest));
    let zen = strategy(StrategyKind::Zen, &engine);
    check(
        "zen_execute",
        &reply(
            zen.as_ref(),
            &engine,
            "zen_execute",
            json!({"mode": TYPO, "request": {}}),
        ),
    );
}

#[test]
fn lazy_leaves_them_out() {
    let engine = engine();
    let lazy = strategy(StrategyKind::Lazy, &engine);
    check(
        "lazy",
        &reply(
            lazy.as_ref(),
            &engine,
            "manage_tools",
            json!({"action": "enable", "tools": [TYPO]}),
        ),
    );
}

#[test]
fn categories_leaves_them_out() {
    let engine = engine();
    let categories = strategy(StrategyKind::Categories, &engine);
    check(
        "categories",
        &reply(
            categories.as_ref(),
            &engine,
            "get_tool_schema",
            json!({"toolName": TYPO}),
        ),
    );
}

#[test]
fn discover_leaves_them_out() {
    let engine = engine();
    let discover = strategy(StrategyKind::Discover, &engine);
    check(
        "discover",
        &reply(
            discover.as_ref(),
            &engine,
            "detail",
            json!({"command": TYPO}),
        ),
    );
}

#[test]
fn groups_leaves_them_out() {
    // Groups suggests names for a tool of a group that is not active: the
    // reader itself, hidden until `activate_files`.
    let engine = engine();
    let groups = strategy(StrategyKind::Groups, &engine);
    let text = reply(
        groups.as_ref(),
        &engine,
        "files__read_notes",
        Value::Object(Map::new()),
    );
    assert!(text.contains("tool_hidden"), "{text}");
    check("groups", &text);
}

#[test]
fn full_offers_nothing_for_an_unknown_name() {
    let engine = engine();
    let full = strategy(StrategyKind::Full, &engine);
    let text = reply(full.as_ref(), &engine, TYPO, json!({}));
    assert!(!text.contains("wiper__"), "{text}");
}
