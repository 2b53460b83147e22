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
//! so in the backward each unit carries **column** `i` of the state and both row and column
//! `i` of its gradient, as the official RWKV-7 CUDA kernel does: unit `i` computes the
//! row-indexed gradient `dv_i` from its gradient row and the key-indexed ones (`dr_i`, `dw_i`,
//! `dk_i`, `da_i`, `db_i`) from columns, with only vectors passing through shared memory.
//!
//! The states come from checkpoints, with the exact recompute of the CPU kernel (`cpu.rs`)
//! rather than the official kernel's inversion of the decay, which amplifies rounding error
//! by up to `(1/0.545)^15 ≈ 10⁴` within a chunk. The training forward stores the state at
//! the start of every chunk of 16 steps (longer for sequences whose checkpoints would not fit
//! in one buffer: [`checkpoint_interval`]) and every step's `u = S·a`. The backward walks the
//! chunks from last to first; for each it recomputes the chunk's states, column `i` only
//! (`S_ji ← S_ji·w_i + u_j·b_i + v_j·k_i`, which needs the saved `u` and no reduction), into
//! a per-chain scratch buffer laid out so that a cube's units write consecutive addresses,
//! then runs the reverse recurrence through the chunk. Each unit reads back only the column
//! it wrote. The staged vectors are double-buffered, so a step costs one barrier in the
//! forward and the recompute, and two in the reverse recurrence (one of them for `du`).
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
/// Vectors in one set of staged vectors: `R` … `B` in the forward, all nine in the backward.
const FORWARD_STAGED: usize = 5;
const STAGED: usize = 9;

/// Offset of the vector `[batch, t, head, ..]` in a contiguous `[batch, time, heads, n]` tensor.
#[cube]
fn seq_offset(batch: usize, t: usize, head: usize, time: usize, heads: usize, n: usize) -> usize {
    ((batch * time + t) * heads + head) * n
}

/// Forward over the whole sequence. Writes `y` then the final state into `out`
/// (`[batch·time·heads·n + batch·heads·n·n]`). If `save`, also writes what the backward needs
/// into `saved`: the state at the start of every chunk of `chunk` steps, transposed
/// (`[batch, heads, chunks, n (key), n (value)]`, so that the stores of a cube's units are
/// consecutive), then every step's `u` (`[batch, time, heads, n]`).
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
    saved: &mut Tensor<F>,
    #[comptime] n: usize,
    #[comptime] chunk: usize,
    #[comptime] save: bool,
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
    let u_base = r.shape(0) * heads * chunks * n * n;

    let mut s = Array::<F>::new(n);
    #[unroll]
    for j in 0..n {
        s[j] = state[row + j];
    }
    // Two sets of staged vectors, used on alternate steps: a unit may stage step t + 1 while
    // another still reads step t, so one barrier per step suffices.
    let mut staged = Shared::<[F]>::new_slice(2 * FORWARD_STAGED * n);

    for t in 0..time {
        let o = seq_offset(batch, t, head, time, heads, n);
        if save {
            if t % chunk == 0 {
                let at = (chain * chunks + t / chunk) * n * n + i;
                #[unroll]
                for j in 0..n {
                    saved[at + j * n] = s[j];
                }
            }
        }
        let p = (t % 2) * FORWARD_STAGED * n;
        staged[p + R * n + i] = r[o + i];
        staged[p + W * n + i] = F::exp(log_w[o + i]);
        staged[p + K * n + i] = k[o + i];
        staged[p + A * n + i] = a[o + i];
        staged[p + B * n + i] = b[o + i];
        sync_cube();

        let v_i = v[o + i];
        let mut u_i = F::new(0.0);
        #[unroll]
        for j in 0..n {
            u_i += s[j] * staged[p + A * n + j];
        }
        if save {
            saved[u_base + o + i] = u_i;
        }
        let mut y_i = F::new(0.0);
        #[unroll]
        for j in 0..n {
            let next = s[j] * staged[p + W * n + j]
                + u_i * staged[p + B * n + j]
                + v_i * staged[p + K * n + j];
            s[j] = next;
            y_i += next * staged[p + R * n + j];
        }
        out[o + i] = y_i;
    }

    let final_state = r.shape(0) * time * heads * n + row;
    #[unroll]
    for j in 0..n {
        out[final_state + j] = s[j];
    }
}

/// Backward: from the inputs, what the training forward saved and the packed gradient `grad`
/// (`dy` then the final state's gradient), writes the gradients `d_r` … `d_b` (each
/// `[batch, time, heads, n]`) and `d_state`. Seven outputs rather than one packed buffer: at
/// the language-model shape (B = 8, T = 4096, H = 64) they are 0.5 GB each, and a packed one
/// would pass a device's largest allocation.
///
/// `scratch` holds, per chain, the states before each step of the current chunk, transposed
/// (`[batch·heads, chunk, n (value), n (key)]`, key fastest): unit `i` writes and reads
/// only column `i`, and a cube's units touch consecutive addresses.
/// Cube `(head, batch)`, unit `i`.
#[allow(clippy::too_many_arguments, clippy::manual_div_ceil)]
// as the forward
// One kernel over 150 lines: the backward recurrence is one loop whose state lives in registers.
#[cube(launch)]
fn wkv7_backward_kernel<F: Float>(
    r: &Tensor<F>,
    log_w: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    a: &Tensor<F>,
    b: &Tensor<F>,
    saved: &Tensor<F>,
    grad: &Tensor<F>,
    d_r: &mut Tensor<F>,
    d_log_w: &mut Tensor<F>,
    d_k: &mut Tensor<F>,
    d_v: &mut Tensor<F>,
    d_a: &mut Tensor<F>,
    d_b: &mut Tensor<F>,
    d_state: &mut Tensor<F>,
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
    let u_base = r.shape(0) * heads * chunks * n * n;
    let scratch_base = chain * chunk * n * n + i;

    // Gradient w.r.t. the current state, row i and column i: first the final state's.
    let mut ds_row = Array::<F>::new(n);
    let mut ds_col = Array::<F>::new(n);
    #[unroll(n <= UNROLL_MAX)]
    for j in 0..n {
        ds_row[j] = grad[seq_len + chain_base + i * n + j];
        ds_col[j] = grad[seq_len + chain_base + j * n + i];
    }
    // Column i of the state after the step being differentiated (`after`) and before it
    // (`before`).
    let mut after = Array::<F>::new(n);
    let mut before = Array::<F>::new(n);
    let mut staged = Shared::<[F]>::new_slice(2 * STAGED * n);

    for c in 0..chunks {
        let chunk_index = chunks - 1 - c;
        let t0 = chunk_index * chunk;
        let mut len = time - t0;
        if len > chunk {
            len = chunk;
        }

        // Recompute the chunk's states (column i only) from its checkpoint, with the saved
        // `u`: S[j][i] ← S[j][i]·w_i + u_j·b_i + v_j·k_i, the forward's own operations.
        let checkpoint = (chain * chunks + chunk_index) * n * n + i * n;
        #[unroll(n <= UNROLL_MAX)]
        for j in 0..n {
            after[j] = saved[checkpoint + j];
        }
        sync_cube();
        for step in 0..len {
            let o = seq_offset(batch, t0 + step, head, time, heads, n);
            let slot = scratch_base + step * n * n;
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                scratch[slot + j * n] = after[j];
            }
            let p = (step % 2) * STAGED * n;
            staged[p + U * n + i] = saved[u_base + o + i];
            staged[p + V * n + i] = v[o + i];
            let w_i = F::exp(log_w[o + i]);
            let b_i = b[o + i];
            let k_i = k[o + i];
            sync_cube();
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                after[j] =
                    after[j] * w_i + staged[p + U * n + j] * b_i + staged[p + V * n + j] * k_i;
            }
        }
        sync_cube();

        // The reverse recurrence through the chunk; `after` now holds the chunk's last state.
        for back in 0..len {
            let step = len - 1 - back;
            let o = seq_offset(batch, t0 + step, head, time, heads, n);
            let slot = scratch_base + step * n * n;
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                before[j] = scratch[slot + j * n];
            }
            let p = (back % 2) * STAGED * n;
            staged[p + R * n + i] = r[o + i];
            staged[p + W * n + i] = F::exp(log_w[o + i]);
            staged[p + K * n + i] = k[o + i];
            staged[p + A * n + i] = a[o + i];
            staged[p + B * n + i] = b[o + i];
            staged[p + V * n + i] = v[o + i];
            staged[p + U * n + i] = saved[u_base + o + i];
            staged[p + DY * n + i] = grad[o + i];
            sync_cube();

            let r_i = staged[p + R * n + i];
            let w_i = staged[p + W * n + i];
            let a_i = staged[p + A * n + i];
            let dy_i = staged[p + DY * n + i];
            // dS += dy · rᵀ, then the gradients that read dS_t.
            let mut dr = F::new(0.0);
            let mut dv = F::new(0.0);
            let mut dk = F::new(0.0);
            let mut db = F::new(0.0);
            let mut dw = F::new(0.0);
            let mut du_i = F::new(0.0);
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                ds_row[j] += dy_i * staged[p + R * n + j];
                ds_col[j] += staged[p + DY * n + j] * r_i;
                dr += after[j] * staged[p + DY * n + j];
                dv += ds_row[j] * staged[p + K * n + j];
                du_i += ds_row[j] * staged[p + B * n + j];
                dk += ds_col[j] * staged[p + V * n + j];
                db += ds_col[j] * staged[p + U * n + j];
                dw += ds_col[j] * before[j];
            }
            staged[p + G * n + i] = du_i;
            sync_cube();

            // da needs every row's du; then dS becomes the gradient w.r.t. S_{t-1}.
            let mut da = F::new(0.0);
            #[unroll(n <= UNROLL_MAX)]
            for j in 0..n {
                da += before[j] * staged[p + G * n + j];
                ds_row[j] = ds_row[j] * staged[p + W * n + j] + du_i * staged[p + A * n + j];
                ds_col[j] = ds_col[j] * w_i + staged[p + G * n + j] * a_i;
                after[j] = before[j];
            }
            d_r[o + i] = dr;
            d_log_w[o + i] = dw * w_i;
            d_k[o + i] = dk;
            d_v[o + i] = dv;
            d_a[o + i] = da;
            d_b[o + i] = db;
        }
        sync_cube();
    }

    #[unroll(n <= UNROLL_MAX)]
    for j in 0..n {
        d_state[chain_base + i * n + j] = ds_row[j];
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

/// Longest checkpoint interval tried for a long sequence (see [`checkpoint_interval`]).
const MAX_INTERVAL: usize = 16 * CHECKPOINT_INTERVAL;

/// Steps between stored states: the CPU kernel's 16, doubled until the states the training
/// forward saves (`⌈T/interval⌉·N²` per chain, plus `u`) fit in one allocation of the device.
/// At B = 8, T = 4096, H = 64 the 16-step checkpoints alone are 2 GiB, past what wgpu gives
/// one buffer on an H200; 32 steps halve them. The recompute costs one forward pass whatever
/// the interval; a longer one only needs more scratch (`interval·N²` per chain).
pub(crate) fn checkpoint_interval(d: &Dims, max_bytes: u64, element_bytes: usize) -> usize {
    let mut interval = CHECKPOINT_INTERVAL;
    while interval < MAX_INTERVAL && saved_len(d, interval) * element_bytes > max_bytes as usize {
        interval *= 2;
    }
    interval
}

/// Elements the training forward saves at `interval`: checkpoints, then every step's `u`.
fn saved_len(d: &Dims, interval: usize) -> usize {
    d.state_len() * d.time.div_ceil(interval) + d.seq_len()
}

/// Panics, naming `what`, unless `len` elements fit in one of the device's allocations: past
/// that, wgpu would fail the launch without telling the caller.
fn assert_fits(like: &CubeTensor, len: usize, what: &str) {
    let max = like.client.properties().memory.max_page_size;
    let bytes = (len * like.dtype.size()) as u64;
    assert!(
        bytes <= max,
        "fused wkv7: {what} needs {bytes} bytes in one buffer, more than this device's largest \
         allocation ({max} bytes); use a shorter sequence or fewer heads per call"
    );
}

/// A new tensor of `len` elements for a kernel to write, checked by [`assert_fits`].
fn buffer(like: &CubeTensor, len: usize, what: &str) -> CubeTensor {
    assert_fits(like, len, what);
    output(like, Shape::new([len.max(1)]))
}

/// The interval [`forward`] and the backward use for these inputs on this device.
fn interval_for(d: &Dims, like: &CubeTensor) -> usize {
    let max = like.client.properties().memory.max_page_size;
    // Tests lower the limit to run the longer intervals on small inputs.
    #[cfg(test)]
    let max = max.min(TEST_MAX_SAVED_BYTES.load(std::sync::atomic::Ordering::Relaxed));
    checkpoint_interval(d, max, like.dtype.size())
}

/// A lower allocation limit for [`interval_for`] in tests. Every interval gives the same
/// results, so lowering it cannot break a test running beside the one that does.
#[cfg(test)]
pub(crate) static TEST_MAX_SAVED_BYTES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(u64::MAX);

/// Runs the forward kernel; returns the packed `[y, final state]` and, if `save`, what the
/// backward needs (checkpoints and `u`, see [`wkv7_forward_kernel`]; a one-element
/// placeholder otherwise).
#[allow(clippy::too_many_arguments)]
fn forward(
    r: CubeTensor,
    log_w: CubeTensor,
    k: CubeTensor,
    v: CubeTensor,
    a: CubeTensor,
    b: CubeTensor,
    state: CubeTensor,
    save: bool,
) -> (CubeTensor, CubeTensor) {
    let [r, log_w, k, v, a, b, state] = [r, log_w, k, v, a, b, state].map(into_contiguous);
    let d = Dims::of(&r.shape());
    let interval = interval_for(&d, &r);
    let saved = if save {
        buffer(&r, saved_len(&d, interval), "the saved states")
    } else {
        output(&r, Shape::new([1]))
    };
    if d.seq_len() == 0 {
        // No step to run: y is empty and the final state is the initial one.
        let packed = CubeBackend::float_reshape(state, Shape::new([d.state_len()]));
        return (packed, saved);
    }
    let out = buffer(&r, d.seq_len() + d.state_len(), "the output");
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
        saved.clone().into_tensor_arg(),
        d.n,
        interval,
        save,
        dtype,
    );
    (out, saved)
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
        forward(r, log_w, k, v, a, b, state, checkpoint)
    }

    fn wkv7_backward(
        r: CubeTensor,
        log_w: CubeTensor,
        k: CubeTensor,
        v: CubeTensor,
        a: CubeTensor,
        b: CubeTensor,
        saved: CubeTensor,
        grad: CubeTensor,
        _parallel: bool,
    ) -> [CubeTensor; 7] {
        let [r, log_w, k, v, a, b, grad] = [r, log_w, k, v, a, b, grad].map(into_contiguous);
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
        let interval = interval_for(&d, &r);
        let n_scratch = d.batch * d.heads * interval * d.n * d.n;
        assert_fits(&r, n_scratch, "the backward's scratch");
        let scratch = empty_device_dtype(
            r.client.clone(),
            r.device.clone(),
            Shape::new([n_scratch]),
            r.dtype,
        );
        let seq_grad = || buffer(&r, d.seq_len(), "a gradient");
        let grads = [
            seq_grad(),
            seq_grad(),
            seq_grad(),
            seq_grad(),
            seq_grad(),
            seq_grad(),
            buffer(&r, d.state_len(), "the state's gradient"),
        ];
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
            saved.into_tensor_arg(),
            grad.into_tensor_arg(),
            grads[0].clone().into_tensor_arg(),
            grads[1].clone().into_tensor_arg(),
            grads[2].clone().into_tensor_arg(),
            grads[3].clone().into_tensor_arg(),
            grads[4].clone().into_tensor_arg(),
            grads[5].clone().into_tensor_arg(),
            grads[6].clone().into_tensor_arg(),
            scratch.into_tensor_arg(),
            d.n,
            interval,
            dtype,
        );
        let [d_r, d_log_w, d_k, d_v, d_a, d_b, d_state] = grads;
        let seq_shaped = |x: CubeTensor| CubeBackend::float_reshape(x, seq.clone());
        [
            seq_shaped(d_r),
            seq_shaped(d_log_w),
            seq_shaped(d_k),
            seq_shaped(d_v),
            seq_shaped(d_a),
            seq_shaped(d_b),
            CubeBackend::float_reshape(d_state, state),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_doubles_until_the_saved_states_fit() {
        // The language-model shape: 2 GiB of 16-step checkpoints plus 0.5 GiB of `u`.
        let lm = Dims::of(&Shape::new([8, 4096, 64, 64]));
        assert_eq!(saved_len(&lm, 16) * 4, (1 << 31) + (1 << 29));
        assert_eq!(checkpoint_interval(&lm, u64::MAX, 4), 16);
        assert_eq!(checkpoint_interval(&lm, 2 << 30, 4), 32);
        assert_eq!(checkpoint_interval(&lm, 1 << 30, 4), 64);
        // Never past the longest interval, even when nothing fits.
        assert_eq!(checkpoint_interval(&lm, 1, 4), MAX_INTERVAL);
    }
}
