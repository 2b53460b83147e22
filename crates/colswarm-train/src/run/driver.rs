//! The one training loop of every stage (supervised, PARL, pretraining): a [`Stage`] computes a
//! step's gradients and scores its held-out data; [`Weights`] steps and saves the model; the
//! [`Driver`] owns everything around them: the non-finite policy, the learning rate, the log,
//! progress lines, checkpoints, the best model and when to stop. A swarm's [`Weights`] are its
//! `Checkpoints` (in `mod.rs`).

use std::time::Instant;

use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Tensor;
use colswarm_model::{Progress, format_duration};

use super::dir::RunState;
use super::log::Log;
use super::pending::{PendingStep, ReadStep, read_back};
use super::settings::{OptimizerSettings, RunSettings, learning_rate};
use crate::error::TrainError;

/// One step's gradients and what the driver logs about it. Its numbers stay on the device:
/// the driver reads them back at its logging cadence, not inside the step.
pub(crate) struct Computed {
    /// The batch's loss, `[1]`.
    pub(crate) loss: Tensor<1>,
    /// The gradients of the trained weights.
    pub(crate) grads: GradientsParams,
    /// The batch's tables, named in the log when the step is skipped.
    pub(crate) tables: Vec<String>,
    /// Columns and tokens the step read (throughput lines).
    pub(crate) columns: usize,
    /// See `columns`.
    pub(crate) tokens: usize,
    /// The step's log entry, without its `event`, `step` and `loss` (the driver adds them) and
    /// without `scalars`.
    pub(crate) entry: serde_json::Value,
    /// Numbers of the log entry computed on the device (`[1]` each), read back with the loss.
    pub(crate) scalars: Vec<(&'static str, Tensor<1>)>,
    /// The progress line's text; `None`: the mean loss of the epoch (or, in a step schedule,
    /// since the last evaluation).
    pub(crate) progress: Option<String>,
}

/// A dev evaluation.
pub(crate) struct Evaluation {
    /// The score the best model is chosen by (the mean micro-F1 over the dev sets); `None`
    /// without one.
    pub(crate) score: Option<f64>,
    /// The log entry's `event` in a [`Schedule::Steps`] run (an epoch's entry is `epoch`).
    pub(crate) event: &'static str,
    /// Fields of the log entry (`dev`: one object per set, and the stage's own); an
    /// evaluation with neither these nor a score is not logged.
    pub(crate) entry: serde_json::Map<String, serde_json::Value>,
    /// One line for the progress output (`None`: nothing to say).
    pub(crate) summary: Option<String>,
}

/// What a stage does; the [`Driver`] does the rest.
pub(crate) trait Stage {
    /// What the stage trains.
    type Model;

    /// Optimizer steps in an epoch (the batches of the training set); `usize::MAX` for a stage
    /// that draws every batch afresh.
    fn batches(&self) -> usize;

    /// The gradients of step `state.step` (batch `state.batch` of epoch `state.epoch`) at the
    /// weights of `model`.
    fn gradients(&mut self, model: &Self::Model, state: &RunState) -> Result<Computed, TrainError>;

    /// Scores the held-out data with the weights of `model`.
    fn evaluate(&mut self, model: &Self::Model) -> Result<Evaluation, TrainError>;
}

/// How a stage's model takes an optimizer step and is saved.
pub(crate) trait Weights<M> {
    /// How many parameter tensors of `model` have a non-finite gradient in `grads`, counted on
    /// the device (`[1]`; `None`: nothing to count).
    fn non_finite(&self, model: &M, grads: &GradientsParams) -> Option<Tensor<1>>;

    /// One optimizer step of `model`'s trained weights.
    fn step(&self, model: &mut M, optim: &mut ModuleOptimizer, rate: f64, grads: GradientsParams);

    /// A checkpoint: the model, the optimizer's state and the counters, atomically.
    fn save(&self, model: &M, optim: &ModuleOptimizer, state: &RunState) -> Result<(), TrainError>;

    /// The model as the run's best, atomically.
    fn save_best(&self, model: &M) -> Result<(), TrainError>;
}

/// When a stage evaluates and stops.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Schedule {
    /// Epochs of every batch, the dev sets scored after each; stops after `epochs`, or after
    /// `patience` epochs without a better dev score.
    Epochs { epochs: usize, patience: usize },
    /// `steps` steps; the held-out data scored every `eval_every` steps (0: never) and after
    /// the last.
    Steps { steps: usize, eval_every: usize },
}

/// The loop around a [`Stage`] that trains an `M`, for one run.
pub(crate) struct Driver<'a, M> {
    pub(crate) schedule: Schedule,
    pub(crate) optimizer: &'a OptimizerSettings,
    pub(crate) run: &'a RunSettings,
    pub(crate) weights: &'a dyn Weights<M>,
    pub(crate) log: &'a Log,
    /// The progress line's label in a [`Schedule::Steps`] run.
    pub(crate) label: &'a str,
    /// Print progress lines.
    pub(crate) progress: bool,
    /// Stop (as if killed) after this many steps in this process (tests).
    pub(crate) stop_after_steps: Option<usize>,
    /// Fields every epoch's log entry carries (the devices, for instance).
    pub(crate) epoch_fields: serde_json::Map<String, serde_json::Value>,
}

/// Where a run stands between two steps.
pub(crate) struct Trained<M> {
    pub(crate) model: M,
    pub(crate) optim: ModuleOptimizer,
    pub(crate) state: RunState,
}

/// What an epoch (or a step schedule) has read so far in this process, for its throughput line.
struct EpochClock {
    started: Instant,
    columns: usize,
    tokens: usize,
    /// Steps taken and read-backs of their numbers (the epoch's log entry reports both).
    steps: usize,
    read_backs: usize,
}

impl EpochClock {
    fn start() -> Self {
        EpochClock {
            started: Instant::now(),
            columns: 0,
            tokens: 0,
            steps: 0,
            read_backs: 0,
        }
    }
}

/// What the loop carries from window to window in this process.
struct Around {
    progress: Progress,
    clock: EpochClock,
    /// The losses of a step schedule since its last evaluation (its progress line's mean).
    since_evaluation: (f64, usize),
    /// The progress line's text as last read.
    text: String,
    /// Steps taken or skipped in this process.
    steps_here: usize,
    /// Read-backs of the steps' numbers in this process.
    read_backs: usize,
}

impl<M: Clone> Driver<'_, M> {
    fn total_steps(&self, batches: usize) -> usize {
        match self.schedule {
            Schedule::Epochs { epochs, .. } => epochs * batches,
            Schedule::Steps { steps, .. } => steps,
        }
    }

    fn done(&self, state: &RunState) -> bool {
        match self.schedule {
            Schedule::Epochs { epochs, .. } => state.finished || state.epoch >= epochs,
            Schedule::Steps { steps, .. } => state.step >= steps,
        }
    }

    /// Runs `stage` from `at` until the schedule ends (`Ok(true)`) or `stop_after_steps`
    /// (`Ok(false)`), checkpointing as the run's settings say.
    pub(crate) fn drive(
        &self,
        stage: &mut impl Stage<Model = M>,
        at: &mut Trained<M>,
    ) -> Result<bool, TrainError> {
        self.drive_counting(stage, at).map(|(finished, _)| finished)
    }

    /// [`Self::drive`], and how many times it read the steps' numbers back to the host.
    ///
    /// Steps run in windows that end at the logging cadence or where the run does something
    /// with the weights (a checkpoint, an evaluation, the end of an epoch). Every step of a
    /// window is taken as if it were finite; the window's losses, non-finite counts and logged
    /// numbers are then read back together. If a step was not finite, the window is taken back:
    /// the weights and optimizer from its start, the steps before the bad one taken again (each
    /// step is a function of the weights and the counters, so they come out the same), and the
    /// bad one stops the run or is skipped, as [`NonFinitePolicy`] says.
    ///
    /// [`NonFinitePolicy`]: super::NonFinitePolicy
    pub(crate) fn drive_counting(
        &self,
        stage: &mut impl Stage<Model = M>,
        at: &mut Trained<M>,
    ) -> Result<(bool, usize), TrainError> {
        let batches = stage.batches();
        if batches == 0 {
            return Err(TrainError::Config(
                "the training sets hold no labelled column to train on".into(),
            ));
        }
        let mut around = Around {
            progress: match self.schedule {
                Schedule::Steps { steps, .. } => Progress::new(self.label, steps, self.progress),
                Schedule::Epochs { .. } => self.epoch_progress(&at.state, batches),
            },
            clock: EpochClock::start(),
            since_evaluation: (0.0, 0),
            text: String::new(),
            steps_here: 0,
            read_backs: 0,
        };
        while !self.done(&at.state) {
            if self
                .stop_after_steps
                .is_some_and(|s| around.steps_here >= s)
            {
                return Ok((false, around.read_backs));
            }
            self.window(stage, at, batches, &mut around)?;
            self.after_window(stage, at, batches, &mut around)?;
        }
        if let Schedule::Steps { .. } = self.schedule {
            let clock = &around.clock;
            let seconds = clock.started.elapsed().as_secs_f64().max(1e-9);
            around.progress.finish(&format!(
                "done, {:.0} columns/s, {:.0} tokens/s",
                clock.columns as f64 / seconds,
                clock.tokens as f64 / seconds
            ));
        }
        Ok((true, around.read_backs))
    }

    /// One window of steps: taken, read back, and accepted, or taken back to its first
    /// non-finite step.
    fn window(
        &self,
        stage: &mut impl Stage<Model = M>,
        at: &mut Trained<M>,
        batches: usize,
        around: &mut Around,
    ) -> Result<(), TrainError> {
        let start = (at.model.clone(), at.optim.clone(), at.state.clone());
        let mut pending = Vec::new();
        loop {
            let step = self.take(stage, at, batches)?;
            around.steps_here += 1;
            if let Some(text) = &step.progress {
                around.text.clone_from(text);
            }
            around.progress.set(at.state.batch, &around.text);
            pending.push(step);
            if self.ends_window(&at.state, batches, around.steps_here) {
                break;
            }
        }
        let read = read_back(&pending);
        around.read_backs += 1;
        around.clock.read_backs += 1;
        let good = read.iter().take_while(|r| r.is_finite()).count();
        if good < read.len() {
            (at.model, at.optim, at.state) = start;
            for _ in 0..good {
                self.take(stage, at, batches)?;
            }
            around.steps_here -= pending.len() - good - 1;
        }
        self.accept(&pending[..good], &read[..good], at, around)?;
        if let (Some(bad), Some(numbers)) = (pending.get(good), read.get(good)) {
            self.skip(bad, numbers, &mut at.state)?;
        }
        around.progress.set(at.state.batch, &around.text);
        Ok(())
    }

    /// Computes and takes one step, its numbers left on the device.
    fn take(
        &self,
        stage: &mut impl Stage<Model = M>,
        at: &mut Trained<M>,
        batches: usize,
    ) -> Result<PendingStep, TrainError> {
        let computed = stage.gradients(&at.model, &at.state)?;
        let non_finite = self.weights.non_finite(&at.model, &computed.grads);
        let state = &mut at.state;
        let epoch = match self.schedule {
            Schedule::Epochs { .. } => state.epoch,
            Schedule::Steps { .. } => state.step / batches.max(1),
        };
        let Computed {
            loss,
            grads,
            tables,
            columns,
            tokens,
            entry,
            scalars,
            progress,
        } = computed;
        let pending = PendingStep {
            step: state.step,
            epoch,
            batch: state.batch,
            loss: loss.detach(),
            non_finite,
            scalars: scalars.into_iter().map(|(k, t)| (k, t.detach())).collect(),
            entry,
            tables,
            columns,
            tokens,
            progress,
        };
        let rate = learning_rate(self.optimizer, state.step, self.total_steps(batches));
        self.weights.step(&mut at.model, &mut at.optim, rate, grads);
        self.advance(state);
        Ok(pending)
    }

    fn advance(&self, state: &mut RunState) {
        state.step += 1;
        state.batch = match self.schedule {
            Schedule::Epochs { .. } => state.batch + 1,
            Schedule::Steps { .. } => state.step,
        };
    }

    /// Whether the window ends after a step that left the run at `state`: the logging cadence,
    /// a checkpoint, an evaluation, the end of an epoch or of the run, or `stop_after_steps`.
    fn ends_window(&self, state: &RunState, batches: usize, steps_here: usize) -> bool {
        let step = state.step;
        let every = |n: usize| n > 0 && step.is_multiple_of(n);
        every(self.run.log_every.max(1))
            || every(self.run.checkpoint_every)
            || self.stop_after_steps.is_some_and(|s| steps_here >= s)
            || match self.schedule {
                Schedule::Epochs { .. } => state.batch == batches,
                Schedule::Steps { steps, eval_every } => every(eval_every) || step >= steps,
            }
    }

    /// The finite steps of a window, read: the epoch's loss, the throughput counts, the log.
    fn accept(
        &self,
        steps: &[PendingStep],
        read: &[ReadStep],
        at: &mut Trained<M>,
        around: &mut Around,
    ) -> Result<(), TrainError> {
        let state = &mut at.state;
        for (step, numbers) in steps.iter().zip(read) {
            match self.schedule {
                Schedule::Epochs { .. } => {
                    state.epoch_loss.0 += numbers.loss;
                    state.epoch_loss.1 += 1;
                }
                Schedule::Steps { .. } => {
                    around.since_evaluation.0 += numbers.loss;
                    around.since_evaluation.1 += 1;
                }
            }
            around.clock.columns += step.columns;
            around.clock.steps += 1;
            around.clock.tokens += step.tokens;
            if (step.step + 1).is_multiple_of(self.run.log_every.max(1)) {
                self.log.write(&step.log_entry(numbers))?;
            }
        }
        if steps.last().is_some_and(|s| s.progress.is_none()) {
            let (sum, n) = match self.schedule {
                Schedule::Epochs { .. } => state.epoch_loss,
                Schedule::Steps { .. } => around.since_evaluation,
            };
            around.text = format!("loss {:.4}", sum / n.max(1) as f64);
        }
        Ok(())
    }

    /// A non-finite step, read: an error naming it, or (under the skip policy) logged and
    /// passed over.
    fn skip(
        &self,
        step: &PendingStep,
        read: &ReadStep,
        state: &mut RunState,
    ) -> Result<(), TrainError> {
        self.run
            .on_non_finite
            .take_step(read.loss, read.non_finite, step.epoch, step.step)?;
        self.log.write(&serde_json::json!({
            "event": "skip", "epoch": step.epoch, "step": step.step,
            "batch": step.batch, "loss": read.loss.to_string(),
            "non_finite_gradients": read.non_finite, "tables": step.tables,
        }))?;
        self.advance(state);
        Ok(())
    }

    /// What the run does after a window's last step: the end of an epoch, a checkpoint, an
    /// evaluation.
    fn after_window(
        &self,
        stage: &mut impl Stage<Model = M>,
        at: &mut Trained<M>,
        batches: usize,
        around: &mut Around,
    ) -> Result<(), TrainError> {
        let step = at.state.step;
        let checkpoint =
            self.run.checkpoint_every > 0 && step.is_multiple_of(self.run.checkpoint_every);
        match self.schedule {
            Schedule::Epochs { .. } if at.state.batch == batches => {
                self.end_epoch(stage, at, &around.clock, &mut around.progress)?;
                around.progress = self.epoch_progress(&at.state, batches);
                around.clock = EpochClock::start();
            }
            Schedule::Epochs { .. } => {
                if checkpoint {
                    self.weights.save(&at.model, &at.optim, &at.state)?;
                }
            }
            Schedule::Steps { steps, eval_every } => {
                if (eval_every > 0 && step.is_multiple_of(eval_every)) || step == steps {
                    self.evaluate_steps(stage, at, steps)?;
                    around.since_evaluation = (0.0, 0);
                } else if checkpoint {
                    self.weights.save(&at.model, &at.optim, &at.state)?;
                }
            }
        }
        Ok(())
    }

    fn epoch_progress(&self, state: &RunState, batches: usize) -> Progress {
        let epochs = match self.schedule {
            Schedule::Epochs { epochs, .. } => epochs,
            Schedule::Steps { .. } => 0,
        };
        Progress::new(
            format!("epoch {}/{}", state.epoch + 1, epochs),
            batches,
            self.progress,
        )
    }

    /// The end of an epoch: its throughput, the dev score, the best model, early stopping and
    /// the epoch's checkpoint.
    fn end_epoch(
        &self,
        stage: &mut impl Stage<Model = M>,
        at: &mut Trained<M>,
        clock: &EpochClock,
        progress: &mut Progress,
    ) -> Result<(), TrainError> {
        let Schedule::Epochs { epochs, patience } = self.schedule else {
            unreachable!("only an epoch schedule has epochs")
        };
        let state = &mut at.state;
        let train_loss = state.epoch_loss.0 / state.epoch_loss.1.max(1) as f64;
        let train_seconds = clock.started.elapsed().as_secs_f64().max(1e-9);
        progress.finish(&format!(
            "loss {train_loss:.4}, {:.0} columns/s, {:.0} tokens/s",
            clock.columns as f64 / train_seconds,
            clock.tokens as f64 / train_seconds
        ));
        let evaluation = stage.evaluate(&at.model)?;
        let score = evaluation.score;
        // Without dev sets, the last epoch counts as the best.
        let improved = match (score, state.best_score) {
            (None, _) | (Some(_), None) => true,
            (Some(s), Some(best)) => s > best,
        };
        if improved {
            state.best_score = score.or(state.best_score);
            state.best_epoch = Some(state.epoch);
            state.epochs_without_improvement = 0;
            self.weights.save_best(&at.model)?;
        } else {
            state.epochs_without_improvement += 1;
        }
        let mut entry = serde_json::json!({
            "event": "epoch", "epoch": state.epoch, "step": state.step,
            "train_loss": train_loss,
            "seconds": clock.started.elapsed().as_secs_f64(),
            "train_seconds": train_seconds, "train_columns": clock.columns,
            "train_tokens": clock.tokens, "dev_score": score, "best": improved,
            "train_steps": clock.steps, "read_backs": clock.read_backs,
        });
        let fields = self.epoch_fields.iter().chain(&evaluation.entry);
        entry
            .as_object_mut()
            .expect("a JSON object")
            .extend(fields.map(|(k, v)| (k.clone(), v.clone())));
        self.log.write(&entry)?;
        if self.progress {
            eprintln!(
                "epoch {} done in {}: {}{}",
                state.epoch + 1,
                format_duration(clock.started.elapsed().as_secs_f64()),
                evaluation.summary.as_deref().unwrap_or("no dev set"),
                if improved { " (best)" } else { "" }
            );
        }
        state.epoch += 1;
        state.batch = 0;
        state.epoch_loss = (0.0, 0);
        state.finished = state.epoch >= epochs
            || (score.is_some() && state.epochs_without_improvement >= patience.max(1));
        self.weights.save(&at.model, &at.optim, &at.state)
    }

    /// A dev evaluation of a step schedule: the best model and a checkpoint.
    fn evaluate_steps(
        &self,
        stage: &mut impl Stage<Model = M>,
        at: &mut Trained<M>,
        steps: usize,
    ) -> Result<(), TrainError> {
        let evaluation = stage.evaluate(&at.model)?;
        let state = &mut at.state;
        let mut entry = serde_json::Map::new();
        entry.insert("event".into(), evaluation.event.into());
        entry.insert("step".into(), state.step.into());
        if let Some(score) = evaluation.score {
            let improved = state.best_score.is_none_or(|b| score > b);
            if improved {
                state.best_score = Some(score);
                state.best_epoch = Some(state.step);
                self.weights.save_best(&at.model)?;
            }
            entry.insert("dev_score".into(), score.into());
            entry.insert("best".into(), improved.into());
        } else if state.step == steps {
            self.weights.save_best(&at.model)?;
        }
        if evaluation.score.is_some() || !evaluation.entry.is_empty() {
            entry.extend(evaluation.entry);
            self.log.write(&serde_json::Value::Object(entry))?;
        }
        state.finished = state.step == steps;
        self.weights.save(&at.model, &at.optim, &at.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::counting_stage::{counting, run, run_to_error};
    use crate::run::settings::NonFinitePolicy;

    #[test]
    fn a_step_schedule_evaluates_at_its_cadence_and_after_the_last_step() {
        let settings = RunSettings {
            checkpoint_every: 2,
            ..RunSettings::default()
        };
        let mut stage = counting(3, vec![Some(0.5), Some(0.4), Some(0.7)]);
        let steps = Schedule::Steps {
            steps: 7,
            eval_every: 3,
        };
        let (finished, at, saved, log) = run(steps, &mut stage, settings.clone(), None);
        assert!(finished && at.state.finished);
        assert_eq!(stage.evaluations, [3, 6, 7]);
        // A checkpoint at every evaluation, and every second step between them.
        assert_eq!(*saved.checkpoints.borrow(), [2, 3, 4, 6, 7]);
        assert_eq!(*saved.best.borrow(), [3, 7]);
        assert_eq!(at.state.best_score, Some(0.7));
        let dev: Vec<bool> = log
            .iter()
            .filter(|e| e["event"] == "dev")
            .map(|e| e["best"].as_bool().unwrap())
            .collect();
        assert_eq!(dev, [true, false, true]);

        let mut stage = counting(3, vec![Some(0.5)]);
        let only_at_the_end = Schedule::Steps {
            steps: 7,
            eval_every: 0,
        };
        run(only_at_the_end, &mut stage, settings, None);
        assert_eq!(stage.evaluations, [7]);
    }

    #[test]
    fn epochs_stop_after_patience_epochs_without_a_better_score() {
        let mut stage = counting(
            3,
            vec![Some(0.5), Some(0.6), Some(0.6), Some(0.55), Some(0.9)],
        );
        let schedule = Schedule::Epochs {
            epochs: 10,
            patience: 2,
        };
        let (finished, at, saved, log) = run(schedule, &mut stage, RunSettings::default(), None);
        assert!(finished);
        assert_eq!(
            at.state.epoch, 4,
            "two epochs without improvement after the second"
        );
        assert_eq!(at.state.best_epoch, Some(1));
        assert_eq!(*saved.best.borrow(), [3, 6]);
        // A checkpoint at each epoch's end, none between (checkpoint_every 0).
        assert_eq!(*saved.checkpoints.borrow(), [3, 6, 9, 12]);
        let epochs: Vec<&serde_json::Value> =
            log.iter().filter(|e| e["event"] == "epoch").collect();
        assert_eq!(epochs.len(), 4);
        assert_eq!(epochs[0]["train_columns"], 6);
    }

    #[test]
    fn a_non_finite_step_is_skipped_and_logged_or_stops_the_run() {
        let skip = RunSettings {
            on_non_finite: NonFinitePolicy::Skip,
            log_every: 1,
            ..RunSettings::default()
        };
        let mut stage = counting(4, vec![]);
        stage.nan_at = Some(1);
        let steps = Schedule::Steps {
            steps: 4,
            eval_every: 0,
        };
        let (_, at, _, log) = run(steps, &mut stage, skip, None);
        assert_eq!(at.model, 3, "the skipped step changed nothing");
        assert_eq!(at.state.step, 4);
        let skipped: Vec<&serde_json::Value> =
            log.iter().filter(|e| e["event"] == "skip").collect();
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0]["tables"][0], "table1");
        assert_eq!(log.iter().filter(|e| e["event"] == "step").count(), 3);

        let mut stage = counting(4, vec![]);
        stage.nan_at = Some(2);
        let (err, at) = run_to_error(steps, &mut stage, RunSettings::default());
        assert!(
            matches!(err, TrainError::NonFinite { step: 2, .. }),
            "{err}"
        );
        assert_eq!(at.model, 2);
    }

    #[test]
    fn numbers_are_read_back_once_per_logging_interval_not_per_step() {
        let every_five = RunSettings {
            log_every: 5,
            ..RunSettings::default()
        };
        let steps = Schedule::Steps {
            steps: 20,
            eval_every: 0,
        };
        let mut stage = counting(3, vec![]);
        let (_, at, saved, log) = run(steps, &mut stage, every_five.clone(), None);
        assert_eq!((at.model, stage.computed), (20, 20));
        assert_eq!(*saved.read_backs.borrow(), 4);
        let logged: Vec<u64> = log
            .iter()
            .filter(|e| e["event"] == "step")
            .map(|e| e["step"].as_u64().unwrap())
            .collect();
        assert_eq!(logged, [5, 10, 15, 20]);
        assert!(log.iter().all(|e| e["event"] != "step" || e["loss"] == 1.0));

        // Epochs of 7 batches: windows end at the log cadence and at each epoch's end.
        let epochs = Schedule::Epochs {
            epochs: 2,
            patience: 2,
        };
        let mut stage = counting(7, vec![]);
        let (_, at, saved, log) = run(epochs, &mut stage, every_five, None);
        assert_eq!(at.model, 14);
        assert_eq!(*saved.read_backs.borrow(), 4, "steps 1-5, 6-7, 8-10, 11-14");
        let epoch = log.iter().find(|e| e["event"] == "epoch").unwrap();
        assert_eq!(epoch["train_loss"], 1.0);
        assert_eq!(epoch["train_columns"], 14);
        // The epoch's entry counts its steps and read-backs: 7 steps, 2 reads (1-5, 6-7).
        assert_eq!(
            (epoch["train_steps"].clone(), epoch["read_backs"].clone()),
            (7.into(), 2.into())
        );
    }

    #[test]
    fn a_non_finite_step_inside_a_window_is_taken_back_and_skipped_or_stops_the_run() {
        let settings = |on_non_finite| RunSettings {
            on_non_finite,
            ..RunSettings::default()
        };
        let steps = Schedule::Steps {
            steps: 6,
            eval_every: 0,
        };
        let mut stage = counting(6, vec![]);
        stage.nan_at = Some(2);
        let (_, at, saved, log) = run(steps, &mut stage, settings(NonFinitePolicy::Skip), None);
        // The window of six steps was taken back to step 2: steps 0 and 1 taken again, step 2
        // skipped, steps 3 to 5 in a second window.
        assert_eq!(at.model, 5, "every step but the skipped one");
        assert_eq!(at.state.step, 6);
        assert_eq!(stage.computed, 6 + 2 + 3);
        assert_eq!(*saved.read_backs.borrow(), 2);
        let skipped: Vec<&serde_json::Value> =
            log.iter().filter(|e| e["event"] == "skip").collect();
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0]["step"], 2);
        assert_eq!(skipped[0]["tables"][0], "table2");
        assert_eq!(*saved.best.borrow(), [5]);

        let mut stage = counting(6, vec![]);
        stage.nan_at = Some(4);
        let (err, at) = run_to_error(steps, &mut stage, settings(NonFinitePolicy::Stop));
        assert!(
            matches!(err, TrainError::NonFinite { step: 4, .. }),
            "{err}"
        );
        assert_eq!(
            (at.model, at.state.step),
            (4, 4),
            "the steps before it stand"
        );
    }

    #[test]
    fn stop_after_steps_leaves_the_run_unfinished() {
        let mut stage = counting(5, vec![]);
        let schedule = Schedule::Epochs {
            epochs: 3,
            patience: 3,
        };
        let (finished, at, saved, _) = run(schedule, &mut stage, RunSettings::default(), Some(7));
        assert!(!finished);
        assert_eq!((at.state.step, at.state.epoch, at.state.batch), (7, 1, 2));
        assert_eq!(*saved.checkpoints.borrow(), [5]);
    }
}
