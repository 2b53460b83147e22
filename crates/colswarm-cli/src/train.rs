//! `train`, `train-router` and `average`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use colswarm_train::{
    DataSpec, ExpertRoutingConfig, ExpertRoutingOptions, OptimizerSettings, ParlConfig,
    ParlOptions, Recipe, RunSettings, SpecialistSpec, TrainOptions, train, train_expert_routing,
    train_router,
};

use crate::device_arg::DeviceArg;

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
    /// The run's settings, a TOML file (`recipes/colswarm-small.toml` is the shipped model's;
    /// docs/TRAINING.md). Without it, the library's defaults: the shipped recipe's model
    /// without its specialists and word vectors.
    #[arg(long, value_name = "FILE")]
    recipe: Option<PathBuf>,
    /// Change one setting of the recipe, KEY=VALUE with KEY as `--print` writes it (e.g.
    /// `model.d_model=32`, `optimizer.learning_rate=1e-3`, `model.init_from=DIR`); repeatable,
    /// applied in order after the recipe and before the flags below.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Print the resolved recipe (the file, `--set` and the flags) as TOML, and exit.
    #[arg(long)]
    print: bool,
    /// Training set, NAME=FORMAT:PATH[,PATH...][#SPLIT] (repeatable; replaces the recipe's).
    #[arg(long = "train")]
    train: Vec<String>,
    /// Dev set for evaluation and early stopping, same syntax (repeatable; replaces the
    /// recipe's).
    #[arg(long = "dev")]
    dev: Vec<String>,
    /// Frozen specialist, NAME=PATH (checkpoint or model directory; repeatable; replaces the
    /// recipe's).
    #[arg(long = "specialist")]
    specialists: Vec<String>,
    /// Run directory (checkpoints, log, best model); an existing run there is resumed.
    #[arg(long, required_unless_present = "print")]
    out: Option<PathBuf>,
    /// Most epochs (the recipe's `stopping.epochs`).
    #[arg(long)]
    epochs: Option<usize>,
    /// The seed every random choice derives from (the recipe's `run.seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Use at most N tables of each training set, for a quick run (the recipe's
    /// `data.max_tables`; 0: all).
    #[arg(long)]
    max_tables: Option<usize>,
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
    /// Model directory from `colswarm train`: with specialists, or with domain experts
    /// (`--experts`).
    #[arg(long)]
    model: PathBuf,
    /// Train the router that opens the model's domain experts and the logit mix that weighs
    /// them (everything else frozen), instead of the specialists' router and the orchestrator.
    /// Give it tables the model and its experts were not trained on.
    #[arg(long)]
    experts: bool,
    /// Training set (repeatable), as for `train`.
    #[arg(long = "train", required = true)]
    train: Vec<String>,
    /// Dev set (repeatable).
    #[arg(long = "dev")]
    dev: Vec<String>,
    /// Run directory.
    #[arg(long)]
    out: PathBuf,
    /// Optimizer steps [default: 200; with --experts 300].
    #[arg(long)]
    steps: Option<usize>,
    /// Rollouts (sampled router masks) per table.
    #[arg(long, default_value_t = ParlConfig::default().rollouts, value_parser = crate::at_least_one)]
    rollouts: usize,
    /// Tables per step [default: 4; with --experts 16].
    #[arg(long, value_parser = crate::at_least_one)]
    batch_size: Option<usize>,
    /// Learning rate of every trained weight [default: 2e-4; with --experts 1e-2].
    #[arg(long)]
    lr: Option<f64>,
    /// λ schedule: aegir (piecewise), linear, cosine; `zero-parallel` sets λ1 = 0 and `zero`
    /// λ1 = λ2 = 0 (ablations).
    #[arg(long, default_value = "aegir")]
    schedule: String,
    /// Critical-step budget per table rollout, in tokens: an activated specialist whose read
    /// ends past it has not finished, which lowers r_finish (default: no budget, every
    /// activated specialist finishes).
    #[arg(long)]
    step_budget: Option<u64>,
    /// With --experts: subtracted from a rollout's reward for each expert it opens.
    #[arg(long, default_value_t = ExpertRoutingConfig::default().read_cost)]
    read_cost: f64,
    /// With --experts: keep the model's router and train the mix alone.
    #[arg(long)]
    mix_only: bool,
    /// With --experts: start every weight of the mix at this θ (0: the primary alone, 1: the
    /// plain average) instead of the model's own.
    #[arg(long)]
    mix_start: Option<f64>,
    /// Evaluate on the dev sets every N steps (0: only after the last).
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

/// The recipe `args` resolve to: the file (or the defaults), then `--set`, then the flags.
fn resolve_recipe(args: &TrainArgs) -> Result<Recipe> {
    let mut recipe = match &args.recipe {
        Some(path) => Recipe::read(path)?,
        None => Recipe::default(),
    };
    recipe.set_all(&args.set)?;
    let config = &mut recipe.train;
    if !args.train.is_empty() {
        config.data.train = specs(&args.train)?;
    }
    if !args.dev.is_empty() {
        config.data.dev = specs(&args.dev)?;
    }
    if !args.specialists.is_empty() {
        config.model.specialists = args
            .specialists
            .iter()
            .map(|s| s.parse::<SpecialistSpec>())
            .collect::<Result<_, _>>()?;
    }
    if let Some(epochs) = args.epochs {
        config.stopping.epochs = epochs;
    }
    if let Some(seed) = args.seed {
        config.run.seed = seed;
    }
    if let Some(max_tables) = args.max_tables {
        config.data.max_tables = max_tables;
    }
    Ok(recipe)
}

pub(crate) fn cmd_train(args: TrainArgs) -> Result<()> {
    let recipe = resolve_recipe(&args)?;
    if args.print {
        out!("{}", recipe.to_toml()?);
        return Ok(());
    }
    let out = args
        .out
        .context("--out RUN is needed to train (only --print goes without)")?;
    let config = recipe.train;
    if config.data.train.is_empty() {
        anyhow::bail!(
            "no training data: give --train NAME=FORMAT:PATH, or a recipe whose [data] has train"
        );
    }
    let summary = train(
        &config,
        &out,
        &TrainOptions {
            progress: !args.quiet,
            stop_after_steps: None,
            devices: vec![args.device.open()?; args.replicas as usize],
        },
    )?;
    out!("{}", serde_json::to_string_pretty(&summary)?);
    if recipe.average_last > 0 && summary.finished {
        let averaged = out.join("averaged");
        if averaged.exists() {
            // A finished run run again: its checkpoints, and so their mean, are unchanged.
            eprintln!("{} exists; left as it is", averaged.display());
        } else {
            let inputs = colswarm_train::average_last_epochs(&out, recipe.average_last, &averaged)
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
    if args.experts {
        return cmd_route_experts(args);
    }
    let defaults = ParlConfig::default();
    let mut config = ParlConfig {
        model: args.model.clone(),
        train: specs(&args.train)?,
        dev: specs(&args.dev)?,
        steps: args.steps.unwrap_or(defaults.steps),
        eval_every: args.eval_every,
        rollouts: args.rollouts,
        schedule: args.schedule.parse()?,
        optimizer: args.optimizer(&defaults.optimizer),
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

impl TrainRouterArgs {
    /// The stage's optimizer `defaults` with `--batch-size` and `--lr` where given.
    fn optimizer(&self, defaults: &OptimizerSettings) -> OptimizerSettings {
        OptimizerSettings {
            batch_size: self.batch_size.unwrap_or(defaults.batch_size),
            learning_rate: self.lr.unwrap_or(defaults.learning_rate),
            ..defaults.clone()
        }
    }
}

/// `train-router --experts`: the experts' router and logit mix.
fn cmd_route_experts(args: TrainRouterArgs) -> Result<()> {
    let defaults = ExpertRoutingConfig::default();
    let mut config = ExpertRoutingConfig {
        model: args.model.clone(),
        train: specs(&args.train)?,
        dev: specs(&args.dev)?,
        steps: args.steps.unwrap_or(defaults.steps),
        eval_every: args.eval_every,
        rollouts: args.rollouts,
        schedule: args.schedule.parse()?,
        read_cost: args.read_cost,
        train_router: !args.mix_only,
        mix_start: args.mix_start,
        optimizer: args.optimizer(&defaults.optimizer),
        run: RunSettings {
            seed: args.seed,
            ..defaults.run
        },
        ..defaults
    };
    config.reward.step_budget = args.step_budget;
    let options = ExpertRoutingOptions {
        progress: !args.quiet,
        device: Some(args.device.open()?),
    };
    let summary = train_expert_routing(&config, &args.out, &options)?;
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
