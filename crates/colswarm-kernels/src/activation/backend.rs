//! Sigmoid and tanh as a burn backend extension: the trait, the fused Flex implementation, and
//! the autodiff implementation, whose backward needs only the op's output.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, TensorData};

use super::cpu;
use crate::cpu::{Isa, output_buffer};

/// Sigmoid and tanh as backend operations (the extension behind
/// [`sigmoid`](super::sigmoid) and [`tanh`](super::tanh)).
///
/// The default bodies are the backend's own ops; [`Flex`] overrides them with vectorised
/// kernels, and `Autodiff<B, C>` with one graph node each whose backward reads the output.
#[backend_extension(Flex, Autodiff)]
pub trait ActivationBackend: Backend {
    /// `σ(x)`, element-wise.
    ///
    /// # Shapes
    ///
    /// Any; the output has `x`'s shape.
    fn fused_sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::sigmoid(x)
    }

    /// `tanh(x)`, element-wise.
    ///
    /// # Shapes
    ///
    /// Any; the output has `x`'s shape.
    fn fused_tanh(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_tanh(x)
    }
}

/// The backward kernels the autodiff implementation of [`ActivationBackend`] runs on the inner
/// backend.
pub trait ActivationTrainBackend: ActivationBackend {
    /// `grad · y · (1 − y)`: the sigmoid's input gradient from its output `y`.
    fn fused_sigmoid_backward(y: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self>;
    /// `grad · (1 − y²)`: tanh's input gradient from its output `y`.
    fn fused_tanh_backward(y: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// `kernel(out, x)` over a contiguous copy of `x`, into a new tensor of `x`'s shape.
fn unary(x: FlexTensor, kernel: fn(Isa, &mut [f32], &[f32])) -> FlexTensor {
    assert_eq!(x.dtype(), DType::F32, "fused activations need f32 tensors");
    let x = x.to_contiguous();
    let input = x.as_slice::<f32>().expect("made contiguous f32 above");
    let mut out = output_buffer(input.len());
    kernel(Isa::detect(), &mut out, input);
    FlexTensor::from_data(TensorData::new(out, x.shape()))
}

/// `kernel(out, y, grad)` over contiguous copies, into a new tensor of `y`'s shape.
fn binary(
    y: FlexTensor,
    grad: FlexTensor,
    kernel: fn(Isa, &mut [f32], &[f32], &[f32]),
) -> FlexTensor {
    let (y, grad) = (y.to_contiguous(), grad.to_contiguous());
    let (ys, gs) = (
        y.as_slice::<f32>().expect("contiguous f32"),
        grad.as_slice::<f32>().expect("contiguous f32"),
    );
    assert_eq!(
        ys.len(),
        gs.len(),
        "activation backward: output and gradient differ in size"
    );
    let mut out = output_buffer(ys.len());
    kernel(Isa::detect(), &mut out, ys, gs);
    FlexTensor::from_data(TensorData::new(out, y.shape()))
}

impl ActivationBackend for Flex {
    fn fused_sigmoid(x: FlexTensor) -> FlexTensor {
        unary(x, cpu::sigmoid_into)
    }

    fn fused_tanh(x: FlexTensor) -> FlexTensor {
        unary(x, cpu::tanh_into)
    }
}

impl ActivationTrainBackend for Flex {
    fn fused_sigmoid_backward(y: FlexTensor, grad: FlexTensor) -> FlexTensor {
        binary(y, grad, cpu::sigmoid_backward_into)
    }

    fn fused_tanh_backward(y: FlexTensor, grad: FlexTensor) -> FlexTensor {
        binary(y, grad, cpu::tanh_backward_into)
    }
}

/// Which activation a graph node belongs to.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Sigmoid,
    Tanh,
}

/// The autodiff node of one activation; its state is the op's output.
#[derive(Debug)]
struct ActivationNode(Kind);

impl<B: ActivationTrainBackend> Backward<B, 1> for ActivationNode {
    type State = FloatTensor<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let y = ops.state;
        let [parent] = ops.parents;
        if let Some(node) = parent {
            let d_x = match self.0 {
                Kind::Sigmoid => B::fused_sigmoid_backward(y, grad),
                Kind::Tanh => B::fused_tanh_backward(y, grad),
            };
            grads.register::<B>(node.id, d_x);
        }
    }
}

/// Runs `forward` on the inner backend, recording one node that keeps the output.
fn tracked<B: ActivationTrainBackend, C: CheckpointStrategy>(
    kind: Kind,
    x: FloatTensor<Autodiff<B, C>>,
    forward: fn(FloatTensor<B>) -> FloatTensor<B>,
) -> FloatTensor<Autodiff<B, C>> {
    let (x, node) = x.into_parts();
    match ActivationNode(kind)
        .prepare::<C>([node])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let y = forward(x);
            prep.finish(y.clone(), y)
        }
        OpsKind::UnTracked(prep) => prep.finish(forward(x)),
    }
}

impl<B: ActivationTrainBackend, C: CheckpointStrategy> ActivationBackend for Autodiff<B, C> {
    fn fused_sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self> {
        tracked::<B, C>(Kind::Sigmoid, x, B::fused_sigmoid)
    }

    fn fused_tanh(x: FloatTensor<Self>) -> FloatTensor<Self> {
        tracked::<B, C>(Kind::Tanh, x, B::fused_tanh)
    }
}
