//! Training for colswarm swarms (scoring is `colswarm-eval`'s).
//!
//! Each stage is an entry point with its configuration:
//!
//! - the supervised stage ([`train`], [`TrainConfig`]): specialists, then the primary with its
//!   heads, with per-epoch dev evaluation, early stopping, exact resume, warm starts from a
//!   model directory ([`ModelSettings::init_from`]), an optional linear learning-rate decay
//!   and data-parallel replicas ([`TrainOptions::devices`]);
//! - the PARL stage ([`train_router`], [`ParlConfig`]) that trains the router with frozen
//!   specialists;
//! - the experts' routing ([`train_expert_routing`], [`ExpertRoutingConfig`]): the router that
//!   opens a model's domain experts and the mix that weighs them, with PARL's reward;
//! - pretraining of knowledge specialists ([`pretrain`], [`PretrainConfig`]) on a corpus of
//!   gazetteers, unlabelled tables and a teacher's embeddings ([`KnowledgeCorpus`]);
//! - linear probes of frozen column representations on labelled data ([`probe`]);
//! - [`fine_tune`]: a new namespace with a user's own labels on a frozen, trained model;
//! - [`average_model_dirs`]: the mean of a run's checkpoints' weights.
//!
//! The three stages have one shape: a folder each (`supervised/`, `parl/`, `pretrain/`) with
//! `config` (data only), `data`, `step` and `training` (the checks, and the stage's step and
//! evaluation, which one training loop in `run/` drives). They share
//! [`OptimizerSettings`] (batch size, learning rate, warm-up and decay, clipping, weight decay)
//! and [`RunSettings`] (seed, checkpoint cadence, checkpoints kept, logging, non-finite steps),
//! and the run machinery: a run directory (`run.json`, `log.jsonl`, atomic checkpoints,
//! `best/`) from whose newest checkpoint a stage resumes.
//!
//! The stages read their data through `colswarm_tables::DataSpec` (`NAME=FORMAT:PATH[#SPLIT]`,
//! re-exported here) and score their dev sets with `colswarm_eval::evaluate`. A supervised
//! run's settings can live in a TOML file, a [`Recipe`] (`recipes/colswarm-small.toml` is the
//! shipped model's).

#![warn(missing_docs)]

mod average;
mod data_parallel;
mod error;
mod expert_routing;
mod fine_tune;
mod param_ids;
mod parl;
mod pretrain;
mod probe;
mod recipe;
mod run;
mod supervised;

pub use average::{average_last_epochs, average_model_dirs, average_modules};
pub use colswarm_model::{Activation, LabelSpace, Namespace, Task};
pub use colswarm_tables::DataSpec;
pub use error::TrainError;
pub use expert_routing::{
    ExpertRoutingConfig, ExpertRoutingOptions, ExpertRoutingSummary, train_expert_routing,
};
pub use fine_tune::{FineTuneConfig, FineTuneReport, fine_tune, partial_dir};
pub use parl::{ParlConfig, ParlOptions, ParlSummary, ScheduleChoice, train_router};
pub use pretrain::{
    CorpusTable, EncoderSettings, Gazetteer, HeldOutScore, KnowledgeCorpus, Objective,
    PretrainConfig, PretrainData, PretrainModel, PretrainModelConfig, PretrainOptions,
    PretrainSummary, REPORT_FILE, SPECIALIST_FILE, Teacher, pretrain,
};
pub use probe::{ProbeConfig, ProbeReport, ProbeScore, probe};
pub use recipe::Recipe;
pub use run::{LrDecay, NonFinitePolicy, OptimizerSettings, RunSettings};
pub use supervised::{
    DataSettings, LossSettings, ModelSettings, Regularization, SpecialistSpec, Stopping,
    TrainConfig, TrainOptions, TrainSummary, train,
};
