//! The pretraining loop: seeded synthetic batches, Adam, atomic checkpoints and exact resume in
//! a run directory, a held-out score, and the specialist checkpoint at the end.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_model::format_duration;
use colswarm_rwkv::checkpoint::{CheckpointFile, save_module};
use colswarm_rwkv::save_checkpoint;
use serde::{Deserialize, Serialize};

use super::config::{Objective, PretrainConfig, encoder_config};
use super::corpus::{KnowledgeCorpus, Teacher};
use super::data::{Sampler, Target, held_out_tables, train_tables};
use super::model::{PretrainModel, PretrainModelConfig};
use super::step::Batch;
use crate::data_parallel::non_finite_gradients;
use crate::error::TrainError;
use crate::param_ids::renumber;
use crate::probe::argmax;
use crate::run::{
    Computed, Driver, Evaluation, Log, Retention, RunDir, RunState, Schedule, Stage, Trained,
    Weights, build_optimizer, check_optimizer, commit_with_optimizer, load_optimizer,
};

/// The file the specialist is written to, in the run directory.
pub const SPECIALIST_FILE: &str = "specialist.safetensors";
/// The held-out score and the run's facts, in the run directory.
pub const REPORT_FILE: &str = "report.json";
const CHECKPOINT_FILE: &str = "pretrain.safetensors";

/// How a run reports and when it stops early.
#[derive(Clone, Debug, Default)]
pub struct PretrainOptions {
    /// Progress lines on stderr.
    pub progress: bool,
    /// Stop after this many steps in this process, writing a checkpoint first (tests use it
    /// to interrupt a run).
    pub stop_after_steps: Option<usize>,
    /// The device to train on (autodiff is added); `None`: the CPU (burn's Flex backend). Not
    /// part of the run's configuration, so a run may be resumed on another device.
    pub device: Option<Device>,
}

/// The score of a specialist on tables drawn from its corpus's held-out part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOutScore {
    /// Columns scored.
    pub columns: usize,
    /// Mean loss.
    pub loss: f64,
    /// Gazetteer typing: the share of columns typed right.
    pub accuracy: Option<f64>,
    /// Embedding objectives: mean cosine between prediction and teacher.
    pub cosine: Option<f64>,
    /// Embedding objectives: the same mean for a constant prediction, the normalised mean of
    /// the held-out targets (teacher embeddings share a common direction; this is the floor).
    pub cosine_of_mean: Option<f64>,
    /// Header prediction: the share of columns whose nearest held-out header (by the
    /// teacher's embeddings) is their own.
    pub header_top1: Option<f64>,
    /// Header prediction: the number of candidate headers.
    pub header_candidates: Option<usize>,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct PretrainSummary {
    /// Steps done in all.
    pub steps: usize,
    /// Whether the run reached its last step (the specialist and report are written then).
    pub finished: bool,
    /// The specialist checkpoint.
    pub specialist: PathBuf,
    /// The final held-out score.
    pub score: Option<HeldOutScore>,
}

fn to_rows(t: Tensor<2>) -> Vec<Vec<f32>> {
    let [_, d] = t.dims();
    let values: Vec<f32> = t.into_data().try_to_vec::<f32>().unwrap_or_default();
    values.chunks(d.max(1)).map(<[f32]>::to_vec).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    f64::from(dot / (na * nb).max(1e-12))
}

/// The share of `outputs` whose nearest candidate header (by the teacher's embeddings) is their
/// column's own.
fn header_top1(
    outputs: &[Vec<f32>],
    headers: &[String],
    candidates: &[String],
    teacher: &Teacher,
) -> f64 {
    let embedded: Vec<&[f32]> = candidates
        .iter()
        .filter_map(|h| teacher.embedding(h))
        .collect();
    let right = outputs
        .iter()
        .zip(headers)
        .filter(|(o, header)| {
            let scores: Vec<f64> = embedded.iter().map(|e| cosine(o, e)).collect();
            candidates.get(argmax(&scores)) == Some(*header)
        })
        .count();
    right as f64 / outputs.len().max(1) as f64
}

/// The mean cosine between each output and its teacher embedding, and the same for a constant
/// output, the targets' mean direction (the floor a model must beat).
fn embedding_cosines(outputs: &[Vec<f32>], targets: &[Target]) -> (f64, f64) {
    let cosines: Vec<f64> = outputs
        .iter()
        .zip(targets)
        .filter_map(|(o, t)| match t {
            Target::Embedding(e) => Some(cosine(o, e)),
            Target::Class(_) => None,
        })
        .collect();
    let embeddings: Vec<&[f32]> = targets
        .iter()
        .filter_map(|t| match t {
            Target::Embedding(e) => Some(e.as_slice()),
            Target::Class(_) => None,
        })
        .collect();
    let dim = embeddings.first().map_or(0, |t| t.len());
    let mean: Vec<f32> = (0..dim)
        .map(|i| embeddings.iter().map(|t| t[i]).sum::<f32>())
        .collect();
    let floor: f64 = embeddings.iter().map(|t| cosine(&mean, t)).sum();
    (
        cosines.iter().sum::<f64>() / cosines.len().max(1) as f64,
        floor / embeddings.len().max(1) as f64,
    )
}

/// Scores `model` on the held-out batch (in chunks, without gradients).
fn score(
    model: &PretrainModel,
    held_out: &Batch,
    sampler: &Sampler<'_>,
    corpus: &KnowledgeCorpus,
    objective: Objective,
) -> HeldOutScore {
    let mut outputs = Vec::new();
    for start in (0..held_out.tokens.len()).step_by(64) {
        let end = (start + 64).min(held_out.tokens.len());
        let tables: Vec<&[u32]> = held_out.tokens[start..end]
            .iter()
            .map(Vec::as_slice)
            .collect();
        outputs.extend(to_rows(model.forward(&tables, &held_out.spans[start..end])));
    }
    let n = outputs.len();
    let device = model.head.weight.val().device();
    let flat: Vec<f32> = outputs.iter().flatten().copied().collect();
    let all = Tensor::<2>::from_data(
        TensorData::new(flat, [n, outputs.first().map_or(0, Vec::len)]),
        &device,
    );
    let loss = f64::from(held_out.loss(all).into_scalar::<f32>());
    let mut result = HeldOutScore {
        columns: n,
        loss,
        accuracy: None,
        cosine: None,
        cosine_of_mean: None,
        header_top1: None,
        header_candidates: None,
    };
    match objective {
        Objective::Gazetteer => {
            let right = outputs
                .iter()
                .zip(&held_out.targets)
                .filter(|(o, t)| matches!(t, Target::Class(c) if argmax(o) == *c))
                .count();
            result.accuracy = Some(right as f64 / n.max(1) as f64);
        }
        Objective::Distill | Objective::Header => {
            let (cosine, floor) = embedding_cosines(&outputs, &held_out.targets);
            result.cosine = Some(cosine);
            result.cosine_of_mean = Some(floor);
        }
    }
    if objective == Objective::Header
        && let Some(teacher) = corpus.teacher.as_ref()
    {
        let candidates = sampler.held_out_headers();
        result.header_top1 = Some(header_top1(
            &outputs,
            &held_out.headers,
            &candidates,
            teacher,
        ));
        result.header_candidates = Some(candidates.len());
    }
    result
}

/// Refuses configurations that cannot run.
fn check(config: &PretrainConfig) -> Result<(), TrainError> {
    let fail = |what: &str| Err(TrainError::Config(what.to_string()));
    let encoder = &config.encoder;
    if config.steps == 0 || config.data.max_columns == 0 {
        return fail("steps and columns per table must be at least 1");
    }
    if encoder.head_size == 0 || !encoder.d_model.is_multiple_of(encoder.head_size) {
        return fail("the width must be a positive multiple of the head size");
    }
    if config.data.held_out_every < 2 {
        return fail("held_out_every must be at least 2 (one entry in N is held out)");
    }
    check_optimizer(&config.optimizer)?;
    encoder_config(encoder)
        .validate()
        .map_err(|e| TrainError::Config(e.to_string()))
}

/// Whether a run begun with `stored` may continue under `config`: only the step budget and the
/// bookkeeping (evaluations, checkpoints, logging) may change.
fn resumable(config: &PretrainConfig, stored: &PretrainConfig) -> bool {
    let mut same = stored.clone();
    same.steps = config.steps;
    same.eval_every = config.eval_every;
    same.run.checkpoint_every = config.run.checkpoint_every;
    same.run.keep_last = config.run.keep_last;
    same.run.log_every = config.run.log_every;
    &same == config
}

fn save_checkpoint_dir(
    run: &RunDir,
    model: &PretrainModel,
    optim: &ModuleOptimizer,
    state: &RunState,
    keep_last: usize,
) -> Result<(), TrainError> {
    let temp = run.temp_dir("checkpoint")?;
    let model_dir = temp.join("model");
    std::fs::create_dir_all(&model_dir).map_err(|e| TrainError::io(&model_dir, e))?;
    save_module(model, HashMap::new(), &model_dir.join(CHECKPOINT_FILE))?;
    commit_with_optimizer(run, &temp, optim, state, Retention::Newest(keep_last))
}

/// Pretraining for the [`Driver`]: every batch drawn afresh from the corpus, the held-out
/// tables scored as the schedule says.
struct Pretraining<'a> {
    config: &'a PretrainConfig,
    sampler: &'a Sampler<'a>,
    corpus: &'a KnowledgeCorpus,
    held_out: Batch,
    started: Instant,
    /// The last held-out score.
    last: Option<HeldOutScore>,
}

impl Stage for Pretraining<'_> {
    type Model = PretrainModel;

    fn batches(&self) -> usize {
        // No epochs: the sampler draws each step's tables from the step's seed.
        usize::MAX
    }

    fn gradients(
        &mut self,
        model: &PretrainModel,
        state: &RunState,
    ) -> Result<Computed, TrainError> {
        let batch = Batch::of(
            train_tables(self.sampler, self.config, state.step),
            self.config,
        );
        let loss = batch.loss(batch.forward(model));
        let grads = GradientsParams::from_grads(loss.backward(), model);
        let tokens: usize = batch.tokens.iter().map(Vec::len).sum();
        let columns = batch.targets.len();
        Ok(Computed {
            loss,
            grads,
            // Drawn tables, named by no file.
            tables: Vec::new(),
            columns,
            tokens,
            entry: serde_json::json!({
                "columns": columns, "tokens": tokens,
                "seconds": self.started.elapsed().as_secs_f64(),
            }),
            scalars: Vec::new(),
            // The driver's: the mean loss since the last held-out score.
            progress: None,
        })
    }

    fn evaluate(&mut self, model: &PretrainModel) -> Result<Evaluation, TrainError> {
        let held = score(
            &model.valid(),
            &self.held_out,
            self.sampler,
            self.corpus,
            self.config.objective,
        );
        let mut entry = serde_json::Map::new();
        entry.insert(
            "score".into(),
            serde_json::to_value(&held).unwrap_or_default(),
        );
        self.last = Some(held);
        // No best model: the specialist is the last step's encoder.
        Ok(Evaluation {
            score: None,
            event: "held-out",
            entry,
            summary: None,
        })
    }
}

/// A pretraining checkpoint: the model in one file beside the optimizer's state.
struct PretrainWeights<'a> {
    run: &'a RunDir,
    keep_last: usize,
}

impl Weights<PretrainModel> for PretrainWeights<'_> {
    fn non_finite(&self, model: &PretrainModel, grads: &GradientsParams) -> Option<Tensor<1>> {
        non_finite_gradients(model, grads)
    }

    fn step(
        &self,
        model: &mut PretrainModel,
        optim: &mut ModuleOptimizer,
        rate: f64,
        grads: GradientsParams,
    ) {
        *model = optim.step(rate, model.clone(), grads);
    }

    fn save(
        &self,
        model: &PretrainModel,
        optim: &ModuleOptimizer,
        state: &RunState,
    ) -> Result<(), TrainError> {
        save_checkpoint_dir(self.run, model, optim, state, self.keep_last)
    }

    fn save_best(&self, _: &PretrainModel) -> Result<(), TrainError> {
        Ok(())
    }
}

/// The corpus in `dir`, saying what it holds when `progress`.
fn open_corpus(
    dir: &Path,
    config: &PretrainConfig,
    progress: bool,
) -> Result<KnowledgeCorpus, TrainError> {
    let started = Instant::now();
    let corpus = KnowledgeCorpus::open(dir, config.objective.needs_teacher())?;
    if progress {
        eprintln!(
            "corpus {}: {} gazetteers, {} tables, {} teacher strings (read in {})",
            dir.display(),
            corpus.gazetteers.len(),
            corpus.tables.len(),
            corpus.teacher.as_ref().map_or(0, |t| t.len()),
            format_duration(started.elapsed().as_secs_f64())
        );
    }
    Ok(corpus)
}

/// Where a pretraining run starts.
enum Start {
    /// Training continues from here.
    At(Box<Trained<PretrainModel>>),
    /// The run finished after this many steps and wrote its specialist.
    Finished(usize),
}

/// `fresh`, or the newest checkpoint of the run in `out` loaded into it; nothing is loaded for
/// a run that has finished (the optimizer's state is read lazily, from files the caller may
/// have removed).
fn resume_pretraining(
    run: &RunDir,
    out: &Path,
    config: &PretrainConfig,
    fresh: Trained<PretrainModel>,
    device: &Device,
) -> Result<Start, TrainError> {
    let Some(checkpoint) = run.latest()? else {
        return Ok(Start::At(Box::new(fresh)));
    };
    let done = &checkpoint.state;
    if done.finished && done.step >= config.steps && out.join(SPECIALIST_FILE).exists() {
        return Ok(Start::Finished(done.step));
    }
    let file = CheckpointFile::open(&checkpoint.model_dir().join(CHECKPOINT_FILE))?;
    Ok(Start::At(Box::new(Trained {
        model: renumber(file.load_into(fresh.model, device)?),
        optim: load_optimizer(&checkpoint, fresh.optim)?,
        state: checkpoint.state,
    })))
}

/// Runs (or resumes) pretraining of one specialist from the corpus in `corpus_dir`, in the run
/// directory `out`. When it finishes, `out` holds [`SPECIALIST_FILE`] (an RWKV-7 checkpoint
/// any swarm can load as a specialist) and [`REPORT_FILE`].
pub fn pretrain(
    config: &PretrainConfig,
    corpus_dir: &Path,
    out: &Path,
    options: &PretrainOptions,
) -> Result<PretrainSummary, TrainError> {
    check(config)?;
    let run = RunDir::for_config(out, config, |stored| resumable(config, stored))?;
    let corpus = open_corpus(corpus_dir, config, options.progress)?;
    let sampler = Sampler::new(&corpus, config)?;
    let device = options
        .device
        .clone()
        .unwrap_or_else(Device::flex)
        .autodiff();
    let model_config = PretrainModelConfig {
        encoder: encoder_config(&config.encoder),
        outputs: sampler.outputs(),
    };
    let fresh = Trained {
        model: renumber(model_config.init(config.run.seed, &device)),
        optim: build_optimizer(&config.optimizer),
        state: RunState::default(),
    };
    let specialist = out.join(SPECIALIST_FILE);
    let at = match resume_pretraining(&run, out, config, fresh, &device)? {
        Start::At(at) => *at,
        // Nothing left to do: report what the finished run measured.
        Start::Finished(steps) => {
            return Ok(PretrainSummary {
                steps,
                finished: true,
                score: finished_score(&out.join(REPORT_FILE)),
                specialist,
            });
        }
    };
    if options.progress && at.state.step > 0 {
        eprintln!("resuming {} from step {}", out.display(), at.state.step);
    }
    train_from(at, config, (&run, out), (&corpus, &sampler), options)
}

/// Runs the pretraining stage from `at` in the run directory `run` (at `out`) and, when it
/// reaches its last step, writes the specialist and the report.
fn train_from(
    mut at: Trained<PretrainModel>,
    config: &PretrainConfig,
    (run, out): (&RunDir, &Path),
    (corpus, sampler): (&KnowledgeCorpus, &Sampler<'_>),
    options: &PretrainOptions,
) -> Result<PretrainSummary, TrainError> {
    let specialist = out.join(SPECIALIST_FILE);
    let log = Log::open(&run.log_path(), at.state.step)?;
    let weights = PretrainWeights {
        run,
        keep_last: config.run.keep_last,
    };
    let driver = Driver {
        schedule: Schedule::Steps {
            steps: config.steps,
            eval_every: config.eval_every,
        },
        optimizer: &config.optimizer,
        run: &config.run,
        weights: &weights,
        log: &log,
        label: &format!("pretrain {}", config.objective.name()),
        progress: options.progress,
        stop_after_steps: options.stop_after_steps,
        epoch_fields: serde_json::Map::new(),
    };
    let mut stage = Pretraining {
        config,
        sampler,
        corpus,
        held_out: Batch::of(held_out_tables(sampler, config), config),
        started: Instant::now(),
        last: None,
    };
    if !driver.drive(&mut stage, &mut at)? {
        // Interrupted: the steps done so far are kept, to resume from.
        weights.save(&at.model, &at.optim, &at.state)?;
        return Ok(PretrainSummary {
            steps: at.state.step,
            finished: false,
            specialist,
            score: None,
        });
    }
    // The driver scores the held-out tables after the last step.
    let held = stage.last.take().ok_or_else(|| {
        TrainError::Config("pretraining finished without a held-out score".into())
    })?;
    save_checkpoint(
        &at.model.encoder.valid(),
        &encoder_config(&config.encoder),
        &specialist,
    )?;
    let seconds = stage.started.elapsed().as_secs_f64();
    write_report(config, corpus, (at.state.step, seconds), &held, out)?;
    if options.progress {
        eprintln!(
            "held-out: {}",
            serde_json::to_string(&held).unwrap_or_default()
        );
    }
    Ok(PretrainSummary {
        steps: at.state.step,
        finished: true,
        specialist,
        score: Some(held),
    })
}

/// Writes [`REPORT_FILE`] of a finished run of `steps` steps beside its specialist, atomically;
/// `seconds` is this process's share of the run.
fn write_report(
    config: &PretrainConfig,
    corpus: &KnowledgeCorpus,
    (steps, seconds): (usize, f64),
    held: &HeldOutScore,
    out: &Path,
) -> Result<(), TrainError> {
    let specialist = out.join(SPECIALIST_FILE);
    let report = serde_json::json!({
        "objective": config.objective.name(),
        "steps": steps,
        "seed": config.run.seed,
        "batch_size": config.optimizer.batch_size,
        "held_out": held,
        "corpus": {
            "gazetteers": corpus.gazetteers.len(),
            "gazetteer_entries": corpus.gazetteers.iter().map(|g| g.entries.len()).sum::<usize>(),
            "tables": corpus.tables.len(),
            "table_columns": corpus.tables.iter().map(|t| t.columns.len()).sum::<usize>(),
            "teacher_strings": corpus.teacher.as_ref().map_or(0, |t| t.len()),
            "classes": (config.objective == Objective::Gazetteer)
                .then(|| corpus.gazetteers.iter().map(|g| g.name.clone()).collect::<Vec<_>>()),
        },
        "seconds_in_last_session": seconds,
        "specialist_bytes": std::fs::metadata(&specialist).map(|m| m.len()).unwrap_or(0),
    });
    let path = out.join(REPORT_FILE);
    let bytes = serde_json::to_vec_pretty(&report).map_err(|e| TrainError::Run {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    Ok(colswarm_rwkv::checkpoint::write_atomically(&path, &bytes)?)
}

/// The held-out score a finished run wrote into its report.
fn finished_score(report: &Path) -> Option<HeldOutScore> {
    let bytes = std::fs::read(report).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    serde_json::from_value(value.get("held_out")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_budget_and_bookkeeping_may_change_on_resume() {
        let config = PretrainConfig::new(Objective::Gazetteer);
        let mut longer = config.clone();
        longer.steps *= 2;
        longer.run.log_every = 1;
        assert!(resumable(&longer, &config));
        let mut other = config.clone();
        other.run.seed += 1;
        assert!(!resumable(&other, &config));
    }

    #[test]
    fn invalid_configurations_are_refused() {
        let mut config = PretrainConfig::new(Objective::Distill);
        config.encoder.d_model = 50;
        assert!(check(&config).is_err());
        let mut config = PretrainConfig::new(Objective::Distill);
        config.data.held_out_every = 1;
        assert!(check(&config).is_err());
        assert!(check(&PretrainConfig::new(Objective::Header)).is_ok());
    }
}
