//! Errors of training.

use std::path::PathBuf;

/// Everything that can go wrong loading data, training or pretraining.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A dataset could not be read.
    #[error(transparent)]
    Table(#[from] colswarm_tables::TableError),
    /// Labelled data could not be loaded or scored.
    #[error(transparent)]
    Eval(#[from] colswarm_eval::EvalError),
    /// A model directory or a table file could not be read, or a table not annotated.
    #[error(transparent)]
    Model(#[from] colswarm_model::ModelError),
    /// A model could not be built, loaded or saved.
    #[error(transparent)]
    Swarm(#[from] colswarm_swarm::SwarmError),
    /// A checkpoint could not be read or written.
    #[error(transparent)]
    Checkpoint(#[from] colswarm_rwkv::RwkvError),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A knowledge corpus file is missing, malformed or lacks what an objective needs.
    #[error("knowledge corpus {path}: {reason}")]
    Corpus {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A recipe file or a `--set` change of one is malformed or names an unknown setting.
    #[error("{origin}: {reason}")]
    Recipe {
        /// The recipe file, or the change.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The training configuration is invalid.
    #[error("invalid training configuration: {0}")]
    Config(String),
    /// A training-run file (state, optimizer, log) is missing or malformed.
    #[error("{path}: {reason}")]
    Run {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The loss or a gradient became NaN or infinite.
    #[error(
        "non-finite loss ({loss}) at epoch {epoch}, step {step}; the last good checkpoint is kept"
    )]
    NonFinite {
        /// Epoch (0-based).
        epoch: usize,
        /// Global optimizer step.
        step: usize,
        /// The loss value.
        loss: f64,
    },
    /// Gradients with NaN or infinite values (the loss was finite).
    #[error(
        "non-finite gradients in {tensors} parameter tensor(s) at epoch {epoch}, step {step}; the last good checkpoint is kept"
    )]
    NonFiniteGradients {
        /// Epoch (0-based).
        epoch: usize,
        /// Global optimizer step.
        step: usize,
        /// Parameter tensors whose gradient is not finite.
        tensors: usize,
    },
}

impl TrainError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TrainError::Io {
            path: path.into(),
            source,
        }
    }
}
