//! `zen_select_mode`'s replies: the recommendation, its fallback and
//! safety lines, and the ready calls it offers.

use super::*;
use crate::select::{FALLBACK_MODE, Tuning};

/// What a reply shows and how many modes, by the default tuning.
const SHOWN: crate::select::ReplyThresholds = Tuning::DEFAULT.reply;

fn engine() -> Engine {
    Engine::with_assumed_provider(Catalog::builtin().unwrap()).unwrap()
}

fn select(engine: &Engine, task: &str, top_k: Option<usize>) -> Value {
    let args = SelectArgs {
        task_description: Some(task.to_owned()),
        mode: None,
        top_k,
    };
    let outcome = run(engine, &args);
    assert!(!outcome.is_error, "{}", outcome.body);
    outcome.body
}

#[test]
fn a_clear_task_gets_its_mode_with_high_confidence() {
    let engine = engine();
    let reply = select(
        &engine,
        "write unit tests with edge cases for the date parser",
        None,
    );
    assert_eq!(reply["mode"], "testgen");
    assert!(reply["confidence"].as_f64().unwrap() > 0.5, "{reply}");
    assert!(reply.get("low_confidence").is_none(), "{reply}");
    assert!(reply["reason"].as_str().unwrap().starts_with("matched: "));
    let alternatives = reply["alternatives"].as_array().unwrap();
    assert!(alternatives.len() < SHOWN.shown_at_least);
    assert_eq!(reply["recommended_mode"], "testgen");
    assert!(reply["required_fields"].as_array().unwrap().len() >= 4);
    for alternative in alternatives {
        for key in ["mode", "confidence", "summary"] {
            assert!(
                alternative.get(key).is_some(),
                "{key} missing: {alternative}"
            );
        }
    }
}

#[test]
fn a_vague_task_falls_back_to_chat_and_shows_the_best_matches() {
    let engine = engine();
    let reply = select(&engine, "make it better", Some(3));
    assert_eq!(reply["mode"], FALLBACK_MODE, "{reply}");
    assert_eq!(reply["low_confidence"], true);
    assert!(
        reply["reason"]
            .as_str()
            .unwrap()
            .contains("no mode clearly fits")
    );
    let alternatives = reply["alternatives"].as_array().unwrap();
    // The fallback adds one alternative: the best match is not hidden.
    assert_eq!(alternatives.len(), 3, "{reply}");
    assert!(alternatives.iter().all(|a| a["mode"] != FALLBACK_MODE));
    assert!(reply["next_call"]["arguments"]["mode"] == FALLBACK_MODE);
}

#[test]
fn top_k_outside_the_schema_range_is_refused() {
    let engine = engine();
    for top_k in [0, MAX_TOP_K + 1] {
        let args = SelectArgs {
            task_description: Some("review my code".into()),
            mode: None,
            top_k: Some(top_k),
        };
        let outcome = run(&engine, &args);
        assert!(outcome.is_error, "{top_k}: {}", outcome.body);
        assert_eq!(outcome.body["error"], "invalid_arguments");
    }
}

#[test]
fn only_the_start_of_a_huge_task_is_analysed() {
    let task = "write unit tests for the date parser. ".repeat(1_000) + "é";
    let part = analysed_part(&task);
    assert_eq!(part.chars().count(), MAX_ANALYSED_CHARS);
    assert!(task.starts_with(part));
    assert_eq!(analysed_part("short"), "short");
    let reply = select(
        &engine(),
        &"debug the crash in checkout ".repeat(200_000),
        None,
    );
    assert_eq!(reply["mode"], "debug", "{reply}");
}

#[test]
fn nothing_matched_lists_the_modes() {
    let engine = engine();
    let reply = select(&engine, "zzzz qqqq", None);
    assert_eq!(reply["mode"], FALLBACK_MODE);
    assert_eq!(reply["confidence"], 0.0);
    assert_eq!(reply["low_confidence"], true);
    assert_eq!(
        reply["modes"].as_array().unwrap().len(),
        engine.catalog().len()
    );
}

/// The built-in modes beside six real servers' tools, as a gateway
/// user has them (names prefixed `<server>__`).
fn gateway_engine() -> Engine {
    let sources = crate::catalog::CatalogSources {
        foreign_catalogs: vec![
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/routerank/six_servers.json"),
        ],
        ..Default::default()
    };
    Engine::with_assumed_provider(Catalog::load(&sources).unwrap()).unwrap()
}

fn next_mode(reply: &Value) -> Option<&str> {
    reply
        .pointer("/next_call/arguments/mode")
        .and_then(Value::as_str)
}

/// When nothing matches and there is no `chat` to fall back to, the
/// guess is a mode that changes nothing, never the catalog's first tool.
#[test]
fn a_guess_without_chat_never_changes_state() {
    let sources = crate::catalog::CatalogSources {
        no_builtin: true,
        foreign_catalogs: vec![
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/safety/catalog.json"),
        ],
        ..Default::default()
    };
    let engine = Engine::new(Catalog::load(&sources).unwrap()).unwrap();
    // Its first tool by name creates a directory.
    let first = engine.catalog().modes()[0].name().to_owned();
    assert_eq!(first, "filesystem__create_directory");
    let reply = select(&engine, "zzzz qqqq", None);
    let mode = next_mode(&reply).expect("a harmless guess");
    let catalog = engine.catalog();
    assert!(
        !crate::select::changes_state(catalog.get(mode).unwrap().manifest()),
        "{reply}"
    );
    assert_eq!(reply["low_confidence"], true);
}

#[test]
fn a_request_to_store_never_gets_a_ready_delete() {
    let engine = gateway_engine();
    let reply = select(
        &engine,
        "store in the knowledge graph that Alice is an entity of type person",
        None,
    );
    assert_eq!(
        next_mode(&reply),
        Some("memory__create_entities"),
        "{reply}"
    );
    let reply = select(&engine, "what changed in my repo?", None);
    let first = next_mode(&reply).unwrap_or_default();
    assert!(
        !first.contains("reset") && !first.contains("commit"),
        "{reply}"
    );
}

#[test]
fn a_destructive_tool_ranked_above_a_harmless_one_is_named_in_one_line() {
    let engine = gateway_engine();
    for task in [
        "store in the knowledge graph that Alice is an entity of type person",
        "what changed in my repo?",
        "put Bob in the knowledge graph as a person",
    ] {
        let reply = select(&engine, task, Some(5));
        let mode = reply["mode"].as_str().unwrap();
        assert!(
            !engine.catalog().get(mode).unwrap().manifest().destructive(),
            "{task}: {reply}"
        );
        if let Some(caution) = reply.get("caution") {
            let line = caution.as_str().unwrap();
            assert!(!line.contains('\n') && line.contains(mode), "{line}");
        }
    }
}

#[test]
fn a_request_that_asks_to_delete_gets_the_delete() {
    let engine = gateway_engine();
    let reply = select(
        &engine,
        "delete the entity Bob from the knowledge graph",
        None,
    );
    assert_eq!(
        next_mode(&reply),
        Some("memory__delete_entities"),
        "{reply}"
    );
    assert!(reply.get("caution").is_none(), "{reply}");
}

#[test]
fn a_written_tool_name_wins_outright() {
    let engine = gateway_engine();
    let reply = select(&engine, "please run git_reset on the repo", None);
    assert_eq!(next_mode(&reply), Some("git__git_reset"), "{reply}");
    let reply = select(&engine, "use memory__read_graph", None);
    assert_eq!(next_mode(&reply), Some("memory__read_graph"), "{reply}");
}

#[test]
fn confidences_are_in_range_and_alternatives_follow_top_k() {
    let engine = engine();
    for top_k in [1, 2, 5, 10] {
        let reply = select(
            &engine,
            "review my staged changes before I commit",
            Some(top_k),
        );
        let alternatives = reply["alternatives"].as_array().map_or(0, Vec::len);
        assert!(alternatives < top_k, "top_k {top_k}: {reply}");
        let confidence = reply["confidence"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&confidence));
    }
}

/// Tools without example phrasings: (name, description, required field).
fn tools_engine<const N: usize>(tools: [(&str, &str, &str); N]) -> Engine {
    let modes = tools.map(|(name, description, field)| {
        let manifest = json!({
            "name": name, "title": name, "summary": description, "description": description,
            "category": "utility",
            "schema": {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
        });
        crate::catalog::Mode::new(
            crate::catalog::Manifest::parse(&manifest.to_string(), None).unwrap(),
            crate::catalog::Origin::Builtin,
        )
    });
    Engine::new(Catalog::from_modes(modes)).unwrap()
}

#[test]
fn two_modes_about_as_likely_are_offered_side_by_side_to_choose_from() {
    // Same description: the ranking cannot tell them apart.
    let engine = tools_engine([
        (
            "alpha_reader",
            "Reads the notes kept for a project",
            "project",
        ),
        (
            "beta_reader",
            "Reads the notes kept for a project",
            "folder",
        ),
        (
            "weather_forecast",
            "Forecasts tomorrow's weather for a city",
            "city",
        ),
    ]);
    let reply = select(&engine, "read the notes kept for my project", None);
    assert!(reply.get("next_call").is_none(), "{reply}");
    let choose = reply["choose"].as_array().expect("a choice");
    let names: Vec<&str> = choose.iter().filter_map(|c| c["mode"].as_str()).collect();
    assert_eq!(names.len(), 2, "{reply}");
    assert!(names.contains(&"alpha_reader") && names.contains(&"beta_reader"));
    for candidate in choose {
        let mode = candidate["mode"].as_str().unwrap();
        let field = if mode == "alpha_reader" {
            "project"
        } else {
            "folder"
        };
        assert!(candidate["required"].get(field).is_some(), "{candidate}");
        assert_eq!(next_mode(candidate), Some(mode), "{candidate}");
    }
    assert!(reply["reason"].as_str().unwrap().contains("choose"));
    // One clear match: one ready call, nothing to choose.
    let reply = select(&engine, "forecast the weather for Oslo tomorrow", None);
    assert_eq!(next_mode(&reply), Some("weather_forecast"), "{reply}");
    assert!(reply.get("choose").is_none(), "{reply}");
}

#[test]
fn a_tool_that_stands_out_is_served_instead_of_the_chat_fallback() {
    let engine = gateway_engine();
    // Unsure overall, but the tool is far ahead of the next one.
    let ranking = engine
        .index()
        .index()
        .ranking("pull down http://localhost:8000/health as it is");
    assert!(
        ranking.no_clear_fit() && ranking.stands_out(),
        "{ranking:?}"
    );
    let reply = select(
        &engine,
        "pull down http://localhost:8000/health as it is",
        None,
    );
    assert_eq!(reply["mode"], "fetch__fetch", "{reply}");
    assert_eq!(next_mode(&reply), Some("fetch__fetch"), "{reply}");
    assert_eq!(reply["low_confidence"], true);
    // A tool that changes state is served without a ready call when the
    // ranking is unsure of it, and with one when it is sure.
    let task = "put draft.txt in another folder";
    let ranking = engine.index().index().ranking(task);
    assert!(ranking.is_low_confidence(), "{ranking:?}");
    let reply = select(&engine, task, None);
    assert_eq!(reply["mode"], "filesystem__move_file", "{reply}");
    assert!(reply.get("next_call").is_none(), "{reply}");
    assert!(reply["caution"].as_str().unwrap().contains("no ready call"));
    let reply = select(&engine, "move draft.txt to final.txt", None);
    assert_eq!(next_mode(&reply), Some("filesystem__move_file"), "{reply}");
}

/// Modes a reply shows by default: three when the first are sure, up to
/// five when it takes more to cover most of the confidence; a `top_k`
/// the client gives is kept either way.
#[test]
fn an_unsure_reply_shows_more_modes_unless_the_client_says_how_many() {
    let shown = |reply: &Value| {
        1 + reply["alternatives"].as_array().map_or(0, Vec::len)
            - usize::from(reply["mode"] == FALLBACK_MODE)
    };
    let sure = select(
        &engine(),
        "write unit tests with edge cases for the date parser",
        None,
    );
    assert!(shown(&sure) <= SHOWN.shown_at_least, "{sure}");
    let engine = gateway_engine();
    let task = "tidy up the notes";
    let ranking = engine.index().index().ranking(task);
    let top: f32 = ranking.ranked.iter().take(3).map(|r| r.confidence).sum();
    assert!(top < SHOWN.shown_confidence, "{ranking:?}");
    let unsure = select(&engine, task, None);
    assert!(shown(&unsure) > SHOWN.shown_at_least, "{unsure}");
    assert!(shown(&unsure) <= SHOWN.shown_at_most, "{unsure}");
    let asked = select(&engine, task, Some(2));
    assert_eq!(shown(&asked), 2, "{asked}");
}

/// Without a model provider `chat` cannot run: it is neither the fallback
/// of a vague task nor recommended without a note saying what to set.
#[test]
fn without_a_provider_no_mode_that_cannot_run_is_offered() {
    let engine = Engine::new(Catalog::builtin().unwrap()).unwrap();
    for task in [
        "make it better",
        "remember that Alice works at Acme",
        "qwzx vbnm",
    ] {
        let reply = select(&engine, task, None);
        assert_ne!(reply["mode"], FALLBACK_MODE, "{task}: {reply}");
        assert_ne!(reply["next_call"]["arguments"]["mode"], FALLBACK_MODE);
        for alternative in reply["alternatives"].as_array().into_iter().flatten() {
            if ["chat", "consensus"].contains(&alternative["mode"].as_str().unwrap()) {
                assert_eq!(alternative["cannot_run"], true, "{reply}");
            }
        }
    }
    let reply = select(&engine, "chat about the trade-offs of SQLite", None);
    assert_eq!(reply["mode"], "chat", "{reply}");
    assert!(
        reply["cannot_run"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY"),
        "{reply}"
    );
    assert!(reply.get("next_call").is_none(), "{reply}");
}

/// A request that chains steps over servers' tools is offered `script`.
#[test]
fn a_multi_step_request_over_servers_is_offered_script() {
    let engine = gateway_engine();
    let task = "list my notes folder and read the two newest files, then summarize them";
    let reply = select(&engine, task, None);
    let offered: Vec<&str> = std::iter::once(&reply["mode"])
        .chain(reply["alternatives"].as_array().unwrap())
        .filter_map(|entry| entry.get("mode").unwrap_or(entry).as_str())
        .collect();
    assert!(offered.contains(&"script"), "{reply}");
}

/// What `zenmode eval` scores is the decision; what the model reads is its
/// JSON. The two must agree on the mode, the ready calls and the modes shown,
/// with and without a provider (modes that cannot run lose their calls).
#[test]
fn the_reply_serves_exactly_what_the_decision_says() {
    let from_reply = |reply: &Value| {
        let call = |entry: &Value| {
            entry
                .pointer("/next_call/arguments/mode")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let listed = |key: &str| reply[key].as_array().cloned().unwrap_or_default();
        crate::select::eval::Served {
            mode: reply["mode"].as_str().map(str::to_owned),
            next_call: call(reply),
            shown: std::iter::once(reply.clone())
                .chain(listed("alternatives"))
                .filter_map(|entry| entry["mode"].as_str().map(str::to_owned))
                .collect(),
            ready: std::iter::once(reply.clone())
                .chain(listed("choose"))
                .filter_map(|entry| call(&entry))
                .collect(),
        }
    };
    let tasks = [
        "write unit tests with edge cases for the date parser",
        "make it better",
        "qwzx vbnm",
        "tidy up the notes",
        "delete the old notes folder",
        "list my notes folder and read the two newest files, then summarize them",
        "chat about the trade-offs of SQLite",
        "move draft.txt to final.txt",
    ];
    let engines = [
        engine(),
        gateway_engine(),
        Engine::new(Catalog::builtin().unwrap()).unwrap(),
    ];
    for engine in &engines {
        for task in tasks {
            let reply = select(engine, task, None);
            let (snapshot, decision) = decide(engine, task);
            assert_eq!(
                from_reply(&reply),
                crate::select::eval::Served::of(&decision, snapshot.catalog()),
                "{task}: {reply}"
            );
        }
    }
}
