//! What every training stage shares: the run directory (`run.json`, `log.jsonl`, atomic
//! checkpoints, `best/`), resuming from the newest checkpoint, the seeded random streams, the
//! policy for non-finite losses, and dev evaluation during training.
//!
//! A stage (supervised, PARL, pretraining) takes its [`OptimizerSettings`] and [`RunSettings`]
//! from here, binds its configuration to a [`RunDir`] ([`RunDir::for_config`]), resumes from its
//! newest checkpoint ([`resume`]), and hands the loop to the one [`Driver`]: the stage computes
//! each step's gradients from the random streams of [`rng_for`] and scores its dev sets (with
//! [`dev_reports`]); the driver steps the optimizer, reads the steps' losses back at its logging
//! cadence and checks them with [`NonFinitePolicy::take_step`], logs, and writes checkpoints and the best model through [`Weights`] (for a swarm,
//! [`Checkpoints`]).

#[cfg(test)]
mod counting_stage;
mod dir;
mod driver;
mod log;
mod pending;
mod rng;
mod rollout;
mod settings;

use std::path::Path;

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use colswarm_model::{
    LabelSpace, Model, SerializeSettings, SpecialistUse, Task, save_model_extras,
};
use colswarm_swarm::{OrchestratorConfig, Swarm};

pub use dir::{Checkpoint, Retention, RunDir, RunState, read_state};
pub(crate) use driver::{Computed, Driver, Evaluation, Schedule, Stage, Trained, Weights};
pub use log::Log;
pub use rng::epoch_order;
pub(crate) use rng::{DROPOUT_STREAM, ROUTING_STREAM, rng_for};
pub(crate) use rollout::RolloutStep;
pub use settings::{
    LrDecay, NonFinitePolicy, OptimizerSettings, RunSettings, build_optimizer, check_optimizer,
};

use crate::data_parallel::non_finite_gradients;
use crate::error::TrainError;
use crate::param_ids::renumber;
use colswarm_eval::{EvalOptions, EvalReport, default_task, evaluate};
use colswarm_tables::{DataSpec, LoadedData};

/// What a model directory holds besides the swarm's weights.
#[derive(Clone, Copy, Debug)]
pub struct ModelParts<'a> {
    /// The orchestrator's configuration.
    pub orchestrator: &'a OrchestratorConfig,
    /// The label space.
    pub space: &'a LabelSpace,
    /// The serialization settings.
    pub serialize: &'a SerializeSettings,
}

impl ModelParts<'_> {
    /// Saves a model directory (swarm + label space + serialization settings).
    pub fn save(&self, swarm: &Swarm, dir: &Path) -> Result<(), TrainError> {
        let space = self.space;
        swarm.save(
            dir,
            self.orchestrator,
            &space.flat(Task::Cta),
            &space.flat(Task::Cpa),
        )?;
        Ok(save_model_extras(dir, space, self.serialize)?)
    }

    /// Writes the model as the run's `best/`, atomically.
    pub fn save_best(&self, run: &RunDir, swarm: &Swarm) -> Result<(), TrainError> {
        let temp = run.temp_dir("best")?;
        self.save(swarm, &temp)?;
        run.replace_best(&temp)
    }

    /// Writes a checkpoint (model directory + optimizer state + counters) into `run`,
    /// atomically, keeping what `retention` keeps.
    pub fn save_checkpoint(
        &self,
        run: &RunDir,
        swarm: &Swarm,
        optim: &ModuleOptimizer,
        state: &RunState,
        retention: Retention,
    ) -> Result<(), TrainError> {
        let temp = run.temp_dir("checkpoint")?;
        self.save(swarm, &temp.join("model"))?;
        commit_with_optimizer(run, &temp, optim, state, retention)
    }
}

/// Where a swarm stage writes its checkpoints and best model, and which checkpoints it keeps:
/// the one checkpoint setup of the supervised and PARL stages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checkpoints<'a> {
    /// The run directory.
    pub(crate) run: &'a RunDir,
    /// What a model directory holds besides the weights.
    pub(crate) parts: ModelParts<'a>,
    /// Which older checkpoints survive a new one.
    pub(crate) retention: Retention,
}

impl Checkpoints<'_> {
    /// Writes a checkpoint of `swarm`, `optim` and `state`, atomically.
    pub(crate) fn save(
        &self,
        swarm: &Swarm,
        optim: &ModuleOptimizer,
        state: &RunState,
    ) -> Result<(), TrainError> {
        self.parts
            .save_checkpoint(self.run, swarm, optim, state, self.retention)
    }

    /// Writes `swarm` as the run's `best/`, atomically.
    pub(crate) fn save_best(&self, swarm: &Swarm) -> Result<(), TrainError> {
        self.parts.save_best(self.run, swarm)
    }
}

/// A swarm stage trains the orchestrator; the specialists stay frozen.
impl Weights<Swarm> for Checkpoints<'_> {
    fn non_finite(&self, swarm: &Swarm, grads: &GradientsParams) -> Option<Tensor<1>> {
        non_finite_gradients(&swarm.orchestrator, grads)
    }

    fn step(
        &self,
        swarm: &mut Swarm,
        optim: &mut ModuleOptimizer,
        rate: f64,
        grads: GradientsParams,
    ) {
        swarm.orchestrator = optim.step(rate, swarm.orchestrator.clone(), grads);
    }

    fn save(
        &self,
        swarm: &Swarm,
        optim: &ModuleOptimizer,
        state: &RunState,
    ) -> Result<(), TrainError> {
        Checkpoints::save(self, swarm, optim, state)
    }

    fn save_best(&self, swarm: &Swarm) -> Result<(), TrainError> {
        Checkpoints::save_best(self, swarm)
    }
}

/// Writes `optim`'s state into the temporary checkpoint `temp` (its model already there) and
/// commits the checkpoint.
pub(crate) fn commit_with_optimizer(
    run: &RunDir,
    temp: &Path,
    optim: &ModuleOptimizer,
    state: &RunState,
    retention: Retention,
) -> Result<(), TrainError> {
    let path = temp.join("optimizer.bpk");
    optim.save(&path).map_err(|e| TrainError::Run {
        path: path.clone(),
        reason: format!("could not write the optimizer state: {e:?}"),
    })?;
    run.commit_checkpoint(temp, state.clone(), retention)?;
    Ok(())
}

/// `optim` with the state saved in `checkpoint`.
pub(crate) fn load_optimizer(
    checkpoint: &Checkpoint,
    optim: ModuleOptimizer,
) -> Result<ModuleOptimizer, TrainError> {
    let path = checkpoint.optimizer_path();
    optim.load(&path).map_err(|e| TrainError::Run {
        path: path.clone(),
        reason: format!("unreadable optimizer state: {e:?}"),
    })
}

/// A stage's swarm and optimizer, and the counters of the run so far.
pub(crate) struct Resumed {
    /// The swarm: the newest checkpoint's trainable weights (the specialists stay).
    pub(crate) swarm: Swarm,
    /// The optimizer, with the checkpoint's state.
    pub(crate) optim: ModuleOptimizer,
    /// The checkpoint's counters; `None` for a fresh run (nothing was changed).
    pub(crate) state: Option<RunState>,
}

/// Resumes from the run's newest checkpoint, if it has one, the fresh `swarm` and `optim`
/// of the stage otherwise.
pub(crate) fn resume(
    run: &RunDir,
    swarm: Swarm,
    optim: ModuleOptimizer,
    device: &Device,
) -> Result<Resumed, TrainError> {
    let Some(checkpoint) = run.latest()? else {
        return Ok(Resumed {
            swarm,
            optim,
            state: None,
        });
    };
    let (loaded, _) = Swarm::load(&checkpoint.model_dir(), device)?;
    Ok(Resumed {
        swarm: Swarm::new(renumber(loaded.orchestrator), swarm.specialists)?,
        optim: load_optimizer(&checkpoint, optim)?,
        state: Some(checkpoint.state),
    })
}

/// A stage's dev evaluation from its reports: the mean micro-F1 (none without dev sets), one
/// log object per set and a progress line; `event` names a step schedule's log entry.
pub(crate) fn dev_evaluation(reports: &[EvalReport], event: &'static str) -> Evaluation {
    let score = (!reports.is_empty())
        .then(|| reports.iter().map(|r| r.f1.micro_f1).sum::<f64>() / reports.len() as f64);
    let mut entry = serde_json::Map::new();
    if !reports.is_empty() {
        let sets = reports.iter().map(|r| {
            serde_json::json!({
                "namespace": r.namespace, "task": r.task, "micro_f1": r.f1.micro_f1,
                "macro_f1": r.f1.macro_f1, "n_columns": r.n_columns,
                "activation_rate": r.activation_rate,
            })
        });
        entry.insert("dev".into(), sets.collect());
    }
    let summary = (!reports.is_empty()).then(|| {
        let sets: Vec<String> = reports
            .iter()
            .map(|r| format!("{} {} micro-F1 {:.3}", r.namespace, r.task, r.f1.micro_f1))
            .collect();
        sets.join(", ")
    });
    Evaluation {
        score,
        event,
        entry,
        summary,
    }
}

/// Scores the dev sets with threshold routing, one report per set (a run's score is their mean
/// micro-F1).
pub fn dev_reports(
    swarm: &Swarm,
    space: &LabelSpace,
    serialize: &SerializeSettings,
    dev: &[(DataSpec, LoadedData)],
    batch_size: usize,
) -> Result<Vec<EvalReport>, TrainError> {
    let model = Model {
        swarm: Swarm::new(swarm.orchestrator.valid(), swarm.specialists.clone())?,
        specialist_names: swarm
            .specialists
            .iter()
            .map(|s| s.name().to_string())
            .collect(),
        space: space.clone(),
        serialize: *serialize,
        experts: Vec::new(),
        expert_routing: None,
        added_heads: Vec::new(),
        readers: Default::default(),
    };
    dev.iter()
        .map(|(spec, data)| {
            let options = EvalOptions {
                task: default_task(spec.format, &data.tables),
                namespace: Some(spec.namespace.clone()),
                batch_size,
                specialists: SpecialistUse::Router,
                progress: false,
                probabilities: false,
                own_subject: false,
            };
            Ok(evaluate(&model, &data.tables, spec.format, &options)?)
        })
        .collect()
}
