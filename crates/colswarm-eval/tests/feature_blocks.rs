//! The n-gram peer's optional feature blocks on columns whose answer is known: two columns
//! of each table whose character n-grams cannot tell them apart, and one block that can.

use colswarm_eval::{
    BaselineConfig, BaselineKind, DatasetFormat, evaluate_baseline, train_baseline,
};
use colswarm_model::{Namespace, Task};
use colswarm_swarm::LabelKind;
use colswarm_tables::{Cell, Column, Table};

/// Micro-F1 on the held-out tables of the n-gram peer trained on `train`, over a namespace of
/// the labels of each table's two columns: with the block `switch` turns on, then without it.
fn with_and_without(
    labels: [&str; 2],
    train: &[Table],
    held_out: &[Table],
    switch: impl Fn(&mut BaselineConfig, bool),
) -> (f64, f64) {
    let labels = labels.iter().map(|l| l.to_string()).collect();
    let ns = Namespace::new(
        "toy",
        DatasetFormat::SatoCv,
        LabelKind::SingleLabel,
        0,
        labels,
    );
    let score = |on: bool| {
        let mut config = BaselineConfig {
            kind: BaselineKind::CharNgram,
            buckets: 1 << 12,
            ..BaselineConfig::default()
        };
        switch(&mut config, on);
        let baseline = train_baseline(&config, Task::Cta, &ns, train);
        evaluate_baseline(&baseline, Task::Cta, &ns, held_out).micro_f1
    };
    (score(true), score(false))
}

fn column(cells: impl Iterator<Item = String>, label: &str) -> Column {
    let mut c = Column::new(None, cells.map(Cell::new).collect());
    c.labels = vec![label.to_string()];
    c
}

/// Tables `first..first + n`: an `id` column `s, s+1, s+2, s+3` and a `score` column with the
/// same numbers shuffled.
fn numbers(first: u32, n: u32) -> Vec<Table> {
    (first..first + n)
        .map(|s| {
            let cells = |values: [u32; 4]| values.into_iter().map(|v| v.to_string());
            let ids = column(cells([s, s + 1, s + 2, s + 3]), "id");
            let scores = column(cells([s + 2, s, s + 3, s + 1]), "score");
            Table::new(format!("t{s}"), vec![ids, scores])
        })
        .collect()
}

#[test]
fn value_statistics_tell_identifiers_from_shuffled_numbers() {
    let (train, held_out) = (numbers(100, 40), numbers(500, 40));
    let (with, plain) = with_and_without(["id", "score"], &train, &held_out, |c, on| {
        c.value_stats = on
    });
    assert_eq!(with, 1.0);
    // The same n-grams in each table's two columns: the plain peer gives both one answer.
    assert!(plain <= 0.5 + 1e-9, "plain {plain}");
}

const WORDS: &[&str] = &[
    "amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "inlet", "jade",
    "kelp", "larch", "maple", "north", "ochre", "pine", "quartz", "reed", "slate", "thorn",
];

/// Tables `first..first + n` of two columns of words drawn alike: `name`, then `nickname`.
fn words(first: usize, n: usize) -> Vec<Table> {
    (first..first + n)
        .map(|s| {
            let cells = |offset: usize| {
                (0..4).map(move |j| WORDS[(s * 7 + offset + j * 3) % WORDS.len()].to_string())
            };
            Table::new(
                format!("t{s}"),
                vec![column(cells(0), "name"), column(cells(11), "nickname")],
            )
        })
        .collect()
}

#[test]
fn the_column_s_place_tells_two_columns_of_the_same_text_apart() {
    // A table's first column is its `name`, its second a `nickname`, of the same kind of
    // text: only the place tells them apart (the model reads it from its queries).
    let (train, held_out) = (words(100, 40), words(500, 40));
    let (with, plain) = with_and_without(["name", "nickname"], &train, &held_out, |c, on| {
        c.position = on
    });
    assert_eq!(with, 1.0);
    assert!(plain < 0.75, "plain {plain}");
}
