//! Pretraining of knowledge specialists: an RWKV-7 model learns, from a corpus of knowledge
//! that ships inside packages (`scripts/knowledge/`), to put what it knows about a column into
//! its reading of it ([`colswarm_swarm::column_readings`]). The encoder is then saved as a
//! specialist checkpoint a swarm can freeze.
//!
//! Three objectives ([`Objective`]): distillation of a teacher's sentence embeddings, typing of
//! synthetic gazetteer columns, and prediction of a column's header from its cells. Each run
//! holds out part of its corpus and scores itself on it ([`HeldOutScore`]).
//!
//! Files, as in every stage: `config` (data only), `data` (seeded synthetic tables drawn from the
//! corpus, which `corpus` reads), `step` (a batch and its loss), `training` (the checks, the loop
//! and the held-out score), plus `model` (the encoder with its objective's head).

mod config;
mod corpus;
mod data;
mod model;
mod step;
mod training;

pub use config::{EncoderSettings, Objective, PretrainConfig, PretrainData};
pub use corpus::{CorpusTable, Gazetteer, KnowledgeCorpus, Teacher};
pub use model::{PretrainModel, PretrainModelConfig};
pub use training::{
    HeldOutScore, PretrainOptions, PretrainSummary, REPORT_FILE, SPECIALIST_FILE, pretrain,
};
