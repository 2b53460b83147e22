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

use crate::activation::cpu::{sigmoid_f32, sigmoid_v, tanh_f32, tanh_v};
use crate::cpu::Isa;
use crate::simd::{Scalar, Simd};

/// Sizes of one product: `a` is `[m, k]`, `b` is `[k, n]`, `c` is `[m, n]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

/// What a product's elements go through on their way out of the kernel's registers. Each form
/// does the arithmetic of the separate ops it replaces, element by element and in their
/// order, so the results are the same to the bit: on the vectors of a tile
/// ([`Epilogue::vector`]), and on the column tails ([`Epilogue::scalar`]).
pub(crate) trait Epilogue: Sync {
    /// On element `col` of a row of `c`.
    fn scalar(&self, x: f32, col: usize) -> f32;

    /// On the vector of a row of `c` that starts at `col`, before it is written.
    #[inline(always)]
    fn vector<S: Simd>(&self, _: S, v: S::V, _: usize) -> S::V {
        v
    }

    /// The row width a form is made for (a bias's length), if any.
    fn width(&self) -> Option<usize> {
        None
    }
}

/// `c` as it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain;

impl Epilogue for Plain {
    #[inline(always)]
    fn scalar(&self, x: f32, _: usize) -> f32 {
        x
    }
}

/// `relu(c)²`, as burn's `relu` then a product of the element with itself: `max(0, c)` keeps
/// a NaN (x86's `max` returns its second operand on NaN), and `-0²` is `+0` as `0²` is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReluSquared;

impl Epilogue for ReluSquared {
    #[inline(always)]
    fn scalar(&self, x: f32, _: usize) -> f32 {
        let r = if 0.0 > x { 0.0 } else { x };
        r * r
    }
    #[inline(always)]
    fn vector<S: Simd>(&self, s: S, v: S::V, _: usize) -> S::V {
        let r = s.max(s.zero(), v);
        s.mul(r, r)
    }
}

/// `tanh(c)`, as the fused `tanh` computes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tanh;

impl Epilogue for Tanh {
    #[inline(always)]
    fn scalar(&self, x: f32, _: usize) -> f32 {
        tanh_f32(x)
    }
    #[inline(always)]
    fn vector<S: Simd>(&self, s: S, v: S::V, _: usize) -> S::V {
        tanh_v(s, v)
    }
}

/// `σ(c)`, as the fused `sigmoid` computes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sigmoid;

impl Epilogue for Sigmoid {
    #[inline(always)]
    fn scalar(&self, x: f32, _: usize) -> f32 {
        sigmoid_f32(x)
    }
    #[inline(always)]
    fn vector<S: Simd>(&self, s: S, v: S::V, _: usize) -> S::V {
        sigmoid_v(s, v)
    }
}

/// `σ(c + bias) · scale`: burn's sum, the fused `sigmoid`, burn's product by a scalar (left
/// out when `scale` is 1, which changes no bit).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BiasSigmoid<'a> {
    pub bias: &'a [f32],
    pub scale: f32,
}

impl Epilogue for BiasSigmoid<'_> {
    #[inline(always)]
    fn scalar(&self, x: f32, col: usize) -> f32 {
        sigmoid_f32(x + self.bias[col]) * self.scale
    }
    #[inline(always)]
    fn vector<S: Simd>(&self, s: S, v: S::V, col: usize) -> S::V {
        let biased = s.add(v, s.load(&self.bias[col..]));
        s.mul(sigmoid_v(s, biased), s.splat(self.scale))
    }
    fn width(&self) -> Option<usize> {
        Some(self.bias.len())
    }
}

/// One `R × V·LANES` tile of `c` at row `i0`, column `j0`.
#[inline(always)]
fn tile<S: Simd, E: Epilogue, const R: usize, const V: usize>(
    s: S,
    e: &E,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
    (i0, j0): (usize, usize),
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
            s.write(
                &mut out[v * S::LANES..],
                e.vector(s, acc, j0 + v * S::LANES),
            );
        }
    }
}

/// Every row of the column block at `j0` that is `V` vectors wide, `R` rows at a time.
#[inline(always)]
fn column_block<S: Simd, E: Epilogue, const R: usize, const V: usize>(
    s: S,
    e: &E,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
    j0: usize,
) {
    let mut i0 = 0;
    while i0 + R <= d.m {
        tile::<S, E, R, V>(s, e, c, a, b, d, (i0, j0));
        i0 += R;
    }
    while i0 < d.m {
        tile::<S, E, 1, V>(s, e, c, a, b, d, (i0, j0));
        i0 += 1;
    }
}

#[inline(always)]
fn matmul_rows<S: Simd, E: Epilogue, const R: usize>(
    s: S,
    e: &E,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
) {
    let mut j0 = 0;
    while j0 + 2 * S::LANES <= d.n {
        column_block::<S, E, R, 2>(s, e, c, a, b, d, j0);
        j0 += 2 * S::LANES;
    }
    while j0 + S::LANES <= d.n {
        column_block::<S, E, R, 1>(s, e, c, a, b, d, j0);
        j0 += S::LANES;
    }
    // Columns left over from the vectors (none when n is a multiple of the width).
    for i in 0..d.m {
        for j in j0..d.n {
            let dot = (0..d.k).map(|p| a[i * d.k + p] * b[p * d.n + j]).sum();
            c[i * d.n + j].write(e.scalar(dot, j));
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
    e: &E,
) {
    assert!(
        a.len() == d.m * d.k && b.len() == d.k * d.n && c.len() == d.m * d.n,
        "matmul: operands do not match {d:?}"
    );
    // Eight rows × two vectors is 16 accumulators: AVX-512 has 32 registers, AVX2 16.
    if S::LANES >= 16 {
        matmul_rows::<S, E, 8>(s, e, c, a, b, d);
    } else {
        matmul_rows::<S, E, 4>(s, e, c, a, b, d);
    }
}

/// `c = e(a · b)` (row-major, sizes `d`), element by element; every element of `c` is
/// written. (`isa_dispatch!` makes functions of concrete types; this one is generic over the
/// epilogue, so it dispatches by hand, the same way.)
pub(crate) fn matmul<E: Epilogue>(
    isa: Isa,
    c: &mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    d: Dims,
    e: &E,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512(simd) => {
            #[target_feature(enable = "avx512f,avx2,fma")]
            fn run<E: Epilogue>(
                simd: crate::simd::Avx512,
                c: &mut [MaybeUninit<f32>],
                a: &[f32],
                b: &[f32],
                d: Dims,
                e: &E,
            ) {
                matmul_with(simd, c, a, b, d, e)
            }
            // SAFETY: the `Avx512` token exists only after a run-time check that this CPU has
            // AVX-512F and FMA (AVX-512F implies AVX2).
            unsafe { run(simd, c, a, b, d, e) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2(simd) => {
            #[target_feature(enable = "avx2,fma,f16c")]
            fn run<E: Epilogue>(
                simd: crate::simd::Avx2,
                c: &mut [MaybeUninit<f32>],
                a: &[f32],
                b: &[f32],
                d: Dims,
                e: &E,
            ) {
                matmul_with(simd, c, a, b, d, e)
            }
            // SAFETY: the `Avx2` token exists only after a run-time check for AVX2, FMA and
            // F16C.
            unsafe { run(simd, c, a, b, d, e) }
        }
        Isa::Portable => matmul_with(Scalar, c, a, b, d, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::written;

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
            matmul(Isa::detect(), &mut fast, &a, &b, d, &Plain);
            let mut scalar = vec![MaybeUninit::new(f32::NAN); m * n];
            matmul(Isa::Portable, &mut scalar, &a, &b, d, &Plain);
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

    /// The separate ops an epilogue replaces, on element `(·, col)` of the plain product.
    type ElementOps<'a> = dyn Fn(usize, f32) -> f32 + 'a;

    #[test]
    fn every_epilogue_is_the_product_then_its_ops_to_the_bit() {
        let value = |i: usize| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5;
        for (m, k, n) in [(16, 64, 256), (19, 32, 128), (5, 3, 37), (9, 17, 24)] {
            let d = Dims { m, k, n };
            let a: Vec<f32> = (0..m * k).map(value).collect();
            let b: Vec<f32> = (0..k * n).map(|i| 3.0 * value(i + 5)).collect();
            let bias: Vec<f32> = (0..n).map(|j| value(j + 11)).collect();
            let bias_sigmoid = BiasSigmoid {
                bias: &bias,
                scale: -0.6,
            };
            let relu_squared = |x: f32| {
                let r = if x.is_nan() || x > 0.0 { x } else { 0.0 };
                r * r
            };
            for isa in [Isa::detect(), Isa::Portable] {
                let mut plain = vec![MaybeUninit::new(f32::NAN); m * n];
                matmul(isa, &mut plain, &a, &b, d, &Plain);
                // SAFETY: initialised (NaN) above.
                let plain = unsafe { written(plain) };
                assert!(plain.iter().any(|&x| x < -0.3) && plain.iter().any(|&x| x > 0.3));
                let fused = |e: &dyn Fn(&mut [MaybeUninit<f32>])| {
                    let mut out = vec![MaybeUninit::new(f32::NAN); m * n];
                    e(&mut out);
                    // SAFETY: initialised (NaN) above.
                    unsafe { written(out) }
                };
                let forms: [(&str, Vec<f32>, Box<ElementOps<'_>>); 4] = [
                    (
                        "relu squared",
                        fused(&|c| matmul(isa, c, &a, &b, d, &ReluSquared)),
                        Box::new(|_, x| relu_squared(x)),
                    ),
                    (
                        "tanh",
                        fused(&|c| matmul(isa, c, &a, &b, d, &Tanh)),
                        Box::new(|_, x| tanh_f32(x)),
                    ),
                    (
                        "sigmoid",
                        fused(&|c| matmul(isa, c, &a, &b, d, &Sigmoid)),
                        Box::new(|_, x| sigmoid_f32(x)),
                    ),
                    (
                        "bias, sigmoid, scale",
                        fused(&|c| matmul(isa, c, &a, &b, d, &bias_sigmoid)),
                        Box::new(|j, x| sigmoid_f32(x + bias[j]) * -0.6),
                    ),
                ];
                for (what, got, want) in &forms {
                    for (i, (p, g)) in plain.iter().zip(got).enumerate() {
                        let w = want(i % n, *p);
                        assert_eq!(w.to_bits(), g.to_bits(), "{what} {d:?} {isa:?}: {p}");
                    }
                }
            }
        }
    }
}
