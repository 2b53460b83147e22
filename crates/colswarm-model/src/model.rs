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
use colswarm_swarm::manifest::SwarmManifest;
use colswarm_swarm::{Routing, Swarm, SwarmOutput, TableBatch, WordVectors};
use colswarm_tables::{NgramConfig, Table};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::added_head::{AddedHead, AddedNamespace, NgramScorer, added_features};
use crate::encode::{Columns, Example, Featurizer, encode, featurizer, to_batch};
use crate::error::ModelError;
use crate::expert_routing::ExpertRouting;
use crate::experts::ExpertList;
use crate::labels::{Activation, LABELS_FILE, LabelSpace, Task};
use crate::reader::NgramReader;
use crate::serialize_settings::{SERIALIZE_FILE, SerializeSettings};

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
    /// Its domain experts ([`crate::experts`]), in router order.
    pub experts: Vec<Expert>,
    /// Who among the experts reads a table and how much each counts; `Some` when it has
    /// experts.
    pub expert_routing: Option<ExpertRouting>,
    /// The heads of the CTA namespaces added by fine-tuning ([`crate::added_head`]), in
    /// label-space order; their logits follow the shared head's in every row.
    pub added_heads: Vec<AddedNamespace>,
    /// The namespaces' n-gram readers ([`crate::reader`]), CTA then CPA, each list parallel
    /// to the label space's.
    pub readers: [Vec<Option<NgramReader>>; 2],
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

/// Every namespace's n-gram reader, CTA then CPA.
fn load_readers(
    dir: &Path,
    space: &LabelSpace,
    device: &Device,
) -> Result<[Vec<Option<NgramReader>>; 2], ModelError> {
    let load = |task: Task| -> Result<Vec<Option<NgramReader>>, ModelError> {
        space
            .list(task)
            .iter()
            .map(|n| {
                n.reader
                    .as_ref()
                    .map(|file| {
                        let sigmoids = n.activation == Activation::Sigmoid;
                        NgramReader::load(dir, file, n.labels.len(), sigmoids, device)
                    })
                    .transpose()
            })
            .collect()
    };
    Ok([load(Task::Cta)?, load(Task::Cpa)?])
}

impl Model {
    /// The n-gram reader of namespace `index` of `task`, if it has one.
    pub fn reader(&self, task: Task, index: usize) -> Option<&NgramReader> {
        let list = match task {
            Task::Cta => &self.readers[0],
            Task::Cpa => &self.readers[1],
        };
        list.get(index).and_then(Option::as_ref)
    }

    /// For annotation: holds the primary's and the experts' column n-gram tables in half
    /// floats where that loses nothing (shipped models store them so; on a plain CPU device),
    /// which halves the bytes each column's n-gram bag fetches and leaves every answer as it
    /// was. A model that will train must not be compacted. Returns how many tables it holds in
    /// half floats.
    pub fn compact_for_inference(&mut self) -> usize {
        let own = self.swarm.orchestrator.ngrams.iter_mut();
        let experts = self
            .experts
            .iter_mut()
            .flat_map(|e| e.model.swarm.orchestrator.ngrams.iter_mut());
        own.chain(experts)
            .map(|table| table.hold_in_half_if_exact())
            .filter(|&held| held)
            .count()
    }

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
            readers: load_readers(dir, &space, device)?,
            space,
            serialize,
            experts: Vec::new(),
            expert_routing: None,
        };
        // The experts usually read the primary's own word-vector file: loaded once.
        let vectors = manifest
            .column_words
            .as_ref()
            .zip(model.swarm.orchestrator.column_words())
            .map(|(files, (_, vectors))| (files.vectors.sha256.clone(), Arc::clone(vectors)));
        // The manifest read above lists them (a v2 directory's `experts.json` folded in).
        let list = ExpertList::of(&manifest);
        for expert in &list.experts {
            let expert_dir = dir.join(&expert.dir);
            let known = vectors.as_ref().map(|(sha256, v)| (sha256.as_str(), v));
            let loaded = Model::load_sharing(&expert_dir, device, known)?;
            let expert = Expert::new(&expert.name, loaded, expert.open_below, &model, &expert_dir)?;
            model.experts.push(expert);
        }
        let d_model = manifest.config.primary.d_model;
        model.expert_routing = ExpertRouting::of(dir, &list, (d_model, &model.space), device)?;
        Ok(model)
    }

    /// Adds `expert` after the others: the router gives it a gate that follows its confidence
    /// rule ([`ExpertRouting::with_expert`]) and the others keep theirs.
    pub fn push_expert(&mut self, expert: Expert) {
        let d_model = self.swarm.orchestrator.primary.d_model();
        self.expert_routing = Some(match &self.expert_routing {
            Some(routing) => routing.with_expert(expert.open_below),
            None => ExpertRouting::from_rule(
                d_model,
                &[expert.open_below],
                crate::expert_routing::mixed_namespaces(&self.space),
                &self.swarm.orchestrator.device(),
            ),
        });
        self.experts.push(expert);
    }

    /// Removes every expert and their routing: the primary alone (with its specialists).
    pub fn clear_experts(&mut self) {
        self.experts.clear();
        self.expert_routing = None;
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

/// The n-grams `expert` reads where they differ from `primary`'s (`None`: the primary's); an
/// error when it reads tables otherwise than the primary in any other way.
fn expert_ngrams(expert: &Model, primary: &Model) -> Result<Option<NgramConfig>, String> {
    let (own, primary) = (
        featurizer(&expert.swarm.orchestrator),
        featurizer(&primary.swarm.orchestrator),
    );
    if own.ngrams.is_some() != primary.ngrams.is_some() {
        return Err(format!(
            "it reads n-grams as {:?}, the primary as {:?}: both or neither must read them",
            own.ngrams, primary.ngrams
        ));
    }
    let same_words = match (&own.words, &primary.words) {
        (None, None) => true,
        (Some((a, va)), Some((b, vb))) => a == b && (Arc::ptr_eq(va, vb) || va == vb),
        _ => false,
    };
    if !same_words {
        return Err(
            "it does not read the primary's word vectors with the primary's settings".into(),
        );
    }
    Ok(own.ngrams.filter(|_| own.ngrams != primary.ngrams))
}

/// `(expert label, primary label)` flat indices of the labels of `task` both spaces know.
fn shared_labels(expert: &LabelSpace, primary: &LabelSpace, task: Task) -> Vec<(usize, usize)> {
    let primary_labels = primary.flat(task);
    expert
        .flat(task)
        .iter()
        .enumerate()
        .filter_map(|(e, label)| {
            primary_labels
                .iter()
                .position(|p| p == label)
                .map(|p| (e, p))
        })
        .collect()
}

/// A loaded expert: its model and where its labels sit among the primary's.
#[derive(Clone, Debug)]
pub struct Expert {
    /// Its name.
    pub name: String,
    /// The expert's model (no specialists, no experts).
    pub model: Model,
    /// It opens where the primary's least confident answer in its namespaces is below this
    /// ([`ExpertRef::open_below`]); `None`: on every table.
    pub open_below: Option<f32>,
    /// `(expert label, primary label)` flat CTA indices of the labels both know.
    cta: Vec<(usize, usize)>,
    /// The same for CPA relations.
    cpa: Vec<(usize, usize)>,
    /// The primary's CTA namespaces (indices) where the expert knows a label.
    cta_namespaces: Vec<usize>,
    /// The same for CPA.
    cpa_namespaces: Vec<usize>,
    /// Its n-gram configuration where it differs from the primary's (`None`: the primary's).
    own_ngrams: Option<NgramConfig>,
}

impl Expert {
    /// Pairs `model` with `primary`: refused (naming `dir`) when it has specialists or experts
    /// of its own, reads tables otherwise than the primary, or knows none of its labels.
    pub fn new(
        name: &str,
        model: Model,
        open_below: Option<f32>,
        primary: &Model,
        dir: &Path,
    ) -> Result<Self, ModelError> {
        let refuse = |reason: String| ModelError::File {
            path: dir.to_path_buf(),
            reason: format!("expert {name:?}: {reason}"),
        };
        if !model.swarm.specialists.is_empty() || !model.experts.is_empty() {
            return Err(refuse(
                "an expert has no specialists or experts of its own; train it without --specialist"
                    .into(),
            ));
        }
        if model.serialize != primary.serialize {
            return Err(refuse(format!(
                "it serializes tables as {:?}, the primary as {:?}",
                model.serialize, primary.serialize
            )));
        }
        let own_ngrams = expert_ngrams(&model, primary).map_err(refuse)?;
        let shared = |task: Task| shared_labels(&model.space, &primary.space, task);
        let (cta, cpa) = (shared(Task::Cta), shared(Task::Cpa));
        if cta.is_empty() && cpa.is_empty() {
            return Err(refuse(
                "it shares no label with the primary (labels are matched as NAMESPACE:LABEL)"
                    .into(),
            ));
        }
        if let Some(p) = open_below
            && !(0.0..=1.0).contains(&p)
        {
            return Err(refuse(format!(
                "it opens below {p}, which is not a probability"
            )));
        }
        if primary.specialist_names.iter().any(|s| s == name) {
            return Err(refuse(
                "a specialist of the primary has that name; give the expert another".into(),
            ));
        }
        let namespaces = |task: Task, map: &[(usize, usize)]| -> Vec<usize> {
            let list = primary.space.list(task);
            (0..list.len())
                .filter(|&n| map.iter().any(|&(_, p)| list[n].range().contains(&p)))
                .collect()
        };
        let (cta_namespaces, cpa_namespaces) =
            (namespaces(Task::Cta, &cta), namespaces(Task::Cpa, &cpa));
        Ok(Self {
            name: name.to_string(),
            model,
            open_below,
            cta,
            cpa,
            cta_namespaces,
            cpa_namespaces,
            own_ngrams,
        })
    }

    /// How many of the primary's labels of `task` this expert knows.
    pub fn shared_labels(&self, task: Task) -> usize {
        match task {
            Task::Cta => self.cta.len(),
            Task::Cpa => self.cpa.len(),
        }
    }

    /// The primary's namespaces of `task` (indices into its label space's list) where the
    /// expert knows a label: those whose confidence opens it.
    pub fn namespaces(&self, task: Task) -> &[usize] {
        match task {
            Task::Cta => &self.cta_namespaces,
            Task::Cpa => &self.cpa_namespaces,
        }
    }

    /// Its n-gram configuration where it differs from the primary's: its tables' n-grams are
    /// then [`crate::Example::expert_ngrams`]'s, not the primary's.
    pub fn own_ngrams(&self) -> Option<&NgramConfig> {
        self.own_ngrams.as_ref()
    }

    /// `(expert label, primary label)` flat pairs of `task`: the labels it shares with the
    /// primary.
    pub fn label_map(&self, task: Task) -> &[(usize, usize)] {
        match task {
            Task::Cta => &self.cta,
            Task::Cpa => &self.cpa,
        }
    }
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

    /// The shipped T2D expert's weights, told to read neighbour n-grams: a model whose bags
    /// differ from the primary's, without training one.
    #[test]
    fn an_expert_with_its_own_ngrams_reads_its_own_bags_beside_the_primary() {
        use crate::encode::{Columns, Example};
        use crate::model::SpecialistUse;
        use burn::tensor::Device;
        use colswarm_tables::Table;

        let shipped = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/colswarm-small"
        ));
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("experts/t2d-neighbours");
        crate::ModelDir::open(&shipped.join("experts/t2d-expert"))
            .unwrap()
            .copy_to(&dir)
            .unwrap();
        // Its word vectors are the primary's file, two directories up.
        std::fs::copy(
            shipped.join("word_vectors.safetensors"),
            work.path().join("word_vectors.safetensors"),
        )
        .unwrap();
        let manifest = dir.join("swarm.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
        json["config"]["column_ngrams"]["neighbours"] = true.into();
        std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();

        let device = Device::default();
        let mut primary = Model::load(shipped, &device).unwrap();
        primary.clear_experts();
        let expert = Model::load(&dir, &device).unwrap();
        let joined = Expert::new("t2d-neighbours", expert.clone(), None, &primary, &dir).unwrap();
        assert!(joined.own_ngrams().is_some_and(|n| n.neighbours));
        let bare = primary.clone();
        primary.push_expert(joined);

        let rows = [
            ["Rushmore", "Wes Anderson", "1998"],
            ["Heat", "Michael Mann", "1995"],
            ["Alien", "Ridley Scott", "1979"],
        ];
        let table = Table::from_rows(
            "films",
            Some(vec!["title".into(), "director".into(), "year".into()]),
            rows.iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
        );
        let encoded = primary.encode(std::slice::from_ref(&table), Columns::All);
        let own = expert.encode(std::slice::from_ref(&table), Columns::All);
        assert_eq!(encoded[0].expert_ngrams, vec![own[0].ngrams.clone()]);
        assert_ne!(encoded[0].ngrams, own[0].ngrams);

        let predict = |model: &Model, examples: &[Example], use_: SpecialistUse| {
            let refs: Vec<&Example> = examples.iter().collect();
            model.predict(&refs, &[0], use_)
        };
        let swarm = predict(&primary, &encoded, SpecialistUse::All).unwrap();
        // The primary with its specialists open as in `swarm`, without the expert.
        let alone = predict(&bare, &encoded, SpecialistUse::All).unwrap();
        let expert_out = predict(&expert, &own, SpecialistUse::Off).unwrap();
        let map = primary.experts[0].label_map(Task::Cta);
        assert!(!map.is_empty());
        for c in 0..3 {
            let mut expected = alone.cta[c].clone();
            for &(e, p) in map {
                expected[p] = (alone.cta[c][p] + expert_out.cta[c][e]) / 2.0;
            }
            for (got, want) in swarm.cta[c].iter().zip(&expected) {
                assert!(
                    (got - want).abs() < 1e-5,
                    "column {c}: {got} against {want}"
                );
            }
        }
        // The primary's bags would have given the expert other logits.
        let plain = predict(&expert, &encoded, SpecialistUse::Off).unwrap();
        assert_ne!(plain.cta, expert_out.cta);

        // With no expert to read them, the bags are left out and the primary's answers stay.
        let lean = primary.encode_for(std::slice::from_ref(&table), Columns::All, false);
        assert!(lean[0].expert_ngrams.is_empty());
        let off = predict(&primary, &lean, SpecialistUse::Off).unwrap();
        assert_eq!(
            off.cta,
            predict(&primary, &encoded, SpecialistUse::Off).unwrap().cta
        );

        // Tables encoded without the expert's bags are refused, naming the table.
        let err = predict(&primary, &own, SpecialistUse::All)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("films") && err.contains("t2d-neighbours"),
            "{err}"
        );
    }
}
