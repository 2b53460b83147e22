//! The fused token-shift mixes against burn's ops (to the bit) and an independent per-element
//! loop in f64, the extension's layout, and the reference under autodiff.

use burn::backend::Dispatch;
use burn::tensor::{Device, Tensor};

use super::{TokenShiftMixBackend, token_shift_mix, token_shift_mix_with};
use crate::implementation::KernelImpl;
use crate::testing::{rng, tensor, uniform};

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().expect("f32 data")
}

/// Random `x` `[batch, time, d]`, `shift` `[batch, d]` and `n` mixing vectors `[d]`.
fn inputs(
    [batch, time, d]: [usize; 3],
    n: usize,
    seed: u64,
) -> (Tensor<3>, Tensor<2>, Vec<Tensor<1>>) {
    let device = Device::flex();
    let mut rng = rng(seed);
    let x = tensor(
        uniform(&mut rng, batch * time * d, -3.0, 3.0),
        [batch, time, d],
        &device,
    );
    let shift = tensor(uniform(&mut rng, batch * d, -3.0, 3.0), [batch, d], &device);
    let mus = (0..n)
        .map(|_| tensor(uniform(&mut rng, d, 0.0, 1.0), [d], &device))
        .collect();
    (x, shift, mus)
}

#[test]
fn fused_equals_burn_to_the_bit_and_a_loop_in_f64() {
    // A time mix (six vectors) and a channel mix (one) of a batch; widths that fill vectors
    // and that leave lanes over; one token per sequence (step mode); one sequence.
    for (shape, n, seed) in [
        ([16, 128, 64], 6, 1),
        ([3, 37, 32], 1, 2),
        ([4, 1, 17], 6, 3),
        ([1, 5, 3], 2, 4),
    ] {
        let [batch, time, d] = shape;
        let (x, shift, mus) = inputs(shape, n, seed);
        let fused = token_shift_mix_with(KernelImpl::FusedSerial, x.clone(), shift.clone(), &mus);
        let reference = token_shift_mix_with(KernelImpl::Reference, x.clone(), shift.clone(), &mus);
        assert_eq!(fused.len(), n);
        let (xs, shifts) = (values(x), values(shift));
        for (i, ((fused, reference), mu)) in fused.into_iter().zip(reference).zip(&mus).enumerate()
        {
            assert_eq!(fused.dims(), [batch * time, d]);
            let (fused, reference) = (values(fused), values(reference));
            // NaN (an element the kernel never wrote, in debug builds) fails both checks.
            assert!(
                fused
                    .iter()
                    .zip(&reference)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{shape:?} mix {i}: the fused kernel differs from burn's ops"
            );
            let mu = values(mu.clone());
            for (k, &v) in fused.iter().enumerate() {
                let (row, j) = (k / d, k % d);
                let previous = if row % time == 0 {
                    shifts[row / time * d + j]
                } else {
                    xs[k - d]
                };
                let (a, b) = (f64::from(xs[k]), f64::from(previous));
                let exact = a + (b - a) * f64::from(mu[j]);
                assert!(
                    (f64::from(v) - exact).abs() <= 1e-6 * (1.0 + exact.abs()),
                    "{shape:?} mix {i}, element {k}: {v} against {exact}"
                );
            }
        }
    }
}

/// The extension's output is `[n, rows, d]`: the broadcast product over the stacked vectors.
#[test]
fn the_extension_stacks_the_mixes_in_order() {
    let (x, shift, mus) = inputs([2, 4, 8], 3, 5);
    let x_prev = Tensor::cat(
        vec![shift.clone().reshape([2, 1, 8]), x.clone().narrow(1, 0, 3)],
        1,
    );
    let stacked = Tensor::stack::<2>(mus, 0);
    let expected: Tensor<3> = x.clone().reshape([1, 8, 8])
        + (x_prev - x.clone()).reshape([1, 8, 8]) * stacked.clone().reshape([3, 1, 8]);
    let fused: Tensor<3> =
        Tensor::from_dispatch(<Dispatch as TokenShiftMixBackend>::fused_token_shift_mix(
            x.into_dispatch(),
            shift.into_dispatch(),
            stacked.into_dispatch(),
        ));
    assert_eq!(fused.dims(), [3, 8, 8]);
    assert_eq!(values(fused), values(expected));
}

/// Under autodiff the plain entry point runs burn's ops, so training keeps its gradients:
/// `∂/∂μ Σ (x + (x_prev − x) μ) = Σ_rows (x_prev − x)`.
#[test]
fn autodiff_runs_the_reference_with_its_gradients() {
    let device = Device::flex().autodiff();
    // One sequence of two tokens, (1, 2) then (3, 4), behind the shift (0, 4): the deltas are
    // (−1, 2) and (−2, −2).
    let x: Tensor<3> = tensor(vec![1.0, 2.0, 3.0, 4.0], [1, 2, 2], &device);
    let shift: Tensor<2> = tensor(vec![0.0, 4.0], [1, 2], &device);
    let mu: Tensor<1> = tensor(vec![0.5, 0.25], [2], &device).require_grad();
    let mixes = token_shift_mix(x, shift, std::slice::from_ref(&mu));
    let grads = mixes[0].clone().sum().backward();
    let d_mu = mu.grad(&grads).expect("tracked");
    assert_eq!(values(d_mu), vec![-3.0, 0.0]);
}

#[test]
#[should_panic(expected = "no backward")]
fn the_fused_kernel_refuses_autodiff_tensors() {
    let device = Device::flex().autodiff();
    let x: Tensor<3> = Tensor::ones([2, 3, 4], &device);
    let shift: Tensor<2> = Tensor::ones([2, 4], &device);
    let mu: Tensor<1> = Tensor::ones([4], &device);
    let _ = token_shift_mix_with(KernelImpl::FusedSerial, x, shift, &[mu]);
}

#[test]
#[should_panic(expected = "mixing vector 1 is [3], not [4]")]
fn a_mixing_vector_of_the_wrong_width_is_named() {
    let device = Device::flex();
    let x: Tensor<3> = Tensor::ones([2, 3, 4], &device);
    let shift: Tensor<2> = Tensor::ones([2, 4], &device);
    let mus = [Tensor::<1>::ones([4], &device), Tensor::ones([3], &device)];
    let _ = token_shift_mix(x, shift, &mus);
}

#[test]
#[should_panic(expected = "shift is [3, 4]")]
fn a_shift_of_the_wrong_batch_is_named() {
    let device = Device::flex();
    let x: Tensor<3> = Tensor::ones([2, 3, 4], &device);
    let shift: Tensor<2> = Tensor::ones([3, 4], &device);
    let _ = token_shift_mix(x, shift, &[Tensor::ones([4], &device)]);
}
