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
