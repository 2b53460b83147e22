//! The supervised stage's loop: epochs of steps, dev evaluation after each, early stopping,
//! checkpoints, and resuming where a run stopped.

use std::path::Path;
use std::sync::Arc;

use burn::tensor::Device;
use colswarm_model::{Example, LabelSpace, Task};
use colswarm_swarm::{
    ColumnHead, FrozenSpecialist, Orchestrator, OrchestratorConfig, StateShape, Swarm, WordVectors,
};

use super::config::{
    SpecialistSpec, Stopping, TrainConfig, TrainOptions, TrainSummary, orchestrator_config,
    primary_config,
};
use super::data::{RunData, load_run_data};
use super::loss::TargetCounts;
use super::step::{
    DropoutDraw, ShardInput, shard_routing_rng, shard_step, specialists_on, sum_parts,
};
use crate::data_parallel::{Shard, data_parallel_grads, shard_ranges};
use crate::error::TrainError;
use crate::param_ids::renumber;
use crate::run::{
    Checkpoints, Computed, Driver, Evaluation, Log, ModelParts, ROUTING_STREAM, Retention, RunDir,
    RunState, Schedule, Stage, Trained, build_optimizer, check_optimizer, dev_evaluation,
    dev_reports, epoch_order, resume, rng_for,
};

// The loading of a specialist spec is behaviour, so it lives here rather than with the
// configuration.
impl SpecialistSpec {
    /// Loads the specialist (its weights on `device` without autodiff).
    pub fn load(&self, device: &Device) -> Result<FrozenSpecialist, TrainError> {
        let file = if self.path.is_dir() {
            self.path.join("primary.safetensors")
        } else {
            self.path.clone()
        };
        let loaded = FrozenSpecialist::load(&self.name, &file, device)?;
        // Dropping the source path makes saved models carry a copy: they stay self-contained.
        Ok(FrozenSpecialist::from_model(
            &self.name,
            loaded.model().clone(),
            loaded.config().clone(),
        ))
    }
}

/// Checks what can be checked before reading data.
fn check(config: &TrainConfig) -> Result<(), TrainError> {
    let fail = |m: String| Err(TrainError::Config(m));
    let data = &config.data;
    if data.train.is_empty() {
        return fail("no training set (--train NAME=FORMAT:PATH)".into());
    }
    if config.stopping.epochs == 0 {
        return fail("epochs must be at least 1".into());
    }
    check_optimizer(&config.optimizer)?;
    // 2^24 buckets of d_model 128 is 8 GiB of weights: anything larger is a typo.
    if config.model.ngram_buckets > 1 << 24 {
        return fail(format!(
            "{} n-gram buckets: at most 2^24 = 16777216",
            config.model.ngram_buckets
        ));
    }
    if config.model.ngram_cells == 0 {
        return fail("model.ngram_cells = 0: a column's n-gram bag needs at least one cell".into());
    }
    if config.model.table_topic && config.model.word_vectors.is_none() {
        return fail(
            "model.table_topic is the mean of a table's word vectors: it needs \
             model.word_vectors"
                .into(),
        );
    }
    if config.model.neighbour_ngrams && config.model.ngram_buckets == 0 {
        return fail(
            "neighbour n-grams join the column n-gram bags: they need n-gram buckets".into(),
        );
    }
    if config.model.value_stats && config.model.ngram_buckets == 0 {
        return fail(
            "value statistics join the column n-gram bags: they need n-gram buckets".into(),
        );
    }
    let dropout = config.regularization.column_dropout;
    if !(0.0..1.0).contains(&dropout) {
        return fail(format!(
            "column dropout {dropout} is not a probability in [0, 1)"
        ));
    }
    let cpa_weight = config.loss.cpa_weight;
    if !(cpa_weight.is_finite() && cpa_weight >= 0.0) {
        return fail(format!(
            "CPA loss weight {cpa_weight} is not a finite number >= 0"
        ));
    }
    primary_config(&config.model)
        .validate()
        .map_err(|e| TrainError::Config(e.to_string()))?;
    for dev in &data.dev {
        if !data.train.iter().any(|t| t.namespace == dev.namespace) {
            return fail(format!(
                "dev set `{}` has no training set of the same name",
                dev.namespace
            ));
        }
    }
    Ok(())
}

/// Whether a run directory written with `stored` can be resumed under `config`: only the
/// stopping rules may change.
fn resumable(config: &TrainConfig, stored: &TrainConfig) -> bool {
    let stopping = |c: &TrainConfig| TrainConfig {
        stopping: config.stopping.clone(),
        ..c.clone()
    };
    stopping(stored) == stopping(config)
}

/// Builds the swarm of a fresh run, with how many of its labels `model.init_from`'s model had
/// no output for.
fn fresh_swarm(
    config: &TrainConfig,
    space: &LabelSpace,
    words: Option<&Arc<WordVectors>>,
    device: &Device,
) -> Result<(Swarm, OrchestratorConfig, usize), TrainError> {
    let specialists = config
        .model
        .specialists
        .iter()
        .map(|s| s.load(device))
        .collect::<Result<Vec<_>, _>>()?;
    let shapes: Vec<_> = specialists
        .iter()
        .map(FrozenSpecialist::state_shape)
        .collect();
    let orchestrator_config = orchestrator_config(config, space, words.map(|w| &**w));
    let (orchestrator, new_labels) = match &config.model.init_from {
        Some(dir) => initial_weights(
            dir,
            &orchestrator_config,
            space,
            &shapes,
            config.run.seed,
            device,
        )?,
        None => (
            orchestrator_config.init(&shapes, config.run.seed, device),
            0,
        ),
    };
    let words = orchestrator_config.column_words.zip(words.cloned());
    let orchestrator = orchestrator.with_word_vectors(words, device)?;
    Ok((
        Swarm::new(renumber(orchestrator), specialists)?,
        orchestrator_config,
        new_labels,
    ))
}

/// The trainable weights of the model in `dir`, for a run of configuration `target`, and how
/// many of the run's labels are new to it. The heads keep the model's outputs for the run's
/// labels, in the run's order; a label the model has no output for starts as a fresh run's
/// would (seed `seed`). Its labels, n-grams and head skips aside, the model must have the run's
/// configuration; an n-gram embedding or head skip the model lacks starts at zero, so the run
/// starts from the model's own predictions.
fn initial_weights(
    dir: &Path,
    target: &OrchestratorConfig,
    space: &LabelSpace,
    specialists: &[StateShape],
    seed: u64,
    device: &Device,
) -> Result<(Orchestrator, usize), TrainError> {
    let (swarm, manifest) = Swarm::load(dir, device)?;
    let refuse = |what: String| {
        Err(TrainError::Config(format!(
            "cannot start from {}: {what}",
            dir.display()
        )))
    };
    // A run on some of the model's labels (a branch continued on one benchmark or corpus)
    // keeps those labels' outputs; a label the model lacks (one its new data brings) starts
    // fresh.
    let mut outputs = Vec::new();
    let mut new_labels = 0;
    for (task, theirs) in [
        (Task::Cta, &manifest.cta_labels),
        (Task::Cpa, &manifest.cpa_labels),
    ] {
        let ours = space.flat(task);
        let found: Vec<Option<usize>> = ours
            .iter()
            .map(|l| theirs.iter().position(|t| t == l))
            .collect();
        new_labels += found.iter().filter(|f| f.is_none()).count();
        // A task the run has no labels of keeps one placeholder output, as a fresh head does
        // (`OrchestratorConfig::init` gives every head one output at least).
        let index: Vec<Option<usize>> = if ours.is_empty() {
            vec![Some(0)]
        } else {
            found
        };
        let unchanged =
            index.len() == theirs.len() && index.iter().enumerate().all(|(i, &o)| o == Some(i));
        outputs.push((!unchanged).then_some(index));
    }
    // Its alignments map its own specialists' states: the run's must have the same shapes.
    let theirs: Vec<StateShape> = swarm
        .specialists
        .iter()
        .map(FrozenSpecialist::state_shape)
        .collect();
    if theirs != specialists {
        return refuse(format!(
            "its specialists' state shapes {theirs:?} are not this run's {specialists:?}"
        ));
    }
    let mut config = manifest.config.clone();
    config.cta_labels = target.cta_labels;
    config.cta_kind = target.cta_kind;
    config.cpa_labels = target.cpa_labels;
    config.column_ngrams = target.column_ngrams;
    config.column_words = target.column_words;
    config.head_skip = target.head_skip;
    if &config != target {
        return refuse(format!(
            "its configuration differs from this run's beyond column n-grams, word vectors and head skips:\n  model: {}\n  run:   {}",
            serde_json::to_string(&manifest.config).unwrap_or_default(),
            serde_json::to_string(target).unwrap_or_default()
        ));
    }
    let mut orchestrator = swarm
        .orchestrator
        .with_column_ngrams(target.column_ngrams, device);
    let skip = target.head_skip.is_some();
    orchestrator.cta = orchestrator.cta.with_linear_skip(skip);
    orchestrator.cpa = orchestrator.cpa.with_linear_skip(skip);
    let fresh = (new_labels > 0).then(|| target.init(specialists, seed, device));
    let [cta_outputs, cpa_outputs] = <[_; 2]>::try_from(outputs).expect("two tasks");
    let pick =
        |head: ColumnHead, index: Option<Vec<Option<usize>>>, fresh: Option<&ColumnHead>| match (
            index, fresh,
        ) {
            (None, _) => head,
            (Some(index), Some(fresh)) => head.with_new_outputs(&index, fresh),
            (Some(index), None) => {
                head.select_outputs(&index.into_iter().flatten().collect::<Vec<_>>())
            }
        };
    orchestrator.cta = pick(
        orchestrator.cta,
        cta_outputs,
        fresh.as_ref().map(|f| &f.cta),
    );
    orchestrator.cta = orchestrator.cta.with_kind(target.cta_kind);
    orchestrator.cpa = pick(
        orchestrator.cpa,
        cpa_outputs,
        fresh.as_ref().map(|f| &f.cpa),
    );
    Ok((orchestrator, new_labels))
}

/// The counters a run continues from: a checkpoint's, with `finished` judged anew by the
/// stopping rules, which may have changed (more epochs, more patience); zero for a new run.
fn resumed_state(checkpoint: Option<RunState>, stopping: &Stopping) -> RunState {
    let Some(mut state) = checkpoint else {
        return RunState::default();
    };
    state.finished = state.epoch >= stopping.epochs
        || (state.best_score.is_some()
            && state.epochs_without_improvement >= stopping.patience.max(1));
    state
}

/// The supervised stage for the [`Driver`]: a batch's loss split into one shard per device.
struct Supervised<'a> {
    config: &'a TrainConfig,
    data: &'a RunData,
    /// The training devices; the first holds the model and the optimizer.
    devices: Vec<Device>,
    /// Each device's copies of the frozen specialists, made once.
    replica_specialists: Vec<Vec<FrozenSpecialist>>,
}

impl Stage for Supervised<'_> {
    type Model = Swarm;

    fn batches(&self) -> usize {
        self.data
            .train
            .len()
            .div_ceil(self.config.optimizer.batch_size)
    }

    fn gradients(&mut self, swarm: &Swarm, state: &RunState) -> Result<Computed, TrainError> {
        let (config, train) = (self.config, &self.data.train);
        let (seed, batch_size) = (config.run.seed, config.optimizer.batch_size);
        let order = epoch_order(seed, state.epoch, train.len());
        let start = state.batch * batch_size;
        let picked: Vec<&Example> = order[start..(start + batch_size).min(train.len())]
            .iter()
            .map(|&i| &train[i])
            .collect();
        // One shard per device (fewer when the batch is smaller), each with its part of the
        // batch's loss and the router draws the undivided batch would give its tables.
        let dropout = config.regularization.column_dropout;
        let rng = rng_for(seed, ROUTING_STREAM, state.step as u64);
        let counts = TargetCounts::of(&picked);
        let shards = shard_ranges(picked.len(), self.devices.len())
            .into_iter()
            .zip(self.devices.iter().zip(&self.replica_specialists))
            .map(|(range, (device, specialists))| Shard {
                device: device.clone(),
                input: ShardInput {
                    routing: shard_routing_rng(&rng, range.start, swarm.specialists.len()),
                    dropout: (dropout > 0.0).then_some(DropoutDraw {
                        p: dropout,
                        seed,
                        step: state.step,
                        batch_size,
                        first: range.start,
                    }),
                    examples: &picked[range],
                    specialists: specialists.clone(),
                },
            })
            .collect();
        let (space, cpa_weight) = (&self.data.space, config.loss.cpa_weight);
        let parallel = data_parallel_grads(
            &swarm.orchestrator,
            &self.devices[0],
            shards,
            |replica, input| shard_step(replica, input, space, counts, cpa_weight),
        )?;
        let reports = &parallel.outputs;
        let main = &self.devices[0];
        let loss = sum_parts(reports.iter().map(|r| Some(r.loss.clone())), main)
            .ok_or_else(|| TrainError::Config("a step without shards".into()))?;
        let gates = reports.iter().map(|r| r.gates).sum::<usize>().max(1);
        let active = sum_parts(reports.iter().map(|r| Some(r.active.clone())), main)
            .map(|active| active / gates as f64);
        let tokens: usize = picked.iter().map(|e| e.n_tokens()).sum();
        let entry = serde_json::json!({
            "epoch": state.epoch, "cta_loss": null, "cpa_loss": null,
            "activation_rate": null, "tokens": tokens,
        });
        let scalars = [
            (
                "cta_loss",
                sum_parts(reports.iter().map(|r| r.cta.clone()), main),
            ),
            (
                "cpa_loss",
                sum_parts(reports.iter().map(|r| r.cpa.clone()), main),
            ),
            ("activation_rate", active),
        ];
        Ok(Computed {
            loss,
            grads: parallel.grads,
            tables: picked.iter().map(|e| e.table_id.clone()).collect(),
            columns: picked.iter().map(|e| e.columns.len()).sum(),
            tokens,
            entry,
            scalars: scalars
                .into_iter()
                .filter_map(|(key, value)| Some((key, value?)))
                .collect(),
            progress: None,
        })
    }

    fn evaluate(&mut self, swarm: &Swarm) -> Result<Evaluation, TrainError> {
        let (config, data) = (self.config, self.data);
        let batch_size = config.optimizer.batch_size * 2;
        let reports = dev_reports(
            swarm,
            &data.space,
            &config.data.serialize,
            &data.dev,
            batch_size,
        )?;
        Ok(dev_evaluation(&reports, "epoch"))
    }
}

/// Runs (or resumes) a supervised training run in `out`.
pub fn train(
    config: &TrainConfig,
    out: &Path,
    options: &TrainOptions,
) -> Result<TrainSummary, TrainError> {
    check(config)?;
    let run = RunDir::for_config(out, config, |stored| resumable(config, stored))?;

    let data = load_run_data(config)?;
    if options.progress && config.loss.quantity_negatives {
        let negatives: usize = data.train.iter().map(|e| e.cta_none.len()).sum();
        eprintln!("quantity negatives: {negatives} (column, namespace) pairs with no label");
    }
    let devices = options.training_devices();
    let device = devices[0].clone();
    let (swarm, orchestrator_config, new_labels) =
        fresh_swarm(config, &data.space, data.words.as_ref(), &device)?;
    if options.progress && new_labels > 0 {
        eprintln!(
            "{new_labels} of this run's labels are new to the model it starts from: their outputs start fresh"
        );
    }
    let resumed = resume(&run, swarm, build_optimizer(&config.optimizer), &device)?;
    let (epochs, patience) = (config.stopping.epochs, config.stopping.patience);
    let state = resumed_state(resumed.state.clone(), &config.stopping);
    if options.progress && state.step > 0 {
        eprintln!(
            "resuming {} from step {} (epoch {}, batch {})",
            out.display(),
            state.step,
            state.epoch + 1,
            state.batch
        );
    }
    if options.progress && devices.len() > 1 {
        eprintln!("data-parallel: {} replicas on {devices:?}", devices.len());
    }
    let log = Log::open(&run.log_path(), state.step)?;
    let mut epoch_fields = serde_json::Map::new();
    epoch_fields.insert("replicas".into(), devices.len().into());
    epoch_fields.insert("device".into(), format!("{device:?}").into());
    let checkpoints = Checkpoints {
        run: &run,
        parts: ModelParts {
            orchestrator: &orchestrator_config,
            space: &data.space,
            serialize: &config.data.serialize,
        },
        retention: Retention::EpochEnds(config.run.keep_last),
    };
    let driver = Driver {
        schedule: Schedule::Epochs { epochs, patience },
        optimizer: &config.optimizer,
        run: &config.run,
        weights: &checkpoints,
        log: &log,
        label: "epoch",
        progress: options.progress,
        stop_after_steps: options.stop_after_steps,
        epoch_fields,
    };
    let mut stage = Supervised {
        config,
        data: &data,
        // Specialists never change: each replica's device gets its copies once.
        replica_specialists: devices
            .iter()
            .map(|d| specialists_on(&resumed.swarm.specialists, d, &device))
            .collect(),
        devices,
    };
    let mut at = Trained {
        model: resumed.swarm,
        optim: resumed.optim,
        state,
    };
    let finished = driver.drive(&mut stage, &mut at)?;
    Ok(TrainSummary {
        steps: at.state.step,
        epochs: at.state.epoch,
        best: at.state.best_score.zip(at.state.best_epoch),
        finished,
        model_dir: run.best_dir(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervised::{DataSettings, LossSettings, ModelSettings, Regularization, Stopping};

    #[test]
    fn absurd_ngram_bucket_counts_are_refused_before_allocating() {
        let config = TrainConfig {
            model: ModelSettings {
                ngram_buckets: u32::MAX,
                ..ModelSettings::default()
            },
            data: DataSettings {
                train: vec!["t=t2d:x".parse().unwrap()],
                ..DataSettings::default()
            },
            ..TrainConfig::default()
        };
        let err = check(&config).unwrap_err().to_string();
        assert!(err.contains("4294967295 n-gram buckets"), "{err}");
    }

    #[test]
    fn column_dropout_outside_zero_to_one_is_refused() {
        for p in [-0.1, 1.0, f32::NAN] {
            let config = TrainConfig {
                data: DataSettings {
                    train: vec!["t=t2d:x".parse().unwrap()],
                    ..DataSettings::default()
                },
                regularization: Regularization { column_dropout: p },
                ..TrainConfig::default()
            };
            let message = check(&config).unwrap_err().to_string();
            assert!(message.contains("column dropout"), "{message}");
        }
    }

    #[test]
    fn a_negative_or_non_finite_cpa_weight_is_refused() {
        for weight in [-1.0, f64::NAN, f64::INFINITY] {
            let config = TrainConfig {
                data: DataSettings {
                    train: vec!["t=t2d:x".parse().unwrap()],
                    ..DataSettings::default()
                },
                loss: LossSettings {
                    cpa_weight: weight,
                    ..LossSettings::default()
                },
                ..TrainConfig::default()
            };
            let message = check(&config).unwrap_err().to_string();
            assert!(message.contains("CPA loss weight"), "{message}");
        }
    }

    #[test]
    fn only_the_stopping_rules_may_change_on_resume() {
        let config = TrainConfig::default();
        let longer = TrainConfig {
            stopping: Stopping {
                epochs: 20,
                patience: 5,
            },
            ..config.clone()
        };
        assert!(resumable(&longer, &config));
        let mut reseeded = config.clone();
        reseeded.run.seed += 1;
        assert!(!resumable(&reseeded, &config));
    }
}
