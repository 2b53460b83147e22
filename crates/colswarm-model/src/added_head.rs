//! The head of a namespace added to a trained model (`colswarm fine-tune`): a classifier over
//! what the frozen model already computes for a column, its column representation beside its
//! own CTA logits, so the new labels learn from everything the shipped namespaces know. The
//! shipped heads are not touched: their logits come first in every row and stay bit for bit
//! what they were; the added namespaces' logits are appended after them.
//!
//! The file `namespaces/NAME.safetensors` holds the feature standardisation (`shift`, `scale`)
//! and the layers; [`crate::Namespace::head`] names it with its checksum.

use std::path::Path;

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_rwkv::checkpoint::CheckpointFile;
use colswarm_rwkv::init::ParamFactory;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;

/// Where an added namespace's head lies inside the model directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadFile {
    /// Path relative to the model directory.
    pub path: String,
    /// SHA-256 of the file, checked on load.
    pub sha256: String,
}

/// Configuration of an [`AddedHead`].
#[derive(Config, Debug, PartialEq)]
pub struct AddedHeadConfig {
    /// Width of the features: the primary's `d_model` plus its CTA outputs.
    pub n_features: usize,
    /// Labels of the namespace.
    pub n_labels: usize,
}

/// A linear head over standardised features, `output((x - shift) · scale)`, read through a
/// softmax or per-label sigmoids (a hidden tanh layer measured worse, at 20 columns per label
/// and with thousands).
#[derive(Module, Debug)]
pub struct AddedHead {
    /// Subtracted from each feature (the training features' mean).
    pub shift: Param<Tensor<1>>,
    /// Multiplies each shifted feature (one over the training features' deviation).
    pub scale: Param<Tensor<1>>,
    /// The output layer.
    pub output: Linear,
}

impl AddedHeadConfig {
    /// A head with standardisation off (`shift` 0, `scale` 1), weights drawn from `seed`.
    pub fn init(&self, seed: u64, device: &Device) -> AddedHead {
        let mut params = ParamFactory::new(seed, device);
        AddedHead {
            shift: params.constant(0.0, [self.n_features]),
            scale: params.constant(1.0, [self.n_features]),
            output: params.linear(self.n_features, self.n_labels, true),
        }
    }
}

impl AddedHead {
    /// The same layers with a new standardisation of the features.
    pub fn with_standardisation(mut self, shift: &[f32], scale: &[f32]) -> Self {
        let device = self.output.weight.device();
        let vector = |values: &[f32]| {
            Param::from_tensor(Tensor::<1>::from_data(
                TensorData::new(values.to_vec(), [values.len()]),
                &device,
            ))
        };
        self.shift = vector(shift);
        self.scale = vector(scale);
        self
    }

    /// The standardised features.
    ///
    /// # Shapes
    ///
    /// - `features`: `[m, n_features]` → `[m, n_features]`
    pub fn standardise(&self, features: Tensor<2>) -> Tensor<2> {
        let shift = self.shift.val().unsqueeze::<2>();
        let scale = self.scale.val().unsqueeze::<2>();
        (features - shift) * scale
    }

    /// Logits of standardised features ([`Self::standardise`]): what training differentiates.
    ///
    /// # Shapes
    ///
    /// - `standardised`: `[m, n_features]` → `[m, n_labels]`
    pub fn logits(&self, standardised: Tensor<2>) -> Tensor<2> {
        self.output.forward(standardised)
    }

    /// Logits of raw features ([`added_features`]).
    ///
    /// # Shapes
    ///
    /// - `features`: `[m, n_features]` → `[m, n_labels]`
    pub fn forward(&self, features: Tensor<2>) -> Tensor<2> {
        self.logits(self.standardise(features))
    }

    /// Loads the head a [`HeadFile`] names inside `dir`, checking its checksum.
    pub fn load(
        dir: &Path,
        file: &HeadFile,
        n_features: usize,
        n_labels: usize,
        device: &Device,
    ) -> Result<Self, ModelError> {
        let path = dir.join(&file.path);
        let sha256 = colswarm_swarm::manifest::sha256_file(&path)?;
        if sha256 != file.sha256 {
            return Err(ModelError::File {
                path,
                reason: format!(
                    "checksum {sha256} differs from the {} the label space records",
                    file.sha256
                ),
            });
        }
        let head = AddedHeadConfig::new(n_features, n_labels).init(0, device);
        Ok(CheckpointFile::open(&path)?.load_into(head, device)?)
    }
}

/// The features an added head reads: each column's representation beside the model's own CTA
/// logits for it (before any label-name prior or domain expert).
///
/// # Shapes
///
/// - `columns`: `[m, d_model]`, `cta_logits`: `[m, cta_labels]` → `[m, d_model + cta_labels]`
pub fn added_features(columns: Tensor<2>, cta_logits: Tensor<2>) -> Tensor<2> {
    Tensor::cat(vec![columns, cta_logits], 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_rwkv::checkpoint::save_module;
    use std::collections::HashMap;

    fn rows(t: Tensor<2>) -> Vec<f32> {
        t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn standardisation_then_a_linear_layer_matches_the_formula() {
        let device = Device::flex();
        let head = AddedHeadConfig::new(2, 3)
            .init(7, &device)
            .with_standardisation(&[1.0, -2.0], &[0.5, 2.0]);
        let x = [3.0f32, 1.0];
        let features = Tensor::<2>::from_data(TensorData::new(x.to_vec(), [1, 2]), &device);
        let got = rows(head.forward(features));
        let w = rows(head.output.weight.val());
        let b = rows(head.output.bias.as_ref().unwrap().val().unsqueeze::<2>());
        let z = [(3.0 - 1.0) * 0.5, (1.0 + 2.0) * 2.0];
        for (j, g) in got.iter().enumerate() {
            let want = z[0] * w[j] + z[1] * w[3 + j] + b[j];
            assert!((g - want).abs() < 1e-5, "label {j}: {g} vs {want}");
        }
    }

    #[test]
    fn a_saved_head_loads_with_its_checksum_and_a_changed_file_is_refused() {
        let device = Device::flex();
        let dir = tempfile::tempdir().unwrap();
        let head = AddedHeadConfig::new(4, 2)
            .init(1, &device)
            .with_standardisation(&[0.1; 4], &[2.0; 4]);
        let path = dir.path().join("h.safetensors");
        save_module(&head, HashMap::new(), &path).unwrap();
        let mut file = HeadFile {
            path: "h.safetensors".into(),
            sha256: colswarm_swarm::manifest::sha256_file(&path).unwrap(),
        };
        let loaded = AddedHead::load(dir.path(), &file, 4, 2, &device).unwrap();
        let x = Tensor::<2>::from_data(TensorData::new(vec![0.3f32; 8], [2, 4]), &device);
        assert_eq!(rows(loaded.forward(x.clone())), rows(head.forward(x)));
        file.sha256 = "0".repeat(64);
        let message = AddedHead::load(dir.path(), &file, 4, 2, &device)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("h.safetensors") && message.contains("checksum"),
            "{message}"
        );
    }
}
