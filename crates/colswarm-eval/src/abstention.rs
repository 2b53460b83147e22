//! Abstention: a namespace gives no label to a target whose best label's probability is below
//! a threshold. How precision and coverage trade over that threshold, and the threshold chosen
//! on dev that a model directory stores ([`colswarm_model::Namespace::abstain_below`]).
//!
//! Micro-F1 as the benchmarks score it is unchanged by a stored threshold: `colswarm eval`
//! scores every target's best labels and reports abstention beside it
//! ([`AbstentionReport`]).

use serde::{Deserialize, Serialize};

use colswarm_model::Namespace;

use crate::compare::TargetPrediction;
use crate::metrics::{Scored, f1_report};

/// The scores of one threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbstentionPoint {
    /// Targets whose best probability is below this get no label.
    pub threshold: f32,
    /// Targets scored.
    pub targets: usize,
    /// Targets given a label.
    pub answered: usize,
    /// `answered / targets`.
    pub coverage: f64,
    /// Micro precision of the labels given.
    pub precision: f64,
    /// Micro-F1 with abstentions counted as predicting nothing.
    pub micro_f1: f64,
}

/// How [`choose_threshold`] picks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThresholdRule {
    /// The threshold whose micro-F1 (abstentions predicting nothing) is highest: abstain
    /// where a label is more often wrong than the F1 it costs.
    BestF1,
    /// The lowest threshold whose precision reaches this, keeping the most coverage; the
    /// highest-precision threshold when none reaches it.
    MinPrecision(f64),
}

/// A target's best probability (`None`: the system gave no probabilities for it).
fn best_probability(target: &TargetPrediction) -> Option<f32> {
    target.probabilities.values().copied().reduce(f32::max)
}

/// The scores at `threshold` of `targets`, whose `probabilities` must be filled (a target
/// without them is never answered).
pub fn abstention_point(
    targets: &[TargetPrediction],
    namespace: &Namespace,
    threshold: f32,
) -> AbstentionPoint {
    let mut answered = 0;
    let scored: Vec<Scored> = targets
        .iter()
        .map(|t| {
            let answers = best_probability(t).is_some_and(|p| p >= threshold);
            answered += usize::from(answers);
            Scored {
                gold: t.gold.clone(),
                predicted: if answers {
                    t.predicted.clone()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    let report = f1_report(&scored, &|l| namespace.output(l).is_some());
    AbstentionPoint {
        threshold,
        targets: targets.len(),
        answered,
        coverage: if targets.is_empty() {
            0.0
        } else {
            answered as f64 / targets.len() as f64
        },
        precision: report.micro_precision,
        micro_f1: report.micro_f1,
    }
}

/// The scores at the thresholds 0.00, 0.01, …, 1.00 (0: never abstain).
pub fn abstention_curve(
    targets: &[TargetPrediction],
    namespace: &Namespace,
) -> Vec<AbstentionPoint> {
    (0..=100u8)
        .map(|i| abstention_point(targets, namespace, f32::from(i) / 100.0))
        .collect()
}

/// The point of `curve` that `rule` picks (`None` for an empty curve). Ties go to the lower
/// threshold: abstain no more than the data asks for.
pub fn choose_threshold(
    curve: &[AbstentionPoint],
    rule: ThresholdRule,
) -> Option<&AbstentionPoint> {
    let first_best = |key: &dyn Fn(&AbstentionPoint) -> f64| {
        curve
            .iter()
            .fold(None::<&AbstentionPoint>, |best, p| match best {
                Some(b) if key(b) >= key(p) => Some(b),
                _ => Some(p),
            })
    };
    match rule {
        ThresholdRule::BestF1 => first_best(&|p| p.micro_f1),
        ThresholdRule::MinPrecision(target) => curve
            .iter()
            .find(|p| p.answered > 0 && p.precision >= target)
            .or_else(|| first_best(&|p| p.precision)),
    }
}

/// Abstention at the threshold a model stores, beside the usual scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbstentionReport {
    /// The stored threshold and its scores on the evaluated targets.
    #[serde(flatten)]
    pub at_threshold: AbstentionPoint,
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_swarm::LabelKind;
    use colswarm_tables::DatasetFormat;

    fn namespace() -> Namespace {
        let labels = vec!["a".into(), "b".into()];
        Namespace::new("n", DatasetFormat::T2d, LabelKind::SingleLabel, 0, labels)
    }

    fn target(gold: &str, predicted: &str, p: f32) -> TargetPrediction {
        TargetPrediction {
            gold: vec![gold.into()],
            predicted: vec![predicted.into()],
            probabilities: [(predicted.to_string(), p)].into_iter().collect(),
            ..TargetPrediction::default()
        }
    }

    /// Right at 0.9 and 0.8, wrong at 0.6 and 0.4.
    fn four_targets() -> [TargetPrediction; 4] {
        [
            target("a", "a", 0.9),
            target("b", "b", 0.8),
            target("a", "b", 0.6),
            target("b", "a", 0.4),
        ]
    }

    #[test]
    fn precision_rises_and_coverage_falls_with_the_threshold() {
        let ns = namespace();
        let targets = four_targets();
        let curve = abstention_curve(&targets, &ns);
        assert_eq!(curve.len(), 101);
        assert_eq!((curve[0].threshold, curve[100].threshold), (0.0, 1.0));
        assert_eq!((curve[0].answered, curve[0].precision), (4, 0.5));
        assert_eq!((curve[40].answered, curve[41].answered), (4, 3)); // 0.40 answers 0.4
        assert_eq!(curve[100].answered, 0);
        let at = abstention_point(&targets, &ns, 0.7);
        assert_eq!((at.answered, at.coverage, at.precision), (2, 0.5, 1.0));
        // F1 at 0.8: 2 right of 2 given, 4 gold: 2·1·0.5/1.5.
        assert!((at.micro_f1 - 2.0 / 3.0).abs() < 1e-9);
        assert!((curve[0].micro_f1 - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_rules_pick_their_threshold() {
        let ns = namespace();
        let targets = four_targets();
        let curve = abstention_curve(&targets, &ns);
        // Dropping the two wrong answers raises F1 from 0.5 to 2/3; 0.61 is the lowest such.
        let best = choose_threshold(&curve, ThresholdRule::BestF1).unwrap();
        assert_eq!((best.threshold, best.answered), (0.61, 2));
        let precise = choose_threshold(&curve, ThresholdRule::MinPrecision(0.6)).unwrap();
        assert_eq!((precise.threshold, precise.answered), (0.41, 3));
        // Unreachable precision: the most precise point.
        let most = choose_threshold(&curve, ThresholdRule::MinPrecision(1.1)).unwrap();
        assert_eq!(most.precision, 1.0);
        assert!(choose_threshold(&[], ThresholdRule::BestF1).is_none());
    }
}
