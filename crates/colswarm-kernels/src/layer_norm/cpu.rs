//! Layer normalisation over the last dimension, over contiguous `f32` rows.
//!
//! Flex's own layer norm sums each row with compensated scalar arithmetic (about 6 ns per
//! element on the bench machine, half the cost of the `64 × 64` projection beside it); here
//! the row sums run on [`Simd`] vectors and the element-wise parts are loops the compiler
//! vectorises inside the [`isa_dispatch!`] wrappers. Two passes per row (mean, then the
//! variance of the centred values), as the reference computes it.

use std::mem::MaybeUninit;

use crate::cpu::isa_dispatch;
use crate::simd::Simd;

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
    out: &mut [MaybeUninit<f32>],
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    epsilon: f32,
) {
    let d = gamma.len();
    assert!(
        d > 0 && x.len().is_multiple_of(d) && out.len() == x.len() && beta.len() == d,
        "layer norm: {} inputs, {} outputs, rows of {d}, {} offsets",
        x.len(),
        out.len(),
        beta.len()
    );
    for (row, out) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        let (mean, rstd) = moments(s, row, epsilon);
        for (((o, &x), &g), &b) in out.iter_mut().zip(row).zip(gamma).zip(beta) {
            o.write((x - mean) * rstd * g + b);
        }
    }
}

isa_dispatch!(
    /// `out = (x − μ) / √(σ² + ε) ⊙ γ + β`, per row of `γ.len()` elements.
    pub(crate) fn forward = forward_generic(out: &mut [MaybeUninit<f32>], x: &[f32], gamma: &[f32], beta: &[f32], epsilon: f32) -> ()
);
