//! The crate's error type.

use thiserror::Error;

/// Everything that can go wrong in this crate: bad configuration or inputs that make a reward
/// or a schedule undefined. Every variant names the offending value.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ParlError {
    /// Training progress was NaN (a NaN can't be clamped into `[0, 1]`).
    #[error("training progress is NaN")]
    NanProgress,
    /// `progress(step, total)` was asked with `total == 0`.
    #[error("total training steps must be > 0 (got 0)")]
    ZeroTotalSteps,
    /// A reward needs at least one specialist to route over.
    #[error("the router has no specialists (S = 0)")]
    NoSpecialists,
    /// More specialists were counted as active than exist.
    #[error("{active} specialists active but only {total} exist")]
    TooManyActive {
        /// Active count given.
        active: usize,
        /// Number of specialists.
        total: usize,
    },
    /// Two slices that must have the same length did not.
    #[error("{what}: expected length {expected}, got {got}")]
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// A value must lie in a closed interval and did not (NaN included).
    #[error("{what} = {value} is outside [{lo}, {hi}]")]
    OutOfRange {
        /// Which value.
        what: &'static str,
        /// The value given.
        value: f64,
        /// Lower bound (inclusive).
        lo: f64,
        /// Upper bound (inclusive).
        hi: f64,
    },
    /// A count `part` exceeded its `whole` (e.g. more finished specialists than activated).
    #[error("{what}: {part} exceeds {whole}")]
    CountExceeds {
        /// Which count.
        what: &'static str,
        /// The part.
        part: usize,
        /// The whole.
        whole: usize,
    },
    /// A table with zero columns has no column coverage.
    #[error("table has no columns")]
    NoColumns,
    /// A piecewise schedule's breakpoints are not strictly increasing inside `(0, 1]`, or the
    /// number of values is not one more than the number of breakpoints.
    #[error("invalid piecewise schedule: {0}")]
    BadPiecewise(String),
    /// Rewards do not divide into groups of `group_size`, or the group is too small to learn.
    #[error("{n} rewards can't form groups of {group_size} (need group_size >= 2 dividing n)")]
    BadGroup {
        /// Number of rewards.
        n: usize,
        /// Requested group size K.
        group_size: usize,
    },
    /// A policy-objective configuration is invalid.
    #[error("invalid objective config: {0}")]
    BadObjective(String),
    /// Tensor shapes passed to the objective disagree.
    #[error("shape mismatch: {0}")]
    Shape(String),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, ParlError>;

/// Checks `lo <= value <= hi` (rejecting NaN).
pub(crate) fn check_range(what: &'static str, value: f64, lo: f64, hi: f64) -> Result<f64> {
    if (lo..=hi).contains(&value) {
        Ok(value)
    } else {
        Err(ParlError::OutOfRange {
            what,
            value,
            lo,
            hi,
        })
    }
}
