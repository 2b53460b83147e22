//! The n-gram peer with value statistics on columns whose answer is known: identifiers that
//! count up by one and scores holding the same numbers in another order have the same
//! character n-grams, so only the statistics tell them apart.

use colswarm_eval::{
    BaselineConfig, BaselineKind, DatasetFormat, evaluate_baseline, train_baseline,
};
use colswarm_model::{Namespace, Task};
use colswarm_swarm::LabelKind;
use colswarm_tables::{Cell, Column, Table};

fn namespace() -> Namespace {
    let labels = vec!["id".into(), "score".into()];
    Namespace::new(
        "toy",
        DatasetFormat::SatoCv,
        LabelKind::SingleLabel,
        0,
        labels,
    )
}

/// Tables `first..first + n`: an `id` column `s, s+1, s+2, s+3` and a `score` column with the
/// same numbers shuffled.
fn tables(first: u32, n: u32) -> Vec<Table> {
    (first..first + n)
        .map(|s| {
            let column = |values: [u32; 4], label: &str| {
                let mut c = Column::new(None, values.map(|v| Cell::new(v.to_string())).to_vec());
                c.labels = vec![label.to_string()];
                c
            };
            let ids = column([s, s + 1, s + 2, s + 3], "id");
            let scores = column([s + 2, s, s + 3, s + 1], "score");
            Table::new(format!("t{s}"), vec![ids, scores])
        })
        .collect()
}

#[test]
fn value_statistics_tell_identifiers_from_shuffled_numbers() {
    let (train, held_out) = (tables(100, 40), tables(500, 40));
    let ns = namespace();
    let score = |value_stats| {
        let config = BaselineConfig {
            kind: BaselineKind::CharNgram,
            buckets: 1 << 12,
            value_stats,
            ..BaselineConfig::default()
        };
        let baseline = train_baseline(&config, Task::Cta, &ns, &train);
        evaluate_baseline(&baseline, Task::Cta, &ns, &held_out).micro_f1
    };
    let (plain, with_stats) = (score(false), score(true));
    assert_eq!(with_stats, 1.0);
    // The same n-grams in each table's two columns: the plain peer gives both one answer.
    assert!(plain <= 0.5 + 1e-9, "plain {plain}");
}
