//! `colswarm train`: resuming a killed run, the recipe's defaults, averaging the last epochs,
//! word vectors.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{colswarm, root, stdout};

#[test]
fn a_killed_training_resumes_to_the_same_weights() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &Path| -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_colswarm"));
        command.current_dir(root()).args([
            "train",
            "--quiet",
            "--d-model",
            "32",
            "--layers",
            "1",
            "--head-size",
            "16",
            "--head-hidden",
            "16",
            "--epochs",
            "4",
            "--batch-size",
            "2",
            "--max-tables",
            "12",
            "--max-table-tokens",
            "96",
            "--max-rows",
            "4",
            "--max-cell-bytes",
            "12",
            "--checkpoint-every",
            "1",
            "--keep-last",
            "100",
            "--seed",
            "9",
            "--train",
            "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train",
            "--out",
            out.to_str().unwrap(),
        ]);
        command
    };
    let whole = dir.path().join("whole");
    assert!(run(&whole).output().unwrap().status.success());

    let killed = dir.path().join("killed");
    let mut child = run(&killed).spawn().unwrap();
    let checkpoints = killed.join("checkpoints");
    let count = || {
        std::fs::read_dir(&checkpoints)
            .map(|d| d.filter(|e| e.is_ok()).count())
            .unwrap_or(0)
    };
    while count() < 2 && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let steps_before_resume = count();
    // Every checkpoint that exists is complete: atomic renames, never half-written.
    for entry in std::fs::read_dir(&checkpoints).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            path.join("state.json").is_file(),
            "{} is incomplete",
            path.display()
        );
        assert!(path.join("model/swarm.json").is_file());
    }
    assert!(run(&killed).output().unwrap().status.success());
    assert!(
        count() > steps_before_resume,
        "the resumed run trained further"
    );

    let last = |run: &Path| {
        let mut all: Vec<PathBuf> = std::fs::read_dir(run.join("checkpoints"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        all.sort();
        all.pop().unwrap()
    };
    for file in ["primary", "cta_head", "cpa_head", "router", "fusion"] {
        let name = format!("model/{file}.safetensors");
        assert_eq!(
            std::fs::read(last(&whole).join(&name)).unwrap(),
            std::fs::read(last(&killed).join(&name)).unwrap(),
            "{name} differs after kill + resume"
        );
    }
}

#[test]
fn train_defaults_are_the_shipped_recipe_and_flags_turn_them_off() {
    let dir = tempfile::tempdir().unwrap();
    let train = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "train",
            "--quiet",
            "--epochs",
            "1",
            "--max-tables",
            "3",
            "--train",
            "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        stdout(&colswarm(&args));
        let json = |path: PathBuf| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
        };
        (
            json(out.join("run.json")),
            json(out.join("best/swarm.json")),
        )
    };
    let shipped = root().join("models/colswarm-small");
    let shipped_swarm: serde_json::Value =
        serde_json::from_slice(&std::fs::read(shipped.join("swarm.json")).unwrap()).unwrap();

    let plain = dir.path().join("plain");
    let (run, swarm) = train(&plain, &[]);
    // The model a plain `train` builds reads tables and has the shape of the shipped model's.
    assert_eq!(
        std::fs::read_to_string(plain.join("best/serialize.json")).unwrap(),
        std::fs::read_to_string(shipped.join("serialize.json")).unwrap()
    );
    for key in ["primary", "d_head_hidden", "column_ngrams", "head_skip"] {
        assert_eq!(swarm["config"][key], shipped_swarm["config"][key], "{key}");
    }
    // ...trained as docs/TRAINING.md's recipe trains it.
    assert_eq!(run["model"]["sigmoid_multi_label"], true);
    assert_eq!(run["optimizer"]["learning_rate"], 5e-3);
    assert_eq!(run["regularization"]["column_dropout"], 0.3);
    assert_eq!(run["loss"]["quantity_negatives"], true);

    let off = dir.path().join("off");
    let (run, swarm) = train(
        &off,
        &[
            "--head-skip",
            "false",
            "--sigmoid-multi-label=false",
            "--quantity-negatives",
            "false",
        ],
    );
    assert!(swarm["config"]["head_skip"].is_null());
    assert_eq!(run["model"]["head_skip"], false);
    assert_eq!(run["model"]["sigmoid_multi_label"], false);
    assert_eq!(run["loss"]["quantity_negatives"], false);
}

#[test]
fn train_average_last_is_the_mean_of_the_last_epoch_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let args = |average: &'static str, keep: &'static str| -> Vec<String> {
        [
            "train",
            "--quiet",
            "--d-model",
            "16",
            "--layers",
            "1",
            "--head-size",
            "16",
            "--head-hidden",
            "16",
            "--ngram-buckets",
            "64",
            "--epochs",
            "3",
            "--patience",
            "3",
            "--batch-size",
            "2",
            "--max-tables",
            "4",
            "--checkpoint-every",
            "1",
            "--keep-last",
            keep,
            "--average-last",
            average,
            "--train",
            "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train",
            "--out",
            run.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    let run_with = |a: Vec<String>| colswarm(&a.iter().map(String::as_str).collect::<Vec<_>>());

    // Refused before training when the checkpoints it needs would not be kept.
    let refused = run_with(args("4", "3"));
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--keep-last 4"));
    assert!(!run.join("checkpoints").exists());

    // A checkpoint every step, 2 steps per epoch (epoch ends at steps 2, 4 and 6): the
    // mid-epoch checkpoints do not push the last two epochs out.
    stdout(&run_with(args("2", "2")));
    let kept: Vec<String> = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(kept, ["step-000000004", "step-000000005", "step-000000006"]);
    let epoch_end = |step: usize| format!("{}/checkpoints/step-{step:09}/model", run.display());
    let reference = dir.path().join("reference");
    stdout(&colswarm(&[
        "average",
        &epoch_end(4),
        &epoch_end(6),
        "--out",
        reference.to_str().unwrap(),
    ]));
    for file in ["primary", "cta_head", "cpa_head", "column_ngrams"] {
        let name = format!("{file}.safetensors");
        assert_eq!(
            std::fs::read(run.join("averaged").join(&name)).unwrap(),
            std::fs::read(reference.join(&name)).unwrap(),
            "{name}"
        );
    }
    // Running the finished command again keeps the average.
    let again = run_with(args("2", "2"));
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("left as it is"));
}

#[test]
fn word_vectors_are_read_trained_and_shipped_with_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.safetensors");
    let words: Vec<String> = ["the", "of", "and", "city", "name", "1", "2"]
        .map(String::from)
        .to_vec();
    let values: Vec<f32> = (0..words.len() * 4)
        .map(|i| (i as f32 * 0.37).sin())
        .collect();
    colswarm_swarm::WordVectors::new(words, values, 4)
        .unwrap()
        .save(&vectors)
        .unwrap();
    let train = |vectors: &Path, out: &Path| {
        colswarm(&[
            "train",
            "--quiet",
            "--d-model",
            "16",
            "--layers",
            "1",
            "--head-size",
            "16",
            "--head-hidden",
            "16",
            "--ngram-buckets",
            "64",
            "--epochs",
            "1",
            "--max-tables",
            "3",
            "--word-vectors",
            vectors.to_str().unwrap(),
            "--table-topic",
            "--train",
            "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let out = dir.path().join("run");
    stdout(&train(&vectors, &out));
    let model = out.join("best");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("swarm.json")).unwrap()).unwrap();
    assert_eq!(manifest["config"]["column_words"]["dim"], 4);
    assert_eq!(manifest["config"]["column_words"]["table_topic"], true);
    assert_eq!(
        manifest["column_words"]["vectors"]["path"],
        "word_vectors.safetensors"
    );
    // The model carries its own copy: it annotates with the original file gone.
    std::fs::remove_file(&vectors).unwrap();
    let inspected = stdout(&colswarm(&["inspect", model.to_str().unwrap()]));
    assert!(
        inspected.contains("word vectors 7 words of dimension 4")
            && inspected.contains("word_vectors.safetensors"),
        "{inspected}"
    );
    let annotated = stdout(&colswarm(&[
        "annotate",
        "--model",
        model.to_str().unwrap(),
        "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv",
    ]));
    assert!(annotated.contains("\"columns\""), "{annotated}");

    // The table's topic comes from word vectors: asking for it without them is refused.
    let refused = colswarm(&[
        "train",
        "--table-topic",
        "--train",
        "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train",
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--word-vectors"));

    // A missing file is an error that names it, before any training.
    let missing = dir.path().join("absent.safetensors");
    let failed = train(&missing, &dir.path().join("other"));
    assert!(!failed.status.success());
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("absent.safetensors"),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
}
