//! One step: `K` sampled router masks per table, each rollout's mixed answers scored against
//! the gold labels, the policy loss over the router's gates plus the mix's supervised loss.

use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm_model::{
    Example, ExpertOutputs, ExpertRouting, LabelSpace, Model, Outputs, Task,
    expert_routing::label_namespaces, rows_of,
};
use colswarm_parl::{
    AdvantageConfig, PerfConfig, RewardConfig, RolloutOutcome, TableLabels, group_advantages,
    r_perf, score_batch,
};
use colswarm_swarm::{RouterDecision, StageSteps, TableSteps};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::config::ExpertRoutingConfig;
use super::data::TableRead;
use crate::error::TrainError;
use crate::parl::{self, gold_labels, rollout_policy};
use crate::supervised::namespace_loss;

/// What one step's rollouts did, averaged (logged).
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct StepStats {
    pub(super) reward: f64,
    pub(super) r_perf: f64,
    /// `r_perf` minus the primary's alone on the same tables.
    pub(super) gain: f64,
    r_parallel: f64,
    r_finish: f64,
    lambda_parallel: f64,
    lambda_finish: f64,
    pub(super) activation_rate: Vec<f64>,
    /// The policy and mix losses, left on the device (the driver reads them with the loss).
    #[serde(skip)]
    pub(super) losses: Vec<(&'static str, Tensor<1>)>,
}

/// The labels a table's (mixed) outputs predict, decoded as in evaluation; a gold relation
/// whose pair the outputs did not score (the model chose another subject column) is predicted
/// as nothing.
pub(super) fn predicted_labels(
    space: &LabelSpace,
    example: &Example,
    outputs: &Outputs,
) -> TableLabels<usize> {
    parl::predicted_labels(space, example, &outputs.cta, |i| {
        let (s, o, _) = &example.cpa[i];
        outputs.cpa[0]
            .iter()
            .find(|(a, b, _)| a == s && b == o)
            .map(|(_, _, logits)| logits.as_slice())
    })
}

/// The primary's outputs on `read`'s table with the experts `open` marks mixed in at `weights`.
pub(super) fn mixed(
    model: &Model,
    weights: &[Vec<f32>],
    read: &TableRead,
    open: &[bool],
) -> Outputs {
    let mut outputs = read.primary.clone();
    let reads: Vec<ExpertOutputs> = read
        .experts
        .iter()
        .zip(open)
        .map(|(out, &on)| ExpertOutputs {
            slot: vec![on.then_some(0)],
            outputs: on.then(|| out.clone()),
        })
        .collect();
    model.mix_experts(weights, &reads, &[&read.example], &mut outputs);
    outputs
}

/// One step on `reads`: rollouts, rewards, advantages, and the loss to minimise.
#[allow(clippy::too_many_arguments)]
pub(super) fn routing_step(
    routing: &ExpertRouting,
    model: &Model,
    reads: &[&TableRead],
    config: &ExpertRoutingConfig,
    (reward, advantage): (&RewardConfig, &AdvantageConfig),
    progress: f64,
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> Result<(Tensor<1>, StepStats), TrainError> {
    let width = reads[0].features.len();
    let flat: Vec<f32> = reads.iter().flat_map(|r| r.features.clone()).collect();
    let features = Tensor::<2>::from_data(TensorData::new(flat, [reads.len(), width]), device);
    let decisions: Vec<RouterDecision> = (0..config.rollouts)
        .map(|_| routing.router.sample(features.clone(), rng))
        .collect();
    let (rolled, mut stats) = roll_out(routing, model, reads, &decisions, &reward.perf)?;
    let policy = policy_term(
        &rolled,
        config,
        (reward, advantage),
        progress,
        &mut stats,
        device,
    )?;
    let masks: Vec<&[Vec<bool>]> = decisions.iter().map(|d| d.active.as_slice()).collect();
    // Without router training the policy term counts zero: the router's gradients are zeros,
    // which leave Adam's moments, and so its weights, where they are; and the graph of its
    // gates is still consumed by the backward pass (left out, it was never freed, and steps
    // slowed down a hundredfold).
    let mut loss = if config.train_router {
        policy
    } else {
        policy * 0.0
    };
    if config.mix_weight > 0.0
        && let Some(mix) = mix_loss(routing, model, reads, &masks, device)
    {
        stats.losses.push(("mix_loss", mix.clone().detach()));
        loss = loss + mix * config.mix_weight;
    }
    Ok((loss, stats))
}

/// Every rollout of a step, table by table (`K` in a row per table), with the gates each
/// rollout's mask was drawn from.
struct Rolled {
    outcomes: Vec<RolloutOutcome>,
    gates: Vec<Tensor<2>>,
}

/// Scores each rollout's mixed answers (`r_perf`) and counts who opened.
fn roll_out(
    routing: &ExpertRouting,
    model: &Model,
    reads: &[&TableRead],
    decisions: &[RouterDecision],
    perf_config: &PerfConfig,
) -> Result<(Rolled, StepStats), TrainError> {
    let n = routing.experts();
    let weights = routing.mix.host_weights();
    let mut stats = StepStats {
        activation_rate: vec![0.0; n],
        ..StepStats::default()
    };
    let mut rolled = Rolled {
        outcomes: Vec::with_capacity(reads.len() * decisions.len()),
        gates: Vec::with_capacity(reads.len() * decisions.len()),
    };
    let host_probs = rows_of(decisions[0].probs.clone().detach());
    for (t, read) in reads.iter().enumerate() {
        let gold = gold_labels(&read.example);
        let perf = |outputs: &Outputs| -> Result<Option<f64>, TrainError> {
            let predicted = predicted_labels(&model.space, &read.example, outputs);
            r_perf(&predicted, &gold, perf_config).map_err(|e| TrainError::Config(e.to_string()))
        };
        stats.gain -= perf(&read.primary)?.unwrap_or(0.0) / reads.len() as f64;
        for decision in decisions {
            let mask = decision.active[t].clone();
            for (i, on) in mask.iter().enumerate() {
                stats.activation_rate[i] += f64::from(u8::from(*on));
            }
            let outputs = mixed(model, &weights, read, &mask);
            let mean_gate = host_probs[t].iter().map(|&g| f64::from(g)).sum::<f64>() / n as f64;
            rolled.outcomes.push(RolloutOutcome {
                table: t,
                steps: table_steps(&read.example, &mask),
                mask,
                mean_gate: Some(mean_gate.clamp(0.0, 1.0)),
                annotated_columns: read.example.columns.len(),
                columns: read.example.columns.len(),
                perf: perf(&outputs)?,
            });
            rolled
                .gates
                .push(decision.probs.clone().slice([t..t + 1, 0..n]));
        }
    }
    for rate in &mut stats.activation_rate {
        *rate /= rolled.outcomes.len() as f64;
    }
    Ok((rolled, stats))
}

/// The rollouts' rewards (minus the read cost), advantages and the policy objective over the
/// router's decisions; the reward terms are added to `stats`.
fn policy_term(
    rolled: &Rolled,
    config: &ExpertRoutingConfig,
    (reward, advantage): (&RewardConfig, &AdvantageConfig),
    progress: f64,
    stats: &mut StepStats,
    device: &Device,
) -> Result<Tensor<1>, TrainError> {
    let outcomes = &rolled.outcomes;
    let scored = score_batch(outcomes, reward, progress)
        .map_err(|e| TrainError::Config(format!("PARL reward: {e}")))?;
    let totals: Vec<f64> = scored
        .iter()
        .zip(outcomes)
        .map(|(s, o)| {
            let reads = o.mask.iter().filter(|&&on| on).count() as f64;
            s.map_or(0.0, |r| r.total - config.read_cost * reads)
        })
        .collect();
    let advantages = group_advantages(&totals, advantage)
        .map_err(|e| TrainError::Config(format!("PARL advantages: {e}")))?;
    let counted = scored.iter().flatten().count().max(1) as f64;
    for (s, total) in scored.iter().zip(&totals) {
        if let Some(s) = s {
            stats.reward += total / counted;
            stats.r_perf += s.perf / counted;
            stats.r_parallel += s.parallel / counted;
            stats.r_finish += s.finish / counted;
            stats.lambda_parallel = s.lambdas.parallel;
            stats.lambda_finish = s.lambdas.finish;
        }
    }
    stats.gain += stats.r_perf;
    let gates = rolled.gates.clone();
    let policy = rollout_policy(gates, outcomes, &advantages, &config.objective, device)?;
    stats.losses.push(("policy_loss", policy.clone().detach()));
    Ok(policy)
}

/// The rows of one task the mix is trained on, over every rollout: each row's logits (the
/// primary's and each expert's in the primary's label order), who read its table, and its
/// namespace and gold outputs.
struct MixRows<'a> {
    primary: Vec<f32>,
    experts: Vec<Vec<f32>>,
    open: Vec<f32>,
    targets: Vec<(usize, &'a [usize])>,
}

/// The supervised loss of the mixed logits under each rollout's mask (`masks[k][table]`), CTA
/// and CPA rows together, each namespace's loss weighted by its share of the rows; `None`
/// without a target.
fn mix_loss(
    routing: &ExpertRouting,
    model: &Model,
    reads: &[&TableRead],
    masks: &[&[Vec<bool>]],
    device: &Device,
) -> Option<Tensor<1>> {
    let mut parts = Vec::new();
    let mut total_rows = 0;
    for task in [Task::Cta, Task::Cpa] {
        let labels = label_namespaces(&model.space, task);
        let rows = task_rows(model, reads, masks, task, labels.len());
        if rows.targets.is_empty() {
            continue;
        }
        let (r, l, n) = (rows.targets.len(), labels.len(), model.experts.len());
        let tensor = |values: Vec<f32>, shape: [usize; 2]| {
            Tensor::<2>::from_data(TensorData::new(values, shape), device)
        };
        let known: Vec<f32> = model
            .experts
            .iter()
            .flat_map(|e| {
                let mut row = vec![0f32; l];
                for &(_, p) in e.label_map(task) {
                    row[p] = 1.0;
                }
                row
            })
            .collect();
        let experts =
            Tensor::<3>::from_data(TensorData::new(rows.experts.concat(), [n, r, l]), device);
        let index: Vec<i64> = labels.iter().map(|&ns| ns as i64).collect();
        let mixed = routing.mix.forward(
            tensor(rows.primary, [r, l]),
            experts,
            tensor(known, [n, l]),
            tensor(rows.open, [r, n]),
            Tensor::<1, Int>::from_data(index.as_slice(), device),
        );
        let list = model.space.list(task);
        for (ns, namespace) in list.iter().enumerate().take(match task {
            Task::Cta => list.iter().take_while(|n| n.head.is_none()).count(),
            Task::Cpa => list.len(),
        }) {
            let picked: Vec<(usize, &[usize])> = rows
                .targets
                .iter()
                .enumerate()
                .filter(|(_, (n, _))| *n == ns)
                .map(|(row, (_, t))| (row, *t))
                .collect();
            if picked.is_empty() {
                continue;
            }
            let (index, targets): (Vec<usize>, Vec<&[usize]>) = picked.into_iter().unzip();
            let loss = namespace_loss(&mixed, &index, namespace, &targets);
            parts.push(loss * index.len() as f64);
            total_rows += index.len();
        }
    }
    let sum = parts.into_iter().reduce(|a, b| a + b)?;
    Some(sum / total_rows as f64)
}

/// [`MixRows`] of `task` (`labels` wide) over every rollout's mask.
fn task_rows<'a>(
    model: &Model,
    reads: &[&'a TableRead],
    masks: &[&[Vec<bool>]],
    task: Task,
    labels: usize,
) -> MixRows<'a> {
    let n = model.experts.len();
    let mut rows = MixRows {
        primary: Vec::new(),
        experts: vec![Vec::new(); n],
        open: Vec::new(),
        targets: Vec::new(),
    };
    for mask in masks {
        for (t, read) in reads.iter().enumerate() {
            let example = &read.example;
            // (primary row, each expert's row, namespace, gold) per target of the table.
            let mut push = |primary: &[f32], own: Vec<Option<&[f32]>>, ns, gold: &'a [usize]| {
                rows.primary.extend_from_slice(&primary[..labels]);
                for (i, expert) in model.experts.iter().enumerate() {
                    let mut aligned = vec![0f32; labels];
                    if let Some(logits) = own[i] {
                        for &(e, p) in expert.label_map(task) {
                            aligned[p] = logits[e];
                        }
                    }
                    rows.experts[i].extend(aligned);
                }
                rows.open
                    .extend(mask[t].iter().map(|&on| if on { 1.0 } else { 0.0 }));
                rows.targets.push((ns, gold));
            };
            match task {
                Task::Cta => {
                    let Some(ns) = example.cta_namespace else {
                        continue;
                    };
                    for (q, gold) in example.cta.iter().enumerate() {
                        if gold.is_empty() {
                            continue;
                        }
                        let own = read.experts.iter().map(|o| Some(o.cta[q].as_slice()));
                        push(&read.primary.cta[q], own.collect(), ns, gold);
                    }
                }
                Task::Cpa => {
                    let Some(ns) = example.cpa_namespace else {
                        continue;
                    };
                    let find = |outputs: &'a Outputs, s: usize, o: usize| {
                        outputs.cpa[0]
                            .iter()
                            .find(|(a, b, _)| *a == s && *b == o)
                            .map(|(_, _, l)| l.as_slice())
                    };
                    for (s, o, gold) in &example.cpa {
                        let Some(primary) = find(&read.primary, *s, *o) else {
                            continue;
                        };
                        let own = read.experts.iter().map(|out| find(out, *s, *o));
                        push(primary, own.collect(), ns, gold);
                    }
                }
            }
        }
    }
    rows
}

/// A rollout's steps on one table: the primary's read, the open experts' reads in parallel.
fn table_steps(example: &Example, mask: &[bool]) -> TableSteps {
    let active: Vec<(usize, u64)> = mask
        .iter()
        .enumerate()
        .filter(|(_, on)| **on)
        .map(|(i, _)| (i, example.tokens.len() as u64))
        .collect();
    TableSteps::new(vec![
        StageSteps::main_only(example.tokens.len() as u64),
        StageSteps::with_subtasks(0, &active),
    ])
}
