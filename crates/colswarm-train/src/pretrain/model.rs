//! The model a specialist is pretrained as: the RWKV-7 encoder the swarm will freeze, and a
//! linear objective head over its column readings that is dropped once pretraining ends.

use std::ops::Range;

use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm_rwkv::init::ParamFactory;
use colswarm_rwkv::{Rwkv, RwkvConfig};
use colswarm_swarm::column_readings;

/// Mixed into the seed of the head's weights, so they are not the encoder's draws.
const HEAD_SEED_SALT: u64 = 0x005e_ed0f_4ead;

/// Configuration of a [`PretrainModel`].
#[derive(Clone, Debug)]
pub struct PretrainModelConfig {
    /// The encoder (the future specialist).
    pub encoder: RwkvConfig,
    /// Width of the objective's output: classes or the teacher's embedding width.
    pub outputs: usize,
}

/// An encoder and its objective head.
#[derive(Module, Debug)]
pub struct PretrainModel {
    /// The specialist being trained.
    pub encoder: Rwkv,
    /// Column reading → objective output.
    pub head: Linear,
}

impl PretrainModelConfig {
    /// Builds the model; every weight is drawn from `seed`.
    pub fn init(&self, seed: u64, device: &Device) -> PretrainModel {
        let mut params = ParamFactory::new(seed ^ HEAD_SEED_SALT, device);
        PretrainModel {
            encoder: self.encoder.init(seed, device),
            head: params.linear(self.encoder.d_model, self.outputs, true),
        }
    }
}

impl PretrainModel {
    /// The objective's output for every column.
    ///
    /// # Shapes
    ///
    /// - `tables`: one token sequence per table; `spans`: per table, its columns' token ranges
    /// - returns `[columns, outputs]`, columns in table order then span order
    pub fn forward(&self, tables: &[&[u32]], spans: &[Vec<Range<usize>>]) -> Tensor<2> {
        let device = self.head.weight.val().device();
        self.head
            .forward(column_readings(&self.encoder, tables, spans, &device))
    }
}

/// Mean of `1 − cos(prediction, target)` over rows; `targets` are unit vectors.
///
/// # Shapes
///
/// - `predictions`: `[rows, dim]`; `targets`: `rows · dim` values, row-major
pub(crate) fn cosine_loss(predictions: Tensor<2>, targets: &[f32]) -> Tensor<1> {
    let [rows, dim] = predictions.dims();
    let device = predictions.device();
    let targets = Tensor::<2>::from_data(TensorData::new(targets.to_vec(), [rows, dim]), &device);
    let norms = (predictions.clone() * predictions.clone())
        .sum_dim(1)
        .add_scalar(1e-8)
        .sqrt();
    let cosines = (predictions * targets).sum_dim(1) / norms;
    cosines.neg().add_scalar(1.0).mean()
}

/// Mean cross-entropy of `logits` against class indices.
///
/// # Shapes
///
/// - `logits`: `[rows, classes]`; `classes`: `rows` indices
pub(crate) fn cross_entropy(logits: Tensor<2>, classes: &[usize]) -> Tensor<1> {
    let [rows, _] = logits.dims();
    let device = logits.device();
    let index: Vec<i64> = classes.iter().map(|&c| c as i64).collect();
    let index = Tensor::<2, Int>::from_data(TensorData::new(index, [rows, 1]), &device);
    log_softmax(logits, 1).gather(1, index).mean().neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_tables::VOCAB_SIZE;

    fn approx(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn cosine_loss_matches_a_hand_computation() {
        let device = Device::flex();
        let p = Tensor::<2>::from_data(
            TensorData::new(vec![3.0f32, 4.0, 1.0, 0.0], [2, 2]),
            &device,
        );
        // cos((3,4),(1,0)) = 0.6; cos((1,0),(0,1)) = 0 → mean(0.4, 1.0) = 0.7.
        let loss = cosine_loss(p, &[1.0, 0.0, 0.0, 1.0]).into_scalar::<f32>();
        assert!(approx(loss, 0.7), "{loss}");
    }

    #[test]
    fn cross_entropy_matches_a_hand_computation() {
        let device = Device::flex();
        let logits = Tensor::<2>::from_data(
            TensorData::new(vec![0.0f32, 0.0, 2.0, 0.0], [2, 2]),
            &device,
        );
        let expected = (2.0f32.ln() + (1.0 + (-2.0f32).exp()).ln() + 2.0) / 2.0;
        // Row 0: uniform, class 1; row 1: class 1 against a logit 2 higher.
        let loss = cross_entropy(logits, &[1, 1]).into_scalar::<f32>();
        assert!(approx(loss, expected), "{loss} vs {expected}");
    }

    #[test]
    fn forward_gives_one_row_per_column_span() {
        let device = Device::flex();
        let config = PretrainModelConfig {
            encoder: RwkvConfig::new(VOCAB_SIZE, 32, 1).with_head_size(16),
            outputs: 5,
        };
        let model = config.init(3, &device);
        let tables: Vec<&[u32]> = vec![&[257, 65, 66, 263, 67, 258], &[257, 70, 258]];
        let spans = vec![vec![1..3, 3..5], vec![1..2]];
        assert_eq!(model.forward(&tables, &spans).dims(), [3, 5]);
        let again = config.init(3, &device).forward(&tables, &spans);
        let first: Vec<f32> = model
            .forward(&tables, &spans)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert_eq!(
            first,
            again.into_data().try_to_vec::<f32>().unwrap(),
            "seeded init"
        );
    }
}
