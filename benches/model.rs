//! The full model's forward pass over real requests, as select runs it.
//!
//! `cargo bench --bench model` (the model is found where
//! `scripts/install.sh` puts it, or in `ZEN_EMBEDDING_MODEL`) prints, per
//! request of the real-server sets (`tests/data/foreign/realservers`), the
//! wall time of encoding it (p50, p90, p99) and the CPU time per request,
//! with the encoder's products on one thread and on two, taking turns in
//! rounds so that other work on the machine weighs on both alike; then the
//! time to encode the 1,155-tool union's texts once (a catalog's first
//! index; `ZEN_MODEL_BENCH_TOOLS=0` skips it); and, on Linux, the peak
//! and resident memory of `zenmode serve` with the model over the union
//! after 30 selects (`ZEN_MODEL_BENCH_MEMORY=0` skips it; the target is
//! under 250 MB). `ZEN_MODEL_BENCH_ROUNDS` sets the rounds (default 5).

use std::{
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use zenmode::{
    catalog::{Catalog, CatalogSources},
    select::signals::{embedding, token_table, transformer::Transformer},
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// User plus system CPU time of this process, in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn requests() -> Vec<String> {
    let mut requests = Vec::new();
    let dir = root().join("tests/data/foreign/realservers");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the real-server sets")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        for label in zenmode::select::eval::read_labels(&file).expect("labels parse") {
            requests.push(label.query);
        }
    }
    requests
}

fn main() {
    let Some(dir) = std::env::var_os("ZEN_EMBEDDING_MODEL")
        .map(std::path::PathBuf::from)
        .filter(|dir| dir.as_os_str() != "none")
        .or_else(embedding::default_model_dir)
    else {
        println!("no model installed and ZEN_EMBEDDING_MODEL not set: nothing to measure");
        return;
    };
    let tokenizer = token_table::table().expect("the token table").tokenizer();
    let opened = Instant::now();
    let model = Transformer::open(&dir, tokenizer).expect("the model opens");
    println!(
        "model opened in {:.0} ms",
        opened.elapsed().as_secs_f64() * 1e3
    );
    let pools = [1, 2].map(|threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
    });
    let requests = requests();
    let rounds: usize = std::env::var("ZEN_MODEL_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    println!(
        "{} requests x {rounds} rounds per thread count, load average before: {}",
        requests.len(),
        load_average()
    );
    for pool in &pools {
        pool.install(|| {
            for request in requests.iter().take(20) {
                model.embed(request, false);
            }
        });
    }
    let mut times = [Vec::new(), Vec::new()];
    let mut cpu = [0.0f64; 2];
    for _ in 0..rounds {
        for (slot, pool) in pools.iter().enumerate() {
            pool.install(|| {
                let started = cpu_seconds();
                for request in &requests {
                    let clock = Instant::now();
                    model.embed(request, false);
                    times[slot].push(clock.elapsed().as_secs_f64() * 1e3);
                }
                cpu[slot] += cpu_seconds() - started;
            });
        }
    }
    for (slot, threads) in [1, 2].iter().enumerate() {
        let sorted = &mut times[slot];
        sorted.sort_by(f64::total_cmp);
        println!(
            "{threads} thread(s): per request p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, CPU {:.2} ms",
            percentile(sorted, 0.5),
            percentile(sorted, 0.9),
            percentile(sorted, 0.99),
            cpu[slot] * 1e3 / sorted.len() as f64
        );
    }
    println!(
        "one thread / two: p50 {:.2}x; load average after: {}",
        percentile(&times[0], 0.5) / percentile(&times[1], 0.5),
        load_average()
    );
    if std::env::var("ZEN_MODEL_BENCH_TOOLS").as_deref() != Ok("0") {
        let sources = CatalogSources {
            no_builtin: true,
            foreign_catalogs: vec![root().join("../shared/catalogs/union_all.json")],
            ..Default::default()
        };
        let union = Catalog::load(&sources).expect("the union catalog");
        let texts = zenmode::select::model_texts(&union);
        let started = (Instant::now(), cpu_seconds());
        for text in &texts {
            model.embed(text, false);
        }
        println!(
            "union: {} tool texts encoded in {:.1} s ({:.1} s of CPU)",
            texts.len(),
            started.0.elapsed().as_secs_f64(),
            cpu_seconds() - started.1
        );
    }
    if std::env::var("ZEN_MODEL_BENCH_MEMORY").as_deref() != Ok("0") {
        serve_memory(&dir);
    }
}

/// Starts `zenmode serve` over the union with the model, asks it 30
/// selects (the first waits for the model's index) and prints its peak
/// and resident memory as Linux counts them (`VmHWM`, `VmRSS`).
fn serve_memory(model: &Path) {
    let union = root().join("../shared/catalogs/union_all.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_zenmode"))
        .arg("--catalog")
        .arg(&union)
        .arg("--embedding-model")
        .arg(model)
        .arg("serve")
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("zenmode serve starts");
    let mut stdin = child.stdin.take().expect("its stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("its stdout"));
    let mut answer = |id: usize| {
        let mut line = String::new();
        loop {
            line.clear();
            if stdout.read_line(&mut line).expect("a reply") == 0 {
                panic!("zenmode serve closed its output");
            }
            if line.contains(&format!("\"id\":{id}")) {
                return;
            }
        }
    };
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"bench","version":"1"}}}}}}"#).unwrap();
    answer(0);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    for (id, request) in requests().iter().take(30).enumerate() {
        let call = serde_json::json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call",
            "params": {"name": "zen_select_mode", "arguments": {"task_description": request}}});
        writeln!(stdin, "{call}").unwrap();
        answer(id + 1);
    }
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let kib = |field: &str| {
        status
            .lines()
            .find(|line| line.starts_with(field))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|n| n.parse::<f64>().ok())
    };
    match (kib("VmHWM:"), kib("VmRSS:")) {
        (Some(peak), Some(resident)) => println!(
            "serve over the union with the model, 30 selects: peak {:.0} MB, resident {:.0} MB",
            peak * 1024.0 / 1e6,
            resident * 1024.0 / 1e6
        ),
        _ => println!("serve's memory: not measured (no /proc here)"),
    }
    drop(stdin);
    let _ = child.wait();
}
