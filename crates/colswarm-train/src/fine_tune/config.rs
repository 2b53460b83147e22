//! The settings of a fine-tuning run.

use serde::{Deserialize, Serialize};

/// How [`super::fine_tune`] fits the new namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FineTuneConfig {
    /// The new namespace's name (not one the model has).
    pub namespace: String,
    /// Seed of the head's initial weights.
    pub seed: u64,
    /// Candidate L2 penalties on the head's weights; the held-out slice picks one.
    pub l2: Vec<f64>,
    /// Most full-batch Adam steps; the held-out slice picks how many.
    pub max_steps: usize,
    /// Held-out log-loss is read every this many steps.
    pub eval_every: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// Tables per forward pass while extracting features.
    pub batch_size: usize,
    /// Choose an abstention threshold on the held-out slice.
    pub abstain: bool,
    /// Labels with fewer labelled columns than this are reported as too rare.
    pub min_examples: usize,
    /// Print progress on stderr.
    pub progress: bool,
}

impl FineTuneConfig {
    /// The defaults for a namespace `name` (chosen on GitTables' schema.org labels; see the
    /// fine-tuning guide).
    pub fn new(name: impl Into<String>) -> Self {
        FineTuneConfig {
            namespace: name.into(),
            seed: 0,
            l2: vec![0.01, 0.03, 0.1, 0.3, 1.0],
            max_steps: 300,
            eval_every: 10,
            learning_rate: 0.05,
            batch_size: 16,
            abstain: true,
            min_examples: 5,
            progress: false,
        }
    }
}
