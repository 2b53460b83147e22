//! Labelled tables → token ids and head targets.

use std::borrow::Borrow;
use std::sync::Arc;

use colswarm_swarm::{
    ColumnNgramsConfig, ColumnWordsConfig, Orchestrator, TableBatch, WordVectors,
};
use colswarm_tables::{
    ColumnWords, NgramConfig, SerializeConfig, SparseFeatures, Table, serialize_table,
};

use crate::labels::{LabelSpace, Task};

/// One table ready for the model: its tokens, the queries of the columns that matter, and the
/// targets of those columns in head-output ids.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    /// Id of the table.
    pub table_id: String,
    /// The serialized table.
    pub tokens: Vec<u32>,
    /// Table column of each query.
    pub columns: Vec<usize>,
    /// One query per entry of `columns`.
    pub queries: Vec<Vec<u32>>,
    /// Where each queried column lies in `tokens`.
    pub spans: Vec<std::ops::Range<usize>>,
    /// Per query: the column's hashed n-gram features (empty when the model reads none).
    pub ngrams: Vec<SparseFeatures>,
    /// Per [`Featurizer::expert_ngrams`] configuration, per query: the column's n-gram
    /// features as the domain experts that read n-grams otherwise see them.
    pub expert_ngrams: Vec<Vec<SparseFeatures>>,
    /// Per query: the column's word-vector features (empty when the model reads none).
    pub words: Vec<Vec<f32>>,
    /// Per query: CTA head outputs that are true (empty: not labelled, no CTA loss).
    pub cta: Vec<Vec<usize>>,
    /// Index of the CTA namespace in the label space.
    pub cta_namespace: Option<usize>,
    /// CPA targets: (subject query, object query, true head outputs).
    pub cpa: Vec<(usize, usize, Vec<usize>)>,
    /// Index of the CPA namespace in the label space.
    pub cpa_namespace: Option<usize>,
    /// (query, CTA namespace) pairs where the column has no label of that namespace: a sigmoid
    /// namespace learns to keep every label low on it (empty unless the trainer adds them).
    pub cta_none: Vec<(usize, usize)>,
}

/// The per-column features a model reads beside its tokens.
#[derive(Clone, Debug, Default)]
pub struct Featurizer {
    /// Hashed character n-grams, if the model reads them.
    pub ngrams: Option<NgramConfig>,
    /// The other n-gram configurations the model's domain experts read (an expert trained
    /// with neighbour n-grams beside a primary without them), each computed once per table.
    pub expert_ngrams: Vec<NgramConfig>,
    /// Word vectors, if the model reads them.
    pub words: Option<(ColumnWordsConfig, Arc<WordVectors>)>,
}

impl Featurizer {
    /// The word-vector features of `table`'s columns `columns` (a column past its end has no
    /// words); none when the model reads no word vectors.
    fn word_features(&self, table: &Table, columns: &[usize]) -> Vec<Vec<f32>> {
        let Some((config, vectors)) = self.words.as_ref() else {
            return Vec::new();
        };
        let words_of = |c: usize| {
            table
                .columns
                .get(c)
                .map(|c| ColumnWords::of(c, config.max_cells))
        };
        // The topic reads every column; without it only the queried ones are cut into words.
        let every: Option<Vec<Option<ColumnWords>>> = config
            .table_topic
            .then(|| (0..table.n_columns()).map(words_of).collect());
        let topic = every.as_ref().map(|every| {
            let words: Vec<&String> = every
                .iter()
                .flatten()
                .flat_map(|w| w.cells.iter().chain(&w.header))
                .collect();
            vectors.mean(&words)
        });
        let features_of = |w: Option<&ColumnWords>| {
            w.map_or_else(
                || vec![0.0; 2 * vectors.dim()],
                |w| vectors.column_features(&w.cells, &w.header),
            )
        };
        columns
            .iter()
            .map(|&c| {
                let mut features = match &every {
                    Some(every) => features_of(every.get(c).and_then(Option::as_ref)),
                    None => features_of(words_of(c).as_ref()),
                };
                features.extend(topic.iter().flatten());
                features
            })
            .collect()
    }
}

/// The featurizer of the per-column features `orchestrator` reads.
pub fn featurizer(orchestrator: &Orchestrator) -> Featurizer {
    Featurizer {
        ngrams: orchestrator.column_ngrams().map(ngram_config),
        expert_ngrams: Vec::new(),
        words: orchestrator
            .column_words()
            .map(|(config, vectors)| (*config, Arc::clone(vectors))),
    }
}

/// The featurizer a [`ColumnNgramsConfig`] describes.
pub fn ngram_config(config: &ColumnNgramsConfig) -> NgramConfig {
    NgramConfig {
        buckets: config.buckets,
        min_n: config.min_n,
        max_n: config.max_n,
        max_cells: config.max_cells,
        neighbours: config.neighbours,
        value_stats: config.value_stats,
        // The model reads a column's place from its query.
        position: false,
    }
}

/// Which columns [`encode`] queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Columns {
    /// Every column (prediction).
    All,
    /// Only labelled columns and the two ends of each CPA target, whether or not the label
    /// space knows their labels (unlabelled columns would cost a query and give no loss or
    /// score).
    Targets,
}

/// Serializes `table` (and computes each queried column's n-grams and word vectors, those the
/// model reads) and maps its labels to head outputs of the given namespaces. Labels the namespace does not
/// know are left out of the targets (evaluation counts them as misses from the table itself,
/// see the evaluation of `colswarm-train`).
pub fn encode(
    table: &Table,
    serialize: &SerializeConfig,
    features: &Featurizer,
    space: &LabelSpace,
    cta_namespace: Option<usize>,
    cpa_namespace: Option<usize>,
    which: Columns,
) -> Example {
    let serialized = serialize_table(table, serialize);
    let mut wanted = vec![which == Columns::All; table.n_columns()];
    let cta_ns = cta_namespace.map(|i| &space.list(Task::Cta)[i]);
    let cpa_ns = cpa_namespace.map(|i| &space.list(Task::Cpa)[i]);
    let cta_of = |c: usize| -> Vec<usize> {
        cta_ns.map_or_else(Vec::new, |ns| {
            table.columns[c]
                .labels
                .iter()
                .filter_map(|l| ns.output(l))
                .collect()
        })
    };
    for (want, column) in wanted.iter_mut().zip(&table.columns) {
        *want |= !column.labels.is_empty();
    }
    let mut cpa_targets = Vec::new();
    for target in &table.cpa_targets {
        let (s, o) = (target.subject_column, target.object_column);
        if s >= wanted.len() || o >= wanted.len() {
            continue;
        }
        wanted[s] = true;
        wanted[o] = true;
        let outputs: Vec<usize> = cpa_ns.map_or_else(Vec::new, |ns| {
            target.labels.iter().filter_map(|l| ns.output(l)).collect()
        });
        if !outputs.is_empty() {
            cpa_targets.push((s, o, outputs));
        }
    }
    let columns: Vec<usize> = (0..table.n_columns()).filter(|&c| wanted[c]).collect();
    let query_of = |c: usize| columns.iter().position(|&x| x == c).unwrap_or(0);
    Example {
        table_id: table.id.clone(),
        tokens: serialized.table_tokens,
        queries: columns
            .iter()
            .map(|&c| serialized.column_queries[c].clone())
            .collect(),
        spans: columns
            .iter()
            .map(|&c| serialized.column_spans[c].clone())
            .collect(),
        ngrams: features
            .ngrams
            .as_ref()
            .map_or_else(Vec::new, |config| column_ngrams(config, table, &columns)),
        expert_ngrams: features
            .expert_ngrams
            .iter()
            .map(|config| column_ngrams(config, table, &columns))
            .collect(),
        words: features.word_features(table, &columns),
        cta: columns.iter().map(|&c| cta_of(c)).collect(),
        cpa: cpa_targets
            .into_iter()
            .map(|(s, o, outputs)| (query_of(s), query_of(o), outputs))
            .collect(),
        columns,
        cta_namespace,
        cpa_namespace,
        cta_none: Vec::new(),
    }
}

/// The n-gram features of `table`'s columns `columns`.
fn column_ngrams(config: &NgramConfig, table: &Table, columns: &[usize]) -> Vec<SparseFeatures> {
    let featurizer = config.for_table(table);
    columns
        .iter()
        .map(|&c| featurizer.column(c, None))
        .collect()
}

impl Example {
    /// Whether the example carries any target.
    pub fn has_targets(&self) -> bool {
        self.cta.iter().any(|t| !t.is_empty()) || !self.cpa.is_empty()
    }

    /// Tokens the model reads for this example (table and queries).
    pub fn n_tokens(&self) -> usize {
        self.tokens.len() + self.queries.iter().map(Vec::len).sum::<usize>()
    }
}

/// The model input for a batch of examples (no CPA pairs: the forward pass scores none).
pub fn to_batch(examples: &[&Example]) -> TableBatch {
    TableBatch {
        tables: examples.iter().map(|e| e.tokens.clone()).collect(),
        queries: examples.iter().map(|e| e.queries.clone()).collect(),
        spans: examples.iter().map(|e| e.spans.clone()).collect(),
        ngrams: if examples.iter().all(|e| e.ngrams.is_empty()) {
            Vec::new()
        } else {
            examples.iter().map(|e| e.ngrams.clone()).collect()
        },
        words: if examples.iter().all(|e| e.words.is_empty()) {
            Vec::new()
        } else {
            examples.iter().map(|e| e.words.clone()).collect()
        },
        cpa_pairs: Vec::new(),
    }
}

/// The most columns one forward pass holds, counted as its tables times its widest table's
/// columns (what a pass pads its tables to). A pass of sixteen tables of thousands of columns
/// each would need gigabytes; a table wider than this gets a pass of its own.
pub const PASS_COLUMNS: usize = 2048;

/// `tables` cut into forward passes, in order: runs of at most `batch_size` tables (at least
/// one) whose count times the widest one's columns stays within [`PASS_COLUMNS`]. A table's
/// answers do not depend on the tables beside it in its pass beyond float rounding.
pub fn passes<T: Borrow<Table>>(tables: &[T], batch_size: usize) -> Vec<&[T]> {
    let mut passes = Vec::new();
    let (mut start, mut widest) = (0, 0);
    for (i, table) in tables.iter().enumerate() {
        let width = table.borrow().n_columns().max(1);
        let wider = widest.max(width);
        let count = i - start + 1;
        if count > 1 && (count > batch_size.max(1) || count * wider > PASS_COLUMNS) {
            passes.push(&tables[start..i]);
            start = i;
            widest = width;
        } else {
            widest = wider;
        }
    }
    if start < tables.len() {
        passes.push(&tables[start..]);
    }
    passes
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_swarm::LabelKind;
    use colswarm_tables::DatasetFormat;
    use colswarm_tables::{Cell, Column, CpaTarget};

    fn table() -> Table {
        let column = |h: &str, labels: &[&str]| {
            let mut c = Column::new(Some(h.into()), vec![Cell::new("a"), Cell::new("b")]);
            c.labels = labels.iter().map(|s| s.to_string()).collect();
            c
        };
        let mut t = Table::new(
            "t",
            vec![
                column("name", &[]),
                column("x", &["k", "unknown"]),
                column("y", &[]),
                column("z", &[]),
            ],
        );
        t.cpa_targets = vec![CpaTarget {
            subject_column: 0,
            object_column: 3,
            labels: vec!["rel".into()],
        }];
        t
    }

    #[test]
    fn targets_only_queries_labelled_columns_and_cpa_ends() {
        let mut space = LabelSpace::default();
        let kind = LabelKind::MultiLabel;
        space.push(Task::Cta, "o", DatasetFormat::T2d, kind, vec!["j".into()]);
        space.push(Task::Cta, "n", DatasetFormat::T2d, kind, vec!["k".into()]);
        space.push(Task::Cpa, "n", DatasetFormat::T2d, kind, vec!["rel".into()]);
        let config = SerializeConfig::default();
        let e = encode(
            &table(),
            &config,
            &Featurizer::default(),
            &space,
            Some(1),
            Some(0),
            Columns::Targets,
        );
        assert_eq!(e.columns, [0, 1, 3]);
        assert_eq!(e.cta, [vec![], vec![1], vec![]]);
        assert_eq!(e.cpa, [(0, 2, vec![0])]);
        assert_eq!(e.queries.len(), 3);
        let none = Featurizer::default();
        let all = encode(
            &table(),
            &config,
            &none,
            &space,
            Some(1),
            None,
            Columns::All,
        );
        assert_eq!(all.columns, [0, 1, 2, 3]);
        assert!(all.cpa.is_empty());
        let batch = to_batch(&[&e, &all]);
        assert_eq!(batch.column_rows().len(), 7);
        assert!(
            batch.ngrams.is_empty() && batch.words.is_empty(),
            "no features asked for, none carried"
        );
    }

    #[test]
    fn ngrams_follow_the_queried_columns() {
        let mut space = LabelSpace::default();
        let kind = LabelKind::MultiLabel;
        space.push(Task::Cta, "n", DatasetFormat::T2d, kind, vec!["k".into()]);
        let ngrams = NgramConfig::default();
        let table = table();
        let e = encode(
            &table,
            &SerializeConfig::default(),
            &Featurizer {
                ngrams: Some(ngrams),
                words: None,
                ..Featurizer::default()
            },
            &space,
            Some(0),
            None,
            Columns::Targets,
        );
        assert_eq!(e.columns, [0, 1, 3]);
        let expected: Vec<_> = [0, 1, 3]
            .iter()
            .map(|&c| ngrams.column_features(Some(&table.columns[c]), None))
            .collect();
        assert_eq!(e.ngrams, expected);
        assert_ne!(e.ngrams[0], e.ngrams[1], "columns `name` and `x` differ");
        assert_eq!(to_batch(&[&e]).ngrams, std::slice::from_ref(&e.ngrams));
    }

    #[test]
    fn word_vectors_follow_the_queried_columns() {
        let mut space = LabelSpace::default();
        let kind = LabelKind::MultiLabel;
        space.push(Task::Cta, "n", DatasetFormat::T2d, kind, vec!["k".into()]);
        // table()'s headers are `name`, `x`, `y`, `z`; every column's cells are `a`, `b`.
        let words = ["name", "a"].map(String::from).to_vec();
        let vectors = WordVectors::new(words, vec![1.0, 0.0, 0.0, 2.0], 2).unwrap();
        let features = Featurizer {
            ngrams: None,
            words: Some((ColumnWordsConfig::new(2), Arc::new(vectors))),
            ..Featurizer::default()
        };
        let table = table();
        let e = encode(
            &table,
            &SerializeConfig::default(),
            &features,
            &space,
            Some(0),
            None,
            Columns::Targets,
        );
        assert_eq!(e.columns, [0, 1, 3]);
        assert!(e.ngrams.is_empty());
        // Cells' mean (only `a` is known), then the header's (only `name` is).
        let cells = [0.0, 2.0];
        assert_eq!(e.words[0], [cells[0], cells[1], 1.0, 0.0]);
        assert_eq!(e.words[1], [cells[0], cells[1], 0.0, 0.0]);
        assert_eq!(to_batch(&[&e]).words, std::slice::from_ref(&e.words));

        // With the table's topic, every column also gets the mean of all the table's known
        // words: `a` in each of the 4 columns and the header `name`.
        let (config, vectors) = features.words.clone().unwrap();
        let topic = Featurizer {
            ngrams: None,
            words: Some((config.with_table_topic(true), vectors)),
            ..Featurizer::default()
        };
        let t = encode(
            &table,
            &SerializeConfig::default(),
            &topic,
            &space,
            Some(0),
            None,
            Columns::Targets,
        );
        for (with, without) in t.words.iter().zip(&e.words) {
            assert_eq!(with[..4], without[..]);
            assert!(
                (with[4] - 0.2).abs() < 1e-6 && (with[5] - 1.6).abs() < 1e-6,
                "{with:?}"
            );
        }
    }

    #[test]
    fn passes_cut_by_count_and_by_padded_columns_and_keep_the_order() {
        let wide = |id: &str, n: usize| {
            let columns = (0..n)
                .map(|c| Column::new(Some(format!("c{c}")), vec![Cell::new("a")]))
                .collect();
            Table::new(id, columns)
        };
        let tables = vec![
            wide("a", 3),
            wide("b", 3),
            wide("c", 3),
            wide("d", PASS_COLUMNS),
            wide("e", 2),
            wide("f", PASS_COLUMNS / 2),
            wide("g", 1),
        ];
        let ids = |passes: Vec<&[Table]>| -> Vec<Vec<String>> {
            passes
                .iter()
                .map(|p| p.iter().map(|t| t.id.clone()).collect())
                .collect()
        };
        // Two tables a pass, and never a wide table beside another.
        assert_eq!(
            ids(passes(&tables, 2)),
            [
                vec!["a", "b"],
                vec!["c"],
                vec!["d"],
                vec!["e", "f"],
                vec!["g"]
            ]
        );
        // Sixteen a pass: the width alone cuts.
        assert_eq!(
            ids(passes(&tables, 16)),
            [vec!["a", "b", "c"], vec!["d"], vec!["e", "f"], vec!["g"]]
        );
        assert!(passes::<Table>(&[], 16).is_empty());
        assert_eq!(ids(passes(&tables[..1], 0)), [vec!["a"]]);
    }
}
