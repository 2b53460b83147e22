//! Fused state fusion as CubeCL kernels (features `wgpu` / `cuda`).
//!
//! Forward and `d_states`: one unit per element of a `[batch, heads, value·key]` block,
//! looping over the agents. `d_weights` is a reduction over a whole `value × key` block per
//! `(batch, agent, head)`: one cube per block, each unit summing a strided share of it, then
//! unit 0 adds up the units' partial sums from shared memory.

use burn::backend::TensorMetadata;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::tensor::Shape;
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use cubecl::calculate_cube_count_elemwise;
use cubecl::prelude::*;

use super::backend::{FuseStatesBackend, FuseStatesTrainBackend};
use crate::cube::output;

/// Units per cube of the element-wise kernels, and of the `d_weights` reduction (a power of two).
const UNITS: u32 = 256;

/// `fused[b, h, e] = Σ_a weights[b, a, h] · states[b, a, h, e]` over the flattened block `e`.
#[cube(launch)]
fn fuse_forward_kernel<F: Float>(
    states: &Tensor<F>,
    weights: &Tensor<F>,
    fused: &mut Tensor<F>,
    #[define(F)] _dtype: ElemType,
) {
    let agents = states.shape(1);
    let heads = states.shape(2);
    let block = states.shape(3) * states.shape(4);
    let position = ABSOLUTE_POS;
    if position >= fused.len() {
        terminate!();
    }
    let e = position % block;
    let bh = position / block;
    let batch = bh / heads;
    let head = bh % heads;
    let mut sum = F::new(0.0);
    for agent in 0..agents {
        let weight = weights[(batch * agents + agent) * heads + head];
        sum += weight * states[((batch * agents + agent) * heads + head) * block + e];
    }
    fused[position] = sum;
}

/// `d_states[b, a, h, e] = weights[b, a, h] · grad[b, h, e]`.
#[cube(launch)]
fn fuse_grad_states_kernel<F: Float>(
    weights: &Tensor<F>,
    grad: &Tensor<F>,
    d_states: &mut Tensor<F>,
    #[comptime] agents: usize,
    #[define(F)] _dtype: ElemType,
) {
    let heads = weights.shape(2);
    let block = grad.shape(2) * grad.shape(3);
    let position = ABSOLUTE_POS;
    if position >= d_states.len() {
        terminate!();
    }
    let e = position % block;
    let bah = position / block; // (batch · agents + agent) · heads + head
    let head = bah % heads;
    let batch = bah / (heads * agents);
    d_states[position] = weights[bah] * grad[(batch * heads + head) * block + e];
}

/// `d_weights[b, a, h] = Σ_e states[b, a, h, e] · grad[b, h, e]`: cube `bah`, `units` units.
#[cube(launch)]
fn fuse_grad_weights_kernel<F: Float>(
    states: &Tensor<F>,
    grad: &Tensor<F>,
    d_weights: &mut Tensor<F>,
    #[comptime] units: usize,
    #[define(F)] _dtype: ElemType,
) {
    let agents = states.shape(1);
    let heads = states.shape(2);
    let block = states.shape(3) * states.shape(4);
    let bah = CUBE_POS_X as usize;
    let unit = UNIT_POS_X as usize;
    let head = bah % heads;
    let batch = bah / (heads * agents);
    let states_at = bah * block;
    let grad_at = (batch * heads + head) * block;

    let mut partial = F::new(0.0);
    let mut e = unit;
    while e < block {
        partial += states[states_at + e] * grad[grad_at + e];
        e += units;
    }
    let mut sums = Shared::<[F]>::new_slice(units);
    sums[unit] = partial;
    sync_cube();
    // `units` partial sums: unit 0 adds them up (a tree of barriers in a loop does not pass
    // SPIR-V validation on lavapipe, and this is not where the time goes).
    if unit == 0 {
        let mut total = F::new(0.0);
        for other in 0..units {
            total += sums[other];
        }
        d_weights[bah] = total;
    }
}

/// Cube count and dimension covering `units` units (`ABSOLUTE_POS` is linear over the grid).
fn elementwise_launch(like: &CubeTensor, units: usize) -> (CubeCount, CubeDim) {
    let dim = CubeDim::new_1d(UNITS);
    (calculate_cube_count_elemwise(&like.client, units, dim), dim)
}

impl FuseStatesBackend for CubeBackend {
    fn fuse_states(states: CubeTensor, weights: CubeTensor, _parallel: bool) -> CubeTensor {
        let [states, weights] = [states, weights].map(into_contiguous);
        let [batch, _, heads, value, key] = super::dims5(&states.shape());
        let fused = output(&states, Shape::new([batch, heads, value, key]));
        let len = fused.shape().num_elements();
        if len == 0 {
            return fused;
        }
        let (count, dim) = elementwise_launch(&fused, len);
        let dtype = dtype_to_storage_type(states.dtype);
        let client = states.client.clone();
        fuse_forward_kernel::launch(
            &client,
            count,
            dim,
            states.into_tensor_arg(),
            weights.into_tensor_arg(),
            fused.clone().into_tensor_arg(),
            dtype,
        );
        fused
    }
}

impl FuseStatesTrainBackend for CubeBackend {
    fn fuse_states_backward(
        states: CubeTensor,
        weights: CubeTensor,
        grad: CubeTensor,
        _parallel: bool,
    ) -> [CubeTensor; 2] {
        let [states, weights, grad] = [states, weights, grad].map(into_contiguous);
        let shape = states.shape();
        let [batch, agents, heads, _, _] = super::dims5(&shape);
        let d_states = output(&states, shape.clone());
        let d_weights = output(&states, Shape::new([batch, agents, heads]));
        if shape.num_elements() == 0 {
            return [d_states, d_weights];
        }
        let dtype = dtype_to_storage_type(states.dtype);
        let client = states.client.clone();
        let (count, dim) = elementwise_launch(&states, shape.num_elements());
        fuse_grad_states_kernel::launch(
            &client,
            count,
            dim,
            weights.into_tensor_arg(),
            grad.clone().into_tensor_arg(),
            d_states.clone().into_tensor_arg(),
            agents,
            dtype,
        );
        let blocks = (batch * agents * heads) as u32;
        assert!(
            blocks <= u16::MAX as u32,
            "fused fuse_states: batch·agents·heads = {blocks} exceeds 65535 cubes"
        );
        fuse_grad_weights_kernel::launch(
            &client,
            CubeCount::Static(blocks, 1, 1),
            CubeDim::new_1d(UNITS),
            states.into_tensor_arg(),
            grad.into_tensor_arg(),
            d_weights.clone().into_tensor_arg(),
            UNITS as usize,
            dtype,
        );
        [d_states, d_weights]
    }
}
