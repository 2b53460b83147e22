//! The peers every model number stands beside: majority-class, character n-gram and two header
//! rules, scored exactly like the model ([`crate::metrics`]).
//!
//! - [`BaselineKind::Majority`] predicts one constant answer: the most frequent training label
//!   (single-label namespaces) or every label held by more than half of the training targets,
//!   at least the most frequent one (multi-label namespaces).
//! - [`BaselineKind::CharNgram`] is a linear classifier over hashed byte n-grams of the column's
//!   header and first cells (for CPA: of the object column, plus the subject column's header),
//!   trained with SGD: softmax and cross-entropy for single-label namespaces, one-vs-rest
//!   sigmoids and binary cross-entropy for multi-label ones. With
//!   [`BaselineConfig::label_name_weight`] it adds the model's label-name prior to its scores
//!   (`weight · jaccard(header words, label-name words)`), so that a comparison with a model
//!   that uses the prior measures the model, not the prior.
//! - [`BaselineKind::HeaderRule`] trains on nothing: the label whose name shares the most words
//!   with the header. [`BaselineKind::HeaderMemory`] gives the label seen most often with the
//!   header in training. Ties go to the label first in namespace order; a header without a
//!   shared word (rule) or unseen in training (memory), or no header at all, gets no label.
//!
//! All are deterministic given [`BaselineConfig::seed`] (the seed only orders the SGD steps).
//! The n-gram model keeps a dense `buckets × labels` matrix of `f32`: 32 MiB for the default
//! 2^16 buckets and 128 labels.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use colswarm_model::label_names::LabelNames;
use colswarm_swarm::LabelKind;
use colswarm_tables::{NgramConfig, SparseFeatures, Table, TableNgrams};

use crate::compare::{TargetPrediction, score_predictions};
use crate::header_peers::HeaderRule;
use crate::metrics::F1Report;
use crate::ngram_classifier::{NgramClassifier, NgramTraining, sigmoid, softmax};
use colswarm_model::HeaderMemory;
use colswarm_model::{Namespace, Task, close_under};

/// Which baseline to train.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BaselineKind {
    /// A constant answer: the training set's most frequent label (set).
    Majority,
    /// A linear classifier over hashed character (byte) n-grams.
    CharNgram,
    /// No training: the label whose name shares the most words with the header.
    HeaderRule,
    /// The label seen most often with this header in training.
    HeaderMemory,
}

impl BaselineKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [BaselineKind; 4] = [
        BaselineKind::Majority,
        BaselineKind::CharNgram,
        BaselineKind::HeaderRule,
        BaselineKind::HeaderMemory,
    ];

    /// The command-line name (`majority`, `char-ngram`, `header-rule`, `header-memory`).
    pub fn name(self) -> &'static str {
        match self {
            BaselineKind::Majority => "majority",
            BaselineKind::CharNgram => "char-ngram",
            BaselineKind::HeaderRule => "header-rule",
            BaselineKind::HeaderMemory => "header-memory",
        }
    }
}

impl fmt::Display for BaselineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BaselineKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BaselineKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = BaselineKind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown baseline `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// How to train a baseline. [`BaselineConfig::default`] gives a majority baseline; set `kind`
/// for the n-gram one (the other fields only matter to it).
#[derive(Clone, Debug, PartialEq)]
pub struct BaselineConfig {
    /// Which baseline.
    pub kind: BaselineKind,
    /// Seed of the order SGD visits the training targets in.
    pub seed: u64,
    /// Passes over the training targets.
    pub epochs: usize,
    /// Hash buckets of the feature space (the weight matrix has `buckets × labels` floats;
    /// from 2^14 to 2^18 the shipped sets score alike).
    pub buckets: usize,
    /// Smallest and largest n-gram length, in bytes (the smallest is at least 1).
    pub ngram: (usize, usize),
    /// Non-null cells of a column that give features (the first ones, in row order).
    pub max_cells: usize,
    /// Initial SGD step size; it decays linearly to zero over training. Features are unit
    /// length, so steps far above 1 are fine: 2 did best of 0.2–8 on the shipped dev sets.
    pub learning_rate: f32,
    /// The n-gram baseline adds `weight · jaccard(header words, label-name words)` to every
    /// label's score, as the model's label-name prior does (`None`: no prior).
    pub label_name_weight: Option<f32>,
    /// The n-gram baseline's features also hold each column's value statistics
    /// ([`colswarm_tables::NgramConfig::value_stats`]).
    pub value_stats: bool,
    /// The n-gram baseline's features also hold each column's place in its table
    /// ([`colswarm_tables::NgramConfig::position`]), which a model reads from its query.
    pub position: bool,
}

impl Default for BaselineConfig {
    fn default() -> Self {
        BaselineConfig {
            kind: BaselineKind::Majority,
            seed: 0,
            epochs: 10,
            buckets: 1 << 16,
            ngram: (2, 4),
            max_cells: 20,
            learning_rate: 2.0,
            label_name_weight: None,
            value_stats: false,
            position: false,
        }
    }
}

/// A trained baseline for one task and one label namespace.
pub struct Baseline {
    kind: BaselineKind,
    task: Task,
    label_kind: LabelKind,
    labels: Vec<String>,
    /// The namespace's hierarchy ([`Namespace::ancestors`]): multi-label predictions are closed
    /// under it, as the model's are.
    ancestors: Vec<Vec<usize>>,
    model: Model,
}

enum Model {
    /// Label indices predicted for every target.
    Constant(Vec<usize>),
    /// Hashed n-grams into a linear layer, with the label-name prior and its weight if any.
    Linear(NgramConfig, NgramClassifier, Option<(LabelNames, f32)>),
    /// The label-name word overlap.
    HeaderRule(HeaderRule),
    /// The label per header seen in training.
    HeaderMemory(HeaderMemory),
}

impl fmt::Debug for Baseline {
    // The weight matrix has millions of entries: show its shape, not its contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Baseline");
        s.field("kind", &self.kind)
            .field("task", &self.task)
            .field("label_kind", &self.label_kind)
            .field("labels", &self.labels.len());
        match &self.model {
            Model::Constant(answer) => s.field("constant", answer),
            Model::Linear(features, _, _) => s.field("buckets", &features.buckets),
            Model::HeaderRule(_) => s.field("rule", &"label-name overlap"),
            Model::HeaderMemory(memory) => s.field("headers", &memory.len()),
        };
        s.finish()
    }
}

impl Baseline {
    /// Which baseline this is.
    pub fn kind(&self) -> BaselineKind {
        self.kind
    }

    /// The task it was trained for.
    pub fn task(&self) -> Task {
        self.task
    }

    /// The labels it can predict (its namespace's, in namespace order).
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The n-gram baseline's featurizer, weights (`buckets × labels`, row-major) and biases,
    /// without its label-name prior; `None` for the others.
    pub fn linear_parts(&self) -> Option<(&NgramConfig, &[f32], &[f32])> {
        let Model::Linear(featurizer, linear, _) = &self.model else {
            return None;
        };
        let (weights, bias) = linear.parts();
        Some((featurizer, weights, bias))
    }

    /// Predicted types of `column` (meant for a CTA baseline). A column index past the table's
    /// end gives the prediction for an empty column.
    pub fn predict_cta(&self, table: &Table, column: usize) -> Vec<String> {
        self.predict(table, column, None)
    }

    /// Predicted relations between the `subject` and `object` columns (meant for a CPA
    /// baseline). Indices past the table's end count as empty columns.
    pub fn predict_cpa(&self, table: &Table, subject: usize, object: usize) -> Vec<String> {
        self.predict(table, object, Some(subject))
    }

    fn predict(&self, table: &Table, column: usize, subject: Option<usize>) -> Vec<String> {
        let ngrams = self.table_ngrams(table);
        self.labels_of(self.score(table, ngrams.as_ref(), column, subject).0)
    }

    /// The featurizer of `table`'s targets (the n-gram baseline's; none for the majority
    /// one): what its columns share is computed once per table, not once per target.
    fn table_ngrams<'t>(&'t self, table: &'t Table) -> Option<TableNgrams<'t>> {
        match &self.model {
            Model::Linear(featurizer, _, _) => Some(featurizer.for_table(table)),
            Model::Constant(_) | Model::HeaderRule(_) | Model::HeaderMemory(_) => None,
        }
    }

    /// The label ids predicted for a target of `table` (a CTA column, or a CPA pair's object
    /// column with its subject; `ngrams` featurizes the table for the n-gram baseline), closed
    /// under the hierarchy, and the n-gram baseline's scores they come from (`None` for the
    /// others).
    fn score(
        &self,
        table: &Table,
        ngrams: Option<&TableNgrams<'_>>,
        column: usize,
        subject: Option<usize>,
    ) -> (Vec<usize>, Option<Vec<f32>>) {
        let header = header_of(table, column);
        let (ids, scores) = match &self.model {
            Model::Constant(answer) => (answer.clone(), None),
            Model::Linear(_, linear, prior) => {
                let features = ngrams.map(|t| t.column(column, subject));
                let mut scores = linear.scores(features.as_deref().unwrap_or_default());
                if let Some((names, weight)) = prior {
                    names.add_prior(&mut scores, header, *weight);
                }
                (
                    NgramClassifier::decide(&scores, self.label_kind),
                    Some(scores),
                )
            }
            Model::HeaderRule(rule) => (rule.predict(header).into_iter().collect(), None),
            Model::HeaderMemory(memory) => {
                (memory.most_frequent(header).into_iter().collect(), None)
            }
        };
        let ids = match self.label_kind {
            LabelKind::MultiLabel => close_under(&self.ancestors, ids),
            LabelKind::SingleLabel => ids,
        };
        (ids, scores)
    }

    fn labels_of(&self, ids: Vec<usize>) -> Vec<String> {
        ids.into_iter().map(|i| self.labels[i].clone()).collect()
    }

    /// Every label's probability from a target's scores: its sigmoid (multi-label) or the
    /// softmax (single-label), as the baseline was trained.
    fn probabilities(&self, scores: Vec<f32>) -> BTreeMap<String, f32> {
        let probs = match self.label_kind {
            LabelKind::SingleLabel => softmax(&scores),
            LabelKind::MultiLabel => scores.into_iter().map(sigmoid).collect(),
        };
        self.labels.iter().cloned().zip(probs).collect()
    }
}

/// A target with its gold labels' indices in the namespace.
type LabelledTarget<'t> = (Target<'t>, Vec<usize>);

/// One scored unit of a table: a column (CTA) or a (subject, object) pair (CPA), with its gold
/// labels.
struct Target<'t> {
    column: usize,
    subject: Option<usize>,
    gold: &'t [String],
}

/// The labelled targets of `table` for `task` (targets with no gold label are skipped).
fn targets(task: Task, table: &Table) -> Vec<Target<'_>> {
    match task {
        Task::Cta => table
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_labelled())
            .map(|(column, c)| Target {
                column,
                subject: None,
                gold: &c.labels,
            })
            .collect(),
        Task::Cpa => table
            .cpa_targets
            .iter()
            .filter(|t| !t.labels.is_empty())
            .map(|t| Target {
                column: t.object_column,
                subject: Some(t.subject_column),
                gold: &t.labels,
            })
            .collect(),
    }
}

/// Trains a baseline for `task` on the labelled targets of `tables`. Gold labels outside
/// `namespace` are ignored, and targets left with none are skipped. With no usable target at
/// all the baseline predicts nothing.
pub fn train_baseline(
    config: &BaselineConfig,
    task: Task,
    namespace: &Namespace,
    tables: &[Table],
) -> Baseline {
    let ids: HashMap<&str, usize> = namespace
        .labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), i))
        .collect();
    // Per table, its (target, gold label indices), in table order.
    let mut examples: Vec<(&Table, Vec<LabelledTarget<'_>>)> = Vec::new();
    for table in tables {
        let mut labelled = Vec::new();
        for target in targets(task, table) {
            let mut gold: Vec<usize> = target
                .gold
                .iter()
                .filter_map(|l| ids.get(l.as_str()).copied())
                .collect();
            gold.sort_unstable();
            gold.dedup();
            if !gold.is_empty() {
                labelled.push((target, gold));
            }
        }
        if !labelled.is_empty() {
            examples.push((table, labelled));
        }
    }
    // The header rule needs no training data; the others predict nothing without any.
    let model = if examples.is_empty() && config.kind != BaselineKind::HeaderRule {
        Model::Constant(Vec::new())
    } else {
        match config.kind {
            BaselineKind::Majority => {
                let golds: Vec<&[usize]> = examples
                    .iter()
                    .flat_map(|(_, labelled)| labelled.iter().map(|(_, g)| g.as_slice()))
                    .collect();
                Model::Constant(majority(&golds, namespace.labels.len(), namespace.kind))
            }
            BaselineKind::CharNgram => {
                let featurizer = featurizer(config);
                let mut data: Vec<(SparseFeatures, Vec<usize>)> = Vec::new();
                for (table, labelled) in examples {
                    let ngrams = featurizer.for_table(table);
                    for (target, gold) in labelled {
                        data.push((ngrams.column(target.column, target.subject), gold));
                    }
                }
                let linear =
                    train_classifier(config, featurizer.buckets as usize, namespace, &data);
                let prior = config
                    .label_name_weight
                    .map(|weight| (LabelNames::new(&namespace.labels), weight));
                Model::Linear(featurizer, linear, prior)
            }
            BaselineKind::HeaderRule => Model::HeaderRule(HeaderRule::new(&namespace.labels)),
            BaselineKind::HeaderMemory => Model::HeaderMemory(HeaderMemory::from_examples(
                examples.iter().flat_map(|(table, labelled)| {
                    labelled
                        .iter()
                        .map(|(target, gold)| (header_of(table, target.column), gold.as_slice()))
                }),
                1.0,
            )),
        }
    };
    Baseline {
        kind: config.kind,
        task,
        label_kind: namespace.kind,
        labels: namespace.labels.clone(),
        ancestors: namespace.ancestors.clone(),
        model,
    }
}

/// The header of `table`'s `column`; empty when it has none (or there is no such column).
fn header_of(table: &Table, column: usize) -> &str {
    table
        .columns
        .get(column)
        .and_then(|c| c.header.as_deref())
        .unwrap_or("")
}

/// The constant answer: the most frequent label (ties: the first in namespace order), plus, for
/// multi-label namespaces, every other label held by more than half of the targets.
fn majority(golds: &[&[usize]], n_labels: usize, kind: LabelKind) -> Vec<usize> {
    let mut counts = vec![0usize; n_labels];
    for gold in golds {
        for &label in *gold {
            counts[label] += 1;
        }
    }
    // `max_by_key` keeps the last maximum; scanning in reverse makes that the first label.
    let Some(top) = (0..n_labels).rev().max_by_key(|&i| counts[i]) else {
        return Vec::new();
    };
    match kind {
        LabelKind::SingleLabel => vec![top],
        LabelKind::MultiLabel => (0..n_labels)
            .filter(|&i| i == top || 2 * counts[i] > golds.len())
            .collect(),
    }
}

/// Scores `baseline` on the labelled targets of `tables` for `task`, as the model is scored:
/// one [`Scored`](crate::Scored) per labelled column (CTA) or CPA target, gold labels outside
/// `namespace` kept and counted as unknown.
pub fn evaluate_baseline(
    baseline: &Baseline,
    task: Task,
    namespace: &Namespace,
    tables: &[Table],
) -> F1Report {
    score_predictions(
        &baseline_predictions(baseline, task, tables, false),
        namespace,
    )
}

/// The baseline's prediction for every labelled target of `tables`, in table order (what
/// [`evaluate_baseline`] scores), with every label's probability when `probabilities` is set
/// (for `--predictions`; a map per target) and the baseline has any.
pub fn baseline_predictions(
    baseline: &Baseline,
    task: Task,
    tables: &[Table],
    probabilities: bool,
) -> Vec<TargetPrediction> {
    let mut predictions = Vec::new();
    for table in tables {
        let ngrams = baseline.table_ngrams(table);
        for target in targets(task, table) {
            let (ids, scores) =
                baseline.score(table, ngrams.as_ref(), target.column, target.subject);
            predictions.push(TargetPrediction {
                table: table.id.clone(),
                subject: target.subject,
                column: target.column,
                gold: target.gold.to_vec(),
                predicted: baseline.labels_of(ids),
                probabilities: scores
                    .filter(|_| probabilities)
                    .map(|s| baseline.probabilities(s))
                    .unwrap_or_default(),
            });
        }
    }
    predictions
}

/// The baseline's featurizer: [`NgramConfig`] from a [`BaselineConfig`].
fn featurizer(config: &BaselineConfig) -> NgramConfig {
    let min_n = config.ngram.0.max(1);
    NgramConfig {
        buckets: u32::try_from(config.buckets.max(1)).unwrap_or(u32::MAX),
        min_n,
        max_n: config.ngram.1.max(min_n),
        max_cells: config.max_cells,
        neighbours: false,
        value_stats: config.value_stats,
        position: config.position,
    }
}

/// The n-gram classifier of a namespace, trained as `config` says.
fn train_classifier(
    config: &BaselineConfig,
    buckets: usize,
    namespace: &Namespace,
    data: &[(SparseFeatures, Vec<usize>)],
) -> NgramClassifier {
    let training = NgramTraining {
        seed: config.seed,
        epochs: config.epochs,
        learning_rate: config.learning_rate,
    };
    NgramClassifier::fit(
        &training,
        buckets,
        namespace.labels.len(),
        namespace.kind,
        data,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_tables::DatasetFormat;
    use colswarm_tables::{Cell, Column, CpaTarget};

    fn namespace(kind: LabelKind, labels: &[&str]) -> Namespace {
        Namespace::new(
            "toy",
            DatasetFormat::T2d,
            kind,
            0,
            labels.iter().map(|s| s.to_string()).collect(),
        )
    }

    fn column(header: Option<&str>, cells: &[String], labels: &[&str]) -> Column {
        let mut c = Column::new(
            header.map(str::to_string),
            cells.iter().map(|t| Cell::new(t.as_str())).collect(),
        );
        c.labels = labels.iter().map(|s| s.to_string()).collect();
        c
    }

    /// One table per label list, each with a single headerless column of `x`.
    fn labelled(label_lists: &[&[&str]]) -> Vec<Table> {
        label_lists
            .iter()
            .enumerate()
            .map(|(i, labels)| {
                Table::new(format!("t{i}"), vec![column(None, &["x".into()], labels)])
            })
            .collect()
    }

    #[test]
    fn kind_names_round_trip() {
        for kind in BaselineKind::ALL {
            assert_eq!(kind.to_string().parse::<BaselineKind>(), Ok(kind));
        }
        assert!("ngram".parse::<BaselineKind>().is_err());
    }

    #[test]
    fn majority_single_label_ignores_labels_outside_the_namespace() {
        // `z` is the most frequent gold label but unknown to the namespace.
        let tables = labelled(&[&["b"], &["a"], &["b"], &["z"], &["z"], &["z"]]);
        let ns = namespace(LabelKind::SingleLabel, &["a", "b"]);
        let baseline = train_baseline(&BaselineConfig::default(), Task::Cta, &ns, &tables);
        assert_eq!(baseline.predict_cta(&tables[0], 0), ["b"]);
        assert_eq!(
            baseline.predict_cta(&tables[0], 7),
            ["b"],
            "constant, even off the table"
        );
        let report = evaluate_baseline(&baseline, Task::Cta, &ns, &tables);
        // Two of six targets right; the three `z` are unknown misses.
        assert_eq!((report.n_targets, report.labels_unknown), (6, 3));
        assert!((report.micro_f1 - 2.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn majority_multi_label_keeps_labels_of_most_targets() {
        let ns = namespace(LabelKind::MultiLabel, &["a", "b", "c"]);
        let config = BaselineConfig::default();
        // a: 3/3, b: 2/3, c: 1/3.
        let tables = labelled(&[&["a", "b"], &["a", "b"], &["a", "c"]]);
        let baseline = train_baseline(&config, Task::Cta, &ns, &tables);
        assert_eq!(baseline.predict_cta(&tables[0], 0), ["a", "b"]);
        // No label reaches half the targets: the single most frequent one (tie → first).
        let tables = labelled(&[&["c"], &["b"], &["c"], &["b"], &["a"]]);
        let baseline = train_baseline(&config, Task::Cta, &ns, &tables);
        assert_eq!(baseline.predict_cta(&tables[0], 0), ["b"]);
        // Nothing to learn from: nothing predicted.
        let baseline = train_baseline(&config, Task::Cta, &ns, &labelled(&[&["z"]]));
        assert!(baseline.predict_cta(&tables[0], 0).is_empty());
    }

    #[test]
    fn multi_label_predictions_are_closed_under_the_namespace_hierarchy() {
        // `director` is a `person`; every training target is `director` alone.
        let mut ns = namespace(LabelKind::MultiLabel, &["city", "director", "person"]);
        let tables = labelled(&[&["director"], &["director"], &["director"]]);
        let config = BaselineConfig::default();
        assert_eq!(
            train_baseline(&config, Task::Cta, &ns, &tables).predict_cta(&tables[0], 0),
            ["director"]
        );
        ns.ancestors = vec![vec![], vec![2], vec![]];
        let baseline = train_baseline(&config, Task::Cta, &ns, &tables);
        assert_eq!(baseline.predict_cta(&tables[0], 0), ["director", "person"]);
        let ngram = BaselineConfig {
            kind: BaselineKind::CharNgram,
            ..config
        };
        let baseline = train_baseline(&ngram, Task::Cta, &ns, &tables);
        assert_eq!(baseline.predict_cta(&tables[0], 0), ["director", "person"]);
        // A single-label namespace never adds super-types.
        ns.kind = LabelKind::SingleLabel;
        let baseline = train_baseline(&BaselineConfig::default(), Task::Cta, &ns, &tables);
        assert_eq!(baseline.predict_cta(&tables[0], 0), ["director"]);
    }

    #[test]
    fn majority_cpa_predicts_the_most_frequent_relation() {
        let ns = namespace(LabelKind::SingleLabel, &["capital", "population"]);
        let mut table = Table::new(
            "t",
            vec![
                column(Some("country"), &["France".into()], &[]),
                column(Some("capital"), &["Paris".into()], &["x"]),
                column(Some("people"), &["67M".into()], &[]),
            ],
        );
        let target = |o: usize, l: &str| CpaTarget {
            subject_column: 0,
            object_column: o,
            labels: vec![l.to_string()],
        };
        table.cpa_targets = vec![
            target(1, "population"),
            target(2, "population"),
            target(1, "capital"),
        ];
        let baseline = train_baseline(&BaselineConfig::default(), Task::Cpa, &ns, &[table.clone()]);
        assert_eq!(baseline.predict_cpa(&table, 0, 1), ["population"]);
        let report = evaluate_baseline(&baseline, Task::Cpa, &ns, &[table]);
        assert_eq!(report.n_targets, 3);
        assert!((report.micro_f1 - 2.0 / 3.0).abs() < 1e-12);
    }

    const CITIES: &[&str] = &[
        "Paris",
        "London",
        "Berlin",
        "Madrid",
        "Rome",
        "Vienna",
        "Lisbon",
        "Dublin",
        "Prague",
        "Warsaw",
        "Oslo",
        "Helsinki",
        "Athens",
        "Brussels",
        "Amsterdam",
        "Copenhagen",
        "Stockholm",
        "Budapest",
        "Bucharest",
        "Sofia",
        "Zagreb",
        "Belgrade",
        "Riga",
        "Vilnius",
        "Tallinn",
        "Bern",
        "Geneva",
        "Munich",
        "Hamburg",
        "Milan",
        "Naples",
        "Porto",
    ];

    /// Headerless toy columns, alternately integers (labelled `number_labels`) and city names
    /// (labelled `city`); `seed` picks the values, so other seeds give held-out columns.
    fn toy_tables(n: usize, seed: usize, number_labels: &[&str]) -> Vec<Table> {
        (0..n)
            .map(|i| {
                let k = seed * 1000 + i;
                let (cells, labels): (Vec<String>, &[&str]) = if i % 2 == 0 {
                    let numbers = (0..5).map(|j| ((k * 7919 + j * 104_729) % 100_000).to_string());
                    (numbers.collect(), number_labels)
                } else {
                    let cities = (0..5).map(|j| CITIES[(k * 5 + j * 3) % CITIES.len()].to_string());
                    (cities.collect(), &["city"])
                };
                Table::new(format!("toy{seed}-{i}"), vec![column(None, &cells, labels)])
            })
            .collect()
    }

    fn ngram_config(seed: u64) -> BaselineConfig {
        BaselineConfig {
            kind: BaselineKind::CharNgram,
            seed,
            buckets: 1 << 12,
            ..BaselineConfig::default()
        }
    }

    #[test]
    fn char_ngram_separates_numbers_from_cities_on_held_out_columns() {
        let train = toy_tables(20, 1, &["number"]);
        let held_out = toy_tables(40, 2, &["number"]);
        for kind in [LabelKind::SingleLabel, LabelKind::MultiLabel] {
            let ns = namespace(kind, &["city", "number"]);
            let baseline = train_baseline(&ngram_config(3), Task::Cta, &ns, &train);
            let report = evaluate_baseline(&baseline, Task::Cta, &ns, &held_out);
            assert_eq!(report.n_targets, 40);
            assert_eq!((report.micro_f1, report.macro_f1), (1.0, 1.0), "{kind:?}");
            // The majority baseline cannot do this (half the columns are of each type).
            let majority = train_baseline(&BaselineConfig::default(), Task::Cta, &ns, &train);
            let report = evaluate_baseline(&majority, Task::Cta, &ns, &held_out);
            assert!(report.micro_f1 <= 0.5, "{kind:?}");
        }
    }

    #[test]
    fn char_ngram_multi_label_predicts_every_likely_label() {
        // Number columns carry two labels; predicting only the top one would miss half of them.
        let labels: &[&str] = &["number", "quantity"];
        let ns = namespace(LabelKind::MultiLabel, &["city", "number", "quantity"]);
        let baseline = train_baseline(&ngram_config(5), Task::Cta, &ns, &toy_tables(20, 1, labels));
        let report = evaluate_baseline(&baseline, Task::Cta, &ns, &toy_tables(40, 2, labels));
        assert_eq!(report.n_gold_labels, 60);
        assert_eq!((report.micro_f1, report.macro_f1), (1.0, 1.0));
    }

    #[test]
    fn char_ngram_reads_the_subject_header_for_cpa() {
        // Same object values, the relation depends on the subject column's header alone.
        let mut tables = Vec::new();
        for i in 0..20 {
            let (subject, relation) = if i % 2 == 0 {
                ("film", "director")
            } else {
                ("book", "author")
            };
            let mut t = Table::new(
                format!("t{i}"),
                vec![
                    column(Some(subject), &["x".into()], &[]),
                    column(None, &[CITIES[i % CITIES.len()].into()], &[]),
                ],
            );
            t.cpa_targets = vec![CpaTarget {
                subject_column: 0,
                object_column: 1,
                labels: vec![relation.into()],
            }];
            tables.push(t);
        }
        let ns = namespace(LabelKind::SingleLabel, &["author", "director"]);
        let baseline = train_baseline(&ngram_config(0), Task::Cpa, &ns, &tables[..10]);
        let report = evaluate_baseline(&baseline, Task::Cpa, &ns, &tables[10..]);
        assert_eq!(report.micro_f1, 1.0);
    }

    #[test]
    fn char_ngram_is_deterministic_given_the_seed() {
        let train = toy_tables(20, 1, &["number"]);
        let ns = namespace(LabelKind::MultiLabel, &["city", "number"]);
        let weights =
            |seed: u64| match train_baseline(&ngram_config(seed), Task::Cta, &ns, &train).model {
                Model::Linear(_, linear, _) => linear.parts().0.to_vec(),
                _ => panic!("the n-gram baseline trained no linear model"),
            };
        assert_eq!(weights(7), weights(7));
        // The seed is used: another visiting order gives other floats.
        assert_ne!(weights(7), weights(8));
        let a = train_baseline(&ngram_config(7), Task::Cta, &ns, &train);
        let b = train_baseline(&ngram_config(7), Task::Cta, &ns, &train);
        let held_out = toy_tables(10, 2, &["number"]);
        for table in &held_out {
            assert_eq!(a.predict_cta(table, 0), b.predict_cta(table, 0));
        }
    }
}
