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
    Namespace::new(name, format, kind, 0, labels.to_vec())
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

/// A one-table set: `(header, cells, CTA label)` per column.
fn table(id: &str, columns: &[(&str, &[&str], &str)]) -> colswarm_tables::Table {
    let columns = columns
        .iter()
        .map(|(header, cells, label)| {
            let mut column = colswarm_tables::Column::new(
                Some(header.to_string()),
                cells
                    .iter()
                    .map(|c| colswarm_tables::Cell::new(*c))
                    .collect(),
            );
            if !label.is_empty() {
                column.labels = vec![label.to_string()];
            }
            column
        })
        .collect();
    colswarm_tables::Table::new(id, columns)
}

const DBO: &str = "http://dbpedia.org/ontology/";

fn dbpedia(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("{DBO}{n}")).collect()
}

fn peer(kind: BaselineKind) -> BaselineConfig {
    BaselineConfig {
        kind,
        ..BaselineConfig::default()
    }
}

#[test]
fn header_rule_types_columns_by_their_header_with_no_training() {
    let labels = dbpedia(&["populationTotal", "country", "mayor", "PopulatedPlace/area"]);
    let ns = namespace("t2d", DatasetFormat::T2d, LabelKind::SingleLabel, &labels);
    let baseline = train_baseline(&peer(BaselineKind::HeaderRule), Task::Cta, &ns, &[]);
    let cities = table(
        "cities",
        &[
            ("City population", &["2,100,000"], "populationTotal"),
            ("Country", &["France"], "country"),
            ("Area (km²)", &["105"], "PopulatedPlace/area"),
            ("Notes", &["-"], "mayor"),
        ],
    );
    let predicted: Vec<Vec<String>> = (0..4).map(|c| baseline.predict_cta(&cities, c)).collect();
    assert_eq!(predicted[0], [format!("{DBO}populationTotal")]);
    assert_eq!(predicted[1], [format!("{DBO}country")]);
    assert_eq!(predicted[2], [format!("{DBO}PopulatedPlace/area")]);
    assert!(predicted[3].is_empty(), "no shared word: no label");
}

#[test]
fn header_memory_answers_the_label_seen_with_the_header() {
    let labels = dbpedia(&["populationTotal", "country"]);
    let ns = namespace("t2d", DatasetFormat::T2d, LabelKind::SingleLabel, &labels);
    let gold = |n: &str| format!("{DBO}{n}");
    let train = vec![
        table("a", &[("Inhabitants", &["5"], &gold("populationTotal"))]),
        table("b", &[("inhabitants:", &["7"], &gold("populationTotal"))]),
        table("c", &[("Nation", &["Peru"], &gold("country"))]),
    ];
    let baseline = train_baseline(&peer(BaselineKind::HeaderMemory), Task::Cta, &ns, &train);
    let eval = table(
        "d",
        &[
            ("INHABITANTS", &["9"], &gold("populationTotal")),
            ("nation", &["Chile"], &gold("country")),
            ("Country", &["Chile"], &gold("country")),
        ],
    );
    assert_eq!(baseline.predict_cta(&eval, 0), [gold("populationTotal")]);
    assert_eq!(baseline.predict_cta(&eval, 1), [gold("country")]);
    // The rule would get `Country`; memory never saw it.
    assert!(baseline.predict_cta(&eval, 2).is_empty());
    let report = evaluate_baseline(&baseline, Task::Cta, &ns, &[eval]);
    assert_eq!(report.n_targets, 3);
    assert!((report.micro_f1 - 0.8).abs() < 1e-9, "{report:?}");
}

#[test]
fn char_ngram_with_the_label_name_prior_can_answer_a_label_it_never_trained_on() {
    let labels = dbpedia(&["country", "elevation"]);
    let ns = namespace("t2d", DatasetFormat::T2d, LabelKind::SingleLabel, &labels);
    let country = format!("{DBO}country");
    let train: Vec<_> = ["Peru", "Chile", "Spain", "Italy"]
        .iter()
        .enumerate()
        .map(|(i, c)| table(&format!("t{i}"), &[("land", &[c], &country)]))
        .collect();
    let eval = table("e", &[("Elevation", &["3,400"], "")]);
    let plain = BaselineConfig {
        kind: BaselineKind::CharNgram,
        buckets: 1 << 12,
        ..BaselineConfig::default()
    };
    let with_prior = BaselineConfig {
        label_name_weight: Some(50.0),
        ..plain.clone()
    };
    let without = train_baseline(&plain, Task::Cta, &ns, &train);
    assert_eq!(
        without.predict_cta(&eval, 0),
        std::slice::from_ref(&country)
    );
    let with = train_baseline(&with_prior, Task::Cta, &ns, &train);
    assert_eq!(with.predict_cta(&eval, 0), [format!("{DBO}elevation")]);
}

#[test]
fn header_rule_reads_the_object_column_for_cpa() {
    let labels = dbpedia(&["mayor", "country"]);
    let ns = namespace("t2d", DatasetFormat::T2d, LabelKind::SingleLabel, &labels);
    let baseline = train_baseline(&peer(BaselineKind::HeaderRule), Task::Cpa, &ns, &[]);
    let cities = table(
        "c",
        &[
            ("City", &["Lyon"], ""),
            ("Mayor", &["Doucet"], ""),
            ("Country", &["France"], ""),
        ],
    );
    assert_eq!(baseline.predict_cpa(&cities, 0, 1), [format!("{DBO}mayor")]);
    assert_eq!(
        baseline.predict_cpa(&cities, 0, 2),
        [format!("{DBO}country")]
    );
}
