//! Column n-gram embedding: a column's bag of hashed character n-grams (its header and first
//! cells, see `colswarm_tables::ngrams`), embedded and added to the column's representation.
//!
//! The primary reads a table within a token budget: a wide table leaves a dozen bytes per
//! column, while the n-gram bag sees the header and up to `max_cells` cells of every column.
//! The embedding is an `EmbeddingBag` in the fastText sense: the weighted sum of one learned row
//! per bucket. It starts at zero, so adding it to a trained model leaves its outputs unchanged
//! until training moves it.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor};
use colswarm_kernels::embedding_bag;

use crate::error::SwarmError;

/// The n-gram features a model reads: how columns are hashed (used by whoever builds
/// [`crate::TableBatch::ngrams`]) and the embedding's size.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub struct ColumnNgramsConfig {
    /// Hash buckets: rows of the embedding.
    #[config(default = 16384)]
    pub buckets: u32,
    /// Shortest n-gram, in bytes.
    #[config(default = 2)]
    pub min_n: usize,
    /// Longest n-gram, in bytes.
    #[config(default = 4)]
    pub max_n: usize,
    /// Non-null cells per column that give features.
    #[config(default = 20)]
    pub max_cells: usize,
    /// Whether a column's bag also holds its table's other columns' headers and first cells
    /// (`colswarm_tables::NgramConfig::neighbours`).
    #[config(default = false)]
    pub neighbours: bool,
    /// Whether a column's bag also holds its value statistics
    /// (`colswarm_tables::NgramConfig::value_stats`).
    #[config(default = false)]
    pub value_stats: bool,
}

/// One learned `d_model` row per hash bucket.
#[derive(Module, Debug)]
pub struct NgramEmbedding {
    /// `[buckets, d_model]`.
    pub weight: Param<Tensor<2>>,
}

impl ColumnNgramsConfig {
    /// An all-zero embedding of `d_model` columns.
    pub fn init(&self, d_model: usize, device: &Device) -> NgramEmbedding {
        NgramEmbedding {
            weight: Param::from_tensor(Tensor::zeros([self.buckets as usize, d_model], device)),
        }
    }
}

impl NgramEmbedding {
    /// Rows of the embedding.
    pub fn buckets(&self) -> usize {
        self.weight.dims()[0]
    }

    /// The weighted sum of the rows of each bag's buckets (zeros for an empty bag). A bucket
    /// past the embedding is an error, not a panic: bags come from data.
    ///
    /// # Shapes
    ///
    /// - `bags`: `m` bags of `(bucket, weight)` → `[m, d_model]`
    pub fn forward(&self, bags: &[&[(u32, f32)]]) -> Result<Tensor<2>, SwarmError> {
        let buckets = self.buckets();
        for (row, bag) in bags.iter().enumerate() {
            if let Some(&(bucket, _)) = bag.iter().find(|&&(b, _)| b as usize >= buckets) {
                return Err(SwarmError::Input(format!(
                    "column row {row}: n-gram bucket {bucket} past the model's {buckets} buckets"
                )));
            }
        }
        Ok(embedding_bag(self.weight.val(), bags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{TensorData, Tolerance};

    fn embedding(weights: Vec<f32>, buckets: usize, d: usize) -> NgramEmbedding {
        let device = Device::flex();
        NgramEmbedding {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(weights, [buckets, d]),
                &device,
            )),
        }
    }

    #[test]
    fn starts_at_zero() {
        let e = ColumnNgramsConfig::new()
            .with_buckets(8)
            .init(3, &Device::flex());
        let out = e.forward(&[&[(1, 0.5), (7, 0.5)]]).unwrap();
        out.into_data()
            .assert_approx_eq::<f32>(&TensorData::zeros::<f32, _>([1, 3]), Tolerance::default());
    }

    #[test]
    fn sums_weighted_rows_per_bag() {
        // Row b of the embedding is [b, 10 b].
        let weights: Vec<f32> = (0..4).flat_map(|b| [b as f32, 10.0 * b as f32]).collect();
        let e = embedding(weights, 4, 2);
        let out = e
            .forward(&[&[(1, 2.0), (3, 0.5)], &[], &[(2, 1.0)]])
            .unwrap();
        let expected = TensorData::new(vec![3.5f32, 35.0, 0.0, 0.0, 2.0, 20.0], [3, 2]);
        out.into_data()
            .assert_approx_eq::<f32>(&expected, Tolerance::default());
    }

    #[test]
    fn gradient_reaches_only_the_rows_used() {
        let device = Device::flex().autodiff();
        let e = NgramEmbedding {
            weight: Param::from_tensor(Tensor::zeros([4, 2], &device)),
        };
        let out = e.forward(&[&[(1, 2.0), (3, 0.5)], &[(1, 1.0)]]).unwrap();
        let grads = out.sum().backward();
        let grad = e.weight.grad(&grads).expect("the weight takes part");
        // d(sum)/d(row b) = the sum of b's weights over all bags, in every column.
        let expected = TensorData::new(vec![0f32, 0.0, 3.0, 3.0, 0.0, 0.0, 0.5, 0.5], [4, 2]);
        grad.into_data()
            .assert_approx_eq::<f32>(&expected, Tolerance::default());
    }

    #[test]
    fn a_bucket_past_the_embedding_is_an_error() {
        let e = embedding(vec![0.0; 4], 2, 2);
        let error = e.forward(&[&[(0, 1.0)], &[(2, 1.0)]]).unwrap_err();
        assert!(
            error.to_string().contains("column row 1: n-gram bucket 2"),
            "{error}"
        );
    }
}
