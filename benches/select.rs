//! Mode selection: accuracy against the plain BM25 baseline, then latency.
//!
//! `cargo bench --bench select` first prints top-1 / top-3 / MRR of the full
//! ranker and of the plain BM25 baseline on the dev set and the blind test set
//! (18 built-in modes) and on the GitHub set (117 imported tools), then
//! measures:
//!
//! - `select/rank_builtin`: one ranking over the 18 built-in modes (target p50 <= 200 µs);
//! - `select/reply_builtin`: the whole `zen_select_mode` reply, ranking included;
//! - `select/build_builtin`: building the built-in index, which the first
//!   select of a process pays;
//! - `select/rank_union`: one ranking over the 1,155-tool union catalog (target <= 1 ms);
//! - `select/build_union`: building the index for the union catalog, meaning
//!   signal and no-fit calibration included (target <= 100 ms);
//! - `select/parse_table`: parsing the static embedding table, paid once by
//!   a process whose catalog needs the meaning signal;
//! - with the full model (see `bench_full_model`; it is found where
//!   `scripts/install.sh` puts it, or in `ZEN_EMBEDDING_MODEL`):
//!   `select/rank_union_model`, `select/reply_union_model` and
//!   `select/build_union_model`, plus each request timed alone (p50, p90,
//!   p99, and the share the model ranked), and the whole reply's p50 and
//!   p99 over the union and over the built-in modes with the model loaded;
//!   short requests (the real-server sets) and long ones
//!   (`tests/data/select_long.jsonl`: several sentences, 86 to 100 words)
//!   apart, since the encoder's cost grows with the request's tokens
//!   (`select/rank_union_model_long`, `select/reply_union_model_long`).
//!   Without a model (none installed, or `ZEN_EMBEDDING_MODEL=none`) these
//!   are left out, with a line saying so.
//!
//! Criterion reports the median per iteration; each iteration ranks the next
//! query of the labeled set, so the figure is a median over real queries.

use std::{
    hint::black_box,
    path::{Path, PathBuf},
    time::Duration,
};

use criterion::{Criterion, criterion_group, criterion_main};
use zenmode::{
    catalog::{Catalog, CatalogSources},
    engine::Engine,
    select::eval,
    select::{Index, Ranker},
    surface::zen::select_mode,
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn foreign(file: &str) -> Catalog {
    let sources = CatalogSources {
        no_builtin: true,
        foreign_catalogs: vec![root().join("../shared/catalogs").join(file)],
        ..Default::default()
    };
    Catalog::load(&sources).expect("catalog loads")
}

fn labels(file: &str) -> Vec<eval::Label> {
    let path: PathBuf = root().join("tests/data").join(file);
    eval::read_labels(&path).expect("labels parse")
}

/// Prints the accuracy table once, so a bench run documents both sides of
/// the trade: what the ranking costs and what it buys over plain BM25.
fn print_accuracy() {
    let sets = [
        (
            "dev (18 modes)",
            Catalog::builtin().unwrap(),
            labels("select_dev.jsonl"),
        ),
        (
            "blind test (18 modes)",
            Catalog::builtin().unwrap(),
            labels("select_test.jsonl"),
        ),
        (
            "github (117 tools)",
            foreign("github.json"),
            labels("select_github.jsonl"),
        ),
    ];
    println!("\nselection accuracy           ranker  top-1  top-3    MRR");
    for (name, catalog, labels) in &sets {
        for ranker in [Ranker::Full, Ranker::Bm25] {
            let index = Index::build_with(catalog, ranker);
            let o = eval::evaluate(&index, catalog, labels).overall;
            println!(
                "{name:<28} {:<6} {:>6.3} {:>6.3} {:>6.3}",
                ranker.as_str(),
                o.top1,
                o.top3,
                o.mrr
            );
        }
    }
    println!();
}

fn bench_select(c: &mut Criterion) {
    print_accuracy();

    let dev: Vec<String> = labels("select_dev.jsonl")
        .into_iter()
        .map(|l| l.query)
        .collect();
    let github: Vec<String> = labels("select_github.jsonl")
        .into_iter()
        .map(|l| l.query)
        .collect();

    let builtin = Catalog::builtin().unwrap();
    let index = Index::build(&builtin);
    let union = foreign("union_all.json");
    let union_index = Index::build(&union);
    let engine = Engine::new(Catalog::builtin().unwrap()).unwrap();
    engine.index(); // build outside the measurement

    let mut group = c.benchmark_group("select");
    group.measurement_time(Duration::from_secs(5));

    let mut next = 0usize;
    group.bench_function("rank_builtin", |b| {
        b.iter(|| {
            next = (next + 1) % dev.len();
            black_box(index.ranking(black_box(&dev[next])))
        })
    });

    let mut next = 0usize;
    group.bench_function("reply_builtin", |b| {
        b.iter(|| {
            next = (next + 1) % dev.len();
            let args = select_mode::SelectArgs {
                task_description: Some(dev[next].clone()),
                ..Default::default()
            };
            black_box(select_mode::run(&engine, &args))
        })
    });

    let mut next = 0usize;
    group.bench_function("rank_union", |b| {
        b.iter(|| {
            next = (next + 1) % github.len();
            black_box(union_index.ranking(black_box(&github[next])))
        })
    });

    // The first select of a process pays this: every manifest's examples
    // are analyzed and the phrasing model is trained.
    group.bench_function("build_builtin", |b| {
        b.iter(|| black_box(Index::build(black_box(&builtin))))
    });

    // Once per process that ranks tools without examples: the vocabulary
    // map is built, the vectors stay in the binary's read-only pages.
    group.bench_function("parse_table", |b| {
        b.iter(|| black_box(zenmode::select::signals::token_table::parse_compiled()))
    });

    group.sample_size(20);
    group.bench_function("build_union", |b| {
        b.iter(|| black_box(Index::build(black_box(&union))))
    });
    group.finish();
    bench_full_model(c, &union, &github);
}

/// With the model in `ZEN_EMBEDDING_MODEL`, or else where
/// `scripts/install.sh` puts it: `select/rank_union_model`, one request
/// over the union catalog ranked with the model loaded (the table first,
/// the model's forward pass when the table is unsure),
/// `select/reply_union_model`, the whole `zen_select_mode` reply on an
/// engine serving the union, and `select/build_union_model`, both indexes
/// built again with every tool vector already computed. The first build
/// (the model over every tool, unless an earlier run cached the vectors
/// under `target/tmp`) is timed once and printed.
#[cfg(feature = "transformer")]
fn bench_full_model(c: &mut Criterion, union: &Catalog, github: &[String]) {
    let Some(dir) = std::env::var_os("ZEN_EMBEDDING_MODEL")
        .filter(|dir| dir != "none")
        .map(PathBuf::from)
        .or_else(zenmode::select::embedding::default_model_dir)
        .filter(|dir| dir.join("model.safetensors").is_file())
    else {
        println!(
            "select: no model (ZEN_EMBEDDING_MODEL unset and none installed by scripts/install.sh); the full-model benches are left out"
        );
        return;
    };
    // Kept between runs (under target/), so that only a bench's first run
    // puts the union's tools through the model.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("select-bench-vectors");
    zenmode::select::embedding::use_model(&dir, Some(&cache)).expect("the model loads");
    let start = std::time::Instant::now();
    let index = Index::build(union);
    println!(
        "select: build of the union index with the full model, tool vectors from {}: {:.1} s",
        cache.display(),
        start.elapsed().as_secs_f64()
    );
    let real: Vec<String> = [
        "foreign/realservers/tune.jsonl",
        "foreign/realservers/heldout.jsonl",
    ]
    .into_iter()
    .flat_map(labels)
    .map(|l| l.query)
    .collect();
    let long: Vec<String> = labels("select_long.jsonl")
        .into_iter()
        .map(|l| l.query)
        .collect();
    print_request_percentiles(&index, "GitHub requests", github, 3);
    print_request_percentiles(&index, "real-server requests", &real, 3);
    print_request_percentiles(&index, "long requests", &long, 6);
    let engine = Engine::new(union.clone()).expect("the union serves");
    engine.index();
    print_reply_percentiles(&engine, "short", &real, 3);
    print_reply_percentiles(&engine, "long", &long, 6);
    let builtin =
        Engine::new(Catalog::builtin().expect("built-in modes")).expect("built-ins serve");
    builtin.index();
    let dev: Vec<String> = labels("select_dev.jsonl")
        .into_iter()
        .map(|l| l.query)
        .collect();
    print_reply_percentiles(&builtin, "short", &dev, 3);
    let mut group = c.benchmark_group("select");
    group.measurement_time(Duration::from_secs(10));
    let mut next = 0usize;
    group.bench_function("rank_union_model", |b| {
        b.iter(|| {
            next = (next + 1) % github.len();
            black_box(index.ranking(black_box(&github[next])))
        })
    });
    let mut next = 0usize;
    group.bench_function("rank_union_model_long", |b| {
        b.iter(|| {
            next = (next + 1) % long.len();
            black_box(index.ranking(black_box(&long[next])))
        })
    });
    let mut next = 0usize;
    group.bench_function("reply_union_model_long", |b| {
        b.iter(|| {
            next = (next + 1) % long.len();
            let args = select_mode::SelectArgs {
                task_description: Some(long[next].clone()),
                ..Default::default()
            };
            black_box(select_mode::run(&engine, &args))
        })
    });
    let mut next = 0usize;
    group.bench_function("reply_union_model", |b| {
        b.iter(|| {
            next = (next + 1) % real.len();
            let args = select_mode::SelectArgs {
                task_description: Some(real[next].clone()),
                ..Default::default()
            };
            black_box(select_mode::run(&engine, &args))
        })
    });
    group.sample_size(10);
    group.bench_function("build_union_model", |b| {
        b.iter(|| black_box(Index::build(black_box(union))))
    });
    group.finish();
}

/// Sorted timings in milliseconds: the value at quantile `q`.
#[cfg(feature = "transformer")]
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// With the model loaded, a request costs microseconds when the table's
/// ranking is sure and milliseconds when the model is asked, so criterion's
/// median of per-sample means is a mean over requests. This times each
/// request alone (`rounds` over the set, the first one discarded as
/// warm-up) and prints the median, the 90th and 99th percentiles, the
/// mean and the share of requests the model ranked.
#[cfg(feature = "transformer")]
fn print_request_percentiles(index: &Index, what: &str, queries: &[String], rounds: usize) {
    let mut times = Vec::new();
    let mut by_model = 0usize;
    for round in 0..rounds {
        for query in queries {
            let start = std::time::Instant::now();
            let ranking = black_box(index.ranking(black_box(query)));
            if round > 0 {
                times.push(start.elapsed().as_secs_f64() * 1e3);
                by_model += usize::from(ranking.by_model);
            }
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "select: one ranking over the union with the model loaded, {what}, {} timings: p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, mean {:.3} ms; the model ranked {:.0}%",
        times.len(),
        quantile(&times, 0.5),
        quantile(&times, 0.9),
        quantile(&times, 0.99),
        times.iter().sum::<f64>() / times.len() as f64,
        100.0 * by_model as f64 / times.len() as f64
    );
}

/// The whole `zen_select_mode` reply, as a running server answers it
/// (index built), each request timed alone as above: the figure the
/// latency budget is about (union p50 <= 5 ms, p99 <= 20 ms, long
/// requests included; the built-in modes <= 1 ms).
#[cfg(feature = "transformer")]
fn print_reply_percentiles(engine: &Engine, what: &str, queries: &[String], rounds: usize) {
    let mut times = Vec::new();
    for round in 0..rounds {
        for query in queries {
            let args = select_mode::SelectArgs {
                task_description: Some(query.clone()),
                ..Default::default()
            };
            let start = std::time::Instant::now();
            black_box(select_mode::run(engine, &args));
            if round > 0 {
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "select: whole zen_select_mode reply with the model loaded, {} modes, {what} requests, {} timings: p50 {:.3} ms, p99 {:.3} ms",
        engine.catalog().len(),
        times.len(),
        quantile(&times, 0.5),
        quantile(&times, 0.99),
    );
}

#[cfg(not(feature = "transformer"))]
fn bench_full_model(_: &mut Criterion, _: &Catalog, _: &[String]) {}

criterion_group!(benches, bench_select);
criterion_main!(benches);
