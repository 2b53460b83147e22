//! The router's policy objective on burn tensors: K2.5's masked, penalised surrogate, with
//! PPO-clip as an option.
//!
//! **Tokens.** Every router gate decision is one "token": rollout `j` (a table routed once) makes
//! `D` Bernoulli decisions `a_ji ∈ {0, 1}`, with `log π(a_ji) = a·log g + (1 − a)·log(1 − g)`
//! ([`bernoulli_log_probs`]). Inputs are `[R, D]` new log-probs (differentiable, from the current
//! router), `[R, D]` old log-probs (the policy that sampled; treated as constants), `[R]`
//! advantages ([`crate::group_advantages`]; constants), and an `[R, D]` decision mask (true where
//! the decision is real; padded decisions contribute nothing, not even NaN).
//!
//! With `ρ_ji = log π_new − log π_old`, `r_ji = exp(ρ_ji)`, `A_j` the rollout's advantage and
//! `N = Σ mask` the number of real decisions, the per-decision objective `J_ji` (maximised) is
//!
//! ```text
//! K2.5:      J = sg_out(r)·A − τ·ρ²        sg_out(r) = r, but with its gradient masked to 0 when
//!                                           ρ ∉ [ρ_min, ρ_max] (whatever the sign of A)
//! PPO-clip:  J = min(r·A, clip(r, 1 − ε, 1 + ε)·A)
//! ```
//!
//! and the returned loss (minimised; **add** it to the supervised loss) is
//!
//! ```text
//! loss = −(1/N)·Σ_{j,i} mask_ji·J_ji          (0 when N = 0)
//! ```
//!
//! K2.5's `τ·ρ²` sits outside the masking, so a decision that drifted out of the band still gets
//! the penalty's gradient `2τρ/N` pulling it back; with `τ = 0` it gets exactly none. The report
//! writes the band as `[α, β]` with `α, β > 0`, which can't be a band on the log-ratio around 0;
//! it is read here as `[ρ_min, ρ_max]` with `ρ_min < 0 < ρ_max` (default `[−ln 2, ln 2]`, i.e. the
//! ratio in `[1/2, 2]`; `τ` default 0.01). The report gives no values: these are choices.
//! PPO-clip is what Aegir's docs call "token-level clipping" (not K2.5's objective).

use burn::tensor::{Bool, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::{ParlError, Result};

/// Which surrogate, with its constants (module docs).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ObjectiveConfig {
    /// K2.5: gradient masked outside `[log_ratio_min, log_ratio_max]`, plus `τ·ρ²`.
    K25 {
        /// `ρ_min < 0`.
        log_ratio_min: f64,
        /// `ρ_max > 0`.
        log_ratio_max: f64,
        /// `τ ≥ 0`.
        tau: f64,
    },
    /// PPO's `min(r·A, clip(r, 1 ± ε)·A)`.
    PpoClip {
        /// `0 < ε < 1`.
        epsilon: f64,
    },
}

impl Default for ObjectiveConfig {
    /// K2.5 with `[−ln 2, ln 2]` and `τ = 0.01`.
    fn default() -> Self {
        Self::K25 {
            log_ratio_min: -std::f64::consts::LN_2,
            log_ratio_max: std::f64::consts::LN_2,
            tau: 0.01,
        }
    }
}

impl ObjectiveConfig {
    /// Checks the constants.
    ///
    /// # Errors
    /// [`ParlError::BadObjective`] naming the constraint.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Self::K25 {
                log_ratio_min,
                log_ratio_max,
                tau,
            } => {
                if !(log_ratio_min < 0.0 && log_ratio_max > 0.0) {
                    return Err(ParlError::BadObjective(format!(
                        "need log_ratio_min < 0 < log_ratio_max, got [{log_ratio_min}, {log_ratio_max}]"
                    )));
                }
                if !(tau >= 0.0 && tau.is_finite()) {
                    return Err(ParlError::BadObjective(format!("need tau >= 0, got {tau}")));
                }
            }
            Self::PpoClip { epsilon } => {
                if !(epsilon > 0.0 && epsilon < 1.0) {
                    return Err(ParlError::BadObjective(format!(
                        "need 0 < epsilon < 1, got {epsilon}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Per-decision `log π(a) = a·log g + (1 − a)·log(1 − g)` of Bernoulli gate decisions, with
/// `g` clamped into `[1e-6, 1 − 1e-6]` so a saturated gate gives a finite log-prob.
///
/// `gate_probs` `[R, D]` (differentiable), `actions` `[R, D]` (true = specialist activated).
pub fn bernoulli_log_probs(gate_probs: Tensor<2>, actions: Tensor<2, Bool>) -> Tensor<2> {
    let g = gate_probs.clamp(1e-6, 1.0 - 1e-6);
    let on = g.clone().log();
    let off = g.neg().add_scalar(1.0).log();
    off.mask_where(actions, on)
}

/// Per-decision objective `J` `[R, D]` (module docs), 0 where the decision is padded.
///
/// # Errors
/// An invalid config, or shapes that disagree.
pub fn surrogate(
    new_log_probs: Tensor<2>,
    old_log_probs: Tensor<2>,
    advantages: Tensor<1>,
    decision_mask: Tensor<2, Bool>,
    config: &ObjectiveConfig,
) -> Result<Tensor<2>> {
    config.validate()?;
    let [r, d] = new_log_probs.dims();
    if old_log_probs.dims() != [r, d] || decision_mask.dims() != [r, d] {
        return Err(ParlError::Shape(format!(
            "new log-probs {:?}, old log-probs {:?}, mask {:?} must all be [rollouts, decisions]",
            [r, d],
            old_log_probs.dims(),
            decision_mask.dims()
        )));
    }
    if advantages.dims() != [r] {
        return Err(ParlError::Shape(format!(
            "advantages {:?} must be [{r}] (one per rollout)",
            advantages.dims()
        )));
    }
    let padded = decision_mask.bool_not();
    // Padded decisions get ρ = 0 through `mask_fill`, which also stops their gradient; a padded
    // −∞ log-prob can't turn into NaN.
    let log_ratio = (new_log_probs - old_log_probs.detach()).mask_fill(padded.clone(), 0.0);
    let adv = advantages.detach().unsqueeze_dim::<2>(1).expand([r, d]);
    let ratio = log_ratio.clone().exp();
    let objective = match *config {
        ObjectiveConfig::K25 {
            log_ratio_min,
            log_ratio_max,
            tau,
        } => {
            let lr = log_ratio.clone().detach();
            let out_of_band = lr
                .clone()
                .lower_elem(log_ratio_min)
                .bool_or(lr.greater_elem(log_ratio_max));
            let masked_ratio = ratio.clone().mask_where(out_of_band, ratio.detach());
            masked_ratio * adv - log_ratio.square().mul_scalar(tau)
        }
        ObjectiveConfig::PpoClip { epsilon } => {
            let clipped = ratio.clone().clamp(1.0 - epsilon, 1.0 + epsilon);
            (ratio * adv.clone()).min_pair(clipped * adv)
        }
    };
    Ok(objective.mask_fill(padded, 0.0))
}

/// The loss `−(1/N)·Σ mask·J` to add to the supervised loss (module docs). Shape `[1]`.
///
/// # Errors
/// As [`surrogate`].
pub fn policy_loss(
    new_log_probs: Tensor<2>,
    old_log_probs: Tensor<2>,
    advantages: Tensor<1>,
    decision_mask: Tensor<2, Bool>,
    config: &ObjectiveConfig,
) -> Result<Tensor<1>> {
    let n = decision_mask
        .clone()
        .float()
        .sum()
        .into_scalar::<f32>()
        .max(1.0);
    let j = surrogate(
        new_log_probs,
        old_log_probs,
        advantages,
        decision_mask,
        config,
    )?;
    Ok(j.sum().neg().div_scalar(n))
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;

    fn t2(v: &[f32], shape: [usize; 2], device: &Device) -> Tensor<2> {
        Tensor::<2>::from_data(TensorData::new(v.to_vec(), shape), device)
    }

    fn t1(v: &[f32], device: &Device) -> Tensor<1> {
        Tensor::<1>::from_data(TensorData::new(v.to_vec(), [v.len()]), device)
    }

    fn mask(v: &[bool], shape: [usize; 2], device: &Device) -> Tensor<2, Bool> {
        Tensor::<2, Bool>::from_data(TensorData::new(v.to_vec(), shape), device)
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-5, "{a:?} != {b:?}");
        }
    }

    #[test]
    fn ppo_clip_matches_aegir_p5() {
        // docs/PARL.md §8 P5, ε = 0.2: (ρ, A) = (1.5, +1) → 1.2; (0.5, +1) → 0.5; (0.5, −1) → −0.8;
        // (1.5, −1) → −1.5. One decision per rollout; log π_old = 0, log π_new = ln ρ.
        let dev = Device::flex();
        let new = t2(
            &[1.5f32.ln(), 0.5f32.ln(), 0.5f32.ln(), 1.5f32.ln()],
            [4, 1],
            &dev,
        );
        let old = t2(&[0.0; 4], [4, 1], &dev);
        let adv = t1(&[1.0, 1.0, -1.0, -1.0], &dev);
        let m = mask(&[true; 4], [4, 1], &dev);
        let cfg = ObjectiveConfig::PpoClip { epsilon: 0.2 };
        let j = surrogate(new.clone(), old.clone(), adv.clone(), m.clone(), &cfg).unwrap();
        close(
            &j.into_data().try_to_vec::<f32>().unwrap(),
            &[1.2, 0.5, -0.8, -1.5],
        );
        // loss = −(1.2 + 0.5 − 0.8 − 1.5)/4 = 0.15
        let loss = policy_loss(new, old, adv, m, &cfg).unwrap();
        close(&[loss.into_scalar::<f32>()], &[0.15]);
    }

    #[test]
    fn k25_value_is_ratio_times_advantage_minus_penalty() {
        // ρ = 0.1 (in band), A = 2, τ = 0.5: J = e^0.1·2 − 0.5·0.01.
        let dev = Device::flex();
        let cfg = ObjectiveConfig::K25 {
            log_ratio_min: -0.2,
            log_ratio_max: 0.2,
            tau: 0.5,
        };
        let j = surrogate(
            t2(&[0.1, 1.0], [1, 2], &dev),
            t2(&[0.0, 0.0], [1, 2], &dev),
            t1(&[2.0], &dev),
            mask(&[true, true], [1, 2], &dev),
            &cfg,
        )
        .unwrap();
        let v = j.into_data().try_to_vec::<f32>().unwrap();
        // The out-of-band decision keeps its value (only its gradient is masked).
        close(&v, &[0.1f32.exp() * 2.0 - 0.005, 1.0f32.exp() * 2.0 - 0.5]);
    }

    /// `(∂loss/∂new_log_probs)` as a flat vector.
    fn grad_of(
        new: &[f32],
        old: &[f32],
        adv: &[f32],
        real: &[bool],
        shape: [usize; 2],
        cfg: &ObjectiveConfig,
    ) -> Vec<f32> {
        let dev = Device::flex().autodiff();
        let new = t2(new, shape, &dev).require_grad();
        let loss = policy_loss(
            new.clone(),
            t2(old, shape, &dev),
            t1(adv, &dev),
            mask(real, shape, &dev),
            cfg,
        )
        .unwrap();
        let grads = loss.backward();
        new.grad(&grads)
            .expect("new log-probs require a gradient")
            .into_data()
            .try_to_vec::<f32>()
            .unwrap()
    }

    #[test]
    fn gradients_are_zero_exactly_on_padded_decisions() {
        // 2 rollouts × 3 decisions; decisions (0, 2) and (1, 1) are padding, and their log-probs
        // are garbage (−∞ / huge) to show they can't leak NaN.
        let new = [-0.7, -0.2, f32::NEG_INFINITY, -1.1, 50.0, -0.4];
        let old = [-0.75, -0.25, -0.3, -1.0, -0.3, -0.5];
        let real = [true, true, false, true, false, true];
        for cfg in [
            ObjectiveConfig::default(),
            ObjectiveConfig::PpoClip { epsilon: 0.2 },
        ] {
            let g = grad_of(&new, &old, &[1.0, -0.5], &real, [2, 3], &cfg);
            for (i, (&gi, &is_real)) in g.iter().zip(&real).enumerate() {
                if is_real {
                    assert!(
                        gi.is_finite() && gi != 0.0,
                        "decision {i}: grad {gi} ({cfg:?})"
                    );
                } else {
                    assert_eq!(gi, 0.0, "padded decision {i} got grad {gi} ({cfg:?})");
                }
            }
        }
    }

    #[test]
    fn k25_gradient_is_masked_outside_the_band() {
        // One rollout, A = 1, N = 3 real decisions, band [−0.2, 0.2]:
        //   ρ = 0.1 (in band)   → ∂loss/∂logπ = (−e^0.1·A + 2τ·0.1)/N
        //   ρ = 0.5 (above)     → only the penalty: 2τ·0.5/N
        //   ρ = −0.5 (below)    → only the penalty: 2τ·(−0.5)/N
        let new = [0.1, 0.5, -0.5];
        let old = [0.0, 0.0, 0.0];
        let real = [true; 3];
        let band = |tau| ObjectiveConfig::K25 {
            log_ratio_min: -0.2,
            log_ratio_max: 0.2,
            tau,
        };
        let g = grad_of(&new, &old, &[1.0], &real, [1, 3], &band(0.0));
        close(&g, &[-0.1f32.exp() / 3.0, 0.0, 0.0]);
        assert_eq!(&g[1..], &[0.0, 0.0]); // exactly zero, whatever A's sign
        let g = grad_of(&new, &old, &[-1.0], &real, [1, 3], &band(0.0));
        assert_eq!(&g[1..], &[0.0, 0.0]);
        let tau = 0.5f32;
        let g = grad_of(&new, &old, &[1.0], &real, [1, 3], &band(tau as f64));
        close(
            &g,
            &[
                (-0.1f32.exp() + 2.0 * tau * 0.1) / 3.0,
                2.0 * tau * 0.5 / 3.0,
                2.0 * tau * -0.5 / 3.0,
            ],
        );
    }

    #[test]
    fn bernoulli_log_probs_pick_the_taken_branch() {
        let dev = Device::flex();
        let lp = bernoulli_log_probs(
            t2(&[0.8, 0.8, 0.0], [1, 3], &dev),
            mask(&[true, false, false], [1, 3], &dev),
        );
        let v = lp.into_data().try_to_vec::<f32>().unwrap();
        close(&v[..2], &[0.8f32.ln(), 0.2f32.ln()]);
        assert!(v[2].abs() < 1e-5); // log(1 − clamp(0)) ≈ 0, finite
    }

    #[test]
    fn shapes_and_configs_are_checked() {
        let dev = Device::flex();
        let bad = surrogate(
            t2(&[0.0; 4], [2, 2], &dev),
            t2(&[0.0; 4], [2, 2], &dev),
            t1(&[0.0; 3], &dev),
            mask(&[true; 4], [2, 2], &dev),
            &ObjectiveConfig::default(),
        );
        assert!(matches!(bad, Err(ParlError::Shape(_))));
        assert!(
            ObjectiveConfig::PpoClip { epsilon: 0.0 }
                .validate()
                .is_err()
        );
        assert!(
            ObjectiveConfig::K25 {
                log_ratio_min: 0.1,
                log_ratio_max: 0.2,
                tau: 0.0
            }
            .validate()
            .is_err()
        );
        let json = serde_json::to_string(&ObjectiveConfig::default()).unwrap();
        assert!(json.contains("\"kind\":\"k25\""));
        let back: ObjectiveConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ObjectiveConfig::default());
    }
}
