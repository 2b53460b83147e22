//! The settings every training stage shares: how the loss is minimised ([`OptimizerSettings`])
//! and how a run is kept ([`RunSettings`]). They are data: the optimizer they describe, the
//! learning rate at a step and their checks are functions of the run machinery
//! ([`build_optimizer`], [`learning_rate`], [`check_optimizer`]), which every stage calls.

use burn::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamConfig, AdamWConfig, ModuleOptimizer};
use serde::{Deserialize, Serialize};

use crate::error::TrainError;

/// What to do when a batch's loss or one of its gradients is NaN or infinite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NonFinitePolicy {
    /// Stop with [`TrainError::NonFinite`] or [`TrainError::NonFiniteGradients`] (the last
    /// checkpoint stays).
    #[default]
    Stop,
    /// Skip the batch (no update) and log it.
    Skip,
}

impl NonFinitePolicy {
    /// Whether the step of `loss`, whose gradients hold `bad_gradients` non-finite tensors,
    /// is taken: `Ok(true)` when all is finite, `Ok(false)` when it is to be skipped, an error
    /// naming the step when the policy stops.
    pub fn take_step(
        self,
        loss: f64,
        bad_gradients: usize,
        epoch: usize,
        step: usize,
    ) -> Result<bool, TrainError> {
        if loss.is_finite() && bad_gradients == 0 {
            return Ok(true);
        }
        match self {
            NonFinitePolicy::Stop if bad_gradients > 0 => Err(TrainError::NonFiniteGradients {
                epoch,
                step,
                tensors: bad_gradients,
            }),
            NonFinitePolicy::Stop => Err(TrainError::NonFinite { epoch, step, loss }),
            NonFinitePolicy::Skip => Ok(false),
        }
    }
}

/// How the learning rate falls after the warm-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LrDecay {
    /// The same rate at every step.
    #[default]
    Constant,
    /// From the rate at the first step down to zero after the run's last step.
    Linear,
}

impl std::str::FromStr for LrDecay {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "constant" => Ok(LrDecay::Constant),
            "linear" => Ok(LrDecay::Linear),
            _ => Err(format!("unknown decay `{s}` (expected constant or linear)")),
        }
    }
}

/// How a stage minimises its loss: Adam, or AdamW with weight decay. Every stage has one; the
/// default is the supervised stage's recipe (the other stages' configurations start from their
/// own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimizerSettings {
    /// Tables per optimizer step.
    pub batch_size: usize,
    /// Adam's learning rate (the peak, after the warm-up and before any decay).
    pub learning_rate: f64,
    /// Steps over which the rate rises linearly to `learning_rate` (0: none).
    pub warmup_steps: usize,
    /// How the rate falls over the run.
    pub lr_decay: LrDecay,
    /// Per-parameter gradient norm clip.
    pub grad_clip: Option<f32>,
    /// Decoupled weight decay (AdamW) per step, times the learning rate; 0 is plain Adam.
    pub weight_decay: f32,
}

impl Default for OptimizerSettings {
    fn default() -> Self {
        OptimizerSettings {
            batch_size: 8,
            learning_rate: 5e-3,
            warmup_steps: 0,
            lr_decay: LrDecay::Constant,
            grad_clip: Some(1.0),
            weight_decay: 0.0,
        }
    }
}

/// How a run is kept: its seed, checkpoints, log and what it does with a non-finite step.
/// Every stage has one; the default is the supervised stage's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Every random choice derives from it.
    pub seed: u64,
    /// Steps between checkpoints (0: only where the stage must write one: at epoch ends, at
    /// dev evaluations and at the end).
    pub checkpoint_every: usize,
    /// Checkpoints kept (besides `best/`).
    pub keep_last: usize,
    /// Steps between log lines.
    pub log_every: usize,
    /// NaN/inf handling.
    pub on_non_finite: NonFinitePolicy,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            seed: 0,
            checkpoint_every: 0,
            keep_last: 2,
            log_every: 10,
            on_non_finite: NonFinitePolicy::Stop,
        }
    }
}

/// The optimizer `settings` describe, clipping each gradient if they ask.
pub fn build_optimizer(settings: &OptimizerSettings) -> ModuleOptimizer {
    let clipping = settings.grad_clip.map(GradientClippingConfig::Norm);
    if settings.weight_decay > 0.0 {
        // Decoupled (AdamW): an L2 term added to Adam's gradient would be rescaled per weight.
        AdamWConfig::new()
            .with_weight_decay(settings.weight_decay)
            .with_grad_clipping(clipping)
            .init()
    } else {
        AdamConfig::new().with_grad_clipping(clipping).init()
    }
}

/// The learning rate of optimizer step `step` (counted from 0) of a run of `total_steps`: a
/// linear warm-up, then constant or decaying linearly to zero after the last step. A resumed run
/// with more steps decays more slowly from the step it resumes at.
pub fn learning_rate(settings: &OptimizerSettings, step: usize, total_steps: usize) -> f64 {
    let warm = ((step + 1) as f64 / settings.warmup_steps.max(1) as f64).min(1.0);
    let decay = match settings.lr_decay {
        LrDecay::Constant => 1.0,
        LrDecay::Linear => (1.0 - step as f64 / total_steps.max(1) as f64).max(0.0),
    };
    settings.learning_rate * warm * decay
}

/// Refuses settings no run can use.
pub fn check_optimizer(settings: &OptimizerSettings) -> Result<(), TrainError> {
    let fail = |m: String| Err(TrainError::Config(m));
    if settings.batch_size == 0 {
        return fail("the batch size must be at least 1".into());
    }
    if !(settings.learning_rate > 0.0 && settings.learning_rate.is_finite()) {
        return fail(format!(
            "learning rate {} is not positive",
            settings.learning_rate
        ));
    }
    if !(settings.weight_decay >= 0.0 && settings.weight_decay.is_finite()) {
        return fail(format!(
            "weight decay {} is not a finite number ≥ 0",
            settings.weight_decay
        ));
    }
    if let Some(clip) = settings.grad_clip
        && !(clip > 0.0 && clip.is_finite())
    {
        return fail(format!("gradient clip {clip} is not positive"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_decay_reaches_zero_after_the_last_step() {
        let settings = OptimizerSettings {
            learning_rate: 1.0,
            lr_decay: LrDecay::Linear,
            ..OptimizerSettings::default()
        };
        assert_eq!(learning_rate(&settings, 0, 10), 1.0);
        assert_eq!(learning_rate(&settings, 5, 10), 0.5);
        assert!((learning_rate(&settings, 9, 10) - 0.1).abs() < 1e-12);
        assert_eq!(learning_rate(&settings, 12, 10), 0.0, "never negative");
        let constant = OptimizerSettings {
            lr_decay: LrDecay::Constant,
            ..settings
        };
        assert_eq!(learning_rate(&constant, 9, 10), 1.0);
    }

    #[test]
    fn warm_up_rises_linearly_then_holds() {
        let settings = OptimizerSettings {
            learning_rate: 2.0,
            warmup_steps: 4,
            ..OptimizerSettings::default()
        };
        let rates: Vec<f64> = (0..6).map(|s| learning_rate(&settings, s, 100)).collect();
        assert_eq!(rates, [0.5, 1.0, 1.5, 2.0, 2.0, 2.0]);
    }

    #[test]
    fn unusable_settings_are_refused_with_the_value() {
        let bad = [
            OptimizerSettings {
                batch_size: 0,
                ..OptimizerSettings::default()
            },
            OptimizerSettings {
                learning_rate: f64::NAN,
                ..OptimizerSettings::default()
            },
            OptimizerSettings {
                weight_decay: -1.0,
                ..OptimizerSettings::default()
            },
            OptimizerSettings {
                grad_clip: Some(0.0),
                ..OptimizerSettings::default()
            },
        ];
        for settings in bad {
            assert!(check_optimizer(&settings).is_err(), "{settings:?}");
        }
        assert!(check_optimizer(&OptimizerSettings::default()).is_ok());
    }
}
