//! # colswarm-arrow
//!
//! colswarm for Arrow and DataFusion pipelines: annotate a [`RecordBatch`](arrow_array::RecordBatch),
//! get annotations back as record batches, and annotate columns from SQL with the
//! `annotate_column` aggregate function.
//!
//! It is a separate crate so that users of the core library do not compile Arrow or DataFusion;
//! the DataFusion function is behind the `datafusion` feature (on by default).
//!
//! ## Annotating a record batch
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
//! use colswarm_model::Annotator;
//! use colswarm_arrow::{AnnotateRecordBatch, BatchOptions, annotations_to_record_batch};
//!
//! let annotator = Annotator::builder(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small"))
//!     .build()?;
//! let batch = RecordBatch::try_from_iter([
//!     ("city", Arc::new(StringArray::from(vec!["Tokyo", "Delhi", "Shanghai"])) as ArrayRef),
//!     ("population", Arc::new(Int64Array::from(vec![37_400_068, 28_514_000, 25_582_000])) as ArrayRef),
//! ])?;
//! let annotations = annotator.annotate_record_batch(&batch, "cities", &BatchOptions::default())?;
//! assert_eq!(annotations[0].columns.len(), 2);
//!
//! // One row per predicted label: table, column, header, task, namespace, label, confidence, …
//! let rows = annotations_to_record_batch(&annotations)?;
//! assert!(rows.num_rows() >= 2 * annotator.model().space.cta.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Batches wider than [`BatchOptions::max_columns`] (32) are annotated in windows of columns,
//! and an [`Annotator`](colswarm_model::Annotator) built with `.threads(n)` annotates `n` windows at
//! once: a 1,000-column batch is 32 tables.
//!
//! ## Annotating columns from SQL (feature `datafusion`)
//!
//! ```
//! # #[cfg(feature = "datafusion")]
//! # {
//! use colswarm_model::Annotator;
//! use colswarm_arrow::AnnotateColumn;
//! use datafusion::prelude::*;
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let annotator = Annotator::builder(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small"))
//!     .build()?;
//! let ctx = SessionContext::new();
//! ctx.register_udaf(AnnotateColumn::new(annotator)?.namespace("t2d")?.into_udaf());
//! ctx.sql("CREATE TABLE cities(city VARCHAR, country VARCHAR) AS VALUES \
//!          ('Lyon', 'France'), ('Porto', 'Portugal'), ('Graz', 'Austria')").await?;
//! let df = ctx.sql("SELECT annotate_column(city) AS city, annotate_column(country) AS country FROM cities").await?;
//! let batches = df.collect().await?;
//! assert_eq!(batches[0].num_rows(), 1); // one annotation per column, not per row
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `annotate_column` is an aggregate: it sees the whole column (a deterministic sample of its
//! distinct values, the same however DataFusion partitions the input), so with `GROUP BY` it
//! annotates each group's column, and DataFusion's partitions sample in parallel.
#![warn(missing_docs)]

mod annotations;
mod error;
mod record_batch;
#[cfg(feature = "datafusion")]
mod udaf;

pub use annotations::{annotation_schema, annotations_to_record_batch, router_to_record_batch};
pub use error::ArrowError;
pub use record_batch::{
    AnnotateRecordBatch, BatchOptions, table_from_record_batch, tables_from_record_batch,
};
#[cfg(feature = "datafusion")]
pub use udaf::{AnnotateColumn, ColumnSample, DEFAULT_SAMPLE_SIZE};
