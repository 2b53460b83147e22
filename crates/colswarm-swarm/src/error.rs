//! Errors of the swarm crate.

use std::path::PathBuf;

/// Everything that can go wrong building, loading or running a swarm.
#[derive(Debug, thiserror::Error)]
pub enum SwarmError {
    /// A checkpoint could not be read or does not fit.
    #[error(transparent)]
    Checkpoint(#[from] colswarm_rwkv::RwkvError),
    /// A manifest or model file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A directory given as a model directory holds no manifest.
    #[error(
        "{path}: not a model directory: it holds no swarm.json (a model directory is what \
         `colswarm train` writes)"
    )]
    NotModelDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// The manifest is not valid JSON of the expected shape.
    #[error("{path}: invalid manifest: {reason}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file named by the manifest differs from the one it was built with.
    #[error(
        "{path}: checksum mismatch for {what}: the manifest records sha256 {recorded} but the file has {computed}"
    )]
    ChecksumMismatch {
        /// The file whose content changed.
        path: PathBuf,
        /// Which component it is (e.g. `specialist "wikitables"`).
        what: String,
        /// The checksum in the manifest.
        recorded: String,
        /// The checksum of the file on disk.
        computed: String,
    },
    /// The input batch is inconsistent (e.g. no tables, a table with no tokens).
    #[error("invalid input: {0}")]
    Input(String),
    /// Components do not fit together (e.g. router size ≠ number of specialists).
    #[error("inconsistent swarm: {0}")]
    Inconsistent(String),
}
