//! Plumbing shared by the plain-Rust CPU kernels: instruction-set selection and the parallel
//! task map.
//!
//! The kernels are ordinary Rust over contiguous `f32` slices, written against the
//! [`Simd`](crate::simd::Simd) trait and instantiated by [`isa_dispatch!`] for AVX-512 and
//! AVX2+FMA behind `#[target_feature]` (chosen at run time), and for one scalar lane
//! elsewhere. The workspace builds for the baseline x86-64 target (SSE2), so without this the
//! hot loops would run at a fraction of the machine's vector width.

use std::mem::{ManuallyDrop, MaybeUninit};

use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
use crate::simd::{Avx2, Avx512};

/// The instruction set the kernels run with, holding the token that proves it is available.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Isa {
    /// x86-64 with AVX-512F and FMA: 16 `f32` lanes.
    #[cfg(target_arch = "x86_64")]
    Avx512(Avx512),
    /// x86-64 with AVX2, FMA and F16C: 8 `f32` lanes.
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2),
    /// Anything else: one scalar lane.
    Portable,
}

impl Isa {
    /// The widest variant this CPU runs.
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(token) = Avx512::new() {
                return Self::Avx512(token);
            }
            if let Some(token) = Avx2::new() {
                return Self::Avx2(token);
            }
        }
        Self::Portable
    }
}

/// Defines `fn $name(isa: Isa, args…) -> ret` that runs `$generic(simd, args…)` with the
/// [`Simd`](crate::simd::Simd) token of `isa`, compiled inside a `#[target_feature]` wrapper
/// for that instruction set.
///
/// `$generic` and everything it calls in its hot loops must be `#[inline(always)]`, so that
/// they are compiled inside the wrapper rather than for the baseline target.
macro_rules! isa_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident = $generic:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty) => {
        $(#[$meta])*
        $vis fn $name(isa: $crate::cpu::Isa, $($arg: $ty),*) -> $ret {
            match isa {
                #[cfg(target_arch = "x86_64")]
                $crate::cpu::Isa::Avx512(simd) => {
                    #[target_feature(enable = "avx512f,avx2,fma")]
                    fn run(simd: $crate::simd::Avx512, $($arg: $ty),*) -> $ret {
                        $generic(simd, $($arg),*)
                    }
                    // SAFETY: the `Avx512` token exists only after a run-time check that this
                    // CPU has AVX-512F and FMA (AVX-512F implies AVX2).
                    unsafe { run(simd, $($arg),*) }
                }
                #[cfg(target_arch = "x86_64")]
                $crate::cpu::Isa::Avx2(simd) => {
                    #[target_feature(enable = "avx2,fma,f16c")]
                    fn run(simd: $crate::simd::Avx2, $($arg: $ty),*) -> $ret {
                        $generic(simd, $($arg),*)
                    }
                    // SAFETY: the `Avx2` token exists only after a run-time check for AVX2, FMA and
                    // F16C.
                    unsafe { run(simd, $($arg),*) }
                }
                $crate::cpu::Isa::Portable => $generic($crate::simd::Scalar, $($arg),*),
            }
        }
    };
}
pub(crate) use isa_dispatch;

/// Runs `task(i)` for `i in 0..count`, on rayon's pool when `parallel`, and collects the results
/// in order.
pub(crate) fn map_tasks<T, F>(count: usize, parallel: bool, task: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync + Send,
{
    if parallel && count > 1 {
        (0..count).into_par_iter().map(task).collect()
    } else {
        (0..count).map(task).collect()
    }
}

/// A buffer every element of which the kernel is about to overwrite.
///
/// Debug builds (tests) fill it with NaN, so an element a kernel forgets to write shows up as
/// a NaN in the output and fails the parity tests; release builds fill it with zeros. Kernels
/// that write every element through [`Simd::write`](crate::simd::Simd::write) or
/// [`MaybeUninit::write`] take an [`unfilled_buffer`] instead.
pub(crate) fn output_buffer(len: usize) -> Vec<f32> {
    vec![
        if cfg!(debug_assertions) {
            f32::NAN
        } else {
            0.0
        };
        len
    ]
}

/// A buffer of `len` elements for a kernel that writes every one of them, left unfilled in
/// release builds: filling the linear map's, the layer norm's and the activations' outputs
/// with zeros first was about 6% of annotation's instructions. Debug builds (tests) fill it
/// with NaN, as [`output_buffer`] does, so a forgotten element still fails the parity tests.
pub(crate) fn unfilled_buffer(len: usize) -> Vec<MaybeUninit<f32>> {
    if cfg!(debug_assertions) {
        vec![MaybeUninit::new(f32::NAN); len]
    } else {
        let mut buffer = Vec::with_capacity(len);
        // SAFETY: `MaybeUninit<f32>` needs no initialisation, and the capacity is `len`.
        unsafe { buffer.set_len(len) };
        buffer
    }
}

/// The buffer of [`unfilled_buffer`] once a kernel has written it.
///
/// # Safety
///
/// Every element of `buffer` must have been written.
pub(crate) unsafe fn written(buffer: Vec<MaybeUninit<f32>>) -> Vec<f32> {
    let mut buffer = ManuallyDrop::new(buffer);
    let (ptr, len, capacity) = (buffer.as_mut_ptr(), buffer.len(), buffer.capacity());
    // SAFETY: `MaybeUninit<f32>` has `f32`'s size and alignment, the allocation is the
    // vector's own (not dropped: `ManuallyDrop`), and the caller vouches that every element
    // was written.
    unsafe { Vec::from_raw_parts(ptr.cast::<f32>(), len, capacity) }
}

/// `out = exp(x)`, element-wise, with [`exp_f32`] (a loop the compiler vectorises).
#[inline(always)]
pub(crate) fn exp_into(out: &mut [f32], x: &[f32]) {
    for (o, &x) in out.iter_mut().zip(x) {
        *o = exp_f32(x);
    }
}

/// `eˣ` to about one ulp, in branch-free arithmetic (no libm call), so that loops over it
/// vectorise: the decay factors cost `n` exponentials per head per token, which through
/// libm's `expf` took about a quarter of the fused forward's time.
///
/// Cephes' `expf`: `eˣ = 2ⁿ·eʳ` with `n = round(x·log₂e)`, `r = x − n·ln 2` (ln 2 split in two
/// for exactness) and a degree-6 polynomial for `eʳ`. Inputs are clamped to `[−87, 88]`
/// (the normal range); NaN stays NaN.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5·2²³: adding and subtracting it rounds to an integer
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * core::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    // `n` as an integer, read from the low mantissa bits of `shifted` rather than by an `as`
    // cast, whose saturating NaN check kept the loops from vectorising.
    let n_int = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let poly = ((((1.987_569_2e-4 * r + 1.398_2e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 0.166_666_65)
        * r
        + 0.5;
    let e_r = poly * (r * r) + r + 1.0;
    e_r * f32::from_bits((n_int.wrapping_add(127) << 23) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_libm_to_a_few_ulp() {
        for i in 0..=20_000 {
            let x = -80.0 + i as f32 * 0.0083;
            let (fast, exact) = (exp_f32(x), x.exp());
            assert!(
                (fast - exact).abs() <= 4.0 * f32::EPSILON * exact,
                "exp({x}) = {fast}, libm {exact}"
            );
        }
        assert_eq!(exp_f32(0.0), 1.0);
        assert!(exp_f32(f32::NAN).is_nan());
    }

    #[test]
    fn map_tasks_keeps_order_in_parallel() {
        let serial = map_tasks(37, false, |i| i * i);
        let parallel = map_tasks(37, true, |i| i * i);
        assert_eq!(serial, parallel);
        assert_eq!(serial[6], 36);
    }
}
