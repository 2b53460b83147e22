//! Scoring a batch of rollouts: the glue that turns what the router did into rewards.
//!
//! A batch holds K rollouts for each of several tables. For each rollout the caller records its
//! table, its mask, its gate probabilities' mean, its stage accounting and how many columns
//! were annotated, plus `r_perf` (computed with [`crate::r_perf`] against the gold labels).
//! [`score_batch`] then computes, per rollout:
//!
//! * `r_parallel` from `(n = Σ m, S, ḡ)` ([`crate::r_parallel`]);
//! * the finish counts within `RewardConfig::step_budget` (no budget: all activated count as
//!   finished) and the degeneracy flags against the masks of the rollouts of *other* tables
//!   ([`crate::Degeneracy::detect`]), then `r_finish`;
//! * `(λ1, λ2)` at the given progress, and the total `λ1·r_parallel + λ2·r_finish + r_perf`.
//!
//! A rollout whose `r_perf` is `None` (no gold) gets `None`: leave its group out of the update.

use colswarm_swarm::TableSteps;
use serde::{Deserialize, Serialize};

use crate::error::{ParlError, Result};
use crate::finish::{Degeneracy, FinishCounts, r_finish};
use crate::parallel::r_parallel;
use crate::reward::{RewardBreakdown, RewardConfig};

/// What one rollout did, as the reward sees it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RolloutOutcome {
    /// Which table of the batch (rollouts of the same table share this id).
    pub table: usize,
    /// The sampled mask over the `S` specialists.
    pub mask: Vec<bool>,
    /// Mean gate probability `ḡ` of this rollout (`None`: use the hard share).
    pub mean_gate: Option<f64>,
    /// Stage accounting (critical steps).
    pub steps: TableSteps,
    /// Columns that received an annotation.
    pub annotated_columns: usize,
    /// Columns of the table.
    pub columns: usize,
    /// `r_perf` of this rollout (`None`: no gold, excluded).
    pub perf: Option<f64>,
}

/// Rewards of every rollout of a batch at training progress `progress` (module docs).
///
/// # Errors
/// Any error of the reward terms or the schedule; masks of different lengths.
pub fn score_batch(
    rollouts: &[RolloutOutcome],
    config: &RewardConfig,
    progress: f64,
) -> Result<Vec<Option<RewardBreakdown>>> {
    let lambdas = config.schedule.at(progress)?;
    let s = rollouts.first().map_or(0, |r| r.mask.len());
    if let Some(bad) = rollouts.iter().find(|r| r.mask.len() != s) {
        return Err(ParlError::LengthMismatch {
            what: "rollout mask",
            expected: s,
            got: bad.mask.len(),
        });
    }
    let budget = config.step_budget.unwrap_or(u64::MAX);
    rollouts
        .iter()
        .map(|r| {
            let Some(perf) = r.perf else {
                return Ok(None);
            };
            let others: Vec<Vec<bool>> = rollouts
                .iter()
                .filter(|o| o.table != r.table)
                .map(|o| o.mask.clone())
                .collect();
            let degeneracy = Degeneracy::detect(&r.mask, &others)?;
            let active = r.mask.iter().filter(|&&b| b).count();
            let parallel = r_parallel(active, s, r.mean_gate, &config.parallel)?;
            let finish = r_finish(
                FinishCounts::within_budget(&r.steps, budget),
                r.annotated_columns,
                r.columns,
                degeneracy,
                &config.finish,
            )?;
            Ok(Some(RewardBreakdown::new(lambdas, perf, parallel, finish)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_swarm::StageSteps;

    /// A rollout of `table` with `mask`, 6 columns all annotated, primary reading 100 tokens and
    /// every active specialist reading 100 tokens in one parallel stage, then 6 query steps.
    fn outcome(table: usize, mask: &[bool], perf: f64) -> RolloutOutcome {
        let subs: Vec<(usize, u64)> = mask
            .iter()
            .enumerate()
            .filter(|(_, b)| **b)
            .map(|(i, _)| (i, 100))
            .collect();
        RolloutOutcome {
            table,
            mask: mask.to_vec(),
            mean_gate: None,
            steps: TableSteps::new(vec![
                StageSteps::with_subtasks(100, &subs),
                StageSteps::main_only(6),
            ]),
            annotated_columns: 6,
            columns: 6,
            perf: Some(perf),
        }
    }

    #[test]
    fn selective_routing_beats_always_on_and_always_off_at_equal_perf() {
        // 4 specialists, ρ = 0.25, Aegir schedule at p = 0.1 (λ = 0.3, 0.1), equal r_perf = 0.6.
        let config = RewardConfig::default();
        let one_hot = |i: usize| (0..4).map(|k| k == i).collect::<Vec<_>>();
        let selective: Vec<_> = (0..3).map(|t| outcome(t, &one_hot(t), 0.6)).collect();
        let on: Vec<_> = (0..3).map(|t| outcome(t, &[true; 4], 0.6)).collect();
        let off: Vec<_> = (0..3).map(|t| outcome(t, &[false; 4], 0.6)).collect();
        let total = |batch: &[RolloutOutcome]| -> Vec<f64> {
            score_batch(batch, &config, 0.1)
                .unwrap()
                .into_iter()
                .map(|b| b.unwrap().total)
                .collect()
        };
        // Selective: r_parallel = 1, r_finish = 1 → 0.6 + 0.3 + 0.1 = 1.0.
        for r in total(&selective) {
            assert!((r - 1.0).abs() < 1e-12, "{r}");
        }
        // All-on: r_parallel = 0 (tent 0, H-Net 0), r_finish = 1 − 0.5 → 0.6 + 0.05 = 0.65.
        for r in total(&on) {
            assert!((r - 0.65).abs() < 1e-12, "{r}");
        }
        // All-off: r_parallel = (0 + 8/9)/2, r_finish = 1 − 0.5 → 0.6 + 0.3·4/9 + 0.05.
        for r in total(&off) {
            assert!((r - (0.65 + 0.3 * 4.0 / 9.0)).abs() < 1e-12, "{r}");
        }
    }

    #[test]
    fn budget_and_exclusion() {
        let config = RewardConfig {
            step_budget: Some(150), // the specialists end at 200 → none finishes
            ..RewardConfig::default()
        };
        let mut a = outcome(0, &[true, false, false, false], 0.5);
        let b = outcome(1, &[false, true, false, false], 0.5);
        let scored = score_batch(&[a.clone(), b.clone()], &config, 0.5).unwrap();
        // p = 0.5 → λ = (0.1, 0.3); r_parallel = 1, r_finish = 0·1 = 0 → 0.5 + 0.1.
        assert!((scored[0].unwrap().total - 0.6).abs() < 1e-12);
        a.perf = None;
        let scored = score_batch(&[a, b], &config, 0.5).unwrap();
        assert!(scored[0].is_none() && scored[1].is_some());
    }

    #[test]
    fn constant_routing_is_judged_against_other_tables_only() {
        let config = RewardConfig::default();
        let m = [true, false, false, false];
        // Two rollouts of table 0 with the same mask, nothing else: no other table → no penalty.
        let same_table = [outcome(0, &m, 0.5), outcome(0, &m, 0.5)];
        let r = score_batch(&same_table, &config, 0.1).unwrap();
        assert!((r[0].unwrap().finish - 1.0).abs() < 1e-12);
        // Table 1 copies one of table 0's masks.
        let batch = [
            outcome(0, &m, 0.5),
            outcome(0, &[false, true, false, false], 0.5),
            outcome(1, &m, 0.5),
        ];
        let r = score_batch(&batch, &config, 0.1).unwrap();
        let finish: Vec<f64> = r.iter().map(|b| b.unwrap().finish).collect();
        // Rollout 0: other tables = {table 1: m} → constant. Rollout 1: differs → fine.
        // Rollout 2: other tables = {m, [0,1,0,0]} → not all equal → fine.
        assert_eq!(finish, vec![0.5, 1.0, 1.0]);
    }
}
