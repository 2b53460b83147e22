//! The n-gram peer with each column's place in its table, on columns whose answer is known:
//! a table's first column is its `name`, its second a `nickname`, and both hold the same kind
//! of text, so only the place tells them apart (the model reads it from its queries).

use colswarm_eval::{
    BaselineConfig, BaselineKind, DatasetFormat, evaluate_baseline, train_baseline,
};
use colswarm_model::{Namespace, Task};
use colswarm_swarm::LabelKind;
use colswarm_tables::{Cell, Column, Table};

const WORDS: &[&str] = &[
    "amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "inlet", "jade",
    "kelp", "larch", "maple", "north", "ochre", "pine", "quartz", "reed", "slate", "thorn",
];

fn namespace() -> Namespace {
    let labels = vec!["name".into(), "nickname".into()];
    Namespace::new(
        "toy",
        DatasetFormat::SatoCv,
        LabelKind::SingleLabel,
        0,
        labels,
    )
}

/// Tables `first..first + n` of two columns of words drawn alike: `name`, then `nickname`.
fn tables(first: usize, n: usize) -> Vec<Table> {
    (first..first + n)
        .map(|s| {
            let column = |offset: usize, label: &str| {
                let cells =
                    (0..4).map(|j| Cell::new(WORDS[(s * 7 + offset + j * 3) % WORDS.len()]));
                let mut c = Column::new(None, cells.collect());
                c.labels = vec![label.to_string()];
                c
            };
            Table::new(
                format!("t{s}"),
                vec![column(0, "name"), column(11, "nickname")],
            )
        })
        .collect()
}

#[test]
fn the_column_s_place_tells_two_columns_of_the_same_text_apart() {
    let (train, held_out) = (tables(100, 40), tables(500, 40));
    let ns = namespace();
    let score = |position| {
        let config = BaselineConfig {
            kind: BaselineKind::CharNgram,
            buckets: 1 << 12,
            position,
            ..BaselineConfig::default()
        };
        let baseline = train_baseline(&config, Task::Cta, &ns, &train);
        evaluate_baseline(&baseline, Task::Cta, &ns, &held_out).micro_f1
    };
    let (plain, placed) = (score(false), score(true));
    assert_eq!(placed, 1.0);
    // Words drawn alike in both columns: the plain peer guesses.
    assert!(plain < 0.75, "plain {plain}");
}
