//! The bias-free linear map `x · weight` of RWKV-7's projections, with a CPU kernel for the
//! small, skinny products of a small model.
//!
//! Implementations: the backend's matrix product (the reference, every backend) and, on Flex,
//! the kernel of `cpu.rs`, reached through the [`LinearBackend`] extension; under autodiff
//! the backward runs the backend's own products. On other backends (CubeCL) [`linear`] runs
//! the reference.
//!
//! [`linear_then`] applies an element-wise function to the product as the kernel writes it
//! (the channel mix's `relu(·)²`, the LoRAs' `tanh` and sigmoids, with a bias and a scale),
//! where separate ops would make more passes, and tensors, over it; at inference on Flex
//! only, with the same numbers as the separate ops.

mod backend;
mod cpu;
#[cfg(test)]
mod tests;

pub use backend::LinearBackend;

use burn::backend::Dispatch;
use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use crate::activation::{sigmoid, tanh};
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

/// What [`linear_then`] does to each element of the product `c = x · weight` on its way out
/// of the kernel's registers.
#[derive(Clone, Debug)]
// A `Then` lives for one call; boxing the bias would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Then {
    /// `relu(c)²`: the channel mix's hidden layer.
    ReluSquared,
    /// `tanh(c)` ([`crate::tanh`]): the decay's LoRA.
    Tanh,
    /// `σ(c)` ([`crate::sigmoid`]): the output gate's LoRA.
    Sigmoid,
    /// `σ(c + bias) · scale`, `bias` `[d_out]`: the in-context rate, the value residual's gate,
    /// and the decay (`scale` 1 leaves the product out).
    BiasSigmoid {
        /// Added to every row, `[d_out]`.
        bias: Tensor<1>,
        /// The factor after the sigmoid.
        scale: f32,
    },
}

impl Then {
    /// The same arithmetic in separate ops on `c`: [`crate::sigmoid`], [`crate::tanh`] and
    /// burn's `relu`, sums and products, in the fused kernel's order.
    fn apply(self, c: Tensor<2>) -> Tensor<2> {
        match self {
            Then::ReluSquared => relu(c).powf_scalar(2.0),
            Then::Tanh => tanh(c),
            Then::Sigmoid => sigmoid(c),
            Then::BiasSigmoid { bias, scale } => {
                let y = sigmoid(c + bias.unsqueeze());
                if scale == 1.0 { y } else { y * scale }
            }
        }
    }
}

/// `then(x · weight)`, element by element ([`Then`]): one pass of the fused kernel for `f32`
/// on a plain Flex device, where the separate ops would make one to three more passes (and
/// tensors) over the product; elsewhere (autodiff included, so it stays differentiable)
/// [`linear`] and then those ops, the same numbers to the bit.
///
/// # Shapes
///
/// - `x`: `[rows, d_in]`
/// - `weight`: `[d_in, d_out]`
/// - returns `[rows, d_out]`
///
/// # Panics
///
/// If the inner dimensions differ, or a bias is not `[d_out]`.
pub fn linear_then(x: Tensor<2>, weight: Tensor<2>, then: Then) -> Tensor<2> {
    let imp = KernelImpl::fastest_for_inference(&x.device(), x.dtype());
    if imp == KernelImpl::Reference {
        // Training keeps its product (the linear kernel's autodiff node) and the separate ops.
        check_then(&x, &weight, &then);
        return then.apply(linear(x, weight));
    }
    linear_then_with(imp, x, weight, then)
}

/// [`linear_then`] with an explicit implementation: the reference is burn's matrix product,
/// then [`Then`]'s separate ops.
///
/// # Shapes
///
/// As [`linear_then`].
///
/// # Panics
///
/// As [`linear_then`], and if `imp` is fused and the tensors are not `f32` tensors on a plain
/// (not autodiff) Flex device.
pub fn linear_then_with(imp: KernelImpl, x: Tensor<2>, weight: Tensor<2>, then: Then) -> Tensor<2> {
    check_then(&x, &weight, &then);
    if imp == KernelImpl::Reference {
        return then.apply(x.matmul(weight));
    }
    imp.check_for_inference("linear_then", &x.device(), x.dtype());
    let (x, weight) = (x.into_dispatch(), weight.into_dispatch());
    Tensor::from_dispatch(match then {
        Then::ReluSquared => <Dispatch as LinearBackend>::fused_linear_relu_squared(x, weight),
        Then::Tanh => <Dispatch as LinearBackend>::fused_linear_tanh(x, weight),
        Then::Sigmoid => <Dispatch as LinearBackend>::fused_linear_sigmoid(x, weight),
        Then::BiasSigmoid { bias, scale } => {
            <Dispatch as LinearBackend>::fused_linear_bias_sigmoid(
                x,
                weight,
                bias.into_dispatch(),
                scale,
            )
        }
    })
}

fn check_then(x: &Tensor<2>, weight: &Tensor<2>, then: &Then) {
    let ([rows, d_in], [d_in_w, d_out]) = (x.dims(), weight.dims());
    assert_eq!(
        d_in, d_in_w,
        "linear_then: the input is [{rows}, {d_in}] but the weight is [{d_in_w}, {d_out}]"
    );
    if let Then::BiasSigmoid { bias, .. } = then {
        assert_eq!(
            bias.dims(),
            [d_out],
            "linear_then: the bias is {:?}, not [{d_out}]",
            bias.dims()
        );
    }
}
