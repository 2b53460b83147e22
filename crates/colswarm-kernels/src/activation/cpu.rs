//! Element-wise sigmoid and tanh over contiguous `f32` slices.
//!
//! Flex's own `sigmoid` and `tanh` call libm once per element (5 and 19 ns per element on the
//! bench machine); these loops use [`exp_f32`], branch-free arithmetic that the compiler
//! vectorises inside the instruction-set wrappers of [`isa_dispatch!`].

use std::mem::MaybeUninit;

use crate::cpu::{exp_f32, isa_dispatch};
use crate::simd::Simd;

/// `1 / (1 + e⁻ˣ)`. [`exp_f32`] clamps its argument, so the result is exactly 0 or 1 far out
/// rather than NaN.
#[inline(always)]
pub(crate) fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// `tanh x`: `1 − 2 / (e²ˣ + 1)`, and near zero (`|x| < 0.3`), where that difference would
/// cancel, the odd Taylor polynomial through `x⁹` (truncation error below 2·10⁻⁸ relative).
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    let x2 = x * x;
    let near_zero = x
        * (1.0
            + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0)))));
    let far = 1.0 - 2.0 / (exp_f32(2.0 * x) + 1.0);
    if x2 < 0.09 { near_zero } else { far }
}

/// [`exp_f32`] on every lane, the same operations in the same order (no fused multiply-add),
/// so each lane equals the scalar form to the bit.
#[inline(always)]
pub(crate) fn exp_v<S: Simd>(s: S, x: S::V) -> S::V {
    const ROUND: f32 = 12_582_912.0;
    // `clamp` keeps a NaN: `max(−87, x)` and `min(88, ·)` return their second operand on NaN.
    let x = s.min(s.splat(88.0), s.max(s.splat(-87.0), x));
    let shifted = s.add(s.mul(x, s.splat(core::f32::consts::LOG2_E)), s.splat(ROUND));
    let n = s.sub(shifted, s.splat(ROUND));
    let r = s.sub(
        s.sub(x, s.mul(n, s.splat(0.693_359_4))),
        s.mul(n, s.splat(-2.121_944_4e-4)),
    );
    let horner = |acc: S::V, c: f32| s.add(s.mul(acc, r), s.splat(c));
    let poly = horner(
        horner(
            horner(horner(s.splat(1.987_569_2e-4), 1.398_2e-3), 8.333_452e-3),
            4.166_579_6e-2,
        ),
        0.166_666_65,
    );
    let poly = s.add(s.mul(poly, r), s.splat(0.5));
    let e_r = s.add(s.add(s.mul(poly, s.mul(r, r)), r), s.splat(1.0));
    s.mul(e_r, s.pow2_of_rounded(shifted, ROUND))
}

/// [`sigmoid_f32`] on every lane, to the bit.
#[inline(always)]
pub(crate) fn sigmoid_v<S: Simd>(s: S, x: S::V) -> S::V {
    let one = s.splat(1.0);
    s.div(one, s.add(one, exp_v(s, s.mul(x, s.splat(-1.0)))))
}

/// [`tanh_f32`] on every lane, to the bit.
#[inline(always)]
pub(crate) fn tanh_v<S: Simd>(s: S, x: S::V) -> S::V {
    let x2 = s.mul(x, x);
    let term = |c: f32, rest: S::V| s.add(s.splat(c), s.mul(x2, rest));
    let series = term(
        1.0,
        term(
            -1.0 / 3.0,
            term(2.0 / 15.0, term(-17.0 / 315.0, s.splat(62.0 / 2835.0))),
        ),
    );
    let near_zero = s.mul(x, series);
    let one = s.splat(1.0);
    let far = s.sub(
        one,
        s.div(s.splat(2.0), s.add(exp_v(s, s.mul(s.splat(2.0), x)), one)),
    );
    s.select_lt(x2, s.splat(0.09), near_zero, far)
}

#[inline(always)]
fn sigmoid_generic<S: Simd>(_: S, out: &mut [MaybeUninit<f32>], x: &[f32]) {
    assert_eq!(
        out.len(),
        x.len(),
        "sigmoid: the output and the input differ in length"
    );
    for (o, &x) in out.iter_mut().zip(x) {
        o.write(sigmoid_f32(x));
    }
}

#[inline(always)]
fn tanh_generic<S: Simd>(_: S, out: &mut [MaybeUninit<f32>], x: &[f32]) {
    assert_eq!(
        out.len(),
        x.len(),
        "tanh: the output and the input differ in length"
    );
    for (o, &x) in out.iter_mut().zip(x) {
        o.write(tanh_f32(x));
    }
}

isa_dispatch!(
    /// `out = σ(x)`, element-wise.
    pub(crate) fn sigmoid_into = sigmoid_generic(out: &mut [MaybeUninit<f32>], x: &[f32]) -> ()
);
isa_dispatch!(
    /// `out = tanh(x)`, element-wise.
    pub(crate) fn tanh_into = tanh_generic(out: &mut [MaybeUninit<f32>], x: &[f32]) -> ()
);
#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs across every branch of the forms: zeros of both signs, the Taylor range of
    /// `tanh`, the clamps of `exp`, infinities and NaN.
    fn awkward_inputs() -> Vec<f32> {
        let mut xs: Vec<f32> = (0..=4_000).map(|i| -100.0 + i as f32 * 0.05).collect();
        xs.extend((0..=600).map(|i| -0.3 + i as f32 * 0.001));
        xs.extend([
            0.0,
            -0.0,
            87.0,
            -87.0,
            88.0,
            88.5,
            -87.5,
            1e-30,
            -1e-30,
            f32::MIN_POSITIVE,
        ]);
        xs.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            0.3,
            -0.3,
            0.299_999_98,
        ]);
        xs
    }

    fn vector_forms_match_scalar<S: Simd>(s: S) {
        let xs = awkward_inputs();
        let bits = |x: f32| if x.is_nan() { u32::MAX } else { x.to_bits() };
        for chunk in xs.chunks(S::LANES).filter(|c| c.len() == S::LANES) {
            let mut out = vec![0.0; S::LANES];
            for (name, vector, scalar) in [
                (
                    "exp",
                    exp_v::<S> as fn(S, S::V) -> S::V,
                    exp_f32 as fn(f32) -> f32,
                ),
                ("sigmoid", sigmoid_v::<S>, sigmoid_f32),
                ("tanh", tanh_v::<S>, tanh_f32),
            ] {
                s.store(&mut out, vector(s, s.load(chunk)));
                for (x, y) in chunk.iter().zip(&out) {
                    assert_eq!(
                        bits(*y),
                        bits(scalar(*x)),
                        "{name}({x}): {y} vs {}",
                        scalar(*x)
                    );
                }
            }
        }
    }

    #[test]
    fn vector_forms_equal_the_scalar_forms_to_the_bit() {
        vector_forms_match_scalar(crate::simd::Scalar);
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(s) = crate::simd::Avx2::new() {
                vector_forms_match_scalar(s);
            }
            if let Some(s) = crate::simd::Avx512::new() {
                vector_forms_match_scalar(s);
            }
        }
    }

    #[test]
    fn scalar_forms_match_libm() {
        for i in 0..=40_000 {
            let x = -20.0 + i as f32 * 0.001;
            let sigmoid = 1.0 / (1.0 + (-x).exp());
            assert!(
                (sigmoid_f32(x) - sigmoid).abs() <= 4.0 * f32::EPSILON * sigmoid.max(1e-30),
                "sigmoid({x}) = {}, libm {sigmoid}",
                sigmoid_f32(x)
            );
            let tanh = x.tanh();
            assert!(
                (tanh_f32(x) - tanh).abs() <= 4.0 * f32::EPSILON * tanh.abs().max(1e-30),
                "tanh({x}) = {}, libm {tanh}",
                tanh_f32(x)
            );
        }
        assert_eq!(sigmoid_f32(200.0), 1.0);
        assert!(sigmoid_f32(-200.0) < 1e-37);
        assert_eq!(tanh_f32(200.0), 1.0);
        assert_eq!(tanh_f32(-200.0), -1.0);
        assert_eq!(tanh_f32(0.0), 0.0);
        assert!(sigmoid_f32(f32::NAN).is_nan() && tanh_f32(f32::NAN).is_nan());
    }
}
