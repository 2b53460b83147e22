//! Critical steps (K2.5 §3): the latency of a staged swarm, which PARL uses as a step *budget*.
//!
//! A rollout on one table is a sequence of stages `t = 1..T`. In each stage the main path (the
//! primary) does `S_main^(t)` steps, then the specialists activated in that stage run in
//! parallel, specialist `i` for `S_sub,i^(t)` steps. The stage lasts as long as its slowest
//! specialist, so
//!
//! ```text
//! CriticalSteps = Σ_t ( S_main^(t) + max_i S_sub,i^(t) )        (max over no specialist = 0)
//! SerialSteps   = Σ_t ( S_main^(t) + Σ_i S_sub,i^(t) )
//! ```
//!
//! Steps are tokens (recurrent steps) here; any additive unit works.
//!
//! **Budget and completion.** With `C_t` the critical steps of stages `1..t` (`C_0 = 0`), the
//! specialist `i` of stage `t` completes at `C_{t−1} + S_main^(t) + S_sub,i^(t)`; it *finished
//! within the budget* `B` iff that is `≤ B`. A rollout *exceeds* the budget iff
//! `CriticalSteps > B`. PARL's `r_finish` counts the completions within the budget
//! ([`TableSteps::completion_steps`]).

use serde::{Deserialize, Serialize};

/// One specialist's work in a stage.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SubtaskSteps {
    /// Which specialist (its index in the router).
    pub specialist: usize,
    /// Its steps `S_sub,i^(t)`.
    pub steps: u64,
}

/// One stage: main-path steps, then the activated specialists in parallel.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct StageSteps {
    /// `S_main^(t)`.
    pub main: u64,
    /// The specialists run in this stage (empty: a main-only stage).
    pub subtasks: Vec<SubtaskSteps>,
}

impl StageSteps {
    /// A main-only stage.
    pub fn main_only(main: u64) -> Self {
        Self {
            main,
            subtasks: Vec::new(),
        }
    }

    /// A stage with main steps and `(specialist, steps)` pairs.
    pub fn with_subtasks(main: u64, subtasks: &[(usize, u64)]) -> Self {
        Self {
            main,
            subtasks: subtasks
                .iter()
                .map(|&(specialist, steps)| SubtaskSteps { specialist, steps })
                .collect(),
        }
    }

    /// `S_main + max_i S_sub,i` (0 for the max when no specialist ran).
    pub fn critical(&self) -> u64 {
        self.main + self.subtasks.iter().map(|s| s.steps).max().unwrap_or(0)
    }

    /// `S_main + Σ_i S_sub,i`.
    pub fn serial(&self) -> u64 {
        self.main + self.subtasks.iter().map(|s| s.steps).sum::<u64>()
    }
}

/// Per-table stage accounting of one rollout.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct TableSteps {
    /// The stages, in order.
    pub stages: Vec<StageSteps>,
}

impl TableSteps {
    /// Wraps the stages.
    pub fn new(stages: Vec<StageSteps>) -> Self {
        Self { stages }
    }

    /// `Σ_t (S_main + max_i S_sub,i)`.
    pub fn critical_steps(&self) -> u64 {
        self.stages.iter().map(StageSteps::critical).sum()
    }

    /// `Σ_t (S_main + Σ_i S_sub,i)`: what the same work costs run one after another.
    pub fn serial_steps(&self) -> u64 {
        self.stages.iter().map(StageSteps::serial).sum()
    }

    /// Whether the rollout ran past the budget: `CriticalSteps > budget`.
    pub fn exceeds(&self, budget: u64) -> bool {
        self.critical_steps() > budget
    }

    /// The step at which each activated subtask completes (one per specialist per stage, in
    /// stage order): `C_{t−1} + S_main^(t) + S_sub,i^(t)` (module docs).
    pub fn completion_steps(&self) -> Vec<u64> {
        let mut elapsed = 0u64;
        let mut completions = Vec::new();
        for stage in &self.stages {
            let start = elapsed + stage.main;
            completions.extend(stage.subtasks.iter().map(|s| start + s.steps));
            elapsed += stage.critical();
        }
        completions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aegir_p6() -> TableSteps {
        // docs/PARL.md §8 P6: stages [(main 2, subs [4, 12]), (main 10, subs [])].
        TableSteps::new(vec![
            StageSteps::with_subtasks(2, &[(0, 4), (1, 12)]),
            StageSteps::main_only(10),
        ])
    }

    #[test]
    fn critical_steps_match_aegir_p6() {
        let t = aegir_p6();
        // (2 + max(4, 12)) + (10 + 0) = 24; serial (2 + 4 + 12) + 10 = 28.
        assert_eq!(t.critical_steps(), 24);
        assert_eq!(t.serial_steps(), 28);
    }

    #[test]
    fn budget_is_on_critical_not_serial_steps() {
        let t = aegir_p6();
        assert!(!t.exceeds(24));
        assert!(t.exceeds(23));
        assert!(!t.exceeds(27)); // under the serial sum 28, still within budget
    }

    #[test]
    fn completions_follow_the_critical_path() {
        // Specialist 0 ends at 2 + 4 = 6, specialist 1 at 2 + 12 = 14.
        assert_eq!(aegir_p6().completion_steps(), vec![6, 14]);
        // A later stage starts after the earlier stage's critical path: stage 2's specialist
        // ends at (1 + 5) + 1 + 3 = 10.
        let two = TableSteps::new(vec![
            StageSteps::with_subtasks(1, &[(0, 5)]),
            StageSteps::with_subtasks(1, &[(1, 3)]),
        ]);
        assert_eq!(two.completion_steps(), vec![6, 10]);
    }

    #[test]
    fn empty_rollout_costs_nothing() {
        let t = TableSteps::default();
        assert_eq!(t.critical_steps(), 0);
        assert!(t.completion_steps().is_empty());
    }
}
