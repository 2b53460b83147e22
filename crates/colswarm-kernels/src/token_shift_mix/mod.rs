//! RWKV-7's token-shift mixing: each block interpolates every token's input towards the
//! previous token's, once per learned mixing vector `μ` (six in a time mix, one in a channel
//! mix), `x + (x_prev − x) ⊙ μ`.
//!
//! In burn ops that is a subtraction, then a broadcast product and a sum per `μ`: thirteen
//! passes over `[rows, d]` and as many fresh tensors in a time mix. The fused Flex kernel
//! writes all the mixes in one pass, with the same arithmetic in the same order (a product,
//! then a sum: no fused multiply-add), so its results equal the reference's to the bit.
//!
//! Implementations: burn's ops (the reference, every backend, differentiable) and the Flex
//! kernel, reached through the [`TokenShiftMixBackend`] extension. The kernel serves
//! inference: under autodiff, and on other backends, the plain entry point runs the reference.

mod backend;
mod cpu;
#[cfg(test)]
mod tests;

pub use backend::TokenShiftMixBackend;

use burn::backend::Dispatch;
use burn::tensor::Tensor;

use crate::implementation::KernelImpl;

/// `x + (x_prev − x) ⊙ μᵢ` for every `μᵢ` of `mus`, in order: the fused kernel for `f32` on a
/// plain Flex device, burn's ops elsewhere (autodiff included, so it stays differentiable).
///
/// # Shapes
///
/// - `x`, `x_prev`: `[rows, d]`; each of `mus`: `[d]`
/// - returns one `[rows, d]` tensor per `μ`
///
/// # Panics
///
/// If `x` and `x_prev` differ in shape or a `μ` is not `d` long.
pub fn token_shift_mix(x: Tensor<2>, x_prev: Tensor<2>, mus: &[Tensor<1>]) -> Vec<Tensor<2>> {
    let imp = KernelImpl::fastest_for_inference(&x.device(), x.dtype());
    token_shift_mix_with(imp, x, x_prev, mus)
}

/// [`token_shift_mix`] with an explicit implementation.
///
/// # Shapes
///
/// As [`token_shift_mix`].
///
/// # Panics
///
/// As [`token_shift_mix`], and if `imp` is fused and the tensors are not `f32` tensors on a
/// plain (not autodiff) Flex device.
pub fn token_shift_mix_with(
    imp: KernelImpl,
    x: Tensor<2>,
    x_prev: Tensor<2>,
    mus: &[Tensor<1>],
) -> Vec<Tensor<2>> {
    let [rows, d] = x.dims();
    assert_eq!(
        x_prev.dims(),
        [rows, d],
        "token_shift_mix: x is [{rows}, {d}] but x_prev is {:?}",
        x_prev.dims()
    );
    for (i, mu) in mus.iter().enumerate() {
        assert_eq!(
            mu.dims(),
            [d],
            "token_shift_mix: mixing vector {i} is {:?}, not [{d}]",
            mu.dims()
        );
    }
    if imp == KernelImpl::Reference || mus.is_empty() {
        let delta = x_prev - x.clone();
        return mus
            .iter()
            .map(|mu| x.clone() + delta.clone() * mu.clone().unsqueeze())
            .collect();
    }
    imp.check_for_inference("token_shift_mix", &x.device(), x.dtype());
    let mixes: Tensor<3> =
        Tensor::from_dispatch(<Dispatch as TokenShiftMixBackend>::fused_token_shift_mix(
            x.into_dispatch(),
            x_prev.into_dispatch(),
            Tensor::stack::<2>(mus.to_vec(), 0).into_dispatch(),
        ));
    // Views into one buffer: each mix is a contiguous block of it.
    (0..mus.len())
        .map(|i| mixes.clone().narrow(0, i, 1).reshape([rows, d]))
        .collect()
}
