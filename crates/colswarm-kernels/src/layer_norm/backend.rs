//! Layer normalisation as a burn backend extension: the trait, the fused Flex implementation,
//! and the autodiff implementation with a hand-written backward.

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

/// Layer normalisation over the last dimension as a backend operation (the extension behind
/// [`layer_norm`](super::layer_norm)).
///
/// The default body is the backend's own layer norm; [`Flex`] overrides it with the fused
/// kernel, and `Autodiff<B, C>` with one graph node whose backward runs on the inner backend.
#[backend_extension(Flex, Autodiff)]
pub trait LayerNormBackend: Backend {
    /// `(x − μ) / √(σ² + ε) ⊙ gamma + beta`, with `μ`, `σ²` over the last dimension.
    ///
    /// # Shapes
    ///
    /// `x`: `[..., d]`; `gamma`, `beta`: `[d]`; returns `x`'s shape.
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f32,
    ) -> FloatTensor<Self> {
        Self::layer_norm(x, gamma, Some(beta), f64::from(epsilon))
    }
}

/// The backward kernel the autodiff implementation of [`LayerNormBackend`] runs on the inner
/// backend.
pub trait LayerNormTrainBackend: LayerNormBackend {
    /// Gradients `[d_x, d_gamma, d_beta]` given the gradient of the output.
    fn fused_layer_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        epsilon: f32,
    ) -> [FloatTensor<Self>; 3];
}

fn f32_contiguous(x: FlexTensor) -> FlexTensor {
    assert_eq!(
        x.dtype(),
        DType::F32,
        "the fused layer norm needs f32 tensors"
    );
    x.to_contiguous()
}

fn f32s(x: &FlexTensor) -> &[f32] {
    x.as_slice::<f32>().expect("made contiguous f32 above")
}

fn flex(values: Vec<f32>, like: &FlexTensor) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, like.shape()))
}

impl LayerNormBackend for Flex {
    fn fused_layer_norm(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        epsilon: f32,
    ) -> FlexTensor {
        let (x, gamma, beta) = (
            f32_contiguous(x),
            f32_contiguous(gamma),
            f32_contiguous(beta),
        );
        let mut out = output_buffer(f32s(&x).len());
        cpu::forward(
            Isa::detect(),
            &mut out,
            f32s(&x),
            f32s(&gamma),
            f32s(&beta),
            epsilon,
        );
        flex(out, &x)
    }
}

impl LayerNormTrainBackend for Flex {
    fn fused_layer_norm_backward(
        x: FlexTensor,
        gamma: FlexTensor,
        grad: FlexTensor,
        epsilon: f32,
    ) -> [FlexTensor; 3] {
        let (x, gamma, grad) = (
            f32_contiguous(x),
            f32_contiguous(gamma),
            f32_contiguous(grad),
        );
        let d = f32s(&gamma).len();
        let mut d_x = output_buffer(f32s(&x).len());
        let (mut d_gamma, mut d_beta) = (output_buffer(d), output_buffer(d));
        cpu::backward(
            Isa::detect(),
            &mut d_x,
            &mut d_gamma,
            &mut d_beta,
            f32s(&x),
            f32s(&gamma),
            f32s(&grad),
            epsilon,
        );
        [flex(d_x, &x), flex(d_gamma, &gamma), flex(d_beta, &gamma)]
    }
}

/// The autodiff node of one layer norm.
#[derive(Debug)]
struct LayerNormNode;

impl<B: LayerNormTrainBackend> Backward<B, 3> for LayerNormNode {
    /// The input, `gamma` and `ε`.
    type State = (FloatTensor<B>, FloatTensor<B>, f32);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let (x, gamma, epsilon) = ops.state;
        let input_grads = B::fused_layer_norm_backward(x, gamma, grad, epsilon);
        for (parent, g) in ops.parents.into_iter().zip(input_grads) {
            if let Some(node) = parent {
                grads.register::<B>(node.id, g);
            }
        }
    }
}

impl<B: LayerNormTrainBackend, C: CheckpointStrategy> LayerNormBackend for Autodiff<B, C> {
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f32,
    ) -> FloatTensor<Self> {
        let (x, x_node) = x.into_parts();
        let (gamma, gamma_node) = gamma.into_parts();
        let (beta, beta_node) = beta.into_parts();
        match LayerNormNode
            .prepare::<C>([x_node, gamma_node, beta_node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::fused_layer_norm(x.clone(), gamma.clone(), beta, epsilon);
                prep.finish((x, gamma, epsilon), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fused_layer_norm(x, gamma, beta, epsilon)),
        }
    }
}
