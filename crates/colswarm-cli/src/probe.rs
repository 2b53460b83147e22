//! `probe`: linear probes of a model's and its specialists' frozen column representations.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use colswarm_eval::write_predictions;
use colswarm_model::Model;
use colswarm_train::{ProbeConfig, SpecialistSpec, probe};

use crate::device_arg::DeviceArg;
use crate::train::specs;

#[derive(Args, Debug)]
pub(crate) struct ProbeArgs {
    /// The model whose primary is probed (its column representations, specialists off).
    #[arg(long)]
    model: PathBuf,
    /// A specialist to probe, NAME=PATH (checkpoint or model directory; repeatable).
    #[arg(long = "specialist")]
    specialists: Vec<String>,
    /// Data the probes are fitted on, NAME=FORMAT:PATH[#SPLIT] (repeatable).
    #[arg(long = "train", required = true)]
    train: Vec<String>,
    /// Data they are scored on; each needs a --train of the same NAME (repeatable).
    #[arg(long = "dev", required = true)]
    dev: Vec<String>,
    /// Full-batch Adam steps of each probe.
    #[arg(long, default_value_t = 300)]
    steps: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write each probe's dev predictions here (`NAME.FEATURES.jsonl`, for `compare`).
    #[arg(long)]
    predictions: Option<PathBuf>,
    /// Print the reports as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    device: DeviceArg,
}

pub(crate) fn cmd_probe(args: ProbeArgs) -> Result<()> {
    let device = args.device.open()?;
    let model = Model::load(&args.model, &device)
        .with_context(|| format!("loading {}", args.model.display()))?;
    let specialists = args
        .specialists
        .iter()
        .map(|s| Ok(s.parse::<SpecialistSpec>()?.load(&device)?))
        .collect::<Result<Vec<_>>>()?;
    let load = |list: &[String]| -> Result<Vec<_>> {
        specs(list)?
            .into_iter()
            .map(|spec| {
                let data = spec.load()?;
                Ok((spec, data))
            })
            .collect()
    };
    let (train, dev) = (load(&args.train)?, load(&args.dev)?);
    let config = ProbeConfig {
        steps: args.steps,
        seed: args.seed,
        ..ProbeConfig::default()
    };
    let reports = probe(&model, &specialists, &train, &dev, &config)?;
    if let Some(dir) = &args.predictions {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for report in &reports {
            for (features, predictions) in &report.predictions {
                let path = dir.join(format!("{}.{features}.jsonl", report.namespace));
                write_predictions(&path, predictions)?;
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    for report in &reports {
        println!(
            "{} {:?}: probes fitted on {} targets, scored on {}",
            report.namespace, report.task, report.train_targets, report.dev_targets
        );
        for score in &report.scores {
            println!(
                "  {:<28} width {:>4}  micro-F1 {:.3}  macro-F1 {:.3}",
                score.features, score.width, score.micro_f1, score.macro_f1
            );
        }
    }
    Ok(())
}
