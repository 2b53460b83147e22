//! `train`, `train-router` and `average`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{ArgAction, Args};
use colswarm_model::SerializeSettings;
use colswarm_swarm::FusionMode;
use colswarm_train::{
    DataSettings, DataSpec, LossSettings, LrDecay, ModelSettings, NonFinitePolicy,
    OptimizerSettings, ParlConfig, ParlOptions, Regularization, RunSettings, SpecialistSpec,
    Stopping, TrainConfig, TrainOptions, train, train_router,
};

use crate::DeviceArg;

#[derive(Args, Debug)]
pub(crate) struct AverageArgs {
    /// Model directories to average (a run's `best/` or `checkpoints/*/model`).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The new model directory (must not exist).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct TrainArgs {
    /// Training set, NAME=FORMAT:PATH[,PATH...][#SPLIT] (repeatable).
    #[arg(long = "train", required = true)]
    train: Vec<String>,
    /// Dev set for evaluation and early stopping, same syntax (repeatable).
    #[arg(long = "dev")]
    dev: Vec<String>,
    /// Frozen specialist, NAME=PATH (checkpoint or model directory; repeatable).
    #[arg(long = "specialist")]
    specialists: Vec<String>,
    /// Run directory (checkpoints, log, best model); an existing run there is resumed.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = ModelSettings::default().d_model)]
    d_model: usize,
    #[arg(long, default_value_t = ModelSettings::default().n_layers)]
    layers: usize,
    #[arg(long, default_value_t = ModelSettings::default().head_size)]
    head_size: usize,
    #[arg(long, default_value_t = ModelSettings::default().d_head_hidden)]
    head_hidden: usize,
    /// Hash buckets of the column n-gram embedding (hashed character n-grams of each column's
    /// header and first cells (`--ngram-cells`), embedded and added to the column's representation); 0 turns
    /// it off. Each bucket costs d_model floats.
    #[arg(long, default_value_t = ModelSettings::default().ngram_buckets)]
    ngram_buckets: u32,
    /// Cells of a column whose n-grams enter its bag: the first non-null ones in row order.
    #[arg(long, default_value_t = ModelSettings::default().ngram_cells)]
    ngram_cells: usize,
    /// Put the table's other columns in each column's n-gram bag: their headers and first 8
    /// cells, in blocks of their own (a `Name` column beside `Film` is an actor's). The shipped
    /// WikiTables and GitTables experts read them; trained on all benchmarks at once, a model
    /// keeps less of their gain and loses T2D CPA (docs/EXPERIMENTS.md).
    #[arg(long)]
    neighbour_ngrams: bool,
    /// Start from this model directory's weights (same label space and architecture; an
    /// n-gram embedding it lacks starts at zero) instead of random ones.
    #[arg(long)]
    init_from: Option<PathBuf>,
    /// Give the CTA and CPA heads a linear skip beside their tanh layer (starts at zero);
    /// `--head-skip false` leaves it out.
    #[arg(long, default_value_t = ModelSettings::default().head_skip, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    head_skip: bool,
    /// Add each active specialist's reading of each column (the mean of its hidden states over
    /// the column), mapped to the primary's width, to the column's representation.
    #[arg(long)]
    column_fusion: bool,
    /// Read static word vectors: each column's mean vector of its cells' words and of its
    /// header's words, from this word-vector file (`scripts/knowledge/word_vectors.py` writes
    /// one from GloVe), projected and added to the column's representation. The file is copied
    /// into the saved model.
    #[arg(long, value_name = "FILE")]
    word_vectors: Option<PathBuf>,
    /// With `--word-vectors`, also each table's topic: the mean vector of the words of all its
    /// columns, beside each column's own.
    #[arg(long, requires = "word_vectors")]
    table_topic: bool,
    /// Teach entity-type label sets (WikiTables) to give columns of numbers no type: the
    /// other training sets' quantity columns (mostly numbers other than years) train such a
    /// set's sigmoids towards zero; `--quantity-negatives false` leaves them out.
    #[arg(long, default_value_t = LossSettings::default().quantity_negatives, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    quantity_negatives: bool,
    /// The CPA loss's weight beside the CTA loss (the mean over a batch's relation targets).
    #[arg(long, default_value_t = LossSettings::default().cpa_weight)]
    cpa_weight: f64,
    /// Train multi-label label sets (WikiTables) with one sigmoid per label and binary
    /// cross-entropy, decoding every label above 0.5; `--sigmoid-multi-label false` trains a
    /// softmax instead.
    #[arg(long, default_value_t = ModelSettings::default().sigmoid_multi_label, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    sigmoid_multi_label: bool,
    /// Leave multi-label predictions unclosed under the hierarchy file beside the data
    /// (WikiTables' `wikitables-hierarchy-v2.json`). The closure helps a model trained on
    /// WikiTables train alone and costs one trained on train and dev (docs/TRAINING.md).
    #[arg(long)]
    no_hierarchy_closure: bool,
    /// How specialist states are fused: weighted-sum, gated or concat-project.
    #[arg(long, default_value = "weighted-sum")]
    fusion: FusionMode,
    #[arg(long, default_value_t = Stopping::default().epochs)]
    epochs: usize,
    #[arg(long, default_value_t = OptimizerSettings::default().batch_size)]
    batch_size: usize,
    #[arg(long, default_value_t = OptimizerSettings::default().learning_rate)]
    lr: f64,
    /// Learning-rate schedule: constant, or linear decay to zero at the end of the last epoch.
    #[arg(long, default_value = "constant")]
    lr_decay: LrDecay,
    /// Decoupled weight decay (AdamW); 0 is plain Adam.
    #[arg(long, default_value_t = OptimizerSettings::default().weight_decay)]
    weight_decay: f32,
    /// Dropout on the column representations the heads read (training only; 0: none).
    #[arg(long, default_value_t = Regularization::default().column_dropout)]
    column_dropout: f32,
    /// Epochs without dev improvement before stopping.
    #[arg(long, default_value_t = Stopping::default().patience)]
    patience: usize,
    /// Checkpoint every N steps as well as at epoch ends (0: epoch ends only).
    #[arg(long, default_value_t = RunSettings::default().checkpoint_every)]
    checkpoint_every: usize,
    /// Checkpoints kept: the newest N, and the last N epochs' even when mid-epoch checkpoints
    /// are newer.
    #[arg(long, default_value_t = RunSettings::default().keep_last)]
    keep_last: usize,
    /// After training, write `OUT/averaged`: the element-wise mean of the weights of the last
    /// N epochs (the shipped recipe averages 6 of 10; needs `--keep-last` ≥ N). 0: none.
    #[arg(long, default_value_t = 0)]
    average_last: usize,
    /// Use at most N tables of each training set (0: all).
    #[arg(long, default_value_t = 0)]
    max_tables: usize,
    /// Most tokens of a table the primary reads (the biggest lever on speed).
    #[arg(long, default_value_t = SerializeSettings::default().max_table_tokens)]
    max_table_tokens: usize,
    /// Rows sampled into the table read.
    #[arg(long, default_value_t = SerializeSettings::default().max_rows)]
    max_rows: usize,
    #[arg(long, default_value_t = SerializeSettings::default().max_cell_bytes)]
    max_cell_bytes: usize,
    /// Sample cells repeated in each column's query (after its header).
    #[arg(long, default_value_t = SerializeSettings::default().query_cells)]
    query_cells: usize,
    /// Most bytes of the header inside a column's query (0: the query names the column only
    /// by its index; with span pooling and n-grams the column's content still reaches the heads).
    #[arg(long, default_value_t = SerializeSettings::default().query_header_bytes)]
    query_header_bytes: usize,
    /// Most bytes of each sample cell inside a column's query.
    #[arg(long, default_value_t = SerializeSettings::default().query_cell_bytes)]
    query_cell_bytes: usize,
    #[arg(long, default_value_t = RunSettings::default().seed)]
    seed: u64,
    /// Skip a batch whose loss is NaN/inf (logged) instead of stopping.
    #[arg(long)]
    skip_non_finite: bool,
    /// Data-parallel replicas of the model: each batch is split among them and their gradients
    /// summed (docs/TRAINING.md). On the CPU they share its cores, so this mostly tests the code
    /// path. A resumed run may use another count (same weights up to float rounding).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    replicas: u64,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    device: DeviceArg,
}

#[derive(Args, Debug)]
pub(crate) struct TrainRouterArgs {
    /// Model directory from `colswarm train` with specialists.
    #[arg(long)]
    model: PathBuf,
    /// Training set (repeatable), as for `train`.
    #[arg(long = "train", required = true)]
    train: Vec<String>,
    /// Dev set (repeatable).
    #[arg(long = "dev")]
    dev: Vec<String>,
    /// Run directory.
    #[arg(long)]
    out: PathBuf,
    /// Optimizer steps.
    #[arg(long, default_value_t = ParlConfig::default().steps)]
    steps: usize,
    /// Rollouts (sampled router masks) per table.
    #[arg(long, default_value_t = ParlConfig::default().rollouts)]
    rollouts: usize,
    #[arg(long, default_value_t = ParlConfig::default().optimizer.batch_size)]
    batch_size: usize,
    /// Learning rate of every trained weight (router, fusion, alignments, primary and heads).
    #[arg(long, default_value_t = ParlConfig::default().optimizer.learning_rate)]
    lr: f64,
    /// λ schedule: aegir (piecewise), linear, cosine; `zero-parallel` sets λ1 = 0 (ablation).
    #[arg(long, default_value = "aegir")]
    schedule: String,
    /// Critical-step budget per table rollout, in tokens: an activated specialist whose read
    /// ends past it has not finished, which lowers r_finish (default: no budget, every
    /// activated specialist finishes).
    #[arg(long)]
    step_budget: Option<u64>,
    /// Evaluate on the dev sets every N steps.
    #[arg(long, default_value_t = ParlConfig::default().eval_every)]
    eval_every: usize,
    #[arg(long, default_value_t = ParlConfig::default().run.seed)]
    seed: u64,
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    device: DeviceArg,
}

pub(crate) fn specs(list: &[String]) -> Result<Vec<DataSpec>> {
    list.iter()
        .map(|s| s.parse().map_err(anyhow::Error::from))
        .collect()
}

pub(crate) fn cmd_train(args: TrainArgs) -> Result<()> {
    let (average, keep) = (args.average_last, args.keep_last);
    if average > keep {
        anyhow::bail!(
            "--average-last {average} needs --keep-last {average} or more (it is {keep}): \
             only the last --keep-last epochs' checkpoints are kept"
        );
    }
    let config = TrainConfig {
        model: ModelSettings {
            d_model: args.d_model,
            n_layers: args.layers,
            head_size: args.head_size,
            d_head_hidden: args.head_hidden,
            specialists: args
                .specialists
                .iter()
                .map(|s| s.parse::<SpecialistSpec>())
                .collect::<Result<_, _>>()?,
            fusion: args.fusion,
            ngram_buckets: args.ngram_buckets,
            ngram_cells: args.ngram_cells,
            neighbour_ngrams: args.neighbour_ngrams,
            head_skip: args.head_skip,
            column_fusion: args.column_fusion,
            word_vectors: args.word_vectors.clone(),
            table_topic: args.table_topic,
            sigmoid_multi_label: args.sigmoid_multi_label,
            hierarchy_closure: !args.no_hierarchy_closure,
            init_from: args.init_from,
        },
        data: DataSettings {
            train: specs(&args.train)?,
            dev: specs(&args.dev)?,
            max_tables: args.max_tables,
            serialize: SerializeSettings {
                max_table_tokens: args.max_table_tokens,
                max_rows: args.max_rows,
                max_cell_bytes: args.max_cell_bytes,
                query_cells: args.query_cells,
                query_header_bytes: args.query_header_bytes,
                query_cell_bytes: args.query_cell_bytes,
                ..SerializeSettings::default()
            },
        },
        optimizer: OptimizerSettings {
            batch_size: args.batch_size,
            learning_rate: args.lr,
            lr_decay: args.lr_decay,
            weight_decay: args.weight_decay,
            ..OptimizerSettings::default()
        },
        loss: LossSettings {
            quantity_negatives: args.quantity_negatives,
            cpa_weight: args.cpa_weight,
        },
        regularization: Regularization {
            column_dropout: args.column_dropout,
        },
        stopping: Stopping {
            epochs: args.epochs,
            patience: args.patience,
        },
        run: RunSettings {
            keep_last: args.keep_last,
            checkpoint_every: args.checkpoint_every,
            seed: args.seed,
            on_non_finite: if args.skip_non_finite {
                NonFinitePolicy::Skip
            } else {
                NonFinitePolicy::Stop
            },
            ..RunSettings::default()
        },
    };
    let summary = train(
        &config,
        &args.out,
        &TrainOptions {
            progress: !args.quiet,
            stop_after_steps: None,
            devices: vec![args.device.open()?; args.replicas as usize],
        },
    )?;
    out!("{}", serde_json::to_string_pretty(&summary)?);
    if args.average_last > 0 && summary.finished {
        let averaged = args.out.join("averaged");
        if averaged.exists() {
            // A finished run run again: its checkpoints, and so their mean, are unchanged.
            eprintln!("{} exists; left as it is", averaged.display());
        } else {
            let inputs =
                colswarm_train::average_last_epochs(&args.out, args.average_last, &averaged)
                    .with_context(|| format!("averaging into {}", averaged.display()))?;
            eprintln!(
                "averaged the last {} epochs ({} … {}) into {}",
                inputs.len(),
                inputs[0].display(),
                inputs[inputs.len() - 1].display(),
                averaged.display()
            );
        }
    }
    Ok(())
}

pub(crate) fn cmd_train_router(args: TrainRouterArgs) -> Result<()> {
    let defaults = ParlConfig::default();
    let mut config = ParlConfig {
        model: args.model,
        train: specs(&args.train)?,
        dev: specs(&args.dev)?,
        steps: args.steps,
        eval_every: args.eval_every,
        rollouts: args.rollouts,
        schedule: args.schedule.parse()?,
        optimizer: OptimizerSettings {
            batch_size: args.batch_size,
            learning_rate: args.lr,
            ..defaults.optimizer
        },
        run: RunSettings {
            seed: args.seed,
            ..defaults.run
        },
        ..defaults
    };
    config.reward.step_budget = args.step_budget;
    let options = ParlOptions {
        progress: !args.quiet,
        device: Some(args.device.open()?),
    };
    let summary = train_router(&config, &args.out, &options)?;
    out!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

pub(crate) fn cmd_average(args: AverageArgs) -> Result<()> {
    colswarm_train::average_model_dirs(&args.inputs, &args.out)
        .with_context(|| format!("averaging into {}", args.out.display()))?;
    eprintln!(
        "averaged {} models into {}",
        args.inputs.len(),
        args.out.display()
    );
    Ok(())
}
