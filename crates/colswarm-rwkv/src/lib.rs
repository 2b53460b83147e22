//! RWKV-7 ("Goose") on burn: the recurrent model colswarm uses both as the trainable primary and
//! as every frozen specialist.
//!
//! - [`RwkvConfig`] describes a model; [`RwkvConfig::init`] builds a [`Rwkv`] from a seed.
//! - [`Rwkv::forward`] reads a batch of right-padded sequences (sequence mode) and returns the
//!   hidden states and the final [`RwkvState`] of every sequence *at its own length*;
//!   [`Rwkv::step`] advances one token (step mode). Both give the same states and outputs.
//! - [`checkpoint`] saves and loads models as safetensors, with the config stored alongside.
//!
//! # Conventions
//!
//! - The WKV state of one head is a value × key matrix (`y = S · r`), batched as
//!   `[batch, heads, head_size, head_size]`; see [`LayerState`].
//! - Decay is carried in log form `log w = −e^{−0.5}·σ(z)`, so `w ∈ (0.545, 1)`
//!   (the convention of [`colswarm_kernels::wkv7`](mod@colswarm_kernels::wkv7)).
//! - Linear weights are stored `[d_input, d_output]` (burn's layout: `y = x · W`), the transpose
//!   of PyTorch's `nn.Linear`.
//!
//! # Example
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use colswarm_rwkv::RwkvConfig;
//!
//! let device = Device::flex();
//! let config = RwkvConfig::new(260, 64, 2).with_head_size(32);
//! let model = config.init(7, &device);
//! let tokens = Tensor::<2, Int>::from_data([[72, 105, 33], [79, 107, 0]], &device);
//! // The second sequence is 2 tokens long; its third position is padding.
//! let out = model.forward(tokens, Some(&[3, 2]), None);
//! assert_eq!(out.hidden.dims(), [2, 3, 64]);
//! assert_eq!(out.state.layers.len(), 2);
//! ```
#![warn(missing_docs)]

mod block;
mod channel_mix;
pub mod checkpoint;
mod config;
mod device;
mod error;
pub mod init;
mod model;
mod padding;
mod state;
mod time_mix;

pub use block::Block;
pub use channel_mix::ChannelMix;
pub use checkpoint::{load_checkpoint, save_checkpoint};
pub use config::RwkvConfig;
pub use device::{DeviceChoice, DeviceError};
pub use error::RwkvError;
pub use model::{Rwkv, RwkvOutput};
pub use padding::Padding;
pub use state::{LayerState, RwkvState};
pub use time_mix::TimeMix;
