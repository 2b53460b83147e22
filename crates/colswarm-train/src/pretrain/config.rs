//! What a pretraining run is: its objective, the specialist's size, how its synthetic tables
//! look, and the optimizer.

use std::str::FromStr;

use colswarm_model::SerializeSettings;
use colswarm_rwkv::RwkvConfig;
use colswarm_tables::VOCAB_SIZE;
use serde::{Deserialize, Serialize};

use crate::error::TrainError;

/// What a specialist learns from the corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Its reading of a column (a single string or several cells of one source) regresses the
    /// teacher's embedding of those cells (cosine loss).
    Distill,
    /// Classifies synthetic columns drawn from the gazetteers, with noise, into gazetteer types
    /// (cross-entropy).
    Gazetteer,
    /// From a column's cells in an unlabelled table, predicts the teacher's embedding of its
    /// header (cosine loss).
    Header,
}

impl Objective {
    /// Every objective, in CLI order.
    pub const ALL: [Objective; 3] = [Objective::Distill, Objective::Gazetteer, Objective::Header];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Distill => "distill",
            Objective::Gazetteer => "gazetteer",
            Objective::Header => "header",
        }
    }

    /// Whether the objective reads the teacher's embeddings.
    pub fn needs_teacher(self) -> bool {
        matches!(self, Objective::Distill | Objective::Header)
    }
}

impl FromStr for Objective {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Objective::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| {
                format!("unknown objective `{s}` (expected distill, gazetteer or header)")
            })
    }
}

/// A pretraining run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PretrainConfig {
    /// The objective.
    pub objective: Objective,
    /// The specialist's width.
    pub d_model: usize,
    /// The specialist's layers.
    pub n_layers: usize,
    /// The specialist's head size.
    pub head_size: usize,
    /// How synthetic tables are serialized (the shipped model's settings, so a specialist reads
    /// tables in pretraining as it will in the swarm).
    pub serialize: SerializeSettings,
    /// Synthetic tables per step.
    pub batch_size: usize,
    /// At most this many columns per synthetic table.
    pub max_columns: usize,
    /// Optimizer steps.
    pub steps: usize,
    /// Adam's learning rate (constant after a linear warm-up of `warmup_steps`).
    pub learning_rate: f64,
    /// Steps of linear warm-up.
    pub warmup_steps: usize,
    /// Gradient norm clipping.
    pub grad_clip: Option<f32>,
    /// One entry in this many (by a hash of its text, or of its table's id) is held out from
    /// training and scored at the end.
    pub held_out_every: u64,
    /// Held-out synthetic tables scored at each evaluation.
    pub eval_tables: usize,
    /// Evaluate the held-out set every this many steps (0: only at the end).
    pub eval_every: usize,
    /// Write a checkpoint every this many steps (and at the end).
    pub checkpoint_every: usize,
    /// Checkpoints kept.
    pub keep_last: usize,
    /// Log a step entry every this many steps.
    pub log_every: usize,
    /// Seed of the weights and of every synthetic table.
    pub seed: u64,
}

impl PretrainConfig {
    /// Defaults for `objective`: a 2-layer, 64-wide specialist (the primary's size) reading
    /// tables as the shipped model serializes them.
    pub fn new(objective: Objective) -> Self {
        PretrainConfig {
            objective,
            d_model: 64,
            n_layers: 2,
            head_size: 32,
            // Tables read as the shipped model reads them.
            serialize: SerializeSettings::default(),
            batch_size: 32,
            max_columns: 3,
            steps: 2000,
            learning_rate: 2e-3,
            warmup_steps: 50,
            grad_clip: Some(1.0),
            held_out_every: 20,
            eval_tables: 256,
            eval_every: 500,
            checkpoint_every: 200,
            keep_last: 2,
            log_every: 10,
            seed: 0,
        }
    }

    /// The specialist's RWKV-7 configuration.
    pub fn encoder(&self) -> RwkvConfig {
        RwkvConfig::new(VOCAB_SIZE, self.d_model, self.n_layers).with_head_size(self.head_size)
    }

    /// Refuses configurations that cannot run.
    pub fn validate(&self) -> Result<(), TrainError> {
        let fail = |what: &str| Err(TrainError::Config(what.to_string()));
        if self.steps == 0 || self.batch_size == 0 || self.max_columns == 0 {
            return fail("steps, batch size and columns per table must be at least 1");
        }
        if self.head_size == 0 || !self.d_model.is_multiple_of(self.head_size) {
            return fail("the width must be a positive multiple of the head size");
        }
        if self.held_out_every < 2 {
            return fail("held_out_every must be at least 2 (one entry in N is held out)");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return fail("the learning rate must be positive");
        }
        self.encoder()
            .validate()
            .map_err(|e| TrainError::Config(e.to_string()))
    }

    /// Whether a run begun with `stored` may continue under this configuration: only the step
    /// budget and the bookkeeping may change.
    pub fn resumable_from(&self, stored: &PretrainConfig) -> bool {
        let mut same = stored.clone();
        same.steps = self.steps;
        same.eval_every = self.eval_every;
        same.checkpoint_every = self.checkpoint_every;
        same.keep_last = self.keep_last;
        same.log_every = self.log_every;
        &same == self
    }

    /// The learning rate at `step` (0-based).
    pub fn learning_rate_at(&self, step: usize) -> f64 {
        let warm = (step + 1) as f64 / self.warmup_steps.max(1) as f64;
        self.learning_rate * warm.min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_by_name_and_refuse_others() {
        for o in Objective::ALL {
            assert_eq!(o.name().parse::<Objective>(), Ok(o));
        }
        assert!(
            "typing"
                .parse::<Objective>()
                .unwrap_err()
                .contains("typing")
        );
    }

    #[test]
    fn only_the_budget_and_bookkeeping_may_change_on_resume() {
        let config = PretrainConfig::new(Objective::Gazetteer);
        let mut longer = config.clone();
        longer.steps *= 2;
        longer.log_every = 1;
        assert!(longer.resumable_from(&config));
        let mut other = config.clone();
        other.seed += 1;
        assert!(!other.resumable_from(&config));
    }

    #[test]
    fn invalid_configurations_are_refused() {
        let mut config = PretrainConfig::new(Objective::Distill);
        config.d_model = 50;
        assert!(config.validate().is_err());
        let mut config = PretrainConfig::new(Objective::Distill);
        config.held_out_every = 1;
        assert!(config.validate().is_err());
        assert!(PretrainConfig::new(Objective::Header).validate().is_ok());
    }
}
