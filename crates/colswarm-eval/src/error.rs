//! Errors of evaluation, baselines and comparisons.

use std::path::PathBuf;

/// Everything that can go wrong loading labelled data, scoring a model or a baseline, or
/// comparing two systems' predictions.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A dataset could not be read.
    #[error(transparent)]
    Table(#[from] colswarm_tables::TableError),
    /// A model directory could not be read, or a table not annotated.
    #[error(transparent)]
    Model(#[from] colswarm_model::ModelError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An evaluation or baseline setting does not fit the model or the data (an unknown
    /// namespace, an ambiguous one, an empty training set).
    #[error("{0}")]
    Config(String),
    /// A predictions file (`--predictions`) is malformed.
    #[error("{path}: {reason}")]
    Predictions {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line.
        reason: String,
    },
    /// Two lists of predictions cannot be compared target by target.
    #[error("the predictions do not match: {0}")]
    PredictionsMismatch(String),
}

impl EvalError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EvalError::Io {
            path: path.into(),
            source,
        }
    }
}
