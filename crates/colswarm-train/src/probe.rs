//! Linear probes: what a frozen reading of a column knows about its labels. A softmax
//! regression is trained on the training tables' column features of one system (the primary's
//! column representations, a specialist's column readings, or both side by side) and scored on
//! the dev tables with the same F1 as `eval`. A specialist whose probe scores well, or adds to
//! the primary's, carries information the primary lacks.

use std::collections::HashMap;

use burn::module::Module;
use burn::nn::Linear;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_model::{Columns, Example, Model, Namespace, SpecialistUse, Task};
use colswarm_rwkv::init::ParamFactory;
use colswarm_swarm::FrozenSpecialist;
use colswarm_tables::{Table, fnv1a};
use serde::Serialize;

use crate::error::TrainError;
use colswarm_eval::{
    DataSpec, LoadedData, TargetPrediction, default_task, pick_namespace, score_predictions,
};

/// How each probe is trained.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeConfig {
    /// Full-batch Adam steps.
    pub steps: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// Candidate L2 penalties on the weights: each probe takes the one with the best
    /// cross-validated accuracy on its training targets (folds by table).
    pub l2: Vec<f64>,
    /// Folds of that cross-validation.
    pub folds: usize,
    /// Seed of the probe's initial weights.
    pub seed: u64,
    /// Tables per forward pass when features are extracted.
    pub batch_size: usize,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            steps: 300,
            learning_rate: 0.05,
            l2: vec![1e-4, 1e-3, 1e-2, 1e-1],
            folds: 3,
            seed: 0,
            batch_size: 16,
        }
    }
}

/// One probe's score on one dev set.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeScore {
    /// The features: `primary`, a specialist's name, or `primary+NAME`.
    pub features: String,
    /// Their width.
    pub width: usize,
    /// Micro-F1 on the dev set.
    pub micro_f1: f64,
    /// Macro-F1 on the dev set.
    pub macro_f1: f64,
    /// The L2 penalty cross-validation chose.
    pub l2: f64,
}

/// The probes of one dev set.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    /// The namespace.
    pub namespace: String,
    /// The task probed (CTA, or CPA from subject and object features side by side).
    pub task: Task,
    /// Training targets.
    pub train_targets: usize,
    /// Dev targets.
    pub dev_targets: usize,
    /// One score per feature set.
    pub scores: Vec<ProbeScore>,
    /// Per feature set, the dev predictions (for `compare`).
    #[serde(skip)]
    pub predictions: Vec<(String, Vec<TargetPrediction>)>,
}

/// Which target a row is: table id, subject column (CPA), column, gold labels.
type TargetKey = (String, Option<usize>, usize, Vec<String>);

/// Targets of one split and, per system, their features.
struct Targets {
    /// Per target, its key.
    keys: Vec<TargetKey>,
    /// Per system (primary first, then each specialist): `[targets, width]` row-major.
    features: Vec<(Vec<f32>, usize)>,
}

fn rows_of(t: Tensor<2>) -> (Vec<f32>, usize) {
    let [_, width] = t.dims();
    (t.into_data().try_to_vec::<f32>().unwrap_or_default(), width)
}

/// Extracts every target of `tables` and the features of each system.
fn targets(
    model: &Model,
    specialists: &[FrozenSpecialist],
    tables: &[Table],
    task: Task,
    batch_size: usize,
) -> Result<Targets, TrainError> {
    let device = model.swarm.orchestrator.device();
    let mut out = Targets {
        keys: Vec::new(),
        features: vec![(Vec::new(), 0); specialists.len() + 1],
    };
    for chunk in colswarm_model::passes(tables, batch_size) {
        let examples = model.encode(chunk, Columns::Targets);
        let refs: Vec<&Example> = examples.iter().collect();
        let mut systems = vec![rows_of(model.forward(&refs, SpecialistUse::Off)?.columns)];
        let tokens: Vec<&[u32]> = examples.iter().map(|e| e.tokens.as_slice()).collect();
        let spans: Vec<Vec<std::ops::Range<usize>>> =
            examples.iter().map(|e| e.spans.clone()).collect();
        for specialist in specialists {
            systems.push(rows_of(specialist.read_columns(&tokens, &spans, &device)));
        }
        // Rows of one table's queries start where the previous tables' end.
        let mut first = 0;
        for (table, example) in chunk.iter().zip(&examples) {
            let row_of = |column: usize| {
                example
                    .columns
                    .iter()
                    .position(|&c| c == column)
                    .map(|q| first + q)
            };
            let mut picked: Vec<(Vec<usize>, TargetKey)> = Vec::new();
            match task {
                Task::Cta => {
                    for (c, column) in table.columns.iter().enumerate() {
                        if let (false, Some(row)) = (column.labels.is_empty(), row_of(c)) {
                            picked.push((
                                vec![row],
                                (table.id.clone(), None, c, column.labels.clone()),
                            ));
                        }
                    }
                }
                Task::Cpa => {
                    for target in table.cpa_targets.iter().filter(|t| !t.labels.is_empty()) {
                        let (s, o) = (target.subject_column, target.object_column);
                        if let (Some(rs), Some(ro)) = (row_of(s), row_of(o)) {
                            picked.push((
                                vec![rs, ro],
                                (table.id.clone(), Some(s), o, target.labels.clone()),
                            ));
                        }
                    }
                }
            }
            for (rows, key) in picked {
                for ((values, width), (all, all_width)) in
                    systems.iter().zip(out.features.iter_mut())
                {
                    *all_width = width * rows.len();
                    for &r in &rows {
                        all.extend_from_slice(&values[r * width..(r + 1) * width]);
                    }
                }
                out.keys.push(key);
            }
            first += example.columns.len();
        }
    }
    Ok(out)
}

/// `[n, width]` features scaled by the training split's mean and standard deviation.
fn standardize(train: &mut [f32], dev: &mut [f32], width: usize) {
    let n = (train.len() / width.max(1)).max(1) as f32;
    for j in 0..width {
        let mean = train.iter().skip(j).step_by(width).sum::<f32>() / n;
        let var = train
            .iter()
            .skip(j)
            .step_by(width)
            .map(|v| (v - mean).powi(2))
            .sum::<f32>()
            / n;
        let scale = 1.0 / var.sqrt().max(1e-6);
        for v in train
            .iter_mut()
            .skip(j)
            .step_by(width)
            .chain(dev.iter_mut().skip(j).step_by(width))
        {
            *v = (*v - mean) * scale;
        }
    }
}

/// FNV-1a of a table id, modulo `folds`: a table's targets share a fold.
fn fold_of(table: &str, folds: usize) -> usize {
    let hash = fnv1a(table.as_bytes());
    (hash % folds.max(1) as u64) as usize
}

/// The L2 penalty of [`ProbeConfig::l2`] whose probes, fitted on all folds but one, predict
/// the held-out fold's targets best (a prediction is right when it is one of the target's
/// labels); the first on ties.
fn choose_l2(
    x: &[f32],
    labels: &[Vec<usize>],
    folds: &[usize],
    width: usize,
    classes: usize,
    config: &ProbeConfig,
) -> f64 {
    if config.l2.len() < 2 || config.folds < 2 {
        return config.l2.first().copied().unwrap_or(0.0);
    }
    let mut best = (f64::NEG_INFINITY, config.l2[0]);
    for &l2 in &config.l2 {
        let mut right = 0;
        for fold in 0..config.folds {
            let (fit, held): (Vec<usize>, Vec<usize>) =
                (0..labels.len()).partition(|&i| folds[i] != fold);
            if fit.is_empty() || held.is_empty() {
                continue;
            }
            let rows = |idx: &[usize]| -> Vec<f32> {
                idx.iter()
                    .flat_map(|&i| x[i * width..(i + 1) * width].iter().copied())
                    .collect()
            };
            let fit_labels: Vec<Vec<usize>> = fit.iter().map(|&i| labels[i].clone()).collect();
            let predicted = fit_and_predict(
                &rows(&fit),
                &fit_labels,
                &rows(&held),
                width,
                classes,
                l2,
                config,
            );
            right += held
                .iter()
                .zip(predicted)
                .filter(|(i, p)| labels[**i].contains(p))
                .count();
        }
        let accuracy = right as f64 / labels.len().max(1) as f64;
        if accuracy > best.0 {
            best = (accuracy, l2);
        }
    }
    best.1
}

/// Trains a softmax regression with L2 penalty `l2` on `[n, width]` features against label sets
/// (uniform over each target's known labels) and returns the predicted label of each dev row.
fn fit_and_predict(
    train: &[f32],
    labels: &[Vec<usize>],
    dev: &[f32],
    width: usize,
    classes: usize,
    l2: f64,
    config: &ProbeConfig,
) -> Vec<usize> {
    let device = Device::flex().autodiff();
    let n = labels.len();
    let mut target = vec![0.0f32; n * classes];
    for (i, set) in labels.iter().enumerate() {
        for &c in set {
            target[i * classes + c] = 1.0 / set.len() as f32;
        }
    }
    let x = Tensor::<2>::from_data(TensorData::new(train.to_vec(), [n, width]), &device);
    let y = Tensor::<2>::from_data(TensorData::new(target, [n, classes]), &device);
    let mut probe: Linear = ParamFactory::new(config.seed, &device).linear(width, classes, true);
    let mut optim = AdamConfig::new().init();
    for _ in 0..config.steps {
        let logp = log_softmax(probe.forward(x.clone()), 1);
        let weights = probe.weight.val();
        let loss =
            (logp * y.clone()).sum().neg() / n as f64 + (weights.clone() * weights).sum() * l2;
        let grads = GradientsParams::from_grads(loss.backward(), &probe);
        probe = optim.step(config.learning_rate, probe, grads);
    }
    let probe = probe.valid();
    let rows = dev.len() / width.max(1);
    let x = Tensor::<2>::from_data(
        TensorData::new(dev.to_vec(), [rows, width]),
        &Device::flex(),
    );
    let scores: Vec<f32> = probe
        .forward(x)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap_or_default();
    scores.chunks(classes).map(argmax).collect()
}

/// Probes every dev set that has a training set of the same namespace: the primary's column
/// representations, each specialist's column readings, and the primary's beside each
/// specialist's.
pub fn probe(
    model: &Model,
    specialists: &[FrozenSpecialist],
    train: &[(DataSpec, LoadedData)],
    dev: &[(DataSpec, LoadedData)],
    config: &ProbeConfig,
) -> Result<Vec<ProbeReport>, TrainError> {
    let mut reports = Vec::new();
    for (dev_spec, dev_data) in dev {
        let Some((_, train_data)) = train
            .iter()
            .find(|(s, _)| s.namespace == dev_spec.namespace)
        else {
            return Err(TrainError::Config(format!(
                "dev set `{}` has no training set of the same name to fit its probes on",
                dev_spec.namespace
            )));
        };
        let task = default_task(dev_spec.format, &dev_data.tables);
        let namespace: &Namespace =
            pick_namespace(model, task, dev_spec.format, Some(&dev_spec.namespace))?;
        let read = |tables| targets(model, specialists, tables, task, config.batch_size);
        let (fit, held) = (read(&train_data.tables)?, read(&dev_data.tables)?);
        let known = known_targets(&fit, namespace);
        let labels: Vec<Vec<usize>> = known.iter().map(|(_, s)| s.clone()).collect();
        let mut feature_sets: Vec<(String, Vec<usize>)> = vec![("primary".into(), vec![0])];
        for (i, s) in specialists.iter().enumerate() {
            feature_sets.push((s.name().to_string(), vec![i + 1]));
        }
        for (i, s) in specialists.iter().enumerate() {
            feature_sets.push((format!("primary+{}", s.name()), vec![0, i + 1]));
        }
        let mut report = ProbeReport {
            namespace: dev_spec.namespace.clone(),
            task,
            train_targets: labels.len(),
            dev_targets: held.keys.len(),
            scores: Vec::new(),
            predictions: Vec::new(),
        };
        let folds: Vec<usize> = known
            .iter()
            .map(|(i, _)| fold_of(&fit.keys[*i].0, config.folds))
            .collect();
        for (name, systems) in feature_sets {
            let (mut x_fit, mut x_dev, width) = concat(&fit, &held, &systems, &known);
            standardize(&mut x_fit, &mut x_dev, width);
            let classes = namespace.labels.len();
            let l2 = choose_l2(&x_fit, &labels, &folds, width, classes, config);
            let predicted = fit_and_predict(&x_fit, &labels, &x_dev, width, classes, l2, config);
            let predictions = held_predictions(&held, predicted, namespace);
            let f1 = score_predictions(&predictions, namespace);
            report.scores.push(ProbeScore {
                features: name.clone(),
                width,
                l2,
                micro_f1: f1.micro_f1,
                macro_f1: f1.macro_f1,
            });
            report.predictions.push((name, predictions));
        }
        reports.push(report);
    }
    Ok(reports)
}

/// The training targets with a label the namespace knows (the others teach nothing): each
/// one's row in `fit` and its labels' places in the namespace.
fn known_targets(fit: &Targets, namespace: &Namespace) -> Vec<(usize, Vec<usize>)> {
    let index: HashMap<&str, usize> = namespace
        .labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), i))
        .collect();
    fit.keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let known = k.3.iter().filter_map(|l| index.get(l.as_str()).copied());
            (i, known.collect::<Vec<_>>())
        })
        .filter(|(_, set)| !set.is_empty())
        .collect()
}

/// The dev targets with the probe's answers (label places in `namespace`).
fn held_predictions(
    held: &Targets,
    predicted: Vec<usize>,
    namespace: &Namespace,
) -> Vec<TargetPrediction> {
    held.keys
        .iter()
        .zip(predicted)
        .map(|((table, subject, column, gold), p)| TargetPrediction {
            table: table.clone(),
            subject: *subject,
            column: *column,
            gold: gold.clone(),
            predicted: vec![namespace.labels[p].clone()],
            ..TargetPrediction::default()
        })
        .collect()
}

/// The chosen systems' features side by side, for the known training rows and every dev row.
fn concat(
    fit: &Targets,
    held: &Targets,
    systems: &[usize],
    known: &[(usize, Vec<usize>)],
) -> (Vec<f32>, Vec<f32>, usize) {
    let width: usize = systems.iter().map(|&s| fit.features[s].1).sum();
    let row = |t: &Targets, i: usize| -> Vec<f32> {
        systems
            .iter()
            .flat_map(|&s| {
                let (values, w) = &t.features[s];
                values[i * w..(i + 1) * w].to_vec()
            })
            .collect()
    };
    let x_fit = known.iter().flat_map(|(i, _)| row(fit, *i)).collect();
    let x_dev = (0..held.keys.len()).flat_map(|i| row(held, i)).collect();
    (x_fit, x_dev, width)
}

/// The index of the largest value (the first on ties; 0 for none).
pub(crate) fn argmax<T: Copy + Into<f64>>(values: &[T]) -> usize {
    values
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (i, &x)| {
            let x = x.into();
            if x > best.1 { (i, x) } else { best }
        })
        .0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardize_uses_the_training_statistics() {
        let mut train = vec![1.0, 10.0, 3.0, 30.0];
        let mut dev = vec![2.0, 20.0];
        standardize(&mut train, &mut dev, 2);
        assert!((train[0] + 1.0).abs() < 1e-5 && (train[2] - 1.0).abs() < 1e-5);
        assert!(dev[0].abs() < 1e-5 && dev[1].abs() < 1e-5);
    }

    #[test]
    fn a_probe_learns_separable_classes_and_not_noise() {
        // Class = sign of feature 0; feature 1 is noise.
        let xs: Vec<f32> = (0..200)
            .flat_map(|i| {
                [
                    if i % 2 == 0 { 1.0 } else { -1.0 },
                    ((i * 37) % 11) as f32 - 5.0,
                ]
            })
            .collect();
        let labels: Vec<Vec<usize>> = (0..200).map(|i| vec![i % 2]).collect();
        let predicted = fit_and_predict(&xs, &labels, &xs, 2, 2, 1e-4, &ProbeConfig::default());
        let right = predicted
            .iter()
            .zip(&labels)
            .filter(|(p, l)| **p == l[0])
            .count();
        assert_eq!(right, 200);
        // With only the noise feature it cannot do much better than chance.
        let noise: Vec<f32> = xs.chunks(2).map(|r| r[1]).collect();
        let predicted =
            fit_and_predict(&noise, &labels, &noise, 1, 2, 1e-4, &ProbeConfig::default());
        let right = predicted
            .iter()
            .zip(&labels)
            .filter(|(p, l)| **p == l[0])
            .count();
        assert!(right < 140, "{right}");
    }
}
