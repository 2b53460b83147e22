//! The recurrent state of an RWKV-7 model.

use burn::tensor::{Device, Int, Tensor};

use crate::config::RwkvConfig;

/// The recurrent state of one block, for a batch of sequences.
///
/// This is everything the block remembers of the tokens read so far: continuing from it gives
/// exactly the result of reading the whole sequence at once.
#[derive(Clone, Debug)]
pub struct LayerState {
    /// WKV matrices, `[batch, heads, head_size (value), head_size (key)]`: row `i` is the value
    /// channel, column `j` the key channel, and the read-out is `y = S · r`.
    pub wkv: Tensor<4>,
    /// The time-mix token-shift memory: the last token's LN1 output, `[batch, d_model]`.
    pub att_shift: Tensor<2>,
    /// The channel-mix token-shift memory: the last token's LN2 output, `[batch, d_model]`.
    pub ffn_shift: Tensor<2>,
}

/// The recurrent state of a whole model: one [`LayerState`] per block.
#[derive(Clone, Debug)]
pub struct RwkvState {
    /// Per-block states, first block first.
    pub layers: Vec<LayerState>,
}

impl LayerState {
    /// The state before any token: all zeros.
    pub fn zeros(config: &RwkvConfig, batch: usize, device: &Device) -> Self {
        let (h, n, d) = (config.n_heads(), config.head_size, config.d_model);
        Self {
            wkv: Tensor::zeros([batch, h, n, n], device),
            att_shift: Tensor::zeros([batch, d], device),
            ffn_shift: Tensor::zeros([batch, d], device),
        }
    }

    /// Keeps the given batch rows, in the given order.
    pub fn select(&self, rows: Tensor<1, Int>) -> Self {
        Self {
            wkv: self.wkv.clone().select(0, rows.clone()),
            att_shift: self.att_shift.clone().select(0, rows.clone()),
            ffn_shift: self.ffn_shift.clone().select(0, rows),
        }
    }

    /// Joins the batch rows of several states.
    pub fn cat(states: Vec<Self>) -> Self {
        let mut wkv = Vec::with_capacity(states.len());
        let mut att = Vec::with_capacity(states.len());
        let mut ffn = Vec::with_capacity(states.len());
        for state in states {
            wkv.push(state.wkv);
            att.push(state.att_shift);
            ffn.push(state.ffn_shift);
        }
        Self {
            wkv: Tensor::cat(wkv, 0),
            att_shift: Tensor::cat(att, 0),
            ffn_shift: Tensor::cat(ffn, 0),
        }
    }

    /// Cuts the state out of the autodiff graph (for frozen models and truncated BPTT).
    pub fn detach(self) -> Self {
        Self {
            wkv: self.wkv.detach(),
            att_shift: self.att_shift.detach(),
            ffn_shift: self.ffn_shift.detach(),
        }
    }
}

impl RwkvState {
    /// The state before any token, for `batch` sequences.
    pub fn zeros(config: &RwkvConfig, batch: usize, device: &Device) -> Self {
        Self {
            layers: (0..config.n_layers)
                .map(|_| LayerState::zeros(config, batch, device))
                .collect(),
        }
    }

    /// Number of sequences in the batch.
    pub fn batch_size(&self) -> usize {
        self.layers.first().map_or(0, |l| l.wkv.dims()[0])
    }

    /// Keeps the given batch rows, in the given order.
    pub fn select(&self, rows: Tensor<1, Int>) -> Self {
        Self {
            layers: self.layers.iter().map(|l| l.select(rows.clone())).collect(),
        }
    }

    /// Repeats each row `times` times, consecutively (`[a, b]` → `[a, a, b, b]` for 2): lets
    /// several query segments continue from the state of the same table.
    pub fn repeat_rows(&self, times: usize) -> Self {
        let batch = self.batch_size();
        let rows: Vec<i64> = (0..batch as i64)
            .flat_map(|row| std::iter::repeat_n(row, times))
            .collect();
        let device = self
            .layers
            .first()
            .map(|l| l.wkv.device())
            .unwrap_or_else(Device::flex);
        self.select(Tensor::from_data(rows.as_slice(), &device))
    }

    /// Cuts the whole state out of the autodiff graph.
    pub fn detach(self) -> Self {
        Self {
            layers: self.layers.into_iter().map(LayerState::detach).collect(),
        }
    }
}
