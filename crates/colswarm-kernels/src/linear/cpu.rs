//! `c = a · b` for the small, skinny products of an RWKV-7 block, over contiguous row-major
//! `f32` matrices.
//!
//! The products of a `d_model = 64` block are `[rows, 64] · [64, 64]`, `[rows, 64] · [64, 256]`
//! and their low-rank cousins, with a few thousand rows. A general GEMM packs both operands
//! into panels first and then runs a 16 × 6 AVX2 micro-kernel (about 35 GFLOP/s here on one
//! core). `b` is small enough to stay in L1, so this kernel reads it in place: each tile
//! keeps `ROWS × 2` vectors of `c` in registers and, per step of the inner dimension,
//! broadcasts one element of each of its `a` rows against two vectors of `b`'s row.

use std::mem::MaybeUninit;

use crate::cpu::isa_dispatch;
use crate::simd::Simd;

/// Sizes of one product: `a` is `[m, k]`, `b` is `[k, n]`, `c` is `[m, n]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

/// What a product's elements go through on their way out of the registers.
pub(crate) trait Epilogue: Copy {
    /// On a vector of `c`.
    fn vector<S: Simd>(s: S, v: S::V) -> S::V;
    /// On one element of `c` (the column tails).
    fn scalar(x: f32) -> f32;
}

/// `c` as it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain;

impl Epilogue for Plain {
    #[inline(always)]
    fn vector<S: Simd>(_: S, v: S::V) -> S::V {
        v
    }
    #[inline(always)]
    fn scalar(x: f32) -> f32 {
        x
    }
}

/// `relu(c)²`, as burn's `relu` then a product of the element with itself: `max(0, c)` keeps
/// a NaN (x86's `max` returns its second operand on NaN), and `-0²` is `+0` as `0²` is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReluSquared;

impl Epilogue for ReluSquared {
    #[inline(always)]
    fn vector<S: Simd>(s: S, v: S::V) -> S::V {
        let r = s.max(s.zero(), v);
        s.mul(r, r)
    }
    #[inline(always)]
    fn scalar(x: f32) -> f32 {
        let r = if 0.0 > x { 0.0 } else { x };
        r * r
    }
}

/// One `R × V·LANES` tile of `c` at row `i0`, column `j0`.
#[inline(always)]
fn tile<S: Simd, E: Epilogue, const R: usize, const V: usize>(
    s: S,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
    i0: usize,
    j0: usize,
) {
    let mut acc = [[s.zero(); V]; R];
    for p in 0..d.k {
        let row = &b[p * d.n + j0..];
        let bv: [S::V; V] = core::array::from_fn(|v| s.load(&row[v * S::LANES..]));
        for (r, acc) in acc.iter_mut().enumerate() {
            let av = s.splat(a[(i0 + r) * d.k + p]);
            for (acc, &bv) in acc.iter_mut().zip(&bv) {
                *acc = s.fmadd(av, bv, *acc);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let out = &mut c[(i0 + r) * d.n + j0..];
        for (v, &acc) in acc.iter().enumerate() {
            s.write(&mut out[v * S::LANES..], E::vector(s, acc));
        }
    }
}

/// Every row of the column block at `j0` that is `V` vectors wide, `R` rows at a time.
#[inline(always)]
fn column_block<S: Simd, E: Epilogue, const R: usize, const V: usize>(
    s: S,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
    j0: usize,
) {
    let mut i0 = 0;
    while i0 + R <= d.m {
        tile::<S, E, R, V>(s, c, a, b, d, i0, j0);
        i0 += R;
    }
    while i0 < d.m {
        tile::<S, E, 1, V>(s, c, a, b, d, i0, j0);
        i0 += 1;
    }
}

#[inline(always)]
fn matmul_rows<S: Simd, E: Epilogue, const R: usize>(
    s: S,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
) {
    let mut j0 = 0;
    while j0 + 2 * S::LANES <= d.n {
        column_block::<S, E, R, 2>(s, c, a, b, d, j0);
        j0 += 2 * S::LANES;
    }
    while j0 + S::LANES <= d.n {
        column_block::<S, E, R, 1>(s, c, a, b, d, j0);
        j0 += S::LANES;
    }
    // Columns left over from the vectors (none when n is a multiple of the width).
    for i in 0..d.m {
        for j in j0..d.n {
            let dot = (0..d.k).map(|p| a[i * d.k + p] * b[p * d.n + j]).sum();
            c[i * d.n + j].write(E::scalar(dot));
        }
    }
}

#[inline(always)]
fn matmul_with<S: Simd, E: Epilogue>(
    s: S,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
) {
    assert!(
        a.len() == d.m * d.k && b.len() == d.k * d.n && c.len() == d.m * d.n,
        "matmul: operands do not match {d:?}"
    );
    // Eight rows × two vectors is 16 accumulators: AVX-512 has 32 registers, AVX2 16.
    if S::LANES >= 16 {
        matmul_rows::<S, E, 8>(s, c, a, b, d);
    } else {
        matmul_rows::<S, E, 4>(s, c, a, b, d);
    }
}

#[inline(always)]
fn matmul_generic<S: Simd>(s: S, c: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], d: Dims) {
    matmul_with::<S, Plain>(s, c, a, b, d);
}

#[inline(always)]
fn matmul_relu_squared_generic<S: Simd>(
    s: S,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
) {
    matmul_with::<S, ReluSquared>(s, c, a, b, d);
}

isa_dispatch!(
    /// `c = a · b` (row-major, sizes `d`); every element of `c` is written.
    pub(crate) fn matmul = matmul_generic(c: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], d: Dims) -> ()
);

isa_dispatch!(
    /// `c = relu(a · b)²` (row-major, sizes `d`); every element of `c` is written.
    pub(crate) fn matmul_relu_squared = matmul_relu_squared_generic(c: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], d: Dims) -> ()
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{Isa, written};
    use crate::simd::Scalar;

    fn naive(a: &[f32], b: &[f32], d: Dims) -> Vec<f32> {
        let mut c = vec![0.0f64; d.m * d.n];
        for i in 0..d.m {
            for p in 0..d.k {
                for j in 0..d.n {
                    c[i * d.n + j] += f64::from(a[i * d.k + p]) * f64::from(b[p * d.n + j]);
                }
            }
        }
        c.into_iter().map(|v| v as f32).collect()
    }

    #[test]
    fn every_shape_and_instruction_set_matches_a_naive_product() {
        let value = |i: usize| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5;
        // Whole tiles, row tails, one-vector column blocks and scalar column tails.
        for (m, k, n) in [
            (16, 64, 64),
            (19, 64, 256),
            (5, 3, 37),
            (1, 1, 1),
            (33, 17, 24),
        ] {
            let d = Dims { m, k, n };
            let a: Vec<f32> = (0..m * k).map(value).collect();
            let b: Vec<f32> = (0..k * n).map(|i| value(i + 13)).collect();
            let expected = naive(&a, &b, d);
            // NaN-filled: an element the kernel does not write fails the comparison.
            let mut fast = vec![MaybeUninit::new(f32::NAN); m * n];
            matmul(Isa::detect(), &mut fast, &a, &b, d);
            let mut scalar = vec![MaybeUninit::new(f32::NAN); m * n];
            matmul_generic(Scalar, &mut scalar, &a, &b, d);
            // SAFETY: both were initialised (NaN) above.
            let (fast, scalar) = unsafe { (written(fast), written(scalar)) };
            for (what, c) in [("detected", &fast), ("scalar", &scalar)] {
                for (x, e) in c.iter().zip(&expected) {
                    assert!(
                        (x - e).abs() <= 1e-5 * (1.0 + e.abs()),
                        "{what} {d:?}: {x} vs {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_relu_squared_epilogue_is_the_product_then_relu_then_a_square_to_the_bit() {
        let value = |i: usize| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5;
        for (m, k, n) in [(16, 64, 256), (19, 32, 128), (5, 3, 37), (9, 17, 24)] {
            let d = Dims { m, k, n };
            let a: Vec<f32> = (0..m * k).map(value).collect();
            let b: Vec<f32> = (0..k * n).map(|i| value(i + 5)).collect();
            for isa in [Isa::detect(), Isa::Portable] {
                let mut plain = vec![MaybeUninit::new(f32::NAN); m * n];
                matmul(isa, &mut plain, &a, &b, d);
                let mut fused = vec![MaybeUninit::new(f32::NAN); m * n];
                matmul_relu_squared(isa, &mut fused, &a, &b, d);
                // SAFETY: both were initialised (NaN) above.
                let (plain, fused) = unsafe { (written(plain), written(fused)) };
                assert!(plain.iter().any(|&x| x < 0.0) && plain.iter().any(|&x| x > 0.0));
                for (p, f) in plain.iter().zip(&fused) {
                    let relu = if p.is_nan() || *p > 0.0 { *p } else { 0.0 };
                    assert_eq!((relu * relu).to_bits(), f.to_bits(), "{d:?} {isa:?}: {p}");
                }
            }
        }
    }
}
