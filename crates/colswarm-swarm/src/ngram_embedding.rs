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
use burn::tensor::{DType, Device, Tensor, TensorCreationOptions, TensorData};
use colswarm_kernels::{KernelImpl, embedding_bag};
use half::f16;

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

    /// Holds the table in half floats where that loses nothing, for inference: when every
    /// value is a half float (models store their n-gram tables so) and the table lives on a
    /// plain CPU device, whose fused embedding bag reads the halves as they are. Half the
    /// memory, half the bytes a bag fetches, the same sums. Returns whether it did.
    ///
    /// Not for a model that will train: its table would then be a half-float parameter.
    pub fn hold_in_half_if_exact(&mut self) -> bool {
        let weight = self.weight.val();
        let device = weight.device();
        let on_cpu = KernelImpl::FusedSerial.is_available(&device, DType::F32);
        if !on_cpu || device.is_autodiff() || weight.dtype() != DType::F32 {
            return false;
        }
        let shape = weight.shape();
        let data = weight.into_data();
        let Some(halves) = data.as_slice::<f32>().ok().and_then(exact_halves) else {
            return false;
        };
        let options = TensorCreationOptions::new(device).with_dtype(DType::F16);
        let half = Tensor::from_data(TensorData::new(halves, shape), options);
        self.weight = Param::from_tensor(half);
        true
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

/// `values` as half floats, if every one is a half float (`None` at the first that is not).
/// Most are normal halves, whose bits are moved directly; the rest go through `half`.
fn exact_halves(values: &[f32]) -> Option<Vec<f16>> {
    values
        .iter()
        .map(|&value| {
            let bits = value.to_bits();
            let (sign, exponent, mantissa) = (bits >> 31, (bits >> 23) & 0xff, bits & 0x7f_ffff);
            // A normal half: exponent −14..=15 (biased 113..=142), the mantissa's low 13 bits 0.
            if (113..=142).contains(&exponent) && mantissa & 0x1fff == 0 {
                let half = (sign << 15) | ((exponent - 112) << 10) | (mantissa >> 13);
                return Some(f16::from_bits(half as u16));
            }
            let half = f16::from_f32(value);
            (half.to_f32().to_bits() == bits).then_some(half)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Tolerance;

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
    fn a_table_of_half_floats_is_held_in_half_and_sums_the_same() {
        // A table of halves (k / 8), then one holding 0.1, which no half holds.
        let halves: Vec<f32> = (0..12).map(|k| k as f32 / 8.0 - 0.5).collect();
        let bags: [&[(u32, f32)]; 2] = [&[(1, 0.3), (5, -1.7)], &[(0, 2.0)]];
        let mut e = embedding(halves, 6, 2);
        let before = e.forward(&bags).unwrap().into_data();
        assert!(e.hold_in_half_if_exact());
        assert_eq!(e.weight.val().dtype(), DType::F16);
        let after = e.forward(&bags).unwrap().into_data();
        assert_eq!(
            before.as_slice::<f32>().unwrap(),
            after.as_slice::<f32>().unwrap()
        );

        let mut inexact = embedding(vec![0.1, 0.5, 0.25, 1.0], 2, 2);
        assert!(!inexact.hold_in_half_if_exact());
        assert_eq!(inexact.weight.val().dtype(), DType::F32);
    }

    #[test]
    fn exact_halves_agree_with_half_and_refuse_what_is_not_one() {
        let exact = [
            0.0,
            -0.0,
            1.0,
            -2.5,
            65504.0,
            6.103_515_6e-5,  // the smallest normal half
            5.960_464_5e-8,  // the smallest subnormal half
            -3.051_757_8e-5, // a subnormal half
            0.333_251_95,    // 0.333 rounded to a half
        ];
        let halves = exact_halves(&exact).expect("all are halves");
        for (h, v) in halves.iter().zip(exact) {
            assert_eq!(h.to_bits(), f16::from_f32(v).to_bits(), "{v}");
        }
        for inexact in [0.1f32, 65520.0, 1e-9, 1.0 + f32::EPSILON] {
            assert!(exact_halves(&[1.0, inexact]).is_none(), "{inexact}");
        }
    }

    #[test]
    fn a_table_that_may_train_stays_in_f32() {
        let mut e = NgramEmbedding {
            weight: Param::from_tensor(Tensor::zeros([4, 2], &Device::flex().autodiff())),
        };
        assert!(!e.hold_in_half_if_exact());
        assert_eq!(e.weight.val().dtype(), DType::F32);
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
