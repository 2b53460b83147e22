//! Tables for column annotation (CTA: a type per column; CPA: the relation between the subject
//! column and another column), without any deep-learning dependency.
//!
//! - **Model**: [`Table`] → [`Column`]s of [`Cell`]s (text kept as read, plus a [`CellKind`]:
//!   null, boolean, integer, decimal, date, nested, text), [`TableContext`] (page title,
//!   section, caption, header row present or not), CTA labels per column (several allowed) and
//!   [`CpaTarget`]s.
//! - **Readers** (each names file, line and column in its errors, never panics on input, and
//!   keeps memory bounded by [`ReadOptions`]):
//!   CSV/TSV ([`read_csv`]), SOTAB V1/V2 ([`read_sotab_table`], [`load_sotab_split`]),
//!   SemTab ([`load_semtab`]), T2D ([`load_t2d`]), TURL WikiTables in CSV and JSON form
//!   ([`read_wikitables_csv`], [`read_turl_json`]), Sato/Doduo cv files including the
//!   GitTables SemTab 2022 folds ([`read_sato_cv_folds`]) and, with the default `parquet`
//!   feature, GitTables parquet files ([`read_gittables_parquet`]).
//! - **Data sets**: [`DatasetFormat`] names each benchmark's on-disk layout and
//!   [`load_tables`] reads it, keeping a [`Split`].
//! - **Label sets**: [`LabelSet`] (dense ids, texts, multi-hot targets) and [`LabelHierarchy`].
//! - **Serialization**: [`serialize_table`] turns a table into one table segment and one query
//!   segment per column ([`SerializedTable`]) for a causal recurrent model that reads the table
//!   once and takes each column's representation at the end of its query.
//! - **Column n-grams**: [`NgramConfig::column_features`], hashed character n-grams of a
//!   column's header and first cells, L2-normalised (the n-gram baseline's and the swarm's
//!   column features).
//! - **Tokenizer**: bytes are ids `0..=255`; structure tokens follow ([`tokenizer`]);
//!   [`VOCAB_SIZE`] is the embedding size.
//!
//! ```
//! use colswarm_tables::{ByteTokenizer, SerializeConfig, Table, serialize_table};
//!
//! let table = Table::from_rows(
//!     "people",
//!     Some(vec!["name".into(), "born".into()]),
//!     vec![vec!["Ada".into(), "1815-12-10".into()]],
//! );
//! let serialized = serialize_table(&table, &SerializeConfig::default());
//! assert_eq!(serialized.column_queries.len(), 2);
//! assert_eq!(
//!     ByteTokenizer.decode(&serialized.column_queries[1]),
//!     "<query>1<hdr>born</hdr>1815-12-10</query>"
//! );
//! ```
#![warn(missing_docs)]

mod bucket_sort;
mod cell;
mod compressed;
mod dataset;
mod delimited;
mod encoding;
mod error;
mod fnv;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "parquet")]
mod gittables;
mod label_set;
mod labelled;
mod ngrams;
mod options;
mod python_literal;
mod records;
mod row_sample;
mod sato_cv;
mod semtab;
mod serialize;
mod sotab;
mod spec;
mod t2d;
mod table;
mod table_file;
mod tokenizer;
mod turl;
mod value_stats;
mod words;

pub use cell::{Cell, CellKind, classify};
pub use compressed::{
    DataFolder, extension_uncompressed, file_stem_uncompressed, is_gzip, is_tar_gz, open_input,
};
pub use dataset::{DatasetFormat, LoadedData, Split, load_tables, load_tables_encoded};
pub use delimited::{
    CsvOptions, Delimiter, RaggedRows, read_csv, read_csv_from_reader, read_csv_with_report,
};
pub use encoding::{TextEncoding, decode_windows_1252};
pub use error::{Result, TableError};
pub use fnv::fnv1a;
#[cfg(feature = "parquet")]
#[doc(hidden)]
pub use gittables::in_guarded_decoder;
#[cfg(feature = "parquet")]
pub use gittables::{
    GitTablesAnnotation, GitTablesMetadata, read_gittables_parquet, read_gittables_parquet_sampled,
};
pub use label_set::{LabelHierarchy, LabelSet};
pub use labelled::{FileReports, read_labelled_tables, read_labelled_tables_with_report};
pub use ngrams::{NgramConfig, SparseFeatures, TableNgrams};
pub use options::{ReadOptions, ReadReport};
pub use sato_cv::{SatoCvDataset, SatoCvOptions, read_sato_cv, read_sato_cv_folds};
pub use semtab::{SemTabDataset, SemTabLayout, load_semtab};
pub use serialize::{SerializeConfig, SerializedTable, serialize_table};
pub use sotab::{
    SotabCpaRecord, SotabCtaRecord, SotabSplit, load_sotab_split, read_sotab_cpa_gt,
    read_sotab_cta_gt, read_sotab_table, read_sotab_table_from_reader, read_sotab_table_sampled,
    sotab_label_set,
};
pub use spec::DataSpec;
pub use t2d::{RDFS_LABEL, T2dDataset, load_t2d};
pub use table::{CellCounts, Column, CpaTarget, Table, TableContext};
pub use table_file::{
    ReadTableOptions, read_table_file, read_table_file_with_report, read_table_stream,
    read_table_stream_with_report,
};
pub use tokenizer::{
    ByteTokenizer, CELL_SEP, COLUMN_SEP, CONTEXT_SEP, HEADER_END, HEADER_START, NULL_CELL, PAD,
    QUERY_END, QUERY_START, TABLE_END, TABLE_START, VOCAB_SIZE,
};
pub use turl::{TurlTask, read_turl_json, read_wikitables_csv, wikitables_label_set};
pub use value_stats::value_statistics;
pub use words::{ColumnWords, words};
