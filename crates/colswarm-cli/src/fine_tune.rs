//! `fine-tune`: your own column types on the shipped model. Label a few columns in a
//! `labels.csv` (`table,column,label`), and a new namespace is fitted on the frozen model; the
//! shipped namespaces keep their outputs exactly ([`colswarm_train::fine_tune`]).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use colswarm_tables::{ReadTableOptions, TextEncoding, read_labelled_tables_with_report};
use colswarm_train::{FineTuneConfig, fine_tune, partial_dir};

#[derive(Args, Debug)]
pub(crate) struct FineTuneArgs {
    /// The model to extend (it is not changed).
    #[arg(long, default_value = "models/colswarm-small")]
    model: PathBuf,
    /// The folder the labels file's table paths are relative to.
    #[arg(long)]
    tables: PathBuf,
    /// `labels.csv` with a `table,column,label` header: one row per label of a column (a
    /// column is an index from 0 or a header).
    #[arg(long)]
    labels: PathBuf,
    /// Name of the new namespace (letters, digits, `-`, `_`).
    #[arg(long)]
    namespace: String,
    /// The new model directory (must not exist, or be empty). An interrupted run leaves
    /// OUT.partial/, which the same command reuses.
    #[arg(long)]
    out: PathBuf,
    /// Seed of the head's initial weights.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Most optimisation steps (a held-out fifth of the tables picks how many).
    #[arg(long, default_value_t = 300)]
    max_steps: usize,
    /// Candidate L2 penalties on the head's weights (the held-out slice picks one).
    #[arg(long, value_delimiter = ',', default_values_t = [0.01, 0.03, 0.1, 0.3, 1.0])]
    l2: Vec<f64>,
    /// Never abstain (no threshold chosen on the held-out slice).
    #[arg(long)]
    no_abstain: bool,
    /// The text encoding of the labels file and the CSV and TSV tables: utf-8; windows-1252
    /// (also read as latin-1, iso-8859-1 or cp1252); or auto, each cell as UTF-8 where it is
    /// valid UTF-8, else as windows-1252.
    #[arg(long, default_value_t = TextEncoding::Utf8, value_name = "ENCODING")]
    encoding: TextEncoding,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

pub(crate) fn cmd_fine_tune(args: FineTuneArgs) -> Result<()> {
    let options = ReadTableOptions {
        encoding: args.encoding,
        ..ReadTableOptions::default()
    };
    let (tables, read_reports) =
        read_labelled_tables_with_report(&args.labels, &args.tables, &options)?;
    // As `annotate` says it: every repair, even with `--quiet` (sampling is routine).
    for (file, report) in &read_reports {
        let repairs = report.repairs();
        if !repairs.is_clean() {
            eprintln!("{}: {repairs}", file.display());
        }
    }
    let config = FineTuneConfig {
        seed: args.seed,
        l2: args.l2.clone(),
        max_steps: args.max_steps.max(1),
        eval_every: 10.min(args.max_steps.max(1)),
        abstain: !args.no_abstain,
        progress: !args.quiet,
        ..FineTuneConfig::new(&args.namespace)
    };
    if partial_dir(&args.out).exists() && !args.quiet {
        eprintln!(
            "resuming from {} (its features are reused when the model and tables are unchanged)",
            partial_dir(&args.out).display()
        );
    }
    let report = fine_tune(&args.model, &tables, &args.out, &config).with_context(|| {
        format!(
            "fine-tuning {} into {}",
            args.model.display(),
            args.out.display()
        )
    })?;
    if !report.rare_labels.is_empty() {
        let listed: Vec<String> = report
            .rare_labels
            .iter()
            .map(|(label, count)| format!("{label} ({count})"))
            .collect();
        eprintln!(
            "warning: {} of {} labels have fewer than {} labelled columns, too few for a useful estimate: {}",
            report.rare_labels.len(),
            report.labels.len(),
            config.min_examples,
            listed.join(", ")
        );
    }
    println!(
        "added namespace `{}`: {} labels ({}), {} labelled columns from {} tables",
        report.namespace,
        report.labels.len(),
        if report.multi_label {
            "multi-label"
        } else {
            "single-label"
        },
        report.columns,
        report.tables
    );
    match report.held_out_micro_f1 {
        Some(f1) => println!(
            "held-out slice ({} columns): micro-F1 {f1:.3}; chose L2 {}, {} steps, n-gram share {}; abstains below {}",
            report.held_out_columns,
            report.l2,
            report.steps,
            report.ngram_share,
            report
                .abstain_below
                .map_or("never".to_string(), |t| format!("{t:.2}"))
        ),
        None => {
            println!("too few labelled columns to hold any out: default settings, no abstention")
        }
    }
    if report.columns_skipped > 0 {
        eprintln!(
            "warning: {} labelled columns lie past the columns the model reads and were left out",
            report.columns_skipped
        );
    }
    println!(
        "wrote {} in {:.1} s; annotate with: colswarm annotate --model {} TABLE",
        args.out.display(),
        report.seconds,
        args.out.display()
    );
    Ok(())
}
