//! Errors of loading a model, reading tables and annotating them.

use std::path::PathBuf;

/// Everything that can go wrong loading a model directory, reading a table file or annotating.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A table could not be read.
    #[error(transparent)]
    Table(#[from] colswarm_tables::TableError),
    /// The swarm could not be built or loaded.
    #[error(transparent)]
    Swarm(#[from] colswarm_swarm::SwarmError),
    /// The requested device is not in this build or not on this machine.
    #[error(transparent)]
    Device(#[from] colswarm_rwkv::DeviceError),
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
    /// A file of a model directory (label space, serialization settings) is malformed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A namespace was asked for that the model does not have.
    #[error("{0}")]
    UnknownNamespace(String),
    /// Tables were encoded otherwise than the model reads them.
    #[error("{0}")]
    Encoding(String),
    /// An input names no table file.
    #[error("{path}: {reason}")]
    Input {
        /// The input as given.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl ModelError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ModelError::Io {
            path: path.into(),
            source,
        }
    }
}
