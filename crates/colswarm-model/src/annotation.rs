//! What the model says about a table: types and relations per column, the router's gates.

use colswarm_tables::Table;
use serde::{Deserialize, Serialize};

use crate::decode::{abstains, decode, hierarchy_probs, namespace_probs, subject_column};
use crate::encode::Columns;
use crate::encode::Example;
use crate::error::ModelError;
use crate::label_names::LabelNames;
use crate::labels::{Namespace, Task};
use crate::model::{Model, SpecialistUse};
use crate::prediction::{Outputs, Wanted};

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
    /// best one's probability (multi-label); none when the namespace abstains.
    pub labels: Vec<Scored>,
    /// The `k` most probable labels (listed even when the namespace abstains).
    pub top_k: Vec<Scored>,
    /// Whether the namespace abstained: its best label's probability is below the threshold
    /// the model stores for it ([`crate::Namespace::abstain_below`]), so no label is given.
    #[serde(default)]
    pub abstained: bool,
}

/// The relation of a column to the subject column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationAnnotation {
    /// The namespace the relations come from.
    pub namespace: String,
    /// The subject column.
    pub subject_column: usize,
    /// The predicted relation; none when the namespace abstains.
    pub relation: Option<Scored>,
    /// The `k` most probable relations (listed even when the namespace abstains).
    pub top_k: Vec<Scored>,
    /// Whether the namespace abstained: its best relation's probability is below the
    /// threshold the model stores for it ([`crate::Namespace::abstain_below`]), so no relation
    /// fits.
    #[serde(default)]
    pub abstained: bool,
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
    /// Honour the namespaces' abstention thresholds (default); `false` gives every column its
    /// best label.
    pub abstain: bool,
}

impl Default for AnnotateOptions {
    fn default() -> Self {
        AnnotateOptions {
            cta_namespaces: Vec::new(),
            cpa_namespaces: Vec::new(),
            top_k: 3,
            batch_size: 16,
            specialists: SpecialistUse::Router,
            abstain: true,
        }
    }
}

impl Model {
    /// Annotates every column of every table.
    pub fn annotate(
        &self,
        tables: &[Table],
        options: &AnnotateOptions,
    ) -> Result<Vec<TableAnnotation>, ModelError> {
        let pick = |task: Task, wanted: &[String]| -> Result<Vec<usize>, ModelError> {
            let list = self.space.list(task);
            if wanted.is_empty() {
                return Ok((0..list.len()).collect());
            }
            wanted
                .iter()
                .map(|name| {
                    list.iter().position(|n| &n.name == name).ok_or_else(|| {
                        ModelError::UnknownNamespace(format!(
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
        // Each picked namespace with the words of its label names where it has a label-name
        // prior: split once per call, not once per column.
        let with_names = |task: Task, picked: Vec<usize>| -> Vec<(usize, Option<LabelNames>)> {
            let list = self.space.list(task);
            picked
                .into_iter()
                .map(|i| (i, LabelNames::of(&list[i])))
                .collect()
        };
        let cta = with_names(Task::Cta, pick(Task::Cta, &options.cta_namespaces)?);
        let cpa = with_names(Task::Cpa, pick(Task::Cpa, &options.cpa_namespaces)?);
        let indices = |picked: &[(usize, Option<LabelNames>)]| -> Vec<usize> {
            picked.iter().map(|(i, _)| *i).collect()
        };
        let (cta_wanted, cpa_wanted) = (indices(&cta), indices(&cpa));
        let wanted = Wanted {
            cta: &cta_wanted,
            cpa: &cpa_wanted,
        };
        let mut annotations = Vec::with_capacity(tables.len());
        for chunk in tables.chunks(options.batch_size.max(1)) {
            // With the specialists off no expert reads the tables: their bags are not needed.
            let experts = options.specialists != SpecialistUse::Off;
            let examples = self.encode_for(chunk, Columns::All, experts);
            let refs: Vec<&Example> = examples.iter().collect();
            let subjects: Vec<usize> = chunk.iter().map(subject_column).collect();
            let outputs = self.predict_for(&refs, &subjects, options.specialists, Some(wanted))?;
            for (b, table) in chunk.iter().enumerate() {
                annotations.push(outputs.table(self, b, table, &cta, &cpa, options));
            }
        }
        Ok(annotations)
    }
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

/// A column's types in namespace `ns` from its probabilities: the decoded labels (none where
/// the namespace abstains), best first, and the `top_k`.
fn type_annotation(ns: &Namespace, probs: Vec<f32>, options: &AnnotateOptions) -> TypeAnnotation {
    let abstained = options.abstain && abstains(ns, &probs);
    let predicted = if abstained {
        Vec::new()
    } else {
        decode(ns, &probs)
    };
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
        top_k: top_k(ns, &probs, options.top_k),
        abstained,
    }
}

impl Outputs {
    pub(crate) fn table(
        &self,
        model: &Model,
        b: usize,
        table: &Table,
        cta: &[(usize, Option<LabelNames>)],
        cpa: &[(usize, Option<LabelNames>)],
        options: &AnnotateOptions,
    ) -> TableAnnotation {
        let k = options.top_k;
        let subject = subject_column(table);
        let columns = (0..table.n_columns())
            .map(|c| {
                let logits = &self.cta[self.row_start[b] + c];
                let header = table.columns[c].header.as_deref();
                let types = cta
                    .iter()
                    .map(|(i, names)| {
                        let ns = &model.space.cta[*i];
                        let header = ns.prior_header(header, c, subject);
                        let probs = namespace_probs(ns, logits, header.zip(names.as_ref()));
                        type_annotation(ns, probs, options)
                    })
                    .collect();
                let relations = self.cpa[b]
                    .iter()
                    .filter(|(_, o, _)| *o == c)
                    .flat_map(|(_, _, logits)| {
                        cpa.iter().map(move |(i, names)| {
                            let ns = &model.space.cpa[*i];
                            let probs = namespace_probs(ns, logits, header.zip(names.as_ref()));
                            let abstained = options.abstain && abstains(ns, &probs);
                            RelationAnnotation {
                                namespace: ns.name.clone(),
                                subject_column: subject,
                                relation: (!abstained)
                                    .then(|| top_k(ns, &probs, 1).into_iter().next())
                                    .flatten(),
                                top_k: top_k(ns, &probs, k),
                                abstained,
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
                .zip(model.gate_names())
                .map(|(&(gate, active), s)| GateAnnotation {
                    specialist: s.to_string(),
                    gate,
                    active,
                })
                .collect(),
            columns,
        }
    }
}
