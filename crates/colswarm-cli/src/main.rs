//! `colswarm`: train, evaluate and run sigmoid-routed RWKV-7 swarms that annotate table columns.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

/// `println!` that returns an error instead of panicking when stdout is closed (`colswarm … |
/// head`): `main` then exits quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        writeln!($crate::stdout::Stdout::lock(), $($arg)*)?
    };
}

mod annotate;
mod calibrate;
mod device_arg;
mod evaluate;
mod fine_tune;
mod pretrain;
mod probe;
mod reader;
mod shard;
mod specialists;
mod stdout;
mod train;

use annotate::{AnnotateArgs, BenchArgs, EmbedArgs, InspectArgs};
use evaluate::{BaselineArgs, CompareArgs, EvalArgs};
use stdout::StdoutError;
use train::{AverageArgs, TrainArgs, TrainRouterArgs};

#[derive(Parser, Debug)]
#[command(name = "colswarm", version, about, long_about = None)]
struct Cli {
    /// Worker threads for tensor kernels (default: all cores).
    #[arg(long, global = true, value_parser = at_least_one)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Supervised training of a specialist (no specialists) or of a primary with its heads,
    /// from a recipe file (`--recipe recipes/colswarm-small.toml`: the shipped model's).
    Train(TrainArgs),
    /// Pretrains a knowledge specialist on a corpus from `scripts/knowledge/`.
    Pretrain(pretrain::PretrainArgs),
    /// Linear probes: what a model's and its specialists' frozen column representations know.
    Probe(probe::ProbeArgs),
    /// The PARL stage: trains the router (and orchestrator) of a model with frozen specialists,
    /// or, with `--experts`, the router and logit mix of its domain experts.
    TrainRouter(TrainRouterArgs),
    /// Scores a model on labelled data: micro / macro / weighted F1 and a per-label report.
    Eval(EvalArgs),
    /// Annotates tables: types, relations to the subject column, router decisions.
    Annotate(AnnotateArgs),
    /// Writes every column's embedding, the vector the model's heads read, one JSON line per
    /// table: for similarity search, clustering or a model of your own.
    Embed(EmbedArgs),
    /// Chooses, per namespace (types, or relations with `--task cpa`) and on labelled dev tables,
    /// the probability below which the model gives no label ("none fits"), and stores it in the
    /// model directory.
    Calibrate(calibrate::CalibrateArgs),
    /// Shows a model directory or checkpoint: configuration, sizes, checksums.
    Inspect(InspectArgs),
    /// Measures annotation throughput (columns/s), primary alone and with specialists.
    Bench(BenchArgs),
    /// Trains and scores a peer: majority class, character n-grams, or a header rule.
    Baseline(BaselineArgs),
    /// Is A better than B? A paired bootstrap over tables of two prediction files' micro-F1.
    Compare(CompareArgs),
    /// Adds your own column types to a model: a new namespace fitted on a few labelled columns
    /// (`labels.csv`: table,column,label); the model's own namespaces answer as before.
    FineTune(fine_tune::FineTuneArgs),
    /// Adds a specialist that contributes its answers to a model: a whole model (e.g. trained
    /// on one benchmark's tables alone), frozen, whose logits the router's gate lets into the
    /// primary's for the labels both know.
    #[command(alias = "add-expert")]
    AddSpecialist(specialists::AddSpecialistArgs),
    /// Adds an n-gram reader to one namespace of a model: a linear classifier over each
    /// column's character n-grams, trained on labelled tables, whose probabilities are mixed
    /// into the namespace's by a share chosen on dev tables.
    AddReader(reader::AddReaderArgs),
    /// Removes specialists of either kind from a model: a state specialist's gate, alignment
    /// and fusion parameters go with it, so the model answers as it did with it closed.
    RemoveSpecialist(specialists::RemoveSpecialistArgs),
    /// Averages the weights of model directories of one run (e.g. its last epochs' checkpoints)
    /// into a new model directory.
    Average(AverageArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(threads) = cli.threads {
        // Flex's kernels run on rayon's global pool.
        if let Err(e) = rayon_threads(threads) {
            eprintln!("error: {}", report(&e));
            return ExitCode::FAILURE;
        }
    }
    let result = match cli.command {
        Command::Train(args) => train::cmd_train(args),
        Command::Pretrain(args) => pretrain::cmd_pretrain(args),
        Command::Probe(args) => probe::cmd_probe(args),
        Command::TrainRouter(args) => train::cmd_train_router(args),
        Command::Eval(args) => evaluate::cmd_eval(args),
        Command::Annotate(args) => annotate::cmd_annotate(args),
        Command::Embed(args) => annotate::cmd_embed(args),
        Command::Calibrate(args) => calibrate::cmd_calibrate(args),
        Command::AddSpecialist(args) => specialists::cmd_add_specialist(args),
        Command::RemoveSpecialist(args) => specialists::cmd_remove_specialist(args),
        Command::AddReader(args) => reader::cmd_add_reader(args),
        Command::FineTune(args) => fine_tune::cmd_fine_tune(args),
        Command::Inspect(args) => annotate::cmd_inspect(args),
        Command::Bench(args) => annotate::cmd_bench(args),
        Command::Baseline(args) => evaluate::cmd_baseline(args),
        Command::Average(args) => train::cmd_average(args),
        Command::Compare(args) => evaluate::cmd_compare(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`| head`): not an error of ours.
        Err(e) if closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", report(&e));
            ExitCode::FAILURE
        }
    }
}

/// `error` and its causes on one line, each cause once: the libraries' errors already end with
/// the OS error they wrap, which the chain would repeat.
fn report(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
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

/// Parses a count that must be at least 1 (`--batch-size`, `--threads`, `--repeat`): a 0
/// would otherwise be quietly read as 1.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(count) => Ok(count),
        Err(e) => Err(e.to_string()),
    }
}

/// Sizes rayon's global pool, on which Flex's kernels and the fused WKV kernels run.
fn rayon_threads(threads: usize) -> Result<()> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build_global()
        .context("setting the thread count")
}
