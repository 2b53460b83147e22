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
use burn::tensor::{Device, Tensor, TensorData, f16};
use colswarm_kernels::embedding_bag::{bag_sum, bag_sum_half};
use colswarm_rwkv::checkpoint::CheckpointFile;
use colswarm_rwkv::init::ParamFactory;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;

/// Where an added namespace's head lies inside the model directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadFile {
    /// Path relative to the model directory.
    pub path: String,
    /// SHA-256 of the file, checked on load.
    pub sha256: String,
    /// The namespace's n-gram reader, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ngrams: Option<NgramFile>,
}

/// A linear classifier over the column n-grams the model reads (its `column_ngrams` bag),
/// whose probabilities are mixed into the head's: what the user's labels look like in
/// characters, beside what the frozen model knows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NgramFile {
    /// Path relative to the model directory (`weights` `[buckets, labels]`, `bias`).
    pub path: String,
    /// SHA-256 of the file, checked on load.
    pub sha256: String,
    /// Its share of the mixed probabilities, in `[0, 1]`.
    pub share: f32,
}

/// The n-gram reader's weights, as saved.
#[derive(Module, Debug)]
pub struct NgramWeights {
    /// `[buckets, labels]`.
    pub weights: Param<Tensor<2>>,
    /// `[labels]`.
    pub bias: Param<Tensor<1>>,
}

impl NgramWeights {
    /// Weights from host values (`weights` row-major `[buckets, labels]`).
    pub fn new(weights: &[f32], bias: &[f32], device: &Device) -> Self {
        let labels = bias.len();
        let buckets = weights.len() / labels.max(1);
        NgramWeights {
            weights: Param::from_tensor(Tensor::from_data(
                TensorData::new(weights.to_vec(), [buckets, labels]),
                device,
            )),
            bias: Param::from_tensor(Tensor::from_data(
                TensorData::new(bias.to_vec(), [labels]),
                device,
            )),
        }
    }
}

/// A scorer's weights: in half floats when every one of them is a half float (readers are
/// saved so), which halves the bytes each column's bag sum reads at random; the sums are the
/// same to the bit ([`bag_sum_half`] widens each row exactly).
#[derive(Clone, Debug)]
enum ScorerWeights {
    Full(Vec<f32>),
    Half(Vec<f16>),
}

impl ScorerWeights {
    fn narrowed_if_exact(weights: Vec<f32>) -> Self {
        let exact = weights
            .iter()
            .all(|&w| f16::from_f32(w).to_f32().to_bits() == w.to_bits());
        if exact {
            ScorerWeights::Half(weights.into_iter().map(f16::from_f32).collect())
        } else {
            ScorerWeights::Full(weights)
        }
    }

    fn len(&self) -> usize {
        match self {
            ScorerWeights::Full(w) => w.len(),
            ScorerWeights::Half(w) => w.len(),
        }
    }
}

/// The n-gram reader on the host: sparse dot products per column.
#[derive(Clone, Debug)]
pub struct NgramScorer {
    weights: ScorerWeights,
    bias: Vec<f32>,
    share: f32,
}

impl NgramScorer {
    /// `bias + xᵀW` for one column's n-gram bag.
    pub fn scores(&self, features: &[(u32, f32)]) -> Vec<f32> {
        let n = self.bias.len();
        let mut scores = self.bias.clone();
        if n == 0 {
            return scores;
        }
        let buckets = self.weights.len() / n;
        // A bucket past the weights (a featurizer wider than them) reads nothing.
        let inside: Vec<(u32, f32)>;
        let bag = if features.iter().all(|&(b, _)| (b as usize) < buckets) {
            features
        } else {
            inside = features
                .iter()
                .copied()
                .filter(|&(b, _)| (b as usize) < buckets)
                .collect();
            &inside
        };
        match &self.weights {
            ScorerWeights::Full(w) => bag_sum(&mut scores, &w[..buckets * n], bag),
            ScorerWeights::Half(w) => bag_sum_half(&mut scores, &w[..buckets * n], bag),
        }
        scores
    }

    /// Its share of the mixture.
    pub fn share(&self) -> f32 {
        self.share
    }

    /// A scorer from its weights (`buckets × labels`, row-major), biases and share.
    pub(crate) fn new(weights: Vec<f32>, bias: Vec<f32>, share: f32) -> Self {
        NgramScorer {
            weights: ScorerWeights::narrowed_if_exact(weights),
            bias,
            share: share.clamp(0.0, 1.0),
        }
    }

    /// Loads the reader an [`NgramFile`] names inside `dir`, checking its checksum.
    pub fn load(
        dir: &Path,
        file: &NgramFile,
        buckets: usize,
        n_labels: usize,
        device: &Device,
    ) -> Result<Self, ModelError> {
        Self::load_file(
            dir,
            &file.path,
            &file.sha256,
            file.share,
            buckets,
            n_labels,
            device,
        )
    }

    /// Loads `relative` inside `dir` (checksum `sha256`) as `buckets × n_labels` weights.
    pub(crate) fn load_file(
        dir: &Path,
        relative: &str,
        sha256: &str,
        share: f32,
        buckets: usize,
        n_labels: usize,
        device: &Device,
    ) -> Result<Self, ModelError> {
        let path = checked(dir, relative, sha256)?;
        let init = NgramWeights::new(&vec![0.0; buckets * n_labels], &vec![0.0; n_labels], device);
        let loaded = CheckpointFile::open(&path)?.load_into(init, device)?;
        let host = |t: Tensor<1>| {
            t.into_data()
                .convert::<f32>()
                .try_to_vec::<f32>()
                .unwrap_or_default()
        };
        Ok(NgramScorer::new(
            host(loaded.weights.val().reshape([buckets * n_labels])),
            host(loaded.bias.val()),
            share,
        ))
    }
}

/// An added namespace as a loaded model uses it: its head, its n-gram reader (if any) and how
/// its probabilities are read.
#[derive(Clone, Debug)]
pub struct AddedNamespace {
    /// The head over [`added_features`].
    pub head: AddedHead,
    /// The n-gram reader mixed into the head's probabilities.
    pub ngrams: Option<NgramScorer>,
    /// Per-label sigmoids (multi-label) rather than a softmax.
    pub sigmoids: bool,
}

impl AddedNamespace {
    /// The namespace's logits for one column: the head's, mixed with the n-gram reader's on
    /// the column's n-gram bag where it has one.
    pub fn column_logits(&self, head: Vec<f32>, bag: &[(u32, f32)]) -> Vec<f32> {
        match &self.ngrams {
            Some(reader) if reader.share() > 0.0 => {
                mix_logits(&head, &reader.scores(bag), reader.share(), self.sigmoids)
            }
            _ => head,
        }
    }
}

/// The logits whose probabilities are `(1 − share)·p(head) + share·p(n-grams)`, each `p` a
/// softmax (single-label) or per-label sigmoids: `ln p`, or `ln(p / (1 − p))` per label, which
/// the namespace's own activation turns back into the mixture.
pub fn mix_logits(head: &[f32], ngrams: &[f32], share: f32, sigmoids: bool) -> Vec<f32> {
    let w = share.clamp(0.0, 1.0);
    let tiny = 1e-12f32;
    if sigmoids {
        let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
        head.iter()
            .zip(ngrams)
            .map(|(&h, &n)| {
                let p = ((1.0 - w) * sigmoid(h) + w * sigmoid(n)).clamp(tiny, 1.0 - 1e-7);
                (p / (1.0 - p)).ln()
            })
            .collect()
    } else {
        let softmax = |x: &[f32]| {
            let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = x.iter().map(|v| (v - max).exp()).collect();
            let sum: f32 = e.iter().sum();
            e.into_iter().map(|v| v / sum).collect::<Vec<f32>>()
        };
        let (ph, pn) = (softmax(head), softmax(ngrams));
        ph.iter()
            .zip(&pn)
            .map(|(a, b)| ((1.0 - w) * a + w * b).max(tiny).ln())
            .collect()
    }
}

/// The file at `relative` inside `dir`, its checksum checked.
fn checked(dir: &Path, relative: &str, sha256: &str) -> Result<std::path::PathBuf, ModelError> {
    let path = dir.join(relative);
    let found = colswarm_swarm::manifest::sha256_file(&path)?;
    if found != sha256 {
        return Err(ModelError::File {
            path,
            reason: format!("checksum {found} differs from the {sha256} the label space records"),
        });
    }
    Ok(path)
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
        let path = checked(dir, &file.path, &file.sha256)?;
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
    fn a_scorer_of_half_float_weights_holds_them_so_and_scores_the_same_bits() {
        let (buckets, labels) = (64, 7);
        // Half floats (what a saved reader holds), then one weight that is not one.
        let halves: Vec<f32> = (0..buckets * labels)
            .map(|i| f16::from_f32(((i * 37 % 101) as f32 - 50.0) / 17.0).to_f32())
            .collect();
        let bias: Vec<f32> = (0..labels).map(|j| j as f32 * 0.1).collect();
        let mut full = halves.clone();
        full[5] = 0.1;
        let narrow = NgramScorer::new(halves.clone(), bias.clone(), 0.5);
        let wide = NgramScorer::new(full, bias.clone(), 0.5);
        assert!(matches!(narrow.weights, ScorerWeights::Half(_)));
        assert!(matches!(wide.weights, ScorerWeights::Full(_)));
        // The same weights held as f32 (what the scorer did before it narrowed them).
        let reference = NgramScorer {
            weights: ScorerWeights::Full(halves),
            bias,
            share: 0.5,
        };
        // Buckets past the table are left out, as before.
        let bag = [(3, 1.5), (17, 0.25), (40, 2.0), (63, 1.0), (70, 3.0)];
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(narrow.scores(&bag)), bits(reference.scores(&bag)));
        assert_eq!(
            bits(narrow.scores(&bag[..3])),
            bits(reference.scores(&bag[..3]))
        );
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
    fn mixed_logits_give_the_mixed_probabilities() {
        let head = [2.0f32, 0.0, -1.0];
        let ngrams = [-1.0f32, 1.0, 0.5];
        let softmax = |x: &[f32]| {
            let s: f32 = x.iter().map(|v| v.exp()).sum();
            x.iter().map(|v| v.exp() / s).collect::<Vec<f32>>()
        };
        let mixed = softmax(&mix_logits(&head, &ngrams, 0.25, false));
        let (a, b) = (softmax(&head), softmax(&ngrams));
        for i in 0..3 {
            assert!((mixed[i] - (0.75 * a[i] + 0.25 * b[i])).abs() < 1e-6);
        }
        let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
        let mixed = mix_logits(&head, &ngrams, 0.5, true);
        for i in 0..3 {
            let want = 0.5 * sigmoid(head[i]) + 0.5 * sigmoid(ngrams[i]);
            assert!((sigmoid(mixed[i]) - want).abs() < 1e-6);
        }
        assert_eq!(mix_logits(&head, &ngrams, 0.0, true).len(), 3);
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
            ngrams: None,
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
