//! Model configuration.

use burn::config::Config;

use crate::error::RwkvError;

/// Configuration of an RWKV-7 model; build one with [`RwkvConfig::init`].
///
/// LoRA ranks left at `None` follow the official rule `max(32, round(c·√d / 32)·32)` with
/// `c` = 2.5 (decay, in-context rate), 1.7 (value residual), 5 (gate).
#[derive(Config, Debug, PartialEq)]
pub struct RwkvConfig {
    /// Rows of the embedding table (the tokenizer's vocabulary size).
    pub vocab_size: usize,
    /// Model width `d`.
    pub d_model: usize,
    /// Number of blocks.
    pub n_layers: usize,
    /// Head size `N`; `d_model / head_size` heads.
    #[config(default = 64)]
    pub head_size: usize,
    /// Width of the channel-mix hidden layer; `None` means `4·d_model`.
    #[config(default = "None")]
    pub d_ffn: Option<usize>,
    /// LoRA rank of the decay projection.
    #[config(default = "None")]
    pub decay_rank: Option<usize>,
    /// LoRA rank of the in-context learning rate.
    #[config(default = "None")]
    pub icl_rank: Option<usize>,
    /// LoRA rank of the value-residual gate.
    #[config(default = "None")]
    pub value_rank: Option<usize>,
    /// LoRA rank of the output gate.
    #[config(default = "None")]
    pub gate_rank: Option<usize>,
}

/// `max(32, round(c·√d / 32)·32)` with Python's half-to-even rounding (saturating).
fn official_rank(d_model: usize, factor: f64) -> usize {
    let units = factor * (d_model as f64).sqrt() / 32.0;
    (units.round_ties_even() as usize)
        .saturating_mul(32)
        .max(32)
}

/// The saturating product of `factors`.
fn product(factors: &[usize]) -> usize {
    factors.iter().fold(1, |a: usize, b| a.saturating_mul(*b))
}

/// The saturating sum of `terms`.
fn sum(terms: &[usize]) -> usize {
    terms.iter().fold(0, |a: usize, b| a.saturating_add(*b))
}

impl RwkvConfig {
    /// The cheapest model of this width: heads of size 2, a channel mix 2 wide and every LoRA
    /// rank 1. For tests and fuzzing, where a model is built per input.
    pub fn minimal(vocab_size: usize, d_model: usize, n_layers: usize) -> Self {
        Self::new(vocab_size, d_model, n_layers)
            .with_head_size(2)
            .with_d_ffn(Some(2))
            .with_decay_rank(Some(1))
            .with_icl_rank(Some(1))
            .with_value_rank(Some(1))
            .with_gate_rank(Some(1))
    }

    /// Number of heads.
    pub fn n_heads(&self) -> usize {
        self.d_model / self.head_size
    }
    /// Channel-mix hidden width.
    pub fn ffn_width(&self) -> usize {
        self.d_ffn.unwrap_or(self.d_model.saturating_mul(4))
    }
    /// LoRA rank of the decay projection.
    pub fn decay_lora_rank(&self) -> usize {
        self.decay_rank
            .unwrap_or_else(|| official_rank(self.d_model, 2.5))
    }
    /// LoRA rank of the in-context learning rate.
    pub fn icl_lora_rank(&self) -> usize {
        self.icl_rank
            .unwrap_or_else(|| official_rank(self.d_model, 2.5))
    }
    /// LoRA rank of the value-residual gate.
    pub fn value_lora_rank(&self) -> usize {
        self.value_rank
            .unwrap_or_else(|| official_rank(self.d_model, 1.7))
    }
    /// LoRA rank of the output gate.
    pub fn gate_lora_rank(&self) -> usize {
        self.gate_rank
            .unwrap_or_else(|| official_rank(self.d_model, 5.0))
    }

    /// Checks the configuration for consistency.
    pub fn validate(&self) -> Result<(), RwkvError> {
        let fail = |msg: String| Err(RwkvError::InvalidConfig(msg));
        if self.vocab_size == 0 || self.d_model == 0 || self.n_layers == 0 || self.head_size == 0 {
            return fail(format!(
                "vocab_size ({}), d_model ({}), n_layers ({}) and head_size ({}) must all be positive",
                self.vocab_size, self.d_model, self.n_layers, self.head_size
            ));
        }
        if !self.d_model.is_multiple_of(self.head_size) {
            return fail(format!(
                "d_model ({}) must be a multiple of head_size ({})",
                self.d_model, self.head_size
            ));
        }
        let ranks = [
            self.d_ffn,
            self.decay_rank,
            self.icl_rank,
            self.value_rank,
            self.gate_rank,
        ];
        if ranks.contains(&Some(0)) {
            return fail("d_ffn and LoRA ranks must be positive when given".into());
        }
        Ok(())
    }

    /// Number of trainable parameters of a model with this configuration. Saturates at
    /// `usize::MAX`: a config read from a file may describe more parameters than `usize` counts,
    /// and must then compare as huge (the loader refuses it), not wrap to a small number.
    pub fn num_params(&self) -> usize {
        let d = self.d_model;
        let ranks = sum(&[
            self.decay_lora_rank(),
            self.icl_lora_rank(),
            self.gate_lora_rank(),
        ]);
        let per_layer = sum(&[
            product(&[4, d, d]),                // r, k, v, o
            product(&[2, d, self.ffn_width()]), // channel mix
            product(&[2, d, ranks]),            // decay, in-context rate and gate LoRAs
            product(&[11, d]),                  // lerps, w0 a0, k_k k_a, ffn lerp
            d,                                  // r_k
            product(&[6, d]),                   // ln_x, ln1, ln2
        ]);
        let value_residual = product(&[
            self.n_layers.saturating_sub(1),
            sum(&[product(&[2, d, self.value_lora_rank()]), d]),
        ]);
        sum(&[
            product(&[self.vocab_size, d]),
            product(&[4, d]), // ln0, ln_out
            product(&[self.n_layers, per_layer]),
            value_residual,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    #[test]
    fn official_ranks_match_the_reference_table() {
        // docs/RWKV7.md §3: 32/32/32/64 at d=256; 64/64/32/128 at d=512 and d=768.
        let c = RwkvConfig::new(256, 256, 1);
        assert_eq!(
            (
                c.decay_lora_rank(),
                c.icl_lora_rank(),
                c.value_lora_rank(),
                c.gate_lora_rank()
            ),
            (32, 32, 32, 64)
        );
        for d in [512, 768] {
            let c = RwkvConfig::new(256, d, 1);
            assert_eq!(
                (
                    c.decay_lora_rank(),
                    c.icl_lora_rank(),
                    c.value_lora_rank(),
                    c.gate_lora_rank()
                ),
                (64, 64, 32, 128)
            );
        }
    }

    #[test]
    fn validate_rejects_width_not_multiple_of_head_size() {
        let err = RwkvConfig::new(256, 100, 1).validate().unwrap_err();
        assert!(err.to_string().contains("multiple of head_size"), "{err}");
    }

    #[test]
    fn num_params_saturates_instead_of_wrapping() {
        let huge = RwkvConfig::new(4, 1 << 40, 3).with_head_size(1 << 20);
        assert_eq!(huge.num_params(), usize::MAX);
        let huge = RwkvConfig::new(4, usize::MAX / 2, 1).with_head_size(1);
        assert_eq!(huge.num_params(), usize::MAX);
    }

    #[test]
    fn num_params_counts_the_built_model() {
        use burn::module::Module;
        let config = RwkvConfig::new(40, 32, 2)
            .with_head_size(16)
            .with_decay_rank(Some(4))
            .with_icl_rank(Some(4))
            .with_value_rank(Some(4))
            .with_gate_rank(Some(8));
        let model = config.init(0, &Device::flex());
        assert_eq!(model.num_params(), config.num_params());
    }
}
