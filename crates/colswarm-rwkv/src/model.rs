//! The RWKV-7 model: byte embedding, blocks, final norm.

use burn::module::Module;
use burn::nn::{Embedding, LayerNorm};
use burn::tensor::{Device, Int, Tensor};

use crate::block::{Block, layer_norm, normalise};
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

/// What [`Rwkv::read_blocks`] leaves: the last block's output, the blocks' states, and what
/// the next block would read besides its input.
struct BlocksRead {
    x: Tensor<3>,
    layers: Vec<crate::state::LayerState>,
    v_first: Option<Tensor<2>>,
    padding: Option<Padding>,
}

// Here rather than beside the configuration, so that the configuration does not depend on the
// model it builds.
impl RwkvConfig {
    /// Builds a model with the official RWKV-7 initialisation, drawing every random number from
    /// `seed` (the same seed gives the same weights on every backend).
    ///
    /// # Panics
    ///
    /// If the configuration is invalid; call [`RwkvConfig::validate`] first for configs that come
    /// from user input.
    pub fn init(&self, seed: u64, device: &Device) -> Rwkv {
        if let Err(err) = self.validate() {
            panic!("{err}");
        }
        Rwkv::new(self, seed, device)
    }
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
        let read = self.read_blocks(tokens, lengths, state, self.blocks.len());
        RwkvOutput {
            hidden: normalise(&self.ln_out, read.x),
            state: RwkvState {
                layers: read.layers,
            },
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
        let Some(last) = self.blocks.last() else {
            return Vec::new();
        };
        let [batch, _] = tokens.dims();
        let mut zeros = self.zero_state(batch, &tokens.device());
        let Some(last_state) = zeros.layers.pop() else {
            return Vec::new();
        };
        let read = self.read_blocks(tokens, lengths, Some(zeros), self.blocks.len() - 1);
        let mut states: Vec<Tensor<4>> = read.layers.into_iter().map(|l| l.wkv).collect();
        states.push(last.forward_wkv(read.x, last_state, read.v_first, read.padding.as_ref()));
        states
    }

    /// Embeds `tokens` and runs the first `blocks` blocks in full from `state` (zeros when
    /// `None`).
    ///
    /// # Shapes
    ///
    /// - `tokens`: `[batch, time]`; returns `x` `[batch, time, d]` and those blocks' states.
    fn read_blocks(
        &self,
        tokens: Tensor<2, Int>,
        lengths: Option<&[usize]>,
        state: Option<RwkvState>,
        blocks: usize,
    ) -> BlocksRead {
        let [batch, time] = tokens.dims();
        let device = tokens.device();
        // A batch whose sequences all fill it needs no mask: multiplying by ones and taking
        // the last position change nothing, and the mask costs three products a block.
        let padding = lengths
            .filter(|lengths| time == 0 || lengths.iter().any(|&n| n != time))
            .map(|lengths| Padding::new(lengths, time, &device));
        let state = state.unwrap_or_else(|| self.zero_state(batch, &device));
        let mut x = self.emb.forward(tokens);
        let mut v_first = None;
        let mut layers = Vec::with_capacity(blocks);
        for (block, layer_state) in self.blocks.iter().zip(state.layers).take(blocks) {
            let (out, new_state, first) = block.forward(x, layer_state, v_first, padding.as_ref());
            x = out;
            v_first = Some(first);
            layers.push(new_state);
        }
        BlocksRead {
            x,
            layers,
            v_first,
            padding,
        }
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
        (normalise(&self.ln_out, x), RwkvState { layers })
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
