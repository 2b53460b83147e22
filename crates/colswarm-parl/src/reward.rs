//! The combined PARL reward, and K2.5's older single-λ form.
//!
//! **Three-term form** (K2.5 report §3, Aegir):
//!
//! ```text
//! r = λ1(p)·r_parallel + λ2(p)·r_finish + r_perf
//! ```
//!
//! with `r_perf ∈ [0, 1]` ([`crate::r_perf`]), `r_parallel ∈ [0, 1]` ([`crate::r_parallel`]),
//! `r_finish ∈ [−p_deg, 1]` ([`crate::r_finish`]) and `(λ1, λ2)` from a
//! [`LambdaSchedule`]. A table whose `r_perf` is `None` (no gold) gets no reward at all: leave it
//! out of the batch.
//!
//! **Single-λ form** (K2.5 launch blog; what the PyPI package `open-parl` 0.1.0 computes):
//!
//! ```text
//! r = λ·r_parallel + (1 − λ)·1[success]·Q
//! ```
//!
//! a convex mix that down-weights the task term early. Here `Q ∈ [0, 1]` is a real quality
//! (e.g. `r_perf`), applied once; open-parl's `Q` is the clamped mean of arbitrary "trajectory
//! features" times success, so success is applied twice there (harmless for binary success).

use serde::{Deserialize, Serialize};

use crate::error::{Result, check_range};
use crate::finish::FinishConfig;
use crate::parallel::ParallelConfig;
use crate::perf::PerfConfig;
use crate::schedule::{LambdaSchedule, Lambdas};

/// One rollout's reward, term by term (for logging) with its total.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct RewardBreakdown {
    /// `(λ1, λ2)` used.
    pub lambdas: Lambdas,
    /// `r_perf`.
    pub perf: f64,
    /// `r_parallel`.
    pub parallel: f64,
    /// `r_finish`.
    pub finish: f64,
    /// `λ1·r_parallel + λ2·r_finish + r_perf`.
    pub total: f64,
}

impl RewardBreakdown {
    /// Combines the terms with [`parl_reward`].
    pub fn new(lambdas: Lambdas, perf: f64, parallel: f64, finish: f64) -> Self {
        Self {
            lambdas,
            perf,
            parallel,
            finish,
            total: parl_reward(lambdas, perf, parallel, finish),
        }
    }
}

/// `λ1·r_parallel + λ2·r_finish + r_perf`.
pub fn parl_reward(lambdas: Lambdas, r_perf: f64, r_parallel: f64, r_finish: f64) -> f64 {
    lambdas.parallel * r_parallel + lambdas.finish * r_finish + r_perf
}

/// K2.5's single-λ form `λ·r_parallel + (1 − λ)·1[success]·Q`.
///
/// # Errors
/// `λ ∉ [0, 1]` or `Q ∉ [0, 1]` (NaN included).
pub fn single_lambda_reward(
    lambda: f64,
    r_parallel: f64,
    success: bool,
    quality: f64,
) -> Result<f64> {
    let lambda = check_range("lambda", lambda, 0.0, 1.0)?;
    let q = check_range("quality", quality, 0.0, 1.0)?;
    Ok(lambda * r_parallel + (1.0 - lambda) * if success { q } else { 0.0 })
}

/// Everything the reward needs, as one serde config for the training loop.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RewardConfig {
    /// `r_perf`'s task weights.
    pub perf: PerfConfig,
    /// `r_parallel`'s form.
    pub parallel: ParallelConfig,
    /// `r_finish`'s penalty.
    pub finish: FinishConfig,
    /// `(λ1(p), λ2(p))`.
    pub schedule: LambdaSchedule,
    /// Critical-step budget per table rollout (`None`: no budget, every activated specialist
    /// counts as finished).
    pub step_budget: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::instantiation_reward;
    use crate::schedule::{Schedule, progress};

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn combined_reward_matches_aegir_p1() {
        // docs/PARL.md §8 P1: λ = (0.3, 0.1), r_perf 1.0, r_parallel 0.5, r_finish 0.2 → 1.17.
        let l = Lambdas {
            parallel: 0.3,
            finish: 0.1,
        };
        close(parl_reward(l, 1.0, 0.5, 0.2), 1.17);
        let b = RewardBreakdown::new(l, 1.0, 0.5, 0.2);
        close(b.total, 1.17);
        // With the Aegir schedule at p = 0.1 the same λ come out.
        let l = LambdaSchedule::aegir().at(0.1).unwrap();
        close(parl_reward(l, 1.0, 0.5, 0.2), 1.17);
    }

    #[test]
    fn reproduces_open_parl_0_1_0() {
        // open-parl 0.1.0 (PyPI; docs/PARL.md §1.5), defaults lambda_init = 0.1,
        // lambda_final = 0.0, total_training_steps T = 10000, max_subagents M = 100:
        //   λ(e)       = 0.1 + (0.0 − 0.1)·min(1, e/T)
        //   r_parallel = n / M
        //   Q          = clamp(mean(features)·s, 0, 1)
        //   total      = λ·r_parallel + (1 − λ)·s·Q
        // Hand values, n = 30 → r_parallel = 0.3; features [0.6, 1.0] → mean 0.8; s = 1 → Q = 0.8:
        //   e = 0:      λ = 0.1,  total = 0.1·0.3 + 0.9·0.8   = 0.03  + 0.72  = 0.75
        //   e = 5000:   λ = 0.05, total = 0.05·0.3 + 0.95·0.8 = 0.015 + 0.76  = 0.775
        //   e = 10000:  λ = 0.0,  total = 0.8
        //   e = 15000:  λ = 0.0 (progress clamped at 1), total = 0.8
        //   s = 0 at e = 0: Q = clamp(0.8·0) = 0, total = 0.1·0.3 = 0.03
        // n = 100 at e = 2500: λ = 0.075, r_parallel = 1, Q = 0.8 → 0.075 + 0.925·0.8 = 0.815
        let schedule = Schedule::Linear {
            start: 0.1,
            end: 0.0,
        };
        let q: f64 = [0.6f64, 1.0].iter().sum::<f64>() / 2.0;
        let cases = [
            (0u64, 30usize, true, 0.75),
            (5_000, 30, true, 0.775),
            (10_000, 30, true, 0.8),
            (15_000, 30, true, 0.8),
            (0, 30, false, 0.03),
            (2_500, 100, true, 0.815),
        ];
        for (step, n, success, expected) in cases {
            let lambda = schedule.value(progress(step, 10_000).unwrap()).unwrap();
            let r_par = instantiation_reward(n, 100, None).unwrap();
            let r = single_lambda_reward(lambda, r_par, success, q).unwrap();
            close(r, expected);
        }
        // Documented divergences (docs/PARL.md §2): open-parl extrapolates a negative step
        // (e = −5000 → λ = 0.15) and leaves n > M unclamped (n = 150 → 1.5); here progress is
        // clamped (λ = 0.1) and n > S is an error.
        close(schedule.value(-0.5).unwrap(), 0.1);
        assert!(instantiation_reward(150, 100, None).is_err());
    }

    #[test]
    fn single_lambda_rejects_out_of_range() {
        assert!(single_lambda_reward(1.5, 0.0, true, 0.5).is_err());
        assert!(single_lambda_reward(0.5, 0.0, true, f64::NAN).is_err());
        close(single_lambda_reward(0.0, 0.9, true, 0.4).unwrap(), 0.4);
        close(single_lambda_reward(1.0, 0.9, true, 0.4).unwrap(), 0.9);
    }

    #[test]
    fn reward_config_round_trips_json() {
        let c = RewardConfig {
            step_budget: Some(4096),
            ..RewardConfig::default()
        };
        let json = serde_json::to_string_pretty(&c).unwrap();
        let back: RewardConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }
}
