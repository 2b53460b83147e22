//! The command-line contract: `eval --json`, `annotate` (JSON, CSV, shards), `embed`, `inspect`,
//! errors.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{colswarm, extract, root, stdout, t2d_archive, t2d_subset};

use colswarm_model::SerializeSettings;
use colswarm_train::{
    DataSettings, ModelSettings, OptimizerSettings, RunSettings, Stopping, TrainConfig,
    TrainOptions, train,
};

/// A tiny model trained for one epoch on a few T2D tables (built once per test process).
fn tiny_model() -> &'static Path {
    static MODEL: OnceLock<PathBuf> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("colswarm-cli-tests-{}", std::process::id()));
        let t2d = root().join("datasets/t2d-webtables/t2d.tar.gz");
        let config = TrainConfig {
            model: ModelSettings {
                d_model: 32,
                n_layers: 1,
                head_size: 16,
                d_head_hidden: 16,
                ..ModelSettings::default()
            },
            data: DataSettings {
                train: vec![format!("t2d=t2d:{}#train", t2d.display()).parse().unwrap()],
                serialize: SerializeSettings {
                    max_table_tokens: 96,
                    max_rows: 4,
                    max_cell_bytes: 12,
                    ..SerializeSettings::default()
                },
                max_tables: 6,
                ..DataSettings::default()
            },
            optimizer: OptimizerSettings {
                batch_size: 3,
                ..OptimizerSettings::default()
            },
            stopping: Stopping {
                epochs: 1,
                ..Stopping::default()
            },
            run: RunSettings {
                ..RunSettings::default()
            },
            ..TrainConfig::default()
        };
        train(&config, &dir.join("run"), &TrainOptions::default())
            .unwrap()
            .model_dir
    })
}

/// A folder of the first `n` T2D tables (sorted by name), as plain CSV files.
fn tables_dir(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let archive = t2d_archive();
    for name in archive.list("tables", "csv").unwrap().iter().take(n) {
        extract(&archive, &format!("tables/{name}"), &dir.path().join(name));
    }
    dir
}

#[test]
fn eval_json_carries_the_documented_fields() {
    let model = tiny_model().to_str().unwrap().to_string();
    let out = colswarm(&[
        "eval",
        "--model",
        &model,
        "--format",
        "t2d",
        "--input",
        "datasets/t2d-webtables/t2d.tar.gz",
        "--split",
        "dev",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    for key in [
        "micro_f1",
        "macro_f1",
        "weighted_f1",
        "n_columns",
        "labels_unknown",
    ] {
        assert!(report[key].is_number(), "{key} missing in {report}");
    }
    assert_eq!(report["task"], "cpa");
    assert!(report["n_columns"].as_u64().unwrap() > 100);
    // Relations never seen in training are counted, not dropped.
    assert!(report["labels_unknown"].as_u64().unwrap() > 0);
    assert!(report["per_label"].is_array());
}

#[test]
fn eval_json_reports_how_the_router_routes_per_specialist_and_kind() {
    let data = t2d_subset(12);
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--model",
            "models/colswarm-small",
            "--format",
            "t2d",
            "--input",
            data.path().to_str().unwrap(),
            "--json",
        ];
        args.extend(extra);
        let out = colswarm(&args);
        serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).unwrap()
    };
    let report = eval(&[]);
    let n_tables = report["n_tables"].as_u64().unwrap();
    assert!(n_tables > 0, "{report}");
    let routing = &report["routing"];
    assert_eq!(routing["tables"].as_u64(), Some(n_tables), "{routing}");
    let by_kind = routing["tables_by_kind"].as_object().unwrap();
    let count = |kind: &str| by_kind.get(kind).and_then(|n| n.as_u64()).unwrap_or(0);
    assert_eq!(
        count("entity") + count("numeric") + count("mixed"),
        n_tables,
        "{routing}"
    );
    assert!(count("wide") <= n_tables);
    let specialists = routing["specialists"].as_array().unwrap();
    let names: Vec<&str> = specialists
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "wikitables-expert",
            "gittables-expert",
            "t2d-expert",
            "t2d-silver"
        ],
        "the manifest's order"
    );
    let mut opened = 0;
    for s in specialists {
        let overall = &s["overall"];
        assert_eq!(overall["tables"].as_u64(), Some(n_tables), "{s}");
        opened += overall["opened"].as_u64().unwrap();
        let rates = std::iter::once(overall).chain(s["by_kind"].as_object().unwrap().values());
        for rate in rates {
            let r = rate["rate"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&r), "{s}");
            let (o, t) = (
                rate["opened"].as_u64().unwrap(),
                rate["tables"].as_u64().unwrap(),
            );
            assert!((r - o as f64 / t as f64).abs() < 1e-12, "{s}");
        }
        for (kind, rate) in s["by_kind"].as_object().unwrap() {
            assert_eq!(rate["tables"].as_u64(), Some(count(kind)), "{s}");
        }
    }
    // The counts agree with the mean activation rate.
    let activation = report["activation_rate"].as_f64().unwrap();
    let expected = opened as f64 / (n_tables * specialists.len() as u64) as f64;
    assert!((activation - expected).abs() < 1e-9, "{report}");

    // The primary alone opens nothing: no routing to report.
    let alone = eval(&["--no-specialists"]);
    assert_eq!(alone["routing"]["tables"], 0, "{alone}");
    assert_eq!(alone["routing"]["specialists"], serde_json::json!([]));
}

#[test]
fn compare_matches_eval_and_baseline_predictions_target_by_target() {
    let dir = tempfile::tempdir().unwrap();
    let (model_file, baseline_file) = (dir.path().join("m.jsonl"), dir.path().join("b.jsonl"));
    let t2d = "datasets/t2d-webtables/t2d.tar.gz";
    let model = colswarm(&[
        "eval",
        "--model",
        "models/colswarm-small",
        "--format",
        "t2d",
        "--input",
        t2d,
        "--split",
        "dev",
        "--json",
        "--predictions",
        model_file.to_str().unwrap(),
    ]);
    let model: serde_json::Value = serde_json::from_str(stdout(&model).trim()).unwrap();
    let baseline = colswarm(&[
        "baseline",
        "--kind",
        "char-ngram",
        "--train",
        &format!("t2d=t2d:{t2d}#train"),
        "--eval",
        &format!("t2d=t2d:{t2d}#dev"),
        "--json",
        "--predictions",
        baseline_file.to_str().unwrap(),
    ]);
    let baseline: serde_json::Value = serde_json::from_str(stdout(&baseline).trim()).unwrap();
    let compare = |a: &Path, b: &Path| {
        let out = colswarm(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--resamples",
            "500",
            "--json",
        ]);
        serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).unwrap()
    };
    let c = compare(&model_file, &baseline_file);
    assert_eq!(c["n_targets"], model["n_columns"]);
    assert_eq!(c["micro_f1_a"], model["micro_f1"]);
    assert_eq!(c["micro_f1_b"], baseline["micro_f1"]);
    let f = |key: &str| c[key].as_f64().unwrap();
    assert!(
        f("ci_low") <= f("difference") && f("difference") <= f("ci_high"),
        "{c}"
    );
    assert!(
        f("ci_high") - f("ci_low") > 0.0,
        "the two differ on some tables: {c}"
    );
    // Every line carries every label's probability (the model's T2D CPA namespace; the 198
    // relations of the baseline's training split); a single-label prediction is the most
    // probable label, and the softmax sums to one.
    let labels: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root().join("models/colswarm-small/labels.json")).unwrap(),
    )
    .unwrap();
    let model_relations = labels["cpa"][0]["labels"].as_array().unwrap().len();
    for (file, relations) in [(&model_file, model_relations), (&baseline_file, 198)] {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let target: serde_json::Value = serde_json::from_str(line).unwrap();
            let probabilities = target["probabilities"].as_object().unwrap();
            assert_eq!(probabilities.len(), relations, "the T2D CPA labels");
            let p = |label: &serde_json::Value| probabilities[label.as_str().unwrap()].as_f64();
            let top = probabilities
                .values()
                .filter_map(|v| v.as_f64())
                .fold(0.0, f64::max);
            assert_eq!(p(&target["predicted"][0]), Some(top), "{line}");
            let sum: f64 = probabilities.values().filter_map(|v| v.as_f64()).sum();
            assert!((sum - 1.0).abs() < 1e-3, "{sum}");
        }
    }
    let itself = compare(&model_file, &model_file);
    assert_eq!(
        (itself["difference"].as_f64(), itself["ci_high"].as_f64()),
        (Some(0.0), Some(0.0))
    );

    // A second run of each (`--run A B`) pools its targets; each table stays one unit.
    let (m, b) = (
        model_file.to_str().unwrap(),
        baseline_file.to_str().unwrap(),
    );
    let out = colswarm(&[
        "compare",
        m,
        b,
        "--run",
        m,
        b,
        "--resamples",
        "500",
        "--json",
    ]);
    let pooled: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(pooled["runs"], 2);
    assert_eq!(
        pooled["n_targets"].as_u64(),
        c["n_targets"].as_u64().map(|n| 2 * n)
    );
    assert_eq!(pooled["n_tables"], c["n_tables"]);
    assert_eq!(pooled["difference"], c["difference"]);
    let text = std::fs::read_to_string(&model_file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let half = dir.path().join("half.jsonl");
    std::fs::write(&half, lines[..lines.len() / 2].join("\n")).unwrap();
    let out = colswarm(&["compare", m, b, "--run", m, half.to_str().unwrap()]);
    assert!(!out.status.success());
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(error.contains("run 2:"), "{error}");

    // A broken line is named with its file and line number; fewer targets are refused.
    let text = std::fs::read_to_string(&baseline_file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{not json";
    let refused = || {
        let out = colswarm(&[
            "compare",
            model_file.to_str().unwrap(),
            baseline_file.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    std::fs::write(&baseline_file, lines.join("\n")).unwrap();
    let error = refused();
    assert!(error.contains("b.jsonl: line 3"), "{error}");
    std::fs::write(&baseline_file, lines[3..].join("\n")).unwrap();
    let error = refused();
    assert!(error.contains("do not match"), "{error}");
}

#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    use std::io::Read;
    // `colswarm annotate … | head -c 100`: far more output than a pipe buffers.
    let tables = tables_dir(usize::MAX);
    let mut child = Command::new(env!("CARGO_BIN_EXE_colswarm"))
        .args(["annotate", "--model", "models/colswarm-small"])
        .arg(tables.path())
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The read end is dropped here; the next writes fail with a broken pipe.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("error"),
        "{stderr}"
    );
}

#[test]
fn shards_concatenate_to_the_unsharded_output() {
    let model = tiny_model().to_str().unwrap().to_string();
    let tables = tables_dir(7);
    let dir = tables.path().to_str().unwrap();
    let whole = stdout(&colswarm(&[
        "annotate",
        "--model",
        &model,
        dir,
        "--batch-size",
        "2",
    ]));
    assert_eq!(whole.lines().count(), 7);
    let shards: String = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            stdout(&colswarm(&[
                "annotate",
                "--model",
                &model,
                dir,
                "--shard",
                &shard,
                "--batch-size",
                "3",
            ]))
        })
        .collect();
    assert_eq!(shards, whole);
    let first: serde_json::Value = serde_json::from_str(whole.lines().next().unwrap()).unwrap();
    let column = &first["columns"][1];
    assert!(column["types"][0]["labels"][0]["confidence"].is_number());
    assert_eq!(column["types"][0]["top_k"].as_array().unwrap().len(), 3);
}

#[test]
fn subject_column_names_where_relations_start_and_falls_back_per_table() {
    // The README's table of cities: the rule finds `city` (1); the user names `country` (2).
    let table = "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv";
    let annotate = |extra: &[&str]| {
        let mut args = vec!["annotate", "--model", "models/colswarm-small", table];
        args.extend(extra);
        let out = colswarm(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let annotation: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        (
            annotation,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let subject_and_relations = |a: &serde_json::Value| {
        let relations = a["columns"].as_array().unwrap().iter().map(|c| {
            c["relations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["subject_column"].as_u64().unwrap())
                .collect::<Vec<_>>()
        });
        (
            a["subject_column"].as_u64().unwrap(),
            relations.collect::<Vec<_>>(),
        )
    };
    let (found, _) = annotate(&[]);
    assert_eq!(subject_and_relations(&found).0, 1);
    for named in ["Country", "2"] {
        let (a, stderr) = annotate(&["--subject-column", named]);
        let (subject, relations) = subject_and_relations(&a);
        assert_eq!(subject, 2, "{named}");
        // Every column but the subject has its relation to it.
        for (index, from) in relations.iter().enumerate() {
            let expected: &[u64] = if index == 2 { &[] } else { &[2] };
            assert_eq!(from, expected, "{named}: column {index}");
        }
        assert!(stderr.is_empty(), "{stderr}");
    }
    let (fallback, stderr) = annotate(&["--subject-column", "airport"]);
    assert_eq!(fallback, found);
    assert!(
        stderr.contains("77632062_0_2292892375652659825: has no column headed `airport`"),
        "{stderr}"
    );
}

#[test]
fn keep_going_skips_an_unreadable_file_names_it_and_still_fails() {
    let model = tiny_model().to_str().unwrap().to_string();
    let tables = tables_dir(2);
    // Sorted between the two T2D tables.
    let bad = tables.path().join("10060000-not-utf8.csv");
    std::fs::write(&bad, [0xff, 0xfe, b',', b'b', b'\n']).unwrap();
    let dir = tables.path().to_str().unwrap();
    for command in ["annotate", "embed"] {
        let stopped = colswarm(&[command, "--model", &model, dir]);
        assert!(!stopped.status.success());
        assert!(
            stopped.stdout.is_empty(),
            "{command}: the round with the bad file stops"
        );

        let out = colswarm(&[command, "--model", &model, dir, "--keep-going"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{command}: a skipped file still fails the command"
        );
        assert!(
            stderr.contains("skipped: ") && stderr.contains("10060000-not-utf8.csv"),
            "{command}: {stderr}"
        );
        assert!(stderr.contains("1 of 3 table files"), "{command}: {stderr}");
        let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{command}: the two readable tables");
        let ids: Vec<&str> = lines.iter().map(|l| l["table"].as_str().unwrap()).collect();
        assert!(
            ids[0] < ids[1] && ids[1] > "10060000",
            "{command}: in order, {ids:?}"
        );
    }
}

#[test]
fn embed_writes_each_column_s_vector_one_line_per_table() {
    let model = tiny_model().to_str().unwrap().to_string();
    let tables = tables_dir(3);
    let dir = tables.path().to_str().unwrap();
    let lines = stdout(&colswarm(&["embed", "--model", &model, dir]));
    let embedded: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(embedded.len(), 3);
    let annotated = stdout(&colswarm(&["annotate", "--model", &model, dir]));
    for (embedding, annotation) in embedded.iter().zip(annotated.lines()) {
        let annotation: serde_json::Value = serde_json::from_str(annotation).unwrap();
        assert_eq!(embedding["table"], annotation["table"]);
        let columns = embedding["columns"].as_array().unwrap();
        assert_eq!(
            columns.len(),
            annotation["columns"].as_array().unwrap().len()
        );
        for (c, column) in columns.iter().enumerate() {
            assert_eq!(column["index"], c);
            assert_eq!(column["header"], annotation["columns"][c]["header"]);
            // The tiny model's width.
            assert_eq!(column["vector"].as_array().unwrap().len(), 32);
        }
    }
    // The same tables give the same vectors, whatever the batch.
    let one_by_one = stdout(&colswarm(&[
        "embed",
        "--model",
        &model,
        dir,
        "--batch-size",
        "1",
    ]));
    let again: Vec<serde_json::Value> = one_by_one
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (a, b) in embedded.iter().zip(&again) {
        for (x, y) in a["columns"]
            .as_array()
            .unwrap()
            .iter()
            .zip(b["columns"].as_array().unwrap())
        {
            let (x, y) = (
                x["vector"].as_array().unwrap(),
                y["vector"].as_array().unwrap(),
            );
            for (u, v) in x.iter().zip(y) {
                assert!((u.as_f64().unwrap() - v.as_f64().unwrap()).abs() < 1e-4);
            }
        }
    }
    let missing = colswarm(&["embed", "--model", &model, "no/such/table.csv"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/table.csv"));
}

#[test]
fn csv_output_has_one_row_per_column_and_namespace() {
    let model = tiny_model().to_str().unwrap().to_string();
    let tables = tables_dir(2);
    let out = stdout(&colswarm(&[
        "annotate",
        "--model",
        &model,
        tables.path().to_str().unwrap(),
        "--output",
        "csv",
    ]));
    let mut lines = out.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("table,column,header,namespace,label")
    );
    assert!(lines.count() >= 2);
}

#[test]
fn inspect_names_the_experts_own_ngrams_and_their_routing() {
    let out = stdout(&colswarm(&["inspect", "models/colswarm-small"]));
    // One list of specialists, each with what it contributes: the shipped model's answer.
    assert!(!out.contains("(state)"), "{out}");
    assert!(out.contains("state fusion: none"), "{out}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("specialist {name} (answers):")))
            .unwrap_or_else(|| panic!("no line for {name}: {out}"))
    };
    let gittables = line("gittables-expert");
    assert!(
        gittables.contains("its own n-grams")
            && gittables.contains("100 cells")
            && gittables.contains("value statistics"),
        "{gittables}"
    );
    // An expert reading n-grams as the primary does says nothing of them.
    let t2d = line("t2d-expert");
    assert!(!t2d.contains("n-grams"), "{out}");
    // Its gate, the rule it follows, and its weights in the mix.
    assert!(
        t2d.contains("below 0.8 (the router's rule)") && t2d.contains("1.36 in cpa:t2d"),
        "{t2d}"
    );
}

#[test]
fn inspect_verifies_and_bad_input_is_named() {
    let model = tiny_model().to_str().unwrap().to_string();
    let out = stdout(&colswarm(&["inspect", &model]));
    assert!(out.contains("every checksum verified"), "{out}");
    // A model trained without specialists fuses no state.
    assert!(out.contains("state fusion: none"), "{out}");

    let missing = colswarm(&["annotate", "--model", &model, "no/such/table.csv"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/table.csv"));
    // The OS error once, not again for each link of the error chain.
    let no_model = colswarm(&["annotate", "--model", "no/such/model", "no/such/table.csv"]);
    let stderr = String::from_utf8_lossy(&no_model.stderr);
    assert!(stderr.contains("no/such/model"), "{stderr}");
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );

    let bad = tempfile::tempdir().unwrap();
    let file = bad.path().join("ragged.csv");
    std::fs::write(&file, [0xff, 0xfe, b',', b'\n', 0xc3]).unwrap();
    let out = colswarm(&["annotate", "--model", &model, file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("ragged.csv"),
        "{stderr}"
    );

    let copy = bad.path().join("model");
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(tiny_model()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::create_dir(copy.join("specialists")).unwrap();
    let head = copy.join("cta_head.safetensors");
    let mut bytes = std::fs::read(&head).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&head, bytes).unwrap();
    let out = colswarm(&["inspect", copy.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("cta_head.safetensors")
            && stderr.contains("checksum"),
        "{stderr}"
    );
}

#[test]
fn a_count_of_zero_is_refused_by_name() {
    for (flag, args) in [
        (
            "--batch-size",
            &["annotate", "--model", "m", "--batch-size", "0", "t.csv"][..],
        ),
        (
            "--repeat",
            &["bench", "--model", "m", "--repeat", "0", "t.csv"],
        ),
        ("--threads", &["--threads", "0", "inspect", "m"]),
        (
            "--batch-size",
            &[
                "train-router",
                "--model",
                "m",
                "--train",
                "t",
                "--out",
                "o",
                "--batch-size",
                "0",
            ],
        ),
    ] {
        let out = colswarm(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(flag) && stderr.contains("must be at least 1"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn baseline_without_the_hierarchy_closure_predicts_only_what_it_scores() {
    let dir = tempfile::tempdir().unwrap();
    let w = root().join("datasets/wikitables-turl-subset");
    let train = format!(
        "w=turl-csv:{}",
        w.join("train_wikitables_subset_20.csv.gz").display()
    );
    let eval = format!(
        "w=turl-csv:{}",
        w.join("dev_wikitables_subset_2.csv.gz").display()
    );
    // Every predicted label of every column, with its own probability and whether it is the
    // column's most probable one.
    let run = |flat: bool| {
        let file = dir.path().join(format!("flat-{flat}.jsonl"));
        let mut args = vec!["baseline", "--kind", "char-ngram", "--train", &train];
        args.extend(["--eval", &eval, "--predictions", file.to_str().unwrap()]);
        if flat {
            args.push("--no-hierarchy-closure");
        }
        stdout(&colswarm(&args));
        let mut predicted = Vec::new();
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let probs = row["probabilities"].as_object().unwrap();
            let best = probs
                .values()
                .map(|p| p.as_f64().unwrap())
                .fold(0.0, f64::max);
            for label in row["predicted"].as_array().unwrap() {
                let p = probs[label.as_str().unwrap()].as_f64().unwrap();
                predicted.push((p, p == best));
            }
        }
        predicted
    };
    let closed = run(false);
    let flat = run(true);
    // The closure adds super-types the model itself finds improbable; without it every
    // predicted label is the column's best or above one half.
    assert!(closed.iter().any(|&(p, best)| p < 0.5 && !best));
    assert!(flat.iter().all(|&(p, best)| p > 0.5 || best));
    assert!(flat.len() < closed.len());
}

#[test]
fn header_peers_score_t2d_cpa_and_the_prior_is_checked() {
    let t2d = "datasets/t2d-webtables/t2d.tar.gz";
    let (train, eval) = (format!("t2d=t2d:{t2d}#train"), format!("t2d=t2d:{t2d}#dev"));
    let score = |extra: &[&str]| {
        let mut args = vec!["baseline", "--train", &train, "--eval", &eval, "--json"];
        args.extend(extra);
        let out: serde_json::Value = serde_json::from_str(stdout(&colswarm(&args)).trim()).unwrap();
        out["micro_f1"].as_f64().unwrap()
    };
    let majority = score(&["--kind", "majority"]);
    // Headers name T2D's properties often: both header peers are far above a constant answer.
    for kind in ["header-rule", "header-memory"] {
        let f1 = score(&["--kind", kind]);
        assert!(
            f1 > majority + 0.2,
            "{kind}: {f1} against majority {majority}"
        );
    }
    let prior = score(&["--kind", "char-ngram", "--label-name-prior", "12"]);
    assert!(prior > majority, "{prior}");
    for (args, message) in [
        (
            vec!["--kind", "header-rule", "--label-name-prior", "12"],
            "char-ngram only",
        ),
        (
            vec!["--kind", "char-ngram", "--label-name-prior", "-1"],
            "finite number",
        ),
    ] {
        let mut all = vec!["baseline", "--train", &train, "--eval", &eval];
        all.extend(args);
        let out = colswarm(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(message),
            "{stderr}"
        );
    }
}
