//! An n-gram reader beside a namespace: a linear classifier over a column's hashed character
//! n-grams (with, as its features say, the column's value statistics and its place in the
//! table, and for a relation its subject column's header), whose probabilities are mixed into
//! the namespace's own:
//!
//! ```text
//! p = (1 − share) · p_namespace + share · p_reader
//! ```
//!
//! each `p` a softmax (single-label namespaces) or per-label sigmoids (multi-label ones), after
//! everything else the namespace adds (label-name prior, type view, header memory), so that
//! abstention and decoding read the mixture. It is the `char-ngram` peer of `colswarm
//! baseline` trained on the namespace's labels: a cheap model that sees every cell's
//! characters, where the primary reads a table's first rows. `colswarm add-reader` trains one
//! and stores it (`readers/TASK-NAME.safetensors`, half floats);
//! [`crate::Namespace::reader`] names it with its checksum and share.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

use burn::tensor::Device;
use colswarm_rwkv::checkpoint::{Precision, save_module_as};
use colswarm_tables::{NgramConfig, SparseFeatures, Table, TableNgrams};
use serde::{Deserialize, Serialize};

use crate::added_head::{NgramScorer, NgramWeights};
use crate::decode::activated;
use crate::error::ModelError;

/// Where a namespace's reader lies in the model directory, how much it counts and what it
/// reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReaderFile {
    /// Path relative to the model directory (`weights` `[buckets, labels]`, `bias`).
    pub path: String,
    /// SHA-256 of the file, checked on load.
    pub sha256: String,
    /// Its share of the mixed probabilities, in `[0, 1]`.
    pub share: f32,
    /// How a column becomes its features.
    pub features: ReaderFeatures,
}

/// The featurizer of a reader: [`NgramConfig`] as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReaderFeatures {
    /// Hash buckets (rows of the weights).
    pub buckets: u32,
    /// Shortest and longest n-gram, in bytes.
    pub min_n: usize,
    /// Longest n-gram, in bytes.
    pub max_n: usize,
    /// Non-null cells of a column that give features (the first ones).
    pub max_cells: usize,
    /// A block of the column's value statistics.
    #[serde(default)]
    pub value_stats: bool,
    /// A block of the column's place in its table.
    #[serde(default)]
    pub position: bool,
}

impl ReaderFeatures {
    /// The featurizer these settings describe.
    pub fn config(&self) -> NgramConfig {
        NgramConfig {
            buckets: self.buckets.max(1),
            min_n: self.min_n.max(1),
            max_n: self.max_n.max(self.min_n.max(1)),
            max_cells: self.max_cells,
            neighbours: false,
            value_stats: self.value_stats,
            position: self.position,
        }
    }

    /// The settings of a featurizer (its neighbour blocks are not stored: a reader reads none).
    pub fn of(config: &NgramConfig) -> Self {
        ReaderFeatures {
            buckets: config.buckets,
            min_n: config.min_n,
            max_n: config.max_n,
            max_cells: config.max_cells,
            value_stats: config.value_stats,
            position: config.position,
        }
    }
}

/// A loaded reader: its featurizer, its weights and how its probabilities are mixed.
#[derive(Clone, Debug)]
pub struct NgramReader {
    featurizer: NgramConfig,
    scorer: NgramScorer,
    sigmoids: bool,
}

impl NgramReader {
    /// A reader from its weights (`buckets × labels`, row-major) and biases.
    pub fn new(
        features: ReaderFeatures,
        weights: Vec<f32>,
        bias: Vec<f32>,
        share: f32,
        sigmoids: bool,
    ) -> Self {
        NgramReader {
            featurizer: features.config(),
            scorer: NgramScorer::new(weights, bias, share),
            sigmoids,
        }
    }

    /// Loads the reader `file` names inside `dir` for a namespace of `n_labels` labels,
    /// checking its checksum and shape.
    pub fn load(
        dir: &Path,
        file: &ReaderFile,
        n_labels: usize,
        sigmoids: bool,
        device: &Device,
    ) -> Result<Self, ModelError> {
        let featurizer = file.features.config();
        if !(0.0..=1.0).contains(&file.share) {
            return Err(ModelError::File {
                path: dir.join(&file.path),
                reason: format!("the reader's share {} is outside [0, 1]", file.share),
            });
        }
        let scorer = NgramScorer::load_file(
            dir,
            &file.path,
            &file.sha256,
            file.share,
            featurizer.buckets as usize,
            n_labels,
            device,
        )?;
        Ok(NgramReader {
            featurizer,
            scorer,
            sigmoids,
        })
    }

    /// Writes a reader's weights to `dir/relative` at `precision` and returns the file's
    /// SHA-256.
    pub fn save(
        dir: &Path,
        relative: &str,
        weights: &[f32],
        bias: &[f32],
        precision: Precision,
        device: &Device,
    ) -> Result<String, ModelError> {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ModelError::io(parent, e))?;
        }
        let module = NgramWeights::new(weights, bias, device);
        save_module_as(&module, HashMap::new(), &path, precision)?;
        Ok(colswarm_swarm::manifest::sha256_file(&path)?)
    }

    /// Its share of the mixture.
    pub fn share(&self) -> f32 {
        self.scorer.share()
    }

    /// The reader's probabilities for column `column` of `table`; for a relation, `subject`
    /// is its subject column.
    ///
    /// # Shapes
    /// - returns `[labels of the namespace]`
    pub fn probs(&self, table: &Table, column: usize, subject: Option<usize>) -> Vec<f32> {
        let features = self.featurizer.for_table(table).column(column, subject);
        activated(self.sigmoids, &self.scorer.scores(&features))
    }

    /// [`NgramReader::probs`] with the features read from `shared`, which counts each
    /// column's n-grams once for every reader of the same featurizer.
    ///
    /// # Shapes
    /// - returns `[labels of the namespace]`
    pub fn probs_shared(
        &self,
        shared: &TableFeatures<'_>,
        column: usize,
        subject: Option<usize>,
    ) -> Vec<f32> {
        let features = shared.column(&self.featurizer, column, subject);
        activated(self.sigmoids, &self.scorer.scores(&features))
    }

    /// `(1 − share)·own + share·reader`, label by label.
    ///
    /// # Shapes
    /// - `own`, `reader`: `[labels]`; returns `[labels]`
    pub fn mix(&self, own: &[f32], reader: &[f32]) -> Vec<f32> {
        let w = self.share();
        own.iter()
            .zip(reader)
            .map(|(&a, &b)| (1.0 - w) * a + w * b)
            .collect()
    }
}

/// One table's n-gram featurizers, one per featurizer its readers use, kept while the table
/// is decoded: the readers of a column's types and of its relation often read the same
/// features, and each column's cells are then hashed and counted once.
#[derive(Debug)]
pub struct TableFeatures<'t> {
    table: &'t Table,
    featurizers: RefCell<Vec<TableNgrams<'t>>>,
}

impl<'t> TableFeatures<'t> {
    /// No features yet: each featurizer is built when a reader first asks for it.
    pub fn new(table: &'t Table) -> Self {
        TableFeatures {
            table,
            featurizers: RefCell::new(Vec::new()),
        }
    }

    /// The features `config` gives column `column` (and, for a relation, its `subject`).
    fn column(
        &self,
        config: &NgramConfig,
        column: usize,
        subject: Option<usize>,
    ) -> SparseFeatures {
        let mut featurizers = self.featurizers.borrow_mut();
        let at = match featurizers.iter().position(|f| f.config() == config) {
            Some(at) => at,
            None => {
                featurizers.push(config.for_table(self.table));
                featurizers.len() - 1
            }
        };
        featurizers[at].column(column, subject)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_tables::{Cell, Column};

    fn features() -> ReaderFeatures {
        ReaderFeatures {
            buckets: 64,
            min_n: 2,
            max_n: 3,
            max_cells: 5,
            value_stats: true,
            position: true,
        }
    }

    fn table() -> Table {
        let column = |header: &str, cells: &[&str]| {
            Column::new(
                Some(header.to_string()),
                cells.iter().map(|t| Cell::new(*t)).collect(),
            )
        };
        Table::new(
            "t",
            vec![
                column("city", &["Paris", "Lyon"]),
                column("population", &["2100000", "520000"]),
            ],
        )
    }

    /// Weights that are not all alike, from a fixed sequence.
    fn weights(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect()
    }

    #[test]
    fn shared_features_give_every_reader_what_it_computes_alone() {
        let t = table();
        let other = ReaderFeatures {
            buckets: 32,
            position: false,
            ..features()
        };
        let readers = [
            NgramReader::new(features(), weights(64 * 3), vec![0.0; 3], 0.5, false),
            NgramReader::new(features(), weights(64 * 2), vec![0.1; 2], 0.5, true),
            NgramReader::new(other, weights(32 * 3), vec![0.2; 3], 0.5, false),
        ];
        let shared = TableFeatures::new(&t);
        // Types, then a relation of the same column, in the order a table is decoded.
        for (column, subject) in [(0, None), (1, None), (1, Some(0)), (0, None)] {
            for reader in &readers {
                assert_eq!(
                    reader.probs_shared(&shared, column, subject),
                    reader.probs(&t, column, subject),
                    "column {column}, subject {subject:?}"
                );
            }
        }
        // One featurizer per distinct configuration.
        assert_eq!(shared.featurizers.borrow().len(), 2);
    }

    #[test]
    fn probabilities_are_the_scores_of_the_column_features_through_the_activation() {
        let labels = 3;
        let (w, b) = (weights(64 * labels), vec![0.1, -0.2, 0.3]);
        let softmax_reader = NgramReader::new(features(), w.clone(), b.clone(), 0.4, false);
        let t = table();
        let x = features().config().for_table(&t).column(1, Some(0));
        assert!(!x.is_empty());
        let mut scores = b.clone();
        for &(bucket, v) in &x {
            for (l, s) in scores.iter_mut().enumerate() {
                *s += v * w[bucket as usize * labels + l];
            }
        }
        let p = softmax_reader.probs(&t, 1, Some(0));
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = scores.iter().map(|s| (s - max).exp()).sum();
        for (a, s) in p.iter().zip(&scores) {
            let e = (s - max).exp() / total;
            assert!((a - e).abs() < 1e-6);
        }
        let sigmoid_reader = NgramReader::new(features(), w, b, 0.4, true);
        for (a, s) in sigmoid_reader.probs(&t, 1, Some(0)).iter().zip(&scores) {
            assert!((a - 1.0 / (1.0 + (-s).exp())).abs() < 1e-6);
        }
        // The subject's header is part of a relation's features.
        assert_ne!(softmax_reader.probs(&t, 1, None), p);
    }

    #[test]
    fn the_mixture_weighs_the_two_by_the_share() {
        let reader = NgramReader::new(features(), vec![0.0; 64 * 2], vec![0.0; 2], 0.25, false);
        let mixed = reader.mix(&[0.8, 0.2], &[0.0, 1.0]);
        assert!((mixed[0] - 0.6).abs() < 1e-6 && (mixed[1] - 0.4).abs() < 1e-6);
        let none = NgramReader::new(features(), vec![0.0; 128], vec![0.0; 2], 0.0, false);
        assert_eq!(none.mix(&[0.8, 0.2], &[0.0, 1.0]), [0.8, 0.2]);
    }

    #[test]
    fn a_saved_reader_loads_with_its_checksum_and_refuses_a_wrong_one() {
        let dir = tempfile::tempdir().unwrap();
        let device = Device::flex();
        let (w, b) = (weights(64 * 3), vec![0.5, 0.25, -1.0]);
        let sha = NgramReader::save(
            dir.path(),
            "readers/x.safetensors",
            &w,
            &b,
            Precision::F16,
            &device,
        )
        .unwrap();
        let mut file = ReaderFile {
            path: "readers/x.safetensors".into(),
            sha256: sha,
            share: 0.5,
            features: features(),
        };
        let loaded = NgramReader::load(dir.path(), &file, 3, false, &device).unwrap();
        let exact = NgramReader::new(features(), w, b, 0.5, false);
        let t = table();
        for (a, e) in loaded
            .probs(&t, 0, None)
            .iter()
            .zip(exact.probs(&t, 0, None))
        {
            // Half floats keep about three digits of each weight.
            assert!((a - e).abs() < 5e-3, "{a} against {e}");
        }
        assert!(NgramReader::load(dir.path(), &file, 4, false, &device).is_err());
        file.share = 1.5;
        assert!(NgramReader::load(dir.path(), &file, 3, false, &device).is_err());
        file.share = 0.5;
        file.sha256 = "0".repeat(64);
        let error = NgramReader::load(dir.path(), &file, 3, false, &device).unwrap_err();
        assert!(error.to_string().contains("checksum"), "{error}");
    }

    #[test]
    fn features_round_trip_through_json_and_the_featurizer() {
        let f = features();
        assert_eq!(ReaderFeatures::of(&f.config()), f);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<ReaderFeatures>(&json).unwrap(), f);
    }
}
