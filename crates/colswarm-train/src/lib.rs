//! Training, evaluation and prediction for colswarm swarms.
//!
//! Each stage is an entry point with its configuration:
//!
//! - the supervised stage ([`train`], [`TrainConfig`]): specialists, then the primary with its
//!   heads, with per-epoch dev evaluation, early stopping, exact resume, warm starts from a
//!   model directory ([`ModelSettings::init_from`]), an optional linear learning-rate decay
//!   and data-parallel replicas ([`TrainOptions::devices`]);
//! - the PARL stage ([`train_router`], [`ParlConfig`]) that trains the router with frozen
//!   specialists;
//! - pretraining of knowledge specialists ([`pretrain`], [`PretrainConfig`]) on a corpus of
//!   gazetteers, unlabelled tables and a teacher's embeddings ([`KnowledgeCorpus`]);
//! - linear probes of frozen column representations on labelled data ([`probe`]);
//! - [`average_model_dirs`]: the mean of a run's checkpoints' weights.
//!
//! Both training stages run in a run directory (`run.json`, `log.jsonl`, atomic checkpoints,
//! `best/`) they share the machinery of; a stage resumes from its newest checkpoint.
//!
//! Around them: data specs and loading ([`DataSpec`], `NAME=FORMAT:PATH[#SPLIT]`), F1 reports
//! from a model directory ([`evaluate`], with how the router routed per specialist and kind of
//! table: [`RoutingReport`]), majority and character n-gram baselines scored the
//! same way ([`train_baseline`]), and a paired bootstrap over tables of two systems' micro-F1
//! difference ([`paired_bootstrap`]).

#![warn(missing_docs)]

mod average;
mod baseline;
mod compare;
mod data_parallel;
mod dataset;
mod error;
mod eval;
mod metrics;
mod param_ids;
mod parl;
mod pretrain;
mod probe;
mod routing;
mod run;
mod supervised;

pub use average::{average_last_epochs, average_model_dirs, average_modules};
pub use baseline::{
    Baseline, BaselineConfig, BaselineKind, baseline_predictions, evaluate_baseline, train_baseline,
};
pub use colswarm_model::{Activation, LabelSpace, Namespace, Task};
pub use compare::{
    BootstrapConfig, Comparison, TargetPrediction, paired_bootstrap, read_predictions,
    score_predictions, write_predictions,
};
pub use dataset::{DataSpec, DatasetFormat, LoadedData, Split, load_tables};
pub use error::TrainError;
pub use eval::{EvalOptions, EvalReport, default_task, evaluate, pick_namespace};
pub use metrics::{F1Report, LabelScore, Scored, f1_report};
pub use parl::{ParlConfig, ParlOptions, ParlSummary, ScheduleChoice, train_router};
pub use pretrain::{
    CorpusTable, Gazetteer, HeldOutScore, KnowledgeCorpus, Objective, PretrainConfig,
    PretrainModel, PretrainModelConfig, PretrainOptions, PretrainSummary, REPORT_FILE,
    SPECIALIST_FILE, Teacher, pretrain,
};
pub use probe::{ProbeConfig, ProbeReport, ProbeScore, probe};
pub use routing::{Rate, RoutingReport, SpecialistRouting, TableKind, WIDE_COLUMNS};
pub use run::NonFinitePolicy;
pub use supervised::{
    DataSettings, LrDecay, ModelSettings, OptimizerSettings, Regularization, RunSettings,
    SpecialistSpec, TrainConfig, TrainOptions, TrainSummary, train,
};
