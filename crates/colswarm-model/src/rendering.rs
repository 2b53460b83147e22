//! Turning a prediction into annotations: each namespace's probabilities (after the
//! label-name prior) decoded into labels, abstentions, the `top_k`, relations to the subject
//! column and the gates.

use colswarm_tables::Table;

use crate::annotation::{
    AnnotateOptions, ColumnAnnotation, GateAnnotation, RelationAnnotation, Scored, TableAnnotation,
    TypeAnnotation,
};
use crate::decode::{Decoder, Place, Target, abstains, decode, hierarchy_probs};
use crate::encode::{Columns, Example, passes};
use crate::error::ModelError;
use crate::label_names::header_names;
use crate::labels::{Namespace, Task};
use crate::model::{Model, SpecialistUse};
use crate::prediction::{Outputs, Wanted};
use crate::reader::TableFeatures;
use crate::subject::subject_column;

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
        let decoders = |task: Task, picked: Vec<usize>| -> Vec<(usize, Decoder)> {
            let space = &self.space;
            picked
                .into_iter()
                .map(|i| {
                    (
                        i,
                        Decoder::new(space, task, i).with_reader(self.reader(task, i)),
                    )
                })
                .collect()
        };
        let cta = decoders(Task::Cta, pick(Task::Cta, &options.cta_namespaces)?);
        let cpa = decoders(Task::Cpa, pick(Task::Cpa, &options.cpa_namespaces)?);
        let mut cta_wanted: Vec<usize> = cta.iter().map(|(i, _)| *i).collect();
        let cpa_wanted: Vec<usize> = cpa.iter().map(|(i, _)| *i).collect();
        // A relation's type view reads its CTA namespace, with that namespace's experts.
        for typed in cpa.iter().filter_map(|(_, d)| d.type_namespace()) {
            if !cta_wanted.contains(&typed) {
                cta_wanted.push(typed);
            }
        }
        // The subject label's namespace finds subject columns, with its experts.
        if let Some((typed, _, _)) = self.subject_label()
            && !cta_wanted.contains(&typed)
        {
            cta_wanted.push(typed);
        }
        let wanted = Wanted {
            cta: &cta_wanted,
            cpa: &cpa_wanted,
        };
        let mut annotations = Vec::with_capacity(tables.len());
        for chunk in passes(tables, options.batch_size) {
            // With the specialists off no expert reads the tables: their bags are not needed.
            let experts = options.specialists != SpecialistUse::Off;
            let examples = self.encode_for(chunk, Columns::All, experts);
            let refs: Vec<&Example> = examples.iter().collect();
            let subjects: Vec<usize> = chunk.iter().map(subject_column).collect();
            let outputs = self.predict_for(&refs, &subjects, options.specialists, Some(wanted))?;
            // Where the model finds another subject column than the cell rule (and the table
            // names none), the table is read again from it: its relations start there.
            let found: Vec<usize> = (0..chunk.len())
                .map(|b| match chunk[b].subject_column {
                    Some(named) => named,
                    None => self.found_subject(&outputs, b, chunk[b].n_columns(), subjects[b]),
                })
                .collect();
            let moved: Vec<usize> = (0..chunk.len())
                .filter(|&b| found[b] != subjects[b])
                .collect();
            // Only the relations change with the subject column (types are decoded from the
            // first pass, with the subject column found): the second pass asks for relations
            // alone, so experts that know none stay closed.
            let again = if moved.is_empty() || cpa_wanted.is_empty() {
                None
            } else {
                let tables: Vec<&Table> = moved.iter().map(|&b| &chunk[b]).collect();
                let examples = self.encode_for(&tables, Columns::All, experts);
                let refs: Vec<&Example> = examples.iter().collect();
                let starts: Vec<usize> = moved.iter().map(|&b| found[b]).collect();
                let relations = Wanted {
                    cta: &[],
                    cpa: &cpa_wanted,
                };
                Some(self.predict_for(&refs, &starts, options.specialists, Some(relations))?)
            };
            for (b, table) in chunk.iter().enumerate() {
                let columns = table.n_columns();
                let annotation = match moved.iter().position(|&m| m == b) {
                    Some(i) => {
                        let mut merged = outputs.one_table(b, columns);
                        if let Some(again) = &again {
                            merged.cpa = again.one_table(i, columns).cpa;
                        }
                        merged.table(self, (0, table, found[b]), &cta, &cpa, options)
                    }
                    None => outputs.table(self, (b, table, subjects[b]), &cta, &cpa, options),
                };
                annotations.push(annotation);
            }
        }
        Ok(annotations)
    }
}

/// The `k` most probable labels, best first; equal probabilities in label order. Selects the
/// `k` before sorting them: a namespace holds hundreds of labels and asks for a few.
fn top_k(namespace: &Namespace, probs: &[f32], k: usize) -> Vec<Scored> {
    let mut order: Vec<usize> = (0..probs.len()).collect();
    // A total order (the index breaks ties), so the selection equals a stable sort's first k.
    let better = |a: &usize, b: &usize| probs[*b].total_cmp(&probs[*a]).then(a.cmp(b));
    if k < order.len() {
        if k > 0 {
            order.select_nth_unstable_by(k - 1, better);
        }
        order.truncate(k);
    }
    order.sort_unstable_by(better);
    order
        .into_iter()
        .map(|i| Scored {
            label: namespace.labels[i].clone(),
            confidence: probs[i],
        })
        .collect()
}

/// What a column holds for the model to go on.
#[derive(Clone, Copy, Debug)]
enum Evidence<'a> {
    /// At least one value.
    Values,
    /// No value, only its header (empty when it has none).
    HeaderOnly(&'a str),
}

impl<'a> Evidence<'a> {
    fn of(table: &'a Table, column: usize) -> Self {
        let column = &table.columns[column];
        if column
            .cells
            .iter()
            .any(|cell| !cell.is_null() && !cell.text().trim().is_empty())
        {
            Evidence::Values
        } else {
            Evidence::HeaderOnly(column.header.as_deref().unwrap_or(""))
        }
    }

    /// Whether the answer `labels` may stand: a column with no value has nothing for the
    /// heads to type but its header, so its answer stands only where the header names one
    /// of its labels (`Notes` → `notes`; `col2` → nothing, where the heads alone said `type`).
    fn supports<'l>(self, mut labels: impl Iterator<Item = &'l String>) -> bool {
        match self {
            Evidence::Values => true,
            Evidence::HeaderOnly(header) => labels.any(|label| header_names(header, label)),
        }
    }
}

/// A column's types in namespace `ns` from its probabilities: the decoded labels (none where
/// the namespace abstains, or where the column has no value and its header names none of
/// them), best first, and the `top_k`.
fn type_annotation(
    ns: &Namespace,
    probs: Vec<f32>,
    evidence: Evidence,
    options: &AnnotateOptions,
) -> TypeAnnotation {
    let mut abstained = options.abstain && abstains(ns, &probs);
    let mut predicted = if abstained {
        Vec::new()
    } else {
        decode(ns, &probs)
    };
    if options.abstain && !evidence.supports(predicted.iter().map(|&j| &ns.labels[j])) {
        abstained = true;
        predicted.clear();
    }
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
        (b, table, subject): (usize, &Table, usize),
        cta: &[(usize, Decoder)],
        cpa: &[(usize, Decoder)],
        options: &AnnotateOptions,
    ) -> TableAnnotation {
        let k = options.top_k;
        // The readers of every namespace share the table's n-gram features.
        let features = &TableFeatures::new(table);
        let columns = (0..table.n_columns())
            .map(|c| {
                let logits = &self.cta[self.row_start[b] + c];
                let type_logits = logits.as_slice();
                let header = table.columns[c].header.as_deref();
                let evidence = Evidence::of(table, c);
                let types = cta
                    .iter()
                    .map(|(_, decoder)| {
                        let target = Target {
                            header,
                            is_subject: c == subject,
                            type_logits: None,
                            place: Some(Place {
                                table,
                                column: c,
                                subject: None,
                                features: Some(features),
                            }),
                        };
                        let probs = decoder.probs(logits, target);
                        type_annotation(decoder.namespace(), probs, evidence, options)
                    })
                    .collect();
                let relations = self.cpa[b]
                    .iter()
                    .filter(|(_, o, _)| *o == c)
                    .flat_map(|(_, _, logits)| {
                        cpa.iter().map(move |(_, decoder)| {
                            let ns = decoder.namespace();
                            let target = Target {
                                header,
                                is_subject: false,
                                type_logits: Some(type_logits),
                                place: Some(Place {
                                    table,
                                    column: c,
                                    subject: Some(subject),
                                    features: Some(features),
                                }),
                            };
                            let probs = decoder.probs(logits, target);
                            let best = top_k(ns, &probs, 1).into_iter().next();
                            // An empty object column relates by its header alone, as its types.
                            let abstained = options.abstain
                                && (abstains(ns, &probs)
                                    || !evidence.supports(best.iter().map(|b| &b.label)));
                            RelationAnnotation {
                                namespace: ns.name.clone(),
                                subject_column: subject,
                                relation: best.filter(|_| !abstained),
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

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_swarm::LabelKind;
    use colswarm_tables::DatasetFormat;

    fn namespace(threshold: Option<f32>) -> Namespace {
        let labels = ["city", "country", "river"].map(String::from).to_vec();
        let mut ns = Namespace::new("t", DatasetFormat::T2d, LabelKind::SingleLabel, 0, labels);
        ns.abstain_below = threshold;
        ns
    }

    #[test]
    fn top_k_lists_the_most_probable_first() {
        let ns = namespace(None);
        let top = top_k(&ns, &[0.2, 0.5, 0.3], 2);
        let labels: Vec<&str> = top.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["country", "river"]);
    }

    #[test]
    fn top_k_selects_what_a_stable_sort_would_list_ties_and_all() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in [1usize, 2, 5, 40, 300] {
            let labels: Vec<String> = (0..n).map(|i| format!("l{i}")).collect();
            let ns = Namespace::new("t", DatasetFormat::T2d, LabelKind::SingleLabel, 0, labels);
            // Few distinct values, so ties cross the k-th place.
            let probs: Vec<f32> = (0..n).map(|_| (next() % 6) as f32 / 8.0).collect();
            let mut stable: Vec<usize> = (0..n).collect();
            stable.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]));
            for k in [0, 1, 3, n.saturating_sub(1), n, n + 2] {
                let got: Vec<String> = top_k(&ns, &probs, k).into_iter().map(|s| s.label).collect();
                let want: Vec<String> = stable.iter().take(k).map(|&i| format!("l{i}")).collect();
                assert_eq!(got, want, "n {n}, k {k}");
            }
        }
    }

    #[test]
    fn a_namespace_below_its_threshold_abstains_but_still_lists_its_candidates() {
        let options = AnnotateOptions::default();
        let unsure = type_annotation(
            &namespace(Some(0.6)),
            vec![0.2, 0.5, 0.3],
            Evidence::Values,
            &options,
        );
        assert!(unsure.abstained && unsure.labels.is_empty());
        assert_eq!(unsure.top_k.len(), 3);
        let sure = type_annotation(
            &namespace(Some(0.4)),
            vec![0.2, 0.5, 0.3],
            Evidence::Values,
            &options,
        );
        assert!(!sure.abstained);
        assert_eq!(sure.labels[0].label, "country");
        let told = AnnotateOptions {
            abstain: false,
            ..AnnotateOptions::default()
        };
        let labelled = type_annotation(
            &namespace(Some(0.6)),
            vec![0.2, 0.5, 0.3],
            Evidence::Values,
            &told,
        );
        assert!(!labelled.abstained && labelled.labels[0].label == "country");
    }

    #[test]
    fn a_column_without_values_is_answered_only_with_labels_its_header_names() {
        let options = AnnotateOptions::default();
        let probs = || vec![0.1, 0.8, 0.1];
        let named = type_annotation(
            &namespace(None),
            probs(),
            Evidence::HeaderOnly("Countries"),
            &options,
        );
        assert!(!named.abstained && named.labels[0].label == "country");
        for header in ["col2", ""] {
            let unnamed = type_annotation(
                &namespace(None),
                probs(),
                Evidence::HeaderOnly(header),
                &options,
            );
            assert!(unnamed.abstained && unnamed.labels.is_empty(), "{header:?}");
            assert_eq!(
                unnamed.top_k[0].label, "country",
                "the candidates stay listed"
            );
        }
        let told = AnnotateOptions {
            abstain: false,
            ..AnnotateOptions::default()
        };
        let guessed = type_annotation(&namespace(None), probs(), Evidence::HeaderOnly(""), &told);
        assert!(!guessed.abstained && guessed.labels[0].label == "country");

        let mut table = Table::new(
            "t",
            vec![
                colswarm_tables::Column::new(
                    Some("a".into()),
                    vec![
                        colswarm_tables::Cell::null(),
                        colswarm_tables::Cell::new("  "),
                    ],
                ),
                colswarm_tables::Column::new(
                    Some("b".into()),
                    vec![colswarm_tables::Cell::new("x")],
                ),
            ],
        );
        assert!(matches!(Evidence::of(&table, 0), Evidence::HeaderOnly("a")));
        assert!(matches!(Evidence::of(&table, 1), Evidence::Values));
        table.columns[0].header = None;
        assert!(matches!(Evidence::of(&table, 0), Evidence::HeaderOnly("")));
    }
}
