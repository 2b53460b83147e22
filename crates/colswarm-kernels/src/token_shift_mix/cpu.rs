//! The token-shift mixes over contiguous row-major `f32` slices.

use std::mem::MaybeUninit;

use crate::cpu::isa_dispatch;
use crate::simd::Simd;

/// `out[i] = x + (x_prev − x) ⊙ mus[i]` for each `i`, rows of `d`, sequences of `time` rows;
/// a sequence's first row takes its previous row from `shift`. A product then a sum, as burn
/// computes it, so the results match its ops to the bit; the loops vectorise inside the
/// instruction-set wrappers.
#[inline(always)]
fn mix_generic<S: Simd>(
    _: S,
    out: &mut [MaybeUninit<f32>],
    x: &[f32],
    shift: &[f32],
    mus: &[f32],
    dims: Dims,
) {
    let Dims { time, d } = dims;
    assert!(
        d > 0
            && time > 0
            && x.len().is_multiple_of(time * d)
            && shift.len() * time == x.len()
            && mus.len().is_multiple_of(d)
            && out.len() == x.len() * (mus.len() / d),
        "token_shift_mix: {} inputs, {} shifts, {} mixing weights and {} outputs do not fit \
         sequences of {time} rows of {d}",
        x.len(),
        shift.len(),
        mus.len(),
        out.len()
    );
    // Row by row, every mix of a row before the next: the row and its predecessor stay in L1,
    // and the inputs are read from memory once instead of once per mix.
    let rows = x.len() / d;
    for (r, x_row) in x.chunks_exact(d).enumerate() {
        let x_prev = if r % time == 0 {
            &shift[r / time * d..][..d]
        } else {
            &x[(r - 1) * d..][..d]
        };
        for (i, mu) in mus.chunks_exact(d).enumerate() {
            let out = &mut out[(i * rows + r) * d..][..d];
            for (((out, &x), &x_prev), &mu) in out.iter_mut().zip(x_row).zip(x_prev).zip(mu) {
                out.write(x + (x_prev - x) * mu);
            }
        }
    }
}

/// Sizes of one call: sequences of `time` rows of `d`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub time: usize,
    pub d: usize,
}

isa_dispatch!(
    /// `out = [x + (x_prev − x) ⊙ μ for μ in mus]`, each `μ` `d` long, `x_prev` the sequences
    /// shifted by one row behind `shift`; every element of `out` is written.
    pub(crate) fn mix = mix_generic(out: &mut [MaybeUninit<f32>], x: &[f32], shift: &[f32], mus: &[f32], dims: Dims) -> ()
);
