//! The crate's one error type.
//!
//! Every variant that comes from reading a file names that file; variants about a place inside a
//! file also name the line (1-based, physical line where the record starts) and, where it makes
//! sense, the column index (0-based, the same index the tables and ground-truth files use).

use std::path::PathBuf;

/// Everything that can go wrong while reading tables, ground truth and label files, or while
/// serializing a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The operating system could not open or read a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A gzip stream is corrupt or ends early.
    #[error("{path}: corrupt or truncated gzip stream: {source}")]
    Gzip {
        /// The file.
        path: PathBuf,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },

    /// A cell is not valid UTF-8 (and the reader is not in lossy mode).
    #[error(
        "{path}: line {line}, column index {column}: invalid UTF-8 at byte {byte_offset} of the cell \
         (a Latin-1 or Windows-1252 file reads with the encoding windows-1252; a folder of both \
         kinds with the encoding auto)"
    )]
    InvalidUtf8 {
        /// The file.
        path: PathBuf,
        /// Line where the record starts (1-based).
        line: u64,
        /// Column index (0-based).
        column: usize,
        /// Offset of the first invalid byte inside the cell.
        byte_offset: usize,
    },

    /// A record has a different number of fields than the first record (and ragged rows are
    /// not padded).
    #[error("{path}: line {line}: ragged row with {found} fields, expected {expected}")]
    RaggedRow {
        /// The file.
        path: PathBuf,
        /// Line where the record starts (1-based).
        line: u64,
        /// Fields in the first record.
        expected: usize,
        /// Fields in this record.
        found: usize,
    },

    /// A quoted field is still open at the end of the input.
    #[error(
        "{path}: line {line}, column index {column}: quoted field is not closed before the end of the file"
    )]
    UnclosedQuote {
        /// The file.
        path: PathBuf,
        /// Line where the record starts (1-based).
        line: u64,
        /// Column index (0-based).
        column: usize,
    },

    /// A cell is larger than the configured `max_cell_bytes` (and the reader is not in lossy
    /// mode, which truncates instead).
    #[error("{path}: line {line}, column index {column}: cell exceeds the limit of {limit} bytes")]
    CellTooLarge {
        /// The file.
        path: PathBuf,
        /// Line where the record starts (1-based).
        line: u64,
        /// Column index (0-based).
        column: usize,
        /// The configured limit.
        limit: usize,
    },

    /// A line of a JSON-lines file is larger than the configured `max_record_bytes`.
    #[error("{path}: line {line}: record exceeds the limit of {limit} bytes")]
    RecordTooLarge {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// The configured limit.
        limit: usize,
    },

    /// A table has more columns than the configured `max_columns`.
    #[error("{path}: line {line}: {found} columns exceed the limit of {limit}")]
    TooManyColumns {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// Columns found (or the column index that implies them).
        found: usize,
        /// The configured limit.
        limit: usize,
    },

    /// A table has more rows than the configured `max_rows`.
    #[error("{path}: line {line}: {found} rows exceed the limit of {limit}")]
    TooManyRows {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// Rows found (or the row index that implies them).
        found: usize,
        /// The configured limit.
        limit: usize,
    },

    /// The file holds no table at all (no records, or no columns).
    #[error("{path}: empty table (no records)")]
    EmptyTable {
        /// The file.
        path: PathBuf,
    },

    /// A delimited file starts with a UTF-16 byte-order mark: text no encoding option reads.
    #[error(
        "{path}: the file is UTF-16 text; save it as UTF-8 (\"CSV UTF-8\" in spreadsheet programs)"
    )]
    Utf16 {
        /// The file.
        path: PathBuf,
    },

    /// A file read as delimited text starts with another format's signature (a spreadsheet
    /// workbook, a zip or gzip archive, a parquet file, a PDF), which would otherwise be read
    /// as one garbled column.
    #[error("{path}: the file is {format}, not delimited text; {hint}")]
    NotText {
        /// The file.
        path: PathBuf,
        /// What the file is, as its signature says (`an Excel workbook (.xlsx) or zip archive`).
        format: &'static str,
        /// What to do instead.
        hint: &'static str,
    },

    /// A line is not valid JSON.
    #[error("{path}: line {line}: invalid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The line (1-based; for a single JSON document, serde_json's line).
        line: u64,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },

    /// Valid JSON of the wrong shape (e.g. a row that is not an object, a column key that is
    /// not a non-negative integer).
    #[error("{path}: line {line}: unexpected JSON shape: {message}")]
    JsonShape {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// What was expected and what was found.
        message: String,
    },

    /// A Python literal (TURL CSV fields) does not parse.
    #[error(
        "{path}: line {line}, field `{field}`: invalid Python literal at byte {byte_offset}: {message}"
    )]
    PythonLiteral {
        /// The file.
        path: PathBuf,
        /// Line where the record starts (1-based).
        line: u64,
        /// The CSV field that holds the literal.
        field: String,
        /// Offset inside the field.
        byte_offset: usize,
        /// What went wrong.
        message: String,
    },

    /// A header row lacks a column the format requires.
    #[error("{path}: missing required column `{column_name}` in the header")]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The required header name.
        column_name: String,
    },

    /// A record has too few fields for the format.
    #[error("{path}: line {line}: expected at least {expected} fields, found {found}")]
    MissingField {
        /// The file.
        path: PathBuf,
        /// Line where the record starts (1-based).
        line: u64,
        /// Minimum fields the format needs.
        expected: usize,
        /// Fields present.
        found: usize,
    },

    /// A field that must be an integer is not.
    #[error("{path}: line {line}, field `{field}`: `{value}` is not a valid integer")]
    InvalidInteger {
        /// The file.
        path: PathBuf,
        /// Line where the record starts (1-based).
        line: u64,
        /// The field's name.
        field: String,
        /// The text found.
        value: String,
    },

    /// Annotations refer to a column the table does not have.
    #[error(
        "{path}: line {line}: column index {column} is out of range for table `{table}` with {n_columns} columns"
    )]
    ColumnOutOfRange {
        /// The file holding the annotation.
        path: PathBuf,
        /// Line of the annotation (1-based).
        line: u64,
        /// The table.
        table: String,
        /// The column index referred to.
        column: usize,
        /// Columns the table has.
        n_columns: usize,
    },

    /// Annotations refer to a table that was not loaded.
    #[error("{path}: line {line}: unknown table `{table}`")]
    UnknownTable {
        /// The file holding the annotation.
        path: PathBuf,
        /// Line of the annotation (1-based).
        line: u64,
        /// The table named.
        table: String,
    },

    /// The same label is given two different ids (or one id two labels).
    #[error(
        "{path}: line {line}: label `{label}` has id {id}, but id {existing_id} was given before"
    )]
    InconsistentLabelId {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// The label.
        label: String,
        /// Id on this line.
        id: i64,
        /// Id seen first.
        existing_id: i64,
    },

    /// A label-set file (vocabulary, text map, hierarchy) has the wrong format.
    #[error("{path}: line {line}: invalid label file: {message}")]
    LabelFile {
        /// The file.
        path: PathBuf,
        /// The line (1-based; 0 when the whole file is at fault).
        line: u64,
        /// What is wrong.
        message: String,
    },

    /// A row of a labels file (`table,column,label`) names a table or column that is not
    /// there, or has an empty field; or the file has no labelled row or is not UTF-8.
    #[error("{path}: line {line}: {message}")]
    LabelledColumn {
        /// The labels file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// What is wrong, naming the table or column.
        message: String,
    },

    /// A data specification (`NAME=FORMAT:PATH[,PATH…][#SPLIT]`) is malformed or names data
    /// that is not there.
    #[error("dataset {spec}: {reason}")]
    Spec {
        /// The specification as given.
        spec: String,
        /// What is wrong.
        reason: String,
    },

    /// A parquet file cannot be decoded or lacks the GitTables metadata.
    #[cfg(feature = "parquet")]
    #[error("{path}: parquet: {message}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// A data set's folder does not have the layout its format needs (no table files, no
    /// `tables/` folder, ambiguous ground-truth files).
    #[error("{path}: {reason}")]
    Dataset {
        /// The file or folder.
        path: PathBuf,
        /// What is missing or ambiguous.
        reason: String,
    },

    /// An option value is unusable (e.g. a zero budget, a delimiter that is also the quote).
    #[error("invalid option: {0}")]
    InvalidOption(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = TableError> = std::result::Result<T, E>;

impl TableError {
    /// Wraps an I/O error with the file it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TableError::Io {
            path: path.into(),
            source,
        }
    }

    /// Wraps an error met while reading `path`'s bytes: a gzip file's decoding errors (bad data,
    /// an early end) become [`TableError::Gzip`], anything else [`TableError::Io`].
    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        let decoding = matches!(
            source.kind(),
            std::io::ErrorKind::InvalidData
                | std::io::ErrorKind::InvalidInput
                | std::io::ErrorKind::UnexpectedEof
        );
        // A `.gz` name, as `compressed::is_gzip` says (not imported: that module uses this one).
        let gzip = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().to_lowercase().ends_with(".gz"));
        if decoding && gzip {
            TableError::Gzip { path, source }
        } else {
            TableError::Io { path, source }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_line_and_column() {
        let error = TableError::InvalidUtf8 {
            path: "data/t.csv".into(),
            line: 7,
            column: 2,
            byte_offset: 3,
        };
        let message = error.to_string();
        assert!(message.contains("data/t.csv"), "{message}");
        assert!(message.contains("line 7"), "{message}");
        assert!(message.contains("column index 2"), "{message}");
    }
}
