//! # colswarm
//!
//! Sigmoid-gated specialist routing of RWKV-7 models, for annotating table columns with semantic
//! types (CTA) and relations to the subject column (CPA).
//!
//! A trainable **primary** RWKV-7 model reads a table; a sigmoid **router** picks frozen
//! **specialist** checkpoints, whose recurrent states are aligned and fused into the primary's
//! state; the primary then answers one short query per column.
//!
//! To annotate tables with a trained model, use [`Annotator`] (and [`read_table`] to read a
//! table file the way `colswarm annotate` does):
//!
//! ```
//! use colswarm::Annotator;
//! use colswarm::tables::Table;
//!
//! let annotator = Annotator::builder("models/colswarm-small").build()?;
//! let table = Table::from_rows(
//!     "films",
//!     Some(vec!["title".into(), "year".into(), "director".into()]),
//!     vec![
//!         vec!["Rushmore".into(), "1998".into(), "Wes Anderson".into()],
//!         vec!["Heat".into(), "1995".into(), "Michael Mann".into()],
//!     ],
//! );
//! let annotation = annotator.annotate(&table)?;
//! assert_eq!(annotation.columns.len(), 3);
//! for column in &annotation.columns {
//!     // No label where the namespace abstains (its best label is below the model's threshold).
//!     if let Some(best) = column.types[0].labels.first() {
//!         println!("{:?}: {} ({:.2})", column.header, best.label, best.confidence);
//!     }
//! }
//! # Ok::<(), colswarm::ModelError>(())
//! ```
//!
//! The workspace's crates, re-exported:
//!
//! | module | crate | what |
//! |---|---|---|
//! | [`model`] | `colswarm-model` | inference: load a model directory, read table files, annotate |
//! | [`tables`] | `colswarm-tables` | tables, dataset readers, serialization, byte tokenizer |
//! | [`rwkv`] | `colswarm-rwkv` | the RWKV-7 model, its state and checkpoints |
//! | [`kernels`] | `colswarm-kernels` | the WKV-7 recurrence and state fusion (reference and fused) |
//! | [`swarm`] | `colswarm-swarm` | router, frozen specialists, alignment, fusion, heads, orchestrator, critical steps |
//! | [`parl`] | `colswarm-parl` | PARL rewards, schedules, the policy objective |
//! | [`eval`] | `colswarm-eval` | F1 reports, baselines, the paired bootstrap of two systems |
//! | [`train`] | `colswarm-train` | supervised and PARL training, pretraining, probes |
//!
//! The RWKV-7 model on its own:
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use colswarm::rwkv::RwkvConfig;
//!
//! let device = Device::flex();
//! let model = RwkvConfig::new(260, 64, 2).with_head_size(32).init(42, &device);
//! let table = b"city,country\nBerlin,DE\nParis,FR\n";
//! let tokens: Vec<i64> = table.iter().map(|&b| b as i64).collect();
//! let out = model.forward(Tensor::<1, Int>::from_data(tokens.as_slice(), &device).unsqueeze(), None, None);
//! assert_eq!(out.hidden.dims(), [1, table.len(), 64]);
//! ```
#![warn(missing_docs)]

pub use colswarm_eval as eval;
pub use colswarm_kernels as kernels;
pub use colswarm_model as model;
pub use colswarm_parl as parl;
pub use colswarm_rwkv as rwkv;
pub use colswarm_swarm as swarm;
pub use colswarm_tables as tables;
pub use colswarm_train as train;

pub use colswarm_model::{
    Annotator, AnnotatorBuilder, ColumnAnnotation, ModelError, ReadTableOptions, SpecialistUse,
    TableAnnotation, read_table, read_table_with,
};
