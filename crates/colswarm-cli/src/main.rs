//! `colswarm`: train, evaluate and run sigmoid-routed RWKV-7 swarms that annotate table columns.

mod input;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use clap::{Args, Parser, Subcommand, ValueEnum};
use colswarm_swarm::manifest::{MANIFEST_FILE, SwarmManifest, sha256_file};
use colswarm_swarm::{AlignmentKind, FusionMode};
use colswarm_train::baseline::{
    BaselineConfig, BaselineKind, baseline_predictions, train_baseline,
};
use colswarm_train::compare::{
    BootstrapConfig, paired_bootstrap, read_predictions, score_predictions, write_predictions,
};
use colswarm_train::eval::{EvalOptions, default_task, evaluate};
use colswarm_train::parl::{ParlConfig, train_router};
use colswarm_train::predict::{
    AnnotateOptions, Model, SerializeSettings, SpecialistUse, TableAnnotation,
};
use colswarm_train::supervised::{
    LrDecay, NonFinitePolicy, SpecialistSpec, TrainConfig, TrainOptions, train,
};
use colswarm_train::{DataSpec, DatasetFormat, Split, Task, load_tables};

use crate::input::{Shard, read_stdin, read_table, table_files};

/// `println!` that returns an error instead of panicking when stdout is closed (`colswarm … |
/// head`): `main` then exits quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        writeln!(Stdout::lock(), $($arg)*)?
    };
}

/// Standard output whose write errors are marked as its own, so that `main` tells a reader
/// that went away (`| head`) from a failed write to a file.
struct Stdout(std::io::StdoutLock<'static>);

impl Stdout {
    fn lock() -> Self {
        Stdout(std::io::stdout().lock())
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(StdoutError::mark)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(StdoutError::mark)
    }
}

/// A failed write to standard output (the payload of the `io::Error` [`Stdout`] returns).
#[derive(Debug)]
struct StdoutError(std::io::Error);

impl StdoutError {
    fn mark(error: std::io::Error) -> std::io::Error {
        std::io::Error::new(error.kind(), StdoutError(error))
    }
}

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

#[derive(Parser, Debug)]
#[command(name = "colswarm", version, about, long_about = None)]
struct Cli {
    /// Worker threads for tensor kernels (default: all cores).
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Supervised training of a specialist (no --specialist) or of a primary with its heads.
    Train(TrainArgs),
    /// The PARL stage: trains the router (and orchestrator) of a model with frozen specialists.
    TrainRouter(TrainRouterArgs),
    /// Scores a model on labelled data: micro / macro / weighted F1 and a per-label report.
    Eval(EvalArgs),
    /// Annotates tables: types, relations to the subject column, router decisions.
    Annotate(AnnotateArgs),
    /// Shows a model directory or checkpoint: configuration, sizes, checksums.
    Inspect(InspectArgs),
    /// Measures annotation throughput (columns/s), primary alone and with specialists.
    Bench(BenchArgs),
    /// Trains and scores a simple baseline (majority class or character n-grams).
    Baseline(BaselineArgs),
    /// Is A better than B? A paired bootstrap over tables of two prediction files' micro-F1.
    Compare(CompareArgs),
    /// Averages the weights of model directories of one run (e.g. its last epochs' checkpoints)
    /// into a new model directory.
    Average(AverageArgs),
}

#[derive(Args, Debug)]
struct AverageArgs {
    /// Model directories to average (a run's `best/` or `checkpoints/*/model`).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The new model directory (must not exist).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct TrainArgs {
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
    #[arg(long, default_value_t = 128)]
    d_model: usize,
    #[arg(long, default_value_t = 2)]
    layers: usize,
    #[arg(long, default_value_t = 32)]
    head_size: usize,
    #[arg(long, default_value_t = 128)]
    head_hidden: usize,
    /// Represent a column by its query state only, without the mean of the primary's hidden
    /// states over the column's span of the table (how models before 0.2 were built).
    #[arg(long)]
    no_span_pooling: bool,
    /// Pool each column's span from a second read of the table that starts from the fused
    /// state (the specialists' states then shape every column's span, not only its query;
    /// one more primary pass per table).
    #[arg(long, conflicts_with = "no_span_pooling")]
    read_twice: bool,
    /// Learn a per-head bilinear map for every specialist's state, starting as the identity
    /// (without it, a specialist of the primary's shape is fused as it is).
    #[arg(long)]
    learned_alignment: bool,
    /// Hash buckets of the column n-gram embedding (hashed character n-grams of each column's
    /// header and first 20 cells, embedded and added to the column's representation); 0 turns
    /// it off. Each bucket costs d_model floats.
    #[arg(long, default_value_t = 1 << 14)]
    ngram_buckets: u32,
    /// Start from this model directory's weights (same label space and architecture; an
    /// n-gram embedding it lacks starts at zero) instead of random ones.
    #[arg(long)]
    init_from: Option<PathBuf>,
    /// Give the CTA and CPA heads a linear skip beside their tanh layer (starts at zero).
    #[arg(long)]
    head_skip: bool,
    /// Hash buckets of the wide n-gram logits: a per-label linear map from each column's n-gram
    /// bag straight to its CTA (and, as a pair's object, CPA) logits, added to the heads'
    /// (starts at zero). Each bucket costs a float per label; 0 turns it off. Needs
    /// --ngram-buckets.
    #[arg(long, default_value_t = 0)]
    wide_buckets: u32,
    /// Train multi-label label sets (WikiTables) with one sigmoid per label and binary
    /// cross-entropy instead of a softmax; decoding then keeps every label above 0.5.
    #[arg(long)]
    sigmoid_multi_label: bool,
    /// Add each table's page title, section title and caption to its columns' n-grams (needs
    /// --ngram-buckets).
    #[arg(long)]
    context_ngrams: bool,
    /// Add each table's other columns (the 64 nearest in a wider table), their headers and
    /// first 8 cells, to every column's n-grams, in blocks of their own (needs
    /// --ngram-buckets).
    #[arg(long)]
    neighbour_ngrams: bool,
    /// Shuffle every training table's rows anew each epoch (augmentation: the table read and
    /// the column n-grams see other rows and cells each epoch).
    #[arg(long)]
    shuffle_rows: bool,
    #[arg(long, value_enum, default_value_t = Fusion::WeightedSum)]
    fusion: Fusion,
    #[arg(long, default_value_t = 10)]
    epochs: usize,
    #[arg(long, default_value_t = 8)]
    batch_size: usize,
    #[arg(long, default_value_t = 2e-3)]
    lr: f64,
    /// Learning-rate schedule: constant, or linear decay to zero at the end of the last epoch.
    #[arg(long, value_enum, default_value_t = Decay::Constant)]
    lr_decay: Decay,
    /// Decoupled weight decay (AdamW); 0 is plain Adam.
    #[arg(long, default_value_t = 0.0)]
    weight_decay: f32,
    /// Dropout on the column representations the heads read (training only; 0: none).
    #[arg(long, default_value_t = 0.0)]
    column_dropout: f32,
    /// Dropout on the column n-gram bags: each n-gram is left out with this probability,
    /// anew each epoch (training only; 0: none).
    #[arg(long, default_value_t = 0.0)]
    ngram_dropout: f32,
    /// Dropout on whole column n-gram bags: each training column's bag is left out with this
    /// probability, anew each epoch, so the heads also learn to type columns from the table
    /// read (training only; 0: none).
    #[arg(long, default_value_t = 0.0)]
    bag_dropout: f32,
    /// Epochs without dev improvement before stopping.
    #[arg(long, default_value_t = 3)]
    patience: usize,
    /// Checkpoint every N steps as well as at epoch ends (0: epoch ends only).
    #[arg(long, default_value_t = 0)]
    checkpoint_every: usize,
    #[arg(long, default_value_t = 2)]
    keep_last: usize,
    /// Use at most N tables of each training set (0: all).
    #[arg(long, default_value_t = 0)]
    max_tables: usize,
    #[arg(long, default_value_t = 384)]
    max_table_tokens: usize,
    #[arg(long, default_value_t = 12)]
    max_rows: usize,
    #[arg(long, default_value_t = 24)]
    max_cell_bytes: usize,
    /// Sample cells repeated in each column's query (after its header).
    #[arg(long, default_value_t = 2)]
    query_cells: usize,
    /// Most bytes of the header inside a column's query (0: the query names the column only
    /// by its index; with span pooling and n-grams the column's content still reaches the heads).
    #[arg(long, default_value_t = 32)]
    query_header_bytes: usize,
    /// Most bytes of each sample cell inside a column's query.
    #[arg(long, default_value_t = 16)]
    query_cell_bytes: usize,
    #[arg(long, default_value_t = 0)]
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
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Fusion {
    WeightedSum,
    Gated,
    ConcatProject,
}

impl From<Fusion> for FusionMode {
    fn from(f: Fusion) -> Self {
        match f {
            Fusion::WeightedSum => FusionMode::WeightedSum,
            Fusion::Gated => FusionMode::Gated,
            Fusion::ConcatProject => FusionMode::ConcatProject,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Decay {
    Constant,
    Linear,
}

impl From<Decay> for LrDecay {
    fn from(d: Decay) -> Self {
        match d {
            Decay::Constant => LrDecay::Constant,
            Decay::Linear => LrDecay::Linear,
        }
    }
}

#[derive(Args, Debug)]
struct TrainRouterArgs {
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
    #[arg(long, default_value_t = 200)]
    steps: usize,
    /// Rollouts (sampled router masks) per table.
    #[arg(long, default_value_t = 4)]
    rollouts: usize,
    #[arg(long, default_value_t = 4)]
    batch_size: usize,
    #[arg(long, default_value_t = 1e-3)]
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
    #[arg(long, default_value_t = 50)]
    eval_every: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct EvalArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Input format.
    #[arg(long)]
    format: DatasetFormat,
    /// File or directory of the data.
    #[arg(long)]
    input: Vec<PathBuf>,
    /// Keep only this part of the hash split (all, train, dev, or folds=I,J,… of the five).
    #[arg(long, default_value = "all")]
    split: Split,
    /// cta or cpa (default: what the format annotates).
    #[arg(long)]
    task: Option<Task>,
    /// The model's label namespace to predict (default: the one trained on this format).
    #[arg(long)]
    namespace: Option<String>,
    /// Score the primary alone (no specialist is run).
    #[arg(long)]
    no_specialists: bool,
    /// Run every specialist on every table, whatever the router says (an ablation of routing).
    #[arg(long, conflicts_with = "no_specialists")]
    all_specialists: bool,
    /// Print one JSON object (with the per-label report) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write every scored target (table, column, gold and predicted labels) to this file,
    /// one JSON object per line, for `colswarm compare`.
    #[arg(long)]
    predictions: Option<PathBuf>,
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Output {
    Json,
    Csv,
}

#[derive(Args, Debug)]
struct AnnotateArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Table files or directories (CSV, TSV, SOTAB .json.gz, parquet); `-` reads a CSV from stdin.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Output::Json)]
    output: Output,
    /// Labels listed per column.
    #[arg(long, default_value_t = 3)]
    top_k: usize,
    /// Only this CTA namespace (repeatable; default all).
    #[arg(long)]
    namespace: Vec<String>,
    /// Annotate only shard i of n (contiguous blocks of the sorted files; shards concatenate
    /// to the unsharded output).
    #[arg(long)]
    shard: Option<Shard>,
    /// Run the primary alone.
    #[arg(long)]
    no_specialists: bool,
    /// Repair instead of refusing: invalid UTF-8 becomes U+FFFD, cells over 1 MiB are truncated.
    #[arg(long)]
    lossy: bool,
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// A model directory (or its swarm.json) or a .safetensors checkpoint.
    path: PathBuf,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Table files or directories.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Passes over the inputs.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
}

#[derive(Args, Debug)]
struct BaselineArgs {
    /// majority or char-ngram.
    #[arg(long)]
    kind: BaselineKind,
    /// Training set NAME=FORMAT:PATH[#SPLIT].
    #[arg(long)]
    train: String,
    /// Evaluation set, same syntax.
    #[arg(long)]
    eval: String,
    /// cta or cpa (default: what the format annotates).
    #[arg(long)]
    task: Option<Task>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Add each table's page title, section title and caption to its columns' n-grams
    /// (char-ngram only).
    #[arg(long)]
    context_ngrams: bool,
    /// Add each table's other columns (the 64 nearest in a wider table), their headers and
    /// first 8 cells, to every column's n-grams (char-ngram only).
    #[arg(long)]
    neighbour_ngrams: bool,
    #[arg(long)]
    json: bool,
    /// Also write every scored target to this file (JSON Lines, as `eval --predictions`).
    #[arg(long)]
    predictions: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// Predictions of system A (`eval --predictions` or `baseline --predictions`).
    a: PathBuf,
    /// Predictions of system B, on the same targets.
    b: PathBuf,
    /// Bootstrap resamples (tables drawn with replacement).
    #[arg(long, default_value_t = 10_000)]
    resamples: usize,
    /// Confidence of the interval of A − B.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(threads) = cli.threads {
        // Flex's kernels run on rayon's global pool.
        if let Err(e) = rayon_threads(threads) {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    }
    let result = match cli.command {
        Command::Train(args) => cmd_train(args),
        Command::TrainRouter(args) => cmd_train_router(args),
        Command::Eval(args) => cmd_eval(args),
        Command::Annotate(args) => cmd_annotate(args),
        Command::Inspect(args) => cmd_inspect(args),
        Command::Bench(args) => cmd_bench(args),
        Command::Baseline(args) => cmd_baseline(args),
        Command::Average(args) => cmd_average(args),
        Command::Compare(args) => cmd_compare(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`| head`): not an error of ours.
        Err(e) if closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `error` comes from writing to standard output after its reader went away (a
/// broken pipe on a file given with `--predictions` stays an error).
fn closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| {
            e.kind() == std::io::ErrorKind::BrokenPipe
                && e.get_ref().is_some_and(|inner| inner.is::<StdoutError>())
        })
    })
}

/// Sizes rayon's global pool, on which Flex's kernels and the fused WKV kernels run.
fn rayon_threads(threads: usize) -> Result<()> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build_global()
        .context("setting the thread count")
}

fn specs(list: &[String]) -> Result<Vec<DataSpec>> {
    list.iter()
        .map(|s| s.parse().map_err(anyhow::Error::from))
        .collect()
}

fn cmd_train(args: TrainArgs) -> Result<()> {
    let config = TrainConfig {
        train: specs(&args.train)?,
        dev: specs(&args.dev)?,
        d_model: args.d_model,
        n_layers: args.layers,
        head_size: args.head_size,
        specialists: args
            .specialists
            .iter()
            .map(|s| s.parse::<SpecialistSpec>())
            .collect::<Result<_, _>>()?,
        fusion: args.fusion.into(),
        d_head_hidden: args.head_hidden,
        span_pooling: !args.no_span_pooling,
        read_twice: args.read_twice,
        learned_alignment: args.learned_alignment,
        ngram_buckets: args.ngram_buckets,
        init_from: args.init_from,
        head_skip: args.head_skip,
        wide_buckets: args.wide_buckets,
        sigmoid_multi_label: args.sigmoid_multi_label,
        shuffle_rows: args.shuffle_rows,
        context_ngrams: args.context_ngrams,
        neighbour_ngrams: args.neighbour_ngrams,
        serialize: SerializeSettings {
            max_table_tokens: args.max_table_tokens,
            max_rows: args.max_rows,
            max_cell_bytes: args.max_cell_bytes,
            query_cells: args.query_cells,
            query_header_bytes: args.query_header_bytes,
            query_cell_bytes: args.query_cell_bytes,
            ..SerializeSettings::default()
        },
        epochs: args.epochs,
        batch_size: args.batch_size,
        learning_rate: args.lr,
        lr_decay: args.lr_decay.into(),
        weight_decay: args.weight_decay,
        column_dropout: args.column_dropout,
        ngram_dropout: args.ngram_dropout,
        bag_dropout: args.bag_dropout,
        patience: args.patience,
        keep_last: args.keep_last,
        checkpoint_every: args.checkpoint_every,
        max_tables: args.max_tables,
        seed: args.seed,
        on_non_finite: if args.skip_non_finite {
            NonFinitePolicy::Skip
        } else {
            NonFinitePolicy::Stop
        },
        ..TrainConfig::default()
    };
    let summary = train(
        &config,
        &args.out,
        &TrainOptions {
            progress: !args.quiet,
            stop_after_steps: None,
            devices: vec![Device::flex(); args.replicas as usize],
        },
    )?;
    out!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

fn cmd_train_router(args: TrainRouterArgs) -> Result<()> {
    let mut config = ParlConfig {
        model: args.model,
        train: specs(&args.train)?,
        dev: specs(&args.dev)?,
        steps: args.steps,
        rollouts: args.rollouts,
        batch_size: args.batch_size,
        learning_rate: args.lr,
        schedule: args.schedule.parse()?,
        eval_every: args.eval_every,
        seed: args.seed,
        ..ParlConfig::default()
    };
    config.reward.step_budget = args.step_budget;
    let summary = train_router(&config, &args.out, !args.quiet)?;
    out!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

fn cmd_average(args: AverageArgs) -> Result<()> {
    colswarm_train::average::average_model_dirs(&args.inputs, &args.out)
        .with_context(|| format!("averaging into {}", args.out.display()))?;
    eprintln!(
        "averaged {} models into {}",
        args.inputs.len(),
        args.out.display()
    );
    Ok(())
}

fn load_model(dir: &Path) -> Result<Model> {
    Model::load(dir, &Device::flex())
        .with_context(|| format!("loading the model in {}", dir.display()))
}

fn cmd_eval(args: EvalArgs) -> Result<()> {
    if args.input.is_empty() {
        bail!("--input names no file or directory");
    }
    let model = load_model(&args.model)?;
    let data = load_tables(args.format, &args.input, args.split)?;
    let task = args
        .task
        .unwrap_or_else(|| default_task(args.format, &data.tables));
    let options = EvalOptions {
        task,
        namespace: args.namespace.clone(),
        batch_size: args.batch_size,
        specialists: if args.all_specialists {
            SpecialistUse::All
        } else {
            specialist_use(args.no_specialists)
        },
        progress: !args.json,
        probabilities: args.predictions.is_some(),
    };
    let report = evaluate(&model, &data.tables, args.format, &options)?;
    if let Some(path) = &args.predictions {
        write_predictions(path, &report.targets)?;
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["format"] = serde_json::json!(args.format.name());
        value["split"] = serde_json::json!(args.split.to_string());
        value["columns_per_second"] =
            serde_json::json!(report.n_columns as f64 / report.seconds.max(1e-9));
        out!("{}", serde_json::to_string(&value)?);
    } else {
        let f = &report.f1;
        out!(
            "{} on {} ({}, namespace {}): {} tables, {} targets, {} gold labels unknown to the model",
            task,
            args.format,
            args.split,
            report.namespace,
            report.n_tables,
            report.n_columns,
            f.labels_unknown
        );
        out!(
            "micro-F1 {:.4} (P {:.4} R {:.4})  macro-F1 {:.4}  weighted-F1 {:.4}  specialists active {:.1}%",
            f.micro_f1,
            f.micro_precision,
            f.micro_recall,
            f.macro_f1,
            f.weighted_f1,
            100.0 * report.activation_rate
        );
        out!(
            "{:<48} {:>7} {:>7} {:>7} {:>7}",
            "label",
            "support",
            "P",
            "R",
            "F1"
        );
        for l in &f.per_label {
            out!(
                "{:<48} {:>7} {:>7.3} {:>7.3} {:>7.3}",
                l.label,
                l.support,
                l.precision,
                l.recall,
                l.f1
            );
        }
    }
    Ok(())
}

fn read_inputs(inputs: &[PathBuf], lossy: bool) -> Result<Vec<colswarm_tables::Table>> {
    table_files(inputs)?
        .iter()
        .map(|path| {
            if path.as_os_str() == "-" {
                read_stdin(lossy)
            } else {
                read_table(path, lossy).with_context(|| format!("reading {}", path.display()))
            }
        })
        .collect()
}

fn cmd_annotate(args: AnnotateArgs) -> Result<()> {
    let model = load_model(&args.model)?;
    let mut files = table_files(&args.inputs)?;
    if let Some(shard) = args.shard {
        files = files[shard.range(files.len())].to_vec();
    }
    let options = AnnotateOptions {
        cta_namespaces: args.namespace.clone(),
        top_k: args.top_k,
        batch_size: args.batch_size,
        specialists: specialist_use(args.no_specialists),
        ..AnnotateOptions::default()
    };
    let mut out = Stdout::lock();
    if args.output == Output::Csv {
        writeln!(
            out,
            "table,column,header,namespace,label,confidence,relation,relation_confidence,active_specialists"
        )?;
    }
    // Read and annotate in batches, so a directory of any size streams in bounded memory.
    for chunk in files.chunks(args.batch_size.max(1)) {
        let tables = read_inputs(chunk, args.lossy)?;
        let annotations = model.annotate(&tables, &options)?;
        for annotation in &annotations {
            match args.output {
                Output::Json => writeln!(out, "{}", serde_json::to_string(annotation)?)?,
                Output::Csv => write_csv(&mut out, annotation)?,
            }
        }
    }
    Ok(())
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn write_csv(out: &mut impl Write, annotation: &TableAnnotation) -> Result<()> {
    let active: Vec<&str> = annotation
        .router
        .iter()
        .filter(|g| g.active)
        .map(|g| g.specialist.as_str())
        .collect();
    for column in &annotation.columns {
        let relation = column.relations.first();
        for types in &column.types {
            let labels: Vec<&str> = types.labels.iter().map(|l| l.label.as_str()).collect();
            let confidence = types.labels.first().map_or(0.0, |l| l.confidence);
            writeln!(
                out,
                "{},{},{},{},{},{:.4},{},{},{}",
                csv_field(&annotation.table),
                column.index,
                csv_field(column.header.as_deref().unwrap_or("")),
                csv_field(&types.namespace),
                csv_field(&labels.join("|")),
                confidence,
                csv_field(relation.map_or("", |r| r.relation.label.as_str())),
                relation.map_or(String::new(), |r| format!("{:.4}", r.relation.confidence)),
                csv_field(&active.join("|")),
            )?;
        }
    }
    Ok(())
}

fn cmd_inspect(args: InspectArgs) -> Result<()> {
    let path = &args.path;
    let manifest_path = if path.is_dir() {
        path.join(MANIFEST_FILE)
    } else {
        path.clone()
    };
    if manifest_path.extension().is_some_and(|e| e == "json") {
        let bytes = std::fs::read(&manifest_path)
            .with_context(|| format!("reading {}", manifest_path.display()))?;
        let manifest: SwarmManifest = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not a swarm manifest", manifest_path.display()))?;
        let dir = manifest_path.parent().unwrap_or(Path::new("."));
        // Loading verifies every checksum and every tensor shape.
        let model = load_model(dir)?;
        let mut files = vec![
            ("primary", &manifest.primary),
            ("router", &manifest.router),
            ("fusion", &manifest.fusion),
            ("cta head", &manifest.cta_head),
            ("cpa head", &manifest.cpa_head),
        ];
        if let Some(ngrams) = &manifest.column_ngrams {
            files.push(("n-grams", ngrams));
        }
        if let Some(wide) = &manifest.wide_ngrams {
            files.push(("wide n-grams", wide));
        }
        for s in &manifest.specialists {
            files.push(("specialist", &s.checkpoint));
            files.push(("alignment", &s.alignment));
        }
        out!("model directory {}", dir.display());
        out!(
            "primary: d_model {} layers {} head size {} ({} parameters)",
            manifest.config.primary.d_model,
            manifest.config.primary.n_layers,
            manifest.config.primary.head_size,
            manifest.config.primary.num_params()
        );
        for s in &model.swarm.specialists {
            let c = s.config();
            out!(
                "specialist {}: d_model {} layers {} ({} parameters)",
                s.name(),
                c.d_model,
                c.n_layers,
                c.num_params()
            );
        }
        for ns in &model.space.cta {
            out!(
                "CTA namespace {} ({}, {:?}, {:?}): {} labels",
                ns.name,
                ns.format,
                ns.kind,
                ns.activation,
                ns.labels.len()
            );
        }
        for ns in &model.space.cpa {
            out!(
                "CPA namespace {} ({}): {} relations",
                ns.name,
                ns.format,
                ns.labels.len()
            );
        }
        out!(
            "fusion {:?}, alignment {}, threshold {}, budget {:?}",
            manifest.config.fusion,
            match manifest.config.alignment {
                Some(AlignmentKind::Learned) => "learned (bilinear per head, from the identity)",
                None => "identity where the shapes agree, else trained maps",
            },
            manifest.config.threshold,
            manifest.config.budget
        );
        let c = &manifest.config;
        out!(
            "column: pooling {:?}, n-grams {}, head skip {:?}",
            c.column_pooling,
            c.column_ngrams.map_or("none".into(), |n| format!(
                "{} buckets of {}-{}-grams over the header and {} cells{}",
                n.buckets,
                n.min_n,
                n.max_n,
                n.max_cells,
                [
                    n.context.map(|_| " and the table's titles and caption"),
                    (n.neighbours == Some(true)).then_some(" and its other columns"),
                ]
                .into_iter()
                .flatten()
                .collect::<String>()
            )),
            c.head_skip
        );
        if let Some(wide) = c.wide_ngrams {
            out!(
                "wide n-gram logits: {} buckets × ({} CTA + {} CPA outputs)",
                wide.buckets,
                c.cta_labels,
                c.cpa_labels
            );
        }
        let mut total = 0;
        for (what, file) in files {
            let full = dir.join(&file.path);
            let size = std::fs::metadata(&full).map(|m| m.len()).unwrap_or(0);
            total += size;
            out!(
                "  {what:<11} {:<44} {:>10} bytes  sha256 {} ok",
                file.path,
                size,
                file.sha256
            );
        }
        out!(
            "total {:.2} MB, every checksum verified",
            total as f64 / 1e6
        );
    } else {
        let file = colswarm_rwkv::checkpoint::CheckpointFile::open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        let config = colswarm_rwkv::checkpoint::read_config(&file)?;
        let size = std::fs::metadata(path)?.len();
        out!("RWKV-7 checkpoint {}", path.display());
        out!("{}", serde_json::to_string_pretty(&config)?);
        out!(
            "{} parameters, {size} bytes, sha256 {} (embedded checksum verified)",
            config.num_params(),
            sha256_file(path)?
        );
    }
    Ok(())
}

fn cmd_bench(args: BenchArgs) -> Result<()> {
    let model = load_model(&args.model)?;
    let tables = read_inputs(&args.inputs, false)?;
    let columns: usize = tables.iter().map(|t| t.n_columns()).sum();
    let runs = [
        (SpecialistUse::Off, "primary alone"),
        (SpecialistUse::Router, "with specialists (router decides)"),
        (SpecialistUse::All, "with every specialist on every table"),
    ];
    for (specialists, name) in runs {
        let options = AnnotateOptions {
            batch_size: args.batch_size,
            specialists,
            ..AnnotateOptions::default()
        };
        let warm_up = model.annotate(&tables, &options)?;
        let gates: usize = warm_up.iter().map(|a| a.router.len()).sum();
        let active: usize = warm_up
            .iter()
            .map(|a| a.router.iter().filter(|g| g.active).count())
            .sum();
        let mut seconds = Vec::new();
        for _ in 0..args.repeat.max(1) {
            let start = Instant::now();
            model.annotate(&tables, &options)?;
            seconds.push(start.elapsed().as_secs_f64());
        }
        seconds.sort_by(f64::total_cmp);
        let median = seconds[seconds.len() / 2];
        out!(
            "{name}: {} tables, {} columns, {active} of {gates} (table, specialist) pairs active, median {:.3} s over {} runs = {:.0} columns/s",
            tables.len(),
            columns,
            median,
            seconds.len(),
            columns as f64 / median
        );
    }
    Ok(())
}

/// `--no-specialists` runs the primary alone; otherwise the router decides.
fn specialist_use(no_specialists: bool) -> SpecialistUse {
    if no_specialists {
        SpecialistUse::Off
    } else {
        SpecialistUse::Router
    }
}

fn cmd_baseline(args: BaselineArgs) -> Result<()> {
    let train_spec: DataSpec = args.train.parse()?;
    let eval_spec: DataSpec = args.eval.parse()?;
    let train_data = train_spec.load()?;
    let eval_data = eval_spec.load()?;
    let task = args
        .task
        .unwrap_or_else(|| default_task(train_spec.format, &train_data.tables));
    let mut space = colswarm_train::LabelSpace::default();
    let (labels, kind) = match task {
        Task::Cta => (&train_data.cta_labels, train_spec.format.cta_kind()),
        Task::Cpa => (
            &train_data.cpa_labels,
            colswarm_swarm::LabelKind::SingleLabel,
        ),
    };
    // The same label hierarchy as a model trained on this set closes its predictions with.
    space.push_label_set(task, &train_spec.namespace, train_spec.format, kind, labels);
    let namespace = space
        .list(task)
        .first()
        .context("the training set has no label for this task")?;
    let config = BaselineConfig {
        kind: args.kind,
        seed: args.seed,
        table_context: args.context_ngrams,
        neighbours: args.neighbour_ngrams,
        ..BaselineConfig::default()
    };
    if (args.context_ngrams || args.neighbour_ngrams) && args.kind != BaselineKind::CharNgram {
        bail!(
            "--context-ngrams and --neighbour-ngrams need --kind char-ngram (the majority \
             baseline reads no text)"
        );
    }
    let baseline = train_baseline(&config, task, namespace, &train_data.tables);
    let predictions = baseline_predictions(
        &baseline,
        task,
        &eval_data.tables,
        args.predictions.is_some(),
    );
    let report = score_predictions(&predictions, namespace);
    if let Some(path) = &args.predictions {
        write_predictions(path, &predictions)?;
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["task"] = serde_json::json!(task);
        value["baseline"] = serde_json::json!(args.kind.to_string());
        value["n_columns"] = serde_json::json!(report.n_targets);
        out!("{}", serde_json::to_string(&value)?);
    } else {
        out!(
            "{} baseline, {task}: micro-F1 {:.4}  macro-F1 {:.4}  ({} targets, {} gold labels unknown)",
            args.kind,
            report.micro_f1,
            report.macro_f1,
            report.n_targets,
            report.labels_unknown
        );
    }
    Ok(())
}

fn cmd_compare(args: CompareArgs) -> Result<()> {
    let read = |path: &PathBuf| read_predictions(path).map_err(anyhow::Error::from);
    let (a, b) = (read(&args.a)?, read(&args.b)?);
    let config = BootstrapConfig {
        resamples: args.resamples,
        confidence: args.confidence,
        seed: args.seed,
    };
    let c = paired_bootstrap(&a, &b, &config)
        .with_context(|| format!("comparing {} with {}", args.a.display(), args.b.display()))?;
    if args.json {
        out!("{}", serde_json::to_string(&c)?);
    } else {
        out!(
            "micro-F1 A {:.4}  B {:.4}  A − B {:+.4}  ({:.0}% interval {:+.4} to {:+.4}; {} tables, {} targets, {} resamples)",
            c.micro_f1_a,
            c.micro_f1_b,
            c.difference,
            100.0 * c.confidence,
            c.ci_low,
            c.ci_high,
            c.n_tables,
            c.n_targets,
            c.resamples
        );
        out!(
            "A is not above B in {:.2}% of the resamples",
            100.0 * c.p_a_not_better
        );
    }
    Ok(())
}
