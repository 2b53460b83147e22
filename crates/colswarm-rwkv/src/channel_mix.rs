//! RWKV-7 channel mixing: token shift and a squared-ReLU MLP.

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::Tensor;
use burn::tensor::activation::relu;
use colswarm_kernels::{Then, linear_then, token_shift_mix};

use crate::config::RwkvConfig;
use crate::init::ParamFactory;
use crate::padding::Padding;
use crate::time_mix::{last_token, project};

/// RWKV-7 channel mixing (docs/RWKV7.md §6): `out = relu(x_k · W_k)² · W_v` with
/// `x_k = x + (x_prev − x) ⊙ μ_k`.
#[derive(Module, Debug)]
pub struct ChannelMix {
    /// Token-shift lerp μ_k, `[d]`.
    pub x_k: Param<Tensor<1>>,
    /// `d → d_ffn`.
    pub key: Linear,
    /// `d_ffn → d`.
    pub value: Linear,
}

impl ChannelMix {
    pub(crate) fn new(config: &RwkvConfig, layer: usize, params: &mut ParamFactory<'_>) -> Self {
        let (d, ffn) = (config.d_model, config.ffn_width());
        let ratio_1_to_0 = 1.0 - layer as f32 / config.n_layers as f32;
        let x_k = (0..d)
            .map(|i| 1.0 - (i as f32 / d as f32).powf(ratio_1_to_0.powi(4)))
            .collect();
        Self {
            x_k: params.from_values(x_k, [d]),
            key: Linear {
                weight: params.uniform(0.5 / (d as f32).sqrt(), [d, ffn]),
                bias: None,
            },
            // Zero output: the block starts as the identity.
            value: Linear {
                weight: params.constant(0.0, [ffn, d]),
                bias: None,
            },
        }
    }

    /// The squared-ReLU MLP of each token mixed with its predecessor (`shift` before the
    /// first).
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, time, d]`; `shift`: `[batch, d]` → `[batch·time, d]`
    pub fn mix(&self, x: Tensor<3>, shift: Tensor<2>) -> Tensor<2> {
        let [xk]: [Tensor<2>; 1] = token_shift_mix(x, shift, &[self.x_k.val()])
            .try_into()
            .expect("one mix for one mixing vector");
        project(&self.value, project_relu_squared(&self.key, xk))
    }

    /// Sequence mode.
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, time, d]` (the LN2 output); `shift`: `[batch, d]`
    /// - returns the output `[batch, time, d]` and the new `shift`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        shift: Tensor<2>,
        padding: Option<&Padding>,
    ) -> (Tensor<3>, Tensor<2>) {
        let [batch, time, d] = x.dims();
        let new_shift = last_token(x.clone(), shift.clone(), padding);
        let out = self.mix(x, shift);
        (out.reshape([batch, time, d]), new_shift)
    }
}

/// `relu(layer(x))²`, in one pass of the kernel where the layer has no bias (RWKV-7's key
/// has none).
fn project_relu_squared(layer: &Linear, x: Tensor<2>) -> Tensor<2> {
    match &layer.bias {
        None => linear_then(x, layer.weight.val(), Then::ReluSquared),
        Some(_) => relu(project(layer, x)).powf_scalar(2.0),
    }
}
