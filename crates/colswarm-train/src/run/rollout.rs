//! What the rollout stages (PARL's, the experts' routing) share in a step: the batch, the
//! schedule's progress and the rollout generator, all drawn from the seed and the step alone
//! (so a step taken again is the same step), and the step's log entry and counts.

use std::time::Instant;

use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use colswarm_model::Example;
use rand_chacha::ChaCha8Rng;

use super::dir::RunState;
use super::driver::Computed;
use super::rng::{ROLLOUT_STREAM, rng_for, step_batch};

/// A rollout step's inputs, drawn by [`RolloutStep::draw`].
pub(crate) struct RolloutStep<'a, T> {
    /// The batch.
    pub(crate) picked: Vec<&'a T>,
    /// The annealing schedule's progress, `step / steps`.
    pub(crate) progress: f64,
    /// The step's rollout generator.
    pub(crate) rng: ChaCha8Rng,
    started: Instant,
}

impl<'a, T> RolloutStep<'a, T> {
    /// The batch of `batch_size` of `items`, the progress and the generator of step
    /// `state.step` of a run of `steps` steps seeded `seed`.
    pub(crate) fn draw(
        items: &'a [T],
        seed: u64,
        state: &RunState,
        batch_size: usize,
        steps: usize,
    ) -> Self {
        let started = Instant::now();
        let picked = step_batch(seed, state.step, batch_size, items.len())
            .into_iter()
            .map(|i| &items[i])
            .collect();
        RolloutStep {
            picked,
            progress: state.step as f64 / steps as f64,
            rng: rng_for(seed, ROLLOUT_STREAM, state.step as u64),
            started,
        }
    }

    /// The step's [`Computed`]: `entry` (the stage's statistics) gains the progress and the
    /// step's seconds; `line` is the progress line; `example` gives each item's table.
    pub(crate) fn finish(
        self,
        loss: Tensor<1>,
        scalars: Vec<(&'static str, Tensor<1>)>,
        grads: GradientsParams,
        mut entry: serde_json::Value,
        line: String,
        example: impl Fn(&T) -> &Example,
    ) -> Computed {
        entry["progress"] = self.progress.into();
        entry["seconds"] = self.started.elapsed().as_secs_f64().into();
        let examples: Vec<&Example> = self.picked.iter().map(|t| example(t)).collect();
        Computed {
            loss,
            scalars,
            grads,
            tables: examples.iter().map(|e| e.table_id.clone()).collect(),
            columns: examples.iter().map(|e| e.columns.len()).sum(),
            tokens: examples.iter().map(|e| e.n_tokens()).sum(),
            entry,
            progress: Some(line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_draws_the_same_batch_and_generator_whenever_it_is_taken() {
        use rand::RngCore;
        let items: Vec<usize> = (0..50).collect();
        let state = RunState {
            step: 7,
            ..RunState::default()
        };
        let mut a = RolloutStep::draw(&items, 3, &state, 8, 20);
        let mut b = RolloutStep::draw(&items, 3, &state, 8, 20);
        assert_eq!(a.picked, b.picked);
        assert_eq!(a.picked.len(), 8);
        assert_eq!(a.rng.next_u64(), b.rng.next_u64());
        assert!((a.progress - 0.35).abs() < 1e-12);
        let later = RunState {
            step: 8,
            ..RunState::default()
        };
        let c = RolloutStep::draw(&items, 3, &later, 8, 20);
        assert_ne!(a.picked, c.picked);
    }
}
