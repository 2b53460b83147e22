//! Layer normalisation over the last dimension, forward and backward, over contiguous `f32`
//! rows.
//!
//! Flex's own layer norm sums each row with compensated scalar arithmetic (about 6 ns per
//! element on the bench machine, half the cost of the `64 × 64` projection beside it); here
//! the row sums run on [`Simd`] vectors and the element-wise parts are loops the compiler
//! vectorises inside the [`isa_dispatch!`] wrappers. Two passes per row (mean, then the
//! variance of the centred values), as the reference computes it.

use crate::cpu::isa_dispatch;
use crate::simd::Simd;

/// `Σ a ⊙ b` over one row.
#[inline(always)]
fn dot<S: Simd>(s: S, a: &[f32], b: &[f32]) -> f32 {
    let full = a.len() / S::LANES * S::LANES;
    let mut acc = s.zero();
    for c in (0..full).step_by(S::LANES) {
        acc = s.fmadd(s.load(&a[c..]), s.load(&b[c..]), acc);
    }
    let tail: f32 = a[full..].iter().zip(&b[full..]).map(|(x, y)| x * y).sum();
    s.hsum(acc) + tail
}

/// A row's mean and `1 / √(variance + ε)` (biased variance, as in burn's layer norm).
#[inline(always)]
fn moments<S: Simd>(s: S, row: &[f32], epsilon: f32) -> (f32, f32) {
    let d = row.len();
    let full = d / S::LANES * S::LANES;
    let one = s.splat(1.0);
    let mut acc = s.zero();
    for c in (0..full).step_by(S::LANES) {
        acc = s.fmadd(s.load(&row[c..]), one, acc);
    }
    let mean = (s.hsum(acc) + row[full..].iter().sum::<f32>()) / d as f32;
    let neg_mean = s.splat(-mean);
    let mut acc = s.zero();
    for c in (0..full).step_by(S::LANES) {
        let centred = s.fmadd(s.load(&row[c..]), one, neg_mean);
        acc = s.fmadd(centred, centred, acc);
    }
    let tail: f32 = row[full..].iter().map(|v| (v - mean) * (v - mean)).sum();
    let variance = (s.hsum(acc) + tail) / d as f32;
    (mean, 1.0 / (variance + epsilon).sqrt())
}

#[inline(always)]
fn forward_generic<S: Simd>(
    s: S,
    out: &mut [f32],
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    epsilon: f32,
) {
    let d = gamma.len();
    for (row, out) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        let (mean, rstd) = moments(s, row, epsilon);
        for (((o, &x), &g), &b) in out.iter_mut().zip(row).zip(gamma).zip(beta) {
            *o = (x - mean) * rstd * g + b;
        }
    }
}

/// Per row, with `x̂ = (x − μ)·rstd` and `g = grad ⊙ γ`:
/// `d_x = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂))`; `d_γ = Σ_rows grad ⊙ x̂`, `d_β = Σ_rows grad`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // three outputs and four inputs of one op
fn backward_generic<S: Simd>(
    s: S,
    d_x: &mut [f32],
    d_gamma: &mut [f32],
    d_beta: &mut [f32],
    x: &[f32],
    gamma: &[f32],
    grad: &[f32],
    epsilon: f32,
) {
    let d = gamma.len();
    d_gamma.fill(0.0);
    d_beta.fill(0.0);
    let (mut x_hat, mut g, ones) = (vec![0.0f32; d], vec![0.0f32; d], vec![1.0f32; d]);
    let rows = x.chunks_exact(d).zip(grad.chunks_exact(d));
    for ((row, grad), d_x) in rows.zip(d_x.chunks_exact_mut(d)) {
        let (mean, rstd) = moments(s, row, epsilon);
        for j in 0..d {
            x_hat[j] = (row[j] - mean) * rstd;
            g[j] = grad[j] * gamma[j];
            d_gamma[j] += grad[j] * x_hat[j];
            d_beta[j] += grad[j];
        }
        let mean_g = dot(s, &g, &ones) / d as f32;
        let mean_g_x_hat = dot(s, &g, &x_hat) / d as f32;
        for j in 0..d {
            d_x[j] = rstd * (g[j] - mean_g - x_hat[j] * mean_g_x_hat);
        }
    }
}

isa_dispatch!(
    /// `out = (x − μ) / √(σ² + ε) ⊙ γ + β`, per row of `γ.len()` elements.
    pub(crate) fn forward = forward_generic(out: &mut [f32], x: &[f32], gamma: &[f32], beta: &[f32], epsilon: f32) -> ()
);
isa_dispatch!(
    /// The gradients `d_x`, `d_γ`, `d_β` of [`forward`] given the output's gradient.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn backward = backward_generic(d_x: &mut [f32], d_gamma: &mut [f32], d_beta: &mut [f32], x: &[f32], gamma: &[f32], grad: &[f32], epsilon: f32) -> ()
);
