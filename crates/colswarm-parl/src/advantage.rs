//! Group-relative advantages (K2.5 §4.4.2): K rollouts per table, the group mean as baseline.
//!
//! Rewards come group-major: `rewards[g·K + k]` is rollout `k` of table `g`. For group `g` with
//! mean `r̄_g = (1/K)·Σ_k r_gk` and population standard deviation
//! `σ_g = sqrt((1/K)·Σ_k (r_gk − r̄_g)²)`:
//!
//! ```text
//! A_gk = r_gk − r̄_g                        (K2.5; default)
//! A_gk = (r_gk − r̄_g) / (σ_g + ε)          (normalize_std = true; GRPO-style)
//! ```
//!
//! **Zero variance.** When every reward of a group is equal (bitwise), all its advantages are
//! exactly 0 (not the rounding residue of `r − r̄`, nor that residue blown up by `1/ε`): the group
//! carries no learning signal. A term that is the same for every rollout of a group (e.g. a
//! batch-level statistic) is removed by the baseline for the same reason.
//!
//! `K ≥ 2` is required: with `K = 1` every advantage would be 0 and nothing would be learned.

use serde::{Deserialize, Serialize};

use crate::error::{ParlError, Result, check_range};

/// How group advantages are formed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AdvantageConfig {
    /// Rollouts per table `K ≥ 2`. Default 4.
    pub group_size: usize,
    /// Divide by the group's standard deviation (+ ε). Default false (K2.5 uses the mean only).
    pub normalize_std: bool,
    /// `ε > 0` added to `σ_g`. Default 1e-6.
    pub epsilon: f64,
}

impl Default for AdvantageConfig {
    fn default() -> Self {
        Self {
            group_size: 4,
            normalize_std: false,
            epsilon: 1e-6,
        }
    }
}

/// Advantages of group-major `rewards` (module docs).
///
/// # Errors
/// `K < 2` or `K` not dividing `rewards.len()` ([`ParlError::BadGroup`]); a non-finite reward;
/// `ε ≤ 0` when normalising.
pub fn group_advantages(rewards: &[f64], config: &AdvantageConfig) -> Result<Vec<f64>> {
    let k = config.group_size;
    if k < 2 || !rewards.len().is_multiple_of(k) {
        return Err(ParlError::BadGroup {
            n: rewards.len(),
            group_size: k,
        });
    }
    if config.normalize_std {
        check_range("epsilon", config.epsilon, f64::MIN_POSITIVE, f64::MAX)?;
    }
    if let Some(&bad) = rewards.iter().find(|r| !r.is_finite()) {
        return Err(ParlError::OutOfRange {
            what: "reward",
            value: bad,
            lo: f64::MIN,
            hi: f64::MAX,
        });
    }
    let mut out = Vec::with_capacity(rewards.len());
    for group in rewards.chunks(k) {
        if group.iter().all(|&r| r == group[0]) {
            out.extend(std::iter::repeat_n(0.0, k));
            continue;
        }
        let mean = group.iter().sum::<f64>() / k as f64;
        let scale = if config.normalize_std {
            let var = group.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / k as f64;
            1.0 / (var.sqrt() + config.epsilon)
        } else {
            1.0
        };
        out.extend(group.iter().map(|r| (r - mean) * scale));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn mean_baseline_per_group() {
        let cfg = AdvantageConfig {
            group_size: 2,
            ..AdvantageConfig::default()
        };
        let a = group_advantages(&[1.0, 0.0, 0.5, 0.7], &cfg).unwrap();
        for (x, y) in a.iter().zip([0.5, -0.5, -0.1, 0.1]) {
            close(*x, y);
        }
        // Each group's advantages sum to 0.
        close(a[0] + a[1], 0.0);
    }

    #[test]
    fn std_normalisation() {
        let cfg = AdvantageConfig {
            group_size: 4,
            normalize_std: true,
            epsilon: 1e-6,
        };
        // [0, 0, 1, 1]: mean 0.5, σ 0.5 → ±1 (up to ε).
        let a = group_advantages(&[0.0, 0.0, 1.0, 1.0], &cfg).unwrap();
        for (x, y) in a.iter().zip([-1.0, -1.0, 1.0, 1.0]) {
            assert!((x - y).abs() < 1e-5);
        }
    }

    #[test]
    fn zero_variance_gives_exact_zeros() {
        for normalize_std in [false, true] {
            let cfg = AdvantageConfig {
                group_size: 3,
                normalize_std,
                epsilon: 1e-8,
            };
            let a = group_advantages(&[0.1, 0.1, 0.1, 0.0, 1.0, 0.0], &cfg).unwrap();
            assert_eq!(&a[..3], &[0.0, 0.0, 0.0]);
            assert!(a[4] > 0.0);
        }
    }

    #[test]
    fn bad_groups_are_rejected() {
        let k1 = AdvantageConfig {
            group_size: 1,
            ..AdvantageConfig::default()
        };
        assert!(group_advantages(&[1.0], &k1).is_err());
        let k3 = AdvantageConfig {
            group_size: 3,
            ..AdvantageConfig::default()
        };
        assert_eq!(
            group_advantages(&[1.0; 4], &k3),
            Err(ParlError::BadGroup {
                n: 4,
                group_size: 3
            })
        );
        assert!(group_advantages(&[1.0, f64::NAN, 0.0], &k3).is_err());
    }
}
