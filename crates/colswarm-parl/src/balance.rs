//! H-Net's load-balancing loss as a differentiable auxiliary loss on the router's gates.
//!
//! Over a batch of `T` tables and `S` specialists, with `m_ti` the sampled (or thresholded)
//! activation and `g_ti` the gate probability:
//!
//! ```text
//! F_i = (1/T)·Σ_t m_ti        (constant: no gradient)
//! G_i = (1/T)·Σ_t g_ti        (differentiable)
//! L   = (1/S)·Σ_i N/(N−1)·[ (N−1)·F_i·G_i + (1−F_i)·(1−G_i) ],     N = 1/ρ
//! ∂L/∂g_ti = (1/(S·T))·N/(N−1)·[ (N−1)·F_i − (1 − F_i) ]
//! ```
//!
//! The gradient is positive (pushes gate `i` down) when `F_i > ρ`, negative when `F_i < ρ`,
//! and zero at `F_i = ρ` (docs/PARL.md §8 P3). This is where the group form of the
//! load-balance term belongs: as a reward it would be the same for every rollout of a group and
//! the group-mean baseline would erase it (see [`crate::parallel`]). H-Net adds it to the loss
//! with weight ≈ 0.03.

use burn::tensor::{Bool, Tensor};

use crate::error::{ParlError, Result};

/// `L` of the [module docs](self), shape `[1]`: 1 when every specialist's rate is on target.
///
/// `gate_probs` `[T, S]` (differentiable), `active` `[T, S]`, `target_rate ρ ∈ (0, 1)`.
///
/// # Errors
/// `ρ ∉ (0, 1)` or shapes that disagree.
pub fn load_balance_aux_loss(
    gate_probs: Tensor<2>,
    active: Tensor<2, Bool>,
    target_rate: f64,
) -> Result<Tensor<1>> {
    if !(target_rate > 0.0 && target_rate < 1.0) {
        return Err(ParlError::OutOfRange {
            what: "target_rate",
            value: target_rate,
            lo: 0.0,
            hi: 1.0,
        });
    }
    if gate_probs.dims() != active.dims() {
        return Err(ParlError::Shape(format!(
            "gate probabilities {:?} and activations {:?} differ",
            gate_probs.dims(),
            active.dims()
        )));
    }
    let n = 1.0 / target_rate;
    let f = active.float().mean_dim(0).detach();
    let g = gate_probs.mean_dim(0);
    let on = f.clone().mul(g.clone()).mul_scalar(n - 1.0);
    let off = f.neg().add_scalar(1.0).mul(g.neg().add_scalar(1.0));
    Ok((on + off).mul_scalar(n / (n - 1.0)).mean())
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;
    use crate::parallel::load_balance_loss;

    #[test]
    fn value_and_gradient_match_the_formula() {
        // T = 2 tables, S = 2 specialists, ρ = 0.25 (N = 4).
        // Specialist 0: active on both tables → F = 1; specialist 1: on one → F = 0.5.
        let dev = Device::flex().autodiff();
        let g = [0.9f32, 0.2, 0.7, 0.6];
        let gates =
            Tensor::<2>::from_data(TensorData::new(g.to_vec(), [2, 2]), &dev).require_grad();
        let active = Tensor::<2, Bool>::from_data(
            TensorData::new(vec![true, false, true, true], [2, 2]),
            &dev,
        );
        let loss = load_balance_aux_loss(gates.clone(), active, 0.25).unwrap();
        let expect = (load_balance_loss(1.0, 0.8, 4.0).unwrap()
            + load_balance_loss(0.5, 0.4, 4.0).unwrap())
            / 2.0;
        assert!((loss.clone().into_scalar::<f32>() as f64 - expect).abs() < 1e-5);
        let grads = loss.backward();
        let grad = gates
            .grad(&grads)
            .unwrap()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        // ∂L/∂g_ti = (1/4)·(4/3)·[3F_i − (1 − F_i)]: F=1 → 1; F=0.5 → 1/3.
        let d = [1.0f32, 1.0 / 3.0, 1.0, 1.0 / 3.0];
        for (a, b) in grad.iter().zip(d) {
            assert!((a - b).abs() < 1e-5, "{grad:?}");
        }
    }

    #[test]
    fn gradient_vanishes_at_the_target_rate() {
        // 4 tables, one specialist active on exactly one of them: F = ρ = 0.25.
        let dev = Device::flex().autodiff();
        let gates =
            Tensor::<2>::from_data(TensorData::new(vec![0.6f32, 0.1, 0.2, 0.3], [4, 1]), &dev)
                .require_grad();
        let active = Tensor::<2, Bool>::from_data(
            TensorData::new(vec![true, false, false, false], [4, 1]),
            &dev,
        );
        let loss = load_balance_aux_loss(gates.clone(), active, 0.25).unwrap();
        let grads = loss.backward();
        let grad = gates
            .grad(&grads)
            .unwrap()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert!(grad.iter().all(|x| x.abs() < 1e-6), "{grad:?}");
        assert!(
            load_balance_aux_loss(
                Tensor::<2>::zeros([1, 1], &Device::flex()),
                Tensor::<2, Bool>::from_data(TensorData::new(vec![true], [1, 1]), &Device::flex()),
                1.0
            )
            .is_err()
        );
    }
}
