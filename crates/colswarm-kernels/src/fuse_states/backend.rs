//! State fusion as a burn backend extension: the trait, the fused Flex implementation, and
//! the autodiff implementation with a hand-written backward.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Shape, TensorData};

use super::cpu::{self, Dims};

/// State fusion as a backend operation (the extension behind [`fuse_states`](super::fuse_states)).
///
/// The default body is the reference in primitive ops; [`Flex`] overrides it with the fused
/// CPU kernel, burn's CubeCL backend (features `wgpu`, `cuda`) with CubeCL kernels, and
/// `Autodiff<B, C>` with a custom backward for any `B` that implements
/// [`FuseStatesTrainBackend`].
#[backend_extension(Flex, Autodiff, Cube: cfg(feature = "cube"))]
pub trait FuseStatesBackend: Backend {
    /// `Σ_agents weights · states`; `parallel` lets an implementation use several threads.
    ///
    /// # Shapes
    ///
    /// As [`fuse_states`](super::fuse_states): `states` `[batch, agents, heads, value, key]`,
    /// `weights` `[batch, agents, heads]`; returns `[batch, heads, value, key]`.
    fn fuse_states(
        states: FloatTensor<Self>,
        weights: FloatTensor<Self>,
        parallel: bool,
    ) -> FloatTensor<Self> {
        let _ = parallel;
        super::fuse_states_ops::<Self>(states, weights)
    }
}

/// The backward kernel the autodiff implementation of [`FuseStatesBackend`] runs on the inner
/// backend.
pub trait FuseStatesTrainBackend: FuseStatesBackend {
    /// Gradients `[d_states, d_weights]` given the gradient of the fused states.
    fn fuse_states_backward(
        states: FloatTensor<Self>,
        weights: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        parallel: bool,
    ) -> [FloatTensor<Self>; 2];
}

fn contiguous(x: FlexTensor) -> FlexTensor {
    assert_eq!(x.dtype(), DType::F32, "fused fuse_states needs f32 tensors");
    x.to_contiguous()
}

fn f32s(x: &FlexTensor) -> &[f32] {
    x.as_slice::<f32>()
        .expect("fused fuse_states: tensor made contiguous f32 above")
}

fn flex(values: Vec<f32>, shape: impl Into<Shape>) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, shape.into()))
}

fn dims_of(states: &FlexTensor) -> (Dims, [usize; 5]) {
    let shape = super::dims5(&states.shape());
    let [batch, agents, heads, value, key] = shape;
    let dims = Dims {
        batch,
        agents,
        heads,
        block: value * key,
    };
    (dims, shape)
}

impl FuseStatesBackend for Flex {
    fn fuse_states(states: FlexTensor, weights: FlexTensor, parallel: bool) -> FlexTensor {
        let (states, weights) = (contiguous(states), contiguous(weights));
        let (d, [batch, _, heads, value, key]) = dims_of(&states);
        let fused = cpu::forward(d, f32s(&states), f32s(&weights), parallel);
        flex(fused, [batch, heads, value, key])
    }
}

impl FuseStatesTrainBackend for Flex {
    fn fuse_states_backward(
        states: FlexTensor,
        weights: FlexTensor,
        grad: FlexTensor,
        parallel: bool,
    ) -> [FlexTensor; 2] {
        let (states, weights, grad) = (contiguous(states), contiguous(weights), contiguous(grad));
        let (d, shape) = dims_of(&states);
        let (d_states, d_weights) =
            cpu::backward(d, f32s(&states), f32s(&weights), f32s(&grad), parallel);
        [
            flex(d_states, shape),
            flex(d_weights, [d.batch, d.agents, d.heads]),
        ]
    }
}

/// The autodiff node of one state fusion.
#[derive(Debug)]
struct FuseStatesNode;

impl<B: FuseStatesTrainBackend> Backward<B, 2> for FuseStatesNode {
    /// The two inputs, and whether to run in parallel.
    type State = ([FloatTensor<B>; 2], bool);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let ([states, weights], parallel) = ops.state;
        let input_grads = B::fuse_states_backward(states, weights, grad, parallel);
        for (parent, g) in ops.parents.into_iter().zip(input_grads) {
            if let Some(node) = parent {
                grads.register::<B>(node.id, g);
            }
        }
    }
}

impl<B: FuseStatesTrainBackend, C: CheckpointStrategy> FuseStatesBackend for Autodiff<B, C> {
    fn fuse_states(
        states: FloatTensor<Self>,
        weights: FloatTensor<Self>,
        parallel: bool,
    ) -> FloatTensor<Self> {
        let (states, states_node) = states.into_parts();
        let (weights, weights_node) = weights.into_parts();
        match FuseStatesNode
            .prepare::<C>([states_node, weights_node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let fused = B::fuse_states(states.clone(), weights.clone(), parallel);
                prep.finish(([states, weights], parallel), fused)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fuse_states(states, weights, parallel)),
        }
    }
}
