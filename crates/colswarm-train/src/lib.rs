//! Training, evaluation and prediction for colswarm swarms.
//!
//! - [`dataset`]: benchmark files → labelled tables (`NAME=FORMAT:PATH[#SPLIT]` specs);
//! - [`labels`]: the model's label space, one namespace per training set;
//! - [`examples`]: tables → tokens, column n-gram bags and head targets;
//! - [`supervised`]: the supervised stage (specialists, then the primary with its heads), with
//!   per-epoch dev evaluation, early stopping, atomic checkpoints, exact resume, warm starts
//!   from a model directory and an optional linear learning-rate decay;
//! - [`data_parallel`]: one batch's gradients computed on replicas over several devices;
//! - [`parl`]: the PARL stage that trains the router with frozen specialists;
//! - [`predict`] and [`eval`]: annotations and F1 reports from a model directory;
//! - [`baseline`]: majority and character n-gram baselines scored the same way;
//! - [`compare`]: a paired bootstrap over tables of two systems' micro-F1 difference.

#![warn(missing_docs)]

pub mod average;
pub mod baseline;
pub mod compare;
pub mod data_parallel;
pub mod dataset;
pub mod error;
pub mod eval;
pub mod metrics;
pub mod param_ids;
pub mod parl;
pub mod run;
pub mod supervised;

pub use colswarm_model::{Activation, LabelSpace, Namespace, Task};
pub use dataset::{DataSpec, DatasetFormat, LoadedData, Split, load_tables};
pub use error::TrainError;
pub use metrics::{F1Report, LabelScore, Scored, f1_report};
