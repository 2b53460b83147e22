//! The configuration of a supervised run, grouped by what each part decides: the model, the
//! data and how tables are serialized, the optimizer and the losses, regularization, when to
//! stop, and the run itself. Data only: `training.rs` checks and uses it.

use std::path::PathBuf;
use std::str::FromStr;

use burn::tensor::Device;
use colswarm_model::{LabelSpace, SerializeSettings, Task};
use colswarm_rwkv::RwkvConfig;
use colswarm_swarm::{
    ColumnNgramsConfig, ColumnWordsConfig, FusionMode, HeadSkip, LabelKind, OrchestratorConfig,
    WordVectors,
};
use serde::{Deserialize, Serialize};

use colswarm_tables::DataSpec;

use crate::error::TrainError;
use crate::run::{OptimizerSettings, RunSettings};

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

/// Everything a supervised run depends on (stored as `run.json`).
///
/// Its default is the shipped model's recipe without its specialists and word vectors, with
/// the hierarchy closure on, 2 checkpoints kept and a patience of 3 (the shipped recipe itself
/// is `recipes/colswarm-small.toml`, read by [`crate::Recipe`]); a run needs only its data:
///
/// ```no_run
/// use colswarm_train::{DataSettings, TrainConfig, TrainOptions, train};
///
/// let config = TrainConfig {
///     data: DataSettings {
///         train: vec!["mine=semtab:tables-dir#train".parse()?],
///         dev: vec!["mine=semtab:tables-dir#dev".parse()?],
///         ..DataSettings::default()
///     },
///     ..TrainConfig::default()
/// };
/// let summary = train(&config, "runs/mine".as_ref(), &TrainOptions::default())?;
/// println!("best (dev micro-F1, epoch) {:?}: {}", summary.best, summary.model_dir.display());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// What is trained.
    pub model: ModelSettings,
    /// What it is trained on, and how tables are read.
    pub data: DataSettings,
    /// How the loss is minimised.
    pub optimizer: OptimizerSettings,
    /// How the heads' losses are weighed.
    pub loss: LossSettings,
    /// What keeps the model from fitting its training set only.
    pub regularization: Regularization,
    /// How many epochs, and when to stop early.
    pub stopping: Stopping,
    /// The seed, checkpoints, logging and non-finite steps.
    pub run: RunSettings,
}

/// The model a supervised run trains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSettings {
    /// Width of the primary.
    pub d_model: usize,
    /// Layers of the primary.
    pub n_layers: usize,
    /// Head size of the primary (d_model must be a multiple).
    pub head_size: usize,
    /// Hidden width of the heads.
    pub d_head_hidden: usize,
    /// Frozen specialists.
    pub specialists: Vec<SpecialistSpec>,
    /// Fusion rule.
    pub fusion: FusionMode,
    /// Hash buckets of the column n-gram embedding ([`ColumnNgramsConfig`]); 0 reads no
    /// n-grams.
    pub ngram_buckets: u32,
    /// Non-null cells of a column whose n-grams enter its bag, the first ones in row order
    /// ([`ColumnNgramsConfig::max_cells`]).
    #[serde(default = "default_ngram_cells")]
    pub ngram_cells: usize,
    /// Put the table's other columns' headers and first cells in each column's n-gram bag
    /// ([`ColumnNgramsConfig::neighbours`]).
    #[serde(default)]
    pub neighbour_ngrams: bool,
    /// Put each column's value statistics in its n-gram bag
    /// ([`ColumnNgramsConfig::value_stats`]).
    #[serde(default)]
    pub value_stats: bool,
    /// Give the heads a linear skip beside their tanh layer ([`OrchestratorConfig::head_skip`]).
    pub head_skip: bool,
    /// Add each active specialist's aligned column readings to the column representations
    /// ([`OrchestratorConfig::column_fusion`]).
    #[serde(default)]
    pub column_fusion: bool,
    /// Static word vectors to read per column ([`OrchestratorConfig::column_words`]): a word-vector
    /// file ([`WordVectors`]), copied into the saved model. `None` reads none.
    #[serde(default)]
    pub word_vectors: Option<PathBuf>,
    /// With word vectors, also each table's topic: the mean vector of all its words
    /// ([`ColumnWordsConfig::table_topic`]).
    #[serde(default)]
    pub table_topic: bool,
    /// Train multi-label namespaces with one sigmoid per label and binary cross-entropy
    /// ([`colswarm_model::Activation::Sigmoid`]) instead of a softmax.
    pub sigmoid_multi_label: bool,
    /// Close multi-label predictions under the hierarchy file beside the training data
    /// ([`colswarm_model::Namespace::ancestors`]). It helps a model fit on WikiTables' balanced
    /// train split, which rarely shows a type with its super-types, and costs one fit on data
    /// with the real distribution (train and dev): choose by cross-validation.
    #[serde(default = "closure_by_default")]
    pub hierarchy_closure: bool,
    /// Start from this model directory's weights instead of random ones (same primary, heads
    /// and label space; an n-gram embedding it lacks starts at zero). `None`: random.
    pub init_from: Option<PathBuf>,
}

/// Runs saved before the setting existed read the first 20 cells.
fn default_ngram_cells() -> usize {
    ColumnNgramsConfig::new().max_cells
}

/// The shipped model's shape and reading, without its specialists and word vectors
/// (`recipes/colswarm-small.toml` adds them).
impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            d_model: 64,
            n_layers: 2,
            head_size: 32,
            d_head_hidden: 128,
            specialists: Vec::new(),
            fusion: FusionMode::WeightedSum,
            ngram_buckets: 1 << 14,
            ngram_cells: default_ngram_cells(),
            neighbour_ngrams: false,
            value_stats: false,
            head_skip: true,
            column_fusion: false,
            word_vectors: None,
            table_topic: false,
            sigmoid_multi_label: true,
            hierarchy_closure: true,
            init_from: None,
        }
    }
}

/// Runs written before [`ModelSettings::hierarchy_closure`] closed their predictions.
fn closure_by_default() -> bool {
    true
}

/// The data of a supervised run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataSettings {
    /// Training sets.
    pub train: Vec<DataSpec>,
    /// Dev sets (their namespaces must be among the training sets').
    pub dev: Vec<DataSpec>,
    /// At most this many training tables per set (0: all), for quick runs.
    pub max_tables: usize,
    /// Serialization budgets.
    pub serialize: SerializeSettings,
}

/// How a supervised run weighs its heads' losses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossSettings {
    /// Weight of the CPA loss (the CTA loss has weight 1).
    pub cpa_weight: f64,
    /// Teach entity-type namespaces to give quantities no type: a sigmoid CTA namespace none of
    /// whose labelled training columns is a quantity ([`colswarm_tables::Column::is_quantity`])
    /// gets every quantity column of the other training sets as a column with none of its
    /// labels ([`colswarm_model::Example::cta_none`]). Without it, such a namespace (WikiTables)
    /// types a column of populations as confidently as one of names. Runs stored before it
    /// existed read `false`.
    #[serde(default)]
    pub quantity_negatives: bool,
}

impl Default for LossSettings {
    fn default() -> Self {
        LossSettings {
            cpa_weight: 1.0,
            quantity_negatives: true,
        }
    }
}

/// Regularization of a supervised run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regularization {
    /// Dropout on the column representations the heads read, during training only: each
    /// element is zeroed with this probability and the rest scaled by `1/(1-p)`. The masks
    /// derive from the seed, the step and the table's place in its batch, so a resumed or
    /// data-parallel run draws the same ones. 0: none.
    pub column_dropout: f32,
}

impl Default for Regularization {
    fn default() -> Self {
        Regularization {
            column_dropout: 0.3,
        }
    }
}

/// How long a supervised run goes: epochs, and early stopping on the dev score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stopping {
    /// Most epochs.
    pub epochs: usize,
    /// Epochs without dev improvement before stopping.
    pub patience: usize,
}

impl Default for Stopping {
    fn default() -> Self {
        Stopping {
            epochs: 10,
            patience: 3,
        }
    }
}

/// The primary's configuration.
pub fn primary_config(model: &ModelSettings) -> RwkvConfig {
    RwkvConfig::new(colswarm_tables::VOCAB_SIZE, model.d_model, model.n_layers)
        .with_head_size(model.head_size)
}

/// The orchestrator configuration of a run that reads `words` (the run's word vectors, if any).
pub fn orchestrator_config(
    config: &TrainConfig,
    space: &LabelSpace,
    words: Option<&WordVectors>,
) -> OrchestratorConfig {
    let model = &config.model;
    let kind = if space.cta.iter().all(|n| n.kind == LabelKind::SingleLabel) {
        LabelKind::SingleLabel
    } else {
        LabelKind::MultiLabel
    };
    OrchestratorConfig::new(
        primary_config(model),
        space.len(Task::Cta),
        kind,
        space.len(Task::Cpa),
    )
    .with_fusion(model.fusion)
    .with_d_head_hidden(model.d_head_hidden)
    .with_column_ngrams((model.ngram_buckets > 0).then(|| {
        ColumnNgramsConfig::new()
            .with_buckets(model.ngram_buckets)
            .with_max_cells(model.ngram_cells)
            .with_neighbours(model.neighbour_ngrams)
            .with_value_stats(model.value_stats)
    }))
    .with_head_skip(model.head_skip.then_some(HeadSkip::Linear))
    .with_column_fusion(model.column_fusion)
    .with_column_words(
        words.map(|w| ColumnWordsConfig::new(w.dim()).with_table_topic(model.table_topic)),
    )
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
    /// (burn's manual data parallelism). A device may repeat: `vec![Device::flex(); 2]` runs two
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_written_before_the_closure_switch_keep_closing() {
        let mut json = serde_json::to_value(ModelSettings::default()).unwrap();
        json.as_object_mut().unwrap().remove("hierarchy_closure");
        let settings: ModelSettings = serde_json::from_value(json).unwrap();
        assert!(settings.hierarchy_closure);
    }
}
