//! The bias-free linear map `x · weight` of RWKV-7's projections, with a CPU kernel for the
//! small, skinny products of a small model.
//!
//! Implementations: the backend's matrix product (the reference, every backend) and, on Flex,
//! the kernel of `cpu.rs`, reached through the [`LinearBackend`] extension; under autodiff
//! the backward runs the backend's own products. On other backends (CubeCL) [`linear`] runs
//! the reference.
//!
//! [`linear_relu_squared`] is the channel mix's hidden layer, `relu(x · weight)²`: at
//! inference on Flex the kernel squares each element on its way out of the registers, where
//! burn's ops would make two more passes (and two more tensors) over `[rows, 4·d]`.

mod backend;
mod cpu;
#[cfg(test)]
mod tests;

pub use backend::LinearBackend;

use burn::backend::Dispatch;
use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use crate::implementation::KernelImpl;

/// `x · weight`: the kernel on Flex for `f32`, the backend's matrix product elsewhere.
/// Differentiable w.r.t. both.
///
/// # Shapes
///
/// - `x`: `[rows, d_in]`
/// - `weight`: `[d_in, d_out]` (burn's `Linear` layout)
/// - returns `[rows, d_out]`
///
/// # Panics
///
/// If the inner dimensions differ.
pub fn linear(x: Tensor<2>, weight: Tensor<2>) -> Tensor<2> {
    let imp = KernelImpl::fastest_flex_only(&x.device(), x.dtype());
    linear_with(imp, x, weight)
}

/// [`linear`] with an explicit implementation.
///
/// # Shapes
///
/// As [`linear`].
///
/// # Panics
///
/// If the inner dimensions differ, or if `imp` is fused and the tensors are not `f32`
/// tensors on a Flex device.
pub fn linear_with(imp: KernelImpl, x: Tensor<2>, weight: Tensor<2>) -> Tensor<2> {
    let ([rows, d_in], [d_in_w, d_out]) = (x.dims(), weight.dims());
    assert_eq!(
        d_in, d_in_w,
        "linear: the input is [{rows}, {d_in}] but the weight is [{d_in_w}, {d_out}]"
    );
    if imp == KernelImpl::Reference {
        return x.matmul(weight);
    }
    imp.check_flex_only("linear", &x.device(), x.dtype());
    Tensor::from_dispatch(<Dispatch as LinearBackend>::fused_linear(
        x.into_dispatch(),
        weight.into_dispatch(),
    ))
}

/// `relu(x · weight)²`: the fused kernel for `f32` on a plain Flex device; elsewhere (autodiff
/// included, so it stays differentiable) [`linear`] followed by burn's `relu` and square, the
/// same numbers to the bit.
///
/// # Shapes
///
/// - `x`: `[rows, d_in]`
/// - `weight`: `[d_in, d_out]`
/// - returns `[rows, d_out]`
///
/// # Panics
///
/// If the inner dimensions differ.
pub fn linear_relu_squared(x: Tensor<2>, weight: Tensor<2>) -> Tensor<2> {
    let imp = KernelImpl::fastest_for_inference(&x.device(), x.dtype());
    if imp == KernelImpl::Reference {
        // Training keeps its product (the linear kernel's autodiff node) and burn's ops.
        return relu(linear(x, weight)).powf_scalar(2.0);
    }
    linear_relu_squared_with(imp, x, weight)
}

/// [`linear_relu_squared`] with an explicit implementation: the reference is burn's matrix
/// product, `relu` and square.
///
/// # Shapes
///
/// As [`linear_relu_squared`].
///
/// # Panics
///
/// If the inner dimensions differ, or if `imp` is fused and the tensors are not `f32`
/// tensors on a plain (not autodiff) Flex device.
pub fn linear_relu_squared_with(imp: KernelImpl, x: Tensor<2>, weight: Tensor<2>) -> Tensor<2> {
    let ([rows, d_in], [d_in_w, d_out]) = (x.dims(), weight.dims());
    assert_eq!(
        d_in, d_in_w,
        "linear_relu_squared: the input is [{rows}, {d_in}] but the weight is [{d_in_w}, {d_out}]"
    );
    if imp == KernelImpl::Reference {
        return relu(x.matmul(weight)).powf_scalar(2.0);
    }
    imp.check_for_inference("linear_relu_squared", &x.device(), x.dtype());
    Tensor::from_dispatch(<Dispatch as LinearBackend>::fused_linear_relu_squared(
        x.into_dispatch(),
        weight.into_dispatch(),
    ))
}
