//! A trained model directory → column annotations.
//!
//! A model directory is a swarm (see `colswarm_swarm::manifest`) plus `labels.json` (the label
//! space) and `serialize.json` (how tables were serialized in training, so annotation sees the
//! same layout).

use std::borrow::Borrow;
use std::path::Path;

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use colswarm_rwkv::checkpoint::write_atomically;
use colswarm_swarm::manifest::SwarmManifest;
use colswarm_swarm::{LabelKind, Routing, Swarm, SwarmOutput};
use colswarm_tables::{SerializeConfig, Table};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::TrainError;
use crate::examples::{Columns, Example, encode, featurizer, to_batch};
use crate::labels::{Activation, LABELS_FILE, LabelSpace, Namespace, Task};

/// File name of the serialization settings inside a model directory.
pub const SERIALIZE_FILE: &str = "serialize.json";

/// The budgets of [`SerializeConfig`] that a model is trained with (the serialization seed is
/// part of it, so annotation samples the same rows as evaluation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SerializeSettings {
    /// Most tokens of a serialized table.
    pub max_table_tokens: usize,
    /// Most rows sampled per table.
    pub max_rows: usize,
    /// Most bytes per cell.
    pub max_cell_bytes: usize,
    /// Sample cells repeated in each column query.
    pub query_cells: usize,
    /// Most bytes of the header inside a column query (absent in models saved before it
    /// existed: the serializer's default, 32).
    #[serde(default = "default_query_header_bytes")]
    pub query_header_bytes: usize,
    /// Most bytes of each sample cell inside a column query (default 16, as above).
    #[serde(default = "default_query_cell_bytes")]
    pub query_cell_bytes: usize,
    /// Row-sampling seed.
    pub seed: u64,
}

fn default_query_header_bytes() -> usize {
    SerializeConfig::default().query_header_bytes
}

fn default_query_cell_bytes() -> usize {
    SerializeConfig::default().query_cell_bytes
}

impl Default for SerializeSettings {
    fn default() -> Self {
        SerializeSettings {
            max_table_tokens: 384,
            max_rows: 12,
            max_cell_bytes: 24,
            query_cells: 2,
            query_header_bytes: default_query_header_bytes(),
            query_cell_bytes: default_query_cell_bytes(),
            seed: 0,
        }
    }
}

impl SerializeSettings {
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

/// A label and the model's confidence in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// The label.
    pub label: String,
    /// Probability (softmax within its namespace).
    pub confidence: f32,
}

/// The types of a column in one namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypeAnnotation {
    /// The namespace (training set) the labels come from.
    pub namespace: String,
    /// The predicted labels: the argmax (single-label), or every label with at least half the
    /// best one's probability (multi-label).
    pub labels: Vec<Scored>,
    /// The `k` most probable labels.
    pub top_k: Vec<Scored>,
}

/// The relation of a column to the subject column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationAnnotation {
    /// The namespace the relations come from.
    pub namespace: String,
    /// The subject column.
    pub subject_column: usize,
    /// The predicted relation.
    pub relation: Scored,
    /// The `k` most probable relations.
    pub top_k: Vec<Scored>,
}

/// Everything the model says about one column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnAnnotation {
    /// Column index in the table.
    pub index: usize,
    /// Its header, when the table has one.
    pub header: Option<String>,
    /// Types, one entry per namespace asked for.
    pub types: Vec<TypeAnnotation>,
    /// Relations to the subject column (none for the subject column itself).
    pub relations: Vec<RelationAnnotation>,
}

/// A specialist's gate for a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateAnnotation {
    /// Specialist name.
    pub specialist: String,
    /// Gate probability `g`.
    pub gate: f32,
    /// Whether it ran (`g > τ`, within the budget).
    pub active: bool,
}

/// Annotations of one table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableAnnotation {
    /// Table id (file name or benchmark id).
    pub table: String,
    /// The column relations are predicted from.
    pub subject_column: usize,
    /// The router's decision.
    pub router: Vec<GateAnnotation>,
    /// One entry per column.
    pub columns: Vec<ColumnAnnotation>,
}

/// How to annotate.
#[derive(Clone, Debug)]
pub struct AnnotateOptions {
    /// CTA namespaces to report (empty: all).
    pub cta_namespaces: Vec<String>,
    /// CPA namespaces to report (empty: all).
    pub cpa_namespaces: Vec<String>,
    /// How many labels `top_k` lists.
    pub top_k: usize,
    /// Tables per forward pass.
    pub batch_size: usize,
    /// Which specialists read the tables (default: the router's choice).
    pub specialists: SpecialistUse,
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

impl Default for AnnotateOptions {
    fn default() -> Self {
        AnnotateOptions {
            cta_namespaces: Vec::new(),
            cpa_namespaces: Vec::new(),
            top_k: 3,
            batch_size: 16,
            specialists: SpecialistUse::Router,
        }
    }
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
}

/// Writes the label space and serialization settings beside a saved swarm.
pub fn save_model_extras(
    dir: &Path,
    space: &LabelSpace,
    serialize: &SerializeSettings,
) -> Result<(), TrainError> {
    space.save(&dir.join(LABELS_FILE))?;
    let path = dir.join(SERIALIZE_FILE);
    let json = serde_json::to_vec_pretty(serialize).map_err(|e| TrainError::Run {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    write_atomically(&path, &json)?;
    Ok(())
}

/// Reads the label space and serialization settings of a model directory and checks the
/// label space against the manifest's label lists.
pub fn load_model_extras(
    dir: &Path,
    manifest: &SwarmManifest,
) -> Result<(LabelSpace, SerializeSettings), TrainError> {
    let space = LabelSpace::load(&dir.join(LABELS_FILE))?;
    for task in [Task::Cta, Task::Cpa] {
        let flat = space.flat(task);
        let stored = match task {
            Task::Cta => &manifest.cta_labels,
            Task::Cpa => &manifest.cpa_labels,
        };
        if &flat != stored {
            return Err(TrainError::Run {
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
    let bytes = std::fs::read(&path).map_err(|e| TrainError::io(&path, e))?;
    let serialize = serde_json::from_slice(&bytes).map_err(|e| TrainError::Run {
        path: path.clone(),
        reason: format!("invalid serialization settings: {e}"),
    })?;
    Ok((space, serialize))
}

impl Model {
    /// Loads a model directory (checksums verified) onto `device`.
    pub fn load(dir: &Path, device: &Device) -> Result<Self, TrainError> {
        let (swarm, manifest) = Swarm::load(dir, device)?;
        let (space, serialize) = load_model_extras(dir, &manifest)?;
        let swarm = Swarm::new(swarm.orchestrator.valid(), swarm.specialists)?;
        Ok(Model {
            swarm,
            specialist_names: manifest
                .specialists
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            space,
            serialize,
        })
    }

    /// Annotates every column of every table.
    pub fn annotate(
        &self,
        tables: &[Table],
        options: &AnnotateOptions,
    ) -> Result<Vec<TableAnnotation>, TrainError> {
        let pick = |task: Task, wanted: &[String]| -> Result<Vec<usize>, TrainError> {
            let list = self.space.list(task);
            if wanted.is_empty() {
                return Ok((0..list.len()).collect());
            }
            wanted
                .iter()
                .map(|name| {
                    list.iter().position(|n| &n.name == name).ok_or_else(|| {
                        TrainError::Config(format!(
                            "the model has no {task} namespace `{name}` (it has: {})",
                            list.iter()
                                .map(|n| n.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
                })
                .collect()
        };
        let cta = pick(Task::Cta, &options.cta_namespaces)?;
        let cpa = pick(Task::Cpa, &options.cpa_namespaces)?;
        let mut annotations = Vec::with_capacity(tables.len());
        for chunk in tables.chunks(options.batch_size.max(1)) {
            let examples = self.encode(chunk, Columns::All);
            let refs: Vec<&Example> = examples.iter().collect();
            let out = self.forward(&refs, options.specialists)?;
            let subjects: Vec<usize> = chunk.iter().map(subject_column).collect();
            let outputs = Outputs::new(self, &out, &refs, &subjects);
            for (b, table) in chunk.iter().enumerate() {
                annotations.push(outputs.table(self, b, table, &cta, &cpa, options.top_k));
            }
        }
        Ok(annotations)
    }

    /// Tables as this model reads them: its serialization and, when it reads them, its column
    /// n-grams (targets are left unmapped: no namespace is chosen).
    pub fn encode<T: Borrow<Table>>(&self, tables: &[T], which: Columns) -> Vec<Example> {
        let serialize = self.serialize.config();
        let ngrams = featurizer(&self.swarm.orchestrator);
        let space = &self.space;
        tables
            .iter()
            .map(|t| {
                encode(
                    t.borrow(),
                    &serialize,
                    ngrams.as_ref(),
                    space,
                    None,
                    None,
                    which,
                )
            })
            .collect()
    }

    /// One forward pass at inference.
    pub fn forward(
        &self,
        examples: &[&Example],
        specialists: SpecialistUse,
    ) -> Result<SwarmOutput, TrainError> {
        let batch = to_batch(examples);
        let every = |on: bool| vec![vec![on; self.swarm.specialists.len()]; examples.len()];
        let routing: Routing<'_, ChaCha8Rng> = match specialists {
            SpecialistUse::Router => Routing::Threshold,
            SpecialistUse::Off => Routing::Fixed(every(false)),
            SpecialistUse::All => Routing::Fixed(every(true)),
        };
        Ok(self.swarm.forward(&batch, routing)?)
    }
}

/// The subject column: the table's own when it names one, else the first column whose
/// non-empty cells are mostly text (not numbers), else column 0.
pub fn subject_column(table: &Table) -> usize {
    table.subject_column.unwrap_or_else(|| {
        table
            .columns
            .iter()
            .position(|c| {
                let filled: Vec<_> = c.cells.iter().filter(|x| !x.is_null()).collect();
                let text = filled.iter().filter(|x| !x.is_numeric()).count();
                !filled.is_empty() && 2 * text > filled.len()
            })
            .unwrap_or(0)
    })
}

/// Decodes one namespace's probabilities ([`namespace_probs`]) into predicted outputs (indices
/// into `probs`): the argmax for single-label sets; for multi-label sets with a softmax, every
/// label with at least half the probability of the best (the targets of a column with `n`
/// labels are `1/n` each), with sigmoids every label above 0.5, at least the best.
///
/// Multi-label predictions are then closed under the namespace's hierarchy
/// ([`Namespace::ancestors`]). `probs` are the model's own ([`namespace_probs`]), not the
/// hierarchy-raised ones of [`hierarchy_probs`], where a super-type would tie with its subtype.
pub fn decode(namespace: &Namespace, probs: &[f32]) -> Vec<usize> {
    let Some(best) = argmax(probs) else {
        return Vec::new();
    };
    let chosen = match (namespace.kind, namespace.activation) {
        (LabelKind::SingleLabel, _) => return vec![best],
        (LabelKind::MultiLabel, Activation::Softmax) => (0..probs.len())
            .filter(|&i| probs[i] >= 0.5 * probs[best])
            .collect(),
        (LabelKind::MultiLabel, Activation::Sigmoid) => (0..probs.len())
            .filter(|&i| i == best || probs[i] > 0.5)
            .collect(),
    };
    namespace.close_under_ancestors(chosen)
}

fn argmax(values: &[f32]) -> Option<usize> {
    (0..values.len()).max_by(|&a, &b| values[a].total_cmp(&values[b]))
}

/// The probabilities `annotate` reports: in a multi-label namespace with a hierarchy, a type's
/// probability raised to its most probable subtype's (a director is a person), so that every
/// label [`decode`] adds by the hierarchy shows the confidence that brought it; else `probs`.
pub fn hierarchy_probs(namespace: &Namespace, probs: Vec<f32>) -> Vec<f32> {
    if namespace.kind == LabelKind::SingleLabel || namespace.ancestors.is_empty() {
        return probs;
    }
    // Through the same (transitive) closure `decode` adds super-types with, so a grandparent
    // the hierarchy file lists only through its child is raised too.
    let mut raised = probs.clone();
    for (label, &p) in probs.iter().enumerate() {
        for a in namespace.close_under_ancestors(vec![label]) {
            if let Some(r) = raised.get_mut(a) {
                *r = r.max(p);
            }
        }
    }
    raised
}

/// Probabilities of a namespace: a softmax over its outputs, or one sigmoid per output
/// ([`Namespace::activation`]).
pub fn namespace_probs(namespace: &Namespace, logits: &[f32]) -> Vec<f32> {
    let slice = &logits[namespace.range()];
    if namespace.activation == Activation::Sigmoid {
        return slice.iter().map(|&x| 1.0 / (1.0 + (-x).exp())).collect();
    }
    let max = slice.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = slice.iter().map(|&x| (x - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|&e| e / sum).collect()
}

fn top_k(namespace: &Namespace, probs: &[f32], k: usize) -> Vec<Scored> {
    let mut order: Vec<usize> = (0..probs.len()).collect();
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]));
    order
        .into_iter()
        .take(k)
        .map(|i| Scored {
            label: namespace.labels[i].clone(),
            confidence: probs[i],
        })
        .collect()
}

/// Host copies of a forward pass's logits, indexed by (table, query).
pub struct Outputs {
    /// CTA logits, one row per query.
    pub cta: Vec<Vec<f32>>,
    /// CPA logits per table: `(subject query, object query, logits)`.
    pub cpa: Vec<Vec<(usize, usize, Vec<f32>)>>,
    /// First row of each table.
    pub row_start: Vec<usize>,
    /// Gate probabilities and activity per table.
    pub gates: Vec<Vec<(f32, bool)>>,
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("rows", &self.cta.len())
            .finish()
    }
}

/// A `[rows, n]` tensor as host rows.
pub(crate) fn rows_of(tensor: Tensor<2>) -> Vec<Vec<f32>> {
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

impl Outputs {
    /// Copies what annotation and evaluation need; CPA pairs are (subject, every other query),
    /// `subjects` giving each table's subject *column*.
    pub fn new(
        model: &Model,
        out: &SwarmOutput,
        examples: &[&Example],
        subjects: &[usize],
    ) -> Self {
        let mut row_start = Vec::with_capacity(examples.len());
        let mut pairs = Vec::new();
        let mut pair_owner = Vec::new();
        let mut row = 0;
        for (b, example) in examples.iter().enumerate() {
            row_start.push(row);
            let subject = example.columns.iter().position(|&c| c == subjects[b]);
            if let Some(s) = subject
                && model.space.len(Task::Cpa) > 0
            {
                for o in (0..example.columns.len()).filter(|&o| o != s) {
                    pairs.push((row + s, row + o));
                    pair_owner.push((b, s, o));
                }
            }
            row += example.columns.len();
        }
        let mut cpa = vec![Vec::new(); examples.len()];
        if !pairs.is_empty() {
            let logits = rows_of(model.swarm.orchestrator.cpa_logits(out, &pairs));
            for ((b, s, o), l) in pair_owner.into_iter().zip(logits) {
                cpa[b].push((s, o, l));
            }
        }
        let probs = rows_of(out.router.probs.clone());
        let gates = (0..examples.len())
            .map(|b| {
                let active = out.router.active.get(b);
                probs
                    .get(b)
                    .map(|row| {
                        row.iter()
                            .enumerate()
                            .map(|(i, &g)| (g, active.is_some_and(|a| a[i])))
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        Outputs {
            cta: rows_of(out.cta_logits.clone()),
            cpa,
            row_start,
            gates,
        }
    }

    fn table(
        &self,
        model: &Model,
        b: usize,
        table: &Table,
        cta: &[usize],
        cpa: &[usize],
        k: usize,
    ) -> TableAnnotation {
        let subject = subject_column(table);
        let columns = (0..table.n_columns())
            .map(|c| {
                let logits = &self.cta[self.row_start[b] + c];
                let types = cta
                    .iter()
                    .map(|&i| {
                        let ns = &model.space.cta[i];
                        let probs = namespace_probs(ns, logits);
                        let predicted = decode(ns, &probs);
                        let probs = hierarchy_probs(ns, probs);
                        let mut labels: Vec<Scored> = predicted
                            .into_iter()
                            .map(|j| Scored {
                                label: ns.labels[j].clone(),
                                confidence: probs[j],
                            })
                            .collect();
                        labels.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
                        TypeAnnotation {
                            namespace: ns.name.clone(),
                            labels,
                            top_k: top_k(ns, &probs, k),
                        }
                    })
                    .collect();
                let relations = self.cpa[b]
                    .iter()
                    .filter(|(_, o, _)| *o == c)
                    .flat_map(|(_, _, logits)| {
                        cpa.iter().map(move |&i| {
                            let ns = &model.space.cpa[i];
                            let probs = namespace_probs(ns, logits);
                            // A namespace is never empty, so the best relation exists.
                            let best = top_k(ns, &probs, 1).remove(0);
                            RelationAnnotation {
                                namespace: ns.name.clone(),
                                subject_column: subject,
                                relation: best,
                                top_k: top_k(ns, &probs, k),
                            }
                        })
                    })
                    .collect();
                ColumnAnnotation {
                    index: c,
                    header: table.columns[c].header.clone(),
                    types,
                    relations,
                }
            })
            .collect();
        TableAnnotation {
            table: table.id.clone(),
            subject_column: subject,
            router: self.gates[b]
                .iter()
                .zip(&model.specialist_names)
                .map(|(&(gate, active), s)| GateAnnotation {
                    specialist: s.clone(),
                    gate,
                    active,
                })
                .collect(),
            columns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::DatasetFormat;

    #[test]
    fn query_budgets_reach_the_serializer_and_old_settings_keep_the_defaults() {
        let old: SerializeSettings = serde_json::from_str(
            r#"{"max_table_tokens":256,"max_rows":8,"max_cell_bytes":24,"query_cells":2,"seed":0}"#,
        )
        .unwrap();
        assert_eq!((old.query_header_bytes, old.query_cell_bytes), (32, 16));

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

    fn namespace(kind: LabelKind, activation: Activation, n: usize) -> Namespace {
        Namespace {
            name: "n".into(),
            format: DatasetFormat::T2d,
            kind,
            offset: 0,
            labels: (0..n).map(|i| format!("l{i}")).collect(),
            activation,
            ancestors: Vec::new(),
        }
    }

    #[test]
    fn decoding_follows_the_label_kind() {
        let single = namespace(LabelKind::SingleLabel, Activation::Softmax, 3);
        let multi = namespace(LabelKind::MultiLabel, Activation::Softmax, 4);
        assert_eq!(decode(&single, &[0.1, 0.7, 0.2]), [1]);
        assert_eq!(decode(&multi, &[0.45, 0.1, 0.45]), [0, 2]);
        assert_eq!(decode(&multi, &[0.1, 0.6, 0.2, 0.1]), [1]);
        assert!(decode(&single, &[]).is_empty());
    }

    #[test]
    fn super_types_are_at_least_as_probable_as_their_subtypes_and_are_predicted_with_them() {
        // 0 person, 1 director (a person), 2 city.
        let mut multi = namespace(LabelKind::MultiLabel, Activation::Sigmoid, 3);
        multi.ancestors = vec![vec![], vec![0], vec![]];
        let logits = [-2.0f32, 1.0, -1.0];
        let probs = namespace_probs(&multi, &logits);
        let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
        assert_eq!(
            hierarchy_probs(&multi, probs.clone()),
            [sigmoid(1.0), sigmoid(1.0), sigmoid(-1.0)]
        );
        assert_eq!(decode(&multi, &probs), [0, 1]);
        // Nothing above 0.5: the best label and its super-types, whichever comes first.
        let probs = namespace_probs(&multi, &[-3.0, -1.0, -2.0]);
        assert_eq!(decode(&multi, &probs), [0, 1]);
        let mut reversed = multi.clone();
        reversed.ancestors = vec![vec![], vec![2], vec![]];
        let probs = namespace_probs(&reversed, &[-2.0, -1.0, -3.0]);
        let shown = hierarchy_probs(&reversed, probs.clone());
        assert_eq!(shown[1], shown[2], "the super-type ties with its subtype");
        assert_eq!(decode(&reversed, &probs), [1, 2]);
        // Single-label namespaces never add super-types.
        let mut single = namespace(LabelKind::SingleLabel, Activation::Softmax, 3);
        single.ancestors = multi.ancestors.clone();
        assert_eq!(decode(&single, &namespace_probs(&single, &logits)), [1]);
    }

    #[test]
    fn a_grandparent_listed_only_through_its_child_is_raised_as_decode_adds_it() {
        // 0 person ← 1 film actor ← 2 tv actor: the tv actor lists its parent only.
        let mut multi = namespace(LabelKind::MultiLabel, Activation::Sigmoid, 3);
        multi.ancestors = vec![vec![], vec![0], vec![1]];
        let probs = namespace_probs(&multi, &[-3.0, -2.0, 2.0]);
        assert_eq!(decode(&multi, &probs), [0, 1, 2]);
        let shown = hierarchy_probs(&multi, probs.clone());
        assert_eq!(shown, [probs[2], probs[2], probs[2]]);
    }

    #[test]
    fn sigmoid_namespaces_keep_every_label_above_one_half_and_at_least_the_best() {
        let multi = namespace(LabelKind::MultiLabel, Activation::Sigmoid, 4);
        let probs = namespace_probs(&multi, &[2.0, -1.0, 0.5, -3.0]);
        let expected = [0.880797, 0.268941, 0.622459, 0.047426];
        for (p, e) in probs.iter().zip(expected) {
            assert!((p - e).abs() < 1e-5, "{p} vs {e}");
        }
        assert_eq!(decode(&multi, &probs), [0, 2]);
        // Nothing above 0.5: the best label alone (every column has a type).
        assert_eq!(decode(&multi, &[0.2, 0.4, 0.1, 0.3]), [1]);
        // A single-label set decodes to its argmax whatever the activation.
        let single = namespace(LabelKind::SingleLabel, Activation::Sigmoid, 3);
        assert_eq!(decode(&single, &[0.9, 0.95, 0.1]), [1]);
    }

    #[test]
    fn namespace_probabilities_stay_inside_the_namespace() {
        let mut space = LabelSpace::default();
        let single = LabelKind::SingleLabel;
        space.push(Task::Cta, "a", DatasetFormat::T2d, single, vec!["x".into()]);
        space.push(
            Task::Cta,
            "b",
            DatasetFormat::T2d,
            single,
            vec!["y".into(), "z".into()],
        );
        let probs = namespace_probs(&space.cta[1], &[100.0, 0.0, 0.0]);
        assert_eq!(probs, [0.5, 0.5]);
    }

    #[test]
    fn subject_column_prefers_the_first_text_column() {
        let t = Table::from_rows(
            "t",
            None,
            vec![
                vec!["1".into(), "Paris".into()],
                vec!["2".into(), "Rome".into()],
            ],
        );
        assert_eq!(subject_column(&t), 1);
    }
}
