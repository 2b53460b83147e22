//! The PARL loop: batches of tables, a step each, dev evaluation and checkpoints every
//! `eval_every` steps, resuming where a run stopped.

use std::path::Path;

use burn::optim::GradientsParams;
use burn::tensor::Device;
use colswarm_model::{Example, LabelSpace, SerializeSettings, featurizer, load_model_extras};
use colswarm_parl::{AdvantageConfig, RewardConfig};
use colswarm_swarm::manifest::SwarmManifest;
use colswarm_swarm::{FrozenSpecialist, OrchestratorConfig, Swarm};
use colswarm_tables::{DataSpec, LoadedData};

use super::config::{ParlConfig, ParlOptions, ParlSummary};
use super::data::load_train_examples;
use super::step::parl_step;
use crate::error::TrainError;
use crate::param_ids::renumber;
use crate::run::{
    Checkpoints, Computed, Driver, Evaluation, Log, ModelParts, Retention, RolloutStep, RunDir,
    RunState, Schedule, Stage, Trained, build_optimizer, check_optimizer, dev_evaluation,
    dev_reports, resume,
};

/// Refuses configurations that cannot run.
fn check(config: &ParlConfig) -> Result<(), TrainError> {
    if config.rollouts < 2 {
        return Err(TrainError::Config(
            "PARL needs at least 2 rollouts per table".into(),
        ));
    }
    if config.steps == 0 {
        return Err(TrainError::Config("steps must be at least 1".into()));
    }
    check_optimizer(&config.optimizer)
}

/// The PARL stage for the [`Driver`]: `K` sampled router masks per table, rewarded.
struct Parl<'a> {
    config: &'a ParlConfig,
    space: &'a LabelSpace,
    serialize: &'a SerializeSettings,
    train: &'a [Example],
    dev: &'a [(DataSpec, LoadedData)],
    reward: RewardConfig,
    advantage: AdvantageConfig,
    /// The mean activation rate of the last dev evaluation.
    last_rate: Option<f64>,
}

impl Stage for Parl<'_> {
    type Model = Swarm;

    fn batches(&self) -> usize {
        self.train.len().div_ceil(self.config.optimizer.batch_size)
    }

    fn gradients(&mut self, swarm: &Swarm, state: &RunState) -> Result<Computed, TrainError> {
        let config = self.config;
        let (seed, batch_size) = (config.run.seed, config.optimizer.batch_size);
        let mut step = RolloutStep::draw(self.train, seed, state, batch_size, config.steps);
        let (loss, mut stats) = parl_step(
            swarm,
            self.space,
            &step.picked,
            config,
            &self.reward,
            &self.advantage,
            step.progress,
            &mut step.rng,
        )?;
        let grads = GradientsParams::from_grads(loss.backward(), &swarm.orchestrator);
        let n_specialists = swarm.specialists.len().max(1);
        let line = format!(
            "reward {:.3} F1 {:.3} active {:.2}",
            stats.reward,
            stats.r_perf,
            stats.activation_rate.iter().sum::<f64>() / n_specialists as f64
        );
        let entry = serde_json::to_value(&stats).unwrap_or_default();
        let scalars = std::mem::take(&mut stats.losses);
        Ok(step.finish(loss, scalars, grads, entry, line, |e| e))
    }

    fn evaluate(&mut self, swarm: &Swarm) -> Result<Evaluation, TrainError> {
        let batch_size = self.config.optimizer.batch_size * 4;
        let reports = dev_reports(swarm, self.space, self.serialize, self.dev, batch_size)?;
        let mut evaluation = dev_evaluation(&reports, "dev");
        if !reports.is_empty() {
            let rate =
                reports.iter().map(|r| r.activation_rate).sum::<f64>() / reports.len() as f64;
            self.last_rate = Some(rate);
            evaluation
                .entry
                .insert("activation_rate".into(), rate.into());
        }
        // The progress line of a step schedule says nothing of the dev sets.
        evaluation.summary = None;
        Ok(evaluation)
    }
}

/// The swarm of the model directory `dir`, for routing: it must have specialists, and they are
/// held in memory (no source path), so every model the run saves carries its own copies and
/// stays self-contained wherever it is moved.
fn routed_swarm(dir: &Path, device: &Device) -> Result<(Swarm, SwarmManifest), TrainError> {
    let (loaded, manifest) = Swarm::load(dir, device)?;
    if loaded.specialists.is_empty() {
        return Err(TrainError::Config(format!(
            "{} has no specialist: there is nothing to route",
            dir.display()
        )));
    }
    let specialists = loaded
        .specialists
        .iter()
        .map(|s| FrozenSpecialist::from_model(s.name(), s.model().clone(), s.config().clone()))
        .collect();
    Ok((
        Swarm::new(renumber(loaded.orchestrator), specialists)?,
        manifest,
    ))
}

/// Runs (or resumes) the PARL stage in `out`.
pub fn train_router(
    config: &ParlConfig,
    out: &Path,
    options: &ParlOptions,
) -> Result<ParlSummary, TrainError> {
    check(config)?;
    let run = RunDir::for_config(out, config, |stored| stored == config)?;

    let device = options
        .device
        .clone()
        .unwrap_or_else(Device::flex)
        .autodiff();
    let (swarm, manifest) = routed_swarm(&config.model, &device)?;
    let (space, serialize) = load_model_extras(&config.model, &manifest)?;
    let orchestrator_config: OrchestratorConfig = manifest.config.clone();
    let resumed = resume(&run, swarm, build_optimizer(&config.optimizer), &device)?;
    let state = resumed.state.clone().unwrap_or_default();
    let features = featurizer(&resumed.swarm.orchestrator);
    let train = load_train_examples(&config.train, &space, &serialize, &features)?;
    let dev: Vec<(DataSpec, LoadedData)> = config
        .dev
        .iter()
        .map(|s| Ok((s.clone(), s.load()?)))
        .collect::<Result<_, TrainError>>()?;
    let log = Log::open(&run.log_path(), state.step)?;
    let mut reward = config.reward.clone();
    reward.schedule = config.schedule.schedule();
    let checkpoints = Checkpoints {
        run: &run,
        parts: ModelParts {
            orchestrator: &orchestrator_config,
            space: &space,
            serialize: &serialize,
        },
        retention: Retention::Newest(config.run.keep_last),
    };
    let driver = Driver {
        schedule: Schedule::Steps {
            steps: config.steps,
            eval_every: config.eval_every,
        },
        optimizer: &config.optimizer,
        run: &config.run,
        weights: &checkpoints,
        log: &log,
        label: "parl",
        progress: options.progress,
        stop_after_steps: None,
        epoch_fields: serde_json::Map::new(),
    };
    let mut stage = Parl {
        config,
        space: &space,
        serialize: &serialize,
        train: &train,
        dev: &dev,
        reward,
        advantage: AdvantageConfig {
            group_size: config.rollouts,
            ..AdvantageConfig::default()
        },
        last_rate: None,
    };
    let mut at = Trained {
        model: resumed.swarm,
        optim: resumed.optim,
        state,
    };
    driver.drive(&mut stage, &mut at)?;
    let state = at.state;
    let last_rate = stage.last_rate;
    Ok(ParlSummary {
        steps: state.step,
        best: state.best_score.zip(state.best_epoch),
        last_activation_rate: last_rate,
        model_dir: run.best_dir(),
    })
}
