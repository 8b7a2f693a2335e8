//! `zenmode eval`: the command-line side of scoring the selection ranking
//! (the scorer itself is `select::eval`).

use std::{io::Write, path::PathBuf, process::ExitCode};

use anyhow::bail;
use clap::Args;

use crate::{
    cli::args::{CatalogArgs, ModeArgs},
    cli::runtime::exit_for,
    engine::Engine,
    surface::zen::select_mode,
};

// `zenmode eval`; `--catalog FILE` adds foreign tools to rank.
#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub modes: ModeArgs,
    /// Labels file: one {"query", "expected", "acceptable"?} JSON object per
    /// line ("expected": null for a query no mode fits); repeat to pool files
    #[arg(long, value_name = "FILE", required = true)]
    pub labels: Vec<PathBuf>,
    /// Ranking to score: the fused ranker, one signal alone, or plain BM25
    #[arg(long, value_enum, default_value = "full")]
    pub ranker: crate::select::Ranker,
    /// Remove this share of the expected modes from the catalog (picked by a
    /// stable hash of their names); their queries become no-fit queries
    #[arg(long, value_name = "SHARE", value_parser = share_in_unit_range)]
    pub hold_out: Option<f64>,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// List every miss in the table
    #[arg(long)]
    pub misses: bool,
    /// Leave out the shipped example requests of this server (by its
    /// examples file's `server` name; `all` for every server), to measure
    /// how a server zenmode has no examples for is ranked; repeatable
    #[arg(long, value_name = "SERVER")]
    pub withhold_examples: Vec<String>,
    /// Exit non-zero if top-1 is below this share (for CI on your own catalog)
    #[arg(long, value_name = "SHARE")]
    pub min_top1: Option<f64>,
}

pub fn share_in_unit_range(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a share in 0..1 (e.g. 0.25)")),
    }
}

/// Loads the catalog (honouring --no-builtin-modes), ranks every label and
/// prints the scores.
pub fn eval(catalog: &CatalogArgs, args: &EvalArgs) -> anyhow::Result<ExitCode> {
    let mut labels = Vec::new();
    for path in &args.labels {
        let file = crate::select::eval::read_labels(path)?;
        labels.push((path.display().to_string(), file));
    }
    crate::catalog::tool_examples::withhold(&args.withhold_examples);
    let catalog = catalog.load()?;
    if catalog.is_empty() {
        bail!("no modes to rank: --no-builtin-modes needs --catalog FILE or --modes-dir DIR");
    }
    for (path, file) in &labels {
        crate::select::eval::check_labels(file, &catalog, path).map_err(anyhow::Error::msg)?;
    }
    let labels: Vec<crate::select::eval::Label> =
        labels.into_iter().flat_map(|(_, file)| file).collect();
    let (catalog, labels) = match args.hold_out {
        Some(share) => crate::select::eval::hold_out(&catalog, &labels, share),
        None => (catalog, labels),
    };
    let report = if args.ranker == crate::select::Ranker::Full {
        // The fused ranker is what serves: score the select tool's decision
        // itself, so its mode, the tools it shows, its ready calls (traps
        // taken, changing calls on benign requests) and its latency are the
        // server's.
        let engine = Engine::with_assumed_provider(catalog).map_err(anyhow::Error::msg)?;
        let snapshot = engine.index();
        let served = |task: &str| {
            let (snapshot, decision) = select_mode::decide(&engine, task);
            crate::select::eval::Served::of(&decision, snapshot.catalog())
        };
        crate::select::eval::evaluate_with(
            snapshot.index(),
            snapshot.catalog(),
            &labels,
            Some(&served),
        )
    } else {
        let index = crate::select::Index::build_with(&catalog, args.ranker);
        crate::select::eval::evaluate(&index, &catalog, &labels)
    };
    if args.json {
        println!("{}", crate::select::eval::to_json(&report));
    } else {
        print!("{}", crate::select::eval::to_table(&report, args.misses));
    }
    let below_floor = args
        .min_top1
        .is_some_and(|floor| report.overall.top1 < floor);
    if below_floor {
        let _ = writeln!(
            std::io::stderr(),
            "zenmode: top-1 {:.3} is below --min-top1 {}",
            report.overall.top1,
            args.min_top1.unwrap_or_default()
        );
    }
    Ok(exit_for(below_floor))
}
