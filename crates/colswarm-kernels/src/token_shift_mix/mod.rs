//! RWKV-7's token-shift mixing: each block interpolates every token's input towards the
//! previous token's, once per learned mixing vector `μ` (six in a time mix, one in a channel
//! mix), `x + (x_prev − x) ⊙ μ`, where `x_prev` is the sequence shifted by one token, the
//! carried-over `shift` in front.
//!
//! In burn ops that is a concatenation (the shifted sequence), a subtraction, then a broadcast
//! product and a sum per `μ`: fourteen passes over `[rows, d]` and as many fresh tensors in a
//! time mix. The fused Flex kernel reads each token's predecessor in place and writes all the
//! mixes in one pass, with the same arithmetic in the same order (a product, then a sum: no
//! fused multiply-add), so its results equal the reference's to the bit.
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

/// `x + (x_prev − x) ⊙ μᵢ` for every `μᵢ` of `mus`, in order, with `x_prev` the sequence
/// shifted by one token (`shift` at position 0): the fused kernel for `f32` on a plain Flex
/// device, burn's ops elsewhere (autodiff included, so it stays differentiable).
///
/// # Shapes
///
/// - `x`: `[batch, time, d]`; `shift`: `[batch, d]`; each of `mus`: `[d]`
/// - returns one `[batch·time, d]` tensor per `μ`
///
/// # Panics
///
/// If `shift` is not `[batch, d]` or a `μ` is not `d` long.
pub fn token_shift_mix(x: Tensor<3>, shift: Tensor<2>, mus: &[Tensor<1>]) -> Vec<Tensor<2>> {
    let imp = KernelImpl::fastest_for_inference(&x.device(), x.dtype());
    token_shift_mix_with(imp, x, shift, mus)
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
    x: Tensor<3>,
    shift: Tensor<2>,
    mus: &[Tensor<1>],
) -> Vec<Tensor<2>> {
    let [batch, time, d] = x.dims();
    assert_eq!(
        shift.dims(),
        [batch, d],
        "token_shift_mix: x is [{batch}, {time}, {d}] but shift is {:?}",
        shift.dims()
    );
    for (i, mu) in mus.iter().enumerate() {
        assert_eq!(
            mu.dims(),
            [d],
            "token_shift_mix: mixing vector {i} is {:?}, not [{d}]",
            mu.dims()
        );
    }
    let rows = batch * time;
    if imp == KernelImpl::Reference || mus.is_empty() || rows == 0 {
        let x_prev = shifted(x.clone(), shift).reshape([rows, d]);
        let x = x.reshape([rows, d]);
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
            shift.into_dispatch(),
            Tensor::stack::<2>(mus.to_vec(), 0).into_dispatch(),
        ));
    // Views into one buffer: each mix is a contiguous block of it.
    (0..mus.len())
        .map(|i| mixes.clone().narrow(0, i, 1).reshape([rows, d]))
        .collect()
}

/// The previous token's input at every position: `shift` at position 0.
///
/// # Shapes
///
/// - `x`: `[batch, time, d]`; `shift`: `[batch, d]` → `[batch, time, d]`
fn shifted(x: Tensor<3>, shift: Tensor<2>) -> Tensor<3> {
    let [batch, time, d] = x.dims();
    let first = shift.reshape([batch, 1, d]);
    if time <= 1 {
        return first;
    }
    Tensor::cat(vec![first, x.narrow(1, 0, time - 1)], 1)
}
