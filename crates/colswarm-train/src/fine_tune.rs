//! Fine-tuning: a new CTA namespace with a user's own labels on a frozen, trained model.
//!
//! The model reads the labelled tables once; each labelled column's features are its column
//! representation beside the model's own CTA logits ([`colswarm_model::added_features`]), so
//! the new labels build on every type the shipped namespaces know. A head is fitted on them
//! ([`AddedHead`]; full-batch Adam, L2 on the weights). A held-out slice of the user's tables
//! (a fifth, by a hash of the table's name) chooses the L2 penalty and the number of steps
//! (early stopping on its log-loss) and the namespace's abstention threshold; the head is then
//! refitted on every labelled column with those settings.
//!
//! The new model directory is the old one plus `namespaces/NAME.safetensors` and the namespace
//! in `labels.json`: every shipped namespace's output is unchanged, bit for bit. It is written
//! in `OUT.partial/` and renamed when complete; the features extracted there are reused when an
//! interrupted run is started again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::{log_sigmoid, log_softmax, sigmoid, softmax};
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_eval::{TargetPrediction, ThresholdRule, abstention_curve, choose_threshold};
use colswarm_model::{
    Activation, AddedHead, AddedHeadConfig, Columns, DatasetFormat, Example, HeadFile, LABELS_FILE,
    Model, Namespace, Progress, Task, copy_model_dir, rows_of,
};
use colswarm_rwkv::checkpoint::{save_module, write_atomically};
use colswarm_swarm::LabelKind;
use colswarm_swarm::manifest::sha256_file;
use colswarm_tables::{Table, fnv1a};
use serde::{Deserialize, Serialize};

use crate::error::TrainError;

/// How [`fine_tune`] fits the new namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FineTuneConfig {
    /// The new namespace's name (not one the model has).
    pub namespace: String,
    /// Seed of the head's initial weights.
    pub seed: u64,
    /// Candidate L2 penalties on the head's weights; the held-out slice picks one.
    pub l2: Vec<f64>,
    /// Most full-batch Adam steps; the held-out slice picks how many.
    pub max_steps: usize,
    /// Held-out log-loss is read every this many steps.
    pub eval_every: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// Tables per forward pass while extracting features.
    pub batch_size: usize,
    /// Choose an abstention threshold on the held-out slice.
    pub abstain: bool,
    /// Labels with fewer labelled columns than this are reported as too rare.
    pub min_examples: usize,
    /// Print progress on stderr.
    pub progress: bool,
}

impl FineTuneConfig {
    /// The defaults for a namespace `name` (chosen on GitTables' schema.org labels; see the
    /// fine-tuning guide).
    pub fn new(name: impl Into<String>) -> Self {
        FineTuneConfig {
            namespace: name.into(),
            seed: 0,
            l2: vec![0.01, 0.03, 0.1, 0.3, 1.0],
            max_steps: 300,
            eval_every: 10,
            learning_rate: 0.05,
            batch_size: 16,
            abstain: true,
            min_examples: 5,
            progress: false,
        }
    }
}

/// What [`fine_tune`] did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FineTuneReport {
    /// The namespace added.
    pub namespace: String,
    /// Its labels, in head order.
    pub labels: Vec<String>,
    /// Single- or multi-label (any column with several labels makes it multi-label).
    pub multi_label: bool,
    /// Tables read.
    pub tables: usize,
    /// Labelled columns fitted.
    pub columns: usize,
    /// Labelled columns the model does not read (past its column limit), left out.
    pub columns_skipped: usize,
    /// Labelled columns in the held-out slice (0: too few labels to hold any out).
    pub held_out_columns: usize,
    /// The L2 penalty chosen.
    pub l2: f64,
    /// The Adam steps chosen.
    pub steps: usize,
    /// Micro-F1 on the held-out slice, of the head fitted without it (`None` without one).
    pub held_out_micro_f1: Option<f64>,
    /// The abstention threshold stored (`None`: never abstains).
    pub abstain_below: Option<f32>,
    /// Labels with fewer than [`FineTuneConfig::min_examples`] columns, with their counts.
    pub rare_labels: Vec<(String, usize)>,
    /// Whether the features came from an interrupted run's cache.
    pub resumed: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// One labelled column's features and labels (positions in the label list).
struct Targets {
    features: Vec<f32>,
    width: usize,
    labels: Vec<Vec<usize>>,
    tables: Vec<String>,
    skipped: usize,
}

/// Adds the namespace [`FineTuneConfig::namespace`] to the model in `model_dir`, fitted on the
/// labelled columns of `tables` (from [`colswarm_tables::read_labelled_tables`]), and writes
/// the new model directory to `out`.
///
/// # Errors
/// A namespace the model already has, fewer than two labels, an `out` that exists and is not
/// empty; the model's and the file system's errors, naming the file.
pub fn fine_tune(
    model_dir: &Path,
    tables: &[Table],
    out: &Path,
    config: &FineTuneConfig,
) -> Result<FineTuneReport, TrainError> {
    let started = Instant::now();
    let device = Device::flex();
    let model = Model::load(model_dir, &device)?;
    check_name(&model, &config.namespace)?;
    if out.exists()
        && std::fs::read_dir(out)
            .map_err(|e| io(out, e))?
            .next()
            .is_some()
    {
        return Err(TrainError::Config(format!(
            "{} exists and is not empty; give a new --out",
            out.display()
        )));
    }
    let labels: Vec<String> = tables
        .iter()
        .flat_map(|t| &t.columns)
        .flat_map(|c| c.labels.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if labels.len() < 2 {
        return Err(TrainError::Config(format!(
            "fine-tuning needs at least two labels; the labels file gives {}",
            labels.len()
        )));
    }
    let multi_label = tables
        .iter()
        .flat_map(|t| &t.columns)
        .any(|c| c.labels.len() > 1);

    let staging = partial_dir(out);
    std::fs::create_dir_all(&staging).map_err(|e| io(&staging, e))?;
    let key = features_key(model_dir, tables, &labels)?;
    let (targets, resumed) = match load_features(&staging, &key) {
        Some(targets) => (targets, true),
        None => {
            let targets = extract(&model, tables, &labels, config)?;
            save_features(&staging, &key, &targets)?;
            (targets, false)
        }
    };
    let n = targets.labels.len();
    let mut counts = vec![0usize; labels.len()];
    for set in &targets.labels {
        for &l in set {
            counts[l] += 1;
        }
    }
    let rare_labels = labels
        .iter()
        .zip(&counts)
        .filter(|&(_, &c)| c < config.min_examples)
        .map(|(l, &c)| (l.clone(), c))
        .collect();

    let (shift, scale) = standardisation(&targets.features, targets.width);
    let x: Vec<f32> = standardise(&targets.features, &shift, &scale);
    let data = Fit {
        width: targets.width,
        classes: labels.len(),
        multi_label,
    };
    // The held-out slice: a fifth of the tables by name (or of the columns, with one table).
    let mut held: Vec<bool> = targets
        .tables
        .iter()
        .map(|t| fnv1a(t.as_bytes()).is_multiple_of(5))
        .collect();
    // Held-out columns: at least two, and at most two in five (few tables hash unevenly).
    let split_ok = |held: &[bool]| {
        let k = held.iter().filter(|&&h| h).count();
        k >= 2 && 5 * k <= 2 * n
    };
    if !split_ok(&held) {
        held = (0..n).map(|i| i % 5 == 4).collect();
    }
    let (l2, steps, held_out_micro_f1, abstain_below, held_out_columns) =
        if n >= 10 && split_ok(&held) {
            let choice = choose_settings(&x, &targets.labels, &held, &data, config);
            let abstain = if config.abstain {
                abstention_threshold(
                    &choice.held_probs,
                    &targets.labels,
                    &held,
                    &labels,
                    multi_label,
                )
            } else {
                None
            };
            let k = held.iter().filter(|&&h| h).count();
            (choice.l2, choice.steps, Some(choice.micro_f1), abstain, k)
        } else {
            (
                config.l2[config.l2.len() / 2],
                config.max_steps,
                None,
                None,
                0,
            )
        };

    let mut fitting = Progress::new("fitting", steps, config.progress);
    let head = fit(&x, &targets.labels, &data, l2, steps, config, |step| {
        fitting.set(step, "");
    });
    fitting.finish(&format!("l2 {l2}, {steps} steps"));
    let head = head.with_standardisation(&shift, &scale);

    copy_model_dir(model_dir, &staging)?;
    let relative = format!("namespaces/{}.safetensors", config.namespace);
    let head_path = staging.join(&relative);
    let parent = head_path.parent().unwrap_or(&staging).to_path_buf();
    std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
    save_module(&head, HashMap::new(), &head_path)?;
    let mut space = model.space.clone();
    space.push(
        Task::Cta,
        &config.namespace,
        DatasetFormat::Labels,
        if multi_label {
            LabelKind::MultiLabel
        } else {
            LabelKind::SingleLabel
        },
        labels.clone(),
    );
    if let Some(namespace) = space.cta.last_mut() {
        namespace.activation = if multi_label {
            Activation::Sigmoid
        } else {
            Activation::Softmax
        };
        namespace.abstain_below = abstain_below;
        namespace.head = Some(HeadFile {
            path: relative,
            sha256: sha256_file(&head_path)?,
        });
    }
    space.save(&staging.join(LABELS_FILE))?;
    let report = FineTuneReport {
        namespace: config.namespace.clone(),
        labels,
        multi_label,
        tables: tables.len(),
        columns: n,
        columns_skipped: targets.skipped,
        held_out_columns,
        l2,
        steps,
        held_out_micro_f1,
        abstain_below,
        rare_labels,
        resumed,
        seconds: started.elapsed().as_secs_f64(),
    };
    let report_path = staging.join(format!("namespaces/{}.json", config.namespace));
    let json = serde_json::to_vec_pretty(&report).map_err(|e| TrainError::Config(e.to_string()))?;
    write_atomically(&report_path, &json)?;
    for cache in [FEATURES_FILE, FEATURES_KEY_FILE] {
        let _ = std::fs::remove_file(staging.join(cache));
    }
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| io(out, e))?;
    }
    std::fs::rename(&staging, out).map_err(|e| io(out, e))?;
    Ok(report)
}

fn io(path: &Path, source: std::io::Error) -> TrainError {
    TrainError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where a run to `out` is written before it is complete.
pub fn partial_dir(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    out.with_file_name(format!("{name}.partial"))
}

fn check_name(model: &Model, name: &str) -> Result<(), TrainError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(TrainError::Config(format!(
            "namespace `{name}`: use letters, digits, `-` and `_`"
        )));
    }
    let (cta, cpa) = model.space.positions(name);
    if cta.is_some() || cpa.is_some() {
        let names: Vec<&str> = model
            .space
            .cta
            .iter()
            .chain(&model.space.cpa)
            .map(|n| n.name.as_str())
            .collect();
        return Err(TrainError::Config(format!(
            "the model already has a namespace `{name}` (it has {}); pick another --namespace",
            names.join(", ")
        )));
    }
    Ok(())
}

/// Every labelled column's features, the model reading alone.
fn extract(
    model: &Model,
    tables: &[Table],
    labels: &[String],
    config: &FineTuneConfig,
) -> Result<Targets, TrainError> {
    let index: HashMap<&str, usize> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), i))
        .collect();
    let mut targets = Targets {
        features: Vec::new(),
        width: 0,
        labels: Vec::new(),
        tables: Vec::new(),
        skipped: 0,
    };
    let mut progress = Progress::new("features", tables.len(), config.progress);
    let mut done = 0;
    for chunk in tables.chunks(config.batch_size.max(1)) {
        let examples: Vec<Example> = model.encode(chunk, Columns::All);
        let refs: Vec<&Example> = examples.iter().collect();
        let rows = rows_of(model.column_features(&refs)?);
        let mut row = 0;
        for (table, example) in chunk.iter().zip(&examples) {
            let read: BTreeSet<usize> = example.columns.iter().copied().collect();
            targets.skipped += table
                .columns
                .iter()
                .enumerate()
                .filter(|(c, column)| !column.labels.is_empty() && !read.contains(c))
                .count();
            for &c in &example.columns {
                let features = &rows[row];
                row += 1;
                let column = &table.columns[c];
                if column.labels.is_empty() {
                    continue;
                }
                targets.width = features.len();
                targets.features.extend_from_slice(features);
                targets
                    .labels
                    .push(column.labels.iter().map(|l| index[l.as_str()]).collect());
                targets.tables.push(table.id.clone());
            }
        }
        done += chunk.len();
        progress.set(done, "tables");
    }
    progress.finish(&format!("{} labelled columns", targets.labels.len()));
    if targets.labels.is_empty() {
        return Err(TrainError::Config(
            "no labelled column is among the columns the model reads".into(),
        ));
    }
    Ok(targets)
}

const FEATURES_FILE: &str = "features.f32";
const FEATURES_KEY_FILE: &str = "features.json";

#[derive(Serialize, Deserialize, PartialEq)]
struct FeaturesKey {
    /// Hash of the model's files and the labelled tables.
    key: String,
    width: usize,
    labels: Vec<Vec<usize>>,
    tables: Vec<String>,
    skipped: usize,
}

/// What the cached features were extracted from: the model (its manifest and label space,
/// which name every weight file's checksum) and every table's id, cells and labels.
fn features_key(
    model_dir: &Path,
    tables: &[Table],
    labels: &[String],
) -> Result<String, TrainError> {
    let mut bytes = Vec::new();
    for file in ["swarm.json", LABELS_FILE, "experts.json", "serialize.json"] {
        if let Ok(content) = std::fs::read(model_dir.join(file)) {
            bytes.extend(content);
        }
    }
    for table in tables {
        bytes.extend(table.id.as_bytes());
        for column in &table.columns {
            bytes.extend(column.header.as_deref().unwrap_or("\u{1}").as_bytes());
            for cell in &column.cells {
                bytes.extend(cell.text().as_bytes());
                bytes.push(0);
            }
            for label in &column.labels {
                bytes.extend(label.as_bytes());
                bytes.push(1);
            }
        }
    }
    bytes.extend(labels.join("\u{2}").as_bytes());
    Ok(format!("{:016x}-{}", fnv1a(&bytes), bytes.len()))
}

fn save_features(staging: &Path, key: &str, targets: &Targets) -> Result<(), TrainError> {
    let bytes: Vec<u8> = targets
        .features
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write_atomically(&staging.join(FEATURES_FILE), &bytes)?;
    let meta = FeaturesKey {
        key: key.to_string(),
        width: targets.width,
        labels: targets.labels.clone(),
        tables: targets.tables.clone(),
        skipped: targets.skipped,
    };
    let json = serde_json::to_vec(&meta).map_err(|e| TrainError::Config(e.to_string()))?;
    write_atomically(&staging.join(FEATURES_KEY_FILE), &json)?;
    Ok(())
}

fn load_features(staging: &Path, key: &str) -> Option<Targets> {
    let meta: FeaturesKey =
        serde_json::from_slice(&std::fs::read(staging.join(FEATURES_KEY_FILE)).ok()?).ok()?;
    let bytes = std::fs::read(staging.join(FEATURES_FILE)).ok()?;
    if meta.key != key || bytes.len() != 4 * meta.width * meta.labels.len() {
        return None;
    }
    let features = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Some(Targets {
        features,
        width: meta.width,
        labels: meta.labels,
        tables: meta.tables,
        skipped: meta.skipped,
    })
}

/// Per feature: the mean, and one over the deviation (0 for a constant feature).
fn standardisation(features: &[f32], width: usize) -> (Vec<f32>, Vec<f32>) {
    let n = (features.len() / width.max(1)).max(1) as f64;
    let mut mean = vec![0f64; width];
    for row in features.chunks(width) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += f64::from(v);
        }
    }
    mean.iter_mut().for_each(|m| *m /= n);
    let mut var = vec![0f64; width];
    for row in features.chunks(width) {
        for ((s, &v), m) in var.iter_mut().zip(row).zip(&mean) {
            *s += (f64::from(v) - m).powi(2);
        }
    }
    let scale = var
        .iter()
        .map(|s| {
            let sd = (s / n).sqrt();
            if sd > 1e-6 { (1.0 / sd) as f32 } else { 0.0 }
        })
        .collect();
    (mean.iter().map(|&m| m as f32).collect(), scale)
}

fn standardise(features: &[f32], shift: &[f32], scale: &[f32]) -> Vec<f32> {
    features
        .chunks(shift.len().max(1))
        .flat_map(|row| {
            row.iter()
                .zip(shift)
                .zip(scale)
                .map(|((v, s), k)| (v - s) * k)
        })
        .collect()
}

/// The shape of a fit.
struct Fit {
    width: usize,
    classes: usize,
    multi_label: bool,
}

fn tensor(values: &[f32], rows: usize, width: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values.to_vec(), [rows, width]), device)
}

/// Targets as a `[n, classes]` matrix: uniform over a column's labels (softmax), or 0/1
/// (sigmoids).
fn target_matrix(labels: &[Vec<usize>], fit: &Fit) -> Vec<f32> {
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
/// step done, and `eval` (when given) the head every [`FineTuneConfig::eval_every`] steps.
fn fit_with(
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

fn fit(
    x: &[f32],
    labels: &[Vec<usize>],
    data: &Fit,
    l2: f64,
    steps: usize,
    config: &FineTuneConfig,
    mut on_step: impl FnMut(usize),
) -> AddedHead {
    fit_with(x, labels, data, l2, steps, config, |step, _| on_step(step))
}

/// Probabilities of standardised features under a head (without autodiff).
fn probabilities(head: &AddedHead, x: &[f32], rows: usize, data: &Fit) -> Vec<Vec<f32>> {
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
fn predicted(probs: &[f32], multi_label: bool) -> Vec<usize> {
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
fn micro_f1(probs: &[Vec<f32>], gold: &[&Vec<usize>], multi_label: bool) -> f64 {
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
fn log_loss(probs: &[Vec<f32>], gold: &[&Vec<usize>], multi_label: bool) -> f64 {
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
struct Choice {
    l2: f64,
    steps: usize,
    micro_f1: f64,
    /// The chosen head's held-out probabilities, in held-out row order.
    held_probs: Vec<Vec<f32>>,
}

/// The L2 penalty and step count with the lowest held-out log-loss, for heads fitted on the
/// rest of the labelled columns.
fn choose_settings(
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
        fit_with(
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
fn abstention_threshold(
    held_probs: &[Vec<f32>],
    labels: &[Vec<usize>],
    held: &[bool],
    names: &[String],
    multi_label: bool,
) -> Option<f32> {
    let gold = labels.iter().zip(held).filter(|(_, h)| **h).map(|(g, _)| g);
    let targets: Vec<TargetPrediction> = held_probs
        .iter()
        .zip(gold)
        .enumerate()
        .map(|(i, (probs, gold))| TargetPrediction {
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
    let namespace = Namespace {
        name: "held-out".into(),
        format: DatasetFormat::Labels,
        kind: if multi_label {
            LabelKind::MultiLabel
        } else {
            LabelKind::SingleLabel
        },
        offset: 0,
        labels: names.to_vec(),
        activation: Activation::Softmax,
        ancestors: Vec::new(),
        abstain_below: None,
        label_name_weight: None,
        label_name_skip_subject: false,
        head: None,
    };
    let curve = abstention_curve(&targets, &namespace);
    choose_threshold(&curve, ThresholdRule::BestF1)
        .map(|p| p.threshold)
        .filter(|&t| t > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardised_features_have_zero_mean_and_unit_deviation() {
        let features = [1.0, 5.0, 3.0, 5.0, 5.0, 5.0];
        let (shift, scale) = standardisation(&features, 2);
        assert_eq!(shift, [3.0, 5.0]);
        assert!((scale[0] - 1.0 / (8.0f32 / 3.0).sqrt()).abs() < 1e-6);
        assert_eq!(scale[1], 0.0, "a constant feature is switched off");
        let z = standardise(&features, &shift, &scale);
        let mean: f32 = z.iter().step_by(2).sum::<f32>() / 3.0;
        assert!(mean.abs() < 1e-6);
    }

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
        let head = fit(&x, &labels, &data, 1e-3, 100, &config, |_| {});
        let probs = probabilities(&head, &x, 40, &data);
        let gold: Vec<&Vec<usize>> = labels.iter().collect();
        assert_eq!(micro_f1(&probs, &gold, false), 1.0);
        let again = fit(&x, &labels, &data, 1e-3, 100, &config, |_| {});
        assert_eq!(
            probabilities(&again, &x, 40, &data),
            probs,
            "the same seed fits the same head"
        );
    }
}
