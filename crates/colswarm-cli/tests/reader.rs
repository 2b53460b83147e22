//! `colswarm add-reader` trains an n-gram reader for a namespace, chooses its share on dev
//! tables, and stores it; `eval` then scores exactly the curve point it chose. On the shipped
//! model and a dozen T2D tables.

mod common;

use std::path::Path;

use colswarm_model::ModelDir;
use common::{colswarm, root, stdout, t2d_subset};

fn eval_cpa(model: &Path, input: &str) -> serde_json::Value {
    let args = [
        "eval",
        "--model",
        model.to_str().unwrap(),
        "--format",
        "t2d",
        "--input",
        input,
        "--task",
        "cpa",
        "--json",
    ];
    serde_json::from_str(stdout(&colswarm(&args)).trim()).unwrap()
}

fn reader_of(model: &Path) -> serde_json::Value {
    let labels: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("labels.json")).unwrap()).unwrap();
    labels["cpa"][0]["reader"].clone()
}

#[test]
fn the_share_chosen_on_dev_is_the_one_eval_then_scores() {
    let data = t2d_subset(12);
    let work = tempfile::tempdir().unwrap();
    let shipped = root().join("models/colswarm-small");
    let input = data.path().to_str().unwrap();
    let dev = format!("t2d=t2d:{input}");
    // Trained on other tables than it is chosen on, so that a large share changes answers.
    let train = "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#folds=3";
    let out = work.path().join("with-reader");
    let before = reader_of(&shipped);
    let report: serde_json::Value = serde_json::from_str(
        stdout(&colswarm(&[
            "add-reader",
            "--model",
            shipped.to_str().unwrap(),
            "--task",
            "cpa",
            "--train",
            train,
            "--dev",
            &dev,
            "--value-stats",
            "--position",
            "--buckets",
            "256",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ]))
        .trim(),
    )
    .unwrap();
    assert_eq!(
        reader_of(&shipped),
        before,
        "--out leaves --model as it was"
    );
    let reader = reader_of(&out);
    assert_eq!(reader["features"]["buckets"], 256);
    assert_eq!(reader["features"]["position"], true);
    assert!(out.join(reader["path"].as_str().unwrap()).is_file());
    // Half floats: 256 buckets × 224 relations, two bytes each, and a small header.
    let bytes = report["bytes"].as_u64().unwrap();
    assert!(
        (256 * 224 * 2..256 * 224 * 2 + 8192).contains(&bytes),
        "{bytes}"
    );

    let curve: Vec<(f64, f64)> = report["curve"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect();
    assert_eq!(curve.len(), 10);
    let best = curve.iter().map(|p| p.1).fold(0.0, f64::max);
    let chosen = report["share"].as_f64().unwrap();
    assert_eq!(chosen, curve.iter().find(|p| p.1 == best).unwrap().0);
    // The shipped model learned these tables; a reader trained elsewhere changes answers.
    assert!(curve.iter().any(|p| p.1 < curve[0].1), "{curve:?}");

    // At each share, eval scores the curve's point (at 0: the model without a reader).
    let checked = |share: f64| share == 0.0 || share == chosen || share == 0.5 || share == 0.9;
    for &(share, f1) in curve.iter().filter(|p| checked(p.0)) {
        stdout(&colswarm(&[
            "add-reader",
            "--model",
            out.to_str().unwrap(),
            "--task",
            "cpa",
            "--namespace",
            "t2d",
            "--share",
            &share.to_string(),
        ]));
        assert_eq!(
            reader_of(&out)["share"].as_f64().unwrap() as f32,
            share as f32
        );
        let scored = eval_cpa(&out, input)["micro_f1"].as_f64().unwrap();
        assert!(
            (scored - f1).abs() < 1e-9,
            "share {share}: {scored} vs {f1}"
        );
    }
}

#[test]
fn add_reader_refuses_what_it_cannot_use() {
    // A copy: a refusal that did not happen would change the model in place.
    let work = tempfile::tempdir().unwrap();
    let shipped = work.path().join("model");
    ModelDir::open(&root().join("models/colswarm-small"))
        .unwrap()
        .copy_to(&shipped)
        .unwrap();
    let labels = std::fs::read(shipped.join("labels.json")).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["add-reader", "--model", shipped.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = colswarm(&args);
        assert!(!out.status.success(), "{extra:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&["--task", "cpa", "--namespace", "nope", "--share", "0.5"]);
    assert!(
        err.contains("no cpa namespace `nope` (it has: t2d)"),
        "{err}"
    );
    let err = run(&["--task", "cpa", "--namespace", "t2d", "--share", "1.5"]);
    assert!(err.contains("--share 1.5"), "{err}");
    let err = run(&[
        "--task",
        "cta",
        "--namespace",
        "wikitables",
        "--share",
        "0.5",
    ]);
    assert!(err.contains("has no n-gram reader"), "{err}");
    let spec = "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#folds=0";
    let err = run(&["--task", "cpa", "--train", spec]);
    assert!(err.contains("--dev chooses the reader's share"), "{err}");
    // Nothing was written.
    assert_eq!(std::fs::read(shipped.join("labels.json")).unwrap(), labels);
}
