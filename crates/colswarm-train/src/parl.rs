//! The PARL stage: trains the orchestrator (router, fusion, alignments, primary, heads) of a
//! model with frozen specialists, on the reward `λ1(p)·r_parallel + λ2(p)·r_finish + r_perf`
//! (see `colswarm_parl` and docs/PARL.md for each term).
//!
//! Per optimizer step, for a batch of tables:
//! 1. the primary reads every table once, and every specialist reads every table once (no
//!    gradient; aligned once): all `K` rollouts of a table share these reads, since they are
//!    deterministic given the table;
//! 2. `K` rollouts sample a router mask each and fuse only the active specialists' states;
//!    the primary answers the column queries from the fused state;
//! 3. each rollout is scored (`r_perf` from its own predictions against the gold labels,
//!    `r_parallel` from its mask and gates, `r_finish` from its critical steps and
//!    degeneracy), advantages are the reward minus the group (table) mean;
//! 4. the loss is the K2.5 policy objective over the router's Bernoulli decisions plus the
//!    supervised loss of the heads averaged over the rollouts.
//!
//! Every step is logged to `log.jsonl` (reward terms, λ's, activation rate per specialist, gate
//! entropy, critical vs serial steps, F1); dev sets are scored every `eval_every` steps with
//! threshold routing, the best model kept in `best/`, and checkpoints written like the
//! supervised stage's (a run resumes from its newest checkpoint).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Bool, Device, Tensor, TensorData};
use colswarm_parl::{
    AdvantageConfig, LambdaSchedule, ObjectiveConfig, RewardConfig, RolloutOutcome, Schedule,
    StageSteps, TableLabels, TableSteps, bernoulli_log_probs, group_advantages, policy_loss,
    r_perf, score_batch,
};
use colswarm_swarm::{FrozenSpecialist, OrchestratorConfig, Swarm, TableRead};
use colswarm_tables::NgramConfig;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::data_parallel::non_finite_gradients;
use crate::dataset::{DataSpec, LoadedData};
use crate::error::TrainError;
use crate::param_ids::renumber;
use crate::run::{
    Log, ModelParts, NonFinitePolicy, ROLLOUT_STREAM, Retention, RunDir, RunState, dev_reports,
    epoch_order, resume, rng_for,
};
use crate::supervised::supervised_loss;
use colswarm_model::LabelSpace;
use colswarm_model::Progress;
use colswarm_model::{Columns, Example, encode, featurizer, to_batch};
use colswarm_model::{SerializeSettings, decode, load_model_extras, namespace_probs, rows_of};

/// Which λ schedule the stage uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ScheduleChoice {
    /// Aegir's piecewise table (0.3/0.1 → 0.1/0.3 → 0.05/0.05 at 30% / 70%).
    Aegir,
    /// Linear from (0.3, 0.1) to (0, 0).
    Linear,
    /// Cosine from (0.3, 0.1) to (0, 0).
    Cosine,
    /// The ablation: λ1 = 0 throughout, λ2 as Aegir's.
    ZeroParallel,
}

impl FromStr for ScheduleChoice {
    type Err = TrainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "aegir" => Ok(ScheduleChoice::Aegir),
            "linear" => Ok(ScheduleChoice::Linear),
            "cosine" => Ok(ScheduleChoice::Cosine),
            "zero-parallel" => Ok(ScheduleChoice::ZeroParallel),
            _ => Err(TrainError::Config(format!(
                "unknown schedule `{s}` (expected aegir, linear, cosine or zero-parallel)"
            ))),
        }
    }
}

impl ScheduleChoice {
    /// The λ schedule.
    pub fn schedule(&self) -> LambdaSchedule {
        match self {
            ScheduleChoice::Aegir => LambdaSchedule::aegir(),
            ScheduleChoice::Linear => LambdaSchedule::linear_to_zero(0.3, 0.1),
            ScheduleChoice::Cosine => LambdaSchedule::cosine_to_zero(0.3, 0.1),
            ScheduleChoice::ZeroParallel => LambdaSchedule {
                parallel: Schedule::Constant { value: 0.0 },
                ..LambdaSchedule::aegir()
            },
        }
    }
}

/// Everything a PARL run depends on (stored as `run.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParlConfig {
    /// The supervised model (with specialists) to start from.
    pub model: PathBuf,
    /// Training sets (namespaces of the model).
    pub train: Vec<DataSpec>,
    /// Dev sets.
    pub dev: Vec<DataSpec>,
    /// Optimizer steps.
    pub steps: usize,
    /// Rollouts per table (K ≥ 2).
    pub rollouts: usize,
    /// Tables per step.
    pub batch_size: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// λ schedule.
    pub schedule: ScheduleChoice,
    /// Reward terms' settings (its schedule is replaced by `schedule`).
    pub reward: RewardConfig,
    /// The policy objective.
    pub objective: ObjectiveConfig,
    /// Weight of the supervised loss.
    pub supervised_weight: f64,
    /// Steps between dev evaluations and checkpoints.
    pub eval_every: usize,
    /// Checkpoints kept.
    pub keep_last: usize,
    /// Seed.
    pub seed: u64,
}

impl Default for ParlConfig {
    fn default() -> Self {
        ParlConfig {
            model: PathBuf::new(),
            train: Vec::new(),
            dev: Vec::new(),
            steps: 200,
            rollouts: 4,
            batch_size: 4,
            learning_rate: 2e-4,
            schedule: ScheduleChoice::Aegir,
            reward: RewardConfig::default(),
            objective: ObjectiveConfig::default(),
            supervised_weight: 1.0,
            eval_every: 50,
            keep_last: 2,
            seed: 0,
        }
    }
}

/// How a PARL run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ParlSummary {
    /// Steps done.
    pub steps: usize,
    /// Best dev score (mean micro-F1, threshold routing) and its step.
    pub best: Option<(f64, usize)>,
    /// Dev activation rate at the last evaluation.
    pub last_activation_rate: Option<f64>,
    /// The best model's directory.
    pub model_dir: PathBuf,
}

/// What one step's rollouts did, averaged (logged).
#[derive(Clone, Debug, Default, Serialize)]
struct StepStats {
    reward: f64,
    r_perf: f64,
    r_parallel: f64,
    r_finish: f64,
    lambda_parallel: f64,
    lambda_finish: f64,
    activation_rate: Vec<f64>,
    gate_entropy: f64,
    critical_steps: f64,
    serial_steps: f64,
    loss: f64,
    policy_loss: f64,
    supervised_loss: f64,
}

/// The gold labels of an example as `TableLabels` over head outputs.
fn gold_labels(example: &Example) -> TableLabels<usize> {
    let mut labels = TableLabels::default();
    for (q, outputs) in example.cta.iter().enumerate() {
        labels.cta.extend(outputs.iter().map(|&o| (q, o)));
    }
    for (s, o, outputs) in &example.cpa {
        labels.cpa.extend(outputs.iter().map(|&r| ((*s, *o), r)));
    }
    labels
}

/// A rollout's predictions for one example as `TableLabels`, decoded as in evaluation.
fn predicted_labels(
    space: &LabelSpace,
    example: &Example,
    cta_rows: &[Vec<f32>],
    cpa_rows: &[Vec<f32>],
) -> TableLabels<usize> {
    let mut labels = TableLabels::default();
    if let Some(ns) = example.cta_namespace.map(|i| &space.cta[i]) {
        for (q, target) in example.cta.iter().enumerate() {
            if target.is_empty() {
                continue;
            }
            let probs = namespace_probs(ns, &cta_rows[q]);
            labels
                .cta
                .extend(decode(ns, &probs).into_iter().map(|i| (q, ns.offset + i)));
        }
    }
    if let Some(ns) = example.cpa_namespace.map(|i| &space.cpa[i]) {
        for ((s, o, _), logits) in example.cpa.iter().zip(cpa_rows) {
            let probs = namespace_probs(ns, logits);
            labels.cpa.extend(
                decode(ns, &probs)
                    .into_iter()
                    .map(|i| ((*s, *o), ns.offset + i)),
            );
        }
    }
    labels
}

fn load_train_examples(
    specs: &[DataSpec],
    space: &LabelSpace,
    serialize: &SerializeSettings,
    ngrams: Option<&NgramConfig>,
) -> Result<Vec<Example>, TrainError> {
    let config = serialize.config();
    let mut examples = Vec::new();
    for spec in specs {
        let data = spec.load()?;
        let (cta, cpa) = space.positions(&spec.namespace);
        if cta.is_none() && cpa.is_none() {
            return Err(TrainError::Config(format!(
                "the model has no namespace `{}` (training set {spec})",
                spec.namespace
            )));
        }
        examples.extend(
            data.tables
                .iter()
                .map(|t| encode(t, &config, ngrams, space, cta, cpa, Columns::Targets))
                .filter(Example::has_targets),
        );
    }
    if examples.is_empty() {
        return Err(TrainError::Config(
            "no training table carries a target".into(),
        ));
    }
    Ok(examples)
}

/// How a PARL run reports and where it runs; not part of the run's configuration, so a run
/// may be resumed on another device.
#[derive(Clone, Debug, Default)]
pub struct ParlOptions {
    /// Progress lines on stderr.
    pub progress: bool,
    /// The device to train on (autodiff is added); `None`: the CPU (burn's Flex backend).
    pub device: Option<Device>,
}

/// Runs (or resumes) the PARL stage in `out`.
pub fn train_router(
    config: &ParlConfig,
    out: &Path,
    options: &ParlOptions,
) -> Result<ParlSummary, TrainError> {
    let progress_lines = options.progress;
    if config.rollouts < 2 {
        return Err(TrainError::Config(
            "PARL needs at least 2 rollouts per table".into(),
        ));
    }
    if config.batch_size == 0 || config.steps == 0 {
        return Err(TrainError::Config(
            "batch size and steps must be at least 1".into(),
        ));
    }
    let run = RunDir::open(out)?;
    run.bind_config(config, |stored| stored == config)?;

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
    let optim: ModuleOptimizer = AdamConfig::new().init();
    let resumed = resume(&run, swarm, optim, &device)?;
    let (mut swarm, mut optim) = (resumed.swarm, resumed.optim);
    let mut state = resumed.state.unwrap_or_default();
    let ngrams = featurizer(&swarm.orchestrator);
    let train = load_train_examples(&config.train, &space, &serialize, ngrams.as_ref())?;
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
    let batches = train.len().div_ceil(config.batch_size);
    let n_specialists = swarm.specialists.len();
    let mut progress = Progress::new("parl", config.steps, progress_lines);
    let mut last_rate = None;
    let parts = ModelParts {
        orchestrator: &orchestrator_config,
        space: &space,
        serialize: &serialize,
    };
    let save_checkpoint = |swarm: &Swarm, optim: &ModuleOptimizer, state: &RunState| {
        parts.save_checkpoint(
            &run,
            swarm,
            optim,
            state,
            Retention::Newest(config.keep_last),
        )
    };
    while state.step < config.steps {
        let started = Instant::now();
        let epoch = state.step / batches;
        let order = epoch_order(config.seed, epoch, train.len());
        let at = (state.step % batches) * config.batch_size;
        let picked: Vec<&Example> = order[at..(at + config.batch_size).min(train.len())]
            .iter()
            .map(|&i| &train[i])
            .collect();
        let p = state.step as f64 / config.steps as f64;
        let mut rng = rng_for(config.seed, ROLLOUT_STREAM, state.step as u64);
        let (loss, stats) = parl_step(
            &swarm, &space, &picked, config, &reward, &advantage, p, &mut rng,
        )?;
        let grads = GradientsParams::from_grads(loss.backward(), &swarm.orchestrator);
        let bad_gradients = non_finite_gradients(&swarm.orchestrator, &grads);
        // PARL has no skipping: a non-finite step stops the run.
        NonFinitePolicy::Stop.take_step(stats.loss, bad_gradients, epoch, state.step)?;
        swarm.orchestrator = optim.step(config.learning_rate, swarm.orchestrator.clone(), grads);
        state.step += 1;
        state.batch = state.step;
        let mut entry = serde_json::to_value(&stats).unwrap_or_default();
        entry["event"] = "step".into();
        entry["step"] = state.step.into();
        entry["progress"] = p.into();
        entry["seconds"] = started.elapsed().as_secs_f64().into();
        log.write(&entry)?;
        progress.set(
            state.step,
            &format!(
                "reward {:.3} F1 {:.3} active {:.2}",
                stats.reward,
                stats.r_perf,
                stats.activation_rate.iter().sum::<f64>() / n_specialists as f64
            ),
        );
        if state.step.is_multiple_of(config.eval_every.max(1)) || state.step == config.steps {
            let reports = dev_reports(&swarm, &space, &serialize, &dev, config.batch_size * 4)?;
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
                    parts.save_best(&run, &swarm)?;
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
                parts.save_best(&run, &swarm)?;
            }
            state.finished = state.step == config.steps;
            save_checkpoint(&swarm, &optim, &state)?;
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

/// One PARL step: rollouts, rewards, advantages, and the loss to minimise.
#[allow(clippy::too_many_arguments)]
fn parl_step(
    swarm: &Swarm,
    space: &LabelSpace,
    examples: &[&Example],
    config: &ParlConfig,
    reward: &RewardConfig,
    advantage: &AdvantageConfig,
    progress: f64,
    rng: &mut ChaCha8Rng,
) -> Result<(Tensor<1>, StepStats), TrainError> {
    let orchestrator = &swarm.orchestrator;
    let batch = to_batch(examples);
    batch.validate()?;
    let n_specialists = swarm.specialists.len();
    // Shared by every rollout: the primary's read and every specialist's (aligned) read.
    let read: TableRead = orchestrator.read_tables(&batch)?;
    let all_on = vec![vec![true; n_specialists]; examples.len()];
    let specialist_states = swarm.run_specialists(&batch, &all_on);
    let k = config.rollouts;
    let b = examples.len();
    let mut outcomes: Vec<Option<RolloutOutcome>> = vec![None; b * k];
    let mut log_probs: Vec<Option<Tensor<2>>> = vec![None; b * k];
    let mut supervised: Vec<Tensor<1>> = Vec::new();
    let mut stats = StepStats {
        activation_rate: vec![0.0; n_specialists],
        ..StepStats::default()
    };
    let query_tokens: Vec<usize> = examples
        .iter()
        .map(|e| e.queries.iter().map(Vec::len).max().unwrap_or(0))
        .collect();
    for rollout in 0..k {
        let decision = orchestrator.router.sample(read.pooled.clone(), rng);
        let fused = orchestrator.fuse(&read.state, &specialist_states, &decision);
        let columns =
            orchestrator.columns(&fused, &batch, &read, &specialist_states, &decision.active);
        let out = orchestrator.output(columns, decision.clone(), TableSteps::default());
        if let Some(losses) = supervised_loss(orchestrator, space, examples, &out, 1.0) {
            stats.supervised_loss += losses.cta.unwrap_or(0.0) + losses.cpa.unwrap_or(0.0);
            supervised.push(losses.total);
        }
        let cta_rows = rows_of(out.cta_logits.clone());
        let mut row = 0;
        let entropy = rows_of(decision.entropy.clone().reshape([b, 1]));
        for (t, example) in examples.iter().enumerate() {
            let rows = &cta_rows[row..row + example.queries.len()];
            let cpa_rows = if example.cpa.is_empty() {
                Vec::new()
            } else {
                let pairs: Vec<(usize, usize)> = example
                    .cpa
                    .iter()
                    .map(|(s, o, _)| (row + s, row + o))
                    .collect();
                rows_of(orchestrator.cpa_logits(&out, &pairs).detach())
            };
            row += example.queries.len();
            let predicted = predicted_labels(space, example, rows, &cpa_rows);
            let perf = r_perf(&predicted, &gold_labels(example), &reward.perf)
                .map_err(|e| TrainError::Config(e.to_string()))?;
            let mask = decision.active[t].clone();
            let active: Vec<(usize, u64)> = mask
                .iter()
                .enumerate()
                .filter(|(_, on)| **on)
                .map(|(i, _)| (i, example.tokens.len() as u64))
                .collect();
            let steps = TableSteps::new(vec![
                StageSteps::main_only(example.tokens.len() as u64),
                StageSteps::with_subtasks(0, &active),
                StageSteps::main_only(query_tokens[t] as u64),
            ]);
            stats.critical_steps += steps.critical_steps() as f64;
            stats.serial_steps += steps.serial_steps() as f64;
            for (i, on) in mask.iter().enumerate() {
                stats.activation_rate[i] += f64::from(u8::from(*on));
            }
            stats.gate_entropy += f64::from(entropy[t][0]);
            let probs = rows_of(decision.probs.clone().slice([t..t + 1, 0..n_specialists]));
            let mean_gate =
                probs[0].iter().map(|&g| f64::from(g)).sum::<f64>() / n_specialists as f64;
            outcomes[t * k + rollout] = Some(RolloutOutcome {
                table: t,
                mask,
                mean_gate: Some(mean_gate.clamp(0.0, 1.0)),
                steps,
                annotated_columns: example.queries.len(),
                columns: example.queries.len(),
                perf,
            });
            log_probs[t * k + rollout] =
                Some(decision.probs.clone().slice([t..t + 1, 0..n_specialists]));
        }
    }
    let outcomes: Vec<RolloutOutcome> = outcomes.into_iter().flatten().collect();
    let scored = score_batch(&outcomes, reward, progress)
        .map_err(|e| TrainError::Config(format!("PARL reward: {e}")))?;
    // Tables without gold get no reward: their group's advantages are zero.
    let totals: Vec<f64> = scored.iter().map(|s| s.map_or(0.0, |r| r.total)).collect();
    let advantages = group_advantages(&totals, advantage)
        .map_err(|e| TrainError::Config(format!("PARL advantages: {e}")))?;
    let n = outcomes.len() as f64;
    let counted = scored.iter().flatten().count().max(1) as f64;
    for s in scored.iter().flatten() {
        stats.reward += s.total / counted;
        stats.r_perf += s.perf / counted;
        stats.r_parallel += s.parallel / counted;
        stats.r_finish += s.finish / counted;
        stats.lambda_parallel = s.lambdas.parallel;
        stats.lambda_finish = s.lambdas.finish;
    }
    for rate in &mut stats.activation_rate {
        *rate /= n;
    }
    stats.gate_entropy /= n;
    stats.critical_steps /= n;
    stats.serial_steps /= n;
    stats.supervised_loss /= k as f64;

    let device = read.pooled.device();
    let gates = Tensor::cat(log_probs.into_iter().flatten().collect(), 0);
    let actions: Vec<bool> = outcomes.iter().flat_map(|o| o.mask.clone()).collect();
    let actions = Tensor::<2, Bool>::from_data(
        TensorData::new(actions, [outcomes.len(), n_specialists]),
        &device,
    );
    let new_log_probs = bernoulli_log_probs(gates, actions.clone());
    let old_log_probs = new_log_probs.clone().detach();
    let adv: Vec<f32> = advantages.iter().map(|&a| a as f32).collect();
    let adv = Tensor::<1>::from_data(TensorData::new(adv, [outcomes.len()]), &device);
    let decisions = actions.clone().equal(actions);
    let policy = policy_loss(
        new_log_probs,
        old_log_probs,
        adv,
        decisions,
        &config.objective,
    )
    .map_err(|e| TrainError::Config(format!("PARL objective: {e}")))?;
    stats.policy_loss = f64::from(policy.clone().into_scalar::<f32>());
    let mut loss = policy;
    let count = supervised.len() as f64;
    if let Some(sum) = supervised.into_iter().reduce(|a, b| a + b) {
        loss = loss + sum * (config.supervised_weight / count);
    }
    stats.loss = f64::from(loss.clone().into_scalar::<f32>());
    Ok((loss, stats))
}
