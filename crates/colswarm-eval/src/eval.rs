//! Scoring a model on labelled tables: CTA per labelled column, CPA per (subject, column)
//! target, with [`crate::metrics::f1_report`].

use std::time::Instant;

use serde::{Deserialize, Serialize};

use colswarm_tables::Table;

use crate::abstention::{AbstentionReport, abstention_point};
use crate::compare::{TargetPrediction, score_predictions};
use crate::error::EvalError;
use crate::metrics::F1Report;
use crate::routing::RoutingReport;
use colswarm_model::Progress;
use colswarm_model::{Columns, Example};
use colswarm_model::{Decoder, Model, Place, SpecialistUse, Target, decode};
use colswarm_model::{Namespace, Outputs, Task, Wanted};
use colswarm_tables::DatasetFormat;

/// What to score.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// CTA or CPA.
    pub task: Task,
    /// The namespace whose labels are predicted (default: the one trained from the format).
    pub namespace: Option<String>,
    /// Tables per forward pass.
    pub batch_size: usize,
    /// Which specialists read the tables (default: the router's choice).
    pub specialists: SpecialistUse,
    /// Print a progress line.
    pub progress: bool,
    /// Keep every label's probability in [`EvalReport::targets`] (for `--predictions`; a
    /// map per target, so off by default).
    pub probabilities: bool,
    /// CPA: read relations from the subject column the model finds in each table
    /// ([`colswarm_model::detected_subject_column`], or its [`colswarm_model::SubjectLabel`]'s
    /// choice where it has one), as `annotate` does, not from the set's
    /// own; a target whose subject is another column is a miss. What a user gets at run time.
    pub own_subject: bool,
}

/// The result of [`evaluate`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EvalReport {
    /// `cta` or `cpa`.
    pub task: Task,
    /// The namespace predicted.
    pub namespace: String,
    /// Tables read.
    pub n_tables: usize,
    /// Targets scored (columns for CTA, column pairs for CPA).
    pub n_columns: usize,
    /// Whether specialists were allowed (the router's choice or all of them).
    pub use_specialists: bool,
    /// Mean fraction of specialists activated per table.
    pub activation_rate: f64,
    /// Per specialist, the share of tables it was opened on, overall and by kind of table
    /// (empty with the primary alone).
    #[serde(default)]
    pub routing: RoutingReport,
    /// Wall-clock seconds of the model's forward passes.
    pub seconds: f64,
    /// Scores.
    #[serde(flatten)]
    pub f1: F1Report,
    /// Where the namespace stores an abstention threshold: coverage and precision when it
    /// abstains (micro-F1 above is scored without abstaining, as the benchmarks score it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstention: Option<AbstentionReport>,
    /// Every scored target with its gold and predicted labels, in table order (what
    /// `colswarm eval --predictions` writes; not part of the JSON report).
    #[serde(skip)]
    pub targets: Vec<TargetPrediction>,
}

/// The task a format is scored on by default: CTA where its tables carry column labels,
/// CPA for T2D (its column labels are the same properties as its CPA targets).
pub fn default_task(format: DatasetFormat, tables: &[Table]) -> Task {
    let has_cta = tables.iter().any(|t| t.n_labelled_columns() > 0);
    if has_cta && !format.cpa_first() {
        Task::Cta
    } else {
        Task::Cpa
    }
}

/// Picks the namespace: the named one, else the only one trained from `format`.
pub fn pick_namespace<'m>(
    model: &'m Model,
    task: Task,
    format: DatasetFormat,
    name: Option<&str>,
) -> Result<&'m Namespace, EvalError> {
    let list = model.space.list(task);
    let names = || {
        list.iter()
            .map(|n| format!("{} ({})", n.name, n.format))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(name) = name {
        return model.space.namespace(task, name).ok_or_else(|| {
            EvalError::Config(format!(
                "the model has no {task} namespace `{name}`; it has: {}",
                names()
            ))
        });
    }
    match model.space.by_format(task, format).as_slice() {
        [one] => Ok(one),
        [] if list.len() == 1 => Ok(&list[0]),
        [] => Err(EvalError::Config(format!(
            "the model has no {task} namespace trained on {format}; pick one with --namespace from: {}",
            names()
        ))),
        _ => Err(EvalError::Config(format!(
            "several {task} namespaces were trained on {format}; pick one with --namespace from: {}",
            names()
        ))),
    }
}

/// The tables with at least one labelled target of `task`.
fn labelled(tables: &[Table], task: Task) -> Vec<&Table> {
    tables
        .iter()
        .filter(|t| match task {
            Task::Cta => t.n_labelled_columns() > 0,
            Task::Cpa => t.cpa_targets.iter().any(|c| !c.labels.is_empty()),
        })
        .collect()
}

/// The namespaces of `task` in `only`, and none of the other task's.
fn wanted<'a>(task: Task, only: &'a [usize], typed: &'a [usize]) -> Wanted<'a> {
    match task {
        Task::Cta => Wanted {
            cta: only,
            cpa: &[],
        },
        Task::Cpa => Wanted {
            cta: typed,
            cpa: only,
        },
    }
}

/// Each table's subject column: a CPA target's is the set's own (its pairs start there) unless
/// `own_subject`; types are predicted as at run time, where no gold key exists, from the model's
/// own choice of subject column (which the label-name prior may leave out), never the set's
/// annotated key.
fn subjects(tables: &[&Table], task: Task, own_subject: bool) -> Vec<usize> {
    tables
        .iter()
        .map(|t| match task {
            Task::Cpa if !own_subject => t
                .cpa_targets
                .first()
                .map(|c| c.subject_column)
                .unwrap_or_else(|| colswarm_model::subject_column(t)),
            _ => colswarm_model::detected_subject_column(t),
        })
        .collect()
}

/// Replaces the cell rule's subject columns in `subjects` by those the model finds from its
/// subject label in CTA namespace `typed` ([`Model::found_subject`]), as `annotate` does:
/// every table's for types, and for relations where they start from the model's own choice
/// (`own_subject`). That takes a pass over every column, not only the scored ones, as at run
/// time.
fn found_subjects(
    model: &Model,
    chunk: &[&Table],
    options: &EvalOptions,
    typed: usize,
    subjects: &mut [usize],
) -> Result<(), EvalError> {
    if options.task == Task::Cpa && !options.own_subject {
        return Ok(());
    }
    let examples = model.encode(chunk, Columns::All);
    let refs: Vec<&Example> = examples.iter().collect();
    let wanted = Wanted {
        cta: &[typed],
        cpa: &[],
    };
    let outputs = model.predict_for(&refs, subjects, options.specialists, Some(wanted))?;
    for (b, table) in chunk.iter().enumerate() {
        subjects[b] = model.found_subject(&outputs, b, table.n_columns(), subjects[b]);
    }
    Ok(())
}

/// One table of a forward pass: its place `b` in the pass and its subject column.
struct TableRead<'a> {
    table: &'a Table,
    example: &'a Example,
    outputs: &'a Outputs,
    b: usize,
    subject: usize,
}

/// How a target's logits become its scored prediction in the evaluated namespace.
struct Predictor<'a> {
    decoder: Decoder<'a>,
    keep_probabilities: bool,
}

impl Predictor<'_> {
    /// The predicted labels and every label's probability of the target in `column` (none for
    /// a target the model did not score).
    fn predict(
        &self,
        logits: Option<&[f32]>,
        read: &TableRead<'_>,
        (column, subject): (usize, Option<usize>),
        type_logits: Option<&[f32]>,
    ) -> TargetPrediction {
        let namespace = self.decoder.namespace();
        let header = read
            .table
            .columns
            .get(column)
            .and_then(|c| c.header.as_deref());
        let target = Target {
            header,
            is_subject: column == read.subject,
            type_logits,
            place: Some(Place {
                table: read.table,
                column,
                subject,
                features: None,
            }),
        };
        let probs = logits.map_or_else(Vec::new, |l| self.decoder.probs(l, target));
        let predicted = if probs.is_empty() {
            Vec::new()
        } else {
            decode(namespace, &probs)
                .into_iter()
                .map(|i| namespace.labels[i].clone())
                .collect()
        };
        let probabilities = if self.keep_probabilities {
            namespace.labels.iter().cloned().zip(probs).collect()
        } else {
            Default::default()
        };
        TargetPrediction {
            predicted,
            probabilities,
            ..TargetPrediction::default()
        }
    }

    /// The table's labelled columns, scored.
    fn cta_targets(&self, read: &TableRead<'_>) -> Vec<TargetPrediction> {
        let outputs = read.outputs;
        let mut scored = Vec::new();
        for (q, &c) in read.example.columns.iter().enumerate() {
            let gold = &read.table.columns[c].labels;
            if gold.is_empty() {
                continue;
            }
            let logits = &outputs.cta[outputs.row_start[read.b] + q];
            scored.push(TargetPrediction {
                table: read.table.id.clone(),
                subject: None,
                column: c,
                gold: gold.clone(),
                ..self.predict(Some(logits), read, (c, None), None)
            });
        }
        scored
    }

    /// The table's labelled pairs, scored. Pairs without a gold relation are not scored (as
    /// columns without a type are not), the baseline's rule too.
    fn cpa_targets(&self, read: &TableRead<'_>) -> Vec<TargetPrediction> {
        let (table, example) = (read.table, read.example);
        let query = |c| example.columns.iter().position(|&x| x == c);
        table
            .cpa_targets
            .iter()
            .filter(|t| !t.labels.is_empty())
            .map(|target| {
                let object = query(target.object_column);
                let logits = match (query(target.subject_column), object) {
                    (Some(s), Some(o)) => read.outputs.cpa[read.b]
                        .iter()
                        .find(|(ps, po, _)| *ps == s && *po == o)
                        .map(|(_, _, l)| l.as_slice()),
                    _ => None,
                };
                let outputs = read.outputs;
                let type_logits =
                    object.map(|o| outputs.cta[outputs.row_start[read.b] + o].as_slice());
                TargetPrediction {
                    table: table.id.clone(),
                    subject: Some(target.subject_column),
                    column: target.object_column,
                    gold: target.labels.clone(),
                    // A target whose subject differs from the table's first one gets no
                    // prediction: a miss, never dropped.
                    ..self.predict(
                        logits,
                        read,
                        (target.object_column, Some(target.subject_column)),
                        type_logits,
                    )
                }
            })
            .collect()
    }
}

/// Scores `model` on `tables`.
pub fn evaluate(
    model: &Model,
    tables: &[Table],
    format: DatasetFormat,
    options: &EvalOptions,
) -> Result<EvalReport, EvalError> {
    let namespace = pick_namespace(model, options.task, format, options.namespace.as_deref())?;
    let mut scored = Vec::new();
    let mut seconds = 0.0;
    let mut routing = RoutingReport::default();
    let tables = labelled(tables, options.task);
    let index = model
        .space
        .list(options.task)
        .iter()
        .position(|n| n.name == namespace.name)
        .ok_or_else(|| {
            EvalError::Config(format!(
                "the model has no {} namespace `{}`",
                options.task, namespace.name
            ))
        })?;
    let predictor = Predictor {
        decoder: Decoder::new(&model.space, options.task, index)
            .with_reader(model.reader(options.task, index)),
        // Abstention is scored from each target's probabilities, kept for it.
        keep_probabilities: options.probabilities || namespace.abstain_below.is_some(),
    };
    // Only the scored namespace's experts need to read the tables, and those of the types a
    // relation's type view reads.
    let only = [index];
    let typed = Vec::from_iter(predictor.decoder.type_namespace());
    let wanted = wanted(options.task, &only, &typed);
    let mut progress = Progress::new("eval", tables.len(), options.progress);
    let mut done = 0;
    for chunk in colswarm_model::passes(&tables, options.batch_size) {
        let examples = model.encode(chunk, Columns::Targets);
        let refs: Vec<&Example> = examples.iter().collect();
        let mut subjects = subjects(chunk, options.task, options.own_subject);
        if let Some((typed, _, _)) = model.subject_label() {
            found_subjects(model, chunk, options, typed, &mut subjects)?;
        }
        let start = Instant::now();
        let outputs = model.predict_for(&refs, &subjects, options.specialists, Some(wanted))?;
        seconds += start.elapsed().as_secs_f64();
        // The primary alone still reports every gate, closed: no routing to report.
        if options.specialists != SpecialistUse::Off {
            routing.add_pass(model, chunk, &outputs);
        }
        for (b, (table, example)) in chunk.iter().zip(&examples).enumerate() {
            let read = TableRead {
                table,
                example,
                outputs: &outputs,
                b,
                subject: subjects[b],
            };
            match options.task {
                Task::Cta => scored.extend(predictor.cta_targets(&read)),
                Task::Cpa => scored.extend(predictor.cpa_targets(&read)),
            }
        }
        done += chunk.len();
        progress.set(done, "");
    }
    progress.finish("done");
    let f1 = score_predictions(&scored, namespace);
    let abstention = namespace.abstain_below.map(|threshold| AbstentionReport {
        at_threshold: abstention_point(&scored, namespace, threshold),
    });
    if !options.probabilities {
        for target in &mut scored {
            target.probabilities.clear();
        }
    }
    Ok(EvalReport {
        task: options.task,
        namespace: namespace.name.clone(),
        n_tables: tables.len(),
        n_columns: scored.len(),
        use_specialists: options.specialists != SpecialistUse::Off,
        activation_rate: routing.activation_rate(),
        routing,
        seconds,
        f1,
        abstention,
        targets: scored,
    })
}

#[cfg(test)]
mod tests {
    use colswarm_tables::CpaTarget;

    use super::*;

    #[test]
    fn types_take_the_models_subject_column_and_relations_the_sets_pairs() {
        let mut t = Table::from_rows(
            "t",
            None,
            vec![
                vec!["Paris".into(), "France".into(), "2.1".into()],
                vec!["Rome".into(), "Italy".into(), "2.8".into()],
            ],
        );
        // A benchmark's annotated key (T2D's) that the cells alone would not choose.
        t.subject_column = Some(1);
        t.cpa_targets = vec![CpaTarget {
            subject_column: 1,
            object_column: 2,
            labels: vec!["population".into()],
        }];
        assert_eq!(subjects(&[&t], Task::Cta, false), [0]);
        assert_eq!(subjects(&[&t], Task::Cpa, false), [1]);
        // At run time relations start from the model's own subject column too.
        assert_eq!(subjects(&[&t], Task::Cpa, true), [0]);
    }

    #[test]
    fn eval_finds_each_table_s_subject_column_as_annotate_does() {
        use colswarm_model::{AnnotateOptions, Annotator, SubjectLabel};

        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
        let annotator = Annotator::builder(format!("{root}models/colswarm-small"))
            .build()
            .unwrap();
        let mut model = annotator.model().clone();
        let t2d = model
            .space
            .cta
            .iter()
            .position(|n| n.name == "t2d")
            .unwrap();
        model.space.cta[t2d].subject_label = Some(SubjectLabel {
            label: "http://www.w3.org/2000/01/rdf-schema#label".into(),
            margin: -1.0,
        });
        let samples = format!("{root}datasets/t2d-webtables/samples");
        let mut plain: Vec<Table> = colswarm_model::table_files(&[samples.into()])
            .unwrap()
            .iter()
            .map(|f| colswarm_model::read_table(f).unwrap())
            .collect();
        // Reversed, the cell rule often finds another column than the label does.
        let reversed: Vec<Table> = plain
            .iter()
            .map(|t| {
                let mut r = t.clone();
                r.columns.reverse();
                r
            })
            .collect();
        plain.extend(reversed);
        // A set's annotated key, which types never read.
        let keyed: Vec<Table> = plain
            .iter()
            .map(|t| {
                let mut k = t.clone();
                k.subject_column = Some(0);
                k
            })
            .collect();
        let chunk: Vec<&Table> = keyed.iter().collect();
        let options = EvalOptions {
            task: Task::Cta,
            namespace: None,
            batch_size: chunk.len(),
            specialists: SpecialistUse::Router,
            progress: false,
            probabilities: false,
            own_subject: false,
        };
        let rule = subjects(&chunk, Task::Cta, false);
        let mut found = rule.clone();
        found_subjects(&model, &chunk, &options, t2d, &mut found).unwrap();
        let annotated = model.annotate(&plain, &AnnotateOptions::default()).unwrap();
        let expected: Vec<usize> = annotated.iter().map(|a| a.subject_column).collect();
        assert_eq!(found, expected);
        assert_ne!(found, rule, "no table moved: the test would prove nothing");
        // Relations on the set's pairs start from the set's key.
        let cpa = EvalOptions {
            task: Task::Cpa,
            ..options
        };
        let mut kept = subjects(&chunk, Task::Cpa, false);
        found_subjects(&model, &chunk, &cpa, t2d, &mut kept).unwrap();
        assert!(kept.iter().all(|&s| s == 0), "{kept:?}");
    }
}
