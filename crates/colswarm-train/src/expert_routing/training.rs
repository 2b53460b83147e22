//! The routing run: the frozen reads once, then the driver's steps, dev evaluations and
//! checkpoints; the trained routing is written into a copy of the model directory.

use std::path::Path;
use std::time::Instant;

use burn::module::{Module, Param};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_model::{ExpertRouting, Model, ModelDir, Outputs, format_duration};
use colswarm_parl::{AdvantageConfig, F1Counts, RewardConfig, pair_counts};
use colswarm_rwkv::checkpoint::{CheckpointFile, save_module};

use super::config::{ExpertRoutingConfig, ExpertRoutingOptions, ExpertRoutingSummary};
use super::data::{TableRead, read_tables};
use super::step::{mixed, predicted_labels, routing_step};
use crate::data_parallel::non_finite_gradients;
use crate::error::TrainError;
use crate::parl::gold_labels;
use crate::run::{
    Computed, Driver, Evaluation, Log, Retention, RolloutStep, RunDir, RunState, Schedule, Stage,
    Trained, Weights, build_optimizer, check_optimizer, commit_with_optimizer, load_optimizer,
};

/// Refuses configurations that cannot run.
fn check(config: &ExpertRoutingConfig) -> Result<(), TrainError> {
    if config.rollouts < 2 {
        return Err(TrainError::Config(
            "routing needs at least 2 rollouts per table".into(),
        ));
    }
    if config.steps == 0 {
        return Err(TrainError::Config("steps must be at least 1".into()));
    }
    if config.train.is_empty() {
        return Err(TrainError::Config("no training tables".into()));
    }
    check_optimizer(&config.optimizer)
}

/// The routing stage for the [`Driver`].
struct Routing<'a> {
    config: &'a ExpertRoutingConfig,
    model: &'a Model,
    train: &'a [TableRead],
    dev: &'a [TableRead],
    reward: RewardConfig,
    advantage: AdvantageConfig,
    device: Device,
}

impl Stage for Routing<'_> {
    type Model = ExpertRouting;

    fn batches(&self) -> usize {
        self.train.len().div_ceil(self.config.optimizer.batch_size)
    }

    fn gradients(
        &mut self,
        routing: &ExpertRouting,
        state: &RunState,
    ) -> Result<Computed, TrainError> {
        let config = self.config;
        let (seed, batch_size) = (config.run.seed, config.optimizer.batch_size);
        let mut step = RolloutStep::draw(self.train, seed, state, batch_size, config.steps);
        let (loss, mut stats) = routing_step(
            routing,
            self.model,
            &step.picked,
            config,
            (&self.reward, &self.advantage),
            step.progress,
            &mut step.rng,
            &self.device,
        )?;
        let grads = GradientsParams::from_grads(loss.backward(), routing);
        let n = stats.activation_rate.len().max(1) as f64;
        let line = format!(
            "reward {:.3} gain {:+.3} open {:.2}",
            stats.reward,
            stats.gain,
            stats.activation_rate.iter().sum::<f64>() / n
        );
        let entry = serde_json::to_value(&stats).unwrap_or_default();
        let scalars = std::mem::take(&mut stats.losses);
        Ok(step.finish(loss, scalars, grads, entry, line, |r| &r.example))
    }

    fn evaluate(&mut self, routing: &ExpertRouting) -> Result<Evaluation, TrainError> {
        let mut entry = serde_json::Map::new();
        if self.dev.is_empty() {
            return Ok(Evaluation {
                score: None,
                event: "dev",
                entry,
                summary: None,
            });
        }
        let scored = score_routing(&routing.valid(), self.model, self.dev);
        entry.insert("micro_f1".into(), scored.f1.into());
        entry.insert("alone_micro_f1".into(), scored.alone.into());
        entry.insert("activation_rate".into(), scored.rates.clone().into());
        Ok(Evaluation {
            score: Some(scored.f1),
            event: "dev",
            entry,
            summary: None,
        })
    }
}

/// A routing's dev score: micro-F1 (CTA and CPA pooled) with threshold routing and with the
/// primary alone, and how often each expert opened.
pub struct RoutingScore {
    /// Micro-F1 with the routing.
    pub f1: f64,
    /// Micro-F1 of the primary alone.
    pub alone: f64,
    /// Per expert, the share of tables it read.
    pub rates: Vec<f64>,
}

/// Scores `routing` on `reads` with its threshold decisions.
fn score_routing(routing: &ExpertRouting, model: &Model, reads: &[TableRead]) -> RoutingScore {
    let device = routing.router.gate.weight.device();
    let weights = routing.mix.host_weights();
    let (mut routed, mut alone) = (F1Counts::default(), F1Counts::default());
    let mut rates = vec![0.0; routing.experts()];
    let counts = |outputs: &Outputs, read: &TableRead| -> F1Counts {
        let predicted = predicted_labels(&model.space, &read.example, outputs);
        let gold = gold_labels(&read.example);
        pair_counts(&predicted.cta, &gold.cta).merge(pair_counts(&predicted.cpa, &gold.cpa))
    };
    for chunk in reads.chunks(256) {
        let width = chunk[0].features.len();
        let flat: Vec<f32> = chunk.iter().flat_map(|r| r.features.clone()).collect();
        let features = Tensor::<2>::from_data(TensorData::new(flat, [chunk.len(), width]), &device);
        let decision = routing.router.decide(features);
        for (read, open) in chunk.iter().zip(&decision.active) {
            for (rate, &on) in rates.iter_mut().zip(open) {
                *rate += f64::from(u8::from(on)) / reads.len() as f64;
            }
            let outputs = mixed(model, &weights, read, open);
            routed = routed.merge(counts(&outputs, read));
            alone = alone.merge(counts(&read.primary, read));
        }
    }
    RoutingScore {
        f1: routed.f1().unwrap_or(0.0),
        alone: alone.f1().unwrap_or(0.0),
        rates,
    }
}

/// File of a checkpoint's routing.
const CHECKPOINT_FILE: &str = "routing.safetensors";

/// Checkpoints hold the routing and the optimizer; the best routing is written into a copy
/// of the model directory.
struct RoutingWeights<'a> {
    run: &'a RunDir,
    model_dir: &'a Path,
    keep_last: usize,
}

impl Weights<ExpertRouting> for RoutingWeights<'_> {
    fn non_finite(&self, routing: &ExpertRouting, grads: &GradientsParams) -> Option<Tensor<1>> {
        non_finite_gradients(routing, grads)
    }

    fn step(
        &self,
        routing: &mut ExpertRouting,
        optim: &mut ModuleOptimizer,
        rate: f64,
        grads: GradientsParams,
    ) {
        let mut stepped = optim.step(rate, routing.clone(), grads);
        stepped.mix = stepped.mix.project();
        *routing = stepped;
    }

    fn save(
        &self,
        routing: &ExpertRouting,
        optim: &ModuleOptimizer,
        state: &RunState,
    ) -> Result<(), TrainError> {
        let temp = self.run.temp_dir("checkpoint")?;
        let dir = temp.join("model");
        std::fs::create_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
        save_module(routing, Default::default(), &dir.join(CHECKPOINT_FILE))?;
        commit_with_optimizer(
            self.run,
            &temp,
            optim,
            state,
            Retention::Newest(self.keep_last),
        )
    }

    fn save_best(&self, routing: &ExpertRouting) -> Result<(), TrainError> {
        write_model_dir(self.model_dir, &routing.valid(), &self.run.best_dir())
    }
}

/// Writes a copy of the model directory `from` with `routing` as its experts' routing into
/// `to`, replacing it whole (copied beside it, then renamed).
fn write_model_dir(from: &Path, routing: &ExpertRouting, to: &Path) -> Result<(), TrainError> {
    let partial = to.with_extension("routed");
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| TrainError::io(&partial, e))?;
    }
    let mut copy = ModelDir::open(from)?.copy_to(&partial)?;
    copy.set_expert_routing(routing)?;
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(|e| TrainError::io(to, e))?;
    }
    std::fs::rename(&partial, to).map_err(|e| TrainError::io(to, e))?;
    Ok(())
}

/// Runs (or resumes) the training of `config.model`'s experts' routing in `out`: the router
/// with PARL's reward (minus [`ExpertRoutingConfig::read_cost`] per expert read) and the mix
/// with the heads' loss of the mixed logits. The model directory with the trained routing is
/// `out/best/` (with dev sets) or `out/model/`.
pub fn train_expert_routing(
    config: &ExpertRoutingConfig,
    out: &Path,
    options: &ExpertRoutingOptions,
) -> Result<ExpertRoutingSummary, TrainError> {
    check(config)?;
    let run = RunDir::for_config(out, config, |stored| stored == config)?;
    let device = options.device.clone().unwrap_or_else(Device::flex);
    let model = Model::load(&config.model, &device)?;
    let Some(start) = &model.expert_routing else {
        return Err(TrainError::Config(format!(
            "{} has no experts: there is nothing to route",
            config.model.display()
        )));
    };
    let started = Instant::now();
    let batch = config.optimizer.batch_size.max(16);
    let train = read_tables(&model, &config.train, batch, options.progress)?;
    let dev = read_tables_or_none(&model, config, batch, options.progress)?;
    if options.progress {
        eprintln!(
            "read {} training and {} dev tables with the primary and {} experts in {}",
            train.len(),
            dev.len(),
            model.experts.len(),
            format_duration(started.elapsed().as_secs_f64())
        );
    }
    let autodiff = device.clone().autodiff();
    let fresh = trainable(start, config.mix_start, &autodiff);
    let mut at = resume_routing(&run, fresh, config, &autodiff)?;
    let log = Log::open(&run.log_path(), at.state.step)?;
    let weights = RoutingWeights {
        run: &run,
        model_dir: &config.model,
        keep_last: config.run.keep_last,
    };
    let driver = Driver {
        schedule: Schedule::Steps {
            steps: config.steps,
            eval_every: config.eval_every,
        },
        optimizer: &config.optimizer,
        run: &config.run,
        weights: &weights,
        log: &log,
        label: "route experts",
        progress: options.progress,
        stop_after_steps: None,
        epoch_fields: serde_json::Map::new(),
    };
    let mut reward = config.reward.clone();
    reward.schedule = config.schedule.schedule();
    let mut stage = Routing {
        config,
        model: &model,
        train: &train,
        dev: &dev,
        reward,
        advantage: AdvantageConfig {
            group_size: config.rollouts,
            ..AdvantageConfig::default()
        },
        device: autodiff,
    };
    driver.drive(&mut stage, &mut at)?;
    let model_dir = if dev.is_empty() {
        let dir = out.join("model");
        write_model_dir(&config.model, &at.model.valid(), &dir)?;
        dir
    } else {
        run.best_dir()
    };
    Ok(ExpertRoutingSummary {
        steps: at.state.step,
        best: at.state.best_score.zip(at.state.best_epoch),
        model_dir,
    })
}

/// `fresh` with a new optimizer, or the run's newest checkpoint loaded into it.
fn resume_routing(
    run: &RunDir,
    fresh: ExpertRouting,
    config: &ExpertRoutingConfig,
    device: &Device,
) -> Result<Trained<ExpertRouting>, TrainError> {
    Ok(match run.latest()? {
        Some(checkpoint) => {
            let file = CheckpointFile::open(&checkpoint.model_dir().join(CHECKPOINT_FILE))?;
            Trained {
                model: file.load_into(fresh, device)?,
                optim: load_optimizer(&checkpoint, build_optimizer(&config.optimizer))?,
                state: checkpoint.state,
            }
        }
        None => Trained {
            model: fresh,
            optim: build_optimizer(&config.optimizer),
            state: RunState::default(),
        },
    })
}

/// A copy of `routing` on the autodiff `device`, its mix at `mix_start` where given.
fn trainable(routing: &ExpertRouting, mix_start: Option<f64>, device: &Device) -> ExpertRouting {
    let copy = |t: Tensor<2>| Tensor::<2>::from_data(t.into_data(), device);
    let mut fresh = ExpertRouting::from_rule(
        routing.router.gate.weight.shape().dims::<2>()[0] - routing.experts(),
        &vec![None; routing.experts()],
        routing.mix.namespaces(),
        device,
    );
    fresh.router.gate.weight = Param::from_tensor(copy(routing.router.gate.weight.val()));
    if let Some(bias) = &routing.router.gate.bias {
        fresh.router.gate.bias = Some(Param::from_tensor(Tensor::<1>::from_data(
            bias.val().into_data(),
            device,
        )));
    }
    let mix = routing.mix.weight.val();
    fresh.mix.weight = Param::from_tensor(match mix_start {
        Some(theta) => Tensor::full(mix.shape(), theta as f32, device),
        None => copy(mix),
    });
    fresh
}

/// The dev reads, none without dev sets.
fn read_tables_or_none(
    model: &Model,
    config: &ExpertRoutingConfig,
    batch: usize,
    progress: bool,
) -> Result<Vec<TableRead>, TrainError> {
    if config.dev.is_empty() {
        return Ok(Vec::new());
    }
    read_tables(model, &config.dev, batch, progress)
}
