//! The per-catalog "no clear fit" threshold.
//!
//! Once the meaning signal runs, scores have no fixed scale: a catalog of
//! long, wordy descriptions resembles every request a little, a catalog of
//! terse names none, and the way the signals are fused changes from one
//! release to the next. So the threshold is measured on each catalog when
//! its index is built, with the same final score the ranking produces:
//! requests from everyday domains that no tool catalog is written for
//! (`data/selection/no_fit_probes.txt`) are ranked against it, and a real
//! request has to beat the best score that a share of them reach. A
//! catalog that happens to serve a few probes (it has a weather tool)
//! barely moves that quantile.
//!
//! Kept apart from the scoring (`scoring.rs`) so that the rule can change
//! without touching the fusion, and the fusion without touching the rule.
//! docs/selection.md ("No clear fit, calibrated from the catalog itself")
//! has what was measured, including the rules tried and not adopted.

use super::index::Index;

/// Requests from unrelated domains that calibrate the no-fit score.
const NO_FIT_PROBES: &str = include_str!("../../data/selection/no_fit_probes.txt");

/// The probes, one a line (comments and blank lines left out).
fn probes() -> impl Iterator<Item = &'static str> {
    NO_FIT_PROBES
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
}

/// The no-fit candidate's score for `index`: the best score that
/// [`Tuning::no_fit_quantile`](super::tuning::Tuning::no_fit_quantile) of
/// the probes reach, times
/// [`Tuning::no_fit_margin`](super::tuning::Tuning::no_fit_margin); `None`
/// when there is no probe.
pub(super) fn calibrated_score(index: &Index) -> Option<f32> {
    let mut best: Vec<f32> = probes()
        .map(|probe| {
            index
                .scores(&index.query_of(probe, true))
                .into_iter()
                .filter(|s| s.is_finite())
                .fold(0.0f32, f32::max)
        })
        .collect();
    best.sort_by(f32::total_cmp);
    quantile(&best, index.tuning.no_fit_quantile).map(|q| q * index.tuning.no_fit_margin)
}

/// The value at quantile `q` (clamped to 0..1) of an ascending sample,
/// the nearest rank; `None` for an empty one.
fn quantile(sorted: &[f32], q: f32) -> Option<f32> {
    let last = sorted.len().checked_sub(1)?;
    let position = (last as f32 * q.clamp(0.0, 1.0)).round() as usize;
    sorted.get(position.min(last)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_takes_the_nearest_rank() {
        let sample = [0.1, 0.2, 0.3, 0.4, 0.5];
        assert_eq!(quantile(&sample, 0.0), Some(0.1));
        assert_eq!(quantile(&sample, 0.67), Some(0.4));
        assert_eq!(quantile(&sample, 1.0), Some(0.5));
        assert_eq!(quantile(&sample, 7.0), Some(0.5));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn probes_are_many_and_free_of_comments() {
        let probes: Vec<&str> = probes().collect();
        assert!(probes.len() >= 60, "{}", probes.len());
        assert!(probes.iter().all(|p| !p.starts_with('#') && !p.is_empty()));
    }
}
