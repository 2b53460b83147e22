//! The RWKV-7 model: byte embedding, blocks, final norm.

use burn::module::Module;
use burn::nn::{Embedding, LayerNorm};
use burn::tensor::{Device, Int, Tensor};

use crate::block::{Block, layer_norm};
use crate::config::RwkvConfig;
use crate::init::ParamFactory;
use crate::padding::Padding;
use crate::state::RwkvState;

/// An RWKV-7 model producing hidden states (no language-model head: colswarm's heads live in
/// the swarm crate).
#[derive(Module, Debug)]
pub struct Rwkv {
    /// Token embedding, `[vocab, d]`.
    pub emb: Embedding,
    /// The blocks, first to last.
    pub blocks: Vec<Block>,
    /// Final norm.
    pub ln_out: LayerNorm,
}

/// What [`Rwkv::forward`] returns.
#[derive(Clone, Debug)]
pub struct RwkvOutput {
    /// Final-norm hidden states, `[batch, time, d]`. Values at padded positions are unspecified.
    pub hidden: Tensor<3>,
    /// The state after each sequence's last real token.
    pub state: RwkvState,
}

impl Rwkv {
    pub(crate) fn new(config: &RwkvConfig, seed: u64, device: &Device) -> Self {
        let mut params = ParamFactory::new(seed, device);
        let emb = Embedding {
            weight: params.uniform(1e-4, [config.vocab_size, config.d_model]),
        };
        let blocks = (0..config.n_layers)
            .map(|layer| Block::new(config, layer, &mut params.fork(), device))
            .collect();
        Self {
            emb,
            blocks,
            ln_out: layer_norm(config.d_model, device),
        }
    }

    /// Model width.
    pub fn d_model(&self) -> usize {
        self.emb.weight.shape().dims::<2>()[1]
    }

    /// Sequence mode: reads a batch of right-padded token sequences.
    ///
    /// `lengths[b]` is the number of real tokens of sequence `b` (all of `time` when `None`);
    /// the returned state is each sequence's state after its last real token, whatever the
    /// padding. `state` continues earlier reading (zeros when `None`).
    ///
    /// # Shapes
    ///
    /// - `tokens`: `[batch, time]`
    /// - returns hidden `[batch, time, d]` and the state.
    pub fn forward(
        &self,
        tokens: Tensor<2, Int>,
        lengths: Option<&[usize]>,
        state: Option<RwkvState>,
    ) -> RwkvOutput {
        let [batch, time] = tokens.dims();
        let device = tokens.device();
        let padding = lengths.map(|lengths| Padding::new(lengths, time, &device));
        let state = state.unwrap_or_else(|| self.zero_state(batch, &device));
        let mut x = self.emb.forward(tokens);
        let mut v_first = None;
        let mut layers = Vec::with_capacity(self.blocks.len());
        for (block, layer_state) in self.blocks.iter().zip(state.layers) {
            let (out, new_state, first) = block.forward(x, layer_state, v_first, padding.as_ref());
            x = out;
            v_first = Some(first);
            layers.push(new_state);
        }
        RwkvOutput {
            hidden: self.ln_out.forward(x),
            state: RwkvState { layers },
        }
    }

    /// Sequence mode for the recurrent states alone, from zeros: each layer's `wkv` after each
    /// sequence's last real token, equal to [`Self::forward`]'s, without what only the hidden
    /// states need (the last block's read-out and channel mixing, the final norm). A swarm's
    /// specialists are read this way.
    ///
    /// # Shapes
    ///
    /// - `tokens`: `[batch, time]`
    /// - returns one `[batch, heads, n, n]` per layer, first to last.
    pub fn read_wkv_states(
        &self,
        tokens: Tensor<2, Int>,
        lengths: Option<&[usize]>,
    ) -> Vec<Tensor<4>> {
        let [batch, time] = tokens.dims();
        let device = tokens.device();
        let padding = lengths.map(|lengths| Padding::new(lengths, time, &device));
        let state = self.zero_state(batch, &device);
        let mut x = self.emb.forward(tokens);
        let mut v_first = None;
        let mut states = Vec::with_capacity(self.blocks.len());
        let last = self.blocks.len().saturating_sub(1);
        for (i, (block, layer_state)) in self.blocks.iter().zip(state.layers).enumerate() {
            if i == last {
                states.push(block.forward_wkv(x, layer_state, v_first, padding.as_ref()));
                break;
            }
            let (out, new_state, first) = block.forward(x, layer_state, v_first, padding.as_ref());
            x = out;
            v_first = Some(first);
            states.push(new_state.wkv);
        }
        states
    }

    /// Step mode: reads one token per sequence.
    ///
    /// # Shapes
    ///
    /// - `tokens`: `[batch]`
    /// - returns hidden `[batch, d]` and the new state.
    pub fn step(&self, tokens: Tensor<1, Int>, state: RwkvState) -> (Tensor<2>, RwkvState) {
        let [batch] = tokens.dims();
        let mut x = self
            .emb
            .forward(tokens.reshape([batch, 1]))
            .reshape([batch, self.d_model()]);
        let mut v_first = None;
        let mut layers = Vec::with_capacity(self.blocks.len());
        for (block, layer_state) in self.blocks.iter().zip(state.layers) {
            let (out, new_state, first) = block.step(x, layer_state, v_first);
            x = out;
            v_first = Some(first);
            layers.push(new_state);
        }
        (self.ln_out.forward(x), RwkvState { layers })
    }

    /// The all-zero state for `batch` sequences.
    pub fn zero_state(&self, batch: usize, device: &Device) -> RwkvState {
        let d = self.d_model();
        let layers = self
            .blocks
            .iter()
            .map(|block| {
                let r_k = block.att.r_k.shape().dims::<2>();
                crate::state::LayerState {
                    wkv: Tensor::zeros([batch, r_k[0], r_k[1], r_k[1]], device),
                    att_shift: Tensor::zeros([batch, d], device),
                    ffn_shift: Tensor::zeros([batch, d], device),
                }
            })
            .collect();
        RwkvState { layers }
    }
}
