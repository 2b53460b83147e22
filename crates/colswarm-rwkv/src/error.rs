//! Errors of the RWKV crate.

use std::path::PathBuf;

/// Everything that can go wrong building, saving or loading an RWKV-7 model.
#[derive(Debug, thiserror::Error)]
pub enum RwkvError {
    /// The configuration is inconsistent (e.g. `d_model` not a multiple of `head_size`).
    #[error("invalid RWKV config: {0}")]
    InvalidConfig(String),
    /// Reading or writing a checkpoint file failed at the OS level.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a valid safetensors file (truncated, corrupted header, bad offsets).
    #[error("{path}: not a valid safetensors checkpoint: {reason}")]
    Corrupted {
        /// The file involved.
        path: PathBuf,
        /// What the parser reported.
        reason: String,
    },
    /// The checkpoint's metadata lacks a required entry or holds an unparsable one.
    #[error("{path}: checkpoint metadata `{key}`: {reason}")]
    Metadata {
        /// The file involved.
        path: PathBuf,
        /// The metadata key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A tensor the model needs is absent from the checkpoint.
    #[error("{path}: tensor `{name}` (shape {expected:?}) is missing from the checkpoint")]
    MissingTensor {
        /// The file involved.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// The shape the model expects.
        expected: Vec<usize>,
    },
    /// The checkpoint holds a tensor the model does not have.
    #[error("{path}: tensor `{name}` in the checkpoint does not belong to this model")]
    UnexpectedTensor {
        /// The file involved.
        path: PathBuf,
        /// The tensor's name.
        name: String,
    },
    /// A tensor's shape differs from the model's.
    #[error(
        "{path}: tensor `{name}` has shape {found:?} in the checkpoint but the model expects {expected:?}"
    )]
    ShapeMismatch {
        /// The file involved.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// The shape the model expects.
        expected: Vec<usize>,
        /// The shape stored in the file.
        found: Vec<usize>,
    },
    /// A tensor is stored with a dtype other than f32 or f16.
    #[error("{path}: tensor `{name}` has dtype {found} but colswarm stores f32 or f16")]
    DType {
        /// The file involved.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// The dtype found.
        found: String,
    },
    /// The tensor bytes do not match the checksum recorded when the file was written.
    #[error(
        "{path}: checksum mismatch (recorded {recorded}, computed {computed}): the file is corrupted"
    )]
    Checksum {
        /// The file involved.
        path: PathBuf,
        /// The checksum stored in the metadata.
        recorded: String,
        /// The checksum of the bytes read.
        computed: String,
    },
    /// A tensor holds NaN or infinity.
    #[error("{path}: tensor `{name}` contains non-finite values")]
    NonFinite {
        /// The file involved.
        path: PathBuf,
        /// The tensor's name.
        name: String,
    },
}
