//! The errors of this crate.

use colswarm_model::ModelError;

/// What can go wrong converting Arrow data or annotating it.
#[derive(Debug, thiserror::Error)]
pub enum ArrowError {
    /// A column's values could not be formatted as text.
    #[error(
        "record batch `{table}`, column {column} (`{name}`): cannot format its values: {source}"
    )]
    Format {
        /// The table id given for the batch.
        table: String,
        /// Column index in the batch.
        column: usize,
        /// Column name.
        name: String,
        /// Arrow's error.
        source: arrow_schema::ArrowError,
    },
    /// A record batch has no columns or no rows.
    #[error("record batch `{table}` is empty ({columns} columns, {rows} rows)")]
    Empty {
        /// The table id given for the batch.
        table: String,
        /// Number of columns.
        columns: usize,
        /// Number of rows.
        rows: usize,
    },
    /// The model failed.
    #[error(transparent)]
    Annotate(#[from] ModelError),
    /// Building an output batch failed.
    #[error("building the annotation batch: {0}")]
    Build(#[source] arrow_schema::ArrowError),
}
