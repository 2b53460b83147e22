//! The supervised stage: a primary (with its CTA/CPA heads, alignments and fusion) trained on
//! labelled tables with Adam, frozen specialists (if any) read in beside it.
//!
//! A specialist is trained by this same stage with no specialists of its own; its primary is
//! then the specialist checkpoint.
//!
//! - **Epochs** visit the training examples in an order drawn from `(seed, epoch)`; the router's
//!   Bernoulli masks are drawn from `(seed, step)`, column-dropout masks (if any) from `(seed,
//!   step, table's place in the batch)`. Nothing else is random, so a run resumed
//!   from a checkpoint takes exactly the steps the uninterrupted run would have taken.
//! - **Dev evaluation** after every epoch (mean micro-F1 over the dev sets), **early stopping**
//!   after `patience` epochs without improvement, the best model in `best/`.
//! - **Checkpoints** every `checkpoint_every` steps and at every epoch end, written atomically;
//!   parameters get deterministic ids ([`crate::param_ids`]) so Adam's state is restored too.
//! - **Non-finite losses** stop the run with an error naming the step (the last checkpoint is
//!   untouched), or skip the batch and log it.
//! - **Data parallelism** ([`TrainOptions::devices`]): each batch is split into contiguous shards
//!   computed concurrently on replicas of the orchestrator ([`crate::data_parallel`]); the loss of
//!   a shard is its part of the batch's loss ([`shard_loss`]) and its router masks are the ones
//!   the undivided batch would draw, so the step is the one-device step up to float rounding.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use burn::module::Module;
use burn::optim::{AdamConfig, AdamWConfig, ModuleOptimizer};
use burn::tensor::activation::{log_sigmoid, log_softmax};
use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm_rwkv::RwkvConfig;
use colswarm_swarm::{
    ColumnNgramsConfig, FrozenSpecialist, FusionMode, HeadSkip, LabelKind, Orchestrator,
    OrchestratorConfig, Routing, StateShape, Swarm, SwarmOutput,
};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::data_parallel::{Shard, data_parallel_grads, non_finite_gradients, shard_ranges};
use crate::dataset::{DataSpec, LoadedData};
use crate::error::TrainError;
use crate::eval::{EvalOptions, EvalReport, default_task, evaluate};
use crate::param_ids::renumber;
use crate::run_dir::{RunDir, RunState};
use colswarm_model::{Activation, LabelSpace, Namespace, Task};
use colswarm_model::{Columns, Example, encode, ngram_config, to_batch};
use colswarm_model::{Model, SerializeSettings, SpecialistUse, save_model_extras};
use colswarm_model::{Progress, format_duration};

/// A frozen specialist to read tables beside the primary: `NAME=PATH`, where `PATH` is an RWKV
/// checkpoint or a model directory (its primary is used).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecialistSpec {
    /// Name used in reports and annotations.
    pub name: String,
    /// Checkpoint file or model directory.
    pub path: PathBuf,
}

impl FromStr for SpecialistSpec {
    type Err = TrainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('=') {
            Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok(SpecialistSpec {
                name: name.to_string(),
                path: PathBuf::from(path),
            }),
            _ => Err(TrainError::Config(format!(
                "specialist `{s}`: expected NAME=PATH (a checkpoint or a model directory)"
            ))),
        }
    }
}

impl SpecialistSpec {
    /// Loads the specialist (its weights on `device` without autodiff).
    pub fn load(&self, device: &Device) -> Result<FrozenSpecialist, TrainError> {
        let file = if self.path.is_dir() {
            self.path.join("primary.safetensors")
        } else {
            self.path.clone()
        };
        let loaded = FrozenSpecialist::load(&self.name, &file, device)?;
        // Dropping the source path makes saved models carry a copy: they stay self-contained.
        Ok(FrozenSpecialist::from_model(
            &self.name,
            loaded.model().clone(),
            loaded.config().clone(),
        ))
    }
}

/// What to do when a batch's loss is NaN or infinite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NonFinitePolicy {
    /// Stop with [`TrainError::NonFinite`] (the last checkpoint stays).
    #[default]
    Stop,
    /// Skip the batch (no update) and log it.
    Skip,
}

/// The learning rate over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LrDecay {
    /// The same rate at every step.
    #[default]
    Constant,
    /// From the rate at the first step down to zero after the last step of the last epoch.
    Linear,
}

/// Everything a supervised run depends on (stored as `run.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Training sets.
    pub train: Vec<DataSpec>,
    /// Dev sets (their namespaces must be among the training sets').
    pub dev: Vec<DataSpec>,
    /// Width of the primary.
    pub d_model: usize,
    /// Layers of the primary.
    pub n_layers: usize,
    /// Head size of the primary (d_model must be a multiple).
    pub head_size: usize,
    /// Frozen specialists.
    pub specialists: Vec<SpecialistSpec>,
    /// Fusion rule.
    pub fusion: FusionMode,
    /// Hidden width of the heads.
    pub d_head_hidden: usize,
    /// Hash buckets of the column n-gram embedding ([`ColumnNgramsConfig`]); 0 reads no
    /// n-grams. Absent (0) in run directories written before the option existed.
    #[serde(default)]
    pub ngram_buckets: u32,
    /// Give the heads a linear skip beside their tanh layer ([`OrchestratorConfig::head_skip`]).
    #[serde(default)]
    pub head_skip: bool,
    /// Train multi-label namespaces with one sigmoid per label and binary cross-entropy
    /// ([`Activation::Sigmoid`]) instead of a softmax. Absent (false) in run directories
    /// written before the option existed.
    #[serde(default)]
    pub sigmoid_multi_label: bool,
    /// Start from this model directory's weights instead of random ones (same primary, heads
    /// and label space; an n-gram embedding it lacks starts at zero). `None`: random.
    #[serde(default)]
    pub init_from: Option<PathBuf>,
    /// Serialization budgets.
    pub serialize: SerializeSettings,
    /// Most epochs.
    pub epochs: usize,
    /// Tables per optimizer step.
    pub batch_size: usize,
    /// Adam's learning rate (the peak, with [`LrDecay::Linear`]).
    pub learning_rate: f64,
    /// How the learning rate changes over the run. Absent (constant) in run directories
    /// written before the option existed.
    #[serde(default)]
    pub lr_decay: LrDecay,
    /// Per-parameter gradient norm clip.
    pub grad_clip: Option<f32>,
    /// Decoupled weight decay (AdamW) per step, times the learning rate; 0 (and run
    /// directories written before the option existed) is plain Adam.
    #[serde(default)]
    pub weight_decay: f32,
    /// Dropout on the column representations the heads read, during training only: each
    /// element is zeroed with this probability and the rest scaled by `1/(1-p)`. The masks
    /// derive from the seed, the step and the table's place in its batch, so a resumed or
    /// data-parallel run draws the same ones. 0 (and older run directories): none.
    #[serde(default)]
    pub column_dropout: f32,
    /// Epochs without dev improvement before stopping.
    pub patience: usize,
    /// Checkpoints kept (besides `best/`).
    pub keep_last: usize,
    /// Steps between checkpoints (0: only at epoch ends).
    pub checkpoint_every: usize,
    /// Steps between log lines.
    pub log_every: usize,
    /// At most this many training tables per set (0: all), for quick runs.
    pub max_tables: usize,
    /// Weight of the CPA loss.
    pub cpa_weight: f64,
    /// Every random choice derives from it.
    pub seed: u64,
    /// NaN/inf handling.
    pub on_non_finite: NonFinitePolicy,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            train: Vec::new(),
            dev: Vec::new(),
            d_model: 128,
            n_layers: 2,
            head_size: 32,
            specialists: Vec::new(),
            fusion: FusionMode::WeightedSum,
            d_head_hidden: 128,
            ngram_buckets: 1 << 14,
            head_skip: false,
            sigmoid_multi_label: false,
            init_from: None,
            serialize: SerializeSettings::default(),
            epochs: 10,
            batch_size: 8,
            learning_rate: 2e-3,
            lr_decay: LrDecay::Constant,
            grad_clip: Some(1.0),
            weight_decay: 0.0,
            column_dropout: 0.0,
            patience: 3,
            keep_last: 2,
            checkpoint_every: 0,
            log_every: 10,
            max_tables: 0,
            cpa_weight: 1.0,
            seed: 0,
            on_non_finite: NonFinitePolicy::Stop,
        }
    }
}

impl TrainConfig {
    /// The primary's configuration.
    pub fn primary(&self) -> RwkvConfig {
        RwkvConfig::new(colswarm_tables::VOCAB_SIZE, self.d_model, self.n_layers)
            .with_head_size(self.head_size)
    }

    /// Checks what can be checked before reading data.
    pub fn validate(&self) -> Result<(), TrainError> {
        let fail = |m: String| Err(TrainError::Config(m));
        if self.train.is_empty() {
            return fail("no training set (--train NAME=FORMAT:PATH)".into());
        }
        if self.batch_size == 0 || self.epochs == 0 {
            return fail("batch size and epochs must be at least 1".into());
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return fail(format!(
                "learning rate {} is not positive",
                self.learning_rate
            ));
        }
        // 2^24 buckets of d_model 128 is 8 GiB of weights: anything larger is a typo.
        if self.ngram_buckets > 1 << 24 {
            return fail(format!(
                "{} n-gram buckets: at most 2^24 = 16777216",
                self.ngram_buckets
            ));
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return fail(format!(
                "weight decay {} is not a finite number ≥ 0",
                self.weight_decay
            ));
        }
        if !(0.0..1.0).contains(&self.column_dropout) {
            return fail(format!(
                "column dropout {} is not a probability in [0, 1)",
                self.column_dropout
            ));
        }
        self.primary()
            .validate()
            .map_err(|e| TrainError::Config(e.to_string()))?;
        for dev in &self.dev {
            if !self.train.iter().any(|t| t.namespace == dev.namespace) {
                return fail(format!(
                    "dev set `{}` has no training set of the same name",
                    dev.namespace
                ));
            }
        }
        Ok(())
    }

    /// The learning rate of optimizer step `step` (counted from 0) of a run of
    /// `steps_per_epoch` steps per epoch. A resumed run with more epochs decays more slowly
    /// from the step it resumes at.
    pub fn learning_rate_at(&self, step: usize, steps_per_epoch: usize) -> f64 {
        match self.lr_decay {
            LrDecay::Constant => self.learning_rate,
            LrDecay::Linear => {
                let total = (self.epochs * steps_per_epoch).max(1) as f64;
                self.learning_rate * (1.0 - step as f64 / total).max(0.0)
            }
        }
    }

    /// Whether a run directory written with `other` can be resumed under `self` (only the
    /// stopping rules may change).
    pub fn resumable_from(&self, other: &TrainConfig) -> bool {
        let strip = |c: &TrainConfig| TrainConfig {
            epochs: 0,
            patience: 0,
            ..c.clone()
        };
        strip(self) == strip(other)
    }
}

/// Switches that do not change the result (`devices` changes it in the last bits only).
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// Print progress lines.
    pub progress: bool,
    /// Stop (as if killed) after this many optimizer steps in this process, for tests.
    pub stop_after_steps: Option<usize>,
    /// Devices to train on, one replica of the orchestrator each: every batch is split into
    /// contiguous shards of near-equal size, one per device, computed concurrently, and their
    /// gradients are summed on the first device, which holds the model and Adam's state
    /// ([`crate::data_parallel`]). A device may repeat: `vec![Device::flex(); 2]` runs two
    /// replicas on the CPU, which exercises the code path (they share the same cores, so the
    /// gain is small). Empty: the flex CPU device alone. Autodiff is enabled on each.
    ///
    /// Not part of the run's configuration, so a run may be resumed on other devices: the
    /// gradient is the same sum taken in another order, so the weights agree with a one-device
    /// run to float rounding, not bit for bit. A bit-exact resume needs the same device list.
    pub devices: Vec<Device>,
}

impl TrainOptions {
    /// The devices training uses: [`TrainOptions::devices`] with autodiff, or the flex CPU
    /// device when the list is empty. The first is the main device.
    pub fn training_devices(&self) -> Vec<Device> {
        if self.devices.is_empty() {
            vec![Device::flex().autodiff()]
        } else {
            self.devices.iter().map(|d| d.clone().autodiff()).collect()
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainSummary {
    /// Optimizer steps done.
    pub steps: usize,
    /// Epochs completed.
    pub epochs: usize,
    /// Best dev score (mean micro-F1) and its epoch.
    pub best: Option<(f64, usize)>,
    /// `true` when the run finished (epoch limit or early stopping), `false` when stopped by
    /// `stop_after_steps`.
    pub finished: bool,
    /// The best model's directory.
    pub model_dir: PathBuf,
}

/// The label space of a set of training data: per set, a CTA namespace (when its columns carry
/// labels) and a CPA namespace (when it has CPA targets).
pub fn label_space(train: &[(DataSpec, LoadedData)]) -> LabelSpace {
    let mut space = LabelSpace::default();
    for (spec, data) in train {
        if data.tables.iter().any(|t| t.n_labelled_columns() > 0) {
            space.push_label_set(
                Task::Cta,
                &spec.namespace,
                spec.format,
                spec.format.cta_kind(),
                &data.cta_labels,
            );
        }
        let cpa = data.cpa_labels.labels().to_vec();
        space.push(
            Task::Cpa,
            &spec.namespace,
            spec.format,
            LabelKind::SingleLabel,
            cpa,
        );
    }
    space
}

/// Per-head losses of a forward pass against the examples' targets.
#[derive(Debug)]
pub struct Losses {
    /// Weighted sum of the two.
    pub total: Tensor<1>,
    /// CTA part (mean over labelled columns), when any.
    pub cta: Option<f64>,
    /// CPA part (mean over targets), when any.
    pub cpa: Option<f64>,
}

/// The loss of `rows` of `logits`, restricted to one namespace's outputs: with
/// [`Activation::Softmax`], cross-entropy against the uniform distribution over each target's
/// gold labels; with [`Activation::Sigmoid`], binary cross-entropy per label, summed over the
/// namespace. Softmax is the default for multi-label sets too: without column n-grams a small
/// byte-level model trained with sigmoids settled on the label priors (loss ≈ the entropy of
/// the label frequencies) and never discriminated.
fn namespace_loss(
    logits: &Tensor<2>,
    rows: &[usize],
    namespace: &Namespace,
    targets: &[&[usize]],
) -> Tensor<1> {
    let device = logits.device();
    let range = namespace.range();
    let n = range.len();
    let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    let picked = logits
        .clone()
        .select(0, Tensor::<1, Int>::from_data(index.as_slice(), &device))
        .narrow(1, range.start, n);
    let sigmoid = namespace.activation == Activation::Sigmoid;
    let mut dense = vec![0f32; rows.len() * n];
    for (r, outputs) in targets.iter().enumerate() {
        for &o in *outputs {
            dense[r * n + (o - range.start)] = if sigmoid {
                1.0
            } else {
                1.0 / outputs.len() as f32
            };
        }
    }
    let target = Tensor::<2>::from_data(TensorData::new(dense, [rows.len(), n]), &device);
    if sigmoid {
        // Binary cross-entropy with logits, summed over the labels: −y·log σ(x) − (1−y)·log σ(−x).
        let positive = log_sigmoid(picked.clone()) * target.clone();
        let negative = log_sigmoid(picked.neg()) * (target.neg() + 1.0);
        return (positive + negative).sum().neg() / rows.len() as f64;
    }
    (log_softmax(picked, 1) * target).sum().neg() / rows.len() as f64
}

/// How many targets a batch holds: the denominators of its mean losses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetCounts {
    /// Labelled columns (CTA targets).
    pub cta: usize,
    /// CPA targets.
    pub cpa: usize,
}

impl TargetCounts {
    /// The targets of `examples` that [`supervised_loss`] counts.
    pub fn of(examples: &[&Example]) -> Self {
        let mut counts = TargetCounts::default();
        for example in examples {
            if example.cta_namespace.is_some() {
                counts.cta += example.cta.iter().filter(|o| !o.is_empty()).count();
            }
            if example.cpa_namespace.is_some() {
                counts.cpa += example.cpa.len();
            }
        }
        counts
    }
}

/// The supervised loss of a forward pass: mean over labelled columns of their namespace's CTA
/// loss, plus `cpa_weight` times the mean CPA loss over targets.
pub fn supervised_loss(
    orchestrator: &Orchestrator,
    space: &LabelSpace,
    examples: &[&Example],
    out: &SwarmOutput,
    cpa_weight: f64,
) -> Option<Losses> {
    let counts = TargetCounts::of(examples);
    shard_loss(orchestrator, space, examples, out, cpa_weight, counts)
}

/// The part of a batch's [`supervised_loss`] that falls on `examples`, one shard of the batch:
/// the same per-target losses, but each mean divides by the whole batch's target count
/// (`batch`, which must count the shard's targets too), so the losses of the shards of a batch
/// (and their `cta` / `cpa` parts) add up to the batch's loss. `None` when the shard holds no
/// target.
pub fn shard_loss(
    orchestrator: &Orchestrator,
    space: &LabelSpace,
    examples: &[&Example],
    out: &SwarmOutput,
    cpa_weight: f64,
    batch: TargetCounts,
) -> Option<Losses> {
    let mut row = 0;
    // Per namespace: rows (CTA) or row pairs (CPA), and their targets.
    type Targets<'e, R> = Vec<(Vec<R>, Vec<&'e [usize]>)>;
    let mut cta: Targets<usize> = vec![(Vec::new(), Vec::new()); space.cta.len()];
    let mut cpa: Targets<(usize, usize)> = vec![(Vec::new(), Vec::new()); space.cpa.len()];
    for example in examples {
        if let Some(ns) = example.cta_namespace {
            for (q, outputs) in example.cta.iter().enumerate() {
                if !outputs.is_empty() {
                    cta[ns].0.push(row + q);
                    cta[ns].1.push(outputs);
                }
            }
        }
        if let Some(ns) = example.cpa_namespace {
            for (s, o, outputs) in &example.cpa {
                cpa[ns].0.push((row + s, row + o));
                cpa[ns].1.push(outputs);
            }
        }
        row += example.queries.len();
    }
    let n_cta = batch.cta;
    let n_cpa = batch.cpa;
    debug_assert!(n_cta >= cta.iter().map(|(r, _)| r.len()).sum::<usize>());
    debug_assert!(n_cpa >= cpa.iter().map(|(r, _)| r.len()).sum::<usize>());
    let mut parts: Vec<(Tensor<1>, f64)> = Vec::new();
    let mut cta_total: Option<Tensor<1>> = None;
    for (ns, (rows, targets)) in space.cta.iter().zip(&cta) {
        if rows.is_empty() {
            continue;
        }
        let loss =
            namespace_loss(&out.cta_logits, rows, ns, targets) * (rows.len() as f64 / n_cta as f64);
        cta_total = Some(match cta_total {
            Some(t) => t + loss,
            None => loss,
        });
    }
    let mut cpa_total: Option<Tensor<1>> = None;
    for (ns, (pairs, targets)) in space.cpa.iter().zip(&cpa) {
        if pairs.is_empty() {
            continue;
        }
        let logits = orchestrator.cpa_logits(out, pairs);
        let rows: Vec<usize> = (0..pairs.len()).collect();
        let loss =
            namespace_loss(&logits, &rows, ns, targets) * (pairs.len() as f64 / n_cpa as f64);
        cpa_total = Some(match cpa_total {
            Some(t) => t + loss,
            None => loss,
        });
    }
    let scalar = |t: &Tensor<1>| f64::from(t.clone().into_scalar::<f32>());
    let (cta_value, cpa_value) = (
        cta_total.as_ref().map(scalar),
        cpa_total.as_ref().map(scalar),
    );
    if let Some(t) = cta_total {
        parts.push((t, 1.0));
    }
    if let Some(t) = cpa_total {
        parts.push((t, cpa_weight));
    }
    let total = parts.into_iter().map(|(t, w)| t * w).reduce(|a, b| a + b)?;
    Some(Losses {
        total,
        cta: cta_value,
        cpa: cpa_value,
    })
}

/// Loaded data of a run.
#[derive(Debug)]
pub struct RunData {
    /// The label space.
    pub space: LabelSpace,
    /// Training examples (only those with targets).
    pub train: Vec<Example>,
    /// Dev sets.
    pub dev: Vec<(DataSpec, LoadedData)>,
}

/// Reads and encodes the data of `config`.
pub fn load_run_data(config: &TrainConfig) -> Result<RunData, TrainError> {
    let mut train = Vec::new();
    for spec in &config.train {
        let mut data = spec.load()?;
        if config.max_tables > 0 {
            data.tables.truncate(config.max_tables);
        }
        if data.tables.is_empty() {
            return Err(TrainError::Dataset {
                spec: spec.to_string(),
                reason: "no table in this split".into(),
            });
        }
        train.push((spec.clone(), data));
    }
    let mut space = label_space(&train);
    if config.sigmoid_multi_label {
        for namespace in space.cta.iter_mut().chain(&mut space.cpa) {
            if namespace.kind == LabelKind::MultiLabel {
                namespace.activation = Activation::Sigmoid;
            }
        }
    }
    if space.is_empty() {
        return Err(TrainError::Config(
            "the training sets carry no CTA label and no CPA target".into(),
        ));
    }
    let serialize = config.serialize.config();
    let ngrams = orchestrator_config(config, &space)
        .column_ngrams
        .as_ref()
        .map(ngram_config);
    let mut examples = Vec::new();
    for (spec, data) in train {
        let position = |task: Task| {
            space
                .list(task)
                .iter()
                .position(|n| n.name == spec.namespace)
        };
        let (cta, cpa) = (position(Task::Cta), position(Task::Cpa));
        for table in data.tables {
            let example = encode(
                &table,
                &serialize,
                ngrams.as_ref(),
                &space,
                cta,
                cpa,
                Columns::Targets,
            );
            if example.has_targets() {
                examples.push(example);
            }
        }
    }
    let dev = config
        .dev
        .iter()
        .map(|spec| Ok((spec.clone(), spec.load()?)))
        .collect::<Result<_, TrainError>>()?;
    Ok(RunData {
        space,
        train: examples,
        dev,
    })
}

/// Builds the swarm of a fresh run.
fn fresh_swarm(
    config: &TrainConfig,
    space: &LabelSpace,
    device: &Device,
) -> Result<(Swarm, OrchestratorConfig), TrainError> {
    let specialists = config
        .specialists
        .iter()
        .map(|s| s.load(device))
        .collect::<Result<Vec<_>, _>>()?;
    let shapes: Vec<_> = specialists
        .iter()
        .map(FrozenSpecialist::state_shape)
        .collect();
    let orchestrator_config = orchestrator_config(config, space);
    let orchestrator = match &config.init_from {
        Some(dir) => initial_weights(dir, &orchestrator_config, space, &shapes, device)?,
        None => orchestrator_config.init(&shapes, config.seed, device),
    };
    Ok((
        Swarm::new(renumber(orchestrator), specialists)?,
        orchestrator_config,
    ))
}

/// The trainable weights of the model in `dir`, for a run of configuration `target`: the model
/// must have the run's label space and, n-grams and head skips aside, its configuration; an
/// n-gram embedding or head skip the model lacks starts at zero, so the run starts from the
/// model's own predictions.
fn initial_weights(
    dir: &Path,
    target: &OrchestratorConfig,
    space: &LabelSpace,
    specialists: &[StateShape],
    device: &Device,
) -> Result<Orchestrator, TrainError> {
    let (swarm, manifest) = Swarm::load(dir, device)?;
    let refuse = |what: String| {
        Err(TrainError::Config(format!(
            "cannot start from {}: {what}",
            dir.display()
        )))
    };
    if manifest.cta_labels != space.flat(Task::Cta) || manifest.cpa_labels != space.flat(Task::Cpa)
    {
        return refuse("its labels are not this run's (other training sets?)".into());
    }
    // Its alignments map its own specialists' states: the run's must have the same shapes.
    let theirs: Vec<StateShape> = swarm
        .specialists
        .iter()
        .map(FrozenSpecialist::state_shape)
        .collect();
    if theirs != specialists {
        return refuse(format!(
            "its specialists' state shapes {theirs:?} are not this run's {specialists:?}"
        ));
    }
    let mut config = manifest.config.clone();
    config.column_ngrams = target.column_ngrams;
    config.head_skip = target.head_skip;
    if &config != target {
        return refuse(format!(
            "its configuration differs from this run's beyond column n-grams and head skips:\n  model: {}\n  run:   {}",
            serde_json::to_string(&manifest.config).unwrap_or_default(),
            serde_json::to_string(target).unwrap_or_default()
        ));
    }
    let mut orchestrator = swarm
        .orchestrator
        .with_column_ngrams(target.column_ngrams, device);
    let skip = target.head_skip.is_some();
    orchestrator.cta = orchestrator.cta.with_linear_skip(skip);
    orchestrator.cpa = orchestrator.cpa.with_linear_skip(skip);
    Ok(orchestrator)
}

/// The orchestrator configuration of a run.
pub fn orchestrator_config(config: &TrainConfig, space: &LabelSpace) -> OrchestratorConfig {
    let kind = if space.cta.iter().all(|n| n.kind == LabelKind::SingleLabel) {
        LabelKind::SingleLabel
    } else {
        LabelKind::MultiLabel
    };
    OrchestratorConfig::new(
        config.primary(),
        space.len(Task::Cta),
        kind,
        space.len(Task::Cpa),
    )
    .with_fusion(config.fusion)
    .with_d_head_hidden(config.d_head_hidden)
    .with_column_ngrams(
        (config.ngram_buckets > 0)
            .then(|| ColumnNgramsConfig::new().with_buckets(config.ngram_buckets)),
    )
    .with_head_skip(config.head_skip.then_some(HeadSkip::Linear))
}

/// Saves a model directory (swarm + label space + serialization settings).
pub fn save_model(
    swarm: &Swarm,
    config: &OrchestratorConfig,
    space: &LabelSpace,
    serialize: &SerializeSettings,
    dir: &Path,
) -> Result<(), TrainError> {
    swarm.save(dir, config, &space.flat(Task::Cta), &space.flat(Task::Cpa))?;
    Ok(save_model_extras(dir, space, serialize)?)
}

/// Scores the dev sets; the score is the mean micro-F1.
pub fn dev_reports(
    swarm: &Swarm,
    space: &LabelSpace,
    serialize: &SerializeSettings,
    dev: &[(DataSpec, LoadedData)],
    batch_size: usize,
) -> Result<Vec<EvalReport>, TrainError> {
    let model = Model {
        swarm: Swarm::new(swarm.orchestrator.valid(), swarm.specialists.clone())?,
        specialist_names: swarm
            .specialists
            .iter()
            .map(|s| s.name().to_string())
            .collect(),
        space: space.clone(),
        serialize: *serialize,
    };
    dev.iter()
        .map(|(spec, data)| {
            let options = EvalOptions {
                task: default_task(spec.format, &data.tables),
                namespace: Some(spec.namespace.clone()),
                batch_size,
                specialists: SpecialistUse::Router,
                progress: false,
                probabilities: false,
            };
            evaluate(&model, &data.tables, spec.format, &options)
        })
        .collect()
}

/// Writes a checkpoint (model directory + optimizer state + counters) into `run`, atomically.
pub fn save_checkpoint(
    run: &RunDir,
    (swarm, orchestrator, space, serialize): (
        &Swarm,
        &OrchestratorConfig,
        &LabelSpace,
        &SerializeSettings,
    ),
    optim: &ModuleOptimizer,
    state: &RunState,
    keep_last: usize,
) -> Result<(), TrainError> {
    let temp = run.temp_dir("checkpoint")?;
    save_model(swarm, orchestrator, space, serialize, &temp.join("model"))?;
    let path = temp.join("optimizer.bpk");
    optim.save(&path).map_err(|e| TrainError::Run {
        path: path.clone(),
        reason: format!("could not write the optimizer state: {e:?}"),
    })?;
    run.commit_checkpoint(&temp, state.clone(), keep_last)?;
    Ok(())
}

/// Appends JSON lines to the run's log.
pub struct Log {
    path: PathBuf,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Log({})", self.path.display())
    }
}

impl Log {
    /// Opens the log, dropping entries after `step` (a resumed run rewrites them).
    pub fn open(path: &Path, keep_until_step: usize) -> Result<Self, TrainError> {
        if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| TrainError::io(path, e))?;
            let kept: String = text
                .lines()
                .filter(|line| {
                    serde_json::from_str::<serde_json::Value>(line)
                        .ok()
                        .and_then(|v| v.get("step").and_then(serde_json::Value::as_u64))
                        .is_some_and(|s| s as usize <= keep_until_step)
                })
                .map(|line| format!("{line}\n"))
                .collect();
            colswarm_rwkv::checkpoint::write_atomically(path, kept.as_bytes())?;
        }
        Ok(Log {
            path: path.to_path_buf(),
        })
    }

    /// Appends one entry.
    pub fn write(&self, entry: &serde_json::Value) -> Result<(), TrainError> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| TrainError::io(&self.path, e))?;
        writeln!(file, "{entry}").map_err(|e| TrainError::io(&self.path, e))
    }
}

fn rng_for(seed: u64, stream: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng.set_word_pos(u128::from(index) << 16);
    rng
}

/// Stream ids of the run's random choices.
const ORDER_STREAM: u64 = 1;
const ROUTING_STREAM: u64 = 2;
const DROPOUT_STREAM: u64 = 3;

/// The routing generator of a shard whose first table is table `first` of its batch:
/// `batch_rng` (the whole batch's generator) after the draws [`SpecialistRouter::sample`] makes
/// for the tables before it, one `random::<f32>()` per table and specialist, tables in order.
/// Every table of the shard then gets the mask it gets in the undivided batch.
///
/// [`SpecialistRouter::sample`]: colswarm_swarm::SpecialistRouter::sample
pub fn shard_routing_rng(batch_rng: &ChaCha8Rng, first: usize, n_specialists: usize) -> ChaCha8Rng {
    let mut rng = batch_rng.clone();
    for _ in 0..first * n_specialists {
        let _: f32 = rng.random();
    }
    rng
}

/// Copies of the specialists for a replica on `device` (shared, not copied, on `main`).
fn specialists_on(
    specialists: &[FrozenSpecialist],
    device: &Device,
    main: &Device,
) -> Vec<FrozenSpecialist> {
    if device == main {
        return specialists.to_vec();
    }
    let device = device.clone().without_autodiff();
    specialists
        .iter()
        .map(|s| {
            FrozenSpecialist::from_model(
                s.name(),
                s.model().clone().to_device(&device),
                s.config().clone(),
            )
        })
        .collect()
}

/// What one shard of a training step hands to its replica's thread.
struct ShardInput<'a> {
    examples: &'a [&'a Example],
    specialists: Vec<FrozenSpecialist>,
    routing: ChaCha8Rng,
    /// Where its column-dropout mask comes from; `None` without dropout.
    dropout: Option<DropoutDraw>,
}

/// Where a shard's column-dropout mask comes from: the run's seed, the step, and the place of
/// the shard's first table in the step's batch.
#[derive(Clone, Copy, Debug)]
struct DropoutDraw {
    p: f32,
    seed: u64,
    step: usize,
    batch_size: usize,
    first: usize,
}

impl DropoutDraw {
    /// The mask of the shard's tables: one row per column, in [`TableBatch::column_rows`]
    /// order, each element `0` (dropped, probability `p`) or `1/(1-p)`. Table `i` of the batch
    /// gets the same rows whatever shard it lands in, so resumed and data-parallel runs agree.
    ///
    /// # Shapes
    ///
    /// - returns `[columns of the shard's tables, d_model]`
    ///
    /// [`TableBatch::column_rows`]: colswarm_swarm::TableBatch::column_rows
    fn mask(&self, columns_per_table: &[usize], d_model: usize, device: &Device) -> Tensor<2> {
        let keep = 1.0 / (1.0 - self.p);
        let mut values = Vec::new();
        for (i, &columns) in columns_per_table.iter().enumerate() {
            let table = self.step * self.batch_size + self.first + i;
            let mut rng = rng_for(self.seed, DROPOUT_STREAM, table as u64);
            values.extend((0..columns * d_model).map(|_| {
                if rng.random::<f32>() < self.p {
                    0.0
                } else {
                    keep
                }
            }));
        }
        let rows = values.len() / d_model.max(1);
        Tensor::<2>::from_data(TensorData::new(values, [rows, d_model]), device)
    }
}

/// What one shard of a training step reports besides its loss.
#[derive(Debug)]
struct ShardReport {
    /// Its loss (its part of the batch's loss).
    loss: f64,
    cta: Option<f64>,
    cpa: Option<f64>,
    /// Active (table, specialist) pairs and all pairs.
    active: usize,
    gates: usize,
}

/// Forward pass and loss of one shard on its replica.
fn shard_step(
    replica: &Orchestrator,
    input: ShardInput<'_>,
    space: &LabelSpace,
    batch: TargetCounts,
    cpa_weight: f64,
) -> Result<(Tensor<1>, ShardReport), TrainError> {
    let ShardInput {
        examples,
        specialists,
        mut routing,
        dropout,
    } = input;
    let swarm = Swarm::new(replica.clone(), specialists)?;
    let tables = to_batch(examples);
    // Both heads read the dropped-out columns (CPA reads `out.columns` in the loss).
    let column_mask = dropout.map(|draw| {
        let columns_per_table: Vec<usize> = tables.queries.iter().map(Vec::len).collect();
        draw.mask(
            &columns_per_table,
            replica.primary.d_model(),
            &replica.device(),
        )
    });
    let out = swarm.forward_masked(&tables, Routing::Sample(&mut routing), column_mask)?;
    let losses = shard_loss(replica, space, examples, &out, cpa_weight, batch)
        .ok_or_else(|| TrainError::Config("a batch without targets".into()))?;
    let report = ShardReport {
        loss: f64::from(losses.total.clone().into_scalar::<f32>()),
        cta: losses.cta,
        cpa: losses.cpa,
        active: out.router.active.iter().flatten().filter(|a| **a).count(),
        gates: out.router.active.iter().map(Vec::len).sum(),
    };
    Ok((losses.total, report))
}

/// Sums the parts that are there (`None` when none is).
fn sum_parts(parts: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    parts.flatten().reduce(|a, b| a + b)
}

/// The example order of an epoch.
pub fn epoch_order(seed: u64, epoch: usize, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng_for(seed, ORDER_STREAM, epoch as u64));
    order
}

fn optimizer(config: &TrainConfig) -> ModuleOptimizer {
    let clipping = config
        .grad_clip
        .map(burn::grad_clipping::GradientClippingConfig::Norm);
    if config.weight_decay > 0.0 {
        // Decoupled (AdamW): an L2 term added to Adam's gradient would be rescaled per weight.
        AdamWConfig::new()
            .with_weight_decay(config.weight_decay)
            .with_grad_clipping(clipping)
            .init()
    } else {
        AdamConfig::new().with_grad_clipping(clipping).init()
    }
}

/// Runs (or resumes) a supervised training run in `out`.
pub fn train(
    config: &TrainConfig,
    out: &Path,
    options: &TrainOptions,
) -> Result<TrainSummary, TrainError> {
    config.validate()?;
    let run = RunDir::open(out)?;
    run.bind_config(config, |stored| config.resumable_from(stored))?;

    let data = load_run_data(config)?;
    let devices = options.training_devices();
    let device = devices[0].clone();
    let (mut swarm, orchestrator_config) = fresh_swarm(config, &data.space, &device)?;
    let mut optim = optimizer(config);
    let mut state = RunState::default();
    if let Some(checkpoint) = run.latest()? {
        let (loaded, _) = Swarm::load(&checkpoint.model_dir(), &device)?;
        swarm = Swarm::new(renumber(loaded.orchestrator), swarm.specialists)?;
        optim = optim
            .load(checkpoint.optimizer_path())
            .map_err(|e| TrainError::Run {
                path: checkpoint.optimizer_path(),
                reason: format!("unreadable optimizer state: {e:?}"),
            })?;
        state = checkpoint.state;
        // The stopping rules may have changed (more epochs, more patience): re-judge.
        state.finished = state.epoch >= config.epochs
            || (state.best_score.is_some()
                && state.epochs_without_improvement >= config.patience.max(1));
        if options.progress {
            eprintln!(
                "resuming {} from step {} (epoch {}, batch {})",
                out.display(),
                state.step,
                state.epoch + 1,
                state.batch
            );
        }
    }
    // Specialists never change: each replica's device gets its copies once.
    let replica_specialists: Vec<Vec<FrozenSpecialist>> = devices
        .iter()
        .map(|d| specialists_on(&swarm.specialists, d, &device))
        .collect();
    if options.progress && devices.len() > 1 {
        eprintln!("data-parallel: {} replicas on {devices:?}", devices.len());
    }
    let log = Log::open(&run.log_path(), state.step)?;
    let n = data.train.len();
    let batches = n.div_ceil(config.batch_size);
    let save_checkpoint = |swarm: &Swarm, optim: &ModuleOptimizer, state: &RunState| {
        let model = (swarm, &orchestrator_config, &data.space, &config.serialize);
        save_checkpoint(&run, model, optim, state, config.keep_last)
    };
    let mut steps_here = 0;
    while !state.finished && state.epoch < config.epochs {
        let order = epoch_order(config.seed, state.epoch, n);
        let train = &data.train;
        let mut progress = Progress::new(
            format!("epoch {}/{}", state.epoch + 1, config.epochs),
            batches,
            options.progress,
        );
        let epoch_start = Instant::now();
        while state.batch < batches {
            if options.stop_after_steps.is_some_and(|s| steps_here >= s) {
                return Ok(TrainSummary {
                    steps: state.step,
                    epochs: state.epoch,
                    best: state.best_score.zip(state.best_epoch),
                    finished: false,
                    model_dir: run.best_dir(),
                });
            }
            let start = state.batch * config.batch_size;
            let picked: Vec<&Example> = order[start..(start + config.batch_size).min(n)]
                .iter()
                .map(|&i| &train[i])
                .collect();
            // One shard per device (fewer when the batch is smaller), each with its part of the
            // batch's loss and the router draws the undivided batch would give its tables.
            let rng = rng_for(config.seed, ROUTING_STREAM, state.step as u64);
            let counts = TargetCounts::of(&picked);
            let shards = shard_ranges(picked.len(), devices.len())
                .into_iter()
                .zip(devices.iter().zip(&replica_specialists))
                .map(|(range, (device, specialists))| Shard {
                    device: device.clone(),
                    input: ShardInput {
                        routing: shard_routing_rng(&rng, range.start, swarm.specialists.len()),
                        dropout: (config.column_dropout > 0.0).then_some(DropoutDraw {
                            p: config.column_dropout,
                            seed: config.seed,
                            step: state.step,
                            batch_size: config.batch_size,
                            first: range.start,
                        }),
                        examples: &picked[range],
                        specialists: specialists.clone(),
                    },
                })
                .collect();
            let parallel =
                data_parallel_grads(&swarm.orchestrator, &device, shards, |replica, input| {
                    shard_step(replica, input, &data.space, counts, config.cpa_weight)
                })?;
            let reports = &parallel.outputs;
            let value: f64 = reports.iter().map(|r| r.loss).sum();
            // Only a finite loss gets its gradients checked (a non-finite one is reported as is).
            let bad_gradients = if value.is_finite() {
                non_finite_gradients(&swarm.orchestrator, &parallel.grads)
            } else {
                0
            };
            if !value.is_finite() || bad_gradients > 0 {
                match config.on_non_finite {
                    NonFinitePolicy::Stop if bad_gradients > 0 => {
                        return Err(TrainError::NonFiniteGradients {
                            epoch: state.epoch,
                            step: state.step,
                            tensors: bad_gradients,
                        });
                    }
                    NonFinitePolicy::Stop => {
                        return Err(TrainError::NonFinite {
                            epoch: state.epoch,
                            step: state.step,
                            loss: value,
                        });
                    }
                    NonFinitePolicy::Skip => {
                        log.write(&serde_json::json!({
                            "event": "skip", "epoch": state.epoch, "step": state.step,
                            "batch": state.batch, "loss": value.to_string(),
                            "non_finite_gradients": bad_gradients,
                            "tables": picked.iter().map(|e| e.table_id.as_str()).collect::<Vec<_>>(),
                        }))?;
                        state.batch += 1;
                        state.step += 1;
                        steps_here += 1;
                        continue;
                    }
                }
            }
            let (cta_loss, cpa_loss) = (
                sum_parts(reports.iter().map(|r| r.cta)),
                sum_parts(reports.iter().map(|r| r.cpa)),
            );
            let active: usize = reports.iter().map(|r| r.active).sum();
            let gates = reports.iter().map(|r| r.gates).sum::<usize>().max(1);
            swarm.orchestrator = optim.step(
                config.learning_rate_at(state.step, batches),
                swarm.orchestrator.clone(),
                parallel.grads,
            );
            state.epoch_loss.0 += value;
            state.epoch_loss.1 += 1;
            state.batch += 1;
            state.step += 1;
            steps_here += 1;
            if state.step.is_multiple_of(config.log_every.max(1)) {
                log.write(&serde_json::json!({
                    "event": "step", "epoch": state.epoch, "step": state.step, "loss": value,
                    "cta_loss": cta_loss, "cpa_loss": cpa_loss,
                    "activation_rate": active as f64 / gates as f64,
                    "tokens": picked.iter().map(|e| e.n_tokens()).sum::<usize>(),
                }))?;
            }
            progress.set(
                state.batch,
                &format!(
                    "loss {:.4}",
                    state.epoch_loss.0 / state.epoch_loss.1.max(1) as f64
                ),
            );
            if config.checkpoint_every > 0
                && state.step.is_multiple_of(config.checkpoint_every)
                && state.batch < batches
            {
                save_checkpoint(&swarm, &optim, &state)?;
            }
        }
        let train_loss = state.epoch_loss.0 / state.epoch_loss.1.max(1) as f64;
        progress.finish(&format!("loss {train_loss:.4}"));
        // Dev evaluation, best model, early stopping.
        let reports = dev_reports(
            &swarm,
            &data.space,
            &config.serialize,
            &data.dev,
            config.batch_size * 2,
        )?;
        let score = if reports.is_empty() {
            None
        } else {
            Some(reports.iter().map(|r| r.f1.micro_f1).sum::<f64>() / reports.len() as f64)
        };
        // Without dev sets, the last epoch counts as the best.
        let improved = match (score, state.best_score) {
            (None, _) | (Some(_), None) => true,
            (Some(s), Some(best)) => s > best,
        };
        if improved {
            state.best_score = score.or(state.best_score);
            state.best_epoch = Some(state.epoch);
            state.epochs_without_improvement = 0;
            let temp = run.temp_dir("best")?;
            save_model(
                &swarm,
                &orchestrator_config,
                &data.space,
                &config.serialize,
                &temp,
            )?;
            run.replace_best(&temp)?;
        } else {
            state.epochs_without_improvement += 1;
        }
        log.write(&serde_json::json!({
            "event": "epoch", "epoch": state.epoch, "step": state.step,
            "train_loss": train_loss,
            "seconds": epoch_start.elapsed().as_secs_f64(), "replicas": devices.len(),
            "dev_score": score, "best": improved,
            "dev": reports.iter().map(|r| serde_json::json!({
                "namespace": r.namespace, "task": r.task, "micro_f1": r.f1.micro_f1,
                "macro_f1": r.f1.macro_f1, "n_columns": r.n_columns,
            })).collect::<Vec<_>>(),
        }))?;
        if options.progress {
            let dev: Vec<String> = reports
                .iter()
                .map(|r| format!("{} {} micro-F1 {:.3}", r.namespace, r.task, r.f1.micro_f1))
                .collect();
            eprintln!(
                "epoch {} done in {}: {}{}",
                state.epoch + 1,
                format_duration(epoch_start.elapsed().as_secs_f64()),
                if dev.is_empty() {
                    "no dev set".into()
                } else {
                    dev.join(", ")
                },
                if improved { " (best)" } else { "" }
            );
        }
        state.epoch += 1;
        state.batch = 0;
        state.epoch_loss = (0.0, 0);
        state.finished = state.epoch >= config.epochs
            || (score.is_some() && state.epochs_without_improvement >= config.patience.max(1));
        save_checkpoint(&swarm, &optim, &state)?;
    }
    Ok(TrainSummary {
        steps: state.step,
        epochs: state.epoch,
        best: state.best_score.zip(state.best_epoch),
        finished: true,
        model_dir: run.best_dir(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;
    use colswarm_swarm::SpecialistRouterConfig;

    #[test]
    fn namespace_losses_match_a_by_hand_computation() {
        // Rows 0 and 2 of a 3-row head with 5 outputs; the namespace is outputs 1..4.
        let logits = [
            [0.3f32, 1.0, -2.0, 0.5, 9.0],
            [5.0, 5.0, 5.0, 5.0, 5.0],
            [-1.0, 0.0, 2.0, -0.5, -9.0],
        ];
        let tensor =
            Tensor::<2>::from_data(TensorData::new(logits.concat(), [3, 5]), &Device::flex());
        let mut namespace = Namespace {
            name: "n".into(),
            format: crate::DatasetFormat::TurlCsv,
            kind: LabelKind::MultiLabel,
            offset: 1,
            labels: vec!["a".into(), "b".into(), "c".into()],
            activation: Activation::Softmax,
            ancestors: Vec::new(),
        };
        let targets: [&[usize]; 2] = [&[1, 3], &[2]];
        let gold: [&[usize]; 2] = [&[0, 2], &[1]];
        let rows = [logits[0], logits[2]].map(|r| [r[1], r[2], r[3]]);
        let loss = |namespace: &Namespace| -> f64 {
            namespace_loss(&tensor, &[0, 2], namespace, &targets).into_scalar::<f32>() as f64
        };
        // Softmax: −Σ (1/|gold|)·log p, mean over rows.
        let softmax: f64 = rows
            .iter()
            .zip(gold)
            .map(|(x, g)| {
                let z: f64 = x.iter().map(|&v| (v as f64).exp()).sum();
                g.iter()
                    .map(|&i| -((x[i] as f64).exp() / z).ln() / g.len() as f64)
                    .sum::<f64>()
            })
            .sum::<f64>()
            / 2.0;
        assert!(
            (loss(&namespace) - softmax).abs() < 1e-5,
            "{} vs {softmax}",
            loss(&namespace)
        );
        // Sigmoid: Σ over labels of −y·log σ(x) − (1−y)·log(1−σ(x)), mean over rows.
        namespace.activation = Activation::Sigmoid;
        let bce: f64 = rows
            .iter()
            .zip(gold)
            .map(|(x, g)| {
                (0..3)
                    .map(|i| {
                        let p = 1.0 / (1.0 + (-(x[i] as f64)).exp());
                        if g.contains(&i) {
                            -p.ln()
                        } else {
                            -(1.0 - p).ln()
                        }
                    })
                    .sum::<f64>()
            })
            .sum::<f64>()
            / 2.0;
        assert!(
            (loss(&namespace) - bce).abs() < 1e-5,
            "{} vs {bce}",
            loss(&namespace)
        );
        assert!((softmax - bce).abs() > 0.1, "the two losses differ here");
    }

    /// The masks a router samples for a batch, and those it samples for the batch's shards with
    /// [`shard_routing_rng`], are the same: a data-parallel step routes every table as the
    /// one-device step does.
    #[test]
    fn linear_decay_reaches_zero_after_the_last_step() {
        let config = TrainConfig {
            learning_rate: 1.0,
            epochs: 2,
            lr_decay: LrDecay::Linear,
            ..TrainConfig::default()
        };
        assert_eq!(config.learning_rate_at(0, 5), 1.0);
        assert_eq!(config.learning_rate_at(5, 5), 0.5);
        assert!((config.learning_rate_at(9, 5) - 0.1).abs() < 1e-12);
        assert_eq!(config.learning_rate_at(12, 5), 0.0, "never negative");
        let constant = TrainConfig {
            lr_decay: LrDecay::Constant,
            ..config
        };
        assert_eq!(constant.learning_rate_at(9, 5), 1.0);
    }

    #[test]
    fn absurd_ngram_bucket_counts_are_refused_before_allocating() {
        let config = TrainConfig {
            train: vec!["t=t2d:x".parse().unwrap()],
            ngram_buckets: u32::MAX,
            ..TrainConfig::default()
        };
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("4294967295 n-gram buckets"), "{err}");
    }

    #[test]
    fn shards_draw_the_masks_of_the_undivided_batch() {
        let device = Device::flex();
        let (tables, specialists, d) = (7, 3, 8);
        // Zero gate weights: every gate is 0.5, the masks are as random as they get.
        let router = SpecialistRouterConfig::new(d, specialists).init(&device);
        let pooled = Tensor::<2>::random([tables, d], Distribution::Default, &device);
        let batch_rng = rng_for(3, ROUTING_STREAM, 11);
        let whole = router.sample(pooled.clone(), &mut batch_rng.clone()).active;
        let sharded = |skip: bool| -> Vec<Vec<bool>> {
            shard_ranges(tables, 3)
                .into_iter()
                .flat_map(|range| {
                    let first = if skip { range.start } else { 0 };
                    let mut rng = shard_routing_rng(&batch_rng, first, specialists);
                    let rows = pooled.clone().narrow(0, range.start, range.len());
                    router.sample(rows, &mut rng).active
                })
                .collect()
        };
        assert_eq!(sharded(true), whole);
        // Every shard starting from the batch's generator repeats the first tables' draws.
        assert_ne!(sharded(false), whole);
    }

    #[test]
    fn column_dropout_masks_follow_the_table_not_the_shard() {
        let device = Device::flex();
        let (d, columns) = (16, [3usize, 1, 4, 2]);
        let draw = |first: usize| DropoutDraw {
            p: 0.25,
            seed: 5,
            step: 9,
            batch_size: 4,
            first,
        };
        let values = |draw: DropoutDraw, columns: &[usize]| -> Vec<f32> {
            let mask = draw.mask(columns, d, &device);
            mask.into_data().try_to_vec::<f32>().unwrap()
        };
        let whole = values(draw(0), &columns);
        assert_eq!(whole.len(), 10 * d);
        // Every element is dropped or scaled to keep the expectation, and both happen.
        let dropped = whole.iter().filter(|&&v| v == 0.0).count();
        let kept_scaled = |v: f32| (v - 4.0 / 3.0).abs() < 1e-6;
        assert!(whole.iter().all(|&v| v == 0.0 || kept_scaled(v)));
        assert!(
            (20..=60).contains(&dropped),
            "{dropped} of 160 dropped at p = 0.25"
        );
        // Two shards (tables 0-1 and 2-3) draw exactly the undivided batch's rows.
        let shards = [
            values(draw(0), &columns[..2]),
            values(draw(2), &columns[2..]),
        ];
        assert_eq!(shards.concat(), whole);
        // Another step draws other masks.
        let later = DropoutDraw {
            step: 10,
            ..draw(0)
        };
        assert_ne!(values(later, &columns), whole);
    }

    #[test]
    fn column_dropout_outside_zero_to_one_is_refused() {
        for p in [-0.1, 1.0, f32::NAN] {
            let config = TrainConfig {
                train: vec!["t=t2d:x".parse().unwrap()],
                column_dropout: p,
                ..TrainConfig::default()
            };
            let message = config.validate().unwrap_err().to_string();
            assert!(message.contains("column dropout"), "{message}");
        }
    }
}
