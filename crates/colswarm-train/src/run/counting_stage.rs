//! A stage for the driver's tests: its model is the number of optimizer steps taken, its
//! losses and dev scores are given, and what the driver saves is recorded.

use std::cell::RefCell;

use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Tensor;

use super::dir::RunState;
use super::driver::{Computed, Driver, Evaluation, Schedule, Stage, Trained, Weights};
use super::log::Log;
use super::settings::{OptimizerSettings, RunSettings, build_optimizer};
use crate::error::TrainError;

/// A stage whose model is the number of optimizer steps taken; its losses and dev scores
/// are given by step and by evaluation.
pub(crate) struct Counting {
    pub(crate) batches: usize,
    pub(crate) nan_at: Option<usize>,
    pub(crate) scores: Vec<Option<f64>>,
    pub(crate) evaluations: Vec<usize>,
    /// Calls of `gradients`.
    pub(crate) computed: usize,
}

impl Stage for Counting {
    type Model = usize;

    fn batches(&self) -> usize {
        self.batches
    }

    fn gradients(&mut self, _: &usize, state: &RunState) -> Result<Computed, TrainError> {
        let loss = if self.nan_at == Some(state.step) {
            f64::NAN
        } else {
            1.0
        };
        self.computed += 1;
        Ok(Computed {
            loss: Tensor::<1>::from_floats([loss as f32], &burn::tensor::Device::flex()),
            grads: GradientsParams::new(),
            tables: vec![format!("table{}", state.step)],
            columns: 2,
            tokens: 10,
            entry: serde_json::json!({}),
            scalars: Vec::new(),
            progress: None,
        })
    }

    fn evaluate(&mut self, taken: &usize) -> Result<Evaluation, TrainError> {
        self.evaluations.push(*taken);
        let score = self
            .scores
            .get(self.evaluations.len() - 1)
            .copied()
            .flatten();
        Ok(Evaluation {
            score,
            event: "dev",
            entry: serde_json::Map::new(),
            summary: None,
        })
    }
}

/// Counts steps and records what was saved, at which step.
#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) checkpoints: RefCell<Vec<usize>>,
    pub(crate) best: RefCell<Vec<usize>>,
    /// The driver's read-backs of the steps' numbers.
    pub(crate) read_backs: RefCell<usize>,
}

impl Weights<usize> for Recorder {
    fn non_finite(&self, _: &usize, _: &GradientsParams) -> Option<Tensor<1>> {
        None
    }

    fn step(&self, taken: &mut usize, _: &mut ModuleOptimizer, _: f64, _: GradientsParams) {
        *taken += 1;
    }

    fn save(&self, _: &usize, _: &ModuleOptimizer, state: &RunState) -> Result<(), TrainError> {
        self.checkpoints.borrow_mut().push(state.step);
        Ok(())
    }

    fn save_best(&self, taken: &usize) -> Result<(), TrainError> {
        self.best.borrow_mut().push(*taken);
        Ok(())
    }
}

/// Calls `drive` with a driver of `schedule` and `settings` (a fresh log, a recorder) and a
/// model at step 0; returns what it gave, the model, the recorder and the log's entries.
fn with_driver<T>(
    schedule: Schedule,
    settings: RunSettings,
    stop_after_steps: Option<usize>,
    drive: impl FnOnce(&Driver<'_, usize>, &mut Trained<usize>) -> T,
) -> (T, Trained<usize>, Recorder, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(&dir.path().join("log.jsonl"), 0).unwrap();
    let (optimizer, recorder) = (OptimizerSettings::default(), Recorder::default());
    let driver = Driver {
        schedule,
        optimizer: &optimizer,
        run: &settings,
        weights: &recorder,
        log: &log,
        label: "test",
        progress: false,
        stop_after_steps,
        epoch_fields: serde_json::Map::new(),
    };
    let mut at = Trained {
        model: 0,
        optim: build_optimizer(&optimizer),
        state: RunState::default(),
    };
    let out = drive(&driver, &mut at);
    let entries = std::fs::read_to_string(dir.path().join("log.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, at, recorder, entries)
}

/// Drives `stage` to its end (or `stop_after_steps`): whether it finished, the model, what was
/// saved (and how many read-backs it made) and the log's entries.
pub(crate) fn run(
    schedule: Schedule,
    stage: &mut Counting,
    settings: RunSettings,
    stop_after_steps: Option<usize>,
) -> (bool, Trained<usize>, Recorder, Vec<serde_json::Value>) {
    let ((finished, read_backs), at, recorder, entries) =
        with_driver(schedule, settings, stop_after_steps, |driver, at| {
            driver.drive_counting(stage, at).unwrap()
        });
    *recorder.read_backs.borrow_mut() = read_backs;
    (finished, at, recorder, entries)
}

pub(crate) fn counting(batches: usize, scores: Vec<Option<f64>>) -> Counting {
    Counting {
        batches,
        nan_at: None,
        scores,
        evaluations: Vec::new(),
        computed: 0,
    }
}

/// Drives `stage` as [`run`] does, to the error it must end in.
pub(crate) fn run_to_error(
    schedule: Schedule,
    stage: &mut Counting,
    settings: RunSettings,
) -> (TrainError, Trained<usize>) {
    let (err, at, _, _) = with_driver(schedule, settings, None, |driver, at| {
        driver.drive(stage, at).unwrap_err()
    });
    (err, at)
}
