//! What a PARL run depends on (data only; `training.rs` checks and uses it).

use std::path::PathBuf;
use std::str::FromStr;

use burn::tensor::Device;
use colswarm_parl::{LambdaSchedule, ObjectiveConfig, RewardConfig, Schedule};
use colswarm_tables::DataSpec;
use serde::{Deserialize, Serialize};

use crate::error::TrainError;
use crate::run::{LrDecay, OptimizerSettings, RunSettings};

/// Which λ schedule the stage uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ScheduleChoice {
    /// Aegir's piecewise table (0.3/0.1 → 0.1/0.3 → 0.05/0.05 at 30% / 70%).
    Aegir,
    /// Linear from (0.3, 0.1) to (0, 0).
    Linear,
    /// Cosine from (0.3, 0.1) to (0, 0).
    Cosine,
    /// The ablation: λ1 = 0 throughout, λ2 as Aegir's.
    ZeroParallel,
    /// The ablation of both terms: λ1 = λ2 = 0, the reward r_perf (and, with experts, the
    /// read cost) alone.
    Zero,
}

impl FromStr for ScheduleChoice {
    type Err = TrainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "aegir" => Ok(ScheduleChoice::Aegir),
            "linear" => Ok(ScheduleChoice::Linear),
            "cosine" => Ok(ScheduleChoice::Cosine),
            "zero-parallel" => Ok(ScheduleChoice::ZeroParallel),
            "zero" => Ok(ScheduleChoice::Zero),
            _ => Err(TrainError::Config(format!(
                "unknown schedule `{s}` (expected aegir, linear, cosine, zero-parallel or zero)"
            ))),
        }
    }
}

impl ScheduleChoice {
    /// The λ schedule.
    pub fn schedule(&self) -> LambdaSchedule {
        match self {
            ScheduleChoice::Aegir => LambdaSchedule::aegir(),
            ScheduleChoice::Linear => LambdaSchedule::linear_to_zero(0.3, 0.1),
            ScheduleChoice::Cosine => LambdaSchedule::cosine_to_zero(0.3, 0.1),
            ScheduleChoice::ZeroParallel => LambdaSchedule {
                parallel: Schedule::Constant { value: 0.0 },
                ..LambdaSchedule::aegir()
            },
            ScheduleChoice::Zero => LambdaSchedule {
                parallel: Schedule::Constant { value: 0.0 },
                finish: Schedule::Constant { value: 0.0 },
            },
        }
    }
}

/// Everything a PARL run depends on (stored as `run.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParlConfig {
    /// The supervised model (with specialists) to start from.
    pub model: PathBuf,
    /// Training sets (namespaces of the model).
    pub train: Vec<DataSpec>,
    /// Dev sets.
    pub dev: Vec<DataSpec>,
    /// Optimizer steps.
    pub steps: usize,
    /// Steps between dev evaluations, each of which also writes a checkpoint (0: only after the
    /// last step).
    pub eval_every: usize,
    /// Rollouts per table (K ≥ 2).
    pub rollouts: usize,
    /// λ schedule.
    pub schedule: ScheduleChoice,
    /// Reward terms' settings (its schedule is replaced by `schedule`).
    pub reward: RewardConfig,
    /// The policy objective.
    pub objective: ObjectiveConfig,
    /// Weight of the supervised loss.
    pub supervised_weight: f64,
    /// How the loss is minimised (`batch_size` tables per step).
    pub optimizer: OptimizerSettings,
    /// The seed, checkpoints, logging and non-finite steps.
    pub run: RunSettings,
}

impl Default for ParlConfig {
    fn default() -> Self {
        ParlConfig {
            model: PathBuf::new(),
            train: Vec::new(),
            dev: Vec::new(),
            steps: 200,
            eval_every: 50,
            rollouts: 4,
            schedule: ScheduleChoice::Aegir,
            reward: RewardConfig::default(),
            objective: ObjectiveConfig::default(),
            supervised_weight: 1.0,
            // A small constant rate, no clipping: the router starts from a trained model.
            optimizer: OptimizerSettings {
                batch_size: 4,
                learning_rate: 2e-4,
                warmup_steps: 0,
                lr_decay: LrDecay::Constant,
                grad_clip: None,
                weight_decay: 0.0,
            },
            // Every step is logged; checkpoints at the dev evaluations.
            run: RunSettings {
                log_every: 1,
                ..RunSettings::default()
            },
        }
    }
}

/// How a PARL run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ParlSummary {
    /// Steps done.
    pub steps: usize,
    /// Best dev score (mean micro-F1, threshold routing) and its step.
    pub best: Option<(f64, usize)>,
    /// Dev activation rate at the last evaluation.
    pub last_activation_rate: Option<f64>,
    /// The best model's directory.
    pub model_dir: PathBuf,
}

/// How a PARL run reports and where it runs; not part of the run's configuration, so a run
/// may be resumed on another device.
#[derive(Clone, Debug, Default)]
pub struct ParlOptions {
    /// Progress lines on stderr.
    pub progress: bool,
    /// The device to train on (autodiff is added); `None`: the CPU (burn's Flex backend).
    pub device: Option<Device>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ablations_zero_their_terms_and_an_unknown_schedule_lists_the_known() {
        for p in [0.0, 0.5, 1.0] {
            let zero = "zero"
                .parse::<ScheduleChoice>()
                .unwrap()
                .schedule()
                .at(p)
                .unwrap();
            assert_eq!((zero.parallel, zero.finish), (0.0, 0.0), "at {p}");
            let aegir = ScheduleChoice::Aegir.schedule().at(p).unwrap();
            let no_parallel = ScheduleChoice::ZeroParallel.schedule().at(p).unwrap();
            assert_eq!(
                (no_parallel.parallel, no_parallel.finish),
                (0.0, aegir.finish)
            );
        }
        assert!(ScheduleChoice::Aegir.schedule().at(0.0).unwrap().parallel > 0.0);
        let err = "none".parse::<ScheduleChoice>().unwrap_err().to_string();
        assert!(err.contains("zero-parallel or zero"), "{err}");
    }
}
