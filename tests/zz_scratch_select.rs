// SCRATCH: temporary tuning harness, deleted before hand-off.
use std::path::Path;
use zenmode::{
    catalog::{Catalog, CatalogSources},
    eval,
    select::{Index, Ranker, Tuning},
};

fn env_f(name: &str, default: f32) -> f32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn tuning() -> Tuning {
    let mut t = Tuning::DEFAULT;
    t.lexical_weight = env_f("LW", t.lexical_weight);
    t.example_weight = env_f("EW", t.example_weight);
    t.phrasing_weight = env_f("PW", t.phrasing_weight);
    t.intent_text_weight = env_f("ITW", t.intent_text_weight);
    t.description_phrasing_weight = env_f("DPW", t.description_phrasing_weight);
    t.phrasing_smoothing = env_f("PS", t.phrasing_smoothing);
    t.phrasing_temperature = env_f("PT", t.phrasing_temperature);
    t.evidence_scale = env_f("ES", t.evidence_scale);
    t.second_best_share = env_f("SB", t.second_best_share);
    t.temperature = env_f("T", t.temperature);
    t.topic_weight = env_f("TW", t.topic_weight);
    t.analysis.stem = env_f("STEM", 1.0) > 0.0;
    t.analysis.synonyms = env_f("SYN", 1.0) > 0.0;
    t.analysis.phrases = env_f("PHR", 1.0) > 0.0;
    t.no_fit_score = env_f("NF", t.no_fit_score);
    for (i, name) in ["NAME", "TITLE", "SUM", "KW", "DESC", "PAR"]
        .iter()
        .enumerate()
    {
        t.fields[i].weight = env_f(&format!("W{name}"), t.fields[i].weight);
        t.fields[i].b = env_f(&format!("B{name}"), t.fields[i].b);
    }
    t
}

fn line(report: &eval::Report) -> String {
    let o = &report.overall;
    format!(
        "top1={:.3} top3={:.3} mrr={:.3} low={:.3} nofit={:.3} ece={:.3} conf={:.3}",
        o.top1,
        o.top3,
        o.mrr,
        report.low_confidence,
        report.no_clear_fit,
        report.calibration_error,
        report.mean_confidence
    )
}

#[test]
#[ignore]
fn scratch() {
    let t = tuning();
    let catalog = Catalog::builtin().unwrap();
    let index = Index::build_tuned(&catalog, Ranker::Full, t);
    for f in ["/tmp/tune.jsonl", "/tmp/held.jsonl"] {
        let labels = eval::read_labels(Path::new(f)).unwrap();
        let report = eval::evaluate(&index, &catalog, &labels);
        println!("{f}: {}", line(&report));
        if f.contains("tune") && std::env::var("MISSES").is_ok() {
            for miss in &report.misses {
                let signals = index.signals(&miss.query);
                let idx = |n: &str| catalog.modes().iter().position(|m| m.name() == n).unwrap();
                let e = signals[idx(&miss.expected)];
                let g = miss
                    .got
                    .as_deref()
                    .map(|g| signals[idx(g)])
                    .unwrap_or_default();
                println!(
                    "  {} ({:.2},{:.2}) -> {} ({:.2},{:.2}): {}",
                    miss.expected,
                    e.lexical,
                    e.examples,
                    miss.got.as_deref().unwrap_or("-"),
                    g.lexical,
                    g.examples,
                    miss.query
                );
            }
        }
    }
    let sources = CatalogSources {
        no_builtin: true,
        modes_dirs: vec![],
        foreign_catalogs: vec!["../shared/catalogs/github.json".into()],
    };
    let gh = Catalog::load(&sources).unwrap();
    let labels = eval::read_labels(Path::new("tests/data/select_github.jsonl")).unwrap();
    for ranker in [Ranker::Full, Ranker::Bm25] {
        let index = Index::build_tuned(&gh, ranker, t);
        let report = eval::evaluate(&index, &gh, &labels);
        println!("github {}: {}", ranker.as_str(), line(&report));
    }
}

#[test]
#[ignore]
fn scratch_query() {
    let t = tuning();
    let sources = CatalogSources {
        no_builtin: std::env::var("GH").is_ok(),
        modes_dirs: vec![],
        foreign_catalogs: if std::env::var("GH").is_ok() {
            vec!["../shared/catalogs/github.json".into()]
        } else {
            vec![]
        },
    };
    let catalog = Catalog::load(&sources).unwrap();
    let index = Index::build_tuned(&catalog, Ranker::Full, t);
    let q = std::env::var("Q").unwrap();
    let signals = index.signals(&q);
    for r in index.rank(&q).iter().take(6) {
        println!(
            "{:<28} {:.3} conf={:.2} sig=({:.2},{:.2}) {:?}",
            catalog.modes()[r.mode_index].name(),
            r.score,
            r.confidence,
            signals[r.mode_index].lexical,
            signals[r.mode_index].examples,
            r.matched
        );
    }
}

#[test]
#[ignore]
fn scratch_diff() {
    let gh = std::env::var("GH").is_ok();
    let sources = CatalogSources {
        no_builtin: gh,
        modes_dirs: vec![],
        foreign_catalogs: if gh {
            vec!["../shared/catalogs/github.json".into()]
        } else {
            vec![]
        },
    };
    let catalog = Catalog::load(&sources).unwrap();
    let a = tuning();
    let mut b = a;
    b.analysis.stem = false;
    let ia = Index::build_tuned(&catalog, Ranker::Full, a);
    let ib = Index::build_tuned(&catalog, Ranker::Full, b);
    let f = if gh {
        "tests/data/select_github.jsonl"
    } else {
        "/tmp/tune.jsonl"
    };
    let labels = eval::read_labels(Path::new(f)).unwrap();
    for l in &labels {
        let ta = ia
            .rank(&l.query)
            .first()
            .map(|r| catalog.modes()[r.mode_index].name().to_owned())
            .unwrap_or_default();
        let tb = ib
            .rank(&l.query)
            .first()
            .map(|r| catalog.modes()[r.mode_index].name().to_owned())
            .unwrap_or_default();
        if (ta == l.expected) != (tb == l.expected) {
            println!("{} stem={} nostem={} : {}", l.expected, ta, tb, l.query);
        }
    }
}

mod nb {
    use std::collections::HashMap;
    use zenmode::catalog::Catalog;
    use zenmode::select::analyze::{Analyzer, Options, query_terms};
    pub struct Nb {
        pub logp: Vec<HashMap<String, f64>>,
        pub unseen: Vec<f64>,
    }
    pub fn build(catalog: &Catalog, alpha: f64, kw_weight: f64) -> (Analyzer, Nb) {
        let a = Analyzer::new(Options::FULL);
        let mut counts: Vec<HashMap<String, f64>> = Vec::new();
        let mut vocab: std::collections::HashSet<String> = Default::default();
        for m in catalog.modes() {
            let mut c: HashMap<String, f64> = HashMap::new();
            let mf = &m.manifest;
            let mut add = |text: &str, w: f64| {
                for (t, _) in query_terms(a.analyze(text)) {
                    *c.entry(t.key.clone()).or_default() += w;
                    vocab.insert(t.key);
                }
            };
            for e in &mf.examples {
                add(e, 1.0);
            }
            for k in &mf.keywords {
                add(k, kw_weight);
            }
            add(&mf.title, kw_weight);
            add(&mf.summary, kw_weight);
            counts.push(c);
        }
        let v = vocab.len() as f64;
        let mut logp = Vec::new();
        let mut unseen = Vec::new();
        for c in counts {
            let total: f64 = c.values().sum();
            let denom = total + alpha * v;
            unseen.push((alpha / denom).ln());
            logp.push(
                c.into_iter()
                    .map(|(k, n)| (k, ((n + alpha) / denom).ln()))
                    .collect(),
            );
        }
        (a, Nb { logp, unseen })
    }
    /// posterior probabilities per mode
    pub fn posterior(a: &Analyzer, nb: &Nb, q: &str, vocab_only: bool) -> Vec<f64> {
        let terms = query_terms(a.analyze(q));
        let mut s = vec![0.0f64; nb.logp.len()];
        for (t, w) in &terms {
            let known = nb.logp.iter().any(|m| m.contains_key(&t.key));
            if vocab_only && !known {
                continue;
            }
            for (i, m) in nb.logp.iter().enumerate() {
                s[i] += *w as f64 * m.get(&t.key).copied().unwrap_or(nb.unseen[i]);
            }
        }
        let mx = s.iter().cloned().fold(f64::MIN, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
        let z: f64 = e.iter().sum();
        e.iter().map(|x| x / z).collect()
    }
}

#[test]
#[ignore]
fn scratch_nb() {
    let catalog = Catalog::builtin().unwrap();
    let alpha = env_f("ALPHA", 0.1) as f64;
    let kww = env_f("KWW", 1.0) as f64;
    let mix = env_f("MIX", 0.0) as f64;
    let (a, nbm) = nb::build(&catalog, alpha, kww);
    let index = Index::build_tuned(&catalog, Ranker::Full, tuning());
    for f in ["/tmp/tune.jsonl", "/tmp/held.jsonl"] {
        let labels = eval::read_labels(Path::new(f)).unwrap();
        let (mut nb1, mut comb1, mut comb3) = (0, 0, 0);
        for l in &labels {
            let p = nb::posterior(&a, &nbm, &l.query, true);
            let best = (0..p.len()).max_by(|&i, &j| p[i].total_cmp(&p[j])).unwrap();
            if catalog.modes()[best].name() == l.expected {
                nb1 += 1;
            }
            let t = tuning();
            let sig = index.signals(&l.query);
            let mut sc: Vec<(usize, f64)> = sig
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (
                        i,
                        (t.lexical_weight * s.lexical + t.example_weight * s.examples) as f64
                            + mix * p[i],
                    )
                })
                .collect();
            sc.sort_by(|x, y| y.1.total_cmp(&x.1));
            if catalog.modes()[sc[0].0].name() == l.expected {
                comb1 += 1;
            }
            if sc
                .iter()
                .take(3)
                .any(|(i, _)| catalog.modes()[*i].name() == l.expected)
            {
                comb3 += 1;
            }
        }
        let n = labels.len() as f64;
        println!(
            "{f}: nb_top1={:.3} combined_top1={:.3} top3={:.3}",
            nb1 as f64 / n,
            comb1 as f64 / n,
            comb3 as f64 / n
        );
    }
}
