//! The fused token-shift mixes against burn's ops (to the bit) and an independent per-element
//! loop in f64, the extension's layout, and the reference under autodiff.

use burn::backend::Dispatch;
use burn::tensor::{Device, Tensor};

use super::{TokenShiftMixBackend, token_shift_mix, token_shift_mix_with};
use crate::implementation::KernelImpl;
use crate::testing::{rng, tensor, uniform};

fn values(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().expect("f32 data")
}

/// Random `x`, `x_prev` `[rows, d]` and `n` mixing vectors `[d]`, from `seed`.
fn inputs(rows: usize, d: usize, n: usize, seed: u64) -> (Tensor<2>, Tensor<2>, Vec<Tensor<1>>) {
    let device = Device::flex();
    let mut rng = rng(seed);
    let x = tensor(uniform(&mut rng, rows * d, -3.0, 3.0), [rows, d], &device);
    let x_prev = tensor(uniform(&mut rng, rows * d, -3.0, 3.0), [rows, d], &device);
    let mus = (0..n)
        .map(|_| tensor(uniform(&mut rng, d, 0.0, 1.0), [d], &device))
        .collect();
    (x, x_prev, mus)
}

#[test]
fn fused_equals_burn_to_the_bit_and_a_loop_in_f64() {
    // A time mix (six vectors) and a channel mix (one); widths that fill vectors and that
    // leave lanes over; one row.
    for (rows, d, n, seed) in [
        (2048, 64, 6, 1),
        (37, 32, 1, 2),
        (1, 17, 6, 3),
        (5, 3, 2, 4),
    ] {
        let (x, x_prev, mus) = inputs(rows, d, n, seed);
        let fused = token_shift_mix_with(KernelImpl::FusedSerial, x.clone(), x_prev.clone(), &mus);
        let reference =
            token_shift_mix_with(KernelImpl::Reference, x.clone(), x_prev.clone(), &mus);
        assert_eq!(fused.len(), n);
        let (xs, ps) = (values(x), values(x_prev));
        for (i, ((fused, reference), mu)) in fused.into_iter().zip(reference).zip(&mus).enumerate()
        {
            assert_eq!(fused.dims(), [rows, d]);
            let (fused, reference) = (values(fused), values(reference));
            // NaN (an element the kernel never wrote, in debug builds) fails both checks.
            assert!(
                fused
                    .iter()
                    .zip(&reference)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "[{rows}, {d}] mix {i}: the fused kernel differs from burn's ops"
            );
            let mu = mu
                .clone()
                .into_data()
                .try_to_vec::<f32>()
                .expect("f32 data");
            for (k, &v) in fused.iter().enumerate() {
                let (a, b, m) = (f64::from(xs[k]), f64::from(ps[k]), f64::from(mu[k % d]));
                let exact = a + (b - a) * m;
                assert!(
                    (f64::from(v) - exact).abs() <= 1e-6 * (1.0 + exact.abs()),
                    "[{rows}, {d}] mix {i}, element {k}: {v} against {exact}"
                );
            }
        }
    }
}

/// The extension's output is `[n, rows, d]`: the broadcast product over the stacked vectors.
#[test]
fn the_extension_stacks_the_mixes_in_order() {
    let (x, x_prev, mus) = inputs(9, 8, 3, 5);
    let stacked = Tensor::stack::<2>(mus, 0);
    let expected: Tensor<3> = x.clone().reshape([1, 9, 8])
        + (x_prev.clone() - x.clone()).reshape([1, 9, 8]) * stacked.clone().reshape([3, 1, 8]);
    let fused: Tensor<3> =
        Tensor::from_dispatch(<Dispatch as TokenShiftMixBackend>::fused_token_shift_mix(
            x.into_dispatch(),
            x_prev.into_dispatch(),
            stacked.into_dispatch(),
        ));
    assert_eq!(fused.dims(), [3, 9, 8]);
    let (a, b) = (fused.into_data(), expected.into_data());
    assert_eq!(
        a.try_to_vec::<f32>().unwrap(),
        b.try_to_vec::<f32>().unwrap()
    );
}

/// Under autodiff the plain entry point runs burn's ops, so training keeps its gradients:
/// `∂/∂μ Σ (x + (x_prev − x) μ) = Σ_rows (x_prev − x)`.
#[test]
fn autodiff_runs_the_reference_with_its_gradients() {
    let device = Device::flex().autodiff();
    let x: Tensor<2> = tensor(vec![1.0, 2.0, 3.0, 4.0], [2, 2], &device);
    let x_prev: Tensor<2> = tensor(vec![0.0, 4.0, 1.0, 0.0], [2, 2], &device);
    let mu: Tensor<1> = tensor(vec![0.5, 0.25], [2], &device).require_grad();
    let mixes = token_shift_mix(x, x_prev, std::slice::from_ref(&mu));
    let grads = mixes[0].clone().sum().backward();
    let d_mu = mu.grad(&grads).expect("tracked");
    assert_eq!(
        d_mu.into_data().try_to_vec::<f32>().unwrap(),
        vec![-3.0, -2.0]
    );
}

#[test]
#[should_panic(expected = "no backward")]
fn the_fused_kernel_refuses_autodiff_tensors() {
    let device = Device::flex().autodiff();
    let x: Tensor<2> = Tensor::ones([2, 4], &device);
    let mu: Tensor<1> = Tensor::ones([4], &device);
    let _ = token_shift_mix_with(KernelImpl::FusedSerial, x.clone(), x, &[mu]);
}

#[test]
#[should_panic(expected = "mixing vector 1 is [3], not [4]")]
fn a_mixing_vector_of_the_wrong_width_is_named() {
    let device = Device::flex();
    let x: Tensor<2> = Tensor::ones([2, 4], &device);
    let mus = [Tensor::<1>::ones([4], &device), Tensor::ones([3], &device)];
    let _ = token_shift_mix(x.clone(), x, &mus);
}
