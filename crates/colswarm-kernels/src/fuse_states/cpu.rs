//! Fused state fusion in plain Rust over contiguous `f32` slices.
//!
//! The op is memory-bound (one multiply-add per state element read), so the kernels are
//! simple streaming loops, parallel over output blocks.

use rayon::prelude::*;

use crate::cpu::output_buffer;

/// Sizes of one state-fusion call; `block` is the size of one head's state (`value · key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dims {
    pub batch: usize,
    pub agents: usize,
    pub heads: usize,
    pub block: usize,
}

impl Dims {
    fn states_len(&self) -> usize {
        self.batch * self.agents * self.heads * self.block
    }

    fn weights_len(&self) -> usize {
        self.batch * self.agents * self.heads
    }

    fn fused_len(&self) -> usize {
        self.batch * self.heads * self.block
    }

    /// Offset of head `h` of agent `a` in batch item `b`, in blocks.
    fn at(&self, b: usize, a: usize, h: usize) -> usize {
        (b * self.agents + a) * self.heads + h
    }
}

/// `fused[b, h] = Σ_a weights[b, a, h] · states[b, a, h]`.
pub(crate) fn forward(dims: Dims, states: &[f32], weights: &[f32], parallel: bool) -> Vec<f32> {
    check_lengths(dims, states, weights);
    let mut fused = output_buffer(dims.fused_len());
    if dims.block == 0 {
        return fused;
    }
    let one = |(bh, out): (usize, &mut [f32])| {
        let (b, h) = (bh / dims.heads, bh % dims.heads);
        out.fill(0.0);
        for a in 0..dims.agents {
            let i = dims.at(b, a, h);
            let (w, s) = (weights[i], &states[i * dims.block..(i + 1) * dims.block]);
            for (o, &s) in out.iter_mut().zip(s) {
                *o += w * s;
            }
        }
    };
    if parallel {
        fused.par_chunks_mut(dims.block).enumerate().for_each(one);
    } else {
        fused.chunks_mut(dims.block).enumerate().for_each(one);
    }
    fused
}

/// Gradients `(d_states, d_weights)` given the gradient `grad` of the fused states:
/// `d_states[b, a, h] = weights[b, a, h] · grad[b, h]` and
/// `d_weights[b, a, h] = ⟨states[b, a, h], grad[b, h]⟩`.
pub(crate) fn backward(
    dims: Dims,
    states: &[f32],
    weights: &[f32],
    grad: &[f32],
    parallel: bool,
) -> (Vec<f32>, Vec<f32>) {
    check_lengths(dims, states, weights);
    assert_eq!(grad.len(), dims.fused_len(), "fuse_states: gradient length");
    let mut d_states = output_buffer(dims.states_len());
    let mut d_weights = output_buffer(dims.weights_len());
    if dims.block == 0 {
        d_weights.fill(0.0);
        return (d_states, d_weights);
    }
    let one = |(i, (ds, dw)): (usize, (&mut [f32], &mut f32))| {
        let (b, h) = (i / (dims.agents * dims.heads), i % dims.heads);
        let g = &grad[(b * dims.heads + h) * dims.block..][..dims.block];
        for (d, &g) in ds.iter_mut().zip(g) {
            *d = weights[i] * g;
        }
        *dw = dot(&states[i * dims.block..(i + 1) * dims.block], g);
    };
    if parallel {
        d_states
            .par_chunks_mut(dims.block)
            .zip(d_weights.par_iter_mut())
            .enumerate()
            .for_each(one);
    } else {
        d_states
            .chunks_mut(dims.block)
            .zip(d_weights.iter_mut())
            .enumerate()
            .for_each(one);
    }
    (d_states, d_weights)
}

fn check_lengths(dims: Dims, states: &[f32], weights: &[f32]) {
    assert_eq!(
        states.len(),
        dims.states_len(),
        "fuse_states: states length"
    );
    assert_eq!(
        weights.len(),
        dims.weights_len(),
        "fuse_states: weights length"
    );
}

/// `Σ x·y` with eight independent partial sums (so the compiler can vectorise it).
fn dot(x: &[f32], y: &[f32]) -> f32 {
    let (xc, xt) = x.as_chunks::<8>();
    let (yc, yt) = y.as_chunks::<8>();
    let mut acc = [0.0f32; 8];
    for (xv, yv) in xc.iter().zip(yc) {
        for l in 0..8 {
            acc[l] += xv[l] * yv[l];
        }
    }
    let tail: f32 = xt.iter().zip(yt).map(|(a, b)| a * b).sum();
    acc.iter().sum::<f32>() + tail
}
