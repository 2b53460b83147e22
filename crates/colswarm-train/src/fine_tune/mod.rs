//! Fine-tuning: a new CTA namespace with a user's own labels on a frozen, trained model.
//!
//! The model reads the labelled tables once; each labelled column's features are its column
//! representation beside the model's own CTA logits ([`colswarm_model::added_features`]), so
//! the new labels build on every type the shipped namespaces know. A linear head is fitted on
//! them (full-batch Adam, L2 on the weights), and beside it a character n-gram classifier on
//! the column's n-gram bag as the model reads it, whose probabilities are mixed into the head's.
//! A held-out slice of the user's tables (a fifth, by a hash of the table's name) chooses the
//! L2 penalty, the number of steps (early stopping on its log-loss), the n-gram reader's share
//! and the namespace's abstention threshold; both are then refitted on every labelled column.
//!
//! The new model directory is the old one plus `namespaces/NAME.safetensors` (and
//! `NAME.ngrams.safetensors`) and the namespace in `labels.json`: every shipped namespace's
//! output is unchanged, bit for bit. It is written in `OUT.partial/` and renamed when complete;
//! the features extracted there are reused when an interrupted run is started again.

mod config;
mod features;
mod fit;
mod ngrams;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::Device;
use colswarm_eval::NgramClassifier;
use colswarm_model::{
    Activation, AddedHead, DatasetFormat, HeadFile, LABELS_FILE, LabelSpace, Model, ModelDir,
    Namespace, NgramFile, NgramWeights, Progress, Task,
};
use colswarm_rwkv::checkpoint::{save_module, write_atomically};
use colswarm_swarm::LabelKind;
use colswarm_swarm::manifest::sha256_file;
use colswarm_tables::{Table, fnv1a};
use serde::{Deserialize, Serialize};

use crate::error::TrainError;
pub use config::FineTuneConfig;
use features::{
    FEATURES_FILE, FEATURES_KEY_FILE, extract, features_key, load_features, save_features,
    standardisation, standardise,
};
use fit::{Fit, abstention_threshold, choose_settings, fit, micro_f1};
use ngrams::{choose_share, fit_reader, reader_probabilities};

/// What [`fine_tune`] did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FineTuneReport {
    /// The namespace added.
    pub namespace: String,
    /// Its labels, in head order.
    pub labels: Vec<String>,
    /// Single- or multi-label (any column with several labels makes it multi-label).
    pub multi_label: bool,
    /// Tables read.
    pub tables: usize,
    /// Labelled columns fitted.
    pub columns: usize,
    /// Labelled columns the model does not read (past its column limit), left out.
    pub columns_skipped: usize,
    /// Labelled columns in the held-out slice (0: too few labels to hold any out).
    pub held_out_columns: usize,
    /// The L2 penalty chosen.
    pub l2: f64,
    /// The Adam steps chosen.
    pub steps: usize,
    /// The n-gram reader's share of the probabilities (0: the head alone).
    pub ngram_share: f32,
    /// Micro-F1 on the held-out slice, of the head fitted without it (`None` without one).
    pub held_out_micro_f1: Option<f64>,
    /// The abstention threshold stored (`None`: never abstains).
    pub abstain_below: Option<f32>,
    /// Labels with fewer than [`FineTuneConfig::min_examples`] columns, with their counts.
    pub rare_labels: Vec<(String, usize)>,
    /// Whether the features came from an interrupted run's cache.
    pub resumed: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Adds the namespace [`FineTuneConfig::namespace`] to the model in `model_dir`, fitted on the
/// labelled columns of `tables` (from [`colswarm_tables::read_labelled_tables`]), and writes
/// the new model directory to `out`.
///
/// # Errors
/// A namespace the model already has, fewer than two labels, an `out` that exists and is not
/// empty; the model's and the file system's errors, naming the file.
pub fn fine_tune(
    model_dir: &Path,
    tables: &[Table],
    out: &Path,
    config: &FineTuneConfig,
) -> Result<FineTuneReport, TrainError> {
    let started = Instant::now();
    let model = Model::load(model_dir, &Device::flex())?;
    check_name(&model, &config.namespace)?;
    check_out(out)?;
    let (labels, multi_label) = label_list(tables)?;

    let staging = partial_dir(out);
    std::fs::create_dir_all(&staging).map_err(|e| io(&staging, e))?;
    let key = features_key(model_dir, tables, &labels)?;
    let (targets, resumed) = match load_features(&staging, &key) {
        Some(targets) => (targets, true),
        None => {
            let targets = extract(&model, tables, &labels, config)?;
            save_features(&staging, &key, &targets)?;
            (targets, false)
        }
    };

    let buckets = model
        .swarm
        .orchestrator
        .column_ngrams()
        .map(|c| c.buckets as usize);
    let (chosen, head, reader) =
        fit_namespace(&targets, labels.len(), multi_label, buckets, config);

    ModelDir::open(model_dir)?.copy_into(&staging)?;
    let added = Added {
        head,
        reader,
        chosen: &chosen,
        labels: &labels,
        multi_label,
    };
    let space = write_namespace(&staging, &model, config, &added)?;
    space.save(&staging.join(LABELS_FILE))?;
    let report = FineTuneReport {
        namespace: config.namespace.clone(),
        rare_labels: rare_labels(&targets.labels, &labels, config.min_examples),
        labels,
        multi_label,
        tables: tables.len(),
        columns: targets.labels.len(),
        columns_skipped: targets.skipped,
        held_out_columns: chosen.held_out_columns,
        l2: chosen.l2,
        steps: chosen.steps,
        ngram_share: chosen.ngram_share,
        held_out_micro_f1: chosen.micro_f1,
        abstain_below: chosen.abstain_below,
        resumed,
        seconds: started.elapsed().as_secs_f64(),
    };
    complete(&staging, out, &report)?;
    Ok(report)
}

/// The held-out slice's choices, then the head (its standardisation set) and the n-gram
/// reader (where the slice gave it a share) fitted on every labelled column.
fn fit_namespace(
    targets: &features::Targets,
    classes: usize,
    multi_label: bool,
    buckets: Option<usize>,
    config: &FineTuneConfig,
) -> (Chosen, AddedHead, Option<NgramClassifier>) {
    let (shift, scale) = standardisation(&targets.features, targets.width);
    let x: Vec<f32> = standardise(&targets.features, &shift, &scale);
    let data = Fit {
        width: targets.width,
        classes,
        multi_label,
    };
    let chosen = choose_on_held_out(&x, targets, &data, buckets, config);
    let mut fitting = Progress::new("fitting", chosen.steps, config.progress);
    let (l2, steps) = (chosen.l2, chosen.steps);
    let head = fit(&x, &targets.labels, &data, l2, steps, config, |step, _| {
        fitting.set(step, "")
    });
    fitting.finish(&format!("l2 {l2}, {steps} steps"));
    let reader = buckets.filter(|_| chosen.ngram_share > 0.0).map(|buckets| {
        let (bags, labels) = (&targets.bags, &targets.labels);
        fit_reader(
            bags,
            labels,
            |_| true,
            buckets,
            classes,
            multi_label,
            config.seed,
        )
    });
    (chosen, head.with_standardisation(&shift, &scale), reader)
}

/// `out` must be new, or an empty folder.
fn check_out(out: &Path) -> Result<(), TrainError> {
    if out.exists()
        && std::fs::read_dir(out)
            .map_err(|e| io(out, e))?
            .next()
            .is_some()
    {
        return Err(TrainError::Config(format!(
            "{} exists and is not empty; give a new --out",
            out.display()
        )));
    }
    Ok(())
}

/// The labels the tables give their columns, sorted, and whether any column has several.
fn label_list(tables: &[Table]) -> Result<(Vec<String>, bool), TrainError> {
    let columns = || tables.iter().flat_map(|t| &t.columns);
    let labels: Vec<String> = columns()
        .flat_map(|c| c.labels.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if labels.len() < 2 {
        return Err(TrainError::Config(format!(
            "fine-tuning needs at least two labels; the labels file gives {}",
            labels.len()
        )));
    }
    Ok((labels, columns().any(|c| c.labels.len() > 1)))
}

/// Labels with fewer than `min` labelled columns, with their counts.
fn rare_labels(columns: &[Vec<usize>], labels: &[String], min: usize) -> Vec<(String, usize)> {
    let mut counts = vec![0usize; labels.len()];
    for &l in columns.iter().flatten() {
        counts[l] += 1;
    }
    labels
        .iter()
        .zip(counts)
        .filter(|&(_, c)| c < min)
        .map(|(l, c)| (l.clone(), c))
        .collect()
}

/// What is added to the model directory.
struct Added<'a> {
    head: AddedHead,
    reader: Option<NgramClassifier>,
    chosen: &'a Chosen,
    labels: &'a [String],
    multi_label: bool,
}

/// Writes the head (and the n-gram reader) into `staging/namespaces/` and returns the model's
/// label space with the new namespace, which names them.
fn write_namespace(
    staging: &Path,
    model: &Model,
    config: &FineTuneConfig,
    added: &Added<'_>,
) -> Result<LabelSpace, TrainError> {
    let folder = staging.join("namespaces");
    std::fs::create_dir_all(&folder).map_err(|e| io(&folder, e))?;
    let saved = |module: &dyn Fn(&Path) -> Result<(), TrainError>, name: &str| {
        let path = format!("namespaces/{}{name}", config.namespace);
        module(&staging.join(&path))?;
        Ok::<_, TrainError>((sha256_file(&staging.join(&path))?, path))
    };
    let (sha256, path) = saved(
        &|file| Ok(save_module(&added.head, HashMap::new(), file)?),
        ".safetensors",
    )?;
    let ngrams = match &added.reader {
        Some(reader) => {
            let (weights, bias) = reader.parts();
            let module = NgramWeights::new(weights, bias, &Device::flex());
            let (sha256, path) = saved(
                &|file| Ok(save_module(&module, HashMap::new(), file)?),
                ".ngrams.safetensors",
            )?;
            Some(NgramFile {
                path,
                sha256,
                share: added.chosen.ngram_share,
            })
        }
        None => None,
    };
    let (kind, activation) = if added.multi_label {
        (LabelKind::MultiLabel, Activation::Sigmoid)
    } else {
        (LabelKind::SingleLabel, Activation::Softmax)
    };
    let mut space = model.space.clone();
    let offset = space.len(Task::Cta);
    let mut namespace = Namespace::new(
        &config.namespace,
        DatasetFormat::Labels,
        kind,
        offset,
        added.labels.to_vec(),
    );
    namespace.activation = activation;
    namespace.abstain_below = added.chosen.abstain_below;
    namespace.head = Some(HeadFile {
        path,
        sha256,
        ngrams,
    });
    space.cta.push(namespace);
    Ok(space)
}

/// Writes the report beside the head, drops the feature cache and renames `staging` to `out`.
fn complete(staging: &Path, out: &Path, report: &FineTuneReport) -> Result<(), TrainError> {
    let path = staging.join(format!("namespaces/{}.json", report.namespace));
    let json = serde_json::to_vec_pretty(report).map_err(|e| TrainError::Config(e.to_string()))?;
    write_atomically(&path, &json)?;
    for cache in [FEATURES_FILE, FEATURES_KEY_FILE] {
        let _ = std::fs::remove_file(staging.join(cache));
    }
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| io(out, e))?;
    }
    std::fs::rename(staging, out).map_err(|e| io(out, e))
}

/// What the held-out slice chose.
struct Chosen {
    l2: f64,
    steps: usize,
    ngram_share: f32,
    abstain_below: Option<f32>,
    micro_f1: Option<f64>,
    held_out_columns: usize,
}

/// The held-out slice (a fifth of the tables by name; of the columns when that holds out too
/// few or too many) chooses the head's L2 penalty and steps, the n-gram reader's share and the
/// abstention threshold; with fewer than ten labelled columns, the defaults.
fn choose_on_held_out(
    x: &[f32],
    targets: &features::Targets,
    data: &Fit,
    buckets: Option<usize>,
    config: &FineTuneConfig,
) -> Chosen {
    let n = targets.labels.len();
    let mut held: Vec<bool> = targets
        .tables
        .iter()
        .map(|t| fnv1a(t.as_bytes()).is_multiple_of(5))
        .collect();
    // Held-out columns: at least two, and at most two in five (few tables hash unevenly).
    let split_ok = |held: &[bool]| {
        let k = held.iter().filter(|&&h| h).count();
        k >= 2 && 5 * k <= 2 * n
    };
    if !split_ok(&held) {
        held = (0..n).map(|i| i % 5 == 4).collect();
    }
    if n < 10 || !split_ok(&held) {
        return Chosen {
            l2: config.l2[config.l2.len() / 2],
            steps: config.max_steps,
            ngram_share: 0.0,
            abstain_below: None,
            micro_f1: None,
            held_out_columns: 0,
        };
    }
    let choice = choose_settings(x, &targets.labels, &held, data, config);
    let gold: Vec<&Vec<usize>> = (0..n)
        .filter(|&i| held[i])
        .map(|i| &targets.labels[i])
        .collect();
    let (ngram_share, probs) = match buckets {
        Some(buckets) => {
            let reader = fit_reader(
                &targets.bags,
                &targets.labels,
                |i| !held[i],
                buckets,
                data.classes,
                data.multi_label,
                config.seed,
            );
            let read: Vec<Vec<f32>> = (0..n)
                .filter(|&i| held[i])
                .map(|i| reader_probabilities(&reader, &targets.bags[i], data.multi_label))
                .collect();
            choose_share(&choice.held_probs, &read, &gold, data.multi_label)
        }
        None => (0.0, choice.held_probs.clone()),
    };
    let abstain_below = if config.abstain {
        abstention_threshold(&probs, &gold, data.classes, data.multi_label)
    } else {
        None
    };
    if config.progress {
        eprintln!("n-gram reader's share: {ngram_share}");
    }
    Chosen {
        l2: choice.l2,
        steps: choice.steps,
        ngram_share,
        abstain_below,
        micro_f1: Some(micro_f1(&probs, &gold, data.multi_label)),
        held_out_columns: gold.len(),
    }
}

fn io(path: &Path, source: std::io::Error) -> TrainError {
    TrainError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where a run to `out` is written before it is complete.
pub fn partial_dir(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    out.with_file_name(format!("{name}.partial"))
}

fn check_name(model: &Model, name: &str) -> Result<(), TrainError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(TrainError::Config(format!(
            "namespace `{name}`: use letters, digits, `-` and `_`"
        )));
    }
    let (cta, cpa) = model.space.positions(name);
    if cta.is_some() || cpa.is_some() {
        let names: Vec<&str> = model
            .space
            .cta
            .iter()
            .chain(&model.space.cpa)
            .map(|n| n.name.as_str())
            .collect();
        return Err(TrainError::Config(format!(
            "the model already has a namespace `{name}` (it has {}); pick another --namespace",
            names.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_tables::{ReadTableOptions, read_labelled_tables};

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn own_types() -> Vec<Table> {
        read_labelled_tables(
            &root().join("datasets/own-types/labels.csv"),
            &root().join("datasets/t2d-webtables/samples"),
            &ReadTableOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn an_interrupted_run_resumes_from_its_features_and_ends_where_a_fresh_one_does() {
        let model_dir = root().join("models/colswarm-small");
        let tables = own_types();
        let config = FineTuneConfig::new("mine");
        let dir = tempfile::tempdir().unwrap();
        let fresh = fine_tune(&model_dir, &tables, &dir.path().join("fresh"), &config).unwrap();
        assert!(!fresh.resumed);
        assert!(!partial_dir(&dir.path().join("fresh")).exists());

        // Interrupted after reading the tables: the staging folder holds their features only.
        let out = dir.path().join("resumed");
        let staging = partial_dir(&out);
        std::fs::create_dir_all(&staging).unwrap();
        let model = Model::load(&model_dir, &Device::flex()).unwrap();
        let labels: Vec<String> = fresh.labels.clone();
        let targets = extract(&model, &tables, &labels, &config).unwrap();
        let key = features_key(&model_dir, &tables, &labels).unwrap();
        save_features(&staging, &key, &targets).unwrap();
        let resumed = fine_tune(&model_dir, &tables, &out, &config).unwrap();
        assert!(resumed.resumed);
        for file in ["namespaces/mine.safetensors", "labels.json"] {
            let read = |d: &Path| std::fs::read(d.join(file)).unwrap();
            assert_eq!(read(&dir.path().join("fresh")), read(&out), "{file}");
        }

        // Features of other tables are not reused.
        let mut changed = tables.clone();
        changed[0].columns[0].labels = vec!["money".into()];
        assert_ne!(features_key(&model_dir, &changed, &labels).unwrap(), key);
    }

    #[test]
    fn a_column_with_two_labels_makes_a_multi_label_namespace_that_annotates() {
        let model_dir = root().join("models/colswarm-small");
        let mut tables = own_types();
        // The world-cities table's `country` column: a region and a place.
        let cities = tables
            .iter()
            .position(|t| t.id.starts_with("77632062"))
            .unwrap();
        tables[cities].columns[2].labels.push("place".into());
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("multi");
        let report = fine_tune(&model_dir, &tables, &out, &FineTuneConfig::new("mine")).unwrap();
        assert!(report.multi_label);
        let model = Model::load(&out, &Device::flex()).unwrap();
        let namespace = model.space.namespace(Task::Cta, "mine").unwrap();
        assert_eq!(namespace.activation, Activation::Sigmoid);
        assert_eq!(namespace.kind, LabelKind::MultiLabel);
        let options = colswarm_model::AnnotateOptions {
            cta_namespaces: vec!["mine".into()],
            abstain: false,
            ..Default::default()
        };
        let annotated = model.annotate(&tables[cities..=cities], &options).unwrap();
        let country = &annotated[0].columns[2].types[0];
        assert_eq!(country.namespace, "mine");
        assert!(!country.labels.is_empty());
        assert!(
            country
                .labels
                .iter()
                .all(|l| (0.0..=1.0).contains(&l.confidence))
        );
    }

    #[test]
    fn a_taken_name_or_an_existing_output_is_refused_before_any_work() {
        let model_dir = root().join("models/colswarm-small");
        let tables = own_types();
        let dir = tempfile::tempdir().unwrap();
        let taken = fine_tune(
            &model_dir,
            &tables,
            &dir.path().join("a"),
            &FineTuneConfig::new("t2d"),
        );
        assert!(
            taken
                .unwrap_err()
                .to_string()
                .contains("already has a namespace `t2d`")
        );
        let bad = fine_tune(
            &model_dir,
            &tables,
            &dir.path().join("b"),
            &FineTuneConfig::new("a b"),
        );
        assert!(bad.unwrap_err().to_string().contains("letters, digits"));
        std::fs::create_dir_all(dir.path().join("c")).unwrap();
        std::fs::write(dir.path().join("c/x"), "keep").unwrap();
        let exists = fine_tune(
            &model_dir,
            &tables,
            &dir.path().join("c"),
            &FineTuneConfig::new("m"),
        );
        assert!(exists.unwrap_err().to_string().contains("not empty"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c/x")).unwrap(),
            "keep"
        );
        assert!(!dir.path().join("a").exists() && !partial_dir(&dir.path().join("a")).exists());
    }
}
