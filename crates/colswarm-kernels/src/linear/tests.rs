//! Parity of the fused linear map (output and both gradients) with the backend's product.

use burn::tensor::{Device, Tensor};

use burn::tensor::activation::relu;

use super::{Then, linear, linear_then, linear_then_with, linear_with};
use crate::implementation::KernelImpl;
use crate::testing::{rel_err, rng, tensor, uniform};

const TOL: f32 = 1e-5;

/// The output and the gradients w.r.t. `x` and `weight` of `Σ (x · weight) ⊙ c`.
fn run(imp: KernelImpl, rows: usize, d_in: usize, d_out: usize, seed: u64) -> [Tensor<2>; 3] {
    let mut rng = rng(seed);
    let device = Device::flex().autodiff();
    let x = tensor(
        uniform(&mut rng, rows * d_in, -1.0, 1.0),
        [rows, d_in],
        &device,
    )
    .require_grad();
    let w = tensor(
        uniform(&mut rng, d_in * d_out, -0.3, 0.3),
        [d_in, d_out],
        &device,
    )
    .require_grad();
    let c = tensor(
        uniform(&mut rng, rows * d_out, -1.0, 1.0),
        [rows, d_out],
        &device,
    );
    let y = linear_with(imp, x.clone(), w.clone());
    let grads = (y.clone() * c).sum().backward();
    [
        y.detach(),
        x.grad(&grads).expect("tracked"),
        w.grad(&grads).expect("tracked"),
    ]
}

#[test]
fn fused_matches_the_backend_with_gradients() {
    for (rows, d_in, d_out, seed) in [
        (512, 64, 64, 1),
        (300, 64, 256, 2),
        (129, 256, 64, 3),
        (7, 64, 12, 4),
        (9, 5, 3, 5),
    ] {
        let fused = run(KernelImpl::FusedSerial, rows, d_in, d_out, seed);
        let reference = run(KernelImpl::Reference, rows, d_in, d_out, seed);
        for ((what, a), b) in ["output", "d_x", "d_weight"]
            .iter()
            .zip(fused)
            .zip(reference)
        {
            let err = rel_err(a, b);
            assert!(
                err < TOL,
                "[{rows}, {d_in}] · [{d_in}, {d_out}] {what}: error {err}"
            );
        }
    }
}

#[test]
fn a_transposed_input_is_made_contiguous_first() {
    let device = Device::flex();
    let mut rng = rng(9);
    let x_t: Tensor<2> = tensor(uniform(&mut rng, 6 * 10, -1.0, 1.0), [6, 10], &device);
    let w: Tensor<2> = tensor(uniform(&mut rng, 6 * 4, -1.0, 1.0), [6, 4], &device);
    let fused = linear_with(KernelImpl::FusedSerial, x_t.clone().transpose(), w.clone());
    assert!(rel_err(fused, x_t.transpose().matmul(w)) < TOL);
}

#[test]
#[should_panic(expected = "the weight is [5, 3]")]
fn mismatched_shapes_are_named() {
    let device = Device::flex();
    let _ = super::linear(Tensor::ones([2, 4], &device), Tensor::ones([5, 3], &device));
}

/// The bits of a tensor's values.
fn bits(t: Tensor<2>) -> Vec<u32> {
    t.into_data()
        .try_to_vec::<f32>()
        .expect("f32")
        .into_iter()
        .map(f32::to_bits)
        .collect()
}

/// Every form of [`Then`], a bias of `d_out` where it takes one.
fn forms(d_out: usize, device: &Device) -> Vec<Then> {
    let bias: Tensor<1> = tensor(
        uniform(&mut rng(d_out as u64), d_out, -1.0, 1.0),
        [d_out],
        device,
    );
    vec![
        Then::ReluSquared,
        Then::Tanh,
        Then::Sigmoid,
        Then::BiasSigmoid {
            bias: bias.clone(),
            scale: 1.0,
        },
        Then::BiasSigmoid {
            bias,
            scale: -0.606_530_66,
        },
    ]
}

#[test]
fn then_equals_the_product_and_the_separate_ops_to_the_bit() {
    let device = Device::flex();
    for (rows, d_in, d_out, seed) in [(300, 64, 256, 11), (41, 32, 128, 12), (7, 5, 19, 13)] {
        let mut rng = rng(seed);
        let x: Tensor<2> = tensor(
            uniform(&mut rng, rows * d_in, -1.0, 1.0),
            [rows, d_in],
            &device,
        );
        let w: Tensor<2> = tensor(
            uniform(&mut rng, d_in * d_out, -0.6, 0.6),
            [d_in, d_out],
            &device,
        );
        for then in forms(d_out, &device) {
            // The separate ops, as the autodiff path runs them.
            let separate = then.clone().apply(linear(x.clone(), w.clone()));
            let fused = linear_then(x.clone(), w.clone(), then.clone());
            assert_eq!(
                bits(fused),
                bits(separate.clone()),
                "{then:?} [{rows}, {d_in}] · [{d_in}, {d_out}]"
            );
            // Burn's own product and activations: the same up to rounding.
            let reference = linear_then_with(KernelImpl::Reference, x.clone(), w.clone(), then);
            assert!(rel_err(reference, separate) < 1e-4);
        }
    }
}

#[test]
fn then_under_autodiff_runs_the_separate_ops_and_has_gradients() {
    let device = Device::flex().autodiff();
    let mut rng = rng(21);
    let x: Tensor<2> =
        tensor(uniform(&mut rng, 20 * 8, -1.0, 1.0), [20, 8], &device).require_grad();
    let w: Tensor<2> =
        tensor(uniform(&mut rng, 8 * 16, -0.5, 0.5), [8, 16], &device).require_grad();
    let grads = linear_then(x.clone(), w.clone(), Then::ReluSquared)
        .sum()
        .backward();
    let d_x = x.grad(&grads).expect("tracked");
    // d/dx Σ relu(x·w)² = (2·relu(x·w)) · wᵀ.
    let (x_plain, w_plain) = (x.clone().inner(), w.clone().inner());
    let want =
        (relu(x_plain.clone().matmul(w_plain.clone())) * 2.0).matmul(w_plain.clone().transpose());
    assert!(rel_err(d_x, want) < TOL);
    // d/dx Σ σ(x·w + b) = (σ(1 − σ)) · wᵀ.
    let bias = Tensor::<1>::zeros([16], &device);
    let x = x.detach().require_grad();
    let then = Then::BiasSigmoid { bias, scale: 1.0 };
    let grads = linear_then(x.clone(), w.clone(), then).sum().backward();
    let s = burn::tensor::activation::sigmoid(x_plain.matmul(w_plain.clone()));
    let want = (s.clone() * (s.neg() + 1.0)).matmul(w_plain.transpose());
    assert!(rel_err(x.grad(&grads).expect("tracked"), want) < TOL);
}

#[test]
#[should_panic(expected = "no backward")]
fn the_fused_then_refuses_autodiff_tensors() {
    let device = Device::flex().autodiff();
    let _ = linear_then_with(
        KernelImpl::FusedSerial,
        Tensor::ones([2, 4], &device),
        Tensor::ones([4, 3], &device),
        Then::Tanh,
    );
}

#[test]
#[should_panic(expected = "the weight is [5, 3]")]
fn then_names_mismatched_shapes() {
    let device = Device::flex();
    let _ = linear_then(
        Tensor::ones([2, 4], &device),
        Tensor::ones([5, 3], &device),
        Then::Sigmoid,
    );
}

#[test]
#[should_panic(expected = "the bias is [4], not [3]")]
fn then_names_a_bias_of_the_wrong_width() {
    let device = Device::flex();
    let then = Then::BiasSigmoid {
        bias: Tensor::zeros([4], &device),
        scale: 1.0,
    };
    let _ = linear_then(
        Tensor::ones([2, 4], &device),
        Tensor::ones([4, 3], &device),
        then,
    );
}
