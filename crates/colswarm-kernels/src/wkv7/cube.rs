//! Fused WKV-7 forward and backward as CubeCL kernels, for every CubeCL runtime burn builds
//! (wgpu/Vulkan/Metal with the `wgpu` feature, CUDA with `cuda`).
//!
//! # Layout of the work
//!
//! One cube (workgroup / thread block) per `(batch, head)` chain and one unit (thread) per
//! **value row** `i` of the chain's `N × N` state: row `i` stays in registers for the whole
//! sequence. Per step, the key-indexed vectors of the step (`r`, `w = exp(log_w)`, `k`, `a`,
//! `b`) are staged once in shared memory, and each unit updates its row without talking to
//! the others: in the forward, the rows of the recurrence are independent
//! (`u_i = S_i · a`, `S_i ← S_i ⊙ w + u_i · b + v_i · k`, `y_i = S_i · r`).
//!
//! # Backward
//!
//! Gradients of the key-indexed inputs are sums over the rows (`dk_j = Σ_i v_i · dS_ij`),
//! so each unit also carries **column** `i` of the state and of its gradient, as the official
//! RWKV-7 CUDA kernel does: unit `i` computes the row-indexed gradient `dv_i` from its row
//! and the key-indexed ones (`dr_i`, `dw_i`, `dk_i`, `da_i`, `db_i`) from its column, with
//! only vectors passing through shared memory. The states come from the same
//! checkpoint-and-recompute scheme as the CPU kernel (`cpu.rs`): the training forward stores
//! the state at the start of every chunk of 16 steps; the backward walks the chunks from last
//! to first, recomputes each chunk's states from its checkpoint into a per-unit scratch
//! buffer in global memory (each unit reads back only what it wrote), then runs the reverse
//! recurrence through the chunk.
//!
//! All inner loops run over the head size, a compile-time constant, and are unrolled (in the
//! backward, up to `N = 64`): the state rows live in registers, and Mesa's lavapipe (the
//! software Vulkan driver CI tests on) caps a shader's loop iterations at about 65 k, which
//! then only the time loop counts toward. Beyond `N = 64` the backward's loops stay loops, and
//! on lavapipe `T · N` must then stay below that cap.

use burn::backend::TensorMetadata;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::ops::FloatTensorOps;
use burn::tensor::{Shape, Slice};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::backend::{Wkv7Backend, Wkv7TrainBackend};
use super::cpu::{CHECKPOINT_INTERVAL, Dims};
use crate::cube::output;

/// Largest head size whose backward loops are unrolled. Beyond it the unrolled shader is large
/// enough that Mesa's lavapipe takes minutes to compile it (N = 128: ~10 min), and the state
/// rows no longer fit in registers on a GPU anyway.
const UNROLL_MAX: usize = 64;

// Offsets of the vectors staged in shared memory, in units of the head size `n`.
const R: usize = 0;
const W: usize = 1;
const K: usize = 2;
const A: usize = 3;
const B: usize = 4;
const V: usize = 5;
const U: usize = 6;
const DY: usize = 7;
const G: usize = 8;

/// Offset of the vector `[batch, t, head, ..]` in a contiguous `[batch, time, heads, n]` tensor.
#[cube]
fn seq_offset(batch: usize, t: usize, head: usize, time: usize, heads: usize, n: usize) -> usize {
    ((batch * time + t) * heads + head) * n
}

/// Forward over the whole sequence. Writes `y` then the final state into `out`
/// (`[batch·time·heads·n + batch·heads·n·n]`), and, if `save_checkpoints`, the state at the
/// start of every chunk of `chunk` steps into `checkpoints` (`[batch, heads, chunks, n, n]`).
///
/// Cube `(head, batch)`, unit `i` = value row `i`.
// Kernel code is CubeCL's DSL: `div_ceil` is not in it, and a comptime flag gets its own `if`
// (folded at expansion) rather than sharing one with a runtime condition.
#[allow(
    clippy::too_many_arguments,
    clippy::manual_div_ceil,
    clippy::collapsible_if
)]
#[cube(launch)]
fn wkv7_forward_kernel<F: Float>(
    r: &Tensor<F>,
    log_w: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    a: &Tensor<F>,
    b: &Tensor<F>,
    state: &Tensor<F>,
    out: &mut Tensor<F>,
    checkpoints: &mut Tensor<F>,
    #[comptime] n: usize,
    #[comptime] chunk: usize,
    #[comptime] save_checkpoints: bool,
    #[define(F)] _dtype: ElemType,
) {
    let head = CUBE_POS_X as usize;
    let batch = CUBE_POS_Y as usize;
    let i = UNIT_POS_X as usize;
    let time = r.shape(1);
    let heads = r.shape(2);
    let chain = batch * heads + head;
    let row = (chain * n + i) * n;
    let chunks = (time + chunk - 1) / chunk;

    let mut s = Array::<F>::new(n);
    #[unroll]
    for j in 0..n {
        s[j] = state[row + j];
    }
    let mut staged = Shared::<[F]>::new_slice(5 * n);

    for t in 0..time {
        let o = seq_offset(batch, t, head, time, heads, n);
        if save_checkpoints {
            if t % chunk == 0 {
                let at = ((chain * chunks + t / chunk) * n + i) * n;
                #[unroll]
                for j in 0..n {
                    checkpoints[at + j] = s[j];
                }
            }
        }
        staged[R * n + i] = r[o + i];
        staged[W * n + i] = F::exp(log_w[o + i]);
        staged[K * n + i] = k[o + i];
        staged[A * n + i] = a[o + i];
        staged[B * n + i] = b[o + i];
        sync_cube();

        let v_i = v[o + i];
        let mut u_i = F::new(0.0);
        #[unroll]
        for j in 0..n {
            u_i += s[j] * staged[A * n + j];
        }
        let mut y_i = F::new(0.0);
        #[unroll]
        for j in 0..n {
            let next = s[j] * staged[W * n + j] + u_i * staged[B * n + j] + v_i * staged[K * n + j];
            s[j] = next;
            y_i += next * staged[R * n + j];
        }
        out[o + i] = y_i;
        // Nobody may overwrite the staged vectors before every unit has read them.
        sync_cube();
    }

    let final_state = r.shape(0) * time * heads * n + row;
    #[unroll]
    for j in 0..n {
        out[final_state + j] = s[j];
    }
}

/// Backward: from the inputs, the checkpoints of the training forward and the packed
/// gradient `grad` (`dy` then the final state's gradient), writes the packed gradients
/// `dr, dlog_w, dk, dv, da, db` (each `[batch, time, heads, n]`) then `dstate` into `grads`.
///
/// `scratch` holds, per unit, `chunk + 1` slots of `2n + 1` floats: row `i` and column `i`
/// of the state before each step of the current chunk (and after its last), and that step's
/// `u_i`. Cube `(head, batch)`, unit `i`.
#[allow(clippy::too_many_arguments, clippy::manual_div_ceil)] // as the forward
#[cube(launch)]
fn wkv7_backward_kernel<F: Float>(
    r: &Tensor<F>,
    log_w: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    a: &Tensor<F>,
    b: &Tensor<F>,
    checkpoints: &Tensor<F>,
    grad: &Tensor<F>,
    grads: &mut Tensor<F>,
    scratch: &mut Tensor<F>,
    #[comptime] n: usize,
    #[comptime] chunk: usize,
    #[define(F)] _dtype: ElemType,
) {
    let head = CUBE_POS_X as usize;
    let batch = CUBE_POS_Y as usize;
    let i = UNIT_POS_X as usize;
    let time = r.shape(1);
    let heads = r.shape(2);
    let chain = batch * heads + head;
    let chain_base = chain * n * n;
    let seq_len = r.shape(0) * time * heads * n;
    let chunks = (time + chunk - 1) / chunk;
    let slot_len = 2 * n + 1;
    let scratch_base = (chain * n + i) * (chunk + 1) * slot_len;

    // Gradient w.r.t. the current state, row i and column i: first the final state's.
    let mut ds_row = Array::<F>::new(n);
    let mut ds_col = Array::<F>::new(n);
    #[unroll(n <= UNROLL_MAX)]
    for j in 0..n {
        ds_row[j] = grad[seq_len + chain_base + i * n + j];
        ds_col[j] = grad[seq_len + chain_base + j * n + i];
    }
    let mut s_row = Array::<F>::new(n);
    let mut s_col = Array::<F>::new(n);
    let mut staged = Shared::<[F]>::new_slice(9 * n);

    for c in 0..chunks {
        let chunk_index = chunks - 1 - c;
        let t0 = chunk_index * chunk;
        let mut len = time - t0;
        if len > chunk {
            len = chunk;
        }

        // Recompute the chunk's states from its checkpoint.
        let checkpoint = ((chain * chunks + chunk_index) * n) * n;
        #[unroll(n <= UNROLL_MAX)]
        for j in 0..n {
            s_row[j] = checkpoints[checkpoint + i * n + j];
            s_col[j] = checkpoints[checkpoint + j * n + i];
        }
        for step in 0..len {
            let o = seq_offset(batch, t0 + step, head, time, heads, n);
            let slot = scratch_base + step * slot_len;
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                scratch[slot + j] = s_row[j];
                scratch[slot + n + j] = s_col[j];
            }
            staged[W * n + i] = F::exp(log_w[o + i]);
            staged[K * n + i] = k[o + i];
            staged[A * n + i] = a[o + i];
            staged[B * n + i] = b[o + i];
            staged[V * n + i] = v[o + i];
            sync_cube();

            let mut u_i = F::new(0.0);
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                u_i += s_row[j] * staged[A * n + j];
            }
            scratch[slot + 2 * n] = u_i;
            staged[U * n + i] = u_i;
            sync_cube();

            let v_i = staged[V * n + i];
            let w_i = staged[W * n + i];
            let k_i = staged[K * n + i];
            let b_i = staged[B * n + i];
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                s_row[j] = s_row[j] * staged[W * n + j]
                    + u_i * staged[B * n + j]
                    + v_i * staged[K * n + j];
                s_col[j] = s_col[j] * w_i + staged[U * n + j] * b_i + staged[V * n + j] * k_i;
            }
            sync_cube();
        }
        let last = scratch_base + len * slot_len;
        #[unroll(n <= UNROLL_MAX)]
        for j in 0..n {
            scratch[last + j] = s_row[j];
            scratch[last + n + j] = s_col[j];
        }

        // The reverse recurrence through the chunk.
        for back in 0..len {
            let step = len - 1 - back;
            let o = seq_offset(batch, t0 + step, head, time, heads, n);
            // Slot `step` holds the state before the step (P), slot `step + 1` the one after (S).
            let before = scratch_base + step * slot_len;
            let after = before + slot_len;
            staged[R * n + i] = r[o + i];
            staged[W * n + i] = F::exp(log_w[o + i]);
            staged[K * n + i] = k[o + i];
            staged[A * n + i] = a[o + i];
            staged[B * n + i] = b[o + i];
            staged[V * n + i] = v[o + i];
            staged[U * n + i] = scratch[before + 2 * n];
            staged[DY * n + i] = grad[o + i];
            sync_cube();

            let r_i = staged[R * n + i];
            let w_i = staged[W * n + i];
            let a_i = staged[A * n + i];
            let dy_i = staged[DY * n + i];
            // dS += dy · rᵀ, then the gradients that read dS_t.
            let mut dr = F::new(0.0);
            let mut dv = F::new(0.0);
            let mut dk = F::new(0.0);
            let mut db = F::new(0.0);
            let mut dw = F::new(0.0);
            let mut du_i = F::new(0.0);
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                ds_row[j] += dy_i * staged[R * n + j];
                ds_col[j] += staged[DY * n + j] * r_i;
                dr += scratch[after + n + j] * staged[DY * n + j];
                dv += ds_row[j] * staged[K * n + j];
                du_i += ds_row[j] * staged[B * n + j];
                dk += ds_col[j] * staged[V * n + j];
                db += ds_col[j] * staged[U * n + j];
                dw += ds_col[j] * scratch[before + n + j];
            }
            staged[G * n + i] = du_i;
            sync_cube();

            // da needs every row's du; then dS becomes the gradient w.r.t. S_{t-1}.
            let mut da = F::new(0.0);
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                da += scratch[before + n + j] * staged[G * n + j];
                ds_row[j] = ds_row[j] * staged[W * n + j] + du_i * staged[A * n + j];
                ds_col[j] = ds_col[j] * w_i + staged[G * n + j] * a_i;
            }
            grads[o + i] = dr;
            grads[seq_len + o + i] = dw * w_i;
            grads[2 * seq_len + o + i] = dk;
            grads[3 * seq_len + o + i] = dv;
            grads[4 * seq_len + o + i] = da;
            grads[5 * seq_len + o + i] = db;
            sync_cube();
        }
    }

    #[unroll(n <= UNROLL_MAX)]
    for j in 0..n {
        grads[6 * seq_len + chain_base + i * n + j] = ds_row[j];
    }
}

/// One cube per `(head, batch)`, one unit per value row.
fn launch_shape(d: &Dims, tensor: &CubeTensor) -> (CubeCount, CubeDim) {
    let max_units = tensor.client.properties().hardware.max_units_per_cube;
    assert!(
        d.n <= max_units as usize,
        "fused wkv7: head size {} exceeds this device's {max_units} units per cube",
        d.n
    );
    let (heads, batch) = (d.heads as u32, d.batch as u32);
    assert!(
        heads <= u16::MAX as u32 && batch <= u16::MAX as u32,
        "fused wkv7: batch {batch} or heads {heads} exceed the 65535 cubes per grid axis"
    );
    (
        CubeCount::Static(heads, batch, 1),
        CubeDim::new_1d(d.n as u32),
    )
}

/// Runs the forward kernel; returns the packed `[y, final state]` and the checkpoints (a
/// one-element placeholder unless `save_checkpoints`).
#[allow(clippy::too_many_arguments)]
fn forward(
    r: CubeTensor,
    log_w: CubeTensor,
    k: CubeTensor,
    v: CubeTensor,
    a: CubeTensor,
    b: CubeTensor,
    state: CubeTensor,
    save_checkpoints: bool,
) -> (CubeTensor, CubeTensor) {
    let [r, log_w, k, v, a, b, state] = [r, log_w, k, v, a, b, state].map(into_contiguous);
    let d = Dims::of(&r.shape());
    let checkpoints_len = if save_checkpoints {
        d.checkpoints_len()
    } else {
        1
    };
    let checkpoints = output(&r, Shape::new([checkpoints_len.max(1)]));
    if d.seq_len() == 0 {
        // No step to run: y is empty and the final state is the initial one.
        let packed = CubeBackend::float_reshape(state, Shape::new([d.state_len()]));
        return (packed, checkpoints);
    }
    let out = output(&r, Shape::new([d.seq_len() + d.state_len()]));
    let (cube_count, cube_dim) = launch_shape(&d, &r);
    let dtype = dtype_to_storage_type(r.dtype);
    let client = r.client.clone();
    wkv7_forward_kernel::launch(
        &client,
        cube_count,
        cube_dim,
        r.into_tensor_arg(),
        log_w.into_tensor_arg(),
        k.into_tensor_arg(),
        v.into_tensor_arg(),
        a.into_tensor_arg(),
        b.into_tensor_arg(),
        state.into_tensor_arg(),
        out.clone().into_tensor_arg(),
        checkpoints.clone().into_tensor_arg(),
        d.n,
        CHECKPOINT_INTERVAL,
        save_checkpoints,
        dtype,
    );
    (out, checkpoints)
}

/// `packed[range]` reshaped to `shape`.
fn unpack(packed: CubeTensor, start: usize, shape: Shape) -> CubeTensor {
    let slice = Slice::from(start..start + shape.num_elements());
    let part = CubeBackend::float_slice(packed, &[slice]);
    CubeBackend::float_reshape(part, shape)
}

impl Wkv7Backend for CubeBackend {
    fn wkv7(
        r: CubeTensor,
        log_w: CubeTensor,
        k: CubeTensor,
        v: CubeTensor,
        a: CubeTensor,
        b: CubeTensor,
        state: CubeTensor,
        _parallel: bool,
    ) -> (CubeTensor, CubeTensor) {
        let d = Dims::of(&r.shape());
        let (packed, _) = forward(r, log_w, k, v, a, b, state, false);
        (
            unpack(
                packed.clone(),
                0,
                Shape::new([d.batch, d.time, d.heads, d.n]),
            ),
            unpack(
                packed,
                d.seq_len(),
                Shape::new([d.batch, d.heads, d.n, d.n]),
            ),
        )
    }
}

impl Wkv7TrainBackend for CubeBackend {
    fn wkv7_forward_train(
        r: CubeTensor,
        log_w: CubeTensor,
        k: CubeTensor,
        v: CubeTensor,
        a: CubeTensor,
        b: CubeTensor,
        state: CubeTensor,
        checkpoint: bool,
        _parallel: bool,
    ) -> (CubeTensor, CubeTensor) {
        let d = Dims::of(&r.shape());
        let (packed, checkpoints) = forward(r, log_w, k, v, a, b, state, checkpoint);
        let chunks = if checkpoint { d.chunks() } else { 0 };
        let checkpoints = if chunks > 0 && d.seq_len() != 0 {
            CubeBackend::float_reshape(
                checkpoints,
                Shape::new([d.batch, d.heads, chunks, d.n, d.n]),
            )
        } else {
            checkpoints
        };
        (packed, checkpoints)
    }

    fn wkv7_backward(
        r: CubeTensor,
        log_w: CubeTensor,
        k: CubeTensor,
        v: CubeTensor,
        a: CubeTensor,
        b: CubeTensor,
        checkpoints: CubeTensor,
        grad: CubeTensor,
        _parallel: bool,
    ) -> [CubeTensor; 7] {
        let [r, log_w, k, v, a, b, checkpoints, grad] =
            [r, log_w, k, v, a, b, checkpoints, grad].map(into_contiguous);
        let d = Dims::of(&r.shape());
        let seq = Shape::new([d.batch, d.time, d.heads, d.n]);
        let state = Shape::new([d.batch, d.heads, d.n, d.n]);
        if d.seq_len() == 0 {
            // Nothing ran: the sequence gradients are zero-sized and the state's passes through.
            let zeros = || CubeBackend::float_zeros(seq.clone(), &r.device, r.dtype.into());
            let d_state = unpack(grad, d.seq_len(), state);
            return [
                zeros(),
                zeros(),
                zeros(),
                zeros(),
                zeros(),
                zeros(),
                d_state,
            ];
        }
        let n_scratch = d.batch * d.heads * d.n * (CHECKPOINT_INTERVAL + 1) * (2 * d.n + 1);
        let scratch = empty_device_dtype(
            r.client.clone(),
            r.device.clone(),
            Shape::new([n_scratch]),
            r.dtype,
        );
        let grads = output(&r, Shape::new([6 * d.seq_len() + d.state_len()]));
        let (cube_count, cube_dim) = launch_shape(&d, &r);
        let dtype = dtype_to_storage_type(r.dtype);
        let client = r.client.clone();
        wkv7_backward_kernel::launch(
            &client,
            cube_count,
            cube_dim,
            r.into_tensor_arg(),
            log_w.into_tensor_arg(),
            k.into_tensor_arg(),
            v.into_tensor_arg(),
            a.into_tensor_arg(),
            b.into_tensor_arg(),
            checkpoints.into_tensor_arg(),
            grad.into_tensor_arg(),
            grads.clone().into_tensor_arg(),
            scratch.into_tensor_arg(),
            d.n,
            CHECKPOINT_INTERVAL,
            dtype,
        );
        let seq_grad = |index: usize| unpack(grads.clone(), index * d.seq_len(), seq.clone());
        [
            seq_grad(0),
            seq_grad(1),
            seq_grad(2),
            seq_grad(3),
            seq_grad(4),
            seq_grad(5),
            unpack(grads, 6 * d.seq_len(), state),
        ]
    }
}
