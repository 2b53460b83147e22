//! `colswarm calibrate` chooses and stores abstention thresholds; `eval` and `annotate` honour
//! them. On the shipped model and a dozen T2D tables.

mod common;

use std::path::{Path, PathBuf};

use common::{colswarm, eval_t2d, labels_json, refuses_calibrate, root, stdout, t2d_subset};

fn t2d_threshold(labels: &serde_json::Value) -> Option<f64> {
    labels["cta"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "t2d")
        .unwrap()
        .get("abstain_below")
        .and_then(serde_json::Value::as_f64)
}

#[test]
fn calibrate_stores_a_threshold_that_eval_and_annotate_honour() {
    let data = t2d_subset(12);
    let work = tempfile::tempdir().unwrap();
    // The shipped model without its t2d threshold, to calibrate from scratch.
    let shipped = work.path().join("base");
    stdout(&colswarm(&[
        "calibrate",
        "--model",
        root().join("models/colswarm-small").to_str().unwrap(),
        "--set",
        "t2d=none",
        "--out",
        shipped.to_str().unwrap(),
    ]));
    let out = work.path().join("calibrated");
    let dev = format!("t2d=t2d:{}", data.path().display());
    let before = std::fs::read(shipped.join("labels.json")).unwrap();
    let found: serde_json::Value = serde_json::from_str(
        stdout(&colswarm(&[
            "calibrate",
            "--model",
            shipped.to_str().unwrap(),
            "--dev",
            &dev,
            "--min-precision",
            "0.8",
            "--curve",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ]))
        .trim(),
    )
    .unwrap();
    // --out leaves the model it read unchanged.
    assert_eq!(std::fs::read(shipped.join("labels.json")).unwrap(), before);
    let chosen = &found[0]["chosen"];
    let threshold = chosen["threshold"].as_f64().unwrap();
    let stored = t2d_threshold(&labels_json(&out)).expect("a stored threshold");
    assert!((stored - threshold).abs() < 1e-6, "{stored} vs {threshold}");
    // The rule: the lowest threshold reaching the precision, unless none does.
    let curve = found[0]["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 101);
    let first = curve
        .iter()
        .find(|p| p["answered"].as_u64().unwrap() > 0 && p["precision"].as_f64().unwrap() >= 0.8);
    if let Some(first) = first {
        assert_eq!(first["threshold"], chosen["threshold"]);
    }
    let coverage: Vec<f64> = curve
        .iter()
        .map(|p| p["coverage"].as_f64().unwrap())
        .collect();
    assert!(coverage.windows(2).all(|w| w[1] <= w[0]), "{coverage:?}");
    assert_eq!(coverage[0], 1.0);

    // eval reports the same point beside an unchanged micro-F1.
    let input = data.path().to_str().unwrap();
    let eval = |model: &Path| eval_t2d(model, input, &["--task", "cta", "--namespace", "t2d"]);
    let (plain, calibrated) = (eval(&shipped), eval(&out));
    assert_eq!(plain["micro_f1"], calibrated["micro_f1"]);
    assert!(plain.get("abstention").is_none());
    let a = &calibrated["abstention"];
    for key in ["threshold", "coverage", "precision", "micro_f1", "answered"] {
        assert_eq!(a[key], chosen[key], "{key}");
    }

    // annotate gives no t2d label below the threshold, unless told not to abstain.
    let table = "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv";
    let annotate = |extra: &[&str]| -> Vec<serde_json::Value> {
        let mut args = vec![
            "annotate",
            "--model",
            out.to_str().unwrap(),
            "--namespace",
            "t2d",
        ];
        args.extend_from_slice(extra);
        args.push(table);
        let text = stdout(&colswarm(&args));
        let annotation: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        annotation["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["types"][0].clone())
            .collect()
    };
    for types in annotate(&[]) {
        let best = types["top_k"][0]["confidence"].as_f64().unwrap();
        let abstained = types["abstained"].as_bool().unwrap();
        assert_eq!(abstained, best < threshold, "{types}");
        assert_eq!(types["labels"].as_array().unwrap().is_empty(), abstained);
    }
    for types in annotate(&["--no-abstain"]) {
        assert_eq!(types["abstained"], false);
        assert!(!types["labels"].as_array().unwrap().is_empty());
    }
}

#[test]
fn calibrate_refuses_what_it_cannot_use() {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("x");
    let run = |extra: &[&str]| {
        let mut args = vec!["calibrate", "--model", shipped.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        let result = colswarm(&args);
        assert!(!result.status.success());
        String::from_utf8_lossy(&result.stderr).to_string()
    };
    let err = run(&["--dev", "nope=t2d:datasets/t2d-webtables/t2d.tar.gz#dev"]);
    assert!(err.contains("no CTA namespace `nope`"), "{err}");
    let err = run(&[
        "--dev",
        "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#dev",
        "--min-precision",
        "1.5",
    ]);
    assert!(err.contains("--min-precision 1.5"), "{err}");
    let err = run(&["--set", "t2d=1.5"]);
    assert!(err.contains("--set t2d=1.5"), "{err}");
    let err = run(&["--set", "nope=0.5"]);
    assert!(err.contains("no CTA namespace `nope`"), "{err}");
    assert!(!out.exists());
}

#[test]
fn calibrate_set_stores_and_removes_a_given_threshold() {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("set");
    let path = out.to_str().unwrap();
    stdout(&colswarm(&[
        "calibrate",
        "--model",
        shipped.to_str().unwrap(),
        "--set",
        "t2d=0.25",
        "--out",
        path,
    ]));
    assert_eq!(t2d_threshold(&labels_json(&out)), Some(0.25));
    // In place, `none` removes it again; the other namespaces are untouched.
    stdout(&colswarm(&[
        "calibrate",
        "--model",
        path,
        "--set",
        "t2d=none",
    ]));
    assert_eq!(t2d_threshold(&labels_json(&out)), None);
    let others = |labels: serde_json::Value| -> Vec<serde_json::Value> {
        let list = labels["cta"].as_array().unwrap().iter();
        list.filter(|n| n["name"] != "t2d").cloned().collect()
    };
    assert_eq!(others(labels_json(&out)), others(labels_json(&shipped)));
}

fn label_name_weights(labels: &serde_json::Value, name: &str) -> Vec<Option<f64>> {
    ["cta", "cpa"]
        .iter()
        .flat_map(|task| labels[task].as_array().unwrap())
        .filter(|n| n["name"] == name)
        .map(|n| {
            n.get("label_name_weight")
                .and_then(serde_json::Value::as_f64)
        })
        .collect()
}

/// `annotate --namespace t2d --no-abstain` of README's table (a T2D table of cities) by `model`.
fn annotate_readme_table_in_t2d(model: &Path) -> serde_json::Value {
    let table = "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv";
    let text = stdout(&colswarm(&[
        "annotate",
        "--model",
        model.to_str().unwrap(),
        "--namespace",
        "t2d",
        "--no-abstain",
        table,
    ]));
    serde_json::from_str(text.trim()).unwrap()
}

#[test]
fn calibrate_label_names_stores_a_weight_that_annotate_applies_to_both_heads() {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let (plain, strong) = (work.path().join("plain"), work.path().join("strong"));
    let set = |from: &Path, weight: &str, out: &Path| {
        stdout(&colswarm(&[
            "calibrate",
            "--model",
            from.to_str().unwrap(),
            "--label-names",
            &format!("t2d={weight}"),
            "--out",
            out.to_str().unwrap(),
        ]));
    };
    set(&shipped, "none", &plain);
    set(&plain, "40", &strong);
    assert_eq!(
        label_name_weights(&labels_json(&plain), "t2d"),
        [None, None]
    );
    assert_eq!(
        label_name_weights(&labels_json(&strong), "t2d"),
        [Some(40.0), Some(40.0)]
    );
    // The table's `country` column: with a weight this large its header decides, on the CTA
    // and the CPA head alike.
    let country = |model: &Path| -> (String, String) {
        let annotation = annotate_readme_table_in_t2d(model);
        let column = annotation["columns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["header"] == "country")
            .unwrap()
            .clone();
        let label = |v: &serde_json::Value| v["label"].as_str().unwrap().to_string();
        (
            label(&column["types"][0]["labels"][0]),
            label(&column["relations"][0]["relation"]),
        )
    };
    let expected = "http://dbpedia.org/ontology/country".to_string();
    assert_eq!(country(&strong), (expected.clone(), expected));
    // A task prefix sets one head's namespace only.
    let cpa_only = work.path().join("cpa-only");
    stdout(&colswarm(&[
        "calibrate",
        "--model",
        strong.to_str().unwrap(),
        "--label-names",
        "cta:t2d=none",
        "--label-names",
        "cpa:t2d=2.5",
        "--out",
        cpa_only.to_str().unwrap(),
    ]));
    assert_eq!(
        label_name_weights(&labels_json(&cpa_only), "t2d"),
        [None, Some(2.5)]
    );
}

#[test]
fn calibrate_label_names_can_leave_the_subject_column_out() {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let calibrate = |out: &str, args: &[&str]| -> PathBuf {
        let out = work.path().join(out);
        let mut all = vec!["calibrate", "--model", shipped.to_str().unwrap()];
        all.extend(args);
        all.extend(["--out", out.to_str().unwrap()]);
        stdout(&colswarm(&all));
        out
    };
    let none = calibrate("none", &["--label-names", "cta:t2d=none"]);
    let everywhere = calibrate(
        "everywhere",
        &[
            "--label-names",
            "cta:t2d=40",
            "--label-names-skip-subject",
            "t2d=no",
        ],
    );
    let skipping = calibrate(
        "skipping",
        &[
            "--label-names",
            "cta:t2d=40",
            "--label-names-skip-subject",
            "t2d=yes",
        ],
    );
    let skips = |model: &Path| {
        let labels = labels_json(model);
        let mut list = labels["cta"].as_array().unwrap().iter();
        let t2d = list.find(|n| n["name"] == "t2d").unwrap().clone();
        t2d.get("label_name_skip_subject").cloned()
    };
    assert_eq!(skips(&everywhere), None);
    assert_eq!(skips(&skipping), Some(serde_json::Value::Bool(true)));
    // README's table: its subject column is `city` (1), and `country` (2) is not.
    let labels = |model: &Path| -> Vec<String> {
        let annotation = annotate_readme_table_in_t2d(model);
        assert_eq!(annotation["subject_column"], 1);
        let columns = annotation["columns"].as_array().unwrap().iter();
        columns
            .map(|c| {
                c["types"][0]["labels"][0]["label"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let (none, everywhere, skipping) = (labels(&none), labels(&everywhere), labels(&skipping));
    assert_eq!(
        everywhere[1], "http://dbpedia.org/ontology/city",
        "{everywhere:?}"
    );
    assert_eq!(
        skipping[1], none[1],
        "the subject column is read without the prior"
    );
    assert_eq!(skipping[2], everywhere[2], "the other columns keep it");
    assert_eq!(skipping[2], "http://dbpedia.org/ontology/country");
    for (given, expected) in [
        ("t2d=maybe", "expected NAMESPACE=yes or NAMESPACE=no"),
        ("nope=yes", "no CTA namespace `nope`"),
    ] {
        assert_refused("--label-names-skip-subject", given, expected);
    }
}

/// `calibrate FLAG GIVEN` on the shipped model fails with `expected` in its error and writes
/// no output directory.
fn assert_refused(flag: &str, given: &str, expected: &str) {
    refuses_calibrate(&[flag, given], expected);
}

#[test]
fn calibrate_label_names_refuses_a_bad_weight_or_namespace() {
    for (given, expected) in [
        ("t2d=-1", "--label-names t2d=-1"),
        ("t2d=inf", "--label-names t2d=inf"),
        ("t2d", "expected [TASK:]NAMESPACE=WEIGHT"),
        ("cpx:t2d=2", "unknown task `cpx`"),
        ("nope=2", "no namespace `nope`"),
    ] {
        assert_refused("--label-names", given, expected);
    }
}

#[test]
fn calibrate_task_cpa_stores_a_relation_threshold_that_annotate_and_eval_honour() {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("cpa");
    // A threshold above most of the README table's relation confidences, so some abstain.
    let threshold = 0.999;
    let stored = stdout(&colswarm(&[
        "calibrate",
        "--model",
        shipped.to_str().unwrap(),
        "--task",
        "cpa",
        "--set",
        &format!("t2d={threshold}"),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        stored.contains("t2d (CPA): abstains below 1.00"),
        "{stored}"
    );
    let labels: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("labels.json")).unwrap()).unwrap();
    let cpa_threshold = labels["cpa"][0]["abstain_below"].as_f64().unwrap();
    assert!((cpa_threshold - threshold).abs() < 1e-6);
    // The CTA namespace of the same name keeps its own threshold.
    let cta_threshold = labels["cta"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "t2d")
        .unwrap()["abstain_below"]
        .as_f64()
        .unwrap();
    let stored = t2d_threshold(&labels_json(&root().join("models/colswarm-small"))).unwrap();
    assert!(
        (cta_threshold - stored).abs() < 1e-6,
        "{cta_threshold} vs {stored}"
    );

    let table = "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv";
    let relations = |extra: &[&str]| -> Vec<serde_json::Value> {
        let mut args = vec!["annotate", "--model", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(table);
        let annotation: serde_json::Value =
            serde_json::from_str(stdout(&colswarm(&args)).trim()).unwrap();
        annotation["columns"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["relations"].as_array().unwrap().clone())
            .collect()
    };
    let abstaining = relations(&[]);
    assert!(!abstaining.is_empty());
    let mut abstained = 0;
    for r in &abstaining {
        let best = r["top_k"][0]["confidence"].as_f64().unwrap();
        let none = r["abstained"].as_bool().unwrap();
        assert_eq!(none, best < threshold, "{r}");
        assert_eq!(r["relation"].is_null(), none, "{r}");
        abstained += usize::from(none);
    }
    assert!(abstained > 0, "no relation abstained at {threshold}");
    for r in relations(&["--no-abstain"]) {
        assert_eq!(r["abstained"], false);
        assert!(r["relation"]["label"].is_string(), "{r}");
    }

    // eval reports the relation namespace's coverage at its threshold; micro-F1 is unchanged.
    let eval = |model: &Path| {
        let input = "datasets/t2d-webtables/t2d.tar.gz";
        eval_t2d(model, input, &["--split", "dev", "--task", "cpa"])
    };
    let (plain, calibrated) = (eval(&shipped), eval(&out));
    assert_eq!(plain["micro_f1"], calibrated["micro_f1"]);
    let coverage = calibrated["abstention"]["coverage"].as_f64().unwrap();
    assert!(coverage < 1.0, "{}", calibrated["abstention"]);
}

/// CPA micro-F1 of `model` on the T2D tables in `data`, without abstaining.
fn cpa_f1(model: &Path, data: &Path) -> f64 {
    let report = eval_t2d(model, data.to_str().unwrap(), &["--task", "cpa"]);
    report["micro_f1"].as_f64().unwrap()
}

/// A copy of the T2D folder `from` whose non-key columns each carry the next one's property:
/// every header remembered from it points to a wrong relation.
fn with_rotated_properties(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for dir in ["attributes", "tables"] {
        std::fs::create_dir_all(to.path().join(dir)).unwrap();
    }
    std::fs::copy(
        from.join("classes_complete.csv"),
        to.path().join("classes_complete.csv"),
    )
    .unwrap();
    for entry in std::fs::read_dir(from.join("tables")).unwrap() {
        let name = entry.unwrap().file_name();
        std::fs::copy(
            from.join("tables").join(&name),
            to.path().join("tables").join(&name),
        )
        .unwrap();
        let text = std::fs::read_to_string(from.join("attributes").join(&name)).unwrap();
        let rows: Vec<Vec<String>> = text
            .lines()
            .map(|l| {
                l.split("\",\"")
                    .map(|f| f.trim_matches('"').to_string())
                    .collect()
            })
            .collect();
        let others: Vec<usize> = (0..rows.len()).filter(|&i| rows[i][2] == "False").collect();
        let mut rotated = rows.clone();
        for (k, &i) in others.iter().enumerate() {
            rotated[i][0] = rows[others[(k + 1) % others.len()]][0].clone();
        }
        let text: String = rotated
            .iter()
            .map(|r| format!("\"{}\"\n", r.join("\",\"")))
            .collect();
        std::fs::write(to.path().join("attributes").join(&name), text).unwrap();
    }
    to
}

#[test]
fn calibrate_header_memory_and_type_view_are_stored_and_change_what_eval_scores() {
    let data = t2d_subset(12);
    let rotated = with_rotated_properties(data.path());
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let calibrate = |out: &str, args: &[&str]| -> PathBuf {
        let out = work.path().join(out);
        let mut all = vec![
            "calibrate",
            "--model",
            shipped.to_str().unwrap(),
            "--task",
            "cpa",
        ];
        all.extend(args);
        all.extend(["--set", "t2d=none", "--out", out.to_str().unwrap()]);
        stdout(&colswarm(&all));
        // The relations' n-gram reader, mixed in after the memory and the type view, set
        // aside so that what they alone do is scored.
        let model = out.to_str().unwrap();
        let reader = [
            "add-reader",
            "--model",
            model,
            "--task",
            "cpa",
            "--namespace",
            "t2d",
        ];
        stdout(&colswarm(&[&reader[..], &["--share", "0"]].concat()));
        out
    };
    let from = format!("t2d=t2d:{}", rotated.path().display());
    // The shipped model's own type view and memory set aside.
    let remembering = |weight: &str| {
        let memory = ["--header-memory-from", &from, "--header-memory", weight];
        calibrate(
            weight,
            &[&memory[..], &["--type-view", "t2d=none"]].concat(),
        )
    };
    let plain = calibrate(
        "plain",
        &["--type-view", "t2d=none", "--header-memory", "t2d=none"],
    );
    let (weightless, misled) = (remembering("t2d=0"), remembering("t2d=40"));
    let cpa_t2d = |model: &Path| -> serde_json::Value {
        let labels = labels_json(model);
        let list = labels["cpa"].as_array().unwrap().iter();
        list.clone().find(|n| n["name"] == "t2d").unwrap().clone()
    };
    let memory = &cpa_t2d(&misled)["header_memory"];
    assert_eq!(memory["weight"], 40.0);
    assert!(memory["headers"].as_object().unwrap().len() >= 12);
    assert!(cpa_t2d(&plain).get("header_memory").is_none());
    // Remembered from tables whose headers carry the wrong relations, a large weight makes
    // the wrong relations win; a weight of 0 changes nothing.
    let plain_f1 = cpa_f1(&plain, data.path());
    assert_eq!(cpa_f1(&weightless, data.path()), plain_f1);
    let misled_f1 = cpa_f1(&misled, data.path());
    assert!(misled_f1 < plain_f1 - 0.3, "{misled_f1} vs {plain_f1}");
    // With the type view at 1, each column's relation is its type on the CTA head.
    let typed = calibrate(
        "typed",
        &["--type-view", "t2d=1", "--header-memory", "t2d=none"],
    );
    assert_eq!(cpa_t2d(&typed)["type_view_weight"], 1.0);
    let annotation = annotate_readme_table_in_t2d(&typed);
    let mut related = 0;
    for column in annotation["columns"].as_array().unwrap() {
        if let Some(relation) = column["relations"].as_array().unwrap().first() {
            let typed_as = &column["types"][0]["labels"][0]["label"];
            assert_eq!(&relation["relation"]["label"], typed_as, "{column}");
            related += 1;
        }
    }
    assert!(related >= 2, "{annotation}");
}

#[test]
fn calibrate_refuses_a_memory_without_counts_or_weight_and_a_bad_type_view() {
    let data = t2d_subset(2);
    let tables = format!("t2d=t2d:{}", data.path().display());
    for (args, expected) in [
        (
            vec![
                "--task",
                "cpa",
                "--header-memory",
                "t2d=none",
                "--header-memory",
                "t2d=4",
            ],
            "remembers no headers yet",
        ),
        (
            vec!["--task", "cpa", "--header-memory-from", &tables],
            "give its weight with --header-memory t2d=WEIGHT",
        ),
        (
            vec!["--task", "cpa", "--header-memory", "cta:t2d=4"],
            "the memory is of --task cpa",
        ),
        (vec!["--type-view", "t2d=2"], "with M in [0, 1]"),
        (vec!["--type-view", "nope=0.5"], "no CTA namespace `nope`"),
    ] {
        refuses_calibrate(&args, expected);
    }
}

#[test]
fn calibrate_stores_and_removes_a_subject_label_and_refuses_a_bad_one() {
    const LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let subject_label = |model: &Path| {
        let labels = labels_json(model);
        let mut list = labels["cta"].as_array().unwrap().iter();
        let t2d = list.find(|n| n["name"] == "t2d").unwrap().clone();
        t2d.get("subject_label").cloned()
    };
    let removed = work.path().join("removed");
    let given = "t2d=none";
    let args = ["--subject-label", given, "--out", removed.to_str().unwrap()];
    let mut all = vec!["calibrate", "--model", shipped.to_str().unwrap()];
    all.extend(args);
    stdout(&colswarm(&all));
    assert_eq!(subject_label(&removed), None);
    let stored = work.path().join("stored");
    let given = format!("t2d={LABEL}");
    let text = stdout(&colswarm(&[
        "calibrate",
        "--model",
        removed.to_str().unwrap(),
        "--subject-label",
        &given,
        "--subject-margin",
        "0.25",
        "--out",
        stored.to_str().unwrap(),
    ]));
    assert!(
        text.contains("t2d (CTA): finds subject columns by"),
        "{text}"
    );
    assert_eq!(
        subject_label(&stored),
        Some(serde_json::json!({"label": LABEL, "margin": 0.25}))
    );
    for (given, expected) in [
        ("t2d=city", "has no label `city`"),
        ("nope=x", "no CTA namespace `nope`"),
        ("t2d", "expected NAMESPACE=LABEL or NAMESPACE=none"),
    ] {
        assert_refused("--subject-label", given, expected);
    }
    refuses_calibrate(
        &["--subject-label", "t2d=none", "--subject-margin", "2"],
        "--subject-margin 2 is not in [-1, 1]",
    );
}
