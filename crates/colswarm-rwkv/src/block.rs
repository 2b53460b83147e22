//! One RWKV-7 block: pre-norm time mixing then channel mixing, each with a residual.

use burn::module::Module;
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::{Device, Tensor};

use crate::channel_mix::ChannelMix;
use crate::config::RwkvConfig;
use crate::init::ParamFactory;
use crate::padding::Padding;
use crate::state::LayerState;
use crate::time_mix::TimeMix;

/// An RWKV-7 block: `x += att(ln1(x)); x += ffn(ln2(x))`; the first block also applies `ln0`
/// to the embedding.
#[derive(Module, Debug)]
pub struct Block {
    /// Embedding norm, first block only.
    pub ln0: Option<LayerNorm>,
    /// Norm before time mixing.
    pub ln1: LayerNorm,
    /// Norm before channel mixing.
    pub ln2: LayerNorm,
    /// Time mixing.
    pub att: TimeMix,
    /// Channel mixing.
    pub ffn: ChannelMix,
}

pub(crate) fn layer_norm(d: usize, device: &Device) -> LayerNorm {
    LayerNormConfig::new(d)
        .with_epsilon(f64::from(LAYER_NORM_EPSILON))
        .init(device)
}

/// The epsilon of every layer norm [`layer_norm`] builds (burn's `LayerNorm` keeps its own
/// private, so [`normalise`] needs it from here).
const LAYER_NORM_EPSILON: f32 = 1e-5;

/// `ln`'s normalisation through colswarm's layer norm: the fused kernel at inference (burn's
/// own sums rows in compensated scalar arithmetic, a tenth of a forward pass), burn's under
/// autodiff.
pub(crate) fn normalise<const D: usize>(ln: &LayerNorm, x: Tensor<D>) -> Tensor<D> {
    let gamma = ln.gamma.val();
    let beta = match &ln.beta {
        Some(beta) => beta.val(),
        None => gamma.zeros_like(),
    };
    colswarm_kernels::layer_norm(x, gamma, beta, LAYER_NORM_EPSILON)
}

impl Block {
    pub(crate) fn new(
        config: &RwkvConfig,
        layer: usize,
        params: &mut ParamFactory<'_>,
        device: &Device,
    ) -> Self {
        let d = config.d_model;
        Self {
            ln0: (layer == 0).then(|| layer_norm(d, device)),
            ln1: layer_norm(d, device),
            ln2: layer_norm(d, device),
            att: TimeMix::new(config, layer, &mut params.fork()),
            ffn: ChannelMix::new(config, layer, &mut params.fork()),
        }
    }

    /// Sequence mode.
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, time, d]`; `v_first`: `[batch·time, d]` (absent for the first block)
    /// - returns `[batch, time, d]`, the new state and `v_first`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        state: LayerState,
        v_first: Option<Tensor<2>>,
        padding: Option<&Padding>,
    ) -> (Tensor<3>, LayerState, Tensor<2>) {
        let x = self.embedding_norm(x);
        let (att, att_shift, wkv, v_first) = self.att.forward(
            normalise(&self.ln1, x.clone()),
            state.att_shift,
            state.wkv,
            v_first,
            padding,
        );
        let x = x + att;
        let (ffn, ffn_shift) =
            self.ffn
                .forward(normalise(&self.ln2, x.clone()), state.ffn_shift, padding);
        let state = LayerState {
            wkv,
            att_shift,
            ffn_shift,
        };
        (x + ffn, state, v_first)
    }

    /// `ln0` on the first block's input (the embedding); the identity on the others.
    fn embedding_norm<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match &self.ln0 {
            Some(ln0) => normalise(ln0, x),
            None => x,
        }
    }

    /// Sequence mode for the time mixing's recurrent state alone ([`TimeMix::forward_state`]):
    /// what a last block must compute when only the states are read, without its channel
    /// mixing.
    ///
    /// # Shapes
    ///
    /// As [`Self::forward`]; returns the new `wkv`, `[batch, heads, n, n]`.
    pub fn forward_wkv(
        &self,
        x: Tensor<3>,
        state: LayerState,
        v_first: Option<Tensor<2>>,
        padding: Option<&Padding>,
    ) -> Tensor<4> {
        let x = self.embedding_norm(x);
        self.att.forward_state(
            normalise(&self.ln1, x),
            state.att_shift,
            state.wkv,
            v_first,
            padding,
        )
    }

    /// Step mode: one token per sequence.
    ///
    /// # Shapes
    ///
    /// - `x`: `[batch, d]`; `v_first`: `[batch, d]` → `[batch, d]`
    pub fn step(
        &self,
        x: Tensor<2>,
        state: LayerState,
        v_first: Option<Tensor<2>>,
    ) -> (Tensor<2>, LayerState, Tensor<2>) {
        let x = self.embedding_norm(x);
        let (att, att_shift, wkv, v_first) = self.att.step(
            normalise(&self.ln1, x.clone()),
            state.att_shift,
            state.wkv,
            v_first,
        );
        let x = x + att;
        let x_ffn = normalise(&self.ln2, x.clone());
        let [batch, d] = x_ffn.dims();
        let ffn = self
            .ffn
            .mix(x_ffn.clone().reshape([batch, 1, d]), state.ffn_shift);
        let state = LayerState {
            wkv,
            att_shift,
            ffn_shift: x_ffn,
        };
        (x + ffn, state, v_first)
    }
}
