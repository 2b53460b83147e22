//! Scoring colswarm models and their baselines against gold labels.
//!
//! - [`DataSpec`] (`NAME=FORMAT:PATH[,PATH…][#SPLIT]`) names labelled data; the formats and
//!   their readers are `colswarm_tables`' ([`DatasetFormat`], [`load_tables`]).
//! - [`evaluate`]: micro/macro F1 of a model directory on labelled tables ([`EvalReport`]), with
//!   how the router routed per specialist and kind of table ([`RoutingReport`]).
//! - [`abstention_curve`] and [`choose_threshold`]: precision against coverage when a
//!   namespace gives no label below a probability threshold, and the threshold chosen on dev.
//! - [`train_baseline`]: majority, character n-gram and header-rule peers, scored the same way.
//! - [`write_predictions`], [`read_predictions`] and [`paired_bootstrap`]: two systems'
//!   predictions compared target by target, with a 95% interval of their micro-F1 difference
//!   over tables; [`paired_bootstrap_runs`] pools several runs of each (seeds).
//!
//! Nothing here trains a swarm: `colswarm eval`, `baseline` and `compare`, and the Python
//! package's `evaluate`, depend on this crate and `colswarm-model` only.
//!
//! ```
//! use colswarm_eval::{DataSpec, Split};
//!
//! let spec: DataSpec = "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#dev".parse()?;
//! assert_eq!(spec.split, Split::Dev);
//! # Ok::<(), colswarm_eval::EvalError>(())
//! ```
#![warn(missing_docs)]

mod abstention;
mod baseline;
mod compare;
mod error;
mod eval;
mod header_peers;
mod metrics;
mod ngram_classifier;
mod reader_share;
mod routing;

pub use abstention::{
    AbstentionPoint, AbstentionReport, ThresholdRule, abstention_curve, abstention_point,
    choose_threshold,
};
pub use baseline::{
    Baseline, BaselineConfig, BaselineKind, baseline_predictions, evaluate_baseline, train_baseline,
};
pub use colswarm_tables::DataSpec;
pub use colswarm_tables::{DatasetFormat, LoadedData, Split, load_tables, load_tables_encoded};
pub use compare::{
    BootstrapConfig, Comparison, TargetPrediction, paired_bootstrap, paired_bootstrap_runs,
    read_predictions, score_predictions, write_predictions,
};
pub use error::EvalError;
pub use eval::{EvalOptions, EvalReport, default_task, evaluate, pick_namespace};
pub use metrics::{F1Report, LabelScore, Scored, f1_report};
pub use ngram_classifier::{NgramClassifier, NgramTraining, sigmoid, softmax};
pub use reader_share::{ReaderTraining, SHARE_GRID, choose_share, share_curve, train_reader};
pub use routing::{Rate, RoutingReport, SpecialistRouting, TableKind, WIDE_COLUMNS};
