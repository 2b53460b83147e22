//! `colswarm train`: resuming a killed run, the defaults, the shipped recipe file, averaging
//! the last epochs, word vectors.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use colswarm_model::SerializeSettings;
use colswarm_swarm::FusionMode;
use colswarm_train::{
    DataSettings, LossSettings, ModelSettings, OptimizerSettings, Recipe, Regularization,
    RunSettings, SpecialistSpec, Stopping, TrainConfig, TrainOptions, average_last_epochs, train,
};
use common::{colswarm, file_contents, root, stdout};

#[test]
fn a_killed_training_resumes_to_the_same_weights() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &Path| -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_colswarm"));
        command.current_dir(root()).args([
            "train",
            "--quiet",
            "--set",
            "model.d_model=32",
            "--set",
            "model.n_layers=1",
            "--set",
            "model.head_size=16",
            "--set",
            "model.d_head_hidden=16",
            "--epochs",
            "4",
            "--set",
            "optimizer.batch_size=2",
            "--max-tables",
            "12",
            "--set",
            "data.serialize.max_table_tokens=96",
            "--set",
            "data.serialize.max_rows=4",
            "--set",
            "data.serialize.max_cell_bytes=12",
            "--set",
            "run.checkpoint_every=1",
            "--set",
            "run.keep_last=100",
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
    // Every weight file (without specialists there is no router or fusion file).
    let weights = |run: &Path| {
        file_contents(&last(run).join("model"), |p| {
            p.extension().is_some_and(|e| e == "safetensors")
        })
    };
    let (a, b) = (weights(&whole), weights(&killed));
    assert!(a.iter().any(|(name, _)| name == "primary.safetensors"));
    assert_eq!(a.len(), b.len());
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name} differs after kill + resume");
    }
}

#[test]
fn train_defaults_have_the_shipped_shape_and_set_turns_them_off() {
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
            "--set",
            "model.head_skip=false",
            "--set",
            "model.sigmoid_multi_label=false",
            "--set",
            "loss.quantity_negatives=false",
        ],
    );
    assert!(swarm["config"]["head_skip"].is_null());
    assert_eq!(run["model"]["head_skip"], false);
    assert_eq!(run["model"]["sigmoid_multi_label"], false);
    assert_eq!(run["loss"]["quantity_negatives"], false);
}

/// The shipped recipe as `colswarm_train` spells it out: every setting of the command that
/// trained the shipped model before its recipe was a file (docs/TRAINING.md), on `train`.
fn shipped_recipe_in_code(train: Vec<String>, max_tables: usize, epochs: usize) -> TrainConfig {
    let at = |path: &str| root().join(path);
    let specialist = |name: &str| SpecialistSpec {
        name: name.to_string(),
        path: at(&format!("models/specialists/{name}.safetensors")),
    };
    TrainConfig {
        model: ModelSettings {
            d_model: 64,
            n_layers: 2,
            head_size: 32,
            d_head_hidden: 128,
            specialists: ["wikitables", "gittables", "t2d"].map(specialist).to_vec(),
            fusion: FusionMode::WeightedSum,
            ngram_buckets: 16384,
            ngram_cells: 20,
            neighbour_ngrams: false,
            value_stats: false,
            head_skip: true,
            column_fusion: false,
            word_vectors: Some(at("models/colswarm-small/word_vectors.safetensors")),
            table_topic: true,
            sigmoid_multi_label: true,
            hierarchy_closure: false,
            init_from: None,
        },
        data: DataSettings {
            train: train.iter().map(|s| s.parse().unwrap()).collect(),
            dev: Vec::new(),
            max_tables,
            serialize: SerializeSettings {
                max_table_tokens: 128,
                max_rows: 8,
                max_cell_bytes: 24,
                query_cells: 0,
                query_header_bytes: 0,
                query_cell_bytes: 16,
                ..SerializeSettings::default()
            },
        },
        optimizer: OptimizerSettings {
            batch_size: 8,
            learning_rate: 5e-3,
            ..OptimizerSettings::default()
        },
        loss: LossSettings {
            cpa_weight: 1.0,
            quantity_negatives: true,
        },
        regularization: Regularization {
            column_dropout: 0.3,
        },
        stopping: Stopping {
            epochs,
            patience: 10,
        },
        run: RunSettings {
            seed: 12,
            keep_last: 10,
            ..RunSettings::default()
        },
    }
}

#[test]
fn the_shipped_recipe_file_trains_what_its_settings_in_code_train() {
    let dir = tempfile::tempdir().unwrap();
    let data = [
        "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz",
        "gittables=sato-cv:datasets/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_0.csv.gz",
    ];
    let from_file = dir.path().join("file");
    stdout(&colswarm(&[
        "train",
        "--quiet",
        "--recipe",
        "recipes/colswarm-small.toml",
        "--train",
        data[0],
        "--train",
        data[1],
        "--max-tables",
        "6",
        "--epochs",
        "2",
        "--set",
        "averaging.last_epochs=2",
        "--out",
        from_file.to_str().unwrap(),
    ]));

    let in_code = dir.path().join("code");
    let absolute = data.map(|spec| {
        let (head, path) = spec.split_once(':').unwrap();
        format!("{head}:{}", root().join(path).display())
    });
    let config = shipped_recipe_in_code(absolute.to_vec(), 6, 2);
    let summary = train(&config, &in_code, &TrainOptions::default()).unwrap();
    assert!(summary.finished);
    average_last_epochs(&in_code, 2, &in_code.join("averaged")).unwrap();

    for model in ["best", "averaged"] {
        let files = |run: &Path| file_contents(&run.join(model), |_| true);
        let (file, code) = (files(&from_file), files(&in_code));
        assert!(file.len() >= 10, "{model}: {} files", file.len());
        let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&file), names(&code), "{model}");
        for ((name, a), (_, b)) in file.iter().zip(&code) {
            assert!(a == b, "{model}/{name} differs");
        }
    }

    // `--print` shows the file's settings with the command line's changes.
    let printed = stdout(&colswarm(&[
        "train",
        "--recipe",
        "recipes/colswarm-small.toml",
        "--epochs",
        "3",
        "--set",
        "model.d_model=32",
        "--print",
    ]));
    let mut expected = Recipe::read(&root().join("recipes/colswarm-small.toml")).unwrap();
    expected.train.stopping.epochs = 3;
    expected.train.model.d_model = 32;
    assert_eq!(Recipe::parse(&printed, "printed").unwrap(), expected);
    assert_eq!(expected.average_last, 6);

    // A misspelt setting stops the command before it reads any data, naming the setting.
    let refused = colswarm(&["train", "--set", "model.d_modle=32", "--print"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("unknown setting `model.d_modle`"),
        "{stderr}"
    );

    // Settings that must fit together may come in any order: they are checked once all are in.
    let printed = stdout(&colswarm(&[
        "train",
        "--set",
        "averaging.last_epochs=12",
        "--set",
        "run.keep_last=12",
        "--print",
    ]));
    let recipe = Recipe::parse(&printed, "printed").unwrap();
    assert_eq!((recipe.average_last, recipe.train.run.keep_last), (12, 12));
}

#[test]
fn train_average_last_is_the_mean_of_the_last_epoch_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    // The number of epochs averaged is checked against the checkpoints kept once every
    // `--set` is in.
    let args = |keep: &'static str, average: &'static str| -> Vec<String> {
        [
            "train",
            "--quiet",
            "--set",
            "model.d_model=16",
            "--set",
            "model.n_layers=1",
            "--set",
            "model.head_size=16",
            "--set",
            "model.d_head_hidden=16",
            "--set",
            "model.ngram_buckets=64",
            "--epochs",
            "3",
            "--set",
            "stopping.patience=3",
            "--set",
            "optimizer.batch_size=2",
            "--max-tables",
            "4",
            "--set",
            "run.checkpoint_every=1",
            "--set",
            keep,
            "--set",
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
    let refused = run_with(args("run.keep_last=3", "averaging.last_epochs=4"));
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("run.keep_last ≥ 4"), "{stderr}");
    assert!(!run.join("checkpoints").exists());

    // A checkpoint every step, 2 steps per epoch (epoch ends at steps 2, 4 and 6): the
    // mid-epoch checkpoints do not push the last two epochs out.
    stdout(&run_with(args(
        "run.keep_last=2",
        "averaging.last_epochs=2",
    )));
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
    let again = run_with(args("run.keep_last=2", "averaging.last_epochs=2"));
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
            "--set",
            "model.d_model=16",
            "--set",
            "model.n_layers=1",
            "--set",
            "model.head_size=16",
            "--set",
            "model.d_head_hidden=16",
            "--set",
            "model.ngram_buckets=64",
            "--epochs",
            "1",
            "--max-tables",
            "3",
            "--set",
            &format!("model.word_vectors={}", vectors.display()),
            "--set",
            "model.table_topic=true",
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
        "--set",
        "model.table_topic=true",
        "--train",
        "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train",
        "--out",
        dir.path().join("topic").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("model.word_vectors"), "{stderr}");

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
