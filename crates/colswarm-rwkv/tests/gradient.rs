//! Finite-difference check of the sequence path's gradients on a tiny model.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Gradients;
use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm_rwkv::{Rwkv, RwkvConfig};
use colswarm_testing::{Direction, perturb};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BATCH: usize = 2;
const TIME: usize = 6;
const D: usize = 16;

/// A scalar that depends on every hidden state and on the final WKV states.
fn loss(model: &Rwkv, device: &Device) -> Tensor<1> {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let tokens: Vec<i64> = (0..BATCH * TIME).map(|_| rng.random_range(0..32)).collect();
    let tokens = Tensor::<2, Int>::from_data(TensorData::new(tokens, [BATCH, TIME]), device);
    let weights: Vec<f32> = (0..BATCH * TIME * D)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let weights = Tensor::<3>::from_data(TensorData::new(weights, [BATCH, TIME, D]), device);
    let out = model.forward(tokens, Some(&[TIME, 4]), None);
    let state_term = out
        .state
        .layers
        .iter()
        .map(|l| l.wkv.clone().sum())
        .reduce(|a, b| a + b)
        .unwrap();
    (out.hidden * weights).sum() + state_term
}

/// Σ_p ⟨∂L/∂p, d_p⟩ over every parameter, with the direction of `seed`.
fn directional_derivative(model: &Rwkv, grads: &Gradients, seed: u64) -> f64 {
    struct Dot<'a> {
        grads: &'a Gradients,
        direction: Direction,
        total: f64,
        missing: usize,
    }
    impl ModuleVisitor for Dot<'_> {
        fn visit_float<const N: usize>(&mut self, param: &Param<Tensor<N>>) {
            let value = param.val();
            let direction = self.direction.next(value.shape().num_elements());
            match value.grad(self.grads) {
                Some(grad) => {
                    let grad = grad.into_data().try_to_vec::<f32>().unwrap();
                    self.total += grad
                        .iter()
                        .zip(&direction)
                        .map(|(g, d)| (*g as f64) * (*d as f64))
                        .sum::<f64>();
                }
                None => self.missing += 1,
            }
        }
    }
    let mut dot = Dot {
        grads,
        direction: Direction::new(seed),
        total: 0.0,
        missing: 0,
    };
    model.visit(&mut dot);
    assert_eq!(dot.missing, 0, "some parameters received no gradient");
    dot.total
}

#[test]
fn gradients_match_central_differences() {
    let device = Device::flex().autodiff();
    let config = RwkvConfig::new(32, D, 2)
        .with_head_size(8)
        .with_d_ffn(Some(32))
        .with_decay_rank(Some(4))
        .with_icl_rank(Some(4))
        .with_value_rank(Some(4))
        .with_gate_rank(Some(4));
    let model = perturb(config.init(1, &device), 2, 0.3);

    let grads = loss(&model, &device).backward();
    let direction_seed = 77;
    let analytic = directional_derivative(&model, &grads, direction_seed);

    let plain = Device::flex();
    let inference = model.valid();
    let h = 1e-3f32;
    let up =
        loss(&perturb(inference.clone(), direction_seed, h), &plain).into_scalar::<f32>() as f64;
    let down = loss(&perturb(inference, direction_seed, -h), &plain).into_scalar::<f32>() as f64;
    let numeric = (up - down) / (2.0 * h as f64);

    let rel = (analytic - numeric).abs() / numeric.abs().max(1e-3);
    assert!(
        rel < 5e-3,
        "directional derivative: analytic {analytic} vs central difference {numeric} (relative {rel})"
    );
}
