//! Column fusion: each column of the primary attends to the open specialists' readings of the
//! same column, through a gate that starts closed.
//!
//! ```text
//! h' = h + tanh(α) · Σᵢ softmaxᵢ(q·kᵢ / √a) · vᵢ,   q = W_q·h,  kᵢ = W_kᵢ·sᵢ,  vᵢ = W_vᵢ·sᵢ
//! ```
//!
//! over the specialists `i` open for the column's table, with `sᵢ` specialist `i`'s
//! representation of the column (any width). `α` starts at 0, so at initialisation `h' = h`
//! exactly and the swarm is its primary (Flamingo's gate; CALM's cross-attention from the anchor
//! to the augmenting model). A column of a table with no open specialist keeps `h`.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::activation::{softmax, tanh};
use burn::tensor::{Device, Tensor};
use colswarm_rwkv::init::ParamFactory;

/// Configuration of a [`ColumnAttention`].
#[derive(Config, Debug, PartialEq)]
pub struct ColumnAttentionConfig {
    /// Width of the primary's column representations.
    pub d_model: usize,
    /// Width of each specialist's column representations, in specialist order.
    pub specialists: Vec<usize>,
    /// Width of queries and keys.
    #[config(default = 32)]
    pub d_attention: usize,
}

/// Gated cross-attention from the primary's columns to the specialists' (module doc).
#[derive(Module, Debug)]
pub struct ColumnAttention {
    /// `W_q`, `d_model → d_attention`.
    pub query: Linear,
    /// `W_kᵢ`, `dᵢ → d_attention`, one per specialist.
    pub keys: Vec<Linear>,
    /// `W_vᵢ`, `dᵢ → d_model`, one per specialist.
    pub values: Vec<Linear>,
    /// `α`, `[1]`.
    pub gate: Param<Tensor<1>>,
}

impl ColumnAttentionConfig {
    /// Builds the attention: projections drawn from `seed` (uniform, ±1/√fan-in), the gate at 0.
    pub fn init(&self, seed: u64, device: &Device) -> ColumnAttention {
        let mut params = ParamFactory::new(seed, device);
        let (d, a) = (self.d_model, self.d_attention);
        let query = params.linear(d, a, false);
        let keys = self
            .specialists
            .iter()
            .map(|&width| params.linear(width, a, false))
            .collect();
        let values = self
            .specialists
            .iter()
            .map(|&width| params.linear(width, d, false))
            .collect();
        ColumnAttention {
            query,
            keys,
            values,
            gate: params.constant(0.0, [1]),
        }
    }
}

impl ColumnAttention {
    /// Number of specialists.
    pub fn specialists(&self) -> usize {
        self.keys.len()
    }

    /// The primary's columns with what they read from the open specialists' columns added.
    ///
    /// # Shapes
    ///
    /// - `columns`: `[rows, d_model]`
    /// - `specialists[i]`: `[rows, dᵢ]` (any values where `i` is closed)
    /// - `open`: `[rows, specialists]`, 1 where specialist `i` read the row's table
    /// - output: `[rows, d_model]`
    pub fn forward(
        &self,
        columns: Tensor<2>,
        specialists: &[Tensor<2>],
        open: Tensor<2>,
    ) -> Tensor<2> {
        let [rows, d] = columns.dims();
        let a = self.query.weight.shape().dims::<2>()[1];
        let query = self.query.forward(columns.clone());
        let closed = open.clone().equal_elem(0.0);
        // A closed specialist's reading may be anything: zeroed before it is projected.
        let readings: Vec<Tensor<2>> = specialists
            .iter()
            .enumerate()
            .map(|(i, reading)| {
                let shut = closed.clone().slice([0..rows, i..i + 1]);
                let width = reading.dims()[1];
                reading.clone().mask_fill(shut.expand([rows, width]), 0.0)
            })
            .collect();
        let scores: Vec<Tensor<2>> = readings
            .iter()
            .zip(&self.keys)
            .map(|(reading, key)| {
                (query.clone() * key.forward(reading.clone())).sum_dim(1) / (a as f64).sqrt()
            })
            .collect();
        let scores = Tensor::cat(scores, 1).mask_fill(closed, -1e9);
        // A row with no open specialist gets a uniform softmax, zeroed here.
        let weights = softmax(scores, 1) * open;
        let mut attended = Tensor::<2>::zeros([rows, d], &columns.device());
        for (i, (reading, value)) in readings.iter().zip(&self.values).enumerate() {
            let weight = weights.clone().slice([0..rows, i..i + 1]);
            attended = attended + value.forward(reading.clone()) * weight;
        }
        columns + attended * tanh(self.gate.val()).reshape([1, 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    fn tensor(values: Vec<f32>, shape: [usize; 2], device: &Device) -> Tensor<2> {
        Tensor::from_data(TensorData::new(values, shape), device)
    }

    fn values(t: Tensor<2>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    /// Three rows of width 4; specialists of widths 2 and 3; row 0 reads both, row 1 the
    /// second, row 2 none.
    fn inputs(device: &Device) -> (Tensor<2>, Vec<Tensor<2>>, Tensor<2>) {
        let columns = tensor(
            (0..12).map(|v| v as f32 / 7.0 - 0.5).collect(),
            [3, 4],
            device,
        );
        let first = tensor(vec![1.0, -2.0, f32::NAN, 0.0, 3.0, 0.5], [3, 2], device);
        let second = tensor((0..9).map(|v| (v as f32).sin()).collect(), [3, 3], device);
        let open = tensor(vec![1.0, 1.0, 0.0, 1.0, 0.0, 0.0], [3, 2], device);
        (columns, vec![first, second], open)
    }

    #[test]
    fn at_initialisation_the_columns_are_the_primary_s_exactly() {
        let device = Device::flex();
        let attention = ColumnAttentionConfig::new(4, vec![2, 3]).init(7, &device);
        let (columns, specialists, open) = inputs(&device);
        let expected = values(columns.clone());
        assert_eq!(
            values(attention.forward(columns, &specialists, open)),
            expected
        );
    }

    #[test]
    fn an_open_gate_adds_the_open_specialists_alone() {
        let device = Device::flex();
        let mut attention = ColumnAttentionConfig::new(4, vec![2, 3]).init(7, &device);
        attention.gate = Param::from_tensor(Tensor::from_data([0.5f32].as_slice(), &device));
        let (columns, specialists, open) = inputs(&device);
        let out = values(attention.forward(columns.clone(), &specialists, open));
        let h = values(columns.clone());
        assert!(out.iter().all(|v| v.is_finite()), "{out:?}");
        // Row 2 reads no specialist: unchanged. Row 1 reads the second alone: its weight is 1,
        // so it adds tanh(½)·W_v₂·s₂.
        assert_eq!(out[8..12], h[8..12]);
        let v2 = values(attention.values[1].forward(specialists[1].clone().slice([1..2, 0..3])));
        for j in 0..4 {
            let want = h[4 + j] + 0.5f32.tanh() * v2[j];
            assert!(
                (out[4 + j] - want).abs() < 1e-5,
                "{} against {want}",
                out[4 + j]
            );
        }
        // Row 0 reads both: something is added.
        assert_ne!(out[0..4], h[0..4]);
    }

    #[test]
    fn the_gate_gets_a_gradient_at_initialisation() {
        let device = Device::flex().autodiff();
        let attention = ColumnAttentionConfig::new(4, vec![2, 3]).init(7, &device);
        let (columns, specialists, open) = inputs(&device);
        let specialists: Vec<Tensor<2>> = specialists
            .into_iter()
            .map(|s| s.clone().mask_fill(s.is_nan(), 0.0))
            .collect();
        let grads = attention
            .forward(columns, &specialists, open)
            .sum()
            .backward();
        let gate = attention.gate.grad(&grads).unwrap().into_scalar::<f32>();
        assert!(gate != 0.0 && gate.is_finite(), "{gate}");
    }
}
