//! What a pretraining run is: its objective, the specialist's size, how its synthetic tables
//! look, the optimizer and the run (data only; `training.rs` checks and uses it).

use std::str::FromStr;

use colswarm_model::SerializeSettings;
use colswarm_rwkv::RwkvConfig;
use colswarm_tables::VOCAB_SIZE;
use serde::{Deserialize, Serialize};

use crate::run::{LrDecay, OptimizerSettings, RunSettings};

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

/// The specialist's size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EncoderSettings {
    /// Width.
    pub d_model: usize,
    /// Layers.
    pub n_layers: usize,
    /// Head size (the width must be a multiple).
    pub head_size: usize,
}

/// The specialist's RWKV-7 configuration.
pub fn encoder_config(encoder: &EncoderSettings) -> RwkvConfig {
    RwkvConfig::new(VOCAB_SIZE, encoder.d_model, encoder.n_layers).with_head_size(encoder.head_size)
}

/// What a pretraining run reads: synthetic tables drawn from the corpus, and the part of it
/// held out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PretrainData {
    /// How synthetic tables are serialized (the shipped model's settings, so a specialist reads
    /// tables in pretraining as it will in the swarm).
    pub serialize: SerializeSettings,
    /// At most this many columns per synthetic table.
    pub max_columns: usize,
    /// One entry in this many (by a hash of its text, or of its table's id) is held out from
    /// training and scored at the end.
    pub held_out_every: u64,
    /// Held-out synthetic tables scored at each evaluation.
    pub eval_tables: usize,
}

/// A pretraining run (stored as `run.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PretrainConfig {
    /// The objective.
    pub objective: Objective,
    /// The specialist's size.
    pub encoder: EncoderSettings,
    /// The synthetic tables and the held-out part.
    pub data: PretrainData,
    /// Optimizer steps.
    pub steps: usize,
    /// Score the held-out tables every this many steps (0: only at the end).
    pub eval_every: usize,
    /// How the loss is minimised (`batch_size` synthetic tables per step).
    pub optimizer: OptimizerSettings,
    /// The seed (of the weights and of every synthetic table), checkpoints and logging.
    pub run: RunSettings,
}

impl PretrainConfig {
    /// Defaults for `objective`: a 2-layer, 64-wide specialist (the primary's size) reading
    /// tables as the shipped model serializes them.
    pub fn new(objective: Objective) -> Self {
        PretrainConfig {
            objective,
            encoder: EncoderSettings {
                d_model: 64,
                n_layers: 2,
                head_size: 32,
            },
            data: PretrainData {
                serialize: SerializeSettings::default(),
                max_columns: 3,
                held_out_every: 20,
                eval_tables: 256,
            },
            steps: 2000,
            eval_every: 500,
            optimizer: OptimizerSettings {
                batch_size: 32,
                learning_rate: 2e-3,
                warmup_steps: 50,
                lr_decay: LrDecay::Constant,
                grad_clip: Some(1.0),
                weight_decay: 0.0,
            },
            run: RunSettings {
                checkpoint_every: 200,
                ..RunSettings::default()
            },
        }
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
}
