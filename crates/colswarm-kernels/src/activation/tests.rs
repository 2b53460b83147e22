//! Parity of the fused sigmoid and tanh with burn's own ops, and the reference under autodiff.

use burn::tensor::{Device, Tensor};

use super::{sigmoid_with, tanh_with};
use crate::implementation::KernelImpl;
use crate::testing::{rel_err, rng, tensor, uniform};

const TOL: f32 = 1e-6;

type Op = fn(KernelImpl, Tensor<3>) -> Tensor<3>;

#[test]
fn fused_matches_burn() {
    let ops: [(&str, Op); 2] = [("sigmoid", sigmoid_with), ("tanh", tanh_with)];
    let device = Device::flex();
    for (name, op) in ops {
        for (shape, lo, hi, seed) in [
            ([2, 128, 64], -6.0, 6.0, 1),
            ([3, 5, 7], -0.4, 0.4, 2),
            ([1, 33, 17], -30.0, 30.0, 3),
        ] {
            let values = uniform(&mut rng(seed), shape.iter().product(), lo, hi);
            let x: Tensor<3> = tensor(values, shape, &device);
            let err = rel_err(
                op(KernelImpl::FusedSerial, x.clone()),
                op(KernelImpl::Reference, x),
            );
            assert!(err < TOL, "{name} {shape:?}: error {err}");
        }
    }
}

/// Under autodiff the plain entry points run burn's ops, so training keeps its gradients.
#[test]
fn autodiff_runs_the_reference_with_its_gradients() {
    let device = Device::flex().autodiff();
    let x: Tensor<1> = tensor(vec![-2.0, -0.1, 0.0, 0.5, 3.0], [5], &device).require_grad();
    let grads = (super::sigmoid(x.clone()) + super::tanh(x.clone()))
        .sum()
        .backward();
    let d_x = x.grad(&grads).expect("tracked");
    let reference = x.clone().inner();
    let s = burn::tensor::activation::sigmoid(reference.clone());
    let t = burn::tensor::activation::tanh(reference);
    let expected = s.clone() * (s.neg() + 1.0) + (t.clone() * t).neg() + 1.0;
    assert!(rel_err(d_x, expected) < TOL);
}

#[test]
#[should_panic(expected = "no backward")]
fn the_fused_kernel_refuses_autodiff_tensors() {
    let x: Tensor<1> = Tensor::ones([4], &Device::flex().autodiff());
    let _ = sigmoid_with(KernelImpl::FusedSerial, x);
}

#[test]
fn fused_keeps_the_extremes_finite() {
    let device = Device::flex();
    let x: Tensor<1> = tensor(
        vec![-1e4, -100.0, -1e-8, 0.0, 1e-8, 100.0, 1e4],
        [7],
        &device,
    );
    let s = sigmoid_with(KernelImpl::FusedSerial, x.clone())
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    let t = tanh_with(KernelImpl::FusedSerial, x)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    assert!(
        s.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)),
        "sigmoid {s:?}"
    );
    assert_eq!((s[0], s[3], s[6]), (s[0].min(1e-37), 0.5, 1.0));
    assert_eq!((t[0], t[3], t[6]), (-1.0, 0.0, 1.0));
    assert!((t[4] - 1e-8).abs() < 1e-15, "tanh(1e-8) = {}", t[4]);
}

#[test]
fn the_plain_entry_points_run_on_every_flex_tensor() {
    let device = Device::flex();
    let x: Tensor<2> = tensor(vec![-1.0, 0.5, 2.0, 4.0], [2, 2], &device);
    let y = super::sigmoid(x.clone()) + super::tanh(x.clone());
    let expected = burn::tensor::activation::sigmoid(x.clone()) + burn::tensor::activation::tanh(x);
    assert!(rel_err(y, expected) < TOL);
}

/// On a CubeCL device the plain entry points run burn's own ops (the extensions are Flex-only).
#[cfg(feature = "wgpu")]
#[test]
fn the_plain_entry_points_fall_back_on_a_cube_device() {
    let (cpu, gpu) = (Device::flex(), crate::testing::cube_device());
    let values = vec![-3.0, -0.1, 0.0, 0.7, 5.0, 1.0];
    let run = |device: &Device| {
        let x: Tensor<2> = tensor(values.clone(), [2, 3], device);
        let gamma = tensor(vec![1.0, 2.0, 0.5], [3], device);
        let beta = tensor(vec![0.0, 0.1, -0.1], [3], device);
        let y = super::sigmoid(x.clone())
            + super::tanh(x.clone())
            + crate::layer_norm::layer_norm(x, gamma, beta, 1e-5);
        Tensor::<2>::from_data(y.into_data(), &Device::flex())
    };
    assert!(rel_err(run(&gpu), run(&cpu)) < 1e-5);
}
