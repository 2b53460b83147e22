//! Parity of the fused state fusion (output and both gradients) with the reference.

use burn::tensor::{Device, Tensor};

use super::{fuse_states, fuse_states_with};
use crate::implementation::KernelImpl;
use crate::testing::{rel_err, rng, tensor, uniform};

const TOL: f32 = 1e-5;

/// Runs `imp` on seeded inputs of `shape` (`[batch, agents, heads, value, key]`) and returns
/// the fused states and the gradients of `Σ fused ⊙ C` w.r.t. states and weights.
fn run(imp: KernelImpl, shape: [usize; 5], seed: u64) -> (Tensor<4>, Tensor<5>, Tensor<3>) {
    run_on(&Device::flex(), imp, shape, seed)
}

/// As [`run`], on `device` (+ autodiff).
fn run_on(
    device: &Device,
    imp: KernelImpl,
    shape: [usize; 5],
    seed: u64,
) -> (Tensor<4>, Tensor<5>, Tensor<3>) {
    let [batch, agents, heads, value, key] = shape;
    let mut rng = rng(seed);
    let states = uniform(&mut rng, shape.iter().product(), -2.0, 2.0);
    // Softmax-like weights: positive, summing to one over agents, some agents masked to zero.
    let mut weights = uniform(&mut rng, batch * agents * heads, 0.0, 1.0);
    for (i, w) in weights.iter_mut().enumerate() {
        if (i / heads) % agents == agents - 1 && agents > 1 {
            *w = 0.0;
        }
    }
    let c = uniform(&mut rng, batch * heads * value * key, -1.0, 1.0);

    let device = device.clone().autodiff();
    let states = tensor(states, shape, &device).require_grad();
    let weights = tensor(weights, [batch, agents, heads], &device).require_grad();
    let fused = fuse_states_with(imp, states.clone(), weights.clone());
    let grads = (fused.clone() * tensor(c, [batch, heads, value, key], &device))
        .sum()
        .backward();
    let d_states = states.grad(&grads).expect("tracked");
    let d_weights = weights.grad(&grads).expect("tracked");
    (fused.detach(), d_states, d_weights)
}

#[test]
fn fused_matches_reference_with_gradients() {
    let shapes = [
        [1, 1, 1, 8, 8],
        [2, 3, 4, 16, 16],
        [3, 5, 2, 64, 64],
        [1, 4, 3, 5, 7],
    ];
    for (seed, shape) in shapes.into_iter().enumerate() {
        let (f_ref, ds_ref, dw_ref) = run(KernelImpl::Reference, shape, seed as u64);
        for imp in [KernelImpl::Fused, KernelImpl::FusedSerial] {
            let (f, ds, dw) = run(imp, shape, seed as u64);
            let errors = [
                rel_err(f, f_ref.clone()),
                rel_err(ds, ds_ref.clone()),
                rel_err(dw, dw_ref.clone()),
            ];
            assert!(
                errors.iter().all(|e| *e <= TOL),
                "{imp:?} {shape:?}: errors {errors:?}"
            );
        }
    }
}

/// A hand-checked case: two agents, weights 0.25 and 0.75.
#[test]
fn reference_is_a_weighted_sum() {
    let device = Device::flex();
    let states = tensor(
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        [1, 2, 1, 2, 2],
        &device,
    );
    let weights = tensor(vec![0.25, 0.75], [1, 2, 1], &device);
    let expected = tensor(vec![4.0, 5.0, 6.0, 7.0], [1, 1, 2, 2], &device);
    for imp in [KernelImpl::Reference, KernelImpl::Fused] {
        let fused = fuse_states_with(imp, states.clone(), weights.clone());
        assert_eq!(rel_err(fused, expected.clone()), 0.0, "{imp:?}");
    }
    assert_eq!(rel_err(fuse_states(states, weights), expected), 0.0);
}

#[test]
#[should_panic(expected = "`weights` must be [batch, agents, heads]")]
fn mismatched_weights_panic() {
    let device = Device::flex();
    let _ = fuse_states(
        Tensor::zeros([1, 2, 3, 4, 4], &device),
        Tensor::zeros([1, 3, 2], &device),
    );
}

/// The CubeCL kernels (features `wgpu` / `cuda`) against the reference run on Flex.
#[cfg(feature = "cube")]
#[test]
fn cube_matches_reference_with_gradients() {
    let device = crate::testing::cube_device();
    let shapes = [
        [1, 1, 1, 8, 8],
        [2, 3, 4, 16, 16],
        [3, 5, 2, 64, 64],
        [1, 4, 3, 5, 7],
        [1, 2, 1, 3, 3],
    ];
    for (seed, shape) in shapes.into_iter().enumerate() {
        let seed = 50 + seed as u64;
        let (f_ref, ds_ref, dw_ref) = run(KernelImpl::Reference, shape, seed);
        let (f, ds, dw) = run_on(&device, KernelImpl::Fused, shape, seed);
        let errors = [rel_err(f, f_ref), rel_err(ds, ds_ref), rel_err(dw, dw_ref)];
        assert!(
            errors.iter().all(|e| *e <= TOL),
            "cube {shape:?}: errors {errors:?}"
        );
    }
}
