//! `r_finish`: did the activated specialists finish, were the columns covered, and was the
//! routing degenerate?
//!
//! For one rollout (one table routed once):
//!
//! ```text
//! finish   = finished / activated                (activated subtasks completed within the step
//!                                                 budget; see FinishCounts::within_budget;
//!                                                 = 1 when nothing was activated: no activated
//!                                                 specialist failed, and all-off is penalised
//!                                                 below instead)
//! coverage = annotated columns / columns
//! r_finish = finish · coverage − p · 1[all_on ∨ all_off ∨ constant]
//! ```
//!
//! so `r_finish ∈ [−p, 1]`, `p = degenerate_penalty` (default 0.5). The penalty is paid once,
//! however many conditions fire. The conditions ([`Degeneracy::detect`]), with `m` the rollout's
//! mask over `S` specialists:
//!
//! * **all_on** fires iff `S ≥ 2` and every `m_i` is true.
//! * **all_off** fires iff `S ≥ 2` and every `m_i` is false.
//!   (With `S = 1` every mask is all-on or all-off, so neither fires; only `constant` can.)
//! * **constant** fires iff at least one *other* table of the batch was routed and every other
//!   table's mask equals `m` (the router ignored its input). Siblings (the other rollouts of the
//!   same table) are not compared: the same mask for the same table is a confident policy, not a
//!   degenerate one. Because the comparison is with *other* tables, a rollout that breaks the
//!   pattern is not penalised while its siblings that follow it are, so the penalty varies inside
//!   a group and survives the group-mean baseline.
//!
//! Why a literal finish rate is not enough: a frozen specialist always "finishes", so without
//! the budget and the penalty `r_finish` would be the constant 1 (open-parl's default,
//! docs/PARL.md §1.3) or a bonus for spawning.

use serde::{Deserialize, Serialize};

use colswarm_swarm::TableSteps;

use crate::error::{ParlError, Result, check_range};

/// Activated subtasks and how many completed within the step budget.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FinishCounts {
    /// Subtasks assigned (one per activated specialist per stage).
    pub activated: usize,
    /// Those that completed within the step budget.
    pub finished: usize,
}

impl FinishCounts {
    /// The rollout's activated subtasks (one per specialist per stage) and how many of them
    /// completed within `budget` critical steps.
    pub fn within_budget(steps: &TableSteps, budget: u64) -> Self {
        let completions = steps.completion_steps();
        Self {
            activated: completions.len(),
            finished: completions.iter().filter(|&&at| at <= budget).count(),
        }
    }

    /// `finished / activated`, and 1 when nothing was activated.
    ///
    /// # Errors
    /// [`ParlError::CountExceeds`] if `finished > activated`.
    pub fn rate(&self) -> Result<f64> {
        if self.finished > self.activated {
            return Err(ParlError::CountExceeds {
                what: "finished subtasks vs activated",
                part: self.finished,
                whole: self.activated,
            });
        }
        Ok(if self.activated == 0 {
            1.0
        } else {
            self.finished as f64 / self.activated as f64
        })
    }
}

/// Which degenerate-routing conditions fire for one rollout (rules in the [module docs](self)).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Degeneracy {
    /// Every specialist active (`S ≥ 2`).
    pub all_on: bool,
    /// No specialist active (`S ≥ 2`).
    pub all_off: bool,
    /// Every other table of the batch got exactly this mask.
    pub constant: bool,
}

impl Degeneracy {
    /// Checks `mask` against itself and against the masks of the *other* tables of the batch.
    ///
    /// # Errors
    /// An empty mask ([`ParlError::NoSpecialists`]) or another table's mask of a different length.
    pub fn detect(mask: &[bool], other_tables: &[Vec<bool>]) -> Result<Self> {
        let s = mask.len();
        if s == 0 {
            return Err(ParlError::NoSpecialists);
        }
        if let Some(bad) = other_tables.iter().find(|m| m.len() != s) {
            return Err(ParlError::LengthMismatch {
                what: "other table's mask",
                expected: s,
                got: bad.len(),
            });
        }
        Ok(Self {
            all_on: s >= 2 && mask.iter().all(|&b| b),
            all_off: s >= 2 && mask.iter().all(|&b| !b),
            constant: !other_tables.is_empty() && other_tables.iter().all(|m| m == mask),
        })
    }

    /// Whether any condition fires.
    pub fn any(&self) -> bool {
        self.all_on || self.all_off || self.constant
    }
}

/// `r_finish`'s one knob.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FinishConfig {
    /// `p ≥ 0`, subtracted once when routing is degenerate. Default 0.5: half the range of the
    /// undegenerate term, so a degenerate rollout scores at most 0.5 and a selective one that
    /// finishes and covers everything scores 1.
    pub degenerate_penalty: f64,
}

impl Default for FinishConfig {
    fn default() -> Self {
        Self {
            degenerate_penalty: 0.5,
        }
    }
}

/// `r_finish = finish · coverage − p · 1[degenerate]` (module docs).
///
/// # Errors
/// `finished > activated`, `columns = 0`, `annotated > columns`, or `p` negative/NaN.
pub fn r_finish(
    counts: FinishCounts,
    annotated_columns: usize,
    columns: usize,
    degeneracy: Degeneracy,
    config: &FinishConfig,
) -> Result<f64> {
    let p = check_range(
        "degenerate_penalty",
        config.degenerate_penalty,
        0.0,
        f64::MAX,
    )?;
    if columns == 0 {
        return Err(ParlError::NoColumns);
    }
    if annotated_columns > columns {
        return Err(ParlError::CountExceeds {
            what: "annotated columns vs columns",
            part: annotated_columns,
            whole: columns,
        });
    }
    let coverage = annotated_columns as f64 / columns as f64;
    let penalty = if degeneracy.any() { p } else { 0.0 };
    Ok(counts.rate()? * coverage - penalty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_swarm::StageSteps;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn each_condition_fires_exactly_when_documented() {
        let sel = [true, false, false, false];
        let d = Degeneracy::detect(&sel, &[vec![false, true, false, false]]).unwrap();
        assert!(!d.any());
        let d = Degeneracy::detect(&[true; 4], &[]).unwrap();
        assert_eq!(
            d,
            Degeneracy {
                all_on: true,
                ..Default::default()
            }
        );
        let d = Degeneracy::detect(&[false; 4], &[]).unwrap();
        assert!(d.all_off && !d.all_on && !d.constant);
        // Same mask as every other table → constant; one differing table → not constant.
        let d = Degeneracy::detect(&sel, &[sel.to_vec(), sel.to_vec()]).unwrap();
        assert!(d.constant && !d.all_on && !d.all_off);
        let d = Degeneracy::detect(&sel, &[sel.to_vec(), vec![false; 4]]).unwrap();
        assert!(!d.constant);
        // No other table: constant can't be judged.
        assert!(!Degeneracy::detect(&sel, &[]).unwrap().constant);
        // S = 1: all-on/all-off never fire.
        assert!(!Degeneracy::detect(&[true], &[]).unwrap().any());
        assert!(!Degeneracy::detect(&[false], &[]).unwrap().any());
        assert!(Degeneracy::detect(&[], &[]).is_err());
        assert!(Degeneracy::detect(&sel, &[vec![true]]).is_err());
    }

    #[test]
    fn r_finish_values() {
        let cfg = FinishConfig::default();
        let ok = Degeneracy::default();
        let counts = FinishCounts {
            activated: 4,
            finished: 3,
        };
        close(r_finish(counts, 5, 10, ok, &cfg).unwrap(), 0.75 * 0.5);
        let deg = Degeneracy { all_on: true, ..ok };
        close(r_finish(counts, 10, 10, deg, &cfg).unwrap(), 0.75 - 0.5);
        // Penalty paid once even if two conditions fire.
        let two = Degeneracy {
            all_on: true,
            constant: true,
            ..ok
        };
        close(r_finish(counts, 10, 10, two, &cfg).unwrap(), 0.25);
        // Nothing activated: finish rate is 1 and the all-off penalty decides.
        let off = Degeneracy::detect(&[false; 3], &[]).unwrap();
        close(
            r_finish(FinishCounts::default(), 4, 4, off, &cfg).unwrap(),
            0.5,
        );
        assert!(r_finish(counts, 1, 0, ok, &cfg).is_err());
        assert!(r_finish(counts, 2, 1, ok, &cfg).is_err());
        let bad = FinishCounts {
            activated: 1,
            finished: 2,
        };
        assert!(r_finish(bad, 1, 1, ok, &cfg).is_err());
        let neg = FinishConfig {
            degenerate_penalty: -1.0,
        };
        assert!(r_finish(counts, 1, 1, ok, &neg).is_err());
    }

    #[test]
    fn degenerate_routers_score_below_a_selective_one() {
        // 4 specialists, 3 tables in the batch, every activated specialist finishes, full
        // coverage. The selective router gives each table a different single specialist.
        let cfg = FinishConfig::default();
        let done = |n| FinishCounts {
            activated: n,
            finished: n,
        };
        let masks = [
            vec![true, false, false, false],
            vec![false, true, false, false],
            vec![false, false, true, false],
        ];
        let sel = Degeneracy::detect(&masks[0], &masks[1..]).unwrap();
        let r_sel = r_finish(done(1), 6, 6, sel, &cfg).unwrap();
        let on = Degeneracy::detect(&[true; 4], &[vec![true; 4], vec![true; 4]]).unwrap();
        let r_on = r_finish(done(4), 6, 6, on, &cfg).unwrap();
        let off = Degeneracy::detect(&[false; 4], &[vec![false; 4], vec![false; 4]]).unwrap();
        let r_off = r_finish(done(0), 6, 6, off, &cfg).unwrap();
        let same = Degeneracy::detect(&masks[0], &[masks[0].clone(), masks[0].clone()]).unwrap();
        let r_same = r_finish(done(1), 6, 6, same, &cfg).unwrap();
        close(r_sel, 1.0);
        for r in [r_on, r_off, r_same] {
            close(r, 0.5);
            assert!(r < r_sel);
        }
    }

    #[test]
    fn budget_feeds_the_finish_rate() {
        // docs/PARL.md §8 P6 stages with a budget of 10: specialist 0 (ends at 6) finishes,
        // specialist 1 (ends at 14) does not → finish rate 1/2.
        let steps = TableSteps::new(vec![
            StageSteps::with_subtasks(2, &[(0, 4), (1, 12)]),
            StageSteps::main_only(10),
        ]);
        let r = r_finish(
            FinishCounts::within_budget(&steps, 10),
            3,
            3,
            Degeneracy::default(),
            &FinishConfig::default(),
        )
        .unwrap();
        close(r, 0.5);
    }

    #[test]
    fn finish_counts_follow_completion_steps() {
        // Completions at 6 and 14 (docs/PARL.md §8 P6).
        let steps = TableSteps::new(vec![
            StageSteps::with_subtasks(2, &[(0, 4), (1, 12)]),
            StageSteps::main_only(10),
        ]);
        let counts = |budget| FinishCounts::within_budget(&steps, budget);
        assert_eq!((counts(24).activated, counts(24).finished), (2, 2));
        assert_eq!(counts(10).finished, 1);
        assert_eq!(counts(5).finished, 0);
        assert_eq!(
            FinishCounts::within_budget(&TableSteps::default(), 0),
            FinishCounts::default()
        );
    }
}
