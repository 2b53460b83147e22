//! Sigmoid and tanh with vectorised CPU kernels.
//!
//! RWKV-7's time mixing takes four to five sigmoids and a tanh per layer and token. Flex
//! computes them with one libm call per element, which cost about a tenth of a whole forward
//! pass; the fused kernels here evaluate them with a vectorised polynomial exponential.
//!
//! Implementations: burn's own `sigmoid` / `tanh` (the reference, every backend) and a fused
//! Flex kernel, reached through the [`ActivationBackend`] extension. The fused kernels serve
//! inference: under autodiff, and on other backends (CubeCL, which fuse element-wise ops
//! already), the plain entry points run the reference. Training keeps burn's ops because the
//! kernels round differently, and over whole training runs that moved dev scores.

mod backend;
pub(crate) mod cpu;
#[cfg(test)]
mod tests;

pub use backend::ActivationBackend;

use burn::backend::Dispatch;
use burn::tensor::Tensor;

use crate::implementation::KernelImpl;

/// `σ(x) = 1 / (1 + e⁻ˣ)`, element-wise: the fused kernel for `f32` on a plain Flex device,
/// burn's `sigmoid` elsewhere (autodiff included, so it stays differentiable).
///
/// # Shapes
///
/// Any; the output has `x`'s shape.
pub fn sigmoid<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let imp = KernelImpl::fastest_for_inference(&x.device(), x.dtype());
    sigmoid_with(imp, x)
}

/// `tanh(x)`, element-wise: the fused kernel for `f32` on a plain Flex device, burn's `tanh`
/// elsewhere (autodiff included, so it stays differentiable).
///
/// # Shapes
///
/// Any; the output has `x`'s shape.
pub fn tanh<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let imp = KernelImpl::fastest_for_inference(&x.device(), x.dtype());
    tanh_with(imp, x)
}

/// [`sigmoid`] with an explicit implementation.
///
/// # Shapes
///
/// As [`sigmoid`].
///
/// # Panics
///
/// If `imp` is fused and the tensor is not an `f32` tensor on a plain (not autodiff) Flex
/// device.
pub fn sigmoid_with<const D: usize>(imp: KernelImpl, x: Tensor<D>) -> Tensor<D> {
    if imp == KernelImpl::Reference {
        return burn::tensor::activation::sigmoid(x);
    }
    imp.check_for_inference("sigmoid", &x.device(), x.dtype());
    Tensor::from_dispatch(<Dispatch as ActivationBackend>::fused_sigmoid(
        x.into_dispatch(),
    ))
}

/// [`tanh`] with an explicit implementation.
///
/// # Shapes
///
/// As [`tanh`].
///
/// # Panics
///
/// If `imp` is fused and the tensor is not an `f32` tensor on a plain (not autodiff) Flex
/// device.
pub fn tanh_with<const D: usize>(imp: KernelImpl, x: Tensor<D>) -> Tensor<D> {
    if imp == KernelImpl::Reference {
        return burn::tensor::activation::tanh(x);
    }
    imp.check_for_inference("tanh", &x.device(), x.dtype());
    Tensor::from_dispatch(<Dispatch as ActivationBackend>::fused_tanh(
        x.into_dispatch(),
    ))
}
