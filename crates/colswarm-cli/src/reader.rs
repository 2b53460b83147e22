//! `add-reader`: trains an n-gram reader for one namespace of a model on labelled tables,
//! chooses its share on dev tables (or takes the one given), and stores it in the model
//! directory ([`colswarm_model::reader`]). `--share` alone on a model whose namespace has a
//! reader changes its share.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use colswarm_eval::{
    BaselineConfig, DataSpec, EvalOptions, ReaderTraining, SHARE_GRID, choose_share, evaluate,
    share_curve, train_reader,
};
use colswarm_model::{Model, ModelDir, NgramReader, SpecialistUse, Task};
use colswarm_rwkv::checkpoint::Precision;
use serde::Serialize;

use crate::calibrate::copy_model_dir;
use crate::device_arg::DeviceArg;
use crate::evaluate::load_model;

#[derive(Args, Debug)]
pub(crate) struct AddReaderArgs {
    /// Model directory whose namespace gains the reader.
    #[arg(long)]
    model: PathBuf,
    /// cta or cpa.
    #[arg(long)]
    task: Task,
    /// The namespace (default: the training set's NAME).
    #[arg(long)]
    namespace: Option<String>,
    /// Labelled tables the reader learns from, NAME=FORMAT:PATH[#SPLIT] (give the tables the
    /// model was trained on: a reader that has seen the dev tables would choose its own share).
    #[arg(long)]
    train: Option<String>,
    /// Labelled dev tables, same syntax: the share is the one of `0, 0.1, …, 0.9` whose mixture
    /// scores the best micro-F1 there (the smaller on a tie).
    #[arg(long, conflicts_with = "share")]
    dev: Option<String>,
    /// The share of the mixture, in [0, 1], instead of choosing it on --dev. Without --train it
    /// changes the share of the reader the namespace has.
    #[arg(long)]
    share: Option<f32>,
    /// The reader's features also hold each column's value statistics.
    #[arg(long)]
    value_stats: bool,
    /// The reader's features also hold each column's place in its table.
    #[arg(long)]
    position: bool,
    /// Hash buckets: the reader holds `buckets × labels` weights (2^10 keeps the T2D readers
    /// near 0.5 MB each in half floats, and scores as 2^16 does there).
    #[arg(long, default_value_t = 1 << 10, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    buckets: u64,
    /// Passes over the training targets.
    #[arg(long, default_value_t = 10)]
    epochs: usize,
    /// Seed of the order training visits the targets in.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How the weights are stored.
    #[arg(long, value_enum, default_value_t = Stored::F16)]
    precision: Stored,
    /// Write the model with its reader to this new directory (a copy of --model) instead of
    /// changing --model in place.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[arg(long, default_value_t = 16, value_parser = crate::at_least_one)]
    batch_size: usize,
    #[command(flatten)]
    device: DeviceArg,
}

/// How a reader's weights are stored.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Stored {
    /// Half floats: half the size; the mixture moves by about 10⁻³.
    F16,
    /// 32-bit floats, as trained.
    F32,
}

/// What `add-reader` did, as `--json` prints it.
#[derive(Debug, Serialize)]
struct ReaderReport {
    task: Task,
    namespace: String,
    directory: PathBuf,
    share: f32,
    /// The dev set's micro-F1 at every share tried (none with `--share`).
    curve: Vec<(f32, f64)>,
    buckets: Option<u32>,
    bytes: Option<u64>,
}

pub(crate) fn cmd_add_reader(args: AddReaderArgs) -> Result<()> {
    if let Some(share) = args.share
        && !(0.0..=1.0).contains(&share)
    {
        bail!("--share {share}: a share lies in [0, 1]");
    }
    let train_spec: Option<DataSpec> = args.train.as_deref().map(str::parse).transpose()?;
    let name = match (&args.namespace, &train_spec) {
        (Some(name), _) => name.clone(),
        (None, Some(spec)) => spec.namespace.clone(),
        (None, None) => bail!("--namespace or --train names the namespace"),
    };
    let model = load_model(&args.model, args.device)?;
    let index = model
        .space
        .list(args.task)
        .iter()
        .position(|n| n.name == name)
        .with_context(|| {
            let known: Vec<&str> = model
                .space
                .list(args.task)
                .iter()
                .map(|n| n.name.as_str())
                .collect();
            format!(
                "{} has no {} namespace `{name}` (it has: {})",
                args.model.display(),
                args.task,
                known.join(", ")
            )
        })?;
    let dir = match &args.out {
        Some(out) => {
            copy_model_dir(&args.model, out)?;
            out.clone()
        }
        None => args.model.clone(),
    };
    let Some(spec) = train_spec else {
        let Some(share) = args.share else {
            bail!("give --train (and --dev or --share) to add a reader, or --share to change one");
        };
        ModelDir::open(&dir)?.set_reader_share(args.task, &name, share)?;
        return finish(&args, &dir, &name, share, Vec::new());
    };
    if args.dev.is_none() && args.share.is_none() {
        bail!("--dev chooses the reader's share, or --share gives it");
    }
    let namespace = &model.space.list(args.task)[index];
    let tables = spec.load()?.tables;
    eprintln!(
        "training the reader of {} `{name}` on {} tables",
        args.task,
        tables.len()
    );
    let training = ReaderTraining {
        config: BaselineConfig {
            seed: args.seed,
            epochs: args.epochs,
            buckets: usize::try_from(args.buckets)?,
            value_stats: args.value_stats,
            position: args.position,
            ..BaselineConfig::default()
        },
    };
    let (features, mut weights, mut bias) = train_reader(&training, args.task, namespace, &tables);
    let precision = match args.precision {
        Stored::F16 => Precision::F16,
        Stored::F32 => Precision::F32,
    };
    if precision == Precision::F16 {
        // The share is chosen on the weights as they will be stored.
        for w in weights.iter_mut().chain(bias.iter_mut()) {
            *w = half::f16::from_f32(*w).to_f32();
        }
    }
    let sigmoids = namespace.activation == colswarm_model::Activation::Sigmoid;
    let (share, curve) = match (&args.dev, args.share) {
        (_, Some(share)) => (share, Vec::new()),
        (Some(dev), None) => {
            let reader = NgramReader::new(features, weights.clone(), bias.clone(), 0.0, sigmoids);
            let curve = dev_curve(&args, &model, index, &name, dev, &reader)?;
            (choose_share(&curve), curve)
        }
        (None, None) => unreachable!("checked above"),
    };
    let device = args.device.open()?;
    ModelDir::open(&dir)?.set_reader(
        args.task,
        &name,
        features,
        (&weights, &bias),
        share,
        precision,
        &device,
    )?;
    finish(&args, &dir, &name, share, curve)
}

/// The dev set's micro-F1 at each share of the grid, from the model's probabilities without
/// the namespace's reader.
fn dev_curve(
    args: &AddReaderArgs,
    model: &Model,
    index: usize,
    name: &str,
    dev: &str,
    reader: &NgramReader,
) -> Result<Vec<(f32, f64)>> {
    let spec: DataSpec = dev.parse()?;
    let data = spec.load()?;
    let mut without = model.clone();
    let list = match args.task {
        Task::Cta => &mut without.readers[0],
        Task::Cpa => &mut without.readers[1],
    };
    if let Some(slot) = list.get_mut(index) {
        *slot = None;
    }
    let options = EvalOptions {
        task: args.task,
        namespace: Some(name.to_string()),
        batch_size: args.batch_size,
        specialists: SpecialistUse::Router,
        progress: true,
        probabilities: true,
        own_subject: false,
    };
    let report = evaluate(&without, &data.tables, spec.format, &options)
        .with_context(|| format!("scoring {} on --dev {dev}", args.model.display()))?;
    let namespace = &model.space.list(args.task)[index];
    Ok(share_curve(
        &report.targets,
        &data.tables,
        namespace,
        reader,
        &SHARE_GRID,
    ))
}

/// Loads what was written (checksums and all) and reports it.
fn finish(
    args: &AddReaderArgs,
    dir: &std::path::Path,
    name: &str,
    share: f32,
    curve: Vec<(f32, f64)>,
) -> Result<()> {
    let model = Model::load(dir, &args.device.open()?)
        .with_context(|| format!("loading {} with its reader", dir.display()))?;
    let file = model
        .space
        .list(args.task)
        .iter()
        .find(|n| n.name == name)
        .and_then(|n| n.reader.clone());
    let bytes = file
        .as_ref()
        .and_then(|f| std::fs::metadata(dir.join(&f.path)).ok())
        .map(|m| m.len());
    let report = ReaderReport {
        task: args.task,
        namespace: name.to_string(),
        directory: dir.to_path_buf(),
        share,
        curve,
        buckets: file.as_ref().map(|f| f.features.buckets),
        bytes,
    };
    if args.json {
        out!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    for (w, f1) in &report.curve {
        out!("  share {w:.1}: micro-F1 {f1:.4} on --dev");
    }
    out!(
        "{} `{name}` of {}: n-gram reader at share {share}{}",
        args.task,
        dir.display(),
        match (report.buckets, report.bytes) {
            (Some(b), Some(n)) => format!(" ({b} buckets, {:.2} MB)", n as f64 / 1e6),
            _ => String::new(),
        }
    );
    Ok(())
}
