//! The full all-MiniLM-L6-v2 model at select time (`--features
//! transformer`, `--embedding-model DIR`): its vectors match the reference
//! implementation; asked when the table's ranking is unsure, and fused
//! with the lexical signal, it beats the model alone (the embedding
//! baseline) on every foreign set.
//!
//! Needs the weights: `ZEN_EMBEDDING_MODEL=DIR`, filled by
//! `scripts/embedding/fetch_model.sh DIR` (`.ci/run` fetches them and runs
//! this file in its `ci` profile). By hand: `ZEN_EMBEDDING_MODEL=DIR cargo
//! test --profile ci --test transformer`. The encoder (`crates/bert`) is
//! compiled optimized in every profile, debug included.
#![cfg(feature = "transformer")]

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Once,
};

use common::sets::{catalog, labels, root};
use zenmode::{
    catalog::Catalog,
    select::eval::{self, Label, Report},
    select::{Index, Ranker, Tuning, embedding::Encoder},
};

/// Whether the weights are here. The plain `cargo test` builds this file
/// too (the model is a default feature) but is given no weights: it skips
/// unless `ZEN_REQUIRE_MODEL` is set, which `.ci/run`'s model step sets
/// with the weights.
fn have_model() -> bool {
    let given = std::env::var_os("ZEN_EMBEDDING_MODEL").is_some_and(|v| v != "none");
    if !given && std::env::var_os("ZEN_REQUIRE_MODEL").is_none() {
        eprintln!("skipped: ZEN_EMBEDDING_MODEL is not set (see the module doc)");
        return false;
    }
    true
}

fn model_dir() -> PathBuf {
    std::env::var_os("ZEN_EMBEDDING_MODEL")
        .map(PathBuf::from)
        .expect(
            "set ZEN_EMBEDDING_MODEL to the model's directory (scripts/embedding/fetch_model.sh)",
        )
}

/// Every index built in this process uses the model from here on.
fn use_model() {
    static LOADED: Once = Once::new();
    LOADED.call_once(|| {
        let cache = tempfile::tempdir().unwrap().keep();
        zenmode::select::embedding::use_model(&model_dir(), Some(&cache)).expect("the model loads");
    });
}

fn evaluate(catalog: &Catalog, ranker: Ranker, labels: &[Label]) -> Report {
    let index = Index::build_with(catalog, ranker);
    eval::evaluate(&index, catalog, labels)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The model's encoder, loaded; `None` without the model.
fn loaded_encoder() -> Option<Encoder> {
    if !have_model() {
        return None;
    }
    use_model();
    Some(Encoder::current().unwrap())
}

/// The texts and vectors of the reference implementation
/// (`tests/data/minilm_reference.json`).
fn reference_cases() -> Vec<serde_json::Value> {
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/data/minilm_reference.json")).unwrap(),
    )
    .unwrap();
    reference["cases"].as_array().unwrap().clone()
}

/// The Rust forward pass (`crates/bert`, half-float weights) and
/// the Rust tokenizer give the vectors that
/// the reference implementation (scripts/embedding/minilm.py) gives with
/// the shipped overlay of fine-tuned layers, which zenmode applies over the
/// published weights.
#[test]
fn vectors_match_the_reference_model() {
    let Some(encoder) = loaded_encoder() else {
        return;
    };
    assert!(encoder.is_full_model());
    for case in reference_cases() {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<f32> = serde_json::from_value(case["with_overlay"].clone()).unwrap();
        let got = encoder.embed(text, false).expect("a vector");
        assert_eq!(got.len(), expected.len());
        let similarity = cosine(&got, &expected);
        assert!(similarity > 0.9999, "{text}: cosine {similarity}");
    }
}

/// `ZEN_ENCODER_OVERLAY=none` runs the model as published: the reference
/// implementation's vectors without the overlay, which differ from those
/// with it.
#[test]
fn without_the_overlay_the_model_is_the_published_one() {
    if !have_model() {
        return;
    }
    let cases = reference_cases();
    let input: String = cases
        .iter()
        .map(|case| format!("{}\n", case["text"]))
        .collect();
    let embed = |overlay: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zenmode"));
        command
            .args(["model", "embed", "--dir"])
            .arg(model_dir())
            .env("ZEN_CACHE_DIR", tempfile::tempdir().unwrap().keep())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        match overlay {
            Some(value) => command.env("ZEN_ENCODER_OVERLAY", value),
            None => command.env_remove("ZEN_ENCODER_OVERLAY"),
        };
        let mut child = command.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Vec<f32>>(line).unwrap())
            .collect::<Vec<_>>()
    };
    let unit = |v: &[f32]| {
        let norm = cosine(v, v).sqrt();
        v.iter().map(|x| x / norm).collect::<Vec<f32>>()
    };
    let published = embed(Some("none"));
    let shipped = embed(None);
    assert_eq!(published.len(), cases.len());
    for ((case, plain), tuned) in cases.iter().zip(&published).zip(&shipped) {
        let expected: Vec<f32> = serde_json::from_value(case["vector"].clone()).unwrap();
        let text = &case["text"];
        let similarity = cosine(&unit(plain), &expected);
        assert!(similarity > 0.9999, "{text}: cosine {similarity}");
        let moved = cosine(&unit(tuned), &expected);
        assert!(
            moved < 0.999,
            "{text}: the overlay left it at cosine {moved}"
        );
    }
}

/// A vector worth keeping (a tool's text, an example request) is kept in
/// half floats: it is the same the first time, when it is computed, and
/// afterwards, when it is read back, and still the full-precision vector
/// to a cosine of 0.9999.
#[test]
fn a_kept_vector_is_the_same_computed_or_read_back() {
    let Some(encoder) = loaded_encoder() else {
        return;
    };
    for case in reference_cases() {
        // A text of its own, so that no other test has kept it first.
        let text = format!("{} (kept)", case["text"].as_str().unwrap());
        let unkept = encoder.embed(&text, false).expect("a vector");
        let computed = encoder.embed(&text, true).expect("a vector");
        let read_back = encoder.embed(&text, true).expect("a vector");
        assert_eq!(computed, read_back, "{text}");
        let similarity = cosine(&computed, &unkept);
        assert!(similarity > 0.9999, "{text}: cosine {similarity}");
    }
}

/// The two arithmetics of `crates/bert` (f32 products on any CPU,
/// bfloat16 on AMX tiles where the CPU has them) give the same vectors to
/// a cosine of 0.9999, over sequences from one token to the model's 256.
/// Where the tiles are missing both load as f32, and this holds trivially;
/// `vectors_match_the_reference_model` checks whichever this machine uses.
#[test]
fn the_tile_encoder_agrees_with_the_f32_one() {
    if !have_model() {
        return;
    }
    use zenmode_bert::{Arithmetic, Bert, Config};
    let dir = model_dir();
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let config: Config =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let f32_encoder = Bert::load(&bytes, &config, Arithmetic::F32).unwrap();
    let tile_encoder = Bert::load(&bytes, &config, Arithmetic::Tiles).unwrap();
    eprintln!(
        "this machine's tiles encoder: {:?}",
        tile_encoder.arithmetic()
    );
    assert_eq!(f32_encoder.arithmetic(), Arithmetic::F32);
    for tokens in [1usize, 2, 7, 16, 17, 31, 48, 100, 256] {
        let ids: Vec<u32> = std::iter::once(101)
            .chain((1..tokens.saturating_sub(1)).map(|i| 1000 + (i as u32 * 7919) % 28000))
            .chain(std::iter::once(102))
            .take(tokens)
            .collect();
        let (a, b) = (
            f32_encoder.mean_output(&ids).unwrap(),
            tile_encoder.mean_output(&ids).unwrap(),
        );
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let similarity = cosine(&a, &b) / norm(&a) / norm(&b);
        assert!(similarity > 0.9999, "{tokens} tokens: cosine {similarity}");
    }
}

/// all-MiniLM-L6-v2 alone (top-1, MRR), from scripts/embedding/baseline.py.
const BASELINES: [(&str, f64, f64); 5] = [
    ("bfcl_multiple", 0.750, 0.843),
    ("bfcl_live dev", 0.637, 0.757),
    ("bfcl_live held-out", 0.627, 0.741),
    ("MetaTool dev", 0.619, 0.705),
    ("MetaTool held-out", 0.618, 0.699),
];

#[test]
fn fused_with_the_model_beats_the_model_alone_on_every_set() {
    if !have_model() {
        return;
    }
    use_model();
    let live = catalog(root().join("tests/data/foreign/bfcl_live/catalog.json"));
    let metatool = catalog(root().join("tests/data/foreign/metatool/catalog.json"));
    let multiple = catalog(root().join("../shared/routing/bfcl_multiple/global_catalog.json"));
    let sets = [
        (
            &multiple,
            root().join("../shared/routing/bfcl_multiple/global_labels.jsonl"),
        ),
        (&live, root().join("tests/data/foreign/bfcl_live/dev.jsonl")),
        (
            &live,
            root().join("tests/data/foreign/bfcl_live/heldout.jsonl"),
        ),
        (
            &metatool,
            root().join("tests/data/foreign/metatool/dev.jsonl"),
        ),
        (
            &metatool,
            root().join("tests/data/foreign/metatool/heldout.jsonl"),
        ),
    ];
    for ((catalog, labels_file), (name, top1, mrr)) in sets.into_iter().zip(BASELINES) {
        let labels = labels(labels_file);
        let fused = evaluate(catalog, Ranker::Full, &labels).overall;
        let alone = evaluate(catalog, Ranker::Embed, &labels).overall;
        println!(
            "{name}: fused {:.3} / {:.3}, model alone {:.3} / {:.3}, baseline {top1} / {mrr}",
            fused.top1, fused.mrr, alone.top1, alone.mrr
        );
        assert!(
            fused.top1 > top1 && fused.mrr > mrr,
            "{name}: fused {:.3} / {:.3} does not beat the baseline {top1} / {mrr}",
            fused.top1,
            fused.mrr
        );
        // The model alone, run here with the overlay tuned on MCP servers'
        // example requests, loses no more than the tokenizer's rare
        // differences on these catalogs, which are not MCP servers.
        assert!(
            alone.top1 > top1 - 0.02,
            "{name}: model alone {:.3}",
            alone.top1
        );
    }
}

/// The model ranks exactly the requests the table is unsure of: almost
/// none when the threshold is 0, all when it is above 1 (the default),
/// some but not all at 0.3; every request the table answers has at least
/// that confidence.
#[test]
fn the_model_is_asked_only_when_the_table_is_unsure() {
    if !have_model() {
        return;
    }
    use_model();
    let metatool = catalog(root().join("tests/data/foreign/metatool/catalog.json"));
    let labels = labels(root().join("tests/data/foreign/metatool/dev.jsonl"));
    let asked = |threshold: f32| {
        let tuning = Tuning {
            ask_model_below: threshold,
            ..Tuning::DEFAULT
        };
        let index = Index::build_tuned(&metatool, Ranker::Full, tuning);
        let rankings: Vec<_> = labels.iter().map(|l| index.ranking(&l.query)).collect();
        for ranking in rankings.iter().filter(|r| !r.by_model) {
            let best = ranking.ranked.first().map_or(0.0, |r| r.confidence);
            assert!(
                best >= threshold,
                "the table answered with confidence {best}"
            );
        }
        rankings.iter().filter(|r| r.by_model).count() as f64 / labels.len() as f64
    };
    // At 0 only a request the table ranks no tool for (1 of 1,052 here).
    assert!(asked(0.0) < 0.01);
    assert_eq!(asked(1.01), 1.0);
    let unsure = asked(0.3);
    println!("MetaTool dev: below 0.3 the model ranked {unsure:.3} of the requests");
    assert!(unsure > 0.2 && unsure < 0.8, "{unsure}");
    // The default asks the model for every request once its index is
    // ready (it ranked the real servers' requests better than the table).
    assert_eq!(asked(Tuning::DEFAULT.ask_model_below), 1.0);
}

/// A server builds the model's index on a thread (`Index::build_model_later`);
/// once it is ready, requests are ranked as by an index built in one go.
#[test]
fn a_server_builds_the_model_index_on_a_thread() {
    if !have_model() {
        return;
    }
    use_model();
    let metatool = catalog(root().join("tests/data/foreign/metatool/catalog.json"));
    let labels = labels(root().join("tests/data/foreign/metatool/dev.jsonl"));
    let later = Index::build_model_later(&metatool);
    let started = std::time::Instant::now();
    while later.model_pending() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(900),
            "the model's index was never ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let at_once = Index::build(&metatool);
    let modes = |ranking: &zenmode::select::Ranking| -> Vec<usize> {
        ranking.ranked.iter().map(|r| r.mode_index).collect()
    };
    let mut asked = 0;
    for label in labels.iter().take(200) {
        let (a, b) = (later.ranking(&label.query), at_once.ranking(&label.query));
        assert_eq!(a.by_model, b.by_model, "{}", label.query);
        assert_eq!(modes(&a), modes(&b), "{}", label.query);
        asked += usize::from(a.by_model);
    }
    assert!(asked > 0, "no request reached the model");
}

/// On bfcl_multiple with its irrelevant requests, no-fit detection flags
/// more than half of the irrelevant requests and almost no relevant one:
/// with the bar at the probes' median (docs/decisions/0015) the dev half
/// measures 0.553 of irrelevant and 0.005 of relevant requests flagged
/// (0.785 / 0.040 at the probes' 80% quantile, which flagged 13-33% of
/// the relevant requests of other catalogs). The floor guards against
/// either getting worse.
#[test]
fn no_fit_detection_with_the_model() {
    if !have_model() {
        return;
    }
    use_model();
    let multiple = catalog(root().join("../shared/routing/bfcl_multiple/global_catalog.json"));
    let relevant = labels(root().join("../shared/routing/bfcl_multiple/global_labels.jsonl"));
    for half in ["dev", "heldout"] {
        let mut pooled = relevant.clone();
        pooled.extend(labels(
            root().join(format!("tests/data/foreign/bfcl_irrelevance/{half}.jsonl")),
        ));
        let report = evaluate(&multiple, Ranker::Full, &pooled);
        assert!(
            report.no_fit_flagged >= 0.53 && report.no_clear_fit <= 0.03,
            "{half}: {:.3} of no-fit and {:.3} of relevant queries flagged",
            report.no_fit_flagged,
            report.no_clear_fit
        );
    }
}

/// A second process reads the tool vectors the first one computed instead
/// of running the model over the catalog again.
#[test]
fn a_second_process_reads_the_vectors_from_the_cache() {
    if !have_model() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let run = || {
        let output = Command::new(env!("CARGO_BIN_EXE_zenmode"))
            .args(["select", "--no-builtin-modes", "--catalog"])
            .arg(root().join("tests/data/foreign/metatool/catalog.json"))
            .arg("--embedding-model")
            .arg(model_dir())
            .arg("find me a recipe for dinner tonight")
            .env("ZEN_CACHE_DIR", cache.path())
            .env("RUST_LOG", "zenmode=debug")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let first = run();
    assert!(!first.contains("read from the cache"), "{first}");
    let second = run();
    let line = second
        .lines()
        .find(|line| line.contains("read from the cache"))
        .unwrap_or_else(|| panic!("the second run did not read the cache: {second}"));
    // 199 tools and the no-fit probes.
    let read: usize = line
        .split("read=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(read >= 199, "{line}");
}

/// What `zenmode select` logs about the model with `data` as
/// XDG_DATA_HOME and `extra` arguments.
fn select_log(data: &std::path::Path, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_zenmode"))
        .args(["select", "--no-builtin-modes", "--catalog"])
        // 51 tools: the smallest catalog at hand that the model encodes.
        .arg(root().join("tests/data/foreign/realservers/catalog.json"))
        .args(extra)
        .arg("what changed in my repo?")
        .env_remove("ZEN_EMBEDDING_MODEL")
        .env("XDG_DATA_HOME", data)
        .env("ZEN_CACHE_DIR", data.join("cache"))
        .env("RUST_LOG", "zenmode=debug")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn the_installed_model_is_used_without_a_flag_and_none_turns_it_off() {
    if !have_model() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("zenmode/model");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(model_dir(), root.join("all-MiniLM-L6-v2")).unwrap();
    let used = select_log(data.path(), &[]);
    assert!(used.contains("embedding model opened"), "{used}");
    let off = select_log(data.path(), &["--embedding-model", "none"]);
    assert!(!off.contains("embedding model opened"), "{off}");
}

/// `upstream add` puts the new server's tools through the model before it
/// ends, into the vector cache a server reads; a server started next
/// answers its first select with the model's ranking, the same reply it
/// gives once its log says the model's index is ready (before, the table
/// answered until the tools were encoded, and the reply could change).
#[test]
fn upstream_add_computes_the_vectors_so_the_first_select_is_the_model_s() {
    if !have_model() {
        return;
    }
    use common::gateway::{Setup, fault_server, wait_until};
    let setup = Setup::new(serde_json::json!({}));
    let server = fault_server();
    let added = setup
        .command(&["upstream", "add", "faults", "--", "python3", &server])
        .env("ZEN_EMBEDDING_MODEL", model_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&added.stdout),
        String::from_utf8_lossy(&added.stderr),
    );
    assert!(added.status.success(), "{out}{err}");
    assert!(out.contains("vectors of"), "{out}{err}");
    // 6 tools, 18 built-in modes and the no-fit probes, a record each.
    let record = 16 + 384 * 4;
    let cached: u64 = std::fs::read_dir(setup.path("cache"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("minilm-vectors-")
        })
        .map(|e| e.metadata().unwrap().len() / record)
        .sum();
    assert!(cached >= 6 + 18 + 60, "{cached} vectors cached");

    let mut serve = setup.command(&["serve"]);
    serve
        .env("ZEN_EMBEDDING_MODEL", model_dir())
        .stderr(std::fs::File::create(setup.log()).unwrap());
    let mut client = common::Client::spawn_keeping_stderr(serve);
    client.initialize();
    let select = |client: &mut common::Client| {
        client.tool(
            "zen_select_mode",
            serde_json::json!({"task_description": "say my text back to me unchanged"}),
        )
    };
    let first = select(&mut client);
    let ready = wait_until(std::time::Duration::from_secs(120), || {
        setup
            .log_text()
            .contains("the embedding model's index is ready")
    });
    assert!(ready, "{}", setup.log_text());
    assert_eq!(first, select(&mut client));
}

/// With the model, no request that asks for no change is offered a ready
/// call to a tool that changes state, over the safety sets' catalog as the
/// servers send it and with every `readOnlyHint` taken out (most servers
/// send none: then the tool's name and description decide). The
/// vocabulary set's "sketch how everything under src is nested" was
/// offered `add_sub_issue` once the no-fit bar moved to the probes'
/// median (docs/decisions/0015), until an unsure ranking stopped acting on
/// a verb the action classes do not know.
#[test]
fn benign_requests_get_no_ready_call_to_a_changing_tool_with_the_model() {
    if !have_model() {
        return;
    }
    let safety = root().join("tests/data/safety");
    let annotated = safety.join("catalog.json");
    let mut bare: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&annotated).unwrap()).unwrap();
    for tool in bare["tools"].as_array_mut().unwrap() {
        tool.as_object_mut().unwrap().remove("annotations");
    }
    let dir = tempfile::tempdir().unwrap();
    let unannotated = dir.path().join("catalog.json");
    std::fs::write(&unannotated, bare.to_string()).unwrap();
    for catalog in [&annotated, &unannotated] {
        for set in ["benign", "vocabulary"] {
            for half in ["tune", "heldout"] {
                let output = Command::new(env!("CARGO_BIN_EXE_zenmode"))
                    .arg("--catalog")
                    .arg(catalog)
                    .arg("--embedding-model")
                    .arg(model_dir())
                    .args(["eval", "--json", "--labels"])
                    .arg(safety.join(format!("{set}_{half}.jsonl")))
                    .env("ZEN_CACHE_DIR", dir.path())
                    .output()
                    .unwrap();
                assert!(output.status.success(), "{output:?}");
                let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
                assert!(report["benign_queries"].as_u64().unwrap() > 10);
                assert_eq!(
                    report["benign_changing_calls"],
                    0,
                    "{set}_{half} over {}: {}",
                    catalog.display(),
                    report["benign_changing_list"]
                );
            }
        }
    }
}

/// `zenmode eval --json` with the model over `catalog` and `labels`, its
/// vectors cached in `cache`.
fn model_eval(catalog: &Path, labels: &Path, cache: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zenmode"));
    command
        .arg("--catalog")
        .arg(catalog)
        .arg("--embedding-model")
        .arg(model_dir())
        .args(["eval", "--json", "--labels"])
        .arg(labels)
        .env("ZEN_CACHE_DIR", cache);
    command
}

/// [`model_eval`]'s report with the model tuning `tuning` (`name=value`)
/// and the shipped examples of the `withheld` servers left out.
fn tuned_report(
    catalog: &Path,
    labels: &Path,
    cache: &Path,
    tuning: &str,
    withheld: &[&str],
) -> serde_json::Value {
    let mut command = model_eval(catalog, labels, cache);
    command.env(zenmode::platform::settings::SELECT_MODEL_TUNING, tuning);
    for server in withheld {
        command.args(["--withhold-examples", server]);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The tool classifier (fitted on the shipped example requests) over
/// servers installed together, on the routing sets whose misses were never
/// read: the served reply is right more often with it than without it
/// (`ZEN_TOOL_CLASSIFIER=none`), the right tool is shown no less often,
/// and no benign or off-topic request gets a ready call to a tool that
/// changes state. The served floor sits a point under the measured lift
/// (+0.072 on both sets, docs/decisions/0021-tool-classifier.md). Since
/// the overlay was held less near the model (decision 0031) it shows the
/// right tool often without the classifier (0.949 and 0.964), and the
/// classifier adds 0.036 and 0.010 there.
#[test]
fn the_tool_classifier_lifts_the_served_reply_over_servers_installed_together() {
    if !have_model() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (labels, profile) in [
        ("developer_heldout.jsonl", "developer"),
        ("work_heldout.jsonl", "work"),
    ] {
        let catalog = common::sets::profile_catalog(profile, dir.path());
        let report = |classifier: Option<&str>| {
            let mut command = model_eval(
                &catalog,
                &common::sets::routing_dir().join(labels),
                dir.path(),
            );
            if let Some(classifier) = classifier {
                command.env("ZEN_TOOL_CLASSIFIER", classifier);
            }
            let output = command.output().unwrap();
            assert!(output.status.success(), "{output:?}");
            serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
        };
        let (with, without) = (report(None), report(Some("none")));
        let served = |r: &serde_json::Value| r["served_top1_acceptable"].as_f64().unwrap();
        let recall = |r: &serde_json::Value| r["reply_recall"].as_f64().unwrap();
        eprintln!(
            "{labels}: served {:.3} (without the classifier {:.3}), right tool shown {:.3} ({:.3})",
            served(&with),
            served(&without),
            recall(&with),
            recall(&without)
        );
        assert!(served(&with) >= served(&without) + 0.06, "{labels}");
        assert!(recall(&with) >= recall(&without), "{labels}");
        for list in ["benign_changing_list", "offtopic_changing_list"] {
            assert_eq!(with[list], serde_json::json!([]), "{labels}: {list}");
        }
    }
}

/// A server never seen (its examples withheld, so the classifier has no
/// row for its tools) competes with the rows of the servers beside it
/// through its descriptions' cosines; `unseen_classifier_bias` corrects a
/// calibration that sells it short (decision 0032). On platform_crm, the
/// requests for Kubernetes, Neon, Figma, Sentry and HubSpot with their
/// examples withheld are served right more often with it than without
/// (measured 0.552 against 0.502). Its requests seldom name their server,
/// so the rule that keeps the classifier to a named server does not do
/// the bias's work there, as it now does on product_eng (0.787 against
/// 0.785).
#[test]
fn a_server_never_seen_is_not_sold_short_beside_servers_with_examples() {
    if !have_model() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = common::sets::registry_dir();
    let catalog = common::sets::profile_catalog_of(&registry, "platform_crm", dir.path());
    let never_seen = ["kubernetes", "neon", "figma", "sentry", "hubspot"];
    let requests: String = std::fs::read_to_string(registry.join("requests_platform_crm.jsonl"))
        .unwrap()
        .lines()
        .filter(|line| {
            let label: serde_json::Value = serde_json::from_str(line).unwrap();
            let server = label["expected"].as_str().unwrap_or("").split("__").next();
            server.is_some_and(|s| never_seen.contains(&s))
        })
        .map(|line| format!("{line}\n"))
        .collect();
    let labels = dir.path().join("never_seen.jsonl");
    std::fs::write(&labels, requests).unwrap();
    let served = |bias: &str| {
        let tuning = format!("unseen_classifier_bias={bias}");
        let report = tuned_report(&catalog, &labels, dir.path(), &tuning, &never_seen);
        report["served_top1_acceptable"].as_f64().unwrap()
    };
    let default = zenmode::select::Tuning::DEFAULT.unseen_classifier_bias;
    let (with, without) = (served(&default.to_string()), served("0"));
    eprintln!(
        "never-seen servers of platform_crm: served {with:.3}, {without:.3} without the bias"
    );
    assert!(with >= without + 0.02, "{with} against {without}");
}

/// A request that names a server ("in the Chrome DevTools page", "on
/// Bitbucket") is about that server's tools: the classifier's rows, fitted
/// without knowing which server a request means, no longer pull it to a
/// look-alike of another server (`classifier_unnamed_server`). On
/// browser_devops and product_eng, with every server's examples, the
/// served reply is right more often with the rule than with it off (1):
/// measured +0.037 and +0.015; the floors sit under them.
#[test]
fn a_server_the_request_names_keeps_the_classifier_to_its_own_tools() {
    if !have_model() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = common::sets::registry_dir();
    for (profile, floor) in [("browser_devops", 0.025), ("product_eng", 0.01)] {
        let catalog = common::sets::profile_catalog_of(&registry, profile, dir.path());
        let labels = registry.join(format!("requests_{profile}.jsonl"));
        let report = |unnamed: &str| {
            let tuning = format!("classifier_unnamed_server={unnamed}");
            tuned_report(&catalog, &labels, dir.path(), &tuning, &[])
        };
        let default = zenmode::select::Tuning::DEFAULT.classifier_unnamed_server;
        let (with, without) = (report(&default.to_string()), report("1"));
        let served = |r: &serde_json::Value| r["served_top1_acceptable"].as_f64().unwrap();
        eprintln!(
            "{profile}: served {:.3}, {:.3} with the rule off",
            served(&with),
            served(&without)
        );
        assert!(served(&with) >= served(&without) + floor, "{profile}");
        for list in ["benign_changing_list", "offtopic_changing_list"] {
            assert_eq!(with[list], serde_json::json!([]), "{profile}: {list}");
        }
    }
}
