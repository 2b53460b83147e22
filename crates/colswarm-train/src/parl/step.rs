//! One PARL step: `K` rollouts per table, their rewards and advantages, and the loss.

use burn::tensor::{Bool, Device, Tensor, TensorData};
use colswarm_model::{Example, LabelSpace, decode, namespace_probs, rows_of, to_batch};
use colswarm_parl::{
    AdvantageConfig, ObjectiveConfig, RewardConfig, RolloutOutcome, TableLabels,
    bernoulli_log_probs, group_advantages, policy_loss, r_perf, score_batch,
};
use colswarm_swarm::{RouterDecision, StageSteps, Swarm, SwarmOutput, TableRead, TableSteps};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::config::ParlConfig;
use super::data::gold_labels;
use crate::error::TrainError;
use crate::supervised::supervised_loss;

/// What one step's rollouts did, averaged (logged).
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct StepStats {
    pub(super) reward: f64,
    pub(super) r_perf: f64,
    r_parallel: f64,
    r_finish: f64,
    lambda_parallel: f64,
    lambda_finish: f64,
    pub(super) activation_rate: Vec<f64>,
    gate_entropy: f64,
    critical_steps: f64,
    serial_steps: f64,
    /// The policy and supervised losses, left on the device (the driver reads them with the
    /// loss).
    #[serde(skip)]
    pub(super) losses: Vec<(&'static str, Tensor<1>)>,
}

/// A rollout's predictions for one example as `TableLabels`, decoded as in evaluation: its CTA
/// rows (one per query) and, for the `i`-th gold relation of the example, `cpa_row(i)` (`None`:
/// the rollout scored no such pair, so it predicts nothing there).
pub(crate) fn predicted_labels<'a>(
    space: &LabelSpace,
    example: &Example,
    cta_rows: &[Vec<f32>],
    cpa_row: impl Fn(usize) -> Option<&'a [f32]>,
) -> TableLabels<usize> {
    let mut labels = TableLabels::default();
    if let Some(ns) = example.cta_namespace.map(|i| &space.cta[i]) {
        for (q, target) in example.cta.iter().enumerate() {
            if target.is_empty() {
                continue;
            }
            // The heads' own probabilities: the reward scores what training can change.
            let probs = namespace_probs(ns, &cta_rows[q], None);
            labels
                .cta
                .extend(decode(ns, &probs).into_iter().map(|i| (q, ns.offset + i)));
        }
    }
    if let Some(ns) = example.cpa_namespace.map(|i| &space.cpa[i]) {
        for (i, (s, o, _)) in example.cpa.iter().enumerate() {
            let Some(logits) = cpa_row(i) else {
                continue;
            };
            let probs = namespace_probs(ns, logits, None);
            labels.cpa.extend(
                decode(ns, &probs)
                    .into_iter()
                    .map(|i| ((*s, *o), ns.offset + i)),
            );
        }
    }
    labels
}

/// One PARL step: rollouts, rewards, advantages, and the loss to minimise.
#[allow(clippy::too_many_arguments)]
pub(super) fn parl_step(
    swarm: &Swarm,
    space: &LabelSpace,
    examples: &[&Example],
    config: &ParlConfig,
    reward: &RewardConfig,
    advantage: &AdvantageConfig,
    progress: f64,
    rng: &mut ChaCha8Rng,
) -> Result<(Tensor<1>, StepStats), TrainError> {
    let batch = to_batch(examples);
    batch.validate()?;
    let mut rolled = Rollouts::new(swarm.specialists.len(), examples.len(), config.rollouts);
    // Shared by every rollout: the primary's read and every specialist's (aligned) read.
    let read: TableRead = swarm.orchestrator.read_tables(&batch)?;
    let all_on = vec![vec![true; swarm.specialists.len()]; examples.len()];
    let specialist_states = swarm.run_specialists(&batch, &all_on);
    for rollout in 0..config.rollouts {
        let orchestrator = &swarm.orchestrator;
        let decision = orchestrator.router.sample(read.pooled.clone(), rng);
        let fused = orchestrator.fuse(&read.state, &specialist_states, &decision);
        let columns = orchestrator.columns(&fused, &batch, &read, &specialist_states, &decision);
        let out = orchestrator.output(columns, (&read, decision.clone()), TableSteps::default());
        if let Some(losses) = supervised_loss(orchestrator, space, examples, &out, 1.0) {
            let parts = losses.cta.into_iter().chain(losses.cpa);
            rolled.supervised_parts.extend(parts);
            rolled.supervised.push(losses.total);
        }
        rolled.score(swarm, space, examples, (&out, &decision), (rollout, reward))?;
    }
    let device = read.pooled.device();
    rolled.objective(config, reward, advantage, progress, &device)
}

/// A step's rollouts: each table's outcome and gate probabilities per rollout, the supervised
/// losses, and the statistics logged.
struct Rollouts {
    k: usize,
    n_specialists: usize,
    outcomes: Vec<Option<RolloutOutcome>>,
    log_probs: Vec<Option<Tensor<2>>>,
    supervised: Vec<Tensor<1>>,
    /// Every rollout's CTA and CPA losses, detached (logged).
    supervised_parts: Vec<Tensor<1>>,
    stats: StepStats,
}

impl Rollouts {
    fn new(n_specialists: usize, tables: usize, k: usize) -> Self {
        Rollouts {
            k,
            n_specialists,
            outcomes: vec![None; tables * k],
            log_probs: vec![None; tables * k],
            supervised: Vec::new(),
            supervised_parts: Vec::new(),
            stats: StepStats {
                activation_rate: vec![0.0; n_specialists],
                ..StepStats::default()
            },
        }
    }

    /// Scores rollout `rollout` of every table: its predictions, reward terms and steps.
    fn score(
        &mut self,
        swarm: &Swarm,
        space: &LabelSpace,
        examples: &[&Example],
        (out, decision): (&SwarmOutput, &RouterDecision),
        (rollout, reward): (usize, &RewardConfig),
    ) -> Result<(), TrainError> {
        let (k, n_specialists) = (self.k, self.n_specialists);
        let cta_rows = rows_of(out.cta_logits.clone());
        let entropy = rows_of(decision.entropy.clone().reshape([examples.len(), 1]));
        let mut row = 0;
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
                rows_of(swarm.orchestrator.cpa_logits(out, &pairs).detach())
            };
            row += example.queries.len();
            let predicted =
                predicted_labels(space, example, rows, |i| cpa_rows.get(i).map(Vec::as_slice));
            let perf = r_perf(&predicted, &gold_labels(example), &reward.perf)
                .map_err(|e| TrainError::Config(e.to_string()))?;
            let mask = decision.active[t].clone();
            let steps = table_steps(example, &mask);
            self.stats.critical_steps += steps.critical_steps() as f64;
            self.stats.serial_steps += steps.serial_steps() as f64;
            for (i, on) in mask.iter().enumerate() {
                self.stats.activation_rate[i] += f64::from(u8::from(*on));
            }
            self.stats.gate_entropy += f64::from(entropy[t][0]);
            let gates = decision.probs.clone().slice([t..t + 1, 0..n_specialists]);
            let probs = rows_of(gates.clone());
            let mean_gate =
                probs[0].iter().map(|&g| f64::from(g)).sum::<f64>() / n_specialists as f64;
            self.outcomes[t * k + rollout] = Some(RolloutOutcome {
                table: t,
                mask,
                mean_gate: Some(mean_gate.clamp(0.0, 1.0)),
                steps,
                annotated_columns: example.queries.len(),
                columns: example.queries.len(),
                perf,
            });
            self.log_probs[t * k + rollout] = Some(gates);
        }
        Ok(())
    }

    /// The step's loss: the policy objective on the rollouts' advantages, plus the supervised
    /// losses at their weight; and the statistics, averaged.
    fn objective(
        self,
        config: &ParlConfig,
        reward: &RewardConfig,
        advantage: &AdvantageConfig,
        progress: f64,
        device: &Device,
    ) -> Result<(Tensor<1>, StepStats), TrainError> {
        let mut stats = self.stats;
        let outcomes: Vec<RolloutOutcome> = self.outcomes.into_iter().flatten().collect();
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
        if let Some(sum) = self.supervised_parts.into_iter().reduce(|a, b| a + b) {
            stats.losses.push(("supervised_loss", sum / self.k as f64));
        }

        let gates = self.log_probs.into_iter().flatten().collect();
        let policy = rollout_policy(gates, &outcomes, &advantages, &config.objective, device)?;
        stats.losses.push(("policy_loss", policy.clone().detach()));
        let mut loss = policy;
        let count = self.supervised.len() as f64;
        if let Some(sum) = self.supervised.into_iter().reduce(|a, b| a + b) {
            loss = loss + sum * (config.supervised_weight / count);
        }
        Ok((loss, stats))
    }
}

/// The K2.5 policy objective over rollouts: each rollout's gates (`[1, n]` each, in the order
/// of `outcomes`), the mask it drew, and its advantage.
pub(crate) fn rollout_policy(
    gates: Vec<Tensor<2>>,
    outcomes: &[RolloutOutcome],
    advantages: &[f64],
    objective: &ObjectiveConfig,
    device: &Device,
) -> Result<Tensor<1>, TrainError> {
    let n = outcomes.first().map_or(0, |o| o.mask.len());
    let actions: Vec<bool> = outcomes.iter().flat_map(|o| o.mask.clone()).collect();
    let actions =
        Tensor::<2, Bool>::from_data(TensorData::new(actions, [outcomes.len(), n]), device);
    let new_log_probs = bernoulli_log_probs(Tensor::cat(gates, 0), actions.clone());
    let old_log_probs = new_log_probs.clone().detach();
    let adv: Vec<f32> = advantages.iter().map(|&a| a as f32).collect();
    let adv = Tensor::<1>::from_data(TensorData::new(adv, [outcomes.len()]), device);
    let decisions = actions.clone().equal(actions);
    policy_loss(new_log_probs, old_log_probs, adv, decisions, objective)
        .map_err(|e| TrainError::Config(format!("PARL objective: {e}")))
}

/// A rollout's steps on one table: the primary's read, the active specialists' reads in
/// parallel, the column queries.
fn table_steps(example: &Example, mask: &[bool]) -> TableSteps {
    let active: Vec<(usize, u64)> = mask
        .iter()
        .enumerate()
        .filter(|(_, on)| **on)
        .map(|(i, _)| (i, example.tokens.len() as u64))
        .collect();
    let query_tokens = example.queries.iter().map(Vec::len).max().unwrap_or(0);
    TableSteps::new(vec![
        StageSteps::main_only(example.tokens.len() as u64),
        StageSteps::with_subtasks(0, &active),
        StageSteps::main_only(query_tokens as u64),
    ])
}
