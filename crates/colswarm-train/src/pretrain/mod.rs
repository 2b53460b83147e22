//! Pretraining of knowledge specialists: an RWKV-7 model learns, from a corpus of knowledge
//! that ships inside packages (`scripts/knowledge/`), to put what it knows about a column into
//! its reading of it ([`colswarm_swarm::column_readings`]). The encoder is then saved as a
//! specialist checkpoint a swarm can freeze.
//!
//! Three objectives ([`Objective`]): distillation of a teacher's sentence embeddings, typing of
//! synthetic gazetteer columns, and prediction of a column's header from its cells. Each run
//! holds out part of its corpus and scores itself on it ([`HeldOutScore`]).

mod config;
mod corpus;
mod model;
mod synth;
mod training;

pub use config::{Objective, PretrainConfig};
pub use corpus::{CorpusTable, Gazetteer, KnowledgeCorpus, Teacher};
pub use model::{PretrainModel, PretrainModelConfig};
pub use training::{
    HeldOutScore, PretrainOptions, PretrainSummary, REPORT_FILE, SPECIALIST_FILE, pretrain,
};
