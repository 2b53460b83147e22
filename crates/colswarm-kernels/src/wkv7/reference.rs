//! Reference WKV-7: backend primitive ops, one timestep at a time.
//!
//! Generic over the backend, so the same code is both the public [`wkv7_reference`] (run on
//! burn's runtime [`Dispatch`] backend, differentiable through autodiff) and the default body
//! of the [`Wkv7Backend`](super::Wkv7Backend) extension for backends without a fused kernel.

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, TensorMetadata};
use burn::tensor::{Shape, Slice, Tensor};

/// Reference WKV-7: one timestep at a time with burn tensor ops.
///
/// Correct on every backend and differentiable through autodiff, but slow: each step is a
/// handful of small ops, and burn's backward of per-step slicing costs O(T²) memory traffic.
/// Use it as ground truth and for short sequences.
///
/// # Shapes
///
/// See [`wkv7`](super::wkv7).
///
/// # Panics
///
/// If the shapes do not match (see [`wkv7`](super::wkv7)).
pub fn wkv7_reference(
    r: Tensor<4>,
    log_w: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    a: Tensor<4>,
    b: Tensor<4>,
    state: Tensor<4>,
) -> (Tensor<4>, Tensor<4>) {
    super::check_shapes(&r, &log_w, &k, &v, &a, &b, &state);
    let (y, state) = wkv7_ops::<Dispatch>(
        r.into_dispatch(),
        log_w.into_dispatch(),
        k.into_dispatch(),
        v.into_dispatch(),
        a.into_dispatch(),
        b.into_dispatch(),
        state.into_dispatch(),
    );
    (Tensor::from_dispatch(y), Tensor::from_dispatch(state))
}

/// The reference recurrence on backend `B`'s primitives (shapes as in [`wkv7`](super::wkv7)).
pub(crate) fn wkv7_ops<B: Backend>(
    r: FloatTensor<B>,
    log_w: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    a: FloatTensor<B>,
    b: FloatTensor<B>,
    state: FloatTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let [batch, time, heads, n] = super::dims4(&r.shape());
    // Work in [batch, heads, time, n], so one step's vectors are rows [batch, heads, 1, n].
    let to_bhtn = |x: FloatTensor<B>| B::float_swap_dims(x, 1, 2);
    let (r, w, k, v, a, b) = (
        to_bhtn(r),
        to_bhtn(B::float_exp(log_w)),
        to_bhtn(k),
        to_bhtn(v),
        to_bhtn(a),
        to_bhtn(b),
    );
    let row = |x: &FloatTensor<B>, t: usize| {
        B::float_slice(
            x.clone(),
            &[
                Slice::from(..),
                Slice::from(..),
                Slice::from(t..t + 1),
                Slice::from(..),
            ],
        )
    };
    let col = |x: FloatTensor<B>| B::float_swap_dims(x, 2, 3); // [batch, heads, n, 1]

    let mut s = state;
    let mut outputs = Vec::with_capacity(time);
    for t in 0..time {
        let u = B::float_matmul(s.clone(), col(row(&a, t))); // S·a: [B, H, N, 1]
        let decayed = B::float_mul(s, row(&w, t)); // S·diag(w)
        let removal = B::float_matmul(u, row(&b, t)); // u·bᵀ
        let write = B::float_matmul(col(row(&v, t)), row(&k, t)); // v·kᵀ
        s = B::float_add(B::float_add(decayed, removal), write);
        outputs.push(B::float_matmul(s.clone(), col(row(&r, t)))); // S·r: [B, H, N, 1]
    }
    let y = if outputs.is_empty() {
        let shape = Shape::new([batch, heads, n, 0]);
        B::float_zeros(shape, &s.device(), s.dtype().into())
    } else {
        B::float_cat(outputs, 3)
    };
    // [batch, heads, n, time] → [batch, time, heads, n]
    (B::float_permute(y, &[0, 3, 1, 2]), s)
}

#[cfg(test)]
mod tests {
    //! The reference against hand-computed values, so the ground truth is itself checked.

    use super::*;
    use burn::tensor::{Device, TensorData, Tolerance};

    fn t4(values: &[f32], shape: [usize; 4], device: &Device) -> Tensor<4> {
        Tensor::from_data(TensorData::new(values.to_vec(), shape), device)
    }

    /// N = 1, two steps: the recurrence is scalar, `s ← s·w + (s·a)·b + v·k`, `y = s·r`.
    #[test]
    fn scalar_head_matches_hand_computation() {
        let device = Device::flex();
        let seq = |x: [f32; 2]| t4(&x, [1, 2, 1, 1], &device);
        let w = [0.5f32, 0.8];
        let (r, k, v, a, b) = (
            [2.0, -1.0],
            [1.0, 0.5],
            [3.0, 2.0],
            [-0.6, -1.0],
            [0.6, 0.25],
        );
        let s0 = 1.5f32;
        // Step 0: u = 1.5·(−0.6) = −0.9; s = 1.5·0.5 + (−0.9)(0.6) + 3·1 = 3.21; y = 6.42.
        // Step 1: u = 3.21·(−1) = −3.21; s = 3.21·0.8 − 3.21·0.25 + 2·0.5 = 2.7655; y = −2.7655.
        let (y, s) = wkv7_reference(
            seq(r),
            seq(w.map(f32::ln)),
            seq(k),
            seq(v),
            seq(a),
            seq(b),
            t4(&[s0], [1, 1, 1, 1], &device),
        );
        y.into_data().assert_approx_eq::<f32>(
            &TensorData::new(vec![6.42f32, -2.7655], [1, 2, 1, 1]),
            Tolerance::absolute(1e-5),
        );
        s.into_data().assert_approx_eq::<f32>(
            &TensorData::new(vec![2.7655f32], [1, 1, 1, 1]),
            Tolerance::absolute(1e-5),
        );
    }

    /// N = 2, one step, with the matrix products written out by hand.
    #[test]
    fn two_by_two_head_matches_hand_computation() {
        let device = Device::flex();
        let vec2 = |x: [f32; 2]| t4(&x, [1, 1, 1, 2], &device);
        // S = [[1, 2], [3, 4]] (rows: value index i, columns: key index j).
        let s0 = t4(&[1.0, 2.0, 3.0, 4.0], [1, 1, 2, 2], &device);
        let (w, a, b, k, v, r) = (
            [0.5f32, 1.0],
            [1.0, -1.0],
            [0.5, 0.0],
            [1.0, 2.0],
            [1.0, -1.0],
            [1.0, 1.0],
        );
        // u = S·a = [1 − 2, 3 − 4] = [−1, −1]
        // S·diag(w) = [[0.5, 2], [1.5, 4]]; u·bᵀ = [[−0.5, 0], [−0.5, 0]];
        // v·kᵀ = [[1, 2], [−1, −2]]  →  S' = [[1, 4], [0, 2]];  y = S'·r = [5, 2].
        let (y, s) = wkv7_reference(
            vec2(r),
            vec2(w.map(f32::ln)),
            vec2(k),
            vec2(v),
            vec2(a),
            vec2(b),
            s0,
        );
        y.into_data().assert_approx_eq::<f32>(
            &TensorData::new(vec![5.0f32, 2.0], [1, 1, 1, 2]),
            Tolerance::absolute(1e-6),
        );
        s.into_data().assert_approx_eq::<f32>(
            &TensorData::new(vec![1.0f32, 4.0, 0.0, 2.0], [1, 1, 2, 2]),
            Tolerance::absolute(1e-6),
        );
    }

    /// Zero time steps: empty output, the state passes through.
    #[test]
    fn empty_sequence_passes_state_through() {
        let device = Device::flex();
        let empty = || Tensor::<4>::zeros([2, 0, 3, 4], &device);
        let state = Tensor::<4>::ones([2, 3, 4, 4], &device);
        let (y, s) = wkv7_reference(empty(), empty(), empty(), empty(), empty(), empty(), state);
        assert_eq!(y.dims(), [2, 0, 3, 4]);
        assert_eq!(
            s.into_data(),
            Tensor::<4>::ones([2, 3, 4, 4], &device).into_data()
        );
    }
}
