//! A trained model directory, loaded: the swarm, its label space and how it serializes tables.
//!
//! A model directory is a swarm (see `colswarm_swarm::manifest`) plus `labels.json` (the label
//! space) and `serialize.json` (how tables were serialized in training, so annotation sees the
//! same layout).

use std::borrow::Borrow;
use std::path::Path;
use std::sync::Arc;

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use colswarm_rwkv::checkpoint::write_atomically;
use colswarm_swarm::manifest::{ManifestVersion, SwarmManifest};
use colswarm_swarm::{Routing, Swarm, SwarmOutput, TableBatch, WordVectors};
use colswarm_tables::{NgramConfig, SerializeConfig, Table};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::added_head::{AddedHead, AddedNamespace, NgramScorer, added_features};
use crate::encode::{Columns, Example, Featurizer, encode, featurizer, to_batch};
use crate::error::ModelError;
use crate::experts::{Expert, ExpertList};
use crate::labels::{Activation, LABELS_FILE, LabelSpace, Task};

/// File name of the serialization settings inside a model directory.
pub const SERIALIZE_FILE: &str = "serialize.json";

/// The budgets of [`SerializeConfig`] that a model is trained with (the serialization seed is
/// part of it, so annotation samples the same rows as evaluation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SerializeSettings {
    /// Most tokens of a serialized table.
    pub max_table_tokens: usize,
    /// Most rows sampled per table.
    pub max_rows: usize,
    /// Most bytes per cell.
    pub max_cell_bytes: usize,
    /// Sample cells repeated in each column query.
    pub query_cells: usize,
    /// Most bytes of the header inside a column query.
    pub query_header_bytes: usize,
    /// Most bytes of each sample cell inside a column query.
    pub query_cell_bytes: usize,
    /// Row-sampling seed.
    pub seed: u64,
}

/// `serialize.json` beside a `colswarm-swarm-v1` manifest: the query budgets may be missing
/// (files written before they existed), meaning the serializer's defaults of the time, 32 and
/// 16 bytes.
#[derive(Deserialize)]
struct SerializeSettingsV1 {
    max_table_tokens: usize,
    max_rows: usize,
    max_cell_bytes: usize,
    query_cells: usize,
    #[serde(default = "default_query_header_bytes")]
    query_header_bytes: usize,
    #[serde(default = "default_query_cell_bytes")]
    query_cell_bytes: usize,
    seed: u64,
}

impl From<SerializeSettingsV1> for SerializeSettings {
    fn from(v1: SerializeSettingsV1) -> Self {
        SerializeSettings {
            max_table_tokens: v1.max_table_tokens,
            max_rows: v1.max_rows,
            max_cell_bytes: v1.max_cell_bytes,
            query_cells: v1.query_cells,
            query_header_bytes: v1.query_header_bytes,
            query_cell_bytes: v1.query_cell_bytes,
            seed: v1.seed,
        }
    }
}

fn default_query_header_bytes() -> usize {
    32
}

fn default_query_cell_bytes() -> usize {
    16
}

impl Default for SerializeSettings {
    fn default() -> Self {
        // The shipped model's: a 128-token read of 8 rows, each column named by its index only.
        SerializeSettings {
            max_table_tokens: 128,
            max_rows: 8,
            max_cell_bytes: 24,
            query_cells: 0,
            query_header_bytes: 0,
            query_cell_bytes: default_query_cell_bytes(),
            seed: 0,
        }
    }
}

impl SerializeSettings {
    /// Parses `serialize.json` as laid out in a model directory of `version` (a v1 file is
    /// upgraded in memory).
    pub fn from_json(bytes: &[u8], version: ManifestVersion) -> serde_json::Result<Self> {
        match version {
            ManifestVersion::V2 => serde_json::from_slice(bytes),
            ManifestVersion::V1 => {
                serde_json::from_slice::<SerializeSettingsV1>(bytes).map(Into::into)
            }
        }
    }

    /// The serializer configuration.
    pub fn config(&self) -> SerializeConfig {
        SerializeConfig {
            max_table_tokens: self.max_table_tokens,
            max_rows: self.max_rows,
            max_cell_bytes: self.max_cell_bytes,
            min_cell_bytes: 8.min(self.max_cell_bytes),
            query_cells: self.query_cells,
            query_header_bytes: self.query_header_bytes,
            query_cell_bytes: self.query_cell_bytes,
            seed: self.seed,
            ..SerializeConfig::default()
        }
    }
}

/// Which specialists read the tables at inference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpecialistUse {
    /// Those whose gate is above the router's threshold.
    #[default]
    Router,
    /// None: the primary alone.
    Off,
    /// Every specialist on every table, whatever the router says (the swarm's full cost, for
    /// benchmarks).
    All,
}

/// A loaded model directory.
#[derive(Clone, Debug)]
pub struct Model {
    /// The swarm, without autodiff.
    pub swarm: Swarm,
    /// Specialist names, in router order.
    pub specialist_names: Vec<String>,
    /// Its label space.
    pub space: LabelSpace,
    /// Its serialization settings.
    pub serialize: SerializeSettings,
    /// Its domain experts ([`crate::experts`]), in the order their logits are averaged.
    pub experts: Vec<Expert>,
    /// The heads of the CTA namespaces added by fine-tuning ([`crate::added_head`]), in
    /// label-space order; their logits follow the shared head's in every row.
    pub added_heads: Vec<AddedNamespace>,
}

/// Writes the label space and serialization settings beside a saved swarm.
pub fn save_model_extras(
    dir: &Path,
    space: &LabelSpace,
    serialize: &SerializeSettings,
) -> Result<(), ModelError> {
    space.save(&dir.join(LABELS_FILE))?;
    let path = dir.join(SERIALIZE_FILE);
    let json = serde_json::to_vec_pretty(serialize).map_err(|e| ModelError::File {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    write_atomically(&path, &json)?;
    Ok(())
}

/// Copies a model directory (its files and subdirectories: specialists, experts) into `to`,
/// created if missing.
pub fn copy_model_dir(from: &Path, to: &Path) -> Result<(), ModelError> {
    std::fs::create_dir_all(to).map_err(|e| ModelError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| ModelError::io(from, e))? {
        let entry = entry.map_err(|e| ModelError::io(from, e))?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_model_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| ModelError::io(&target, e))?;
        }
    }
    Ok(())
}

/// Reads the label space and serialization settings of a model directory, laid out as its
/// manifest's version says (older layouts are upgraded in memory), and checks the label space
/// against the manifest's label lists.
pub fn load_model_extras(
    dir: &Path,
    manifest: &SwarmManifest,
) -> Result<(LabelSpace, SerializeSettings), ModelError> {
    let space = LabelSpace::load(&dir.join(LABELS_FILE), manifest.version)?;
    for task in [Task::Cta, Task::Cpa] {
        let flat = space.flat(task);
        let stored = match task {
            Task::Cta => &manifest.cta_labels,
            Task::Cpa => &manifest.cpa_labels,
        };
        if &flat != stored {
            return Err(ModelError::File {
                path: dir.join(LABELS_FILE),
                reason: format!(
                    "its {task} labels ({}) differ from the manifest's ({})",
                    flat.len(),
                    stored.len()
                ),
            });
        }
    }
    let path = dir.join(SERIALIZE_FILE);
    let bytes = std::fs::read(&path).map_err(|e| ModelError::io(&path, e))?;
    let serialize =
        SerializeSettings::from_json(&bytes, manifest.version).map_err(|e| ModelError::File {
            path: path.clone(),
            reason: format!("invalid serialization settings: {e}"),
        })?;
    Ok((space, serialize))
}

/// The heads of the namespaces added by fine-tuning, in label-space order.
fn load_added_heads(
    dir: &Path,
    space: &LabelSpace,
    manifest: &SwarmManifest,
    device: &Device,
) -> Result<Vec<AddedNamespace>, ModelError> {
    if let Some(n) = space.cpa.iter().find(|n| n.head.is_some()) {
        return Err(ModelError::File {
            path: dir.join(LABELS_FILE),
            reason: format!(
                "CPA namespace `{}` has its own head; only CTA namespaces can",
                n.name
            ),
        });
    }
    let n_features = manifest.config.primary.d_model + manifest.cta_labels.len();
    space
        .cta
        .iter()
        .filter_map(|n| n.head.as_ref().map(|file| (n, file)))
        .map(|(n, file)| {
            let head = AddedHead::load(dir, file, n_features, n.labels.len(), device)?;
            let ngrams = match (&file.ngrams, manifest.config.column_ngrams) {
                (None, _) => None,
                (Some(ngrams), Some(config)) => Some(NgramScorer::load(
                    dir,
                    ngrams,
                    config.buckets as usize,
                    n.labels.len(),
                    device,
                )?),
                (Some(_), None) => {
                    return Err(ModelError::File {
                        path: dir.join(LABELS_FILE),
                        reason: format!(
                            "namespace `{}` has an n-gram reader but the model reads no n-grams",
                            n.name
                        ),
                    });
                }
            };
            Ok(AddedNamespace {
                head,
                ngrams,
                sigmoids: n.activation == Activation::Sigmoid,
            })
        })
        .collect()
}

impl Model {
    /// Loads a model directory (checksums verified) onto `device`.
    pub fn load(dir: &Path, device: &Device) -> Result<Self, ModelError> {
        Self::load_sharing(dir, device, None)
    }

    /// [`Model::load`], reusing `known` word vectors where the directory's are the same file
    /// (by checksum; [`Swarm::load_sharing`]).
    fn load_sharing(
        dir: &Path,
        device: &Device,
        known: Option<(&str, &Arc<WordVectors>)>,
    ) -> Result<Self, ModelError> {
        let (swarm, manifest) = Swarm::load_sharing(dir, device, known)?;
        let (space, serialize) = load_model_extras(dir, &manifest)?;
        let swarm = Swarm::new(swarm.orchestrator.valid(), swarm.specialists)?;
        let mut model = Model {
            swarm,
            specialist_names: manifest
                .specialists
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            added_heads: load_added_heads(dir, &space, &manifest, device)?,
            space,
            serialize,
            experts: Vec::new(),
        };
        // The experts usually read the primary's own word-vector file: loaded once.
        let vectors = manifest
            .column_words
            .as_ref()
            .zip(model.swarm.orchestrator.column_words())
            .map(|(files, (_, vectors))| (files.vectors.sha256.clone(), Arc::clone(vectors)));
        for expert in ExpertList::load(dir)?.experts {
            let expert_dir = dir.join(&expert.dir);
            let known = vectors.as_ref().map(|(sha256, v)| (sha256.as_str(), v));
            let loaded = Model::load_sharing(&expert_dir, device, known)?;
            let expert = Expert::new(&expert.name, loaded, expert.open_below, &model, &expert_dir)?;
            model.experts.push(expert);
        }
        Ok(model)
    }

    /// The names of everything that can be opened beside the primary: its specialists in
    /// router order, then its experts.
    pub fn gate_names(&self) -> impl Iterator<Item = &str> {
        self.specialist_names
            .iter()
            .map(String::as_str)
            .chain(self.experts.iter().map(|e| e.name.as_str()))
    }

    /// Tables as this model reads them: its serialization and, when it reads them, its column
    /// n-grams (and its experts' own) and word vectors (targets are left unmapped: no namespace
    /// is chosen).
    pub fn encode<T: Borrow<Table>>(&self, tables: &[T], which: Columns) -> Vec<Example> {
        self.encode_for(tables, which, true)
    }

    /// [`Model::encode`], leaving out the experts' own n-gram bags unless `experts` (when
    /// none of them will read the tables).
    pub(crate) fn encode_for<T: Borrow<Table>>(
        &self,
        tables: &[T],
        which: Columns,
        experts: bool,
    ) -> Vec<Example> {
        let serialize = self.serialize.config();
        let features = Featurizer {
            expert_ngrams: if experts {
                self.expert_ngrams()
            } else {
                Vec::new()
            },
            ..featurizer(&self.swarm.orchestrator)
        };
        let space = &self.space;
        tables
            .iter()
            .map(|t| encode(t.borrow(), &serialize, &features, space, None, None, which))
            .collect()
    }

    /// The n-gram configurations its experts read beside the primary's, each once, in the
    /// order of [`crate::Example::expert_ngrams`].
    pub fn expert_ngrams(&self) -> Vec<NgramConfig> {
        let mut configs: Vec<NgramConfig> = Vec::new();
        for config in self.experts.iter().filter_map(Expert::own_ngrams) {
            if !configs.contains(config) {
                configs.push(*config);
            }
        }
        configs
    }

    /// The features the added namespaces' heads read ([`added_features`]) for every column of
    /// `examples`, the primary alone reading, as fine-tuning fits them.
    ///
    /// # Shapes
    ///
    /// - returns `[columns, d_model + cta_labels]` in [`TableBatch::column_rows`] order
    pub fn column_features(&self, examples: &[&Example]) -> Result<Tensor<2>, ModelError> {
        let out = self.forward(examples, SpecialistUse::Off)?;
        Ok(added_features(out.columns, out.cta_logits))
    }

    /// Every added namespace's logits for the columns of a forward pass, one host row per
    /// column (the heads' outputs side by side, in label-space order); `None` without any.
    pub(crate) fn added_logits(
        &self,
        out: &SwarmOutput,
        examples: &[&Example],
    ) -> Option<Vec<Vec<f32>>> {
        if self.added_heads.is_empty() {
            return None;
        }
        let features = added_features(out.columns.clone(), out.cta_logits.clone());
        let heads: Vec<Vec<Vec<f32>>> = self
            .added_heads
            .iter()
            .map(|added| rows_of(added.head.forward(features.clone())))
            .collect();
        // Each row's n-gram bag, in the forward pass's row order (empty without n-grams).
        let bags = examples.iter().flat_map(|example| {
            (0..example.columns.len()).map(|q| example.ngrams.get(q).map_or(&[][..], Vec::as_slice))
        });
        let rows = bags
            .enumerate()
            .map(|(row, bag)| {
                self.added_heads
                    .iter()
                    .zip(&heads)
                    .flat_map(|(added, logits)| added.column_logits(logits[row].clone(), bag))
                    .collect()
            })
            .collect();
        Some(rows)
    }

    /// One forward pass at inference (no CPA pairs: see [`Model::predict`]).
    pub fn forward(
        &self,
        examples: &[&Example],
        specialists: SpecialistUse,
    ) -> Result<SwarmOutput, ModelError> {
        self.forward_with_pairs(examples, Vec::new(), specialists)
    }

    /// One forward pass at inference that also scores these CPA pairs per table
    /// ([`colswarm_swarm::TableBatch::cpa_pairs`]).
    pub(crate) fn forward_with_pairs(
        &self,
        examples: &[&Example],
        cpa_pairs: Vec<Vec<(usize, usize)>>,
        specialists: SpecialistUse,
    ) -> Result<SwarmOutput, ModelError> {
        let batch = TableBatch {
            cpa_pairs,
            ..to_batch(examples)
        };
        let every = |on: bool| vec![vec![on; self.swarm.specialists.len()]; examples.len()];
        let routing: Routing<'_, ChaCha8Rng> = match specialists {
            SpecialistUse::Router => Routing::Threshold,
            SpecialistUse::Off => Routing::Fixed(every(false)),
            SpecialistUse::All => Routing::Fixed(every(true)),
        };
        Ok(self.swarm.forward(&batch, routing)?)
    }
}

/// A `[rows, n]` tensor as host rows.
pub fn rows_of(tensor: Tensor<2>) -> Vec<Vec<f32>> {
    let [_, n] = tensor.dims();
    let values = tensor
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap_or_default();
    if n == 0 {
        return Vec::new();
    }
    values.chunks(n).map(<[f32]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_experts_share_the_primary_s_word_vectors() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
        let model = Model::load(Path::new(dir), &Device::default()).unwrap();
        let vectors = |m: &Model| Arc::clone(m.swarm.orchestrator.column_words().unwrap().1);
        let primary = vectors(&model);
        assert!(!model.experts.is_empty());
        for expert in &model.experts {
            assert!(
                Arc::ptr_eq(&primary, &vectors(&expert.model)),
                "{} loaded its own copy",
                expert.name
            );
        }
    }

    #[test]
    fn the_default_reads_tables_as_the_shipped_model_does() {
        let shipped = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/colswarm-small/serialize.json"
        );
        let bytes = std::fs::read(shipped).unwrap();
        let settings = SerializeSettings::from_json(&bytes, ManifestVersion::V2).unwrap();
        assert_eq!(settings, SerializeSettings::default());
    }

    #[test]
    fn query_budgets_reach_the_serializer_and_old_settings_keep_the_defaults() {
        let v1 = br#"{"max_table_tokens":256,"max_rows":8,"max_cell_bytes":24,"query_cells":2,"seed":0}"#;
        let old = SerializeSettings::from_json(v1, ManifestVersion::V1).unwrap();
        assert_eq!((old.query_header_bytes, old.query_cell_bytes), (32, 16));
        // The current layout holds every field.
        let err = SerializeSettings::from_json(v1, ManifestVersion::V2).unwrap_err();
        assert!(err.to_string().contains("query_header_bytes"), "{err}");

        let short = SerializeSettings {
            query_cells: 0,
            query_header_bytes: 0,
            ..old
        };
        let config = short.config();
        assert_eq!((config.query_cells, config.query_header_bytes), (0, 0));
        let table = Table::from_rows(
            "cities",
            Some(vec!["name".into(), "population".into()]),
            vec![vec!["Oslo".into(), "709000".into()]],
        );
        let serialized = colswarm_tables::serialize_table(&table, &config);
        // <query>, the index, an empty header, </query>: the column is named by its index only.
        assert!(serialized.column_queries.iter().all(|q| q.len() == 5));
        let full = colswarm_tables::serialize_table(&table, &old.config());
        assert!(full.column_queries[1].len() > 5 + "population".len());
    }
}
