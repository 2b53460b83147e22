//! The shipped model (`models/colswarm-small`) as users meet it: the README's table, a header
//! that spells a label, a column without values, CSV output, averaging, probes.

mod common;

use common::{colswarm, root, stdout};

#[test]
fn the_shipped_model_annotates_the_readme_table() {
    let model = root().join("models/colswarm-small");
    if !model.join("swarm.json").is_file() {
        panic!("models/colswarm-small is missing: the README's main command would fail");
    }
    let out = stdout(&colswarm(&[
        "annotate",
        "--model",
        "models/colswarm-small",
        "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv",
    ]));
    let annotation: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let columns = annotation["columns"].as_array().unwrap();
    assert!(!columns.is_empty());
    // Its four specialists, each with its gate and whether it read the table.
    let router = annotation["router"].as_array().unwrap();
    assert_eq!(router.len(), 4);
    for gate in router {
        let (g, active) = (
            gate["gate"].as_f64().unwrap(),
            gate["active"].as_bool().unwrap(),
        );
        assert!((0.0..=1.0).contains(&g) && active == (g > 0.5), "{gate}");
    }
    for column in columns {
        assert!(!column["types"].as_array().unwrap().is_empty());
    }
}

/// GitTables' labels are header names, and the shipped model stores a label-name prior for them:
/// a header that spells a label decides it (without the prior, `population` was typed `id`).
#[test]
fn the_shipped_model_types_a_header_that_spells_a_gittables_label_as_that_label() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("cities.csv");
    std::fs::write(
        &table,
        "city,country,population\nParis,France,2148000\nLyon,France,513000\nBerlin,Germany,3645000\n",
    )
    .unwrap();
    let out = stdout(&colswarm(&[
        "annotate",
        "--model",
        "models/colswarm-small",
        "--namespace",
        "gittables",
        table.to_str().unwrap(),
    ]));
    let annotation: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let labels: Vec<(String, String)> = annotation["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|column| {
            let types = column["types"].as_array().unwrap();
            assert_eq!(types.len(), 1, "{column}");
            let label = types[0]["labels"][0]["label"].as_str().unwrap_or("none");
            (
                column["header"].as_str().unwrap().to_owned(),
                label.to_owned(),
            )
        })
        .collect();
    for (header, label) in &labels {
        assert_eq!(header, label, "{labels:?}");
    }
}

/// A table of cities whose second column (`col2`) holds no value, in a folder of its own.
fn cities_with_an_empty_column() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("cities.csv");
    std::fs::write(
        &table,
        "City,col2,Population,Notes\nBerlin,,3600000,\nParis,,2100000,\nRome,,2800000,\n",
    )
    .unwrap();
    (dir, table)
}

/// A column with no value is typed by its header alone: where the header names none of the
/// labels the heads give it, every namespace abstains (`--no-abstain` still guesses).
#[test]
fn a_column_without_values_gets_only_labels_its_header_names() {
    let (_dir, table) = cities_with_an_empty_column();
    let annotate = |extra: &[&str]| {
        let mut args = vec!["annotate", "--model", "models/colswarm-small"];
        args.extend_from_slice(extra);
        args.push(table.to_str().unwrap());
        let out = stdout(&colswarm(&args));
        serde_json::from_str::<serde_json::Value>(out.trim()).unwrap()
    };
    let annotation = annotate(&[]);
    let column = |c: usize| annotation["columns"][c].clone();
    for types in column(1)["types"].as_array().unwrap() {
        assert_eq!(types["abstained"], true, "{types}");
        assert_eq!(types["labels"].as_array().unwrap().len(), 0, "{types}");
    }
    let gittables = |column: &serde_json::Value| {
        column["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["namespace"] == "gittables")
            .unwrap()
            .clone()
    };
    assert_eq!(gittables(&column(3))["labels"][0]["label"], "notes");
    assert_eq!(gittables(&column(0))["labels"][0]["label"], "city");
    let guessed = annotate(&["--no-abstain"]);
    assert_eq!(gittables(&guessed["columns"][1])["abstained"], false);
}

/// `--output csv` says what the JSON says, abstentions and the subject column included: an
/// empty label is an abstention only where `abstained` says so, and an empty relation is either
/// none that fits (`relation_abstained`) or none asked (the subject column).
#[test]
fn csv_rows_carry_the_json_s_abstentions_and_subject_column() {
    let (_dir, table) = cities_with_an_empty_column();
    let annotate = |output: &str| {
        stdout(&colswarm(&[
            "annotate",
            "--model",
            "models/colswarm-small",
            "--output",
            output,
            table.to_str().unwrap(),
        ]))
    };
    let json: serde_json::Value = serde_json::from_str(annotate("json").trim()).unwrap();
    let csv = annotate("csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let field = |row: &[String], name: &str| {
        let at = header.iter().position(|h| *h == name).unwrap();
        row[at].clone()
    };
    let rows: Vec<Vec<String>> = lines
        .map(|line| line.split(',').map(str::to_owned).collect())
        .collect();
    let mut expected = Vec::new();
    for column in json["columns"].as_array().unwrap() {
        let relation = &column["relations"][0];
        for types in column["types"].as_array().unwrap() {
            expected.push((
                column["index"].to_string(),
                types["namespace"].as_str().unwrap().to_owned(),
                types["abstained"].to_string(),
                (relation["abstained"] == true).to_string(),
            ));
        }
    }
    let subject = json["subject_column"].to_string();
    let got: Vec<_> = rows
        .iter()
        .map(|row| {
            assert_eq!(field(row, "subject_column"), subject);
            (
                field(row, "column"),
                field(row, "namespace"),
                field(row, "abstained"),
                field(row, "relation_abstained"),
            )
        })
        .collect();
    assert_eq!(got, expected);
    // The empty column abstains in every namespace, and so does its relation; the subject
    // column is asked for none.
    assert!(
        got.iter()
            .any(|r| r.0 == "1" && r.2 == "true" && r.3 == "true"),
        "{csv}"
    );
    assert!(got.iter().any(|r| r.2 == "false"), "{csv}");
    assert!(
        rows.iter()
            .filter(|row| field(row, "column") == subject)
            .all(|row| field(row, "relation").is_empty()
                && field(row, "relation_abstained") == "false"),
        "{csv}"
    );
}

#[test]
fn averaging_the_shipped_model_with_itself_changes_no_annotation() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("average");
    let model = "models/colswarm-small";
    let table = "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv";
    let averaged = colswarm(&["average", model, model, "--out", out.to_str().unwrap()]);
    assert!(
        averaged.status.success(),
        "{}",
        String::from_utf8_lossy(&averaged.stderr)
    );
    let annotate = |m: &str| stdout(&colswarm(&["annotate", "--model", m, table]));
    assert_eq!(annotate(out.to_str().unwrap()), annotate(model));
    // The output is never overwritten.
    let again = colswarm(&["average", model, "--out", out.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    // The readers are copied, not averaged: models with other readers are refused.
    let other = dir.path().join("other-reader");
    stdout(&colswarm(&[
        "add-reader",
        "--model",
        model,
        "--task",
        "cpa",
        "--train",
        "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#folds=0",
        "--share",
        "0.5",
        "--out",
        other.to_str().unwrap(),
    ]));
    let mixed = dir.path().join("mixed");
    let refused = colswarm(&[
        "average",
        model,
        other.to_str().unwrap(),
        "--out",
        mixed.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("other n-gram readers"), "{error}");
    assert!(!mixed.exists());
}

#[test]
fn probes_of_the_shipped_model_beat_the_majority_class_and_feed_compare() {
    let predictions = tempfile::tempdir().unwrap();
    let dir = predictions.path().to_str().unwrap();
    let out = colswarm(&[
        "probe",
        "--model",
        "models/colswarm-small",
        "--specialist",
        "t2d=models/specialists/t2d.safetensors",
        "--train",
        "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train",
        "--dev",
        "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#dev",
        "--steps",
        "60",
        "--predictions",
        dir,
        "--json",
    ]);
    let reports: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let report = &reports[0];
    assert_eq!(report["namespace"], "t2d");
    assert_eq!(report["task"], "cpa");
    let scores = report["scores"].as_array().unwrap();
    let names: Vec<&str> = scores
        .iter()
        .map(|s| s["features"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["primary", "t2d", "primary+t2d"]);
    // The majority relation scores 0.077 on this split (docs/EXPERIMENTS.md).
    let primary = scores[0]["micro_f1"].as_f64().unwrap();
    assert!(primary > 0.3, "primary probe {primary}");
    // CPA: subject and object side by side, 64 wide each, for both systems.
    assert_eq!(scores[2]["width"], 256);
    // Each probe's predictions are a file `compare` reads.
    let a = format!("{dir}/t2d.primary.jsonl");
    let b = format!("{dir}/t2d.primary+t2d.jsonl");
    let compared: serde_json::Value =
        serde_json::from_str(stdout(&colswarm(&["compare", &a, &b, "--json"])).trim()).unwrap();
    assert_eq!(compared["n_targets"], report["dev_targets"]);
    assert!((compared["micro_f1_a"].as_f64().unwrap() - primary).abs() < 1e-9);
}
