//! Critical steps: the latency of a staged swarm, against the serial sum.

use serde::{Deserialize, Serialize};

/// One stage of the swarm: work on the main (primary) path, then specialists in parallel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// What happens in the stage.
    pub name: String,
    /// Recurrent steps (tokens) on the main path.
    pub main_tokens: usize,
    /// Wall-clock seconds on the main path.
    pub main_seconds: f64,
    /// Per active specialist: tokens and seconds.
    pub sub: Vec<(usize, f64)>,
}

impl Stage {
    /// A stage with main-path work only.
    pub fn main(name: &str, tokens: usize, seconds: f64) -> Self {
        Self {
            name: name.into(),
            main_tokens: tokens,
            main_seconds: seconds,
            sub: Vec::new(),
        }
    }

    /// A stage of parallel specialist work only.
    pub fn parallel(name: &str, sub: Vec<(usize, f64)>) -> Self {
        Self {
            name: name.into(),
            main_tokens: 0,
            main_seconds: 0.0,
            sub,
        }
    }
}

/// `Σ_stages (main + max over active specialists)` (K2.5's critical steps), next to the serial
/// sum `Σ_stages (main + Σ specialists)`, in tokens and in wall-clock seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriticalSteps {
    /// The stages, in order.
    pub stages: Vec<Stage>,
}

impl CriticalSteps {
    /// Wraps the stages.
    pub fn new(stages: Vec<Stage>) -> Self {
        Self { stages }
    }

    /// `Σ (main + max sub)` in tokens.
    pub fn critical_tokens(&self) -> usize {
        self.stages
            .iter()
            .map(|s| s.main_tokens + s.sub.iter().map(|x| x.0).max().unwrap_or(0))
            .sum()
    }

    /// `Σ (main + Σ sub)` in tokens.
    pub fn serial_tokens(&self) -> usize {
        self.stages
            .iter()
            .map(|s| s.main_tokens + s.sub.iter().map(|x| x.0).sum::<usize>())
            .sum()
    }

    /// `Σ (main + max sub)` in seconds.
    pub fn critical_seconds(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.main_seconds + s.sub.iter().map(|x| x.1).fold(0.0, f64::max))
            .sum()
    }

    /// `Σ (main + Σ sub)` in seconds.
    pub fn serial_seconds(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.main_seconds + s.sub.iter().map(|x| x.1).sum::<f64>())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_critical_path_matches_hand_value() {
        // aegir.md §7 P6: stages [(main 2, subs [4, 12]), (main 10, subs [])] → 24; serial 28.
        let steps = CriticalSteps::new(vec![
            Stage {
                name: "a".into(),
                main_tokens: 2,
                main_seconds: 0.2,
                sub: vec![(4, 0.4), (12, 1.2)],
            },
            Stage::main("b", 10, 1.0),
        ]);
        assert_eq!(steps.critical_tokens(), 24);
        assert_eq!(steps.serial_tokens(), 28);
        assert!((steps.critical_seconds() - 2.4).abs() < 1e-12);
        assert!((steps.serial_seconds() - 2.8).abs() < 1e-12);
    }
}
