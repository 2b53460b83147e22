//! The WKV-7 recurrence (RWKV-7 "generalized delta rule").
//!
//! Per head, for each timestep `t` (state `S` is value × key):
//!
//! ```text
//! u_t = S_{t-1} · a_t
//! S_t = S_{t-1} · diag(exp(log_w_t)) + u_t · b_tᵀ + v_t · k_tᵀ
//! y_t = S_t · r_t
//! ```
//!
//! In RWKV-7, `a = −κ̂` (the negated, L2-normalised removal key), `b = κ̂ ⊙ a_icl` (removal key
//! times the in-context learning rate) and `k` is the replacement key.
//!
//! Implementations: [`wkv7_reference`] (tensor ops, every backend), a fused CPU kernel for
//! Flex (`cpu.rs`, with a checkpoint-and-recompute backward) and, with the `wgpu` or `cuda`
//! feature, CubeCL kernels for burn's CubeCL backend (`cube.rs`, the same scheme), reached
//! through the [`Wkv7Backend`] backend extension. [`wkv7`] picks the fastest; [`wkv7_with`]
//! picks one.

// Every signature of the op carries its seven tensors plus a flag or two.
#[allow(clippy::too_many_arguments)]
mod backend;
mod cpu;
#[cfg(feature = "cube")]
mod cube;
mod reference;
#[cfg(test)]
mod tests;

pub use backend::{Wkv7Backend, Wkv7TrainBackend};
pub use reference::wkv7_reference;

use burn::backend::Dispatch;
use burn::tensor::{Shape, Tensor};

use crate::implementation::KernelImpl;

/// Steps between two states stored by the fused training forward; the backward recomputes
/// the states inside each such chunk.
pub const WKV7_CHECKPOINT_INTERVAL: usize = cpu::CHECKPOINT_INTERVAL;

/// Runs the WKV-7 recurrence over a sequence, starting from `state`.
///
/// Uses the fastest implementation for the tensors' device and dtype
/// ([`KernelImpl::fastest`]): the fused CPU kernel on Flex (plain or autodiff) for `f32`,
/// [`wkv7_reference`] elsewhere. Differentiable w.r.t. all seven inputs.
///
/// # Shapes
///
/// - `r`, `log_w`, `k`, `v`, `a`, `b`: `[batch, time, heads, head_size]`
/// - `state`: `[batch, heads, head_size (value), head_size (key)]`
/// - returns `(y, final_state)`: `y` is `[batch, time, heads, head_size]`, `final_state` has
///   the shape of `state`.
///
/// # Panics
///
/// If the shapes do not match the above.
pub fn wkv7(
    r: Tensor<4>,
    log_w: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    a: Tensor<4>,
    b: Tensor<4>,
    state: Tensor<4>,
) -> (Tensor<4>, Tensor<4>) {
    let imp = KernelImpl::fastest(&r.device(), r.dtype());
    wkv7_with(imp, r, log_w, k, v, a, b, state)
}

/// [`wkv7`] with an explicit implementation.
///
/// # Shapes
///
/// As [`wkv7`].
///
/// # Panics
///
/// If the shapes do not match, or if `imp` is not available for the tensors' device and dtype
/// (see [`KernelImpl::is_available`]).
#[allow(clippy::too_many_arguments)] // the op's seven tensors plus the switch
pub fn wkv7_with(
    imp: KernelImpl,
    r: Tensor<4>,
    log_w: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    a: Tensor<4>,
    b: Tensor<4>,
    state: Tensor<4>,
) -> (Tensor<4>, Tensor<4>) {
    if imp == KernelImpl::Reference {
        return wkv7_reference(r, log_w, k, v, a, b, state);
    }
    check_shapes(&r, &log_w, &k, &v, &a, &b, &state);
    let (device, dtype) = (r.device(), r.dtype());
    assert!(
        imp.is_available(&device, dtype),
        "wkv7: {imp:?} is not available for {dtype:?} tensors on {device:?}"
    );
    let (y, state) = <Dispatch as Wkv7Backend>::wkv7(
        r.into_dispatch(),
        log_w.into_dispatch(),
        k.into_dispatch(),
        v.into_dispatch(),
        a.into_dispatch(),
        b.into_dispatch(),
        state.into_dispatch(),
        imp.parallel(),
    );
    (Tensor::from_dispatch(y), Tensor::from_dispatch(state))
}

/// `[d0, d1, d2, d3]` of a rank-4 shape.
pub(crate) fn dims4(shape: &Shape) -> [usize; 4] {
    match shape.as_slice() {
        &[d0, d1, d2, d3] => [d0, d1, d2, d3],
        dims => panic!("wkv7: expected a rank-4 tensor, got shape {dims:?}"),
    }
}

/// Panics with a clear message unless the shapes follow [`wkv7`]'s contract.
fn check_shapes(
    r: &Tensor<4>,
    log_w: &Tensor<4>,
    k: &Tensor<4>,
    v: &Tensor<4>,
    a: &Tensor<4>,
    b: &Tensor<4>,
    state: &Tensor<4>,
) {
    let seq = r.dims();
    for (name, x) in [("log_w", log_w), ("k", k), ("v", v), ("a", a), ("b", b)] {
        assert_eq!(
            x.dims(),
            seq,
            "wkv7: `{name}` must have the shape of `r` [batch, time, heads, head_size]"
        );
    }
    let [batch, _, heads, n] = seq;
    assert_eq!(
        state.dims(),
        [batch, heads, n, n],
        "wkv7: `state` must be [batch, heads, head_size, head_size] for r of shape {seq:?}"
    );
}
