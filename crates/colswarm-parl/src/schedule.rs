//! λ schedules: pure functions of training progress `p ∈ [0, 1]`.
//!
//! **Progress** is clamped at both ends before any schedule sees it: `p < 0 → 0`, `p > 1 → 1`
//! (±∞ included); NaN is an error ([`ParlError::NanProgress`]), never silently mapped to a
//! value. [`progress`] turns `(step, total)` into `step/total` and rejects `total = 0`.
//! (open-parl clamps only at the top, so a negative step extrapolates past `λ_init`.)
//!
//! **Shapes**, for one λ:
//!
//! ```text
//! Constant(c):             λ(p) = c
//! Piecewise(b, v):         λ(p) = v_k  for p ∈ [b_{k−1}, b_k)      (b_0 = 0; last piece [b_K, 1])
//! Linear(start, end):      λ(p) = start·(1 − p) + end·p
//! Cosine(start, end):      λ(p) = start·w + end·(1 − w),   w = (1 + cos(π·p))/2
//! ```
//!
//! Linear and cosine hit `start` at `p = 0` and `end` at `p = 1` *exactly* (written as convex
//! combinations so no rounding creeps in); cosine has zero slope at both ends. Piecewise intervals are half-open, so a breakpoint belongs to the piece it
//! starts (docs/PARL.md §8 P2).
//!
//! [`LambdaSchedule::aegir`] is Aegir's table:
//!
//! | progress | λ1 (parallel) | λ2 (finish) |
//! |---|---|---|
//! | [0, 0.3) | 0.3 | 0.1 |
//! | [0.3, 0.7) | 0.1 | 0.3 |
//! | [0.7, 1] | 0.05 | 0.05 |
//!
//! K2.5 anneals both λ to 0; Aegir's table stops at 0.05. [`LambdaSchedule::linear_to_zero`] and
//! [`LambdaSchedule::cosine_to_zero`] give the K2.5 reading.

use std::f64::consts::PI;

use serde::{Deserialize, Serialize};

use crate::error::{ParlError, Result};

/// Clamps progress into `[0, 1]`; NaN is an error.
///
/// # Errors
/// [`ParlError::NanProgress`].
pub fn clamp_progress(p: f64) -> Result<f64> {
    if p.is_nan() {
        Err(ParlError::NanProgress)
    } else {
        Ok(p.clamp(0.0, 1.0))
    }
}

/// `step / total`, clamped into `[0, 1]`.
///
/// # Errors
/// [`ParlError::ZeroTotalSteps`] when `total = 0`.
pub fn progress(step: u64, total: u64) -> Result<f64> {
    if total == 0 {
        return Err(ParlError::ZeroTotalSteps);
    }
    clamp_progress(step as f64 / total as f64)
}

/// One λ as a function of progress (formulas in the [module docs](self)).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// `λ(p) = value`.
    Constant {
        /// The value.
        value: f64,
    },
    /// Piecewise constant on half-open intervals.
    Piecewise {
        /// Strictly increasing breakpoints inside `(0, 1)`.
        breakpoints: Vec<f64>,
        /// `breakpoints.len() + 1` values, one per interval.
        values: Vec<f64>,
    },
    /// `start·(1 − p) + end·p`.
    Linear {
        /// `λ(0)`.
        start: f64,
        /// `λ(1)`.
        end: f64,
    },
    /// `start·w + end·(1 − w)`, `w = (1 + cos(π p))/2`.
    Cosine {
        /// `λ(0)`.
        start: f64,
        /// `λ(1)`.
        end: f64,
    },
}

impl Schedule {
    /// Checks a piecewise schedule's shape (other shapes are always valid).
    ///
    /// # Errors
    /// [`ParlError::BadPiecewise`].
    pub fn validate(&self) -> Result<()> {
        if let Self::Piecewise {
            breakpoints,
            values,
        } = self
        {
            if values.len() != breakpoints.len() + 1 {
                return Err(ParlError::BadPiecewise(format!(
                    "{} breakpoints need {} values, got {}",
                    breakpoints.len(),
                    breakpoints.len() + 1,
                    values.len()
                )));
            }
            let mut last = 0.0;
            for &b in breakpoints {
                if b.is_nan() || b <= last || b >= 1.0 {
                    return Err(ParlError::BadPiecewise(format!(
                        "breakpoints must be strictly increasing inside (0, 1): {breakpoints:?}"
                    )));
                }
                last = b;
            }
        }
        Ok(())
    }

    /// `λ(p)` after clamping `p` into `[0, 1]`.
    ///
    /// # Errors
    /// NaN progress, or an invalid piecewise schedule.
    pub fn value(&self, p: f64) -> Result<f64> {
        let p = clamp_progress(p)?;
        self.validate()?;
        Ok(match self {
            Self::Constant { value } => *value,
            Self::Piecewise {
                breakpoints,
                values,
            } => values[breakpoints.iter().take_while(|&&b| b <= p).count()],
            Self::Linear { start, end } => start * (1.0 - p) + end * p,
            Self::Cosine { start, end } => {
                let w = (1.0 + (PI * p).cos()) / 2.0;
                start * w + end * (1.0 - w)
            }
        })
    }
}

/// `(λ1, λ2)` at one progress.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Lambdas {
    /// λ1, the weight of `r_parallel`.
    pub parallel: f64,
    /// λ2, the weight of `r_finish`.
    pub finish: f64,
}

/// The two schedules of the PARL reward.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LambdaSchedule {
    /// λ1(p), for `r_parallel`.
    pub parallel: Schedule,
    /// λ2(p), for `r_finish`.
    pub finish: Schedule,
}

impl Default for LambdaSchedule {
    /// [`LambdaSchedule::aegir`].
    fn default() -> Self {
        Self::aegir()
    }
}

impl LambdaSchedule {
    /// Aegir's piecewise table (module docs).
    pub fn aegir() -> Self {
        let piecewise = |values: [f64; 3]| Schedule::Piecewise {
            breakpoints: vec![0.3, 0.7],
            values: values.to_vec(),
        };
        Self {
            parallel: piecewise([0.3, 0.1, 0.05]),
            finish: piecewise([0.1, 0.3, 0.05]),
        }
    }

    /// Linear from `(λ1_0, λ2_0)` to `(0, 0)` (K2.5: "annealed to zero").
    pub fn linear_to_zero(parallel: f64, finish: f64) -> Self {
        Self {
            parallel: Schedule::Linear {
                start: parallel,
                end: 0.0,
            },
            finish: Schedule::Linear {
                start: finish,
                end: 0.0,
            },
        }
    }

    /// Cosine from `(λ1_0, λ2_0)` to `(0, 0)`.
    pub fn cosine_to_zero(parallel: f64, finish: f64) -> Self {
        Self {
            parallel: Schedule::Cosine {
                start: parallel,
                end: 0.0,
            },
            finish: Schedule::Cosine {
                start: finish,
                end: 0.0,
            },
        }
    }

    /// `(λ1(p), λ2(p))`.
    ///
    /// # Errors
    /// As [`Schedule::value`].
    pub fn at(&self, p: f64) -> Result<Lambdas> {
        Ok(Lambdas {
            parallel: self.parallel.value(p)?,
            finish: self.finish.value(p)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    fn lambdas(p: f64) -> (f64, f64) {
        let l = LambdaSchedule::aegir().at(p).unwrap();
        (l.parallel, l.finish)
    }

    #[test]
    fn aegir_table_matches_p2() {
        // docs/PARL.md §8 P2.
        assert_eq!(lambdas(0.10), (0.3, 0.1));
        assert_eq!(lambdas(0.50), (0.1, 0.3));
        assert_eq!(lambdas(0.90), (0.05, 0.05));
    }

    #[test]
    fn aegir_intervals_are_half_open() {
        assert_eq!(lambdas(0.0), (0.3, 0.1));
        assert_eq!(lambdas(0.3 - 1e-9), (0.3, 0.1));
        assert_eq!(lambdas(0.3), (0.1, 0.3));
        assert_eq!(lambdas(0.7 - 1e-9), (0.1, 0.3));
        assert_eq!(lambdas(0.7), (0.05, 0.05));
        assert_eq!(lambdas(1.0), (0.05, 0.05));
    }

    #[test]
    fn progress_is_clamped_at_both_ends_and_nan_is_an_error() {
        let s = Schedule::Linear {
            start: 0.1,
            end: 0.0,
        };
        close(s.value(-3.0).unwrap(), 0.1);
        close(s.value(f64::NEG_INFINITY).unwrap(), 0.1);
        close(s.value(7.0).unwrap(), 0.0);
        assert_eq!(s.value(f64::NAN), Err(ParlError::NanProgress));
        assert_eq!(lambdas(-1.0), (0.3, 0.1));
        assert_eq!(lambdas(2.0), (0.05, 0.05));
        assert_eq!(progress(5, 0), Err(ParlError::ZeroTotalSteps));
        close(progress(15_000, 10_000).unwrap(), 1.0);
        close(progress(2_500, 10_000).unwrap(), 0.25);
    }

    #[test]
    fn linear_and_cosine_hit_their_ends_exactly() {
        for s in [
            Schedule::Linear {
                start: 0.3,
                end: 0.05,
            },
            Schedule::Cosine {
                start: 0.3,
                end: 0.05,
            },
        ] {
            assert_eq!(s.value(0.0).unwrap(), 0.3);
            assert_eq!(s.value(1.0).unwrap(), 0.05);
            close(s.value(0.5).unwrap(), 0.175);
        }
        // Cosine is above linear on the first half of a decreasing schedule.
        let lin = Schedule::Linear {
            start: 1.0,
            end: 0.0,
        };
        let cos = Schedule::Cosine {
            start: 1.0,
            end: 0.0,
        };
        close(cos.value(0.25).unwrap(), (1.0 + (PI / 4.0).cos()) / 2.0);
        assert!(cos.value(0.25).unwrap() > lin.value(0.25).unwrap());
        let z = LambdaSchedule::cosine_to_zero(0.3, 0.1).at(1.0).unwrap();
        assert_eq!((z.parallel, z.finish), (0.0, 0.0));
        let z = LambdaSchedule::linear_to_zero(0.3, 0.1).at(0.5).unwrap();
        close(z.parallel, 0.15);
        close(z.finish, 0.05);
    }

    #[test]
    fn bad_piecewise_is_rejected() {
        let s = Schedule::Piecewise {
            breakpoints: vec![0.7, 0.3],
            values: vec![1.0, 2.0, 3.0],
        };
        assert!(matches!(s.value(0.5), Err(ParlError::BadPiecewise(_))));
        let s = Schedule::Piecewise {
            breakpoints: vec![0.5],
            values: vec![1.0],
        };
        assert!(s.validate().is_err());
    }

    #[test]
    fn schedules_round_trip_json() {
        let s = LambdaSchedule::aegir();
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"kind\":\"piecewise\""));
        let back: LambdaSchedule = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
    }
}
