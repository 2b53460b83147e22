//! State fusion: a weighted sum of per-head WKV states over agents.
//!
//! `fused[b, h] = Σ_a weights[b, a, h] · states[b, a, h]`, with the weights already masked
//! and normalised by the caller (e.g. a softmax over agents with absent agents at zero).
//! Because the WKV update is affine in the state, a convex combination of states commutes with
//! later steps of the same model (docs/RWKV7.md §10).
//!
//! Implementations: [`fuse_states_reference`] (tensor ops, every backend), a fused CPU kernel
//! for Flex and, with the `wgpu` or `cuda` feature, CubeCL kernels, through the
//! [`FuseStatesBackend`] extension, each with its own backward.

mod backend;
mod cpu;
#[cfg(feature = "cube")]
mod cube;

pub use backend::{FuseStatesBackend, FuseStatesTrainBackend};

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, TensorMetadata};
use burn::tensor::{Shape, Tensor};

use crate::implementation::KernelImpl;

/// Fuses per-agent states: `Σ_agents weights · states`.
///
/// Uses the fastest implementation for the tensors' device and dtype
/// ([`KernelImpl::fastest`]). Differentiable w.r.t. `states` and `weights`.
///
/// # Shapes
///
/// - `states`: `[batch, agents, heads, value, key]`
/// - `weights`: `[batch, agents, heads]`
/// - returns `[batch, heads, value, key]`
///
/// # Panics
///
/// If the shapes do not match the above.
pub fn fuse_states(states: Tensor<5>, weights: Tensor<3>) -> Tensor<4> {
    let imp = KernelImpl::fastest(&states.device(), states.dtype());
    fuse_states_with(imp, states, weights)
}

/// [`fuse_states`] with an explicit implementation.
///
/// # Shapes
///
/// As [`fuse_states`].
///
/// # Panics
///
/// If the shapes do not match, or if `imp` is not available for the tensors' device and dtype
/// (see [`KernelImpl::is_available`]).
pub fn fuse_states_with(imp: KernelImpl, states: Tensor<5>, weights: Tensor<3>) -> Tensor<4> {
    check_shapes(&states, &weights);
    if imp == KernelImpl::Reference {
        return fuse_states_reference(states, weights);
    }
    let (device, dtype) = (states.device(), states.dtype());
    assert!(
        imp.is_available(&device, dtype),
        "fuse_states: {imp:?} is not available for {dtype:?} tensors on {device:?}"
    );
    Tensor::from_dispatch(<Dispatch as FuseStatesBackend>::fuse_states(
        states.into_dispatch(),
        weights.into_dispatch(),
        imp.parallel(),
    ))
}

/// Reference state fusion with burn tensor ops: broadcast multiply, then sum over agents.
///
/// # Shapes
///
/// As [`fuse_states`].
///
/// # Panics
///
/// If the shapes do not match.
pub fn fuse_states_reference(states: Tensor<5>, weights: Tensor<3>) -> Tensor<4> {
    check_shapes(&states, &weights);
    Tensor::from_dispatch(fuse_states_ops::<Dispatch>(
        states.into_dispatch(),
        weights.into_dispatch(),
    ))
}

/// The reference on backend `B`'s primitives.
pub(crate) fn fuse_states_ops<B: Backend>(
    states: FloatTensor<B>,
    weights: FloatTensor<B>,
) -> FloatTensor<B> {
    let [batch, agents, heads, value, key] = dims5(&states.shape());
    let weights = B::float_reshape(weights, Shape::new([batch, agents, heads, 1, 1]));
    let summed = B::float_sum_dim(B::float_mul(states, weights), 1); // [B, 1, H, V, K]
    B::float_reshape(summed, Shape::new([batch, heads, value, key]))
}

/// `[d0, …, d4]` of a rank-5 shape.
fn dims5(shape: &Shape) -> [usize; 5] {
    match shape.as_slice() {
        &[d0, d1, d2, d3, d4] => [d0, d1, d2, d3, d4],
        dims => panic!("fuse_states: expected a rank-5 tensor, got shape {dims:?}"),
    }
}

fn check_shapes(states: &Tensor<5>, weights: &Tensor<3>) {
    let [batch, agents, heads, _, _] = states.dims();
    assert_eq!(
        weights.dims(),
        [batch, agents, heads],
        "fuse_states: `weights` must be [batch, agents, heads] for states of shape {:?}",
        states.dims()
    );
}

#[cfg(test)]
mod tests;
