//! `eval`, `baseline` and `compare`: scores against gold labels, and two systems compared.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use colswarm_eval::{
    BaselineConfig, BaselineKind, BootstrapConfig, DataSpec, DatasetFormat, EvalOptions,
    EvalReport, Split, TargetPrediction, baseline_predictions, default_task, evaluate,
    load_tables_encoded, paired_bootstrap_runs, read_predictions, score_predictions,
    train_baseline, write_predictions,
};
use colswarm_model::{LabelSpace, Model, SpecialistUse, Task, TextEncoding, cta_kind};

use crate::device_arg::DeviceArg;

#[derive(Args, Debug)]
pub(crate) struct EvalArgs {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Input format: turl-csv, sato-cv, t2d, sotab, semtab, or labels (your own labelled
    /// columns: `--input TABLES_DIR --input LABELS.csv`).
    #[arg(long)]
    format: DatasetFormat,
    /// File or directory of the data (repeatable).
    #[arg(long)]
    input: Vec<PathBuf>,
    /// Keep only this part of the hash split (all, train, dev, folds=I,J,… of the five,
    /// folds=I,J,…/half=H, one of two halves of them, or a union of those joined by `+`).
    #[arg(long, default_value = "all")]
    split: Split,
    /// With `--format labels`: the text encoding of the labels file and the CSV and TSV tables
    /// it names, utf-8, windows-1252 or auto (as `fine-tune --encoding`).
    #[arg(long, default_value_t = TextEncoding::Utf8, value_name = "ENCODING")]
    encoding: TextEncoding,
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
    /// CPA: read relations from the subject column the model finds in each table, as
    /// `annotate` does, instead of the set's; a pair from another column scores as a miss.
    #[arg(long)]
    own_subject: bool,
    /// Print one JSON object (with the per-label report) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write every scored target (table, column, gold and predicted labels) to this file,
    /// one JSON object per line, for `colswarm compare`.
    #[arg(long)]
    predictions: Option<PathBuf>,
    #[arg(long, default_value_t = 16, value_parser = crate::at_least_one)]
    batch_size: usize,
    #[command(flatten)]
    device: DeviceArg,
}

#[derive(Args, Debug)]
pub(crate) struct BaselineArgs {
    /// majority, char-ngram, header-rule (no training: the label whose name shares the most
    /// words with the header) or header-memory (the label seen most often with the header in
    /// training).
    #[arg(long)]
    kind: BaselineKind,
    /// With char-ngram: add WEIGHT · (word overlap of header and label name) to every label's
    /// score, as the model's label-name prior does, so that a comparison measures the model.
    #[arg(long, value_name = "WEIGHT", allow_negative_numbers = true)]
    label_name_prior: Option<f32>,
    /// With char-ngram: each column's features also hold its value statistics (whether its
    /// numbers count up by one, are years; how long and how distinct its cells are).
    #[arg(long)]
    value_stats: bool,
    /// With char-ngram: each column's features also hold its place in the table (its index
    /// from either end, the table's width), which the model reads from each column's query.
    #[arg(long)]
    position: bool,
    /// With char-ngram: hash buckets of the feature space; the weights hold `buckets × labels`
    /// floats.
    #[arg(long, default_value_t = 1 << 16, value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    buckets: u64,
    /// Training set NAME=FORMAT:PATH[#SPLIT] (a `labels` set in Windows-1252:
    /// NAME=labels;encoding=windows-1252:PATH…).
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
    #[arg(long)]
    json: bool,
    /// Also write every scored target to this file (JSON Lines, as `eval --predictions`).
    #[arg(long)]
    predictions: Option<PathBuf>,
    /// Leave multi-label predictions unclosed under the label hierarchy (as a model trained
    /// with the recipe setting `model.hierarchy_closure = false`).
    #[arg(long)]
    no_hierarchy_closure: bool,
}

#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// Predictions of system A (`eval --predictions` or `baseline --predictions`).
    a: PathBuf,
    /// Predictions of system B, on the same targets.
    b: PathBuf,
    /// Another run of A and of B (another seed of each, say), in that order: its targets are
    /// pooled with the others, and each table's targets from every run are drawn together
    /// (repeatable).
    #[arg(long = "run", num_args = 2, value_names = ["A", "B"], action = clap::ArgAction::Append)]
    runs: Vec<PathBuf>,
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

pub(crate) fn load_model(dir: &Path, device: DeviceArg) -> Result<Model> {
    Model::load(dir, &device.open()?)
        .with_context(|| format!("loading the model in {}", dir.display()))
}

pub(crate) fn cmd_eval(args: EvalArgs) -> Result<()> {
    if args.input.is_empty() {
        bail!("--input names no file or directory");
    }
    // The data first: a bad file or option fails before the model's weights are read.
    let data = load_tables_encoded(args.format, &args.input, args.split, args.encoding)?;
    let model = load_model(&args.model, args.device)?;
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
        own_subject: args.own_subject,
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
        print_report(&report, &args, task)?;
    }
    Ok(())
}

/// The report as text: the scores, abstention, routing and every label's.
fn print_report(report: &EvalReport, args: &EvalArgs, task: Task) -> Result<()> {
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
    if let Some(a) = &report.abstention {
        let a = &a.at_threshold;
        out!(
            "abstaining below {:.2} (stored in the model): coverage {:.4} ({} of {} targets labelled), precision {:.4}, micro-F1 {:.4}",
            a.threshold,
            a.coverage,
            a.answered,
            a.targets,
            a.precision,
            a.micro_f1
        );
    }
    for line in report.routing.lines() {
        out!("{line}");
    }
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
    Ok(())
}

/// `--no-specialists` runs the primary alone; otherwise the router decides.
pub(crate) fn specialist_use(no_specialists: bool) -> SpecialistUse {
    if no_specialists {
        SpecialistUse::Off
    } else {
        SpecialistUse::Router
    }
}

pub(crate) fn cmd_baseline(args: BaselineArgs) -> Result<()> {
    let train_spec: DataSpec = args.train.parse()?;
    let eval_spec: DataSpec = args.eval.parse()?;
    let train_data = train_spec.load()?;
    let eval_data = eval_spec.load()?;
    let task = args
        .task
        .unwrap_or_else(|| default_task(train_spec.format, &train_data.tables));
    let mut space = LabelSpace::default();
    let (labels, kind) = match task {
        Task::Cta => (&train_data.cta_labels, cta_kind(train_spec.format)),
        Task::Cpa => (
            &train_data.cpa_labels,
            colswarm_swarm::LabelKind::SingleLabel,
        ),
    };
    // The same label hierarchy as a model trained on this set closes its predictions with.
    space.push_label_set(task, &train_spec.namespace, train_spec.format, kind, labels);
    if args.no_hierarchy_closure {
        space.clear_hierarchies();
    }
    let namespace = space
        .list(task)
        .first()
        .context("the training set has no label for this task")?;
    if let Some(weight) = args.label_name_prior {
        if args.kind != BaselineKind::CharNgram {
            bail!("--label-name-prior applies to --kind char-ngram only");
        }
        if !weight.is_finite() || weight < 0.0 {
            bail!("--label-name-prior {weight}: the weight must be a finite number ≥ 0");
        }
    }
    let config = BaselineConfig {
        kind: args.kind,
        seed: args.seed,
        label_name_weight: args.label_name_prior,
        value_stats: args.value_stats,
        position: args.position,
        buckets: usize::try_from(args.buckets)?,
        ..BaselineConfig::default()
    };
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
        value["label_name_prior"] = serde_json::json!(args.label_name_prior);
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

pub(crate) fn cmd_compare(args: CompareArgs) -> Result<()> {
    let read = |path: &PathBuf| read_predictions(path).map_err(anyhow::Error::from);
    let files: Vec<(&PathBuf, &PathBuf)> = std::iter::once((&args.a, &args.b))
        .chain(args.runs.chunks_exact(2).map(|pair| (&pair[0], &pair[1])))
        .collect();
    let mut runs = Vec::with_capacity(files.len());
    for (a, b) in &files {
        runs.push((read(a)?, read(b)?));
    }
    let config = BootstrapConfig {
        resamples: args.resamples,
        confidence: args.confidence,
        seed: args.seed,
    };
    let pairs: Vec<(&[TargetPrediction], &[TargetPrediction])> = runs
        .iter()
        .map(|(a, b)| (a.as_slice(), b.as_slice()))
        .collect();
    let c = paired_bootstrap_runs(&pairs, &config).with_context(|| {
        let named: Vec<String> = files
            .iter()
            .map(|(a, b)| format!("{} with {}", a.display(), b.display()))
            .collect();
        format!("comparing {}", named.join(", and "))
    })?;
    if args.json {
        out!("{}", serde_json::to_string(&c)?);
    } else {
        out!(
            "micro-F1 A {:.4}  B {:.4}  A − B {:+.4}  ({:.0}% interval {:+.4} to {:+.4}; {} tables, {} targets{}, {} resamples)",
            c.micro_f1_a,
            c.micro_f1_b,
            c.difference,
            100.0 * c.confidence,
            c.ci_low,
            c.ci_high,
            c.n_tables,
            c.n_targets,
            if c.runs > 1 {
                format!(" of {} runs", c.runs)
            } else {
                String::new()
            },
            c.resamples
        );
        out!(
            "A is not above B in {:.2}% of the resamples",
            100.0 * c.p_a_not_better
        );
    }
    Ok(())
}
