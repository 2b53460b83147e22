//! End-to-end training on a few real T2D tables with a tiny model: exact resume, non-finite
//! losses, and the PARL stage.

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use colswarm_model::SerializeSettings;
use colswarm_rwkv::{RwkvConfig, save_checkpoint};
use colswarm_swarm::manifest::sha256_file;
use colswarm_train::{
    DataSettings, DataSpec, ModelSettings, NonFinitePolicy, OptimizerSettings, ParlConfig,
    ParlOptions, RunSettings, ScheduleChoice, SpecialistSpec, Stopping, TrainConfig, TrainError,
    TrainOptions, TrainSummary, train, train_router,
};

fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets")
}

fn t2d(split: &str) -> DataSpec {
    format!(
        "t2d=t2d:{}#{split}",
        datasets().join("t2d-webtables/t2d.tar.gz").display()
    )
    .parse()
    .unwrap()
}

/// A specialist checkpoint with random weights (its training is not what these tests check).
fn specialist(dir: &Path, name: &str, seed: u64) -> SpecialistSpec {
    let config = RwkvConfig::new(colswarm_tables::VOCAB_SIZE, 32, 1).with_head_size(16);
    let path = dir.join(format!("{name}.safetensors"));
    save_checkpoint(&config.init(seed, &Device::flex()), &config, &path).unwrap();
    SpecialistSpec {
        name: name.into(),
        path,
    }
}

fn tiny(dir: &Path) -> TrainConfig {
    TrainConfig {
        model: ModelSettings {
            d_model: 32,
            n_layers: 1,
            head_size: 16,
            d_head_hidden: 16,
            specialists: vec![specialist(dir, "a", 7)],
            ..ModelSettings::default()
        },
        data: DataSettings {
            train: vec![t2d("train")],
            dev: vec![t2d("dev")],
            serialize: SerializeSettings {
                max_table_tokens: 96,
                max_rows: 4,
                max_cell_bytes: 12,
                ..SerializeSettings::default()
            },
            max_tables: 9,
        },
        optimizer: OptimizerSettings {
            batch_size: 3,
            ..OptimizerSettings::default()
        },
        stopping: Stopping {
            epochs: 2,
            ..Stopping::default()
        },
        run: RunSettings {
            checkpoint_every: 2,
            keep_last: 10,
            log_every: 1,
            seed: 5,
            ..RunSettings::default()
        },
        ..TrainConfig::default()
    }
}

/// [`tiny`] cut to one epoch of three tables.
fn quick(dir: &Path) -> TrainConfig {
    let mut config = tiny(dir);
    config.stopping.epochs = 1;
    config.data.max_tables = 3;
    config
}

fn last_checkpoint(run: &Path) -> PathBuf {
    let mut all: Vec<PathBuf> = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    all.sort();
    all.pop().unwrap()
}

/// The log without wall-clock fields.
fn log_without_times(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            // Times, and the counts of what this process read and did (a resumed epoch counts
            // its remaining batches only).
            for key in [
                "seconds",
                "train_seconds",
                "train_columns",
                "train_tokens",
                "train_steps",
                "read_backs",
            ] {
                v.as_object_mut().unwrap().remove(key);
            }
            v
        })
        .collect()
}

#[test]
fn an_interrupted_run_resumes_to_the_same_weights() {
    let dir = tempfile::tempdir().unwrap();
    // With column dropout, whose masks a resumed run must draw again identically.
    let mut config = tiny(dir.path());
    config.regularization.column_dropout = 0.2;
    let quiet = TrainOptions::default();
    let whole = dir.path().join("whole");
    let summary = train(&config, &whole, &quiet).unwrap();
    assert!(summary.finished);
    assert_eq!(summary.epochs, 2);

    let split = dir.path().join("split");
    for stop in [3, 2] {
        let partial = train(
            &config,
            &split,
            &TrainOptions {
                stop_after_steps: Some(stop),
                ..TrainOptions::default()
            },
        )
        .unwrap();
        assert!(!partial.finished);
    }
    let resumed = train(&config, &split, &quiet).unwrap();
    assert!(resumed.finished);
    assert_eq!(resumed.steps, summary.steps);

    // Equal weights after steps taken *after* each resume also show that Adam's moments were
    // restored (the optimizer file itself lists parameters in hash order, so its bytes vary).
    let (a, b) = (last_checkpoint(&whole), last_checkpoint(&split));
    for file in [
        "model/primary.safetensors",
        "model/cta_head.safetensors",
        "model/cpa_head.safetensors",
        "model/fusion.safetensors",
        "model/router.safetensors",
        "model/column_ngrams.safetensors",
    ] {
        assert_eq!(
            sha256_file(&a.join(file)).unwrap(),
            sha256_file(&b.join(file)).unwrap(),
            "{file} differs between the uninterrupted and the resumed run"
        );
    }
    assert_eq!(log_without_times(&whole), log_without_times(&split));
    // The best model is a loadable model directory.
    let model = colswarm_model::Model::load(&summary.model_dir, &Device::flex()).unwrap();
    assert_eq!(model.specialist_names, ["a"]);
}

/// A run with the default options (no progress lines, no stop).
fn train_quietly(config: &TrainConfig, run: &Path) -> Result<TrainSummary, TrainError> {
    train(config, run, &TrainOptions::default())
}

/// The loss of the first logged step of a run.
fn first_loss(run: &Path) -> f64 {
    let log = log_without_times(run);
    let step = log.iter().find(|v| v["event"] == "step").unwrap();
    step["loss"].as_f64().unwrap()
}

#[test]
fn a_run_starts_from_a_saved_model_and_adds_an_ngram_embedding() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tiny(dir.path());
    config.stopping.epochs = 3;
    config.model.ngram_buckets = 0;
    config.optimizer.learning_rate = 1e-2;
    let first = dir.path().join("first");
    let summary = train_quietly(&config, &first).unwrap();

    // The same data from the trained model (plus a zero n-gram embedding) and from scratch:
    // the same first batch costs less from the trained model.
    config.stopping.epochs = 1;
    config.model.ngram_buckets = 64;
    let scratch = dir.path().join("scratch");
    train_quietly(&config, &scratch).unwrap();
    config.model.init_from = Some(summary.model_dir.clone());
    let warm = dir.path().join("warm");
    let warm_summary = train_quietly(&config, &warm).unwrap();
    assert!(
        first_loss(&warm) < first_loss(&scratch),
        "warm start {} vs scratch {}",
        first_loss(&warm),
        first_loss(&scratch)
    );
    let model = colswarm_model::Model::load(&warm_summary.model_dir, &Device::flex()).unwrap();
    let ngrams = model.swarm.orchestrator.ngrams.as_ref().unwrap();
    assert_eq!(ngrams.buckets(), 64);

    // Other specialists, or another architecture, are refused, naming the model.
    let specialists = std::mem::take(&mut config.model.specialists);
    let err = train_quietly(&config, &dir.path().join("alone")).unwrap_err();
    assert!(err.to_string().contains("state shapes"), "{err}");
    config.model.specialists = specialists;
    config.model.d_model = 64;
    let err = train_quietly(&config, &dir.path().join("other")).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("cannot start from") && message.contains("differs from this run's"),
        "{message}"
    );
}

#[test]
fn a_branch_continues_a_saved_model_on_some_of_its_labels() {
    let dir = tempfile::tempdir().unwrap();
    let gittables: DataSpec = format!(
        "gittables=sato-cv:{}",
        datasets()
            .join("gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_0.csv.gz")
            .display()
    )
    .parse()
    .unwrap();
    // The parent reads T2D's types and relations, GitTables' types and WikiTables' (several
    // per column: a multi-label head).
    let mut config = tiny(dir.path());
    config.stopping.epochs = 2;
    config.optimizer.learning_rate = 1e-2;
    config.data.train.push(gittables.clone());
    let wikitables = datasets().join("wikitables-turl-subset/dev_wikitables_subset_2.csv.gz");
    let wikitables = format!("wikitables=turl-csv:{}", wikitables.display());
    config.data.train.push(wikitables.parse().unwrap());
    let parent = train_quietly(&config, &dir.path().join("parent")).unwrap();
    let parent_model = colswarm_model::Model::load(&parent.model_dir, &Device::flex()).unwrap();

    // The branch reads GitTables alone (one type per column, no relations): it keeps the
    // parent's outputs for those labels and starts from its answers, below a fresh start on
    // the same batch.
    let mut branch_config = tiny(dir.path());
    branch_config.stopping.epochs = 1;
    branch_config.optimizer.learning_rate = 1e-2;
    branch_config.data.train = vec![gittables];
    branch_config.data.dev = vec![];
    let scratch = dir.path().join("scratch");
    train_quietly(&branch_config, &scratch).unwrap();
    branch_config.model.init_from = Some(parent.model_dir.clone());
    let branch = dir.path().join("branch");
    let summary = train_quietly(&branch_config, &branch).unwrap();
    let model = colswarm_model::Model::load(&summary.model_dir, &Device::flex()).unwrap();
    use colswarm_model::Task;
    assert!(model.space.flat(Task::Cpa).is_empty());
    assert!(model.space.flat(Task::Cta).len() < parent_model.space.flat(Task::Cta).len());
    assert!(
        first_loss(&branch) < first_loss(&scratch),
        "branch {} vs scratch {}",
        first_loss(&branch),
        first_loss(&scratch)
    );

    // The other way round, a wider run starts from the branch: the labels it has no output
    // for (T2D's, WikiTables') start fresh beside the ones it keeps.
    config.model.init_from = Some(summary.model_dir.clone());
    config.stopping.epochs = 1;
    let wider = train_quietly(&config, &dir.path().join("wider")).unwrap();
    let wider = colswarm_model::Model::load(&wider.model_dir, &Device::flex()).unwrap();
    assert_eq!(
        wider.space.flat(Task::Cta),
        parent_model.space.flat(Task::Cta)
    );
    assert_eq!(
        wider.space.flat(Task::Cpa),
        parent_model.space.flat(Task::Cpa)
    );
}

#[test]
fn neighbour_ngrams_are_saved_with_the_model_and_need_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(dir.path());
    config.model.neighbour_ngrams = true;
    let run = dir.path().join("neighbours");
    train_quietly(&config, &run).unwrap();
    let model = colswarm_model::Model::load(&run.join("best"), &Device::flex()).unwrap();
    assert!(model.swarm.orchestrator.column_ngrams().unwrap().neighbours);

    config.model.ngram_buckets = 0;
    let err = train_quietly(&config, &dir.path().join("none")).unwrap_err();
    assert!(err.to_string().contains("neighbour n-grams"), "{err}");
}

#[test]
fn ngram_cells_are_saved_with_the_model_and_must_be_positive() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(dir.path());
    config.model.ngram_cells = 3;
    let run = dir.path().join("three");
    train_quietly(&config, &run).unwrap();
    let model = colswarm_model::Model::load(&run.join("best"), &Device::flex()).unwrap();
    assert_eq!(
        model.swarm.orchestrator.column_ngrams().unwrap().max_cells,
        3
    );
    // The featurizer the model is read with takes its n-grams from the first 3 cells.
    let featurizer = colswarm_model::featurizer(&model.swarm.orchestrator);
    assert_eq!(featurizer.ngrams.unwrap().max_cells, 3);

    config.model.ngram_cells = 0;
    let err = train_quietly(&config, &dir.path().join("none")).unwrap_err();
    assert!(err.to_string().contains("model.ngram_cells = 0"), "{err}");
}

#[test]
fn two_training_sets_of_one_name_train_one_namespace_on_the_union_of_their_labels() {
    use colswarm_model::Task;

    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(dir.path());
    config.data.dev = vec![];
    // T2D's gold tables and, in the same namespace, columns of another format (as silver
    // columns renamed into T2D's labels would be): one type per column in both.
    let other: DataSpec = format!(
        "t2d=sato-cv:{}",
        datasets()
            .join("gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_0.csv.gz")
            .display()
    )
    .parse()
    .unwrap();
    let alone = train_quietly(&config, &dir.path().join("alone")).unwrap();
    config.data.train.push(other);
    let both = train_quietly(&config, &dir.path().join("both")).unwrap();
    let load = |dir: &Path| {
        colswarm_model::Model::load(dir, &Device::flex())
            .unwrap()
            .space
    };
    let (alone, both) = (load(&alone.model_dir), load(&both.model_dir));
    let (gold, merged) = (
        alone.namespace(Task::Cta, "t2d").unwrap(),
        both.namespace(Task::Cta, "t2d").unwrap(),
    );
    // One namespace, the first set's format, its labels first and the other set's after.
    assert_eq!(both.cta.len(), 1);
    assert_eq!(merged.format, gold.format);
    assert_eq!(merged.labels[..gold.labels.len()], gold.labels[..]);
    assert!(
        merged.labels.len() > gold.labels.len(),
        "{:?}",
        merged.labels
    );

    // A set that reads several types per column cannot share it: both sets are named.
    let wikitables = datasets().join("wikitables-turl-subset/dev_wikitables_subset_2.csv.gz");
    config.data.train[1] = format!("t2d=turl-csv:{}", wikitables.display())
        .parse()
        .unwrap();
    let err = train_quietly(&config, &dir.path().join("mixed"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("share the namespace `t2d`")
            && err.contains("turl-csv:")
            && err.contains("t2d:"),
        "{err}"
    );
}

#[test]
fn weight_decay_shrinks_the_weights_and_must_be_finite() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(dir.path());
    config.model.ngram_buckets = 0;
    let norm = |run: &Path| {
        let model = colswarm_model::Model::load(&run.join("best"), &Device::flex()).unwrap();
        let weight = model.swarm.orchestrator.cta.hidden.weight.val();
        weight.powf_scalar(2.0).sum().into_scalar::<f32>()
    };
    let plain = dir.path().join("plain");
    train_quietly(&config, &plain).unwrap();
    // lr 2e-3 × decay 50 shrinks every weight by 10% per step.
    config.optimizer.weight_decay = 50.0;
    let decayed = dir.path().join("decayed");
    train_quietly(&config, &decayed).unwrap();
    assert!(
        norm(&decayed) < 0.9 * norm(&plain),
        "{} vs {}",
        norm(&decayed),
        norm(&plain)
    );
    config.optimizer.weight_decay = f32::NAN;
    let err = train_quietly(&config, &dir.path().join("nan")).unwrap_err();
    assert!(err.to_string().contains("weight decay NaN"), "{err}");
}

/// The first logged loss of a quick run, and of the same run with `change` applied.
fn first_losses_without_and_with(change: impl Fn(&mut TrainConfig)) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(dir.path());
    let plain = dir.path().join("plain");
    train_quietly(&config, &plain).unwrap();
    change(&mut config);
    let changed = dir.path().join("changed");
    train_quietly(&config, &changed).unwrap();
    (first_loss(&plain), first_loss(&changed))
}

#[test]
fn column_dropout_changes_the_training_loss() {
    // Same initial weights and batches, so the first losses differ only by the masks.
    let (plain, dropped) = first_losses_without_and_with(|c| c.regularization.column_dropout = 0.5);
    assert_ne!(plain, dropped);
}

#[test]
fn a_different_configuration_is_not_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(dir.path());
    let run = dir.path().join("run");
    train_quietly(&config, &run).unwrap();
    config.optimizer.learning_rate *= 2.0;
    let err = train_quietly(&config, &run).unwrap_err();
    assert!(err.to_string().contains("different configuration"), "{err}");
}

#[test]
fn a_non_finite_loss_stops_naming_the_step_or_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tiny(dir.path());
    // Adam's steps are about the learning rate in size: this one overflows the weights.
    config.optimizer.learning_rate = 1e30;
    config.optimizer.grad_clip = None;
    config.model.specialists.clear();
    let err = train_quietly(&config, &dir.path().join("stop")).unwrap_err();
    match err {
        TrainError::NonFinite { step, .. } => assert!(step >= 1, "step {step}"),
        other => panic!("expected a non-finite loss error, got {other}"),
    }
    config.run.on_non_finite = NonFinitePolicy::Skip;
    config.stopping.epochs = 1;
    let run = dir.path().join("skip");
    let summary = train_quietly(&config, &run).unwrap();
    assert!(summary.finished);
    let skips = log_without_times(&run)
        .into_iter()
        .filter(|v| v["event"] == "skip")
        .count();
    assert!(skips >= 1);
}

#[test]
fn parl_stage_logs_every_reward_term_and_keeps_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tiny(dir.path());
    config.model.specialists = vec![
        specialist(dir.path(), "a", 7),
        specialist(dir.path(), "b", 8),
    ];
    config.stopping.epochs = 1;
    config.data.max_tables = 6;
    let supervised = train_quietly(&config, &dir.path().join("sup")).unwrap();
    let parl = ParlConfig {
        model: supervised.model_dir.clone(),
        train: vec![t2d("train")],
        dev: vec![t2d("dev")],
        steps: 3,
        rollouts: 2,
        eval_every: 3,
        schedule: ScheduleChoice::Aegir,
        optimizer: OptimizerSettings {
            batch_size: 2,
            ..ParlConfig::default().optimizer
        },
        run: RunSettings {
            seed: 1,
            ..ParlConfig::default().run
        },
        ..ParlConfig::default()
    };
    let run = dir.path().join("parl");
    let summary = train_router(&parl, &run, &ParlOptions::default()).unwrap();
    assert_eq!(summary.steps, 3);
    let log = log_without_times(&run);
    let steps: Vec<_> = log.iter().filter(|v| v["event"] == "step").collect();
    assert_eq!(steps.len(), 3);
    for key in [
        "reward",
        "r_perf",
        "r_parallel",
        "r_finish",
        "lambda_parallel",
        "lambda_finish",
        "gate_entropy",
        "critical_steps",
        "serial_steps",
    ] {
        assert!(steps[0][key].is_number(), "{key} missing: {}", steps[0]);
    }
    assert_eq!(steps[0]["activation_rate"].as_array().unwrap().len(), 2);
    // Aegir's schedule at p = 0: λ = (0.3, 0.1).
    assert_eq!(steps[0]["lambda_parallel"], 0.3);
    assert!(log.iter().any(|v| v["event"] == "dev"));
    colswarm_model::Model::load(&summary.model_dir, &Device::flex()).unwrap();
    // The saved model carries its specialists: every file it names lies inside it.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(summary.model_dir.join("swarm.json")).unwrap())
            .unwrap();
    for specialist in manifest["specialists"].as_array().unwrap() {
        let path = specialist["checkpoint"]["path"].as_str().unwrap();
        assert!(path.starts_with("specialists/"), "{path}");
        assert!(summary.model_dir.join(path).is_file());
    }
}

/// The float values of one tensor of a model directory's component file.
fn tensor_values(file: &Path, name: &str) -> Vec<f32> {
    let bytes = std::fs::read(file).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let view = tensors.tensor(name).unwrap();
    view.data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[test]
fn a_runs_checkpoints_average_into_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tiny(dir.path());
    config.model.ngram_buckets = 16;
    config.optimizer.learning_rate = 1e-2;
    let run = dir.path().join("run");
    train_quietly(&config, &run).unwrap();
    let mut checkpoints: Vec<PathBuf> = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path().join("model"))
        .collect();
    checkpoints.sort();
    let (a, b) = (&checkpoints[0], checkpoints.last().unwrap());
    let (file, name) = ("column_ngrams.safetensors", "weight");
    let (wa, wb) = (
        tensor_values(&a.join(file), name),
        tensor_values(&b.join(file), name),
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("swarm.json")).unwrap()).unwrap();
    let d_model = manifest["config"]["primary"]["d_model"].as_u64().unwrap() as usize;
    assert_eq!(wa.len(), 16 * d_model, "16 buckets × d_model");
    assert_ne!(wa, wb, "training moved the n-gram embedding");

    let out = dir.path().join("average");
    colswarm_train::average_model_dirs(&[a.clone(), b.clone()], &out).unwrap();
    let averaged = tensor_values(&out.join(file), name);
    for ((m, x), y) in averaged.iter().zip(&wa).zip(&wb) {
        assert!((m - (x + y) / 2.0).abs() <= 1e-6, "{m} vs {x}, {y}");
    }
    // The frozen specialist is the run's, untouched, and copied in: the averaged directory
    // loads without the checkpoints it was made from.
    let averaged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("swarm.json")).unwrap()).unwrap();
    let recorded = &manifest["specialists"][0]["checkpoint"]["sha256"];
    assert_eq!(
        averaged["specialists"][0]["checkpoint"]["sha256"],
        *recorded
    );
    assert_eq!(
        averaged["specialists"][0]["checkpoint"]["path"],
        "specialists/a.safetensors"
    );
    let kept = dir.path().join("kept");
    std::fs::rename(run.join("checkpoints"), &kept).unwrap();
    let model = colswarm_model::Model::load(&out, &Device::flex()).unwrap();
    assert_eq!(model.specialist_names, vec!["a".to_string()]);
    std::fs::rename(&kept, run.join("checkpoints")).unwrap();

    // Never overwritten; a model of another run configuration is refused, naming it.
    let again = colswarm_train::average_model_dirs(&[a.clone(), b.clone()], &out);
    assert!(again.unwrap_err().to_string().contains("already exists"));
    config.model.ngram_buckets = 8;
    config.stopping.epochs = 1;
    let other = dir.path().join("other");
    let summary = train_quietly(&config, &other).unwrap();
    let err = colswarm_train::average_model_dirs(
        &[a.clone(), summary.model_dir.clone()],
        &dir.path().join("mixed"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("cannot be averaged") && err.contains("another model configuration"),
        "{err}"
    );
}

/// Trained beside T2D's tables, whose columns of numbers are negatives for it, the WikiTables
/// namespace (entity types only) gives a column of populations a far lower best probability
/// than the same run without quantity negatives.
#[test]
fn quantity_negatives_teach_an_entity_namespace_that_numbers_have_no_type() {
    let table = colswarm_tables::Table::from_rows(
        "cities",
        Some(vec!["city".into(), "population".into()]),
        [
            ("Paris", "2140526"),
            ("Lyon", "513275"),
            ("Berlin", "3644826"),
        ]
        .map(|(city, population)| vec![city.to_string(), population.to_string()])
        .to_vec(),
    );
    let best_wikitables_probability = |negatives: bool| -> f32 {
        let dir = tempfile::tempdir().unwrap();
        let mut config = tiny(dir.path());
        config.model.specialists.clear();
        let wikitables =
            datasets().join("wikitables-turl-subset/train_wikitables_subset_20.csv.gz");
        config.data.train = vec![
            format!("wikitables=turl-csv:{}", wikitables.display())
                .parse()
                .unwrap(),
            t2d("train"),
        ];
        config.data.dev.clear();
        config.data.max_tables = 30;
        config.loss.quantity_negatives = negatives;
        config.stopping.epochs = 6;
        let summary = train_quietly(&config, &dir.path().join("run")).unwrap();
        let annotator = colswarm_model::Annotator::builder(&summary.model_dir)
            .abstain(false)
            .build()
            .unwrap();
        let annotation = annotator.annotate(&table).unwrap();
        let types = &annotation.columns[1].types;
        let wikitables = types.iter().find(|t| t.namespace == "wikitables").unwrap();
        wikitables.top_k[0].confidence
    };
    let (with, without) = (
        best_wikitables_probability(true),
        best_wikitables_probability(false),
    );
    assert!(
        with < 0.5 * without,
        "with negatives {with}, without {without}"
    );
}
