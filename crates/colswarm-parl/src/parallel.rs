//! `r_parallel`: the anti-serial-collapse term, in two forms that can be mixed.
//!
//! Notation for one rollout (one table routed once): `S` specialists, `n` of them active,
//! share `s = n/S`, mean gate probability `ḡ = (1/S)·Σ_i g_i`, target activation rate
//! `ρ ∈ (0, 1]` (H-Net's compression factor is `N = 1/ρ`).
//!
//! **(a) Instantiation** (K2.5's "instantiation reward"; the report gives no closed form, open-parl
//! uses `clamp(n/M, 0, 1)`). Without a target it is the share itself, `r_inst = s`, which an
//! always-on router maximises: that is K2.5's own design (the term exists to fight serial collapse
//! and is annealed to 0). With a target `ρ < 1` the share is *capped*: it rises to 1 at the target
//! and falls back to 0 at all-on, a tent
//!
//! ```text
//! r_inst(s; ρ) = s/ρ                  if s ≤ ρ
//!              = (1 − s)/(1 − ρ)      if s > ρ          (ρ = 1 gives back r_inst = s)
//! ```
//!
//! so below the target it is exactly K2.5's monotone instantiation bonus (rescaled), and past the
//! target every extra specialist costs as much as the last one gained.
//!
//! **(b) Load balance** (H-Net's ratio loss, `goombalab/hnet` `load_balancing_loss`):
//!
//! ```text
//! L(F, G; N) = N/(N−1) · [ (N−1)·F·G + (1−F)·(1−G) ]          N = 1/ρ > 1
//! ```
//!
//! `F` is a hard activation rate and `G` the matching mean gate probability. `L(1/N, 1/N) = 1`,
//! and on the consistent diagonal `G = F` it is a bowl:
//! `L(F, F) − 1 = (F − ρ)² / (ρ·(1 − ρ))`. Over `[0, 1]²` `L ∈ [0, N]`; on the diagonal its
//! largest value is `L_max = max(N, N/(N−1))` (all-on or all-off). As a reward in `[0, 1]`:
//!
//! ```text
//! r_lb(F, G; ρ) = 1 − clamp( (L(F, G; N) − 1) / (L_max − 1), 0, 1 )
//! ```
//!
//! 1 exactly at the target, 0 at the worst diagonal extreme (all-on whenever `ρ ≤ 1/2`). The clamp
//! removes the "bonus" `L < 1` that H-Net's formula gives when `F` and `G` disagree (e.g. `F = 1`,
//! `G ≈ 0`), so a lucky sample can't beat the target. Per rollout `F = s` and `G = ḡ` (or `G = F`
//! when no gate probabilities are given). H-Net's form is asymmetric: with `ρ = 0.25` all-off
//! still scores `1 − 1/9 ≈ 0.89`; (a) is the stronger anti-collapse signal, (b) the smoother one.
//! `ρ = 1` has no H-Net form (`N = 1`), see [`ParallelConfig::validate`].
//!
//! **Group form** ([`group_load_balance_reward`], docs/PARL.md §1.2): per specialist `i` over a set
//! of tables, `F_i` = share of tables that activated `i`, `G_i` = its mean gate probability,
//! `r = 1 − clamp((mean_i L(F_i, G_i) − 1)/(L_max − 1), 0, 1)`. It is one number per *set* of
//! tables, so inside an RL group of K rollouts it is (nearly) constant and the group-mean baseline
//! removes it; use it as a logged statistic, or its differentiable twin
//! [`crate::load_balance_aux_loss`] as an auxiliary loss, as H-Net does.
//!
//! **Mix.** `r_parallel = (w_a·r_inst + w_b·r_lb)/(w_a + w_b)` ∈ `[0, 1]`, the same range as
//! `r_perf`.

use serde::{Deserialize, Serialize};

use crate::error::{ParlError, Result, check_range};

/// H-Net's ratio loss `L(F, G; N) = N/(N−1)·[(N−1)·F·G + (1−F)·(1−G)]`.
///
/// # Errors
/// `F` or `G` outside `[0, 1]`, or `N ≤ 1` (or NaN).
pub fn load_balance_loss(f: f64, g: f64, n: f64) -> Result<f64> {
    check_range("F", f, 0.0, 1.0)?;
    check_range("G", g, 0.0, 1.0)?;
    if n.is_nan() || n <= 1.0 {
        return Err(ParlError::OutOfRange {
            what: "N (= 1/target_rate)",
            value: n,
            lo: 1.0,
            hi: f64::INFINITY,
        });
    }
    Ok(n / (n - 1.0) * ((n - 1.0) * f * g + (1.0 - f) * (1.0 - g)))
}

/// `r_lb(F, G; ρ) = 1 − clamp((L(F, G; 1/ρ) − 1)/(L_max − 1), 0, 1)`, `L_max = max(N, N/(N−1))`.
///
/// # Errors
/// `F`, `G ∉ [0, 1]`, or `ρ ∉ (0, 1)`.
pub fn load_balance_reward(f: f64, g: f64, target_rate: f64) -> Result<f64> {
    let rho = check_open_rate(target_rate)?;
    let n = 1.0 / rho;
    let l = load_balance_loss(f, g, n)?;
    let l_max = n.max(n / (n - 1.0));
    Ok(1.0 - ((l - 1.0) / (l_max - 1.0)).clamp(0.0, 1.0))
}

/// The instantiation reward: `s = n/S` without a target, the tent `r_inst(s; ρ)` with one
/// (module docs).
///
/// # Errors
/// `S = 0`, `n > S`, or `ρ ∉ (0, 1]`.
pub fn instantiation_reward(
    active: usize,
    specialists: usize,
    target_rate: Option<f64>,
) -> Result<f64> {
    let s = share(active, specialists)?;
    let Some(rho) = target_rate else {
        return Ok(s);
    };
    let rho = check_range("target_rate", rho, f64::MIN_POSITIVE, 1.0)?;
    Ok(if s <= rho {
        s / rho
    } else {
        (1.0 - s) / (1.0 - rho)
    })
}

/// `n/S`, checked.
pub(crate) fn share(active: usize, specialists: usize) -> Result<f64> {
    if specialists == 0 {
        return Err(ParlError::NoSpecialists);
    }
    if active > specialists {
        return Err(ParlError::TooManyActive {
            active,
            total: specialists,
        });
    }
    Ok(active as f64 / specialists as f64)
}

fn check_open_rate(rho: f64) -> Result<f64> {
    if rho > 0.0 && rho < 1.0 {
        Ok(rho)
    } else {
        Err(ParlError::OutOfRange {
            what: "target_rate (load balance needs 0 < ρ < 1)",
            value: rho,
            lo: 0.0,
            hi: 1.0,
        })
    }
}

/// How `r_parallel` is formed: the two forms of the [module docs](self) and their weights.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ParallelConfig {
    /// Target activation rate `ρ`. `None`: K2.5's uncapped instantiation share (then the
    /// load-balance weight must be 0). Default `Some(0.25)`.
    pub target_rate: Option<f64>,
    /// Weight `w_a ≥ 0` of the instantiation form. Default 0.5.
    pub instantiation_weight: f64,
    /// Weight `w_b ≥ 0` of the load-balance form. Default 0.5.
    pub load_balance_weight: f64,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        Self {
            target_rate: Some(0.25),
            instantiation_weight: 0.5,
            load_balance_weight: 0.5,
        }
    }
}

impl ParallelConfig {
    /// K2.5 literal: `r_parallel = n/S`, nothing else.
    pub fn k25_instantiation() -> Self {
        Self {
            target_rate: None,
            instantiation_weight: 1.0,
            load_balance_weight: 0.0,
        }
    }

    /// Checks the weights (finite, ≥ 0, not both 0) and the target (`(0, 1]`; `(0, 1)` when the
    /// load-balance form has weight, since H-Net's `N = 1/ρ` must exceed 1).
    ///
    /// # Errors
    /// [`ParlError::OutOfRange`] naming the bad field.
    pub fn validate(&self) -> Result<()> {
        check_range(
            "instantiation_weight",
            self.instantiation_weight,
            0.0,
            f64::MAX,
        )?;
        check_range(
            "load_balance_weight",
            self.load_balance_weight,
            0.0,
            f64::MAX,
        )?;
        let total = self.instantiation_weight + self.load_balance_weight;
        if total <= 0.0 {
            return Err(ParlError::OutOfRange {
                what: "instantiation_weight + load_balance_weight",
                value: total,
                lo: f64::MIN_POSITIVE,
                hi: f64::MAX,
            });
        }
        match self.target_rate {
            Some(rho) if self.load_balance_weight > 0.0 => {
                check_open_rate(rho)?;
            }
            Some(rho) => {
                check_range("target_rate", rho, f64::MIN_POSITIVE, 1.0)?;
            }
            None if self.load_balance_weight > 0.0 => {
                return Err(ParlError::OutOfRange {
                    what: "target_rate (required when load_balance_weight > 0)",
                    value: f64::NAN,
                    lo: 0.0,
                    hi: 1.0,
                });
            }
            None => {}
        }
        Ok(())
    }
}

/// `r_parallel` of one rollout: `(w_a·r_inst + w_b·r_lb)/(w_a + w_b)` with `F = n/S` and
/// `G = mean_gate` (or `G = F` when `None`). In `[0, 1]`.
///
/// # Errors
/// An invalid config ([`ParallelConfig::validate`]), `S = 0`, `n > S`, or `mean_gate ∉ [0, 1]`.
pub fn r_parallel(
    active: usize,
    specialists: usize,
    mean_gate: Option<f64>,
    config: &ParallelConfig,
) -> Result<f64> {
    config.validate()?;
    let f = share(active, specialists)?;
    let mut num = 0.0;
    if config.instantiation_weight > 0.0 {
        num += config.instantiation_weight
            * instantiation_reward(active, specialists, config.target_rate)?;
    }
    if let (Some(rho), true) = (config.target_rate, config.load_balance_weight > 0.0) {
        let g = mean_gate.unwrap_or(f);
        num += config.load_balance_weight * load_balance_reward(f, g, rho)?;
    }
    Ok(num / (config.instantiation_weight + config.load_balance_weight))
}

/// The group form (docs/PARL.md §1.2): per specialist `i` over `T` tables, `F_i = (1/T)·Σ_t m_ti`,
/// `G_i = (1/T)·Σ_t g_ti`; returns `1 − clamp((mean_i L(F_i, G_i) − 1)/(L_max − 1), 0, 1)`.
///
/// `masks[t][i]` is whether table `t` activated specialist `i`, `gates[t][i]` its gate
/// probability. See the module docs for why this is not a per-rollout reward.
///
/// # Errors
/// No tables, `S = 0`, ragged rows, gates outside `[0, 1]`, or `ρ ∉ (0, 1)`.
pub fn group_load_balance_reward(
    masks: &[Vec<bool>],
    gates: &[Vec<f64>],
    target_rate: f64,
) -> Result<f64> {
    let rho = check_open_rate(target_rate)?;
    let n = 1.0 / rho;
    let t = masks.len();
    if gates.len() != t {
        return Err(ParlError::LengthMismatch {
            what: "gates (tables)",
            expected: t,
            got: gates.len(),
        });
    }
    let s = masks.first().map_or(0, Vec::len);
    if t == 0 || s == 0 {
        return Err(ParlError::NoSpecialists);
    }
    for (m, g) in masks.iter().zip(gates) {
        for (what, len) in [("mask row", m.len()), ("gate row", g.len())] {
            if len != s {
                return Err(ParlError::LengthMismatch {
                    what,
                    expected: s,
                    got: len,
                });
            }
        }
    }
    let mut mean_l = 0.0;
    for i in 0..s {
        let f = masks.iter().filter(|m| m[i]).count() as f64 / t as f64;
        let g = gates.iter().map(|g| g[i]).sum::<f64>() / t as f64;
        mean_l += load_balance_loss(f, g, n)? / s as f64;
    }
    let l_max = n.max(n / (n - 1.0));
    Ok(1.0 - ((mean_l - 1.0) / (l_max - 1.0)).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn hnet_loss_matches_aegir_p3() {
        // docs/PARL.md §8 P3.
        close(load_balance_loss(0.5, 0.5, 2.0).unwrap(), 1.0);
        close(load_balance_loss(1.0, 1.0, 2.0).unwrap(), 2.0);
        close(load_balance_loss(0.0, 0.0, 2.0).unwrap(), 2.0);
        close(load_balance_loss(1.0 / 3.0, 1.0 / 3.0, 3.0).unwrap(), 1.0);
        close(load_balance_loss(0.5, 0.5, 3.0).unwrap(), 1.125);
        close(load_balance_loss(0.25, 0.25, 4.0).unwrap(), 1.0);
        assert!(load_balance_loss(0.5, 0.5, 1.0).is_err());
        assert!(load_balance_loss(1.5, 0.5, 2.0).is_err());
    }

    #[test]
    fn hnet_diagonal_is_the_normalised_square_deviation() {
        // L(F, F) − 1 = (F − ρ)²/(ρ(1 − ρ)).
        for rho in [0.1, 0.25, 0.5, 0.8] {
            for k in 0..=20 {
                let f = k as f64 / 20.0;
                let l = load_balance_loss(f, f, 1.0 / rho).unwrap();
                close(l - 1.0, (f - rho).powi(2) / (rho * (1.0 - rho)));
            }
        }
    }

    #[test]
    fn k25_instantiation_is_the_share() {
        close(instantiation_reward(0, 4, None).unwrap(), 0.0);
        close(instantiation_reward(3, 4, None).unwrap(), 0.75);
        close(instantiation_reward(4, 4, None).unwrap(), 1.0);
        assert_eq!(
            instantiation_reward(5, 4, None),
            Err(ParlError::TooManyActive {
                active: 5,
                total: 4
            })
        );
        assert_eq!(
            instantiation_reward(0, 0, None),
            Err(ParlError::NoSpecialists)
        );
    }

    #[test]
    fn always_on_scores_strictly_below_the_target_rate() {
        // Target ρ = 0.25 with S = 4 and S = 8: the router activating ρ·S specialists scores 1,
        // all-on scores strictly less, under each form and the mix.
        for s in [4usize, 8] {
            let at_target = s / 4;
            let inst_t = instantiation_reward(at_target, s, Some(0.25)).unwrap();
            let inst_on = instantiation_reward(s, s, Some(0.25)).unwrap();
            close(inst_t, 1.0);
            close(inst_on, 0.0);
            let lb_t = load_balance_reward(0.25, 0.25, 0.25).unwrap();
            let lb_on = load_balance_reward(1.0, 1.0, 0.25).unwrap();
            close(lb_t, 1.0);
            close(lb_on, 0.0);
            let cfg = ParallelConfig::default();
            let mix_t = r_parallel(at_target, s, None, &cfg).unwrap();
            let mix_on = r_parallel(s, s, None, &cfg).unwrap();
            assert!(mix_on < mix_t, "{mix_on} !< {mix_t}");
            // And the target is the maximum over every possible count.
            for n in 0..=s {
                assert!(r_parallel(n, s, None, &cfg).unwrap() <= mix_t + 1e-12);
            }
        }
    }

    #[test]
    fn all_off_is_penalised_by_both_forms() {
        close(instantiation_reward(0, 4, Some(0.25)).unwrap(), 0.0);
        // H-Net's asymmetry: F = G = 0 → L = 4/3, (L − 1)/(4 − 1) = 1/9.
        close(
            load_balance_reward(0.0, 0.0, 0.25).unwrap(),
            1.0 - 1.0 / 9.0,
        );
    }

    #[test]
    fn disagreeing_gates_cannot_beat_the_target() {
        // F = 1 with G ≈ 0 gives H-Net's L = N·G ≈ 0 < 1; the clamp caps the reward at 1.
        close(load_balance_reward(1.0, 0.0, 0.25).unwrap(), 1.0);
        assert!(load_balance_reward(1.0, 0.0, 0.25).unwrap() <= 1.0);
    }

    #[test]
    fn group_form_prefers_balanced_routing_to_always_on() {
        // 4 tables, 4 specialists, ρ = 0.25. Balanced: table t activates only specialist t, with
        // gate 1 there and 0 elsewhere → F_i = G_i = 1/4 → L = 1 → reward 1.
        let balanced: Vec<Vec<bool>> = (0..4).map(|t| (0..4).map(|i| i == t).collect()).collect();
        let balanced_g: Vec<Vec<f64>> = balanced
            .iter()
            .map(|m| m.iter().map(|&b| if b { 1.0 } else { 0.0 }).collect())
            .collect();
        close(
            group_load_balance_reward(&balanced, &balanced_g, 0.25).unwrap(),
            1.0,
        );
        // Always-on: F_i = G_i = 1 → L = N = 4 → reward 0.
        let on = vec![vec![true; 4]; 4];
        let on_g = vec![vec![1.0; 4]; 4];
        close(group_load_balance_reward(&on, &on_g, 0.25).unwrap(), 0.0);
        assert!(group_load_balance_reward(&on, &on_g[..3], 0.25).is_err());
    }

    #[test]
    fn config_validation() {
        assert!(ParallelConfig::default().validate().is_ok());
        assert!(ParallelConfig::k25_instantiation().validate().is_ok());
        let bad = ParallelConfig {
            target_rate: None,
            ..ParallelConfig::default()
        };
        assert!(bad.validate().is_err());
        let bad = ParallelConfig {
            target_rate: Some(1.0),
            ..ParallelConfig::default()
        };
        assert!(bad.validate().is_err());
        let zero = ParallelConfig {
            instantiation_weight: 0.0,
            load_balance_weight: 0.0,
            ..ParallelConfig::default()
        };
        assert!(zero.validate().is_err());
        let json = serde_json::to_string(&ParallelConfig::default()).unwrap();
        let back: ParallelConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ParallelConfig::default());
    }
}
