//! Parity of the fused layer norm with burn's own.

use burn::tensor::{Device, Tensor};

use super::layer_norm_with;
use crate::implementation::KernelImpl;
use crate::testing::{rel_err, rng, tensor, uniform};

const TOL: f32 = 2e-6;

#[test]
fn fused_matches_burn() {
    // d = 64: whole vectors; d = 37: a scalar tail after the vectors; d = 5: the tail alone.
    let device = Device::flex();
    for (rows, d, seed) in [(256, 64, 1), (9, 37, 2), (4, 5, 3)] {
        let mut rng = rng(seed);
        // An offset, so that the mean matters.
        let offset = uniform(&mut rng, 1, -3.0, 3.0)[0];
        let x: Vec<f32> = uniform(&mut rng, rows * d, -2.0, 2.0)
            .iter()
            .map(|v| v + offset)
            .collect();
        let x: Tensor<2> = tensor(x, [rows, d], &device);
        let gamma = tensor(uniform(&mut rng, d, 0.5, 1.5), [d], &device);
        let beta = tensor(uniform(&mut rng, d, -0.5, 0.5), [d], &device);
        let run = |imp| layer_norm_with(imp, x.clone(), gamma.clone(), beta.clone(), 1e-5);
        let err = rel_err(run(KernelImpl::FusedSerial), run(KernelImpl::Reference));
        assert!(err < TOL, "[{rows}, {d}]: error {err}");
    }
}

#[test]
fn a_constant_row_normalises_to_beta() {
    let device = Device::flex();
    let x: Tensor<3> = Tensor::ones([2, 3, 8], &device) * 7.0;
    let gamma = tensor(vec![2.0; 8], [8], &device);
    let beta = tensor((0..8).map(|i| i as f32).collect(), [8], &device);
    let y = super::layer_norm(x, gamma, beta.clone(), 1e-5);
    let expected = beta.unsqueeze::<3>().expand([2, 3, 8]);
    assert!(rel_err(y, expected) < 1e-6);
}

#[test]
#[should_panic(expected = "must both be [8]")]
fn mismatched_gamma_is_named() {
    let device = Device::flex();
    let x: Tensor<2> = Tensor::ones([2, 8], &device);
    let _ = super::layer_norm(
        x,
        Tensor::ones([7], &device),
        Tensor::zeros([8], &device),
        1e-5,
    );
}
