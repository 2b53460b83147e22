//! `colswarm calibrate`'s routing settings: the state specialists' router threshold, where a
//! domain expert opens (`--open-below`) and its weight in the logit mix (`--mix-weight`). On
//! the shipped model and a dozen T2D tables.

mod common;

use std::path::{Path, PathBuf};

use common::{
    STATE_SPECIALISTS, colswarm, eval_t2d, labels_json, refuses_calibrate, root, state_swarm,
    stdout, t2d_subset,
};

/// `calibrate FLAG GIVEN` on the shipped model fails with `expected` in its error and writes
/// no output directory.
fn assert_refused(flag: &str, given: &str, expected: &str) {
    refuses_calibrate(&[flag, given], expected);
}

/// Which state specialists `annotate` opened, table by table.
fn state_specialists_opened(model: &Path, tables: &[&str]) -> Vec<Vec<bool>> {
    let mut args = vec!["annotate", "--model", model.to_str().unwrap()];
    args.extend(tables);
    stdout(&colswarm(&args))
        .lines()
        .map(|line| {
            let table: serde_json::Value = serde_json::from_str(line).unwrap();
            let router = table["router"].as_array().unwrap();
            router
                .iter()
                .filter(|s| STATE_SPECIALISTS.contains(&s["specialist"].as_str().unwrap()))
                .map(|s| s["active"].as_bool().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn calibrate_router_threshold_opens_and_closes_the_state_specialists() {
    let work = tempfile::tempdir().unwrap();
    let data = t2d_subset(6);
    let swarm = state_swarm(data.path(), &work.path().join("swarm"));
    let out = work.path().join("routed");
    let tables = [
        "datasets/t2d-webtables/samples/10057926_0_6000962521981596991.csv",
        "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv",
    ];
    let set = |model: &Path, tau: &str, out: Option<&Path>| {
        let mut args = vec![
            "calibrate",
            "--model",
            model.to_str().unwrap(),
            "--router-threshold",
            tau,
        ];
        if let Some(out) = out {
            args.extend(["--out", out.to_str().unwrap()]);
        }
        colswarm(&args)
    };
    let printed = stdout(&set(&swarm, "0", Some(&out)));
    assert!(printed.contains("gate exceeds 0"), "{printed}");
    assert!(
        !printed.contains("labels.json"),
        "only the manifest changes: {printed}"
    );
    assert_eq!(
        state_specialists_opened(&out, &tables),
        vec![vec![true; 3]; 2]
    );
    stdout(&set(&out, "1", None));
    assert_eq!(
        state_specialists_opened(&out, &tables),
        vec![vec![false; 3]; 2]
    );
    // The labels and the abstention thresholds are left as they were.
    assert_eq!(labels_json(&out), labels_json(&swarm));

    let refused = set(&out, "1.5", None);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("--router-threshold 1.5") && err.contains("[0, 1]"),
        "{err}"
    );

    // The shipped model has no state specialist: a threshold would open none, so it is
    // refused, and nothing is written.
    let shipped = root().join("models/colswarm-small");
    let nowhere = work.path().join("nowhere");
    let refused = set(&shipped, "0", Some(&nowhere));
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("no state specialist") && err.contains("swarm.json"),
        "{err}"
    );
    assert!(!nowhere.exists(), "{}", nowhere.display());
}

#[test]
fn calibrate_open_below_changes_where_an_expert_opens_and_refuses_an_unknown_one() {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("opened");
    stdout(&colswarm(&[
        "calibrate",
        "--model",
        shipped.to_str().unwrap(),
        "--open-below",
        "t2d-expert=0.9",
        "--open-below",
        "gittables-expert=always",
        "--out",
        out.to_str().unwrap(),
    ]));
    // The experts are the specialists of the manifest that contribute their answers.
    let specialists = |dir: &std::path::Path| -> Vec<serde_json::Value> {
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("swarm.json")).unwrap()).unwrap();
        manifest["specialists"].as_array().unwrap().clone()
    };
    let experts = specialists(&out);
    let rule = |name: &str| {
        experts
            .iter()
            .find(|e| e["name"] == name)
            .unwrap()
            .get("open_below")
            .cloned()
    };
    assert_eq!(rule("t2d-expert").and_then(|v| v.as_f64()), Some(0.9));
    assert_eq!(rule("gittables-expert"), None);
    // The others keep theirs; the labels are untouched.
    let shipped_specialists = specialists(&shipped);
    let unchanged = |list: &[serde_json::Value]| -> Vec<serde_json::Value> {
        (list.iter())
            .filter(|e| e["name"] != "t2d-expert" && e["name"] != "gittables-expert")
            .cloned()
            .collect()
    };
    assert_eq!(unchanged(&experts), unchanged(&shipped_specialists));
    assert_eq!(experts.len(), shipped_specialists.len());
    assert_eq!(labels_json(&out), labels_json(&shipped));
    for (given, expected) in [
        ("nope=0.9", "no expert `nope`"),
        ("t2d-expert=1.5", "a probability in [0, 1] or `always`"),
        ("t2d-expert", "expected EXPERT=PROBABILITY"),
    ] {
        assert_refused("--open-below", given, expected);
    }
}

/// Every scored target's probabilities in an `eval --predictions` run of `model` on `data`.
fn t2d_probabilities(model: &Path, data: &Path, task: &str, extra: &[&str]) -> Vec<String> {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("p.jsonl");
    let mut args = vec!["--task", task, "--predictions", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    eval_t2d(model, data.to_str().unwrap(), &args);
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["probabilities"].to_string())
        .collect()
}

#[test]
fn calibrate_mix_weight_zero_is_the_primary_and_open_below_resets_a_stored_gate() {
    let data = t2d_subset(12);
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let calibrated = |name: &str, from: &Path, flags: &[&str]| -> PathBuf {
        let out = work.path().join(name);
        let mut args = vec!["calibrate", "--model", from.to_str().unwrap()];
        args.extend_from_slice(flags);
        args.extend(["--out", out.to_str().unwrap()]);
        stdout(&colswarm(&args));
        out
    };
    // Every expert weighs 0 in every namespace it knows: the swarm is exactly its primary,
    // though the experts still open and read.
    let zero = calibrated(
        "zero",
        &shipped,
        &[
            "--mix-weight",
            "wikitables-expert@wikitables=0",
            "--mix-weight",
            "gittables-expert@cta:gittables=0",
            "--mix-weight",
            "t2d-expert@t2d=0",
            "--mix-weight",
            "t2d-silver@cta:t2d=0",
        ],
    );
    let said = stdout(&colswarm(&["inspect", zero.to_str().unwrap()]));
    assert!(
        said.contains("mixed in with weight 0.00 in cta:t2d"),
        "{said}"
    );
    assert!(said.contains("(the router's rule)"), "{said}");
    for task in ["cta", "cpa"] {
        let alone = t2d_probabilities(&shipped, data.path(), task, &["--no-specialists"]);
        assert!(
            t2d_probabilities(&zero, data.path(), task, &[]) == alone,
            "{task}: weight 0 is the primary alone"
        );
        assert!(
            t2d_probabilities(&shipped, data.path(), task, &[]) != alone,
            "{task}: the shipped experts change answers"
        );
    }
    // A larger weight moves the answers; an expert's rule set again below 0 closes it, in the
    // stored routing too: the T2D answers are then the primary's.
    let heavy = calibrated("heavy", &zero, &["--mix-weight", "t2d-expert@t2d=3"]);
    let alone = t2d_probabilities(&shipped, data.path(), "cta", &["--no-specialists"]);
    assert!(t2d_probabilities(&heavy, data.path(), "cta", &[]) != alone);
    let closed = calibrated(
        "closed",
        &heavy,
        &[
            "--open-below",
            "t2d-expert=0",
            "--open-below",
            "t2d-silver=0",
        ],
    );
    assert!(t2d_probabilities(&closed, data.path(), "cta", &[]) == alone);

    for (given, expected) in [
        ("t2d-expert=1", "expected EXPERT@[TASK:]NAMESPACE=WEIGHT"),
        ("nobody@t2d=1", "no expert `nobody`"),
        ("t2d-expert@t2d=-1", "a number ≥ 0"),
        ("t2d-expert@t2d=x", "a number ≥ 0"),
        ("t2d-expert@nowhere=1", "mixes no namespace `nowhere`"),
        ("t2d-expert@xyz:t2d=1", "TASK is `cta` or `cpa`"),
    ] {
        assert_refused("--mix-weight", given, expected);
    }
}
