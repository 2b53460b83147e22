//! Fitting the new namespace's head on standardised features, and what the held-out slice
//! chooses: the L2 penalty, the step count, the abstention threshold.

use std::collections::BTreeMap;

use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::{log_sigmoid, log_softmax, sigmoid, softmax};
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_eval::{TargetPrediction, ThresholdRule, abstention_curve, choose_threshold};
use colswarm_model::{AddedHead, AddedHeadConfig, DatasetFormat, Namespace, Progress, rows_of};
use colswarm_swarm::LabelKind;

use super::config::FineTuneConfig;

/// The shape of a fit.
pub(super) struct Fit {
    pub(super) width: usize,
    pub(super) classes: usize,
    pub(super) multi_label: bool,
}

pub(super) fn tensor(values: &[f32], rows: usize, width: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values.to_vec(), [rows, width]), device)
}

/// Targets as a `[n, classes]` matrix: uniform over a column's labels (softmax), or 0/1
/// (sigmoids).
pub(super) fn target_matrix(labels: &[Vec<usize>], fit: &Fit) -> Vec<f32> {
    let mut y = vec![0f32; labels.len() * fit.classes];
    for (i, set) in labels.iter().enumerate() {
        for &c in set {
            y[i * fit.classes + c] = if fit.multi_label {
                1.0
            } else {
                1.0 / set.len() as f32
            };
        }
    }
    y
}

/// Fits a head on standardised features for `steps` full-batch Adam steps; `on_step` sees each
/// step's number and the head after it.
pub(super) fn fit(
    x: &[f32],
    labels: &[Vec<usize>],
    data: &Fit,
    l2: f64,
    steps: usize,
    config: &FineTuneConfig,
    mut on_step: impl FnMut(usize, &AddedHead),
) -> AddedHead {
    let device = Device::flex().autodiff();
    let n = labels.len();
    let xs = tensor(x, n, data.width, &device);
    let ys = tensor(&target_matrix(labels, data), n, data.classes, &device);
    let mut head = AddedHeadConfig::new(data.width, data.classes).init(config.seed, &device);
    let mut optim = AdamConfig::new().init();
    for step in 1..=steps {
        let logits = head.logits(xs.clone());
        let nll = if data.multi_label {
            let positive = log_sigmoid(logits.clone()) * ys.clone();
            let negative = log_sigmoid(logits.neg()) * (ys.clone().neg() + 1.0);
            (positive + negative).sum().neg()
        } else {
            (log_softmax(logits, 1) * ys.clone()).sum().neg()
        };
        let penalty = head.output.weight.val().powi_scalar(2).sum();
        let loss = nll / n as f64 + penalty * l2;
        let grads = GradientsParams::from_grads(loss.backward(), &head);
        head = optim.step(config.learning_rate, head, grads);
        on_step(step, &head);
    }
    head.valid()
}

/// Probabilities of standardised features under a head (without autodiff).
pub(super) fn probabilities(head: &AddedHead, x: &[f32], rows: usize, data: &Fit) -> Vec<Vec<f32>> {
    let device = Device::flex();
    let logits = head.logits(tensor(x, rows, data.width, &device));
    rows_of(if data.multi_label {
        sigmoid(logits)
    } else {
        softmax(logits, 1)
    })
}

/// The labels a row of probabilities predicts: the best (single-label), or every label above
/// one half and at least the best (multi-label), as `annotate` decodes them.
pub(super) fn predicted(probs: &[f32], multi_label: bool) -> Vec<usize> {
    let best = (0..probs.len())
        .max_by(|&a, &b| probs[a].total_cmp(&probs[b]))
        .unwrap_or(0);
    if multi_label {
        (0..probs.len())
            .filter(|&i| i == best || probs[i] > 0.5)
            .collect()
    } else {
        vec![best]
    }
}

/// Micro-F1 of predictions against gold label sets.
pub(super) fn micro_f1(probs: &[Vec<f32>], gold: &[&Vec<usize>], multi_label: bool) -> f64 {
    let (mut hits, mut predicted_n, mut gold_n) = (0usize, 0usize, 0usize);
    for (p, g) in probs.iter().zip(gold) {
        let chosen = predicted(p, multi_label);
        hits += chosen.iter().filter(|c| g.contains(c)).count();
        predicted_n += chosen.len();
        gold_n += if multi_label { g.len() } else { 1 };
    }
    if predicted_n == 0 || gold_n == 0 || hits == 0 {
        return 0.0;
    }
    let (p, r) = (
        hits as f64 / predicted_n as f64,
        hits as f64 / gold_n as f64,
    );
    2.0 * p * r / (p + r)
}

/// Mean negative log-likelihood of gold labels.
pub(super) fn log_loss(probs: &[Vec<f32>], gold: &[&Vec<usize>], multi_label: bool) -> f64 {
    let mut total = 0.0;
    for (p, g) in probs.iter().zip(gold) {
        if multi_label {
            for (i, &q) in p.iter().enumerate() {
                let q = f64::from(q).clamp(1e-7, 1.0 - 1e-7);
                total -= if g.contains(&i) {
                    q.ln()
                } else {
                    (1.0 - q).ln()
                };
            }
        } else {
            let q: f64 = g.iter().map(|&i| f64::from(p[i])).sum();
            total -= q.clamp(1e-7, 1.0).ln();
        }
    }
    total / probs.len().max(1) as f64
}

/// What the held-out slice chose.
pub(super) struct Choice {
    pub(super) l2: f64,
    pub(super) steps: usize,
    pub(super) micro_f1: f64,
    /// The chosen head's held-out probabilities, in held-out row order.
    pub(super) held_probs: Vec<Vec<f32>>,
}

/// The L2 penalty and step count with the lowest held-out log-loss, for heads fitted on the
/// rest of the labelled columns.
pub(super) fn choose_settings(
    x: &[f32],
    labels: &[Vec<usize>],
    held: &[bool],
    data: &Fit,
    config: &FineTuneConfig,
) -> Choice {
    let pick = |keep: bool| -> (Vec<f32>, Vec<Vec<usize>>) {
        let mut rows = Vec::new();
        let mut sets = Vec::new();
        for (i, set) in labels.iter().enumerate() {
            if held[i] == keep {
                rows.extend_from_slice(&x[i * data.width..(i + 1) * data.width]);
                sets.push(set.clone());
            }
        }
        (rows, sets)
    };
    let (train_x, train_y) = pick(false);
    let (held_x, held_y) = pick(true);
    let gold: Vec<&Vec<usize>> = held_y.iter().collect();
    let mut best: Option<(f64, Choice)> = None;
    let total = config.l2.len() * config.max_steps;
    let mut progress = Progress::new("choosing", total, config.progress);
    for (k, &l2) in config.l2.iter().enumerate() {
        fit(
            &train_x,
            &train_y,
            data,
            l2,
            config.max_steps,
            config,
            |step, head| {
                progress.set(k * config.max_steps + step, &format!("l2 {l2}"));
                if step % config.eval_every.max(1) != 0 {
                    return;
                }
                let head = head.valid();
                let probs = probabilities(&head, &held_x, held_y.len(), data);
                let loss = log_loss(&probs, &gold, data.multi_label);
                if best.as_ref().is_none_or(|(b, _)| loss < *b) {
                    let micro_f1 = micro_f1(&probs, &gold, data.multi_label);
                    best = Some((
                        loss,
                        Choice {
                            l2,
                            steps: step,
                            micro_f1,
                            held_probs: probs,
                        },
                    ));
                }
            },
        );
    }
    let (_, choice) = best.expect("at least one evaluation: max_steps >= eval_every");
    progress.finish(&format!(
        "held-out micro-F1 {:.3} at l2 {}, {} steps",
        choice.micro_f1, choice.l2, choice.steps
    ));
    choice
}

/// The threshold with the best held-out micro-F1 when low-confidence answers are withheld
/// (`None` when never abstaining is best).
pub(super) fn abstention_threshold(
    held_probs: &[Vec<f32>],
    gold: &[&Vec<usize>],
    classes: usize,
    multi_label: bool,
) -> Option<f32> {
    // Labels by position: the scores need only tell them apart.
    let names: Vec<String> = (0..classes).map(|i| i.to_string()).collect();
    let targets: Vec<TargetPrediction> = held_probs
        .iter()
        .zip(gold)
        .enumerate()
        .map(|(i, (probs, &gold))| TargetPrediction {
            table: i.to_string(),
            subject: None,
            column: i,
            gold: gold.iter().map(|&g| names[g].clone()).collect(),
            predicted: predicted(probs, multi_label)
                .into_iter()
                .map(|p| names[p].clone())
                .collect(),
            probabilities: names
                .iter()
                .cloned()
                .zip(probs.iter().copied())
                .collect::<BTreeMap<_, _>>(),
        })
        .collect();
    let kind = if multi_label {
        LabelKind::MultiLabel
    } else {
        LabelKind::SingleLabel
    };
    let namespace = Namespace::new("held-out", DatasetFormat::Labels, kind, 0, names);
    let curve = abstention_curve(&targets, &namespace);
    choose_threshold(&curve, ThresholdRule::BestF1)
        .map(|p| p.threshold)
        .filter(|&t| t > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_f1_and_log_loss_score_single_and_multi_label_rows() {
        let probs = vec![vec![0.7, 0.2, 0.1], vec![0.1, 0.3, 0.6]];
        let gold = [vec![0], vec![1]];
        let gold: Vec<&Vec<usize>> = gold.iter().collect();
        assert!((micro_f1(&probs, &gold, false) - 0.5).abs() < 1e-12);
        let expected = -(0.7f64.ln() + 0.3f64.ln()) / 2.0;
        assert!((log_loss(&probs, &gold, false) - expected).abs() < 1e-6);
        // Multi-label: row 1 predicts {2} (best) and row 0 {0}; gold {0} and {1, 2}.
        let multi = [vec![0], vec![1, 2]];
        let multi: Vec<&Vec<usize>> = multi.iter().collect();
        let f1 = micro_f1(&probs, &multi, true);
        let (p, r) = (2.0 / 2.0, 2.0 / 3.0);
        assert!((f1 - 2.0 * p * r / (p + r)).abs() < 1e-12);
    }

    #[test]
    fn a_fitted_head_separates_separable_columns() {
        // Two labels, told apart by the sign of the first feature.
        let mut x = Vec::new();
        let mut labels = Vec::new();
        for i in 0..40 {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            x.extend([sign * (1.0 + i as f32 / 40.0), (i as f32).sin()]);
            labels.push(vec![i % 2]);
        }
        let data = Fit {
            width: 2,
            classes: 2,
            multi_label: false,
        };
        let config = FineTuneConfig::new("t");
        let head = fit(&x, &labels, &data, 1e-3, 100, &config, |_, _| {});
        let probs = probabilities(&head, &x, 40, &data);
        let gold: Vec<&Vec<usize>> = labels.iter().collect();
        assert_eq!(micro_f1(&probs, &gold, false), 1.0);
        let again = fit(&x, &labels, &data, 1e-3, 100, &config, |_, _| {});
        assert_eq!(
            probabilities(&again, &x, 40, &data),
            probs,
            "the same seed fits the same head"
        );
    }
}
