//! What the model says about a table: types and relations per column, the router's gates.

use colswarm_tables::{NgramConfig, Table};
use serde::{Deserialize, Serialize};

use crate::decode::{
    abstains, best_probability, decode, hierarchy_probs, namespace_probs, subject_column,
};
use crate::encode::Columns;
use crate::encode::Example;
use crate::error::ModelError;
use crate::experts::average_logits;
use crate::label_names::LabelNames;
use crate::labels::{Namespace, Task};
use crate::model::{Expert, Model, SpecialistUse, rows_of};

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

/// The namespaces a caller reads from a prediction, as indices into the label space's CTA and
/// CPA lists: a domain expert that knows none of them is not read ([`Model::predict_for`]).
#[derive(Clone, Copy, Debug)]
pub struct Wanted<'a> {
    /// CTA namespaces.
    pub cta: &'a [usize],
    /// CPA namespaces.
    pub cpa: &'a [usize],
}

impl Model {
    /// One forward pass at inference, everything read back at once: CTA logits for every
    /// column, CPA logits for (subject, every other column) inside the forward pass, and the
    /// router's gates. `subjects` gives each table's subject *column*.
    pub fn predict(
        &self,
        examples: &[&Example],
        subjects: &[usize],
        specialists: SpecialistUse,
    ) -> Result<Outputs, ModelError> {
        self.predict_for(examples, subjects, specialists, None)
    }

    /// [`Model::predict`] for a caller that reads only the `wanted` namespaces (all with
    /// `None`): the domain experts that know none of them stay closed, which changes no logit
    /// of those namespaces and saves their reads.
    pub fn predict_for(
        &self,
        examples: &[&Example],
        subjects: &[usize],
        specialists: SpecialistUse,
        wanted: Option<Wanted<'_>>,
    ) -> Result<Outputs, ModelError> {
        let mut pairs = vec![Vec::new(); examples.len()];
        if self.space.len(Task::Cpa) > 0 {
            for (b, example) in examples.iter().enumerate() {
                if let Some(s) = example.columns.iter().position(|&c| c == subjects[b]) {
                    pairs[b] = (0..example.columns.len())
                        .filter(|&o| o != s)
                        .map(|o| (s, o))
                        .collect();
                }
            }
        }
        let out = self.forward_with_pairs(examples, pairs.clone(), specialists)?;
        let added = self.added_logits(&out, examples);
        let mut logits = out.cpa_logits.map(rows_of).unwrap_or_default().into_iter();
        let cpa = pairs
            .into_iter()
            .map(|table| {
                table
                    .into_iter()
                    .zip(logits.by_ref())
                    .map(|((s, o), l)| (s, o, l))
                    .collect()
            })
            .collect();
        let mut row_start = Vec::with_capacity(examples.len());
        let mut row = 0;
        for example in examples {
            row_start.push(row);
            row += example.columns.len();
        }
        let probs = rows_of(out.router.probs);
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
        let mut outputs = Outputs {
            cta: rows_of(out.cta_logits),
            cpa,
            row_start,
            gates,
        };
        if !self.experts.is_empty() {
            self.average_experts(examples, subjects, specialists, wanted, &mut outputs)?;
        }
        // The added namespaces' outputs follow the shared head's (after the experts, who know
        // only the shared namespaces).
        for (row, added) in outputs.cta.iter_mut().zip(added.into_iter().flatten()) {
            row.extend(added);
        }
        Ok(outputs)
    }

    /// Each expert reads the tables where the primary is unsure in its namespaces (all of them
    /// with [`SpecialistUse::All`] or when it has no [`Expert::open_below`], none with
    /// [`SpecialistUse::Off`], or when it knows none of the `wanted` namespaces) and its
    /// logits are averaged into `outputs` label by label ([`crate::experts`]). Each table
    /// reports, per expert, a gate of one minus the primary's confidence in the expert's
    /// namespaces (1 for an expert that always opens) and whether the expert opened.
    fn average_experts(
        &self,
        examples: &[&Example],
        subjects: &[usize],
        specialists: SpecialistUse,
        wanted: Option<Wanted<'_>>,
        outputs: &mut Outputs,
    ) -> Result<(), ModelError> {
        // Per expert: its output on the tables it opened, and each table's place in it.
        let mut reads = Vec::with_capacity(self.experts.len());
        let variants = self.expert_ngrams();
        for expert in &self.experts {
            let asked = wanted.is_none_or(|w| {
                let knows = |task, asked: &[usize]| {
                    expert.namespaces(task).iter().any(|n| asked.contains(n))
                };
                knows(Task::Cta, w.cta) || knows(Task::Cpa, w.cpa)
            });
            let gates = self.expert_gates(expert, examples, outputs, specialists, asked);
            for (table, gate) in outputs.gates.iter_mut().zip(&gates) {
                table.push(*gate);
            }
            let opened: Vec<usize> = (0..examples.len()).filter(|&b| gates[b].1).collect();
            let mut slot = vec![None; examples.len()];
            for (j, &b) in opened.iter().enumerate() {
                slot[b] = Some(j);
            }
            let out = if opened.is_empty() {
                None
            } else {
                let mut read: Vec<&Example> = opened.iter().map(|&b| examples[b]).collect();
                let read_subjects: Vec<usize> = opened.iter().map(|&b| subjects[b]).collect();
                let with_own_ngrams;
                if let Some(config) = expert.own_ngrams() {
                    with_own_ngrams = with_expert_ngrams(&read, &variants, config, &expert.name)?;
                    read = with_own_ngrams.iter().collect();
                }
                Some(
                    expert
                        .model
                        .predict(&read, &read_subjects, SpecialistUse::Off)?,
                )
            };
            reads.push((expert, slot, out));
        }
        average_reads(&reads, examples, outputs);
        Ok(())
    }

    /// Per table: `expert`'s gate (the primary's doubt in its namespaces, 1 for an expert that
    /// always opens) and whether it opens, as `specialists` says; never when not `asked`.
    fn expert_gates(
        &self,
        expert: &Expert,
        examples: &[&Example],
        outputs: &Outputs,
        specialists: SpecialistUse,
        asked: bool,
    ) -> Vec<(f32, bool)> {
        (0..examples.len())
            .map(|b| {
                // Reported as the primary's doubt, so that a higher gate opens, as the
                // router's do.
                let (gate, unsure) = match expert.open_below {
                    Some(p) => {
                        let confidence = self.confidence(expert, outputs, b, examples[b]);
                        (1.0 - confidence, confidence < p)
                    }
                    None => (1.0, true),
                };
                let opened = match specialists {
                    SpecialistUse::Router => unsure,
                    SpecialistUse::All => true,
                    SpecialistUse::Off => false,
                };
                (gate, asked && opened)
            })
            .collect()
    }

    /// The primary's least confident answer on table `b` in `expert`'s namespaces: the lowest,
    /// over its columns (CTA) and pairs (CPA), of the best label's probability before the
    /// label-name prior (1 when it has none there).
    fn confidence(&self, expert: &Expert, outputs: &Outputs, b: usize, example: &Example) -> f32 {
        let best = |task: Task, logits: &[f32]| {
            let list = self.space.list(task);
            expert
                .namespaces(task)
                .iter()
                .map(|&n| best_probability(&list[n], logits))
                .fold(1.0f32, f32::min)
        };
        let start = outputs.row_start[b];
        let columns = outputs.cta[start..start + example.columns.len()]
            .iter()
            .map(|row| best(Task::Cta, row));
        let pairs = outputs.cpa[b]
            .iter()
            .map(|(_, _, row)| best(Task::Cpa, row));
        columns.chain(pairs).fold(1.0, f32::min)
    }
}

/// What an expert read: each table's place in its output (`None`: not read) and the output.
type ExpertRead<'a> = (&'a Expert, Vec<Option<usize>>, Option<Outputs>);

/// Averages each expert's logits into `outputs` on the tables it read, label by label.
fn average_reads(reads: &[ExpertRead<'_>], examples: &[&Example], outputs: &mut Outputs) {
    for (b, example) in examples.iter().enumerate() {
        let opened: Vec<_> = reads
            .iter()
            .filter_map(|(expert, slot, out)| Some((*expert, slot[b]?, out.as_ref()?)))
            .collect();
        if opened.is_empty() {
            continue;
        }
        for c in 0..example.columns.len() {
            let others: Vec<_> = opened
                .iter()
                .map(|(e, j, out)| {
                    let own = out.cta[out.row_start[*j] + c].as_slice();
                    (own, e.label_map(Task::Cta))
                })
                .collect();
            average_logits(&mut outputs.cta[outputs.row_start[b] + c], &others);
        }
        for (i, (_, _, row)) in outputs.cpa[b].iter_mut().enumerate() {
            // An expert without relations scores no pairs.
            let others: Vec<_> = opened
                .iter()
                .filter_map(|(e, j, out)| {
                    let (_, _, own) = out.cpa.get(*j)?.get(i)?;
                    Some((own.as_slice(), e.label_map(Task::Cpa)))
                })
                .collect();
            average_logits(row, &others);
        }
    }
}

/// Copies of `examples` whose n-grams are those of `config`, one of `variants`
/// ([`crate::Example::expert_ngrams`]), for the expert `name` that reads them.
fn with_expert_ngrams(
    examples: &[&Example],
    variants: &[NgramConfig],
    config: &NgramConfig,
    name: &str,
) -> Result<Vec<Example>, ModelError> {
    let variant = variants.iter().position(|v| v == config);
    examples
        .iter()
        .map(|example| {
            let ngrams = variant
                .and_then(|v| example.expert_ngrams.get(v))
                .ok_or_else(|| {
                    ModelError::Encoding(format!(
                        "table {:?} holds no n-grams for expert {name:?}, which reads them as \
                         {config:?}: encode tables with the model that holds the expert \
                         (Model::encode)",
                        example.table_id
                    ))
                })?;
            Ok(Example {
                ngrams: ngrams.clone(),
                expert_ngrams: Vec::new(),
                ..(*example).clone()
            })
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
