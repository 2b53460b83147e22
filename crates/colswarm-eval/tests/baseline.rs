//! Baseline numbers on the real data in `datasets/` (ignored by default: it reads and trains on
//! a few thousand columns). Run with
//! `cargo test --workspace -- --ignored baseline_numbers_on_datasets --nocapture`.

use std::path::PathBuf;
use std::time::Instant;

use colswarm_eval::{
    BaselineConfig, BaselineKind, DatasetFormat, LoadedData, Split, evaluate_baseline, load_tables,
    train_baseline,
};
use colswarm_model::{Namespace, Task};
use colswarm_swarm::LabelKind;

fn datasets() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets"))
}

fn load(format: DatasetFormat, paths: &[PathBuf], split: Split) -> LoadedData {
    load_tables(format, paths, split).unwrap_or_else(|e| panic!("{paths:?}: {e}"))
}

/// Trains both baselines on `train`, scores them on `eval`, prints and returns
/// `(kind, micro-F1, macro-F1)`.
fn run(
    name: &str,
    task: Task,
    namespace: &Namespace,
    train: &LoadedData,
    eval: &LoadedData,
) -> Vec<(BaselineKind, f64, f64)> {
    BaselineKind::ALL
        .into_iter()
        .map(|kind| {
            let start = Instant::now();
            let config = BaselineConfig {
                kind,
                ..BaselineConfig::default()
            };
            let baseline = train_baseline(&config, task, namespace, &train.tables);
            let report = evaluate_baseline(&baseline, task, namespace, &eval.tables);
            println!(
                "{name} {task} {kind}: micro-F1 {:.4} macro-F1 {:.4} weighted-F1 {:.4} \
                 ({} targets, {} unknown gold labels, {} labels, {:.1}s)",
                report.micro_f1,
                report.macro_f1,
                report.weighted_f1,
                report.n_targets,
                report.labels_unknown,
                namespace.labels.len(),
                start.elapsed().as_secs_f64()
            );
            assert!(report.n_targets > 0, "{name}: nothing scored");
            (kind, report.micro_f1, report.macro_f1)
        })
        .collect()
}

fn namespace(name: &str, format: DatasetFormat, kind: LabelKind, labels: &[String]) -> Namespace {
    Namespace {
        name: name.into(),
        format,
        kind,
        offset: 0,
        labels: labels.to_vec(),
        activation: Default::default(),
        ancestors: Vec::new(),
        abstain_below: None,
        label_name_weight: None,
        label_name_skip_subject: false,
    }
}

#[test]
#[ignore = "trains on the real datasets (seconds in release, longer unoptimised)"]
fn baseline_numbers_on_datasets() {
    let start = Instant::now();
    let mut results = Vec::new();

    // WikiTables CTA (multi-label): balanced train subset → real-distribution dev.
    let dir = datasets().join("wikitables-turl-subset");
    let format = DatasetFormat::TurlCsv;
    let train = load(
        format,
        &[dir.join("train_wikitables_subset_20.csv.gz")],
        Split::All,
    );
    let eval = load(
        format,
        &[dir.join("dev_wikitables_subset_2.csv.gz")],
        Split::All,
    );
    let ns = namespace(
        "wikitables",
        format,
        LabelKind::MultiLabel,
        train.cta_labels.labels(),
    );
    results.push((
        "wikitables",
        run("wikitables", Task::Cta, &ns, &train, &eval),
    ));

    // GitTables SemTab'22 DBpedia CTA (single-label): folds 0–2 → fold 3.
    let dir = datasets().join("gittables-semtab22/gt-semtab22-dbpedia-all");
    let format = DatasetFormat::SatoCv;
    let folds: Vec<PathBuf> = (0..3)
        .map(|i| dir.join(format!("db_semi1_cv_{i}.csv.gz")))
        .collect();
    let train = load(format, &folds, Split::All);
    let eval = load(format, &[dir.join("db_semi1_cv_3.csv.gz")], Split::All);
    let ns = namespace(
        "gittables-dbpedia",
        format,
        LabelKind::SingleLabel,
        train.cta_labels.labels(),
    );
    results.push((
        "gittables-dbpedia",
        run("gittables-dbpedia", Task::Cta, &ns, &train, &eval),
    ));

    // T2D CPA (single-label): the hash split's train share → its dev share.
    let dir = datasets().join("t2d-webtables/t2d.tar.gz");
    let format = DatasetFormat::T2d;
    let train = load(format, std::slice::from_ref(&dir), Split::Train);
    let eval = load(format, &[dir], Split::Dev);
    let ns = namespace(
        "t2d",
        format,
        LabelKind::SingleLabel,
        train.cpa_labels.labels(),
    );
    results.push(("t2d", run("t2d", Task::Cpa, &ns, &train, &eval)));

    println!("total {:.1}s", start.elapsed().as_secs_f64());
    // The n-gram baseline must beat the constant answer in micro-F1 on every set, else it is
    // broken (this is what makes the test able to fail).
    for (name, rows) in &results {
        let micro = |k: BaselineKind| rows.iter().find(|r| r.0 == k).map_or(0.0, |r| r.1);
        assert!(
            micro(BaselineKind::CharNgram) > micro(BaselineKind::Majority),
            "{name}: {rows:?}"
        );
    }
}
