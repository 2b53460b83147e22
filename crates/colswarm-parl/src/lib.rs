//! PARL pieces for colswarm's router: reward terms, λ schedules, critical steps, group
//! advantages and the policy objective. Pure, tested functions; the RL *loop* that calls them
//! lives in `colswarm-train`.
//!
//! The reward of one rollout (one table routed once), at training progress `p ∈ [0, 1]`:
//!
//! ```text
//! r = λ1(p)·r_parallel + λ2(p)·r_finish + r_perf
//! ```
//!
//! * [`r_perf`]: micro-F1 of CTA and CPA over the table's annotated columns, `∈ [0, 1]`, `None`
//!   without gold ([`perf`]).
//! * [`r_parallel`]: K2.5's instantiation share, capped at a target rate, mixed with H-Net's
//!   load-balance term, `∈ [0, 1]` ([`parallel`]).
//! * [`r_finish`]: finish rate within the critical-step budget × column coverage, minus a
//!   penalty for degenerate routing, `∈ [−p, 1]` ([`finish`]; the critical steps are
//!   `colswarm_swarm::TableSteps`, which the swarm reports for every forward pass).
//! * [`LambdaSchedule`]: piecewise (Aegir), linear, cosine ([`schedule`]).
//!
//! Then [`group_advantages`] (K rollouts per table, group-mean baseline) and [`policy_loss`]
//! (K2.5's band-masked surrogate with `τ·ρ²`, or PPO-clip) on burn tensors, plus
//! [`load_balance_aux_loss`] as a differentiable auxiliary loss. `docs/PARL.md` has the full
//! definitions and how they differ from open-parl 0.1.0 and Aegir.
#![warn(missing_docs)]

mod advantage;
mod balance;
mod error;
mod finish;
mod objective;
mod parallel;
mod perf;
mod reward;
mod rollout;
mod schedule;

pub use advantage::{AdvantageConfig, group_advantages};
pub use balance::load_balance_aux_loss;
pub use error::{ParlError, Result};
pub use finish::{Degeneracy, FinishConfig, FinishCounts, r_finish};
pub use objective::{ObjectiveConfig, bernoulli_log_probs, policy_loss, surrogate};
pub use parallel::{
    ParallelConfig, group_load_balance_reward, instantiation_reward, load_balance_loss,
    load_balance_reward, r_parallel,
};
pub use perf::{F1Counts, PerfConfig, TableLabels, micro_f1, pair_counts, r_perf};
pub use reward::{RewardBreakdown, RewardConfig, parl_reward, single_lambda_reward};
pub use rollout::{RolloutOutcome, score_batch};
pub use schedule::{LambdaSchedule, Lambdas, Schedule, clamp_progress, progress};
