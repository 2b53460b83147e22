//! The evaluation protocol, `scripts/evaluate-recipe.sh`, on tiny inputs (a few tables, one
//! epoch, the first fold of each benchmark): it trains, chooses its settings on the selection
//! half, scores the held-out fold against every peer, writes the results block into an
//! existing file without touching the rest, and a rerun reuses everything it made; a rerun of
//! one benchmark keeps the others' tables; a change to the recipe (`--set`, `--expert-set`)
//! reaches every fold's model or expert and the results.

mod common;

use std::path::Path;
use std::process::Command;

use common::root;

fn protocol(out: &Path, results: &Path, benchmarks: &str) -> std::process::Output {
    protocol_with(out, results, benchmarks, &[])
}

/// The tiny protocol with EXTRA flags (such as `--set KEY=VALUE`).
fn protocol_with(
    out: &Path,
    results: &Path,
    benchmarks: &str,
    extra: &[&str],
) -> std::process::Output {
    Command::new("python3")
        .current_dir(root())
        .arg("scripts/evaluate_recipe.py")
        .args(["--bin", env!("CARGO_BIN_EXE_colswarm")])
        .args(["--tiny", "--folds", "1", "--jobs", "2"])
        .args(["--benchmarks", benchmarks])
        .arg("--out")
        .arg(out)
        .arg("--results")
        .arg(results)
        .args(extra)
        .output()
        .expect("python3 runs the protocol script")
}

/// What `colswarm inspect DIR` prints.
fn inspect(dir: &Path) -> String {
    let inspected = Command::new(env!("CARGO_BIN_EXE_colswarm"))
        .arg("inspect")
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&inspected.stdout).into_owned()
}

/// Fails unless the schema.org file (argv[1]) has tables and none of GitTables' DBpedia cv_0.
const DISJOINT_FROM_CV0: &str = r#"
import csv, gzip, sys
csv.field_size_limit(1 << 30)
def tables(path):
    with gzip.open(path, "rt", newline="", encoding="utf-8") as f:
        return {row[0] for row in list(csv.reader(f))[1:]}
schema = tables(sys.argv[1])
held_out = tables("datasets/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_0.csv.gz")
assert len(schema) > 1000, len(schema)
assert not schema & held_out, sorted(schema & held_out)[:5]
"#;

/// Runs the Python SCRIPT on FILE (from the repository's root) and asserts that it passed.
fn python_check(script: &str, file: &Path) {
    let check = Command::new("python3")
        .current_dir(root())
        .args(["-c", script])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// Fails unless argv[1] is gzipped JSON Lines with targets and no probabilities.
const NO_PROBABILITIES: &str = r#"
import gzip, json, sys
targets = [json.loads(l) for l in gzip.open(sys.argv[1], "rt")]
assert targets and all("gold" in t and "probabilities" not in t for t in targets), targets[:2]
"#;

#[test]
fn a_recipe_change_trains_every_fold_model_and_is_named_in_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let (out, results) = (dir.path().join("work"), dir.path().join("RESULTS.md"));
    let change = [
        "--set",
        "model.value_stats=true",
        "--expert-set",
        "model.ngram_cells=30",
        "--specialist",
        "shipped:always:average=models/colswarm-small/experts/{bench}-expert",
    ];
    let run = protocol_with(&out, &results, "gittables", &change);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&results).unwrap();
    assert!(
        text.contains(
            "with `--set model.value_stats=true` with `--expert-set model.ngram_cells=30` \
             with `--specialist shipped:always:average=models/colswarm-small/experts/{bench}-expert`"
        ),
        "{text}"
    );
    // The added specialist stands beside the fold's own expert, opens on every table (no
    // rule in the manifest) and keeps the plain average's weight in the mix.
    let fold = out.join("gittables/fold0");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fold.join("final-all/swarm.json")).unwrap())
            .unwrap();
    let listed = manifest["specialists"].as_array().unwrap();
    let shipped = listed
        .iter()
        .find(|s| s["name"] == "shipped")
        .expect("listed");
    assert!(shipped.get("open_below").is_none(), "{shipped}");
    assert!(listed.iter().any(|s| s["name"] == "gittables-expert"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fold.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["mix"]["shipped@cta:gittables"], 1.0,
        "{}",
        summary["mix"]
    );
    // The fold's model itself (not only its expert, whose shape has them) reads the statistics.
    for model in ["model-avg", "model-all-avg"] {
        let inspected = inspect(&out.join("gittables/fold0").join(model));
        assert!(
            inspected.contains("the cells' value statistics"),
            "{model}: {inspected}"
        );
    }
    // The expert's change comes on top of its shape (100 cells for GitTables).
    let inspected = inspect(&out.join("gittables/fold0/expert-all-avg"));
    assert!(inspected.contains("the header and 30 cells"), "{inspected}");
    // Resuming the work directory without the change would score models it does not describe.
    assert_refused(
        protocol(&out, &results, "gittables"),
        "was made with --set model.value_stats=true",
    );
    // A work directory made before the changes were recorded was made without any.
    let older = dir.path().join("older");
    std::fs::create_dir_all(&older).unwrap();
    std::fs::write(older.join("timing.json"), r#"{"seconds": 1.0}"#).unwrap();
    assert_refused(
        protocol_with(&older, &results, "gittables", &change),
        "was made with no --set",
    );
}

#[test]
fn the_nested_protocol_runs_end_to_end_on_tiny_inputs_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let (out, results) = (dir.path().join("work"), dir.path().join("RESULTS.md"));
    std::fs::write(&results, "# Results\n\nKept above.\n").unwrap();
    let first = protocol(&out, &results, "t2d,gittables,wikitables");
    let log = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{log}");
    assert!(
        log.contains("t2d fold 0: choosing the label-name prior"),
        "{log}"
    );

    let text = std::fs::read_to_string(&results).unwrap();
    assert!(text.starts_with("# Results\n\nKept above.\n"), "{text}");
    for title in [
        "WikiTables CTA",
        "GitTables CTA",
        "T2D CTA, DBpedia properties",
        "T2D CPA, DBpedia properties",
    ] {
        assert!(
            text.contains(&format!("### {title}")),
            "{title} missing:\n{text}"
        );
    }
    assert!(text.contains("tiny mode"), "{text}");
    // Each benchmark's run time is its folds' own (training included), not the directory's.
    assert!(
        text.contains("of run time on one thread: its folds' training"),
        "{text}"
    );
    assert!(
        !text.contains("its work directory's when the record"),
        "{text}"
    );
    // Each benchmark names the commit of its folds and of its reader stage, with its time.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    for name in ["WikiTables", "GitTables", "T2D"] {
        let made = format!("{name}: models, choices, scores and peers at commit {head} (tiny mode");
        assert!(text.contains(&made), "{made} missing:\n{text}");
    }
    assert_eq!(
        text.matches(&format!(
            "and the n-gram reader, the recipe's last step, at {head} ("
        ))
        .count(),
        3,
        "{text}"
    );
    assert!(
        !text.contains("--no-refit"),
        "the default retrains on the whole part: {text}"
    );
    for peer in [
        "majority",
        "header-rule",
        "header-memory",
        "char-ngram",
        "char-ngram-stats",
        "char-ngram-stats-position",
        "char-ngram-prior-stats",
    ] {
        assert!(text.contains(&format!("| {peer}")), "{peer} missing");
    }

    // Every fold chose its settings from the grids, on the selection half.
    for bench in ["t2d", "gittables", "wikitables"] {
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(bench).join("fold0/summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["refit"], true, "{bench}");
        assert!(summary["commit"].is_string(), "{bench}: {summary}");
        // The fold's run time counts its four models' training, each timed in its record.
        let trained: f64 = ["model", "model-all", "expert", "expert-all"]
            .iter()
            .map(|m| {
                let record = out.join(bench).join(format!("fold0/{m}.json"));
                let record: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
                let seconds = record["seconds"].as_f64().unwrap();
                assert!(seconds > 0.0, "{bench} {m}: {seconds}");
                seconds
            })
            .sum();
        let work = summary["work_seconds"].as_f64().unwrap();
        assert!(work > trained, "{bench}: {work} <= {trained}");
        assert!(
            out.join(bench).join("fold0/model-all-avg").is_dir(),
            "{bench}: no refit"
        );
        let open = &summary["open_below"];
        assert_eq!(
            open.as_f64(),
            Some(0.95),
            "{bench}: tiny runs open the experts"
        );
        // Where experts open, their mix was learned from the identity on the selection half:
        // the benchmark's expert has a weight in its namespace, stored in the scored model.
        let mix = summary["mix"].as_object().unwrap();
        {
            let pair = format!("{bench}-expert@cta:{bench}");
            let theta = mix[&pair].as_f64().unwrap();
            assert!(theta.is_finite() && theta >= 0.0, "{bench}: {pair} {theta}");
            let inspected = inspect(&out.join(bench).join("fold0/final-all"));
            let stored = format!("{theta:.2} in cta:{bench}");
            assert!(
                theta == 1.0 || inspected.contains(&stored),
                "{bench}: {stored} not in {inspected}"
            );
        }
        // The GitTables expert also learns GitTables' schema.org annotations, as a namespace
        // of its own, on every table outside the held-out fold.
        let expert = inspect(&out.join(bench).join("fold0/expert-all-avg"));
        assert_eq!(
            expert.contains("CTA namespace gittables-schema"),
            bench == "gittables",
            "{bench}: {expert}"
        );
        if bench == "gittables" {
            // None of those tables is in the held-out fold, cv_0.
            python_check(
                DISJOINT_FROM_CV0,
                &out.join("gittables/data/schema-without-cv0.csv.gz"),
            );
        }
        for (task, result) in summary["results"].as_object().unwrap() {
            let f1 = result["micro_f1"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&f1), "{bench} {task}: {f1}");
        }
        // The reader's share is chosen on the other folds' held-out predictions: with one fold
        // there are none, so it is the smallest, 0, and the threshold is chosen again.
        for (task, reader) in summary["reader"].as_object().unwrap() {
            assert_eq!(reader["share"].as_f64(), Some(0.0), "{bench} {task}");
            assert_eq!(reader["chosen_on"].as_array().map(Vec::len), Some(0));
            assert!(
                reader.get("threshold").is_some(),
                "{bench} {task}: {reader}"
            );
            assert!(reader["seconds"].as_f64().unwrap() > 0.0, "{reader}");
            assert!(reader["commit"].is_string(), "{reader}");
            let f1 = reader["micro_f1"].as_f64().unwrap();
            assert_eq!(
                Some(f1),
                summary["results"][task]["micro_f1"].as_f64(),
                "{bench} {task}"
            );
            assert!(
                out.join(bench)
                    .join(format!("fold0/reader-{task}.jsonl"))
                    .is_file()
            );
        }
        if bench == "t2d" {
            for task in ["cta", "cpa"] {
                let w = summary["weights"][task].as_i64().unwrap();
                assert!(w == 0 || w == 12, "{w}");
            }
            // CPA's type view and header memory, from their tiny grids, with every
            // setting scored on the selection half.
            let chosen = summary["cpa_priors"].as_array().unwrap();
            let (m, w) = (chosen[0].as_f64().unwrap(), chosen[1].as_f64().unwrap());
            assert!(
                [0.0, 0.5].contains(&m) && [0.0, 4.0].contains(&w),
                "{chosen:?}"
            );
            let tried = summary["selection"]["cpa_priors"].as_array().unwrap();
            assert_eq!(tried.len(), 4, "{tried:?}");
            let labels: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(out.join("t2d/fold0/final-all/labels.json")).unwrap(),
            )
            .unwrap();
            let mut cpa_namespaces = labels["cpa"].as_array().unwrap().iter();
            let cpa = cpa_namespaces.find(|n| n["name"] == "t2d").unwrap();
            assert_eq!(cpa["type_view_weight"].as_f64(), (m > 0.0).then_some(m));
            assert_eq!(
                cpa["header_memory"]["weight"].as_f64(),
                (w > 0.0).then_some(w)
            );
            // The subject label, none or its tiny grid's margin, each scored on the selection
            // half, and stored in the refit as chosen.
            let margin = summary["subject_margin"].as_f64();
            assert!([None, Some(0.7)].contains(&margin), "{margin:?}");
            let cta = labels["cta"].as_array().unwrap().iter();
            let types = cta.clone().find(|n| n["name"] == "t2d").unwrap();
            let known = types["labels"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l == "http://www.w3.org/2000/01/rdf-schema#label");
            let tried = summary["selection"]["subject_margin"].as_array().unwrap();
            assert_eq!(tried.len(), if known { 2 } else { 0 }, "{tried:?}");
            let stored = types["subject_label"]["margin"].as_f64();
            assert_eq!(stored.map(|m| (m * 100.0).round() / 100.0), margin);
        } else {
            assert!(summary["cpa_priors"].is_null(), "{bench}");
        }
    }

    // The recipe's pooled held-out predictions are kept beside the results, labels only, and
    // `compare` scores them as the table does.
    for (bench, task) in [
        ("t2d", "cta"),
        ("t2d", "cpa"),
        ("gittables", "cta"),
        ("wikitables", "cta"),
    ] {
        let name = format!("{bench}-{task}-recipe.jsonl.gz");
        let kept = dir.path().join("results").join(&name);
        assert!(
            text.contains(&format!("(results/{name})")),
            "{name}: {text}"
        );
        python_check(NO_PROBABILITIES, &kept);
        // What is kept and reported is the recipe with its n-gram reader.
        assert!(
            text.contains("| **the recipe with its n-gram reader** |"),
            "{text}"
        );
        let pooled = out.join(bench).join(format!("{task}-model-reader.jsonl"));
        assert!(
            std::fs::read_to_string(&pooled)
                .unwrap()
                .contains("\"probabilities\""),
            "{bench} {task}: the pooled file has no probabilities to drop"
        );
        let compared = Command::new(env!("CARGO_BIN_EXE_colswarm"))
            .arg("compare")
            .arg(&kept)
            .arg(&pooled)
            .arg("--json")
            .output()
            .unwrap();
        assert!(compared.status.success(), "{bench} {task}");
        let c: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
        assert_eq!(c["micro_f1_a"], c["micro_f1_b"], "{bench} {task}: {c}");
        assert_eq!(c["difference"].as_f64(), Some(0.0), "{bench} {task}: {c}");
        let f1 = c["micro_f1_a"].as_f64().unwrap();
        assert!(
            text.contains(&format!("**{f1:.3}**")),
            "{bench} {task}: {f1}"
        );
        // Relations are also scored as `annotate` gives them, from the subject column the
        // model finds (the same targets, a pair from another column a miss).
        let own = out
            .join(bench)
            .join(format!("{task}-model-reader-own-subject.jsonl"));
        assert_eq!(own.exists(), task == "cpa", "{}", own.display());
        assert_eq!(
            text.matches("**Relations at run time.**").count(),
            1,
            "{bench} {task}: {text}"
        );
        if task == "cpa" {
            let lines = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
            assert_eq!(lines(&own), lines(&pooled), "{bench} {task}");
        }
    }

    // A rerun of one benchmark trains nothing and writes the same tables, the other
    // benchmarks' kept; a peer the fold's summary lacks (one added to the protocol since the
    // fold ran) is run alone.
    let trained = out.join("t2d/fold0/model-avg/primary.safetensors");
    let before = std::fs::metadata(&trained).unwrap().modified().unwrap();
    let summary_file = out.join("t2d/fold0/summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_file).unwrap()).unwrap();
    let peers = summary["peers"]["cta"].as_object_mut().unwrap();
    assert!(peers.remove("char-ngram-stats").is_some());
    std::fs::write(&summary_file, summary.to_string()).unwrap();
    let peer_file = out.join("t2d/fold0/peer-cta-char-ngram-stats.jsonl");
    std::fs::remove_file(&peer_file).unwrap();
    let again = protocol(&out, &results, "t2d");
    assert!(again.status.success());
    let log = String::from_utf8_lossy(&again.stderr);
    assert!(!log.contains("training the model"), "{log}");
    assert!(log.contains("the peers added since it ran"), "{log}");
    assert!(peer_file.is_file());
    assert_eq!(
        std::fs::metadata(&trained).unwrap().modified().unwrap(),
        before
    );
    let without_time = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.contains("run time"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without_time(&std::fs::read_to_string(&results).unwrap()),
        without_time(&text)
    );
    // An expert kept from an older protocol, trained without the schema.org namespace the
    // protocol now gives it, is refused rather than scored as the recipe.
    let labels_file = out.join("gittables/fold0/expert-avg/labels.json");
    let labels = std::fs::read_to_string(&labels_file).unwrap();
    assert!(labels.contains("\"gittables-schema\""));
    std::fs::write(
        &labels_file,
        labels.replace("\"gittables-schema\"", "\"older\""),
    )
    .unwrap();
    assert_refused(
        protocol(&out, &results, "gittables"),
        "expert-avg was trained without gittables-schema",
    );
}

#[test]
fn without_the_refit_the_reader_joins_the_model_trained_without_the_selection_half() {
    let dir = tempfile::tempdir().unwrap();
    let (out, results) = (dir.path().join("work"), dir.path().join("RESULTS.md"));
    let run = protocol_with(&out, &results, "t2d", &["--no-refit"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let fold = out.join("t2d/fold0");
    // No model was trained on the whole training part, and the fold says so.
    assert!(!fold.join("model-all-avg").exists());
    assert!(!fold.join("final-all").exists());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fold.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["refit"], false);
    // The reader step scored the model it had: one entry per task, as with the refit.
    for task in ["cta", "cpa"] {
        let reader = &summary["reader"][task];
        assert_eq!(reader["share"].as_f64(), Some(0.0), "{task}: {reader}");
        assert_eq!(
            reader["micro_f1"].as_f64(),
            summary["results"][task]["micro_f1"].as_f64(),
            "{task}"
        );
        assert!(fold.join(format!("model-reader-{task}.jsonl")).is_file());
    }
    let text = std::fs::read_to_string(&results).unwrap();
    assert!(text.contains("--no-refit"), "{text}");
}

/// Asserts that a protocol run failed and that its log says EXPECTED.
fn assert_refused(run: std::process::Output, expected: &str) {
    assert!(!run.status.success(), "not refused");
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(log.contains(expected), "{log}");
}
