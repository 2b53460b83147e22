//! The swarm: a trainable primary RWKV-7 model, a sigmoid router over frozen specialist
//! checkpoints, per-head alignment of their states, masked state fusion, and CTA/CPA heads.
//!
//! Data flow (docs/ORCHESTRATOR.md §1): the primary reads the table
//! ([`Orchestrator::read_tables`]) → the router gates each specialist from the pooled read
//! ([`SpecialistRouter`]) → active specialists read the same table concurrently, each only on
//! the rows that activated it ([`Swarm::run_specialists`]) → their states are aligned
//! ([`AlignmentProjection`]) and fused into the primary's ([`StateFusion`]; exactly the
//! primary's state when none is active) → the primary answers one query per column from the
//! fused state ([`Orchestrator::answer`]), to which the column's span of the table read and its
//! n-gram embedding ([`NgramEmbedding`]) are added → heads ([`ColumnHead`]).
#![warn(missing_docs)]

mod alignment;
mod batch;
mod checksum;
mod error;
mod fusion;
mod heads;
mod logit_mix;
pub mod manifest;
mod ngram_embedding;
mod orchestrator;
mod pooling;
mod router;
mod specialist;
mod steps;
mod tensor_index;
mod word_vectors;

pub use alignment::{AlignmentProjection, StateShape};
pub use batch::TableBatch;
pub use error::SwarmError;
pub use fusion::{FusionMode, StateFusion, StateFusionConfig};
pub use heads::{ColumnHead, ColumnHeadConfig, LabelKind};
pub use logit_mix::{LogitMix, LogitMixConfig, MixInput, mix_row};
pub use ngram_embedding::{ColumnNgramsConfig, NgramEmbedding};
pub use orchestrator::{
    HeadSkip, Orchestrator, OrchestratorConfig, Routing, SpecialistStates, Swarm, SwarmOutput,
    TableRead,
};
pub use router::{RouterDecision, SpecialistRouter, SpecialistRouterConfig};
pub use specialist::{FrozenSpecialist, column_readings};
pub use steps::{StageSteps, SubtaskSteps, TableSteps};
pub use tensor_index::without_index;
pub use word_vectors::{ColumnWordsConfig, WordProjection, WordVectors};
