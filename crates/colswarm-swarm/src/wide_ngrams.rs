//! Wide n-gram logits: a linear map from each column's bag of hashed character n-grams straight
//! to every CTA label's and CPA relation's logit, added to what the heads compute from the
//! column's representation ("wide & deep", Cheng et al. 2016).
//!
//! The deep path squeezes a column's n-grams into `d_model` numbers shared with the table read
//! and with every namespace's labels; the wide path gives each label its own weight per bucket,
//! so a header word or cell pattern that names one type can move that type's logit alone. The
//! bags are the column n-gram bags ([`crate::ColumnNgramsConfig`]); their buckets are folded
//! (`bucket mod buckets`) onto this path's own, smaller table. Both matrices start at zero.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor};

use crate::error::SwarmError;
use crate::ngram_embedding::{ColumnNgramsConfig, NgramEmbedding};

/// Size of the wide path.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub struct WideNgramsConfig {
    /// Hash buckets (rows of both matrices); n-gram buckets are folded onto them.
    #[config(default = 4096)]
    pub buckets: u32,
}

/// Per-bucket logits of every CTA label and every CPA relation.
#[derive(Module, Debug)]
pub struct WideNgrams {
    /// `[buckets, cta_labels]`: read from the column's own bag.
    pub cta: NgramEmbedding,
    /// `[buckets, cpa_labels]`: read from the bag of a pair's object column.
    pub cpa: NgramEmbedding,
}

impl WideNgramsConfig {
    /// All-zero matrices for `cta_labels` and `cpa_labels` outputs.
    pub fn init(&self, cta_labels: usize, cpa_labels: usize, device: &Device) -> WideNgrams {
        let rows = ColumnNgramsConfig::new().with_buckets(self.buckets.max(1));
        WideNgrams {
            cta: rows.init(cta_labels, device),
            cpa: rows.init(cpa_labels, device),
        }
    }

    /// Parameters [`Self::init`] allocates (saturating).
    pub fn params(&self, cta_labels: usize, cpa_labels: usize) -> usize {
        (self.buckets.max(1) as usize).saturating_mul(cta_labels.saturating_add(cpa_labels))
    }
}

impl WideNgrams {
    /// Rows of both matrices.
    pub fn buckets(&self) -> usize {
        self.cta.buckets()
    }

    /// The wide CTA and CPA logits of each bag.
    ///
    /// # Shapes
    ///
    /// - `bags`: `m` bags of `(bucket, weight)` → (`[m, cta_labels]`, `[m, cpa_labels]`)
    pub fn forward(&self, bags: &[&[(u32, f32)]]) -> Result<(Tensor<2>, Tensor<2>), SwarmError> {
        let buckets = self.buckets() as u32;
        let folded: Vec<Vec<(u32, f32)>> = bags
            .iter()
            .map(|bag| bag.iter().map(|&(b, w)| (b % buckets, w)).collect())
            .collect();
        let folded: Vec<&[(u32, f32)]> = folded.iter().map(Vec::as_slice).collect();
        Ok((self.cta.forward(&folded)?, self.cpa.forward(&folded)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::tensor::{TensorData, Tolerance};

    #[test]
    fn starts_at_zero_with_one_column_per_output() {
        let wide = WideNgramsConfig::new()
            .with_buckets(8)
            .init(3, 2, &Device::flex());
        let (cta, cpa) = wide.forward(&[&[(1, 0.5)], &[(100, 1.0)]]).unwrap();
        assert_eq!(cta.dims(), [2, 3]);
        assert_eq!(cpa.dims(), [2, 2]);
        let zeros = TensorData::zeros::<f32, _>([2, 3]);
        cta.into_data()
            .assert_approx_eq::<f32>(&zeros, Tolerance::default());
        assert_eq!(WideNgramsConfig::new().with_buckets(8).params(3, 2), 40);
    }

    #[test]
    fn buckets_past_the_table_fold_onto_it() {
        let device = Device::flex();
        let mut wide = WideNgramsConfig::new().with_buckets(4).init(1, 1, &device);
        // Row b of the CTA matrix is [b].
        wide.cta.weight = Param::from_tensor(Tensor::from_data(
            TensorData::new(vec![0.0f32, 1.0, 2.0, 3.0], [4, 1]),
            &device,
        ));
        // 9 mod 4 = 1 and 6 mod 4 = 2: 2·1 + 0.5·2.
        let (cta, _) = wide.forward(&[&[(9, 2.0), (6, 0.5)]]).unwrap();
        cta.into_data()
            .assert_approx_eq::<f32>(&TensorData::new(vec![3.0f32], [1, 1]), Tolerance::default());
    }
}
