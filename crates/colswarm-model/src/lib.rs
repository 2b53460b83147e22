//! Annotating tables with a trained colswarm model, and nothing of training.
//!
//! - [`Annotator`]: a loaded model directory, ready to annotate tables from any number of
//!   threads; [`TableAnnotation`] is what it says about a table.
//! - [`read_table`]: any supported table file, read the way `colswarm annotate` reads it.
//! - [`Model`]: the loaded swarm with its label space and serialization settings, for
//!   evaluation and training code that needs the forward pass itself.
//!
//! ```
//! use colswarm_model::{Annotator, read_table};
//!
//! let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
//! let annotator = Annotator::builder(format!("{models}/models/colswarm-small"))
//!     .top_k(5)
//!     .build()?;
//! let table = read_table(format!(
//!     "{models}/datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv"
//! ))?;
//! let annotation = annotator.annotate(&table)?;
//! for column in &annotation.columns {
//!     // No label where the namespace abstains (its best label is below the model's threshold).
//!     match column.types[0].labels.first() {
//!         Some(best) => println!("{:?}: {} ({:.2})", column.header, best.label, best.confidence),
//!         None => println!("{:?}: none", column.header),
//!     }
//! }
//! # Ok::<(), colswarm_model::ModelError>(())
//! ```
#![warn(missing_docs)]

mod added_head;
mod annotation;
mod annotator;
mod decode;
mod encode;
mod error;
pub mod expert_routing;
pub mod experts;
pub mod header_memory;
pub mod label_names;
mod labels;
mod model;
mod model_dir;
mod prediction;
mod progress;
mod read;
pub mod reader;
mod rendering;
mod serialize_settings;
mod subject;
mod task;

pub use added_head::{
    AddedHead, AddedHeadConfig, AddedNamespace, HeadFile, NgramFile, NgramScorer, NgramWeights,
    added_features, mix_logits,
};
pub use annotation::{
    AnnotateOptions, ColumnAnnotation, GateAnnotation, RelationAnnotation, Scored, TableAnnotation,
    TypeAnnotation,
};
pub use annotator::{
    Annotator, AnnotatorBuilder, AnnotatorDevice, ColumnEmbedding, TableEmbedding,
};
pub use colswarm_rwkv::{DeviceChoice, DeviceError};
pub use colswarm_tables::DatasetFormat;
pub use decode::{Decoder, Place, Target, abstains, decode, hierarchy_probs, namespace_probs};
pub use encode::{
    Columns, Example, Featurizer, PASS_COLUMNS, encode, featurizer, ngram_config, passes, to_batch,
};
pub use error::ModelError;
pub use expert_routing::{ExpertRouting, ROUTING_FILE, mix_namespace};
pub use experts::{ExpertList, ExpertRef};
pub use header_memory::HeaderMemory;
pub use labels::{Activation, LABELS_FILE, LabelSpace, Namespace, Task, close_under, cta_kind};
pub use model::{Expert, Model, SpecialistUse, load_model_extras, rows_of, save_model_extras};
pub use model_dir::{ModelDir, ModelFile};
pub use prediction::{ExpertOutputs, ExpertReads, Outputs, Wanted};
pub use progress::{Progress, format_duration};
pub use read::{
    ReadReport, ReadTableOptions, TABLE_EXTENSIONS, TextEncoding, read_table, read_table_from,
    read_table_from_with_report, read_table_with, read_table_with_report, table_files,
    table_files_and_workbooks, workbook_note,
};
pub use reader::{NgramReader, ReaderFeatures, ReaderFile, TableFeatures};
pub use serialize_settings::{SERIALIZE_FILE, SerializeSettings};
pub use subject::{
    SUBJECT_MIN_DISTINCT, SUBJECT_MIN_MEAN_CHARS, SubjectColumn, SubjectLabel,
    detected_subject_column, subject_by_label, subject_column,
};
