//! `r_perf`: the task metric of one table, micro-F1 over its annotated columns.
//!
//! An annotation is a *pair* `(key, label)`: for CTA the key is a column index, for CPA it is
//! a column pair `(subject, object)`. A table's gold and predicted annotations are sets of
//! pairs, so multi-label columns are natural (one pair per label).
//!
//! **Micro-F1 over pairs.** Let `G` be the gold pairs, `K(G)` the keys that appear in `G`
//! (the *annotated* columns or column pairs), and `P` the predicted pairs restricted to keys in
//! `K(G)` (predictions on un-annotated columns are not scored: benchmarks such as SOTAB and
//! SemTab only annotate some columns, and an un-annotated column has no gold to be wrong
//! against). With `TP = |P ∩ G|`:
//!
//! ```text
//! F1 = 2·TP / (|P| + |G|)          (= 2·prec·rec / (prec + rec), prec = TP/|P|, rec = TP/|G|)
//! ```
//!
//! **No gold.** If `|G| = 0` the task is *excluded*: [`F1Counts::f1`] returns `None`. It is not
//! scored 0 or 1, because neither is a measurement of the table.
//!
//! **CTA + CPA.** With `w = cta_weight ∈ [0, 1]`, the tasks that have gold are averaged with
//! weights `w` (CTA) and `1 − w` (CPA), renormalised over the tasks present:
//!
//! ```text
//! r_perf = (w·F1_cta·[CTA has gold] + (1−w)·F1_cpa·[CPA has gold])
//!        / (w·[CTA has gold] + (1−w)·[CPA has gold])
//! ```
//!
//! and `None` when the denominator is 0 (no gold at all, or gold only for a task of weight 0).
//! The value is in `[0, 1]`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::{Result, check_range};

/// Counts behind a micro-F1: true positives, scored predictions and gold pairs.
///
/// Counts add up ([`F1Counts::merge`]), so the same type gives a corpus-level micro-F1.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct F1Counts {
    /// `|P ∩ G|`.
    pub true_positives: usize,
    /// `|P|`, predictions on annotated keys only.
    pub predicted: usize,
    /// `|G|`.
    pub gold: usize,
}

impl F1Counts {
    /// `2·TP / (|P| + |G|)`, or `None` when there is no gold pair.
    pub fn f1(&self) -> Option<f64> {
        (self.gold > 0)
            .then(|| 2.0 * self.true_positives as f64 / (self.predicted + self.gold) as f64)
    }

    /// Precision `TP/|P|` (`None` when nothing was predicted on annotated keys).
    pub fn precision(&self) -> Option<f64> {
        (self.predicted > 0).then(|| self.true_positives as f64 / self.predicted as f64)
    }

    /// Recall `TP/|G|` (`None` without gold).
    pub fn recall(&self) -> Option<f64> {
        (self.gold > 0).then(|| self.true_positives as f64 / self.gold as f64)
    }

    /// Sum of two counts (micro-averaging across tables).
    pub fn merge(self, other: Self) -> Self {
        Self {
            true_positives: self.true_positives + other.true_positives,
            predicted: self.predicted + other.predicted,
            gold: self.gold + other.gold,
        }
    }
}

/// Counts `TP`, `|P|` (restricted to the gold keys) and `|G|` for two sets of `(key, label)`
/// pairs. See the [module docs](self) for the definition.
pub fn pair_counts<K: Ord, L: Ord>(
    predicted: &BTreeSet<(K, L)>,
    gold: &BTreeSet<(K, L)>,
) -> F1Counts {
    let annotated: BTreeSet<&K> = gold.iter().map(|(k, _)| k).collect();
    let mut counts = F1Counts {
        gold: gold.len(),
        ..F1Counts::default()
    };
    for pair in predicted.iter().filter(|(k, _)| annotated.contains(k)) {
        counts.predicted += 1;
        if gold.contains(pair) {
            counts.true_positives += 1;
        }
    }
    counts
}

/// Micro-F1 over `(key, label)` pairs; `None` when `gold` is empty.
pub fn micro_f1<K: Ord, L: Ord>(
    predicted: &BTreeSet<(K, L)>,
    gold: &BTreeSet<(K, L)>,
) -> Option<f64> {
    pair_counts(predicted, gold).f1()
}

/// One table's annotations (gold or predicted) for both tasks.
///
/// `L` is the label type (a label id or name).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(bound(serialize = "L: Serialize", deserialize = "L: Deserialize<'de> + Ord"))]
pub struct TableLabels<L: Ord> {
    /// CTA pairs `(column, type)`.
    pub cta: BTreeSet<(usize, L)>,
    /// CPA pairs `((subject column, object column), relation)`.
    pub cpa: BTreeSet<((usize, usize), L)>,
}

impl<L: Ord> Default for TableLabels<L> {
    fn default() -> Self {
        Self {
            cta: BTreeSet::new(),
            cpa: BTreeSet::new(),
        }
    }
}

/// How `r_perf` weighs the two tasks.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PerfConfig {
    /// Weight `w ∈ [0, 1]` of CTA; CPA gets `1 − w`. Default 0.5.
    pub cta_weight: f64,
}

impl Default for PerfConfig {
    fn default() -> Self {
        Self { cta_weight: 0.5 }
    }
}

/// `r_perf` of one table: the weighted micro-F1 of CTA and CPA over the annotated columns
/// (formula in the [module docs](self)). `Ok(None)` when the table has no gold that counts:
/// the caller excludes it (it must not be rewarded 0 or 1 for a table nobody annotated).
///
/// # Errors
/// [`crate::ParlError::OutOfRange`] if `cta_weight ∉ [0, 1]`.
pub fn r_perf<L: Ord>(
    predicted: &TableLabels<L>,
    gold: &TableLabels<L>,
    config: &PerfConfig,
) -> Result<Option<f64>> {
    let w = check_range("cta_weight", config.cta_weight, 0.0, 1.0)?;
    let parts = [
        (w, micro_f1(&predicted.cta, &gold.cta)),
        (1.0 - w, micro_f1(&predicted.cpa, &gold.cpa)),
    ];
    let (num, den) = parts
        .iter()
        .filter_map(|&(weight, f1)| f1.map(|f| (weight * f, weight)))
        .fold((0.0, 0.0), |(n, d), (wf, w)| (n + wf, d + w));
    Ok((den > 0.0).then(|| num / den))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<K: Ord + Clone>(pairs: &[(K, &str)]) -> BTreeSet<(K, String)> {
        pairs
            .iter()
            .map(|(k, l)| (k.clone(), l.to_string()))
            .collect()
    }

    #[test]
    fn single_label_micro_f1_is_accuracy() {
        // docs/PARL.md §8 M1: y_true = [0,0,1,2], y_pred = [0,1,1,1] → micro 0.5 (= accuracy).
        let gold = set(&[(0, "0"), (1, "0"), (2, "1"), (3, "2")]);
        let pred = set(&[(0, "0"), (1, "1"), (2, "1"), (3, "1")]);
        assert_eq!(micro_f1(&pred, &gold), Some(0.5));
    }

    #[test]
    fn multi_label_counts_each_pair() {
        // Column 0 gold {a, b}, column 1 gold {c}. Predicted {a} on 0 and {c, d} on 1.
        // TP = 2 (a, c), |P| = 3, |G| = 3 → F1 = 4/6.
        let gold = set(&[(0, "a"), (0, "b"), (1, "c")]);
        let pred = set(&[(0, "a"), (1, "c"), (1, "d")]);
        let c = pair_counts(&pred, &gold);
        assert_eq!(
            c,
            F1Counts {
                true_positives: 2,
                predicted: 3,
                gold: 3
            }
        );
        assert!((c.f1().unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert!((c.precision().unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert!((c.recall().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn predictions_on_unannotated_columns_are_not_scored() {
        let gold = set(&[(0, "a")]);
        let pred = set(&[(0, "a"), (5, "x"), (6, "y")]);
        assert_eq!(micro_f1(&pred, &gold), Some(1.0));
    }

    #[test]
    fn no_gold_is_excluded_not_zero() {
        let pred = set(&[(0, "a")]);
        assert_eq!(micro_f1(&pred, &BTreeSet::new()), None);
        let t = TableLabels {
            cta: pred,
            cpa: BTreeSet::new(),
        };
        assert_eq!(
            r_perf(&t, &TableLabels::default(), &PerfConfig::default()),
            Ok(None)
        );
    }

    #[test]
    fn cta_and_cpa_are_weighted_and_renormalised() {
        let gold = TableLabels {
            cta: set(&[(0, "a"), (1, "b")]),
            cpa: set(&[((0, 1), "r")]),
        };
        let pred = TableLabels {
            cta: set(&[(0, "a"), (1, "b")]), // F1 = 1
            cpa: set(&[((0, 1), "s")]),      // F1 = 0
        };
        let cfg = PerfConfig { cta_weight: 0.75 };
        assert_eq!(r_perf(&pred, &gold, &cfg), Ok(Some(0.75)));
        // Without CPA gold only CTA counts, at full weight.
        let gold_cta = TableLabels {
            cta: gold.cta.clone(),
            cpa: BTreeSet::new(),
        };
        assert_eq!(r_perf(&pred, &gold_cta, &cfg), Ok(Some(1.0)));
        // CPA-only gold with CPA weight 0 → nothing counts → excluded.
        let gold_cpa = TableLabels {
            cta: BTreeSet::new(),
            cpa: gold.cpa.clone(),
        };
        let cta_only = PerfConfig { cta_weight: 1.0 };
        assert_eq!(r_perf(&pred, &gold_cpa, &cta_only), Ok(None));
        assert!(r_perf(&pred, &gold, &PerfConfig { cta_weight: 1.5 }).is_err());
    }

    #[test]
    fn counts_merge_to_corpus_micro_f1() {
        let a = F1Counts {
            true_positives: 1,
            predicted: 2,
            gold: 1,
        };
        let b = F1Counts {
            true_positives: 3,
            predicted: 3,
            gold: 5,
        };
        let m = a.merge(b);
        assert_eq!(m.f1(), Some(8.0 / 11.0));
    }

    #[test]
    fn table_labels_round_trip_json() {
        let t = TableLabels {
            cta: set(&[(0, "a")]),
            cpa: set(&[((0, 2), "r")]),
        };
        let s = serde_json::to_string(&t).unwrap();
        let back: TableLabels<String> = serde_json::from_str(&s).unwrap();
        assert_eq!(back, t);
    }
}
