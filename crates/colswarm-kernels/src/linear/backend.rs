//! The bias-free linear map as a burn backend extension: the trait, the Flex kernel, and the
//! autodiff implementation, whose backward uses the backend's own matrix products.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Shape, TensorData};

use super::cpu::{self, BiasSigmoid, Dims, Epilogue, Plain, ReluSquared, Sigmoid, Tanh};
use crate::cpu::{Isa, unfilled_buffer, written};

/// `x · weight` as a backend operation (the extension behind [`linear`](super::linear)).
///
/// The default body is the backend's matrix product; [`Flex`] overrides it with the kernel of
/// `cpu.rs`, and `Autodiff<B, C>` with one graph node whose backward takes the products
/// `grad · weightᵀ` and `xᵀ · grad` on the inner backend.
#[backend_extension(Flex, Autodiff)]
pub trait LinearBackend: Backend {
    /// `x · weight`.
    ///
    /// # Shapes
    ///
    /// `x`: `[rows, d_in]`; `weight`: `[d_in, d_out]`; returns `[rows, d_out]`.
    fn fused_linear(x: FloatTensor<Self>, weight: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_matmul(x, weight)
    }

    /// `relu(x · weight)²` ([`Then::ReluSquared`](super::Then)). The default bodies here are
    /// burn's ops; the entry point runs colswarm's activations under autodiff instead.
    ///
    /// # Shapes
    ///
    /// `x`: `[rows, d_in]`; `weight`: `[d_in, d_out]`; returns `[rows, d_out]` (all four).
    fn fused_linear_relu_squared(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let hidden = Self::relu(Self::float_matmul(x, weight));
        Self::float_mul(hidden.clone(), hidden)
    }

    /// `tanh(x · weight)`.
    fn fused_linear_tanh(x: FloatTensor<Self>, weight: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_tanh(Self::float_matmul(x, weight))
    }

    /// `σ(x · weight)`.
    fn fused_linear_sigmoid(x: FloatTensor<Self>, weight: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::sigmoid(Self::float_matmul(x, weight))
    }

    /// `σ(x · weight + bias) · scale`, `bias` `[d_out]`.
    fn fused_linear_bias_sigmoid(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        scale: f32,
    ) -> FloatTensor<Self> {
        let c = Self::float_matmul(x, weight);
        let bias = Self::float_reshape(bias.clone(), Shape::new([1, bias.shape()[0]]));
        let y = Self::sigmoid(Self::float_add(c, bias));
        Self::float_mul_scalar(y, scale.into())
    }
}

fn f32_contiguous(x: FlexTensor) -> FlexTensor {
    assert_eq!(
        x.dtype(),
        DType::F32,
        "the fused linear map needs f32 tensors"
    );
    // A contiguous view into a larger buffer (one of `token_shift_mix`'s mixes) is read in
    // place: `as_slice` resolves its offset, where `to_contiguous` would copy it.
    if x.is_contiguous() {
        x
    } else {
        x.to_contiguous()
    }
}

impl LinearBackend for Flex {
    fn fused_linear(x: FlexTensor, weight: FlexTensor) -> FlexTensor {
        flex_product(x, weight, &Plain)
    }

    fn fused_linear_relu_squared(x: FlexTensor, weight: FlexTensor) -> FlexTensor {
        flex_product(x, weight, &ReluSquared)
    }

    fn fused_linear_tanh(x: FlexTensor, weight: FlexTensor) -> FlexTensor {
        flex_product(x, weight, &Tanh)
    }

    fn fused_linear_sigmoid(x: FlexTensor, weight: FlexTensor) -> FlexTensor {
        flex_product(x, weight, &Sigmoid)
    }

    fn fused_linear_bias_sigmoid(
        x: FlexTensor,
        weight: FlexTensor,
        bias: FlexTensor,
        scale: f32,
    ) -> FlexTensor {
        let bias = f32_contiguous(bias);
        let bias = bias.as_slice::<f32>().expect("contiguous f32");
        flex_product(x, weight, &BiasSigmoid { bias, scale })
    }
}

/// `x · weight`, each element through `epilogue` on its way out.
fn flex_product<E: Epilogue>(x: FlexTensor, weight: FlexTensor, epilogue: &E) -> FlexTensor {
    let (x, weight) = (f32_contiguous(x), f32_contiguous(weight));
    let (&[m, k], &[k_w, n]) = (x.shape().as_slice(), weight.shape().as_slice()) else {
        panic!(
            "linear: expected two matrices, got {:?} and {:?}",
            x.shape(),
            weight.shape()
        );
    };
    assert_eq!(
        k, k_w,
        "linear: x is [{m}, {k}] but the weight is [{k_w}, {n}]"
    );
    let mut out = unfilled_buffer(m * n);
    let (xs, ws) = (x.as_slice::<f32>(), weight.as_slice::<f32>());
    let (xs, ws) = (xs.expect("contiguous f32"), ws.expect("contiguous f32"));
    if let Some(width) = epilogue.width() {
        assert_eq!(
            width, n,
            "linear: the bias is [{width}] but the product [{m}, {n}]"
        );
    }
    cpu::matmul(Isa::detect(), &mut out, xs, ws, Dims { m, k, n }, epilogue);
    // SAFETY: the kernel writes every element of `c` (its tiles, row tails and column
    // tails cover `[m, n]`; the parity tests check it on NaN-filled buffers).
    let out = unsafe { written(out) };
    FlexTensor::from_data(TensorData::new(out, Shape::new([m, n])))
}

/// The autodiff node of one linear map.
#[derive(Debug)]
struct LinearNode;

impl<B: LinearBackend> Backward<B, 2> for LinearNode {
    /// The input and the weight.
    type State = (FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let (x, weight) = ops.state;
        let [x_node, weight_node] = ops.parents;
        if let Some(node) = x_node {
            let d_x = B::float_matmul(grad.clone(), B::float_transpose(weight));
            grads.register::<B>(node.id, d_x);
        }
        if let Some(node) = weight_node {
            let d_weight = B::float_matmul(B::float_transpose(x), grad);
            grads.register::<B>(node.id, d_weight);
        }
    }
}

impl<B: LinearBackend, C: CheckpointStrategy> LinearBackend for Autodiff<B, C> {
    fn fused_linear(x: FloatTensor<Self>, weight: FloatTensor<Self>) -> FloatTensor<Self> {
        let (x, x_node) = x.into_parts();
        let (weight, weight_node) = weight.into_parts();
        match LinearNode
            .prepare::<C>([x_node, weight_node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::fused_linear(x.clone(), weight.clone());
                prep.finish((x, weight), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fused_linear(x, weight)),
        }
    }
}
