//! `pretrain`: a knowledge specialist from a corpus exported by `scripts/knowledge/`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use colswarm_train::{Objective, PretrainConfig, PretrainOptions, pretrain};

use crate::device_arg::DeviceArg;

#[derive(Args, Debug)]
pub(crate) struct PretrainArgs {
    /// What the specialist learns: distill (teacher embeddings of cells and columns),
    /// gazetteer (typing synthetic gazetteer columns) or header (a column's header from its
    /// cells).
    #[arg(long)]
    objective: Objective,
    /// The knowledge corpus directory (`.knowledge/corpus` after `scripts/knowledge/`).
    #[arg(long)]
    corpus: PathBuf,
    /// Run directory (checkpoints, log, `specialist.safetensors`, `report.json`); an existing
    /// run there is resumed.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = defaults().encoder.d_model)]
    d_model: usize,
    #[arg(long, default_value_t = defaults().encoder.n_layers)]
    layers: usize,
    #[arg(long, default_value_t = defaults().encoder.head_size)]
    head_size: usize,
    /// Optimizer steps.
    #[arg(long, default_value_t = defaults().steps)]
    steps: usize,
    /// Synthetic tables per step.
    #[arg(long, default_value_t = defaults().optimizer.batch_size, value_parser = crate::at_least_one)]
    batch_size: usize,
    #[arg(long, default_value_t = defaults().optimizer.learning_rate)]
    lr: f64,
    /// Held-out tables scored at each evaluation.
    #[arg(long, default_value_t = defaults().data.eval_tables)]
    eval_tables: usize,
    /// Score the held-out tables every this many steps (0: only at the end).
    #[arg(long, default_value_t = defaults().eval_every)]
    eval_every: usize,
    #[arg(long, default_value_t = defaults().run.checkpoint_every)]
    checkpoint_every: usize,
    #[arg(long, default_value_t = defaults().run.seed)]
    seed: u64,
    /// Stop after this many steps in this process (resume later with the same command).
    #[arg(long)]
    stop_after_steps: Option<usize>,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    device: DeviceArg,
}

/// The library's defaults, which are the same for every objective.
fn defaults() -> PretrainConfig {
    PretrainConfig::new(Objective::Distill)
}

pub(crate) fn cmd_pretrain(args: PretrainArgs) -> Result<()> {
    let mut config = PretrainConfig::new(args.objective);
    config.encoder.d_model = args.d_model;
    config.encoder.n_layers = args.layers;
    config.encoder.head_size = args.head_size;
    config.steps = args.steps;
    config.optimizer.batch_size = args.batch_size;
    config.optimizer.learning_rate = args.lr;
    config.data.eval_tables = args.eval_tables;
    config.eval_every = args.eval_every;
    config.run.checkpoint_every = args.checkpoint_every;
    config.run.seed = args.seed;
    let options = PretrainOptions {
        progress: !args.quiet,
        stop_after_steps: args.stop_after_steps,
        device: Some(args.device.open()?),
    };
    let summary = pretrain(&config, &args.corpus, &args.out, &options)
        .with_context(|| format!("pretraining in {}", args.out.display()))?;
    if summary.finished {
        println!(
            "{} steps; specialist: {}; held-out: {}",
            summary.steps,
            summary.specialist.display(),
            serde_json::to_string(&summary.score)?
        );
    } else {
        println!(
            "stopped at step {} of {}; run the same command to resume",
            summary.steps, config.steps
        );
    }
    Ok(())
}
