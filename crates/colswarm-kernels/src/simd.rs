//! A minimal explicit-SIMD layer for the CPU kernels: `f32` vectors of AVX-512 (16 lanes),
//! AVX2+FMA (8 lanes), or one scalar lane.
//!
//! The workspace compiles for the baseline x86-64 target, and the compiler's auto-vectoriser
//! turned the WKV rows into scalar code with spills (measured: 3–4 GFLOP/s), so the kernels
//! are written against this trait instead and instantiated per instruction set by
//! [`isa_dispatch!`](crate::cpu::isa_dispatch).
//!
//! # Safety
//!
//! A value of [`Avx512`] or [`Avx2`] is a *token*: it can only be made by
//! [`Isa::detect`](crate::cpu::Isa::detect)'s run-time feature check (`Avx512::new`,
//! `Avx2::new`), so holding one proves the CPU supports the intrinsics its methods call. That
//! is what makes the `unsafe` intrinsic calls below sound. Loads and stores go through a
//! bounds-checked subslice of exactly `LANES` elements. The methods are `#[inline(always)]`
//! and the kernels that use them are inlined into `#[target_feature]` wrappers, so the
//! intrinsics compile to single instructions.

use std::mem::MaybeUninit;

pub(crate) use burn::tensor::f16;

/// Lane-parallel `f32` arithmetic; every method takes the token `self`.
pub(crate) trait Simd: Copy {
    /// `f32` lanes per vector.
    const LANES: usize;
    /// The vector type.
    type V: Copy;

    /// All lanes `x`.
    fn splat(self, x: f32) -> Self::V;
    /// The first `LANES` elements of `x`.
    fn load(self, x: &[f32]) -> Self::V;
    /// Writes the first `LANES` elements of `x`.
    fn store(self, x: &mut [f32], v: Self::V);
    /// Writes the first `LANES` elements of `x`, which may be uninitialised (an output
    /// buffer from [`unfilled_buffer`](crate::cpu::unfilled_buffer)).
    fn write(self, x: &mut [MaybeUninit<f32>], v: Self::V);
    /// `a · b`.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a · b + c`, fused where the instruction set has FMA.
    fn fmadd(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a > b ? a : b` per lane, as x86's `max` instructions: `b` when either is NaN, and when
    /// both are zeros of either sign.
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a < b ? a : b` per lane, as x86's `min` instructions (`b` on NaN and on zeros).
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a + b`.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a − b`.
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a / b`.
    fn div(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a < b ? yes : no` per lane (false where either is NaN).
    fn select_lt(self, a: Self::V, b: Self::V, yes: Self::V, no: Self::V) -> Self::V;
    /// Per lane, the float whose bits are `((bits(x) − bits(base) + 127) << 23)` in wrapping
    /// `i32` arithmetic: `2ⁿ` for the integer `n` that adding `base` (`1.5·2²³`) to a float
    /// leaves in its low mantissa bits ([`exp_f32`](crate::cpu::exp_f32)'s scale).
    fn pow2_of_rounded(self, x: Self::V, base: f32) -> Self::V;
    /// Sum of the lanes.
    fn hsum(self, v: Self::V) -> f32;
    /// The first `LANES` half floats of `x`, widened to `f32` (exactly: every half is an `f32`).
    fn load_half(self, x: &[f16]) -> Self::V;

    /// All lanes zero.
    #[inline(always)]
    fn zero(self) -> Self::V {
        self.splat(0.0)
    }
}

/// One scalar lane: the portable fallback (and the path for head sizes that are not a
/// multiple of the vector width).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scalar;

impl Simd for Scalar {
    const LANES: usize = 1;
    type V = f32;

    #[inline(always)]
    fn splat(self, x: f32) -> f32 {
        x
    }
    #[inline(always)]
    fn load(self, x: &[f32]) -> f32 {
        x[0]
    }
    #[inline(always)]
    fn store(self, x: &mut [f32], v: f32) {
        x[0] = v;
    }
    #[inline(always)]
    fn write(self, x: &mut [MaybeUninit<f32>], v: f32) {
        x[0].write(v);
    }
    #[inline(always)]
    fn mul(self, a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn fmadd(self, a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
    #[inline(always)]
    fn max(self, a: f32, b: f32) -> f32 {
        if a > b { a } else { b }
    }
    #[inline(always)]
    fn min(self, a: f32, b: f32) -> f32 {
        if a < b { a } else { b }
    }
    #[inline(always)]
    fn add(self, a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn sub(self, a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    fn div(self, a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    fn select_lt(self, a: f32, b: f32, yes: f32, no: f32) -> f32 {
        if a < b { yes } else { no }
    }
    #[inline(always)]
    fn pow2_of_rounded(self, x: f32, base: f32) -> f32 {
        let n = (x.to_bits() as i32).wrapping_sub(base.to_bits() as i32);
        f32::from_bits((n.wrapping_add(127) << 23) as u32)
    }
    #[inline(always)]
    fn hsum(self, v: f32) -> f32 {
        v
    }
    #[inline(always)]
    fn load_half(self, x: &[f16]) -> f32 {
        x[0].to_f32()
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use std::mem::MaybeUninit;

    use super::{Simd, f16};

    /// Token for AVX-512F (16 lanes); see the module docs for why it makes the intrinsics sound.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx512(());

    impl Avx512 {
        /// The token, if this CPU has AVX-512F and FMA.
        pub(crate) fn new() -> Option<Self> {
            (std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma"))
                .then_some(Self(()))
        }
    }

    impl Simd for Avx512 {
        const LANES: usize = 16;
        type V = __m512;

        #[inline(always)]
        fn splat(self, x: f32) -> __m512 {
            // SAFETY: the token proves AVX-512F (module docs).
            unsafe { _mm512_set1_ps(x) }
        }
        #[inline(always)]
        fn load(self, x: &[f32]) -> __m512 {
            let x = &x[..16];
            // SAFETY: `x` holds 16 readable f32 (bounds-checked above); the token proves AVX-512F.
            unsafe { _mm512_loadu_ps(x.as_ptr()) }
        }
        #[inline(always)]
        fn store(self, x: &mut [f32], v: __m512) {
            let x = &mut x[..16];
            // SAFETY: `x` holds 16 writable f32 (bounds-checked above); the token proves AVX-512F.
            unsafe { _mm512_storeu_ps(x.as_mut_ptr(), v) }
        }
        #[inline(always)]
        fn write(self, x: &mut [MaybeUninit<f32>], v: __m512) {
            let x = &mut x[..16];
            // SAFETY: `x` holds 16 writable f32 slots (bounds-checked above; writing needs
            // no initialised value); the token proves AVX-512F.
            unsafe { _mm512_storeu_ps(x.as_mut_ptr().cast::<f32>(), v) }
        }
        #[inline(always)]
        fn mul(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_mul_ps(a, b) }
        }
        #[inline(always)]
        fn fmadd(self, a: __m512, b: __m512, c: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        fn max(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_max_ps(a, b) }
        }
        #[inline(always)]
        fn min(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_min_ps(a, b) }
        }
        #[inline(always)]
        fn add(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_add_ps(a, b) }
        }
        #[inline(always)]
        fn sub(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_sub_ps(a, b) }
        }
        #[inline(always)]
        fn div(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_div_ps(a, b) }
        }
        #[inline(always)]
        fn select_lt(self, a: __m512, b: __m512, yes: __m512, no: __m512) -> __m512 {
            // SAFETY: the token proves AVX-512F. `_CMP_LT_OQ`: false on NaN.
            unsafe { _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b), no, yes) }
        }
        #[inline(always)]
        fn pow2_of_rounded(self, x: __m512, base: f32) -> __m512 {
            // SAFETY: the token proves AVX-512F; the integer ops wrap, as the scalar form's.
            unsafe {
                let n = _mm512_sub_epi32(
                    _mm512_castps_si512(x),
                    _mm512_set1_epi32(base.to_bits() as i32),
                );
                let biased = _mm512_add_epi32(n, _mm512_set1_epi32(127));
                _mm512_castsi512_ps(_mm512_slli_epi32::<23>(biased))
            }
        }
        #[inline(always)]
        fn hsum(self, v: __m512) -> f32 {
            // SAFETY: the token proves AVX-512F.
            unsafe { _mm512_reduce_add_ps(v) }
        }
        #[inline(always)]
        fn load_half(self, x: &[f16]) -> __m512 {
            let x = &x[..16];
            // SAFETY: `x` holds 16 readable halves, 32 bytes (bounds-checked above; `f16` is
            // a `u16`'s bits); the token proves AVX-512F, which has the conversion.
            unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(x.as_ptr().cast::<__m256i>())) }
        }
    }

    /// Token for AVX2 + FMA (8 lanes); see the module docs for why it makes the intrinsics sound.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx2(());

    impl Avx2 {
        /// The token, if this CPU has AVX2, FMA and F16C (every CPU with AVX2 has F16C).
        pub(crate) fn new() -> Option<Self> {
            (std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("f16c"))
            .then_some(Self(()))
        }
    }

    impl Simd for Avx2 {
        const LANES: usize = 8;
        type V = __m256;

        #[inline(always)]
        fn splat(self, x: f32) -> __m256 {
            // SAFETY: the token proves AVX2 (module docs).
            unsafe { _mm256_set1_ps(x) }
        }
        #[inline(always)]
        fn load(self, x: &[f32]) -> __m256 {
            let x = &x[..8];
            // SAFETY: `x` holds 8 readable f32 (bounds-checked above); the token proves AVX2.
            unsafe { _mm256_loadu_ps(x.as_ptr()) }
        }
        #[inline(always)]
        fn store(self, x: &mut [f32], v: __m256) {
            let x = &mut x[..8];
            // SAFETY: `x` holds 8 writable f32 (bounds-checked above); the token proves AVX2.
            unsafe { _mm256_storeu_ps(x.as_mut_ptr(), v) }
        }
        #[inline(always)]
        fn write(self, x: &mut [MaybeUninit<f32>], v: __m256) {
            let x = &mut x[..8];
            // SAFETY: `x` holds 8 writable f32 slots (bounds-checked above; writing needs
            // no initialised value); the token proves AVX2.
            unsafe { _mm256_storeu_ps(x.as_mut_ptr().cast::<f32>(), v) }
        }
        #[inline(always)]
        fn mul(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the token proves AVX2.
            unsafe { _mm256_mul_ps(a, b) }
        }
        #[inline(always)]
        fn fmadd(self, a: __m256, b: __m256, c: __m256) -> __m256 {
            // SAFETY: the token proves AVX2 and FMA.
            unsafe { _mm256_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        fn max(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the token proves AVX2.
            unsafe { _mm256_max_ps(a, b) }
        }
        #[inline(always)]
        fn min(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the token proves AVX2.
            unsafe { _mm256_min_ps(a, b) }
        }
        #[inline(always)]
        fn add(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the token proves AVX2.
            unsafe { _mm256_add_ps(a, b) }
        }
        #[inline(always)]
        fn sub(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the token proves AVX2.
            unsafe { _mm256_sub_ps(a, b) }
        }
        #[inline(always)]
        fn div(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the token proves AVX2.
            unsafe { _mm256_div_ps(a, b) }
        }
        #[inline(always)]
        fn select_lt(self, a: __m256, b: __m256, yes: __m256, no: __m256) -> __m256 {
            // SAFETY: the token proves AVX2. `_CMP_LT_OQ`: false on NaN.
            unsafe { _mm256_blendv_ps(no, yes, _mm256_cmp_ps::<_CMP_LT_OQ>(a, b)) }
        }
        #[inline(always)]
        fn pow2_of_rounded(self, x: __m256, base: f32) -> __m256 {
            // SAFETY: the token proves AVX2; the integer ops wrap, as the scalar form's.
            unsafe {
                let n = _mm256_sub_epi32(
                    _mm256_castps_si256(x),
                    _mm256_set1_epi32(base.to_bits() as i32),
                );
                let biased = _mm256_add_epi32(n, _mm256_set1_epi32(127));
                _mm256_castsi256_ps(_mm256_slli_epi32::<23>(biased))
            }
        }
        #[inline(always)]
        fn hsum(self, v: __m256) -> f32 {
            // SAFETY: the token proves AVX2.
            unsafe {
                let quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
                let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
                let one = _mm_add_ss(pair, _mm_shuffle_ps(pair, pair, 1));
                _mm_cvtss_f32(one)
            }
        }
        #[inline(always)]
        fn load_half(self, x: &[f16]) -> __m256 {
            let x = &x[..8];
            // SAFETY: `x` holds 8 readable halves, 16 bytes (bounds-checked above; `f16` is a
            // `u16`'s bits); the token proves F16C, which has the conversion.
            unsafe { _mm256_cvtph_ps(_mm_loadu_si128(x.as_ptr().cast::<__m128i>())) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise<S: Simd>(s: S) {
        let x: Vec<f32> = (0..S::LANES).map(|i| i as f32).collect();
        let mut out = vec![0.0; S::LANES];
        let v = s.fmadd(s.load(&x), s.splat(2.0), s.splat(1.0));
        s.store(&mut out, s.mul(v, s.splat(0.5)));
        let expected: Vec<f32> = x.iter().map(|x| (2.0 * x + 1.0) * 0.5).collect();
        assert_eq!(out, expected);
        let mut unfilled = vec![MaybeUninit::new(f32::NAN); S::LANES];
        s.write(&mut unfilled, s.load(&x));
        // SAFETY: initialised above (NaN), then overwritten.
        let written: Vec<f32> = unfilled
            .iter()
            .map(|v| unsafe { v.assume_init() })
            .collect();
        assert_eq!(written, x);
        let n = S::LANES as f32;
        assert_eq!(s.hsum(s.load(&x)), n * (n - 1.0) / 2.0);
        assert_eq!(s.hsum(s.zero()), 0.0);
        // `max` as x86's: the second operand on NaN and on zeros of either sign.
        let a: Vec<f32> = (0..S::LANES)
            .map(|i| [1.0, -2.0, f32::NAN, 0.0][i % 4])
            .collect();
        let b: Vec<f32> = (0..S::LANES)
            .map(|i| [0.5, 3.0, 7.0, -0.0][i % 4])
            .collect();
        s.store(&mut out, s.max(s.load(&a), s.load(&b)));
        let bits: Vec<u32> = out.iter().map(|x| x.to_bits()).collect();
        let want: Vec<u32> = (0..S::LANES)
            .map(|i| [1.0f32, 3.0, 7.0, -0.0][i % 4].to_bits())
            .collect();
        assert_eq!(bits, want);
        s.store(&mut out, s.max(s.zero(), s.splat(f32::NAN)));
        assert!(out.iter().all(|x| x.is_nan()));
        // Halves widen exactly: signs, the largest half, a subnormal, fractions.
        let special = [0.0, -1.5, 65504.0, 2f32.powi(-24), 0.333, -7.25e-3, 1.0e4];
        let halves: Vec<f16> = (0..S::LANES)
            .map(|i| f16::from_f32(special[i % special.len()] * (1 + i / special.len()) as f32))
            .collect();
        s.store(&mut out, s.load_half(&halves));
        let widened: Vec<f32> = halves.iter().map(|h| h.to_f32()).collect();
        assert_eq!(out, widened);
    }

    #[test]
    fn every_available_variant_computes_the_same() {
        exercise(Scalar);
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(s) = Avx2::new() {
                exercise(s);
            }
            if let Some(s) = Avx512::new() {
                exercise(s);
            }
        }
    }
}
