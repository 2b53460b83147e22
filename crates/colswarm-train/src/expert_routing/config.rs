//! What a run that trains the experts' routing depends on (data only; `training.rs` checks
//! and uses it).

use std::path::PathBuf;

use burn::tensor::Device;
use colswarm_parl::{ObjectiveConfig, RewardConfig};
use colswarm_tables::DataSpec;
use serde::{Deserialize, Serialize};

use crate::parl::ScheduleChoice;
use crate::run::{LrDecay, OptimizerSettings, RunSettings};

/// Everything a run of the experts' routing depends on (stored as `run.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertRoutingConfig {
    /// The model directory whose experts are routed (its primary, heads and experts stay
    /// frozen).
    pub model: PathBuf,
    /// Tables the router and the mix learn from: tables neither the primary's heads nor the
    /// experts were fitted on (e.g. `#folds=` of a cross-validation the model was not trained
    /// on), or the reward rewards nothing the router could carry to new tables.
    pub train: Vec<DataSpec>,
    /// Tables that choose the best step (mean micro-F1 with threshold routing); none: the last
    /// step's routing is kept.
    pub dev: Vec<DataSpec>,
    /// Optimizer steps.
    pub steps: usize,
    /// Steps between dev evaluations, each of which also writes a checkpoint (0: after the last
    /// step only).
    pub eval_every: usize,
    /// Rollouts per table (K ≥ 2).
    pub rollouts: usize,
    /// λ schedule of `r_parallel` and `r_finish`.
    pub schedule: ScheduleChoice,
    /// The reward terms' settings (its schedule is replaced by `schedule`).
    pub reward: RewardConfig,
    /// Subtracted from a rollout's reward for each expert it opens.
    pub read_cost: f64,
    /// The policy objective.
    pub objective: ObjectiveConfig,
    /// Weight of the mix's supervised loss (the heads' loss of the mixed logits).
    pub mix_weight: f64,
    /// Train the router (PARL); `false` keeps the model's router and trains the mix alone.
    pub train_router: bool,
    /// Where the mix starts: `None` from the model's own (for a directory without a trained
    /// routing, the plain average), `Some(θ)` from every weight at `θ` (0: the identity).
    pub mix_start: Option<f64>,
    /// How the loss is minimised (`batch_size` tables per step).
    pub optimizer: OptimizerSettings,
    /// The seed, checkpoints, logging and non-finite steps.
    pub run: RunSettings,
}

impl Default for ExpertRoutingConfig {
    fn default() -> Self {
        ExpertRoutingConfig {
            model: PathBuf::new(),
            train: Vec::new(),
            dev: Vec::new(),
            steps: 300,
            eval_every: 50,
            rollouts: 4,
            schedule: ScheduleChoice::Aegir,
            reward: RewardConfig::default(),
            read_cost: 0.002,
            objective: ObjectiveConfig::default(),
            mix_weight: 1.0,
            train_router: true,
            mix_start: None,
            // A few hundred weights: a larger rate than the PARL stage's.
            optimizer: OptimizerSettings {
                batch_size: 16,
                learning_rate: 1e-2,
                warmup_steps: 0,
                lr_decay: LrDecay::Constant,
                grad_clip: None,
                weight_decay: 0.0,
            },
            run: RunSettings {
                log_every: 1,
                ..RunSettings::default()
            },
        }
    }
}

/// How the run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExpertRoutingSummary {
    /// Steps done.
    pub steps: usize,
    /// Best dev score (mean micro-F1 with threshold routing) and its step.
    pub best: Option<(f64, usize)>,
    /// The model directory with the trained routing: `best/` with dev sets, `model/` without.
    pub model_dir: PathBuf,
}

/// How the run reports and where it runs; not part of its configuration.
#[derive(Clone, Debug, Default)]
pub struct ExpertRoutingOptions {
    /// Progress lines on stderr.
    pub progress: bool,
    /// The device the frozen models read the tables on and the routing trains on (autodiff
    /// is added); `None`: the CPU.
    pub device: Option<Device>,
}
