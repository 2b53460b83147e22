//! Kernels for colswarm: the WKV-7 recurrence of RWKV-7 and the state-fusion op, and the
//! CPU kernels of an RWKV-7 block's other hot ops ([`linear()`], and for inference
//! [`layer_norm()`], [`sigmoid()`], [`tanh()`], [`token_shift_mix()`]; Flex only, burn's own
//! ops elsewhere).
//!
//! Every op has a *reference* implementation composed of burn tensor ops (the ground truth for
//! tests, and the fallback on every backend) and a *fused* CPU implementation for burn's Flex
//! backend, with a backward under autodiff (the inference-only element-wise ones excepted). The
//! plain entry points ([`wkv7()`], [`fuse_states()`], ...) pick the fastest for the tensors'
//! device; the `_with` variants take a [`KernelImpl`] (for benchmarks and parity tests).
//!
//! The fused ops are burn backend extensions ([`Wkv7Backend`], [`FuseStatesBackend`]): a
//! trait over `Backend` implemented for `Flex` (plain Rust over contiguous slices, vectorised
//! for AVX-512/AVX2 chosen at run time, parallel over `(batch, head)` with rayon), for burn's
//! CubeCL backend with the `wgpu` or `cuda` feature (CubeCL kernels, one source for every
//! CubeCL runtime), and for `Autodiff<B, C>` (one graph node with its own backward).
//!
//! # Conventions (used everywhere in colswarm)
//!
//! - Sequence tensors are laid out `[batch, time, heads, head_size]`.
//! - The WKV state of one head is a `head_size × head_size` matrix `S[i][j]` with `i` the
//!   **value** index (rows) and `j` the **key** index (columns): `y = S · r`. Batched states
//!   are `[batch, heads, value, key]`.
//! - Decay is passed in **log form**: `log_w = −e^{−0.5}·σ(z) ∈ (−0.6065, 0)`, so the
//!   per-step factor `w = exp(log_w) ∈ (0.545, 1)`. Passing `log_w = 0` together with zero
//!   `k`, `v`, `b` leaves the state unchanged (this is how padding is masked).
#![warn(missing_docs)]

pub mod activation;
mod cpu;
#[cfg(feature = "cube")]
mod cube;
pub mod embedding_bag;
pub mod fuse_states;
mod implementation;
pub mod layer_norm;
pub mod linear;
mod simd;
#[cfg(test)]
mod testing;
pub mod token_shift_mix;
pub mod wkv7;

pub use activation::{ActivationBackend, sigmoid, tanh};
pub use embedding_bag::{EmbeddingBagBackend, embedding_bag};
pub use fuse_states::{FuseStatesBackend, fuse_states, fuse_states_reference, fuse_states_with};
pub use implementation::KernelImpl;
pub use layer_norm::{LayerNormBackend, layer_norm};
pub use linear::{LinearBackend, Then, linear, linear_then};
pub use token_shift_mix::{TokenShiftMixBackend, token_shift_mix};
pub use wkv7::{Wkv7Backend, Wkv7TrainBackend, wkv7, wkv7_reference, wkv7_with};
