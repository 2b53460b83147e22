//! Layer normalisation over the last dimension, with a fused CPU kernel.
//!
//! Every RWKV-7 block normalises its input twice (the first block three times) and Flex's own
//! layer norm sums each row in compensated scalar arithmetic: about a tenth of a whole forward
//! pass at `d_model = 64`. Implementations: burn's layer norm (the reference, every backend)
//! and a fused Flex kernel, reached through the [`LayerNormBackend`] extension. The kernel
//! serves inference: under autodiff, and on other backends (CubeCL), [`layer_norm`] runs the
//! reference (training keeps burn's ops; see [`crate::activation`]).

mod backend;
mod cpu;
#[cfg(test)]
mod tests;

pub use backend::LayerNormBackend;

use burn::backend::Dispatch;
use burn::tensor::Tensor;

use crate::implementation::KernelImpl;

/// `(x − μ) / √(σ² + ε) ⊙ gamma + beta`, with the mean `μ` and the biased variance `σ²` over
/// the last dimension, as `burn::nn::LayerNorm` computes it: the fused kernel for `f32` on a
/// plain Flex device, burn's layer norm elsewhere (autodiff included, so it stays
/// differentiable).
///
/// # Shapes
///
/// - `x`: `[..., d]`
/// - `gamma`, `beta`: `[d]`
/// - returns `x`'s shape
///
/// # Panics
///
/// If `gamma` or `beta` is not as long as `x`'s last dimension.
pub fn layer_norm<const D: usize>(
    x: Tensor<D>,
    gamma: Tensor<1>,
    beta: Tensor<1>,
    epsilon: f32,
) -> Tensor<D> {
    let imp = KernelImpl::fastest_for_inference(&x.device(), x.dtype());
    layer_norm_with(imp, x, gamma, beta, epsilon)
}

/// [`layer_norm`] with an explicit implementation.
///
/// # Shapes
///
/// As [`layer_norm`].
///
/// # Panics
///
/// If the shapes do not match, or if `imp` is fused and the tensors are not `f32` tensors on
/// a plain (not autodiff) Flex device.
pub fn layer_norm_with<const D: usize>(
    imp: KernelImpl,
    x: Tensor<D>,
    gamma: Tensor<1>,
    beta: Tensor<1>,
    epsilon: f32,
) -> Tensor<D> {
    let d = x.dims()[D - 1];
    assert!(
        gamma.dims() == [d] && beta.dims() == [d],
        "layer_norm: gamma {:?} and beta {:?} must both be [{d}] for an input of shape {:?}",
        gamma.dims(),
        beta.dims(),
        x.dims()
    );
    if imp == KernelImpl::Reference {
        return burn::tensor::module::layer_norm(x, gamma, Some(beta), f64::from(epsilon));
    }
    imp.check_for_inference("layer_norm", &x.device(), x.dtype());
    Tensor::from_dispatch(<Dispatch as LayerNormBackend>::fused_layer_norm(
        x.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
        epsilon,
    ))
}
