//! The PARL loop: batches of tables, a step each, dev evaluation and checkpoints every
//! `eval_every` steps, resuming where a run stopped.

use std::path::Path;
use std::time::Instant;

use burn::optim::GradientsParams;
use burn::tensor::Device;
use colswarm_model::{Example, Progress, featurizer, load_model_extras};
use colswarm_parl::AdvantageConfig;
use colswarm_swarm::{FrozenSpecialist, OrchestratorConfig, Swarm};
use colswarm_tables::{DataSpec, LoadedData};

use super::config::{ParlConfig, ParlOptions, ParlSummary};
use super::data::load_train_examples;
use super::step::parl_step;
use crate::data_parallel::non_finite_gradients;
use crate::error::TrainError;
use crate::param_ids::renumber;
use crate::run::{
    Checkpoints, Log, ModelParts, ROLLOUT_STREAM, Retention, RunDir, build_optimizer,
    check_optimizer, dev_reports, epoch_order, learning_rate, resume, rng_for,
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
    let (loaded, manifest) = Swarm::load(&config.model, &device)?;
    let (space, serialize) = load_model_extras(&config.model, &manifest)?;
    let orchestrator_config: OrchestratorConfig = manifest.config.clone();
    if loaded.specialists.is_empty() {
        return Err(TrainError::Config(format!(
            "{} has no specialist: there is nothing to route",
            config.model.display()
        )));
    }
    // In-memory specialists (no source path), so every model this run saves carries its own
    // copies and stays self-contained wherever it is moved.
    let specialists = loaded
        .specialists
        .iter()
        .map(|s| FrozenSpecialist::from_model(s.name(), s.model().clone(), s.config().clone()))
        .collect();
    let swarm = Swarm::new(renumber(loaded.orchestrator), specialists)?;
    let resumed = resume(&run, swarm, build_optimizer(&config.optimizer), &device)?;
    let (mut swarm, mut optim) = (resumed.swarm, resumed.optim);
    let mut state = resumed.state.unwrap_or_default();
    let features = featurizer(&swarm.orchestrator);
    let train = load_train_examples(&config.train, &space, &serialize, &features)?;
    let dev: Vec<(DataSpec, LoadedData)> = config
        .dev
        .iter()
        .map(|s| Ok((s.clone(), s.load()?)))
        .collect::<Result<_, TrainError>>()?;
    let log = Log::open(&run.log_path(), state.step)?;
    let mut reward = config.reward.clone();
    reward.schedule = config.schedule.schedule();
    let advantage = AdvantageConfig {
        group_size: config.rollouts,
        ..AdvantageConfig::default()
    };
    let (seed, batch_size) = (config.run.seed, config.optimizer.batch_size);
    let batches = train.len().div_ceil(batch_size);
    let n_specialists = swarm.specialists.len();
    let mut progress = Progress::new("parl", config.steps, options.progress);
    let mut last_rate = None;
    let checkpoints = Checkpoints {
        run: &run,
        parts: ModelParts {
            orchestrator: &orchestrator_config,
            space: &space,
            serialize: &serialize,
        },
        retention: Retention::Newest(config.run.keep_last),
    };
    while state.step < config.steps {
        let started = Instant::now();
        let epoch = state.step / batches;
        let order = epoch_order(seed, epoch, train.len());
        let at = (state.step % batches) * batch_size;
        let picked: Vec<&Example> = order[at..(at + batch_size).min(train.len())]
            .iter()
            .map(|&i| &train[i])
            .collect();
        let p = state.step as f64 / config.steps as f64;
        let mut rng = rng_for(seed, ROLLOUT_STREAM, state.step as u64);
        let (loss, stats) = parl_step(
            &swarm, &space, &picked, config, &reward, &advantage, p, &mut rng,
        )?;
        let grads = GradientsParams::from_grads(loss.backward(), &swarm.orchestrator);
        let bad_gradients = non_finite_gradients(&swarm.orchestrator, &grads);
        let policy = config.run.on_non_finite;
        if policy.take_step(stats.loss, bad_gradients, epoch, state.step)? {
            let rate = learning_rate(&config.optimizer, state.step, config.steps);
            swarm.orchestrator = optim.step(rate, swarm.orchestrator.clone(), grads);
        } else {
            log.write(&serde_json::json!({
                "event": "skip", "step": state.step, "loss": stats.loss.to_string(),
                "non_finite_gradients": bad_gradients,
                "tables": picked.iter().map(|e| e.table_id.as_str()).collect::<Vec<_>>(),
            }))?;
        }
        state.step += 1;
        state.batch = state.step;
        if state.step.is_multiple_of(config.run.log_every.max(1)) {
            let mut entry = serde_json::to_value(&stats).unwrap_or_default();
            entry["event"] = "step".into();
            entry["step"] = state.step.into();
            entry["progress"] = p.into();
            entry["seconds"] = started.elapsed().as_secs_f64().into();
            log.write(&entry)?;
        }
        progress.set(
            state.step,
            &format!(
                "reward {:.3} F1 {:.3} active {:.2}",
                stats.reward,
                stats.r_perf,
                stats.activation_rate.iter().sum::<f64>() / n_specialists as f64
            ),
        );
        let every = config.run.checkpoint_every;
        let evaluate =
            state.step.is_multiple_of(config.eval_every.max(1)) || state.step == config.steps;
        if !evaluate && every > 0 && state.step.is_multiple_of(every) {
            checkpoints.save(&swarm, &optim, &state)?;
        }
        if evaluate {
            let reports = dev_reports(&swarm, &space, &serialize, &dev, batch_size * 4)?;
            if !reports.is_empty() {
                let score =
                    reports.iter().map(|r| r.f1.micro_f1).sum::<f64>() / reports.len() as f64;
                let rate =
                    reports.iter().map(|r| r.activation_rate).sum::<f64>() / reports.len() as f64;
                last_rate = Some(rate);
                let improved = state.best_score.is_none_or(|b| score > b);
                if improved {
                    state.best_score = Some(score);
                    state.best_epoch = Some(state.step);
                    checkpoints.save_best(&swarm)?;
                }
                log.write(&serde_json::json!({
                    "event": "dev", "step": state.step, "dev_score": score,
                    "activation_rate": rate, "best": improved,
                    "dev": reports.iter().map(|r| serde_json::json!({
                        "namespace": r.namespace, "task": r.task, "micro_f1": r.f1.micro_f1,
                        "macro_f1": r.f1.macro_f1, "activation_rate": r.activation_rate,
                    })).collect::<Vec<_>>(),
                }))?;
            } else if state.step == config.steps {
                checkpoints.save_best(&swarm)?;
            }
            state.finished = state.step == config.steps;
            checkpoints.save(&swarm, &optim, &state)?;
        }
    }
    progress.finish("done");
    Ok(ParlSummary {
        steps: state.step,
        best: state.best_score.zip(state.best_epoch),
        last_activation_rate: last_rate,
        model_dir: run.best_dir(),
    })
}
