//! Whether one system is better than another on the same targets: a paired bootstrap of the
//! micro-F1 difference, resampling whole tables.
//!
//! `colswarm eval --predictions` and `colswarm baseline --predictions` write one
//! [`TargetPrediction`] per scored target (JSON Lines); [`paired_bootstrap`] matches two such
//! lists target by target and draws tables with replacement. Tables, not columns, are the
//! resampled unit: the columns of one table share a topic and are read together, so their
//! errors are not independent, and resampling columns would understate the spread.
//!
//! ```
//! use colswarm_eval::{BootstrapConfig, TargetPrediction, paired_bootstrap};
//!
//! let target = |table: &str, gold: &str, predicted: &str| TargetPrediction {
//!     table: table.into(),
//!     subject: None,
//!     column: 0,
//!     gold: vec![gold.into()],
//!     predicted: vec![predicted.into()],
//!     probabilities: Default::default(),
//! };
//! let a = vec![target("t1", "city", "city"), target("t2", "year", "year")];
//! let b = vec![target("t1", "city", "city"), target("t2", "year", "city")];
//! let comparison = paired_bootstrap(&a, &b, &BootstrapConfig::default()).unwrap();
//! assert_eq!((comparison.micro_f1_a, comparison.micro_f1_b), (1.0, 0.5));
//! assert!(comparison.ci_high >= 0.5 && comparison.ci_low >= 0.0);
//! ```

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use colswarm_rwkv::checkpoint::write_atomically;

use crate::error::EvalError;
use crate::metrics::{F1Report, Scored, f1_report};
use colswarm_model::Namespace;

/// One scored target with where it comes from: a column (CTA) or a (subject, column) pair (CPA).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetPrediction {
    /// The table's id.
    pub table: String,
    /// The subject column of a CPA target; absent for CTA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<usize>,
    /// The column (CTA) or the pair's object column (CPA).
    pub column: usize,
    /// The true labels, as the dataset gives them.
    pub gold: Vec<String>,
    /// The predicted labels.
    pub predicted: Vec<String>,
    /// Every label's probability (the model's own, before the hierarchy raises super-types;
    /// the baseline's sigmoid or softmax), for calibration and ensembles; empty when the
    /// system has none (the majority baseline, a pair the model did not score).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probabilities: BTreeMap<String, f32>,
}

impl TargetPrediction {
    /// Gold and predicted labels alone, as [`crate::metrics::f1_report`] reads them.
    pub fn scored(&self) -> Scored {
        Scored {
            gold: self.gold.clone(),
            predicted: self.predicted.clone(),
        }
    }

    fn key(&self) -> (&str, Option<usize>, usize) {
        (&self.table, self.subject, self.column)
    }

    fn describe(&self) -> String {
        match self.subject {
            None => format!("table {} column {}", self.table, self.column),
            Some(s) => format!("table {} pair ({s}, {})", self.table, self.column),
        }
    }
}

/// Scores a list of predictions against its gold labels; gold labels outside `namespace` count
/// as unknown (misses).
pub fn score_predictions(predictions: &[TargetPrediction], namespace: &Namespace) -> F1Report {
    let scored: Vec<Scored> = predictions.iter().map(TargetPrediction::scored).collect();
    f1_report(&scored, &|l| namespace.output(l).is_some())
}

/// Writes `targets` to `path` as JSON Lines, atomically (a temporary file, then a rename).
/// A probability that is not finite (a diverged model) is an error naming the target: JSON has
/// no NaN, and the line could not be read back.
pub fn write_predictions(path: &Path, targets: &[TargetPrediction]) -> Result<(), EvalError> {
    let mut text = String::new();
    for target in targets {
        if let Some((label, p)) = target.probabilities.iter().find(|(_, p)| !p.is_finite()) {
            return Err(EvalError::Predictions {
                path: path.to_path_buf(),
                reason: format!("{}: the probability of {label} is {p}", target.describe()),
            });
        }
        let line = serde_json::to_string(target).map_err(|e| EvalError::Predictions {
            path: path.to_path_buf(),
            reason: format!("{}: {e}", target.describe()),
        })?;
        text.push_str(&line);
        text.push('\n');
    }
    write_atomically(path, text.as_bytes()).map_err(|e| EvalError::Predictions {
        path: path.to_path_buf(),
        reason: format!("could not write: {e}"),
    })?;
    Ok(())
}

/// Reads a file written by [`write_predictions`], gzipped or not (a name ending in `.gz`, as
/// the protocol keeps the recipe's held-out predictions in `docs/results/`); a malformed line
/// is an error naming the file and the line.
pub fn read_predictions(path: &Path) -> Result<Vec<TargetPrediction>, EvalError> {
    let reader = colswarm_tables::open_input(path)?;
    let mut targets = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| EvalError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let target = serde_json::from_str(&line).map_err(|e| EvalError::Predictions {
            path: path.to_path_buf(),
            reason: format!("line {}: {e}", n + 1),
        })?;
        targets.push(target);
    }
    Ok(targets)
}

/// How [`paired_bootstrap`] resamples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BootstrapConfig {
    /// Resamples drawn (default 10,000).
    pub resamples: usize,
    /// Confidence of the interval (default 0.95).
    pub confidence: f64,
    /// Seed of the draws.
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            resamples: 10_000,
            confidence: 0.95,
            seed: 0,
        }
    }
}

/// The result of [`paired_bootstrap`]: A's and B's micro-F1 and the distribution of A − B.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Tables the targets come from (the resampled unit).
    pub n_tables: usize,
    /// Targets scored, summed over the runs.
    pub n_targets: usize,
    /// Runs of each system pooled ([`paired_bootstrap_runs`]); 1 for [`paired_bootstrap`].
    #[serde(default = "one_run")]
    pub runs: usize,
    /// A's micro-F1 on all targets.
    pub micro_f1_a: f64,
    /// B's micro-F1 on all targets.
    pub micro_f1_b: f64,
    /// `micro_f1_a − micro_f1_b`.
    pub difference: f64,
    /// Lower end of the percentile interval of the difference.
    pub ci_low: f64,
    /// Upper end of the percentile interval of the difference.
    pub ci_high: f64,
    /// Confidence of the interval.
    pub confidence: f64,
    /// Share of resamples in which A's micro-F1 is not above B's: a one-sided bootstrap
    /// p-value for "A is better than B".
    pub p_a_not_better: f64,
    /// Resamples drawn.
    pub resamples: usize,
    /// Seed of the draws.
    pub seed: u64,
}

/// Per-table sums of one system: true positives and predicted labels (micro-F1's parts).
#[derive(Clone, Copy, Default)]
struct Counts {
    tp: usize,
    predicted: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.tp += other.tp;
        self.predicted += other.predicted;
    }
}

fn one_run() -> usize {
    1
}

fn micro_f1(tp: usize, predicted: usize, gold: usize) -> f64 {
    let denominator = predicted + gold;
    if denominator == 0 {
        0.0
    } else {
        2.0 * tp as f64 / denominator as f64
    }
}

/// Compares A and B on the same targets (matched by table, subject and column, in any order;
/// their gold labels must agree). Errors name the first target that has no partner or is
/// listed twice.
pub fn paired_bootstrap(
    a: &[TargetPrediction],
    b: &[TargetPrediction],
    config: &BootstrapConfig,
) -> Result<Comparison, EvalError> {
    paired_bootstrap_runs(&[(a, b)], config)
}

/// Compares A and B over several runs of each: run `i` of A (another seed, say) is paired
/// with run `i` of B, target by target, as [`paired_bootstrap`] pairs them, and every run's
/// targets are pooled. Pooling averages out what one seed adds by chance; a table's targets
/// from every run are drawn together, so a table that each run scores is still one unit of
/// the bootstrap and more runs never make the interval narrower than the tables allow. Errors
/// name the run (from 1) when there is more than one.
pub fn paired_bootstrap_runs(
    runs: &[(&[TargetPrediction], &[TargetPrediction])],
    config: &BootstrapConfig,
) -> Result<Comparison, EvalError> {
    let mismatch = |reason: String| Err(EvalError::PredictionsMismatch(reason));
    if runs.is_empty() {
        return mismatch("no run to compare".into());
    }
    if config.resamples == 0 || !(config.confidence > 0.0 && config.confidence < 1.0) {
        return mismatch(format!(
            "{} resamples at confidence {}: need at least one, and a confidence in (0, 1)",
            config.resamples, config.confidence
        ));
    }
    let mut pooled: BTreeMap<&str, (Counts, Counts, usize)> = BTreeMap::new();
    let mut n_targets = 0;
    for (i, (a, b)) in runs.iter().enumerate() {
        let in_run = |error: EvalError| match error {
            EvalError::PredictionsMismatch(reason) if runs.len() > 1 => {
                EvalError::PredictionsMismatch(format!("run {}: {reason}", i + 1))
            }
            other => other,
        };
        for (table, (ta, tb, gold)) in table_counts(a, b).map_err(in_run)? {
            let entry = pooled.entry(table).or_default();
            entry.0.add(ta);
            entry.1.add(tb);
            entry.2 += gold;
        }
        n_targets += a.len();
    }
    let tables: Vec<(Counts, Counts, usize)> = pooled.into_values().collect();
    let difference_of = |picks: &mut dyn Iterator<Item = usize>| {
        let (mut a, mut b, mut gold) = (Counts::default(), Counts::default(), 0);
        for i in picks {
            let (ta, tb, g) = tables[i];
            a.add(ta);
            b.add(tb);
            gold += g;
        }
        let (fa, fb) = (
            micro_f1(a.tp, a.predicted, gold),
            micro_f1(b.tp, b.predicted, gold),
        );
        (fa, fb, fa - fb)
    };
    let (micro_f1_a, micro_f1_b, difference) = difference_of(&mut (0..tables.len()));
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut draws: Vec<f64> = (0..config.resamples)
        .map(|_| {
            let mut picks = (0..tables.len()).map(|_| rng.random_range(0..tables.len()));
            difference_of(&mut picks).2
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    let (ci_low, ci_high) = percentile_interval(&draws, config.confidence);
    Ok(Comparison {
        n_tables: tables.len(),
        n_targets,
        runs: runs.len(),
        micro_f1_a,
        micro_f1_b,
        difference,
        ci_low,
        ci_high,
        confidence: config.confidence,
        p_a_not_better: draws.iter().filter(|d| **d <= 0.0).count() as f64 / draws.len() as f64,
        resamples: config.resamples,
        seed: config.seed,
    })
}

/// Per table: A's counts, B's counts and the number of gold labels, after checking that A and
/// B score the same targets with the same gold labels, each once.
fn table_counts<'a>(
    a: &'a [TargetPrediction],
    b: &'a [TargetPrediction],
) -> Result<BTreeMap<&'a str, (Counts, Counts, usize)>, EvalError> {
    let mismatch = |reason: String| Err(EvalError::PredictionsMismatch(reason));
    if a.len() != b.len() {
        return mismatch(format!("A has {} targets, B has {}", a.len(), b.len()));
    }
    if a.is_empty() {
        return mismatch("no target to compare".into());
    }
    let (a_sorted, b_sorted) = (sorted(a), sorted(b));
    for (side, list) in [("A", &a_sorted), ("B", &b_sorted)] {
        if let Some(pair) = list.windows(2).find(|w| w[0].key() == w[1].key()) {
            return mismatch(format!("{} is listed twice in {side}", pair[0].describe()));
        }
    }
    let mut tables: BTreeMap<&str, (Counts, Counts, usize)> = BTreeMap::new();
    for (x, y) in a_sorted.into_iter().zip(b_sorted) {
        if x.key() != y.key() {
            let first = if x.key() < y.key() { x } else { y };
            let side = if x.key() < y.key() { "A" } else { "B" };
            return mismatch(format!("{} is only in {side}", first.describe()));
        }
        let gold = set(&x.gold);
        if gold != set(&y.gold) {
            return mismatch(format!("{}: other gold labels in A and B", x.describe()));
        }
        let entry = tables.entry(x.table.as_str()).or_default();
        for (counts, target) in [(&mut entry.0, x), (&mut entry.1, y)] {
            let predicted = set(&target.predicted);
            counts.tp += predicted.iter().filter(|l| gold.contains(*l)).count();
            counts.predicted += predicted.len();
        }
        entry.2 += gold.len();
    }
    Ok(tables)
}

/// The central `confidence` interval of sorted, non-empty `draws`: as many draws left out below
/// it as above it.
fn percentile_interval(draws: &[f64], confidence: f64) -> (f64, f64) {
    let n = draws.len();
    let outside = (((1.0 - confidence) / 2.0 * n as f64).round() as usize).min((n - 1) / 2);
    (draws[outside], draws[n - 1 - outside])
}

/// `list` in key order (table, subject, column).
fn sorted(list: &[TargetPrediction]) -> Vec<&TargetPrediction> {
    let mut refs: Vec<&TargetPrediction> = list.iter().collect();
    refs.sort_by(|x, y| x.key().cmp(&y.key()));
    refs
}

/// A label list as a set: micro-F1 counts each distinct label of a target once.
fn set(labels: &[String]) -> std::collections::BTreeSet<&str> {
    labels.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::f1_report;

    fn target(table: &str, column: usize, gold: &[&str], predicted: &[&str]) -> TargetPrediction {
        TargetPrediction {
            table: table.into(),
            subject: None,
            column,
            gold: gold.iter().map(|s| s.to_string()).collect(),
            predicted: predicted.iter().map(|s| s.to_string()).collect(),
            probabilities: BTreeMap::new(),
        }
    }

    /// 40 tables of two columns; A is right on both, B on the first only (and on the second
    /// of every fourth table).
    fn a_better() -> (Vec<TargetPrediction>, Vec<TargetPrediction>) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for t in 0..40 {
            let table = format!("t{t}");
            a.push(target(&table, 0, &["x"], &["x"]));
            a.push(target(&table, 1, &["y", "z"], &["y", "z"]));
            b.push(target(&table, 0, &["x"], &["x"]));
            let second: &[&str] = if t % 4 == 0 { &["y", "z"] } else { &["x"] };
            b.push(target(&table, 1, &["y", "z"], second));
        }
        (a, b)
    }

    #[test]
    fn micro_f1_matches_the_report_and_a_clear_win_is_clear() {
        let (a, b) = a_better();
        let report = |list: &[TargetPrediction]| {
            let scored: Vec<Scored> = list.iter().map(TargetPrediction::scored).collect();
            f1_report(&scored, &|_| true).micro_f1
        };
        // B in reverse order: targets are matched by key, not by position.
        let reversed: Vec<TargetPrediction> = b.iter().rev().cloned().collect();
        let c = paired_bootstrap(&a, &reversed, &BootstrapConfig::default()).unwrap();
        assert_eq!((c.micro_f1_a, c.micro_f1_b), (report(&a), report(&b)));
        assert!((c.difference - (c.micro_f1_a - c.micro_f1_b)).abs() < 1e-12);
        assert!(c.ci_low > 0.0 && c.ci_low <= c.difference && c.difference <= c.ci_high);
        assert_eq!(c.p_a_not_better, 0.0);
        assert_eq!((c.n_tables, c.n_targets), (40, 80));
        let swapped = paired_bootstrap(&b, &a, &BootstrapConfig::default()).unwrap();
        assert_eq!(swapped.difference, -c.difference);
        assert_eq!(swapped.p_a_not_better, 1.0);
    }

    #[test]
    fn the_interval_leaves_out_as_many_draws_below_as_above() {
        let draws: Vec<f64> = (0..10_000).map(f64::from).collect();
        assert_eq!(percentile_interval(&draws, 0.95), (250.0, 9_749.0));
        assert_eq!(percentile_interval(&draws, 0.9), (500.0, 9_499.0));
        assert_eq!(percentile_interval(&[1.0, 2.0, 3.0], 0.5), (2.0, 2.0));
        assert_eq!(percentile_interval(&[7.0], 0.95), (7.0, 7.0));
    }

    #[test]
    fn equal_systems_differ_by_nothing() {
        let (a, _) = a_better();
        let c = paired_bootstrap(&a, &a, &BootstrapConfig::default()).unwrap();
        assert_eq!((c.difference, c.ci_low, c.ci_high), (0.0, 0.0, 0.0));
        assert_eq!(c.p_a_not_better, 1.0);
    }

    #[test]
    fn tables_are_the_resampled_unit() {
        // One table: every resample is that table, so the interval is the observed difference
        // (a column-level bootstrap would spread it).
        let a: Vec<_> = (0..10).map(|c| target("t", c, &["x"], &["x"])).collect();
        let mut b = a.clone();
        for t in b.iter_mut().take(5) {
            t.predicted = vec!["y".into()];
        }
        let c = paired_bootstrap(&a, &b, &BootstrapConfig::default()).unwrap();
        assert_eq!((c.ci_low, c.ci_high), (c.difference, c.difference));
        assert!((c.difference - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_interval_follows_the_seed_and_narrows_with_confidence() {
        // A noisy comparison: A and B each right on a different half of the tables.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for t in 0..200 {
            let table = format!("t{t}");
            let (pa, pb) = if t % 2 == 0 { ("x", "y") } else { ("y", "x") };
            a.push(target(&table, 0, &["x"], &[pa]));
            b.push(target(&table, 0, &["x"], &[pb]));
        }
        let run = |seed, confidence| {
            let config = BootstrapConfig {
                seed,
                confidence,
                resamples: 2_000,
            };
            paired_bootstrap(&a, &b, &config).unwrap()
        };
        assert_eq!(run(1, 0.95), run(1, 0.95));
        assert_ne!(run(1, 0.95), run(2, 0.95), "other draws");
        let (wide, narrow) = (run(1, 0.95), run(1, 0.5));
        assert!(wide.ci_low < narrow.ci_low && narrow.ci_high < wide.ci_high);
        assert!(wide.ci_low < 0.0 && 0.0 < wide.ci_high, "{wide:?}");
        assert!(
            (0.3..0.8).contains(&wide.p_a_not_better),
            "equally good: {wide:?}"
        );
    }

    #[test]
    fn runs_pool_their_targets_and_keep_each_table_one_unit() {
        let (a, b) = a_better();
        let config = BootstrapConfig::default();
        // The same run twice: the same micro-F1s and difference, twice the targets, and no
        // more tables, so the interval cannot narrow (a bootstrap over runs × tables would).
        let once = paired_bootstrap(&a, &b, &config).unwrap();
        let twice = paired_bootstrap_runs(&[(&a, &b), (&a, &b)], &config).unwrap();
        assert_eq!((twice.n_tables, twice.n_targets, twice.runs), (40, 160, 2));
        assert_eq!(
            (
                twice.micro_f1_a,
                twice.micro_f1_b,
                twice.ci_low,
                twice.ci_high
            ),
            (once.micro_f1_a, once.micro_f1_b, once.ci_low, once.ci_high)
        );
        assert_eq!(once.runs, 1);
        // A second run where B is as good as A: the pooled difference is the pooled counts'.
        let (mut tp_a, mut tp_b, mut predicted_a, mut predicted_b, mut gold) = (0, 0, 0, 0, 0);
        for (x, y) in a.iter().zip(&b).chain(a.iter().zip(&a)) {
            let g = set(&x.gold);
            tp_a += set(&x.predicted).intersection(&g).count();
            tp_b += set(&y.predicted).intersection(&g).count();
            predicted_a += x.predicted.len();
            predicted_b += y.predicted.len();
            gold += g.len();
        }
        let mixed = paired_bootstrap_runs(&[(&a, &b), (&a, &a)], &config).unwrap();
        assert_eq!(mixed.micro_f1_a, micro_f1(tp_a, predicted_a, gold));
        assert_eq!(mixed.micro_f1_b, micro_f1(tp_b, predicted_b, gold));
        assert!(0.0 < mixed.difference && mixed.difference < once.difference);
        // A run of other tables adds tables.
        let renamed = |list: &[TargetPrediction]| -> Vec<TargetPrediction> {
            let mut list = list.to_vec();
            list.iter_mut().for_each(|t| t.table.push_str("-other"));
            list
        };
        let (a2, b2) = (renamed(&a), renamed(&b));
        let wider = paired_bootstrap_runs(&[(&a, &b), (&a2, &b2)], &config).unwrap();
        assert_eq!((wider.n_tables, wider.n_targets), (80, 160));
    }

    #[test]
    fn a_mismatch_names_its_run() {
        let (a, b) = a_better();
        let error = paired_bootstrap_runs(&[(&a, &b), (&a, &b[1..])], &BootstrapConfig::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("run 2: A has 80 targets, B has 79"),
            "{error}"
        );
        let none = paired_bootstrap_runs(&[], &BootstrapConfig::default()).unwrap_err();
        assert!(none.to_string().contains("no run"), "{none}");
    }

    #[test]
    fn targets_without_a_partner_or_with_other_gold_are_named() {
        let (a, b) = a_better();
        let error = |a: &[TargetPrediction], b: &[TargetPrediction]| {
            paired_bootstrap(a, b, &BootstrapConfig::default())
                .unwrap_err()
                .to_string()
        };
        assert!(error(&a, &b[1..]).contains("A has 80 targets, B has 79"));
        let mut moved = b.clone();
        moved[3].column = 7;
        assert!(
            error(&a, &moved).contains("table t1 column 1 is only in A"),
            "{}",
            error(&a, &moved)
        );
        let mut regold = b.clone();
        regold[0].gold = vec!["w".into()];
        assert!(error(&a, &regold).contains("table t0 column 0: other gold labels"));
        assert!(error(&[], &[]).contains("no target"));
        let mut twice = b.clone();
        twice[1] = twice[0].clone();
        assert!(error(&a, &twice).contains("table t0 column 0 is listed twice in B"));
        let no_draws = BootstrapConfig {
            resamples: 0,
            ..BootstrapConfig::default()
        };
        assert!(paired_bootstrap(&a, &b, &no_draws).is_err());
    }

    #[test]
    fn predictions_round_trip_and_bad_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let mut targets = a_better().0;
        targets[1].subject = Some(0);
        targets[1].probabilities = [("y".to_string(), 0.75), ("x".to_string(), 0.25)].into();
        write_predictions(&path, &targets).unwrap();
        assert_eq!(read_predictions(&path).unwrap(), targets);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.lines()
                .next()
                .unwrap()
                .starts_with(r#"{"table":"t0","column":0,"#)
        );
        std::fs::write(&path, format!("{text}{{\"table\": 3}}\n")).unwrap();
        let e = read_predictions(&path).unwrap_err().to_string();
        assert!(e.contains("p.jsonl") && e.contains("line 81"), "{e}");
        assert!(read_predictions(&dir.path().join("missing.jsonl")).is_err());
        // Gzipped, as the protocol keeps them; a truncated stream is an error naming the file.
        let gzipped = dir.path().join("p.jsonl.gz");
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut encoder, text.as_bytes()).unwrap();
        let bytes = encoder.finish().unwrap();
        std::fs::write(&gzipped, &bytes).unwrap();
        assert_eq!(read_predictions(&gzipped).unwrap(), targets);
        std::fs::write(&gzipped, &bytes[..bytes.len() / 2]).unwrap();
        let e = read_predictions(&gzipped).unwrap_err().to_string();
        assert!(e.contains("p.jsonl.gz"), "{e}");
        targets[1].probabilities.insert("z".into(), f32::NAN);
        let e = write_predictions(&path, &targets).unwrap_err().to_string();
        assert!(
            e.contains("table t0 pair (0, 1): the probability of z is NaN"),
            "{e}"
        );
    }
}
