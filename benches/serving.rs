//! Serving-path benchmarks for the core issue's targets:
//! - process spawn to first reply, against a bare `cat` round trip (≤ 3×);
//! - `tools/list` in-process, built and serialized (≤ 50 µs);
//! - validation of a typical request against a compiled schema.
//!
//! Selection latency lives in `benches/select.rs`.

use std::{
    hint::black_box,
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    sync::Arc,
    time::Duration,
};

use criterion::{Criterion, criterion_group, criterion_main};
use zenmode::{
    catalog::Catalog,
    describe,
    engine::Engine,
    server::ZenServer,
    surface::{self, StrategyKind, SurfaceOptions},
};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

/// Spawns `program args`, writes one line, waits for the first line back.
fn round_trip(program: &str, args: &[&str]) {
    let mut child = Command::new(program)
        .args(args)
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{INITIALIZE}").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(!line.is_empty(), "{program} answered");
    drop(stdin);
    child.kill().ok();
    child.wait().unwrap();
}

fn spawn_to_first_reply(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawn_to_first_reply");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(6));
    group.bench_function("cat", |b| b.iter(|| round_trip("cat", &[])));
    group.bench_function("zenmode_serve", |b| {
        b.iter(|| round_trip(env!("CARGO_BIN_EXE_zenmode"), &["serve"]))
    });
    group.finish();
}

fn server(kind: StrategyKind) -> ZenServer {
    let engine = Engine::new(Catalog::builtin().unwrap()).unwrap();
    let strategy = surface::build(kind, &engine, &SurfaceOptions::default()).unwrap();
    ZenServer::new(Arc::new(engine), strategy).unwrap()
}

fn tools_list(c: &mut Criterion) {
    let mut group = c.benchmark_group("tools_list");
    for kind in StrategyKind::ALL {
        let name = kind
            .over(&Catalog::builtin().unwrap(), &SurfaceOptions::default())
            .unwrap()
            .name();
        let server = server(kind);
        group.bench_function(name, |b| {
            b.iter(|| serde_json::to_vec(&black_box(&server).tools_list_result()).unwrap())
        });
    }
    group.finish();
}

fn validation(c: &mut Criterion) {
    let catalog = Catalog::builtin().unwrap();
    let mode = catalog.get("debug").unwrap();
    let request = describe::example_request(mode.manifest());
    let _ = mode.validator(); // compile outside the measurement
    c.bench_function("validate_debug_request", |b| {
        b.iter(|| describe::violations(black_box(mode), black_box(&request)).unwrap())
    });
    // Start-up parses every embedded manifest; compiling is left to first use.
    c.bench_function("load_builtin_catalog", |b| {
        b.iter(|| Catalog::builtin().unwrap())
    });
    c.bench_function("load_builtin_catalog_and_compile_debug", |b| {
        b.iter(|| {
            let fresh = Catalog::builtin().unwrap();
            fresh.get("debug").unwrap().validator().is_ok()
        })
    });
}

criterion_group!(benches, tools_list, validation, spawn_to_first_reply);
criterion_main!(benches);
