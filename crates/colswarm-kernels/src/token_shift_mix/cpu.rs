//! The token-shift mixes over contiguous row-major `f32` slices.

use std::mem::MaybeUninit;

use crate::cpu::isa_dispatch;
use crate::simd::Simd;

/// `out[i] = x + (x_prev − x) ⊙ mus[i]` for each `i`, rows of `d`. A product then a sum, as
/// burn computes it, so the results match its ops to the bit; the loops vectorise inside the
/// instruction-set wrappers.
#[inline(always)]
fn mix_generic<S: Simd>(
    _: S,
    out: &mut [MaybeUninit<f32>],
    x: &[f32],
    x_prev: &[f32],
    mus: &[f32],
    d: usize,
) {
    assert!(
        d > 0
            && x.len() == x_prev.len()
            && x.len().is_multiple_of(d)
            && mus.len().is_multiple_of(d)
            && out.len() == x.len() * (mus.len() / d),
        "token_shift_mix: {} inputs, {} previous inputs, {} mixing weights and {} outputs do not fit rows of {d}",
        x.len(),
        x_prev.len(),
        mus.len(),
        out.len()
    );
    // Row by row, every mix of a row before the next: the row's inputs stay in L1, and the
    // inputs are read from memory once instead of once per mix.
    let rows = x.len() / d;
    for (r, (x, x_prev)) in x.chunks_exact(d).zip(x_prev.chunks_exact(d)).enumerate() {
        for (i, mu) in mus.chunks_exact(d).enumerate() {
            let out = &mut out[(i * rows + r) * d..][..d];
            for (((out, &x), &x_prev), &mu) in out.iter_mut().zip(x).zip(x_prev).zip(mu) {
                out.write(x + (x_prev - x) * mu);
            }
        }
    }
}

isa_dispatch!(
    /// `out = [x + (x_prev − x) ⊙ μ for μ in mus]`, each `μ` `d` long; every element of `out` is
    /// written.
    pub(crate) fn mix = mix_generic(out: &mut [MaybeUninit<f32>], x: &[f32], x_prev: &[f32], mus: &[f32], d: usize) -> ()
);
