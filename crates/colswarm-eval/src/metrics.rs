//! Multi-label aware F1: micro over (target, label) pairs, macro and support-weighted over
//! labels, and a per-label report.
//!
//! A *target* is one annotated column (CTA) or one (subject, column) pair (CPA). Gold labels the
//! model cannot predict (outside its label set) stay in the gold sets: they count as misses,
//! never dropped, and are reported in [`F1Report::labels_unknown`].

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Gold and predicted labels of one target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scored {
    /// The true labels.
    pub gold: Vec<String>,
    /// The predicted labels.
    pub predicted: Vec<String>,
}

/// Scores of one label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabelScore {
    /// The label.
    pub label: String,
    /// Targets whose gold set holds the label.
    pub support: usize,
    /// Targets the label was predicted for.
    pub predicted: usize,
    /// Targets both.
    pub true_positives: usize,
    /// `tp / predicted` (0 when nothing was predicted).
    pub precision: f64,
    /// `tp / support` (0 when the label has no support).
    pub recall: f64,
    /// Harmonic mean of the two (0 when both are 0).
    pub f1: f64,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct F1Report {
    /// `2·TP / (2·TP + FP + FN)` over (target, label) pairs.
    pub micro_f1: f64,
    /// Micro precision.
    pub micro_precision: f64,
    /// Micro recall.
    pub micro_recall: f64,
    /// Mean F1 over labels with support or predictions.
    pub macro_f1: f64,
    /// Mean F1 over labels weighted by support.
    pub weighted_f1: f64,
    /// Number of targets scored.
    pub n_targets: usize,
    /// Gold (target, label) pairs.
    pub n_gold_labels: usize,
    /// Gold labels outside the model's label set (each a certain miss).
    pub labels_unknown: usize,
    /// Per label, sorted by name.
    pub per_label: Vec<LabelScore>,
}

fn f1(precision: f64, recall: f64) -> f64 {
    if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Scores `targets`; `known` decides which gold labels count as unknown to the model.
pub fn f1_report(targets: &[Scored], known: &dyn Fn(&str) -> bool) -> F1Report {
    #[derive(Default)]
    struct Counts {
        support: usize,
        predicted: usize,
        tp: usize,
    }
    let mut counts: BTreeMap<&str, Counts> = BTreeMap::new();
    let (mut tp, mut n_pred, mut n_gold, mut unknown) = (0, 0, 0, 0);
    for target in targets {
        let gold: BTreeSet<&str> = target.gold.iter().map(String::as_str).collect();
        let predicted: BTreeSet<&str> = target.predicted.iter().map(String::as_str).collect();
        for &label in &gold {
            counts.entry(label).or_default().support += 1;
            unknown += usize::from(!known(label));
        }
        for &label in &predicted {
            let entry = counts.entry(label).or_default();
            entry.predicted += 1;
            if gold.contains(label) {
                entry.tp += 1;
                tp += 1;
            }
        }
        n_gold += gold.len();
        n_pred += predicted.len();
    }
    let per_label: Vec<LabelScore> = counts
        .into_iter()
        .map(|(label, c)| {
            let (precision, recall) = (ratio(c.tp, c.predicted), ratio(c.tp, c.support));
            LabelScore {
                label: label.to_string(),
                support: c.support,
                predicted: c.predicted,
                true_positives: c.tp,
                precision,
                recall,
                f1: f1(precision, recall),
            }
        })
        .collect();
    let macro_f1 = if per_label.is_empty() {
        0.0
    } else {
        per_label.iter().map(|l| l.f1).sum::<f64>() / per_label.len() as f64
    };
    let weighted_f1 = if n_gold == 0 {
        0.0
    } else {
        per_label
            .iter()
            .map(|l| l.f1 * l.support as f64)
            .sum::<f64>()
            / n_gold as f64
    };
    let (micro_precision, micro_recall) = (ratio(tp, n_pred), ratio(tp, n_gold));
    F1Report {
        micro_f1: ratio(2 * tp, n_pred + n_gold),
        micro_precision,
        micro_recall,
        macro_f1,
        weighted_f1,
        n_targets: targets.len(),
        n_gold_labels: n_gold,
        labels_unknown: unknown,
        per_label,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(gold: &[&str], predicted: &[&str]) -> Scored {
        Scored {
            gold: gold.iter().map(|s| s.to_string()).collect(),
            predicted: predicted.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn hand_computed_multi_label_case() {
        // Pairs: gold {a,b} pred {a,c}; gold {b} pred {b}; gold {z} (unknown) pred {a}.
        // TP = 2 (a, b), predicted 4, gold 4 → micro F1 = 4 / 8 = 0.5.
        let targets = [
            scored(&["a", "b"], &["a", "c"]),
            scored(&["b"], &["b"]),
            scored(&["z"], &["a"]),
        ];
        let report = f1_report(&targets, &|l| l != "z");
        assert!((report.micro_f1 - 0.5).abs() < 1e-12);
        assert_eq!(report.labels_unknown, 1);
        assert_eq!(report.n_gold_labels, 4);
        // a: P 1/2, R 1/1, F 2/3.  b: support 2, predicted once (a hit): P 1, R 1/2, F 2/3.
        let a = &report.per_label[0];
        assert_eq!(
            (a.label.as_str(), a.support, a.predicted, a.true_positives),
            ("a", 1, 2, 1)
        );
        assert!((a.f1 - 2.0 / 3.0).abs() < 1e-12);
        let b = &report.per_label[1];
        assert_eq!((b.support, b.predicted, b.true_positives), (2, 1, 1));
        assert!((b.f1 - 2.0 / 3.0).abs() < 1e-12);
        // c: predicted once, no support → 0; z: support 1, never predicted → 0.
        assert_eq!(report.per_label.len(), 4);
        assert!((report.macro_f1 - (4.0 / 3.0) / 4.0).abs() < 1e-12);
        // Weighted: (a 1·2/3 + b 2·2/3 + z 1·0) / 4 = 0.5.
        assert!((report.weighted_f1 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn perfect_and_empty_predictions() {
        let perfect = f1_report(&[scored(&["x"], &["x"])], &|_| true);
        assert_eq!((perfect.micro_f1, perfect.macro_f1), (1.0, 1.0));
        let silent = f1_report(&[scored(&["x"], &[])], &|_| true);
        assert_eq!((silent.micro_f1, silent.micro_recall), (0.0, 0.0));
        let nothing = f1_report(&[], &|_| true);
        assert_eq!((nothing.micro_f1, nothing.n_targets), (0.0, 0));
    }
}
