//! GitTables parquet files (one table per file) with the `gittables` JSON entry of the file's
//! key-value metadata (license, source CSV URL, and per-column annotations by four annotators).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use arrow_array::Array;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use crate::cell::Cell;
use crate::error::{Result, TableError};
use crate::options::ReadOptions;
use crate::records::trim_partial_char;
use crate::table::{Column, Table};

/// Which GitTables annotation becomes the columns' CTA labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitTablesAnnotation {
    /// `dbpedia_syntactic_column_types` (exact header match); label = `cleaned_label`.
    DbpediaSyntactic,
    /// `dbpedia_semantic_column_types` (embedding match); label = `cleaned_label`.
    DbpediaSemantic,
    /// `schema_syntactic_column_types`; label = `id` (e.g. `schema:author`).
    SchemaSyntactic,
    /// `schema_semantic_column_types`; label = `id`.
    SchemaSemantic,
}

impl GitTablesAnnotation {
    /// All four, in metadata order.
    pub const ALL: [GitTablesAnnotation; 4] = [
        GitTablesAnnotation::DbpediaSyntactic,
        GitTablesAnnotation::DbpediaSemantic,
        GitTablesAnnotation::SchemaSyntactic,
        GitTablesAnnotation::SchemaSemantic,
    ];

    /// The metadata key.
    pub fn key(self) -> &'static str {
        match self {
            GitTablesAnnotation::DbpediaSyntactic => "dbpedia_syntactic_column_types",
            GitTablesAnnotation::DbpediaSemantic => "dbpedia_semantic_column_types",
            GitTablesAnnotation::SchemaSyntactic => "schema_syntactic_column_types",
            GitTablesAnnotation::SchemaSemantic => "schema_semantic_column_types",
        }
    }

    fn label_field(self) -> &'static str {
        match self {
            GitTablesAnnotation::DbpediaSyntactic | GitTablesAnnotation::DbpediaSemantic => {
                "cleaned_label"
            }
            GitTablesAnnotation::SchemaSyntactic | GitTablesAnnotation::SchemaSemantic => "id",
        }
    }
}

/// The parsed `gittables` metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitTablesMetadata {
    /// `table_id`, when present.
    pub table_id: Option<String>,
    /// The source repository's license.
    pub license: Option<String>,
    /// Where the CSV came from.
    pub csv_url: Option<String>,
    /// Rows as recorded by GitTables.
    pub number_rows: Option<u64>,
    /// Columns as recorded by GitTables.
    pub number_columns: Option<u64>,
    /// Per annotation: column name → label (see [`GitTablesAnnotation`] for which field).
    pub column_labels: BTreeMap<&'static str, BTreeMap<String, String>>,
    /// The whole metadata object.
    pub raw: Value,
}

/// Reads a GitTables parquet file. Column headers are the parquet column names; when
/// `annotation` is given, its labels become the columns' CTA labels.
pub fn read_gittables_parquet(
    path: impl AsRef<Path>,
    annotation: Option<GitTablesAnnotation>,
    options: &ReadOptions,
) -> Result<(Table, GitTablesMetadata)> {
    let path = path.as_ref();
    let parquet_error = |message: String| TableError::Parquet {
        path: path.into(),
        message,
    };
    let file = File::open(path).map_err(|e| TableError::io(path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| parquet_error(e.to_string()))?;
    let metadata_text = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|entries| entries.iter().find(|kv| kv.key == "gittables"))
        .and_then(|kv| kv.value.clone())
        .ok_or_else(|| parquet_error("no `gittables` entry in the key-value metadata".into()))?;
    let metadata = parse_metadata(&metadata_text).map_err(|source| TableError::Json {
        path: path.into(),
        line: source.line() as u64,
        source,
    })?;

    let schema = builder.schema().clone();
    if schema.fields().len() > options.max_columns {
        return Err(TableError::TooManyColumns {
            path: path.into(),
            line: 0,
            found: schema.fields().len(),
            limit: options.max_columns,
        });
    }
    let mut columns: Vec<Column> = schema
        .fields()
        .iter()
        .map(|f| Column::new(Some(f.name().clone()), Vec::new()))
        .collect();
    let reader = builder.build().map_err(|e| parquet_error(e.to_string()))?;
    let format = FormatOptions::default();
    let mut n_rows = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| parquet_error(e.to_string()))?;
        n_rows += batch.num_rows();
        if n_rows > options.max_rows {
            return Err(TableError::TooManyRows {
                path: path.into(),
                line: 0,
                found: n_rows,
                limit: options.max_rows,
            });
        }
        for (index, (array, column)) in batch.columns().iter().zip(&mut columns).enumerate() {
            let formatter = ArrayFormatter::try_new(array.as_ref(), &format)
                .map_err(|e| parquet_error(e.to_string()))?;
            for row in 0..array.len() {
                if array.is_null(row) {
                    column.cells.push(Cell::null());
                    continue;
                }
                let text = formatter.value(row).to_string();
                column
                    .cells
                    .push(bounded_cell(text, path, n_rows, index, options)?);
            }
        }
    }
    if let Some(annotation) = annotation
        && let Some(labels) = metadata.column_labels.get(annotation.key())
    {
        for column in &mut columns {
            if let Some(label) = column.header.as_ref().and_then(|h| labels.get(h)) {
                column.labels.push(label.clone());
            }
        }
    }
    let id = metadata.table_id.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let mut table = Table::new(id, columns);
    table.context.has_header_row = true;
    Ok((table, metadata))
}

fn bounded_cell(
    text: String,
    path: &Path,
    row: usize,
    column: usize,
    options: &ReadOptions,
) -> Result<Cell> {
    if text.len() <= options.max_cell_bytes {
        return Ok(Cell::new(text));
    }
    if !options.lossy {
        return Err(TableError::CellTooLarge {
            path: path.into(),
            line: row as u64,
            column,
            limit: options.max_cell_bytes,
        });
    }
    let mut bytes = text.into_bytes();
    bytes.truncate(options.max_cell_bytes);
    trim_partial_char(&mut bytes);
    Ok(Cell::new(String::from_utf8_lossy(&bytes).into_owned()))
}

fn parse_metadata(text: &str) -> std::result::Result<GitTablesMetadata, serde_json::Error> {
    let raw: Value = serde_json::from_str(text)?;
    let string = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_string);
    let mut column_labels = BTreeMap::new();
    for annotation in GitTablesAnnotation::ALL {
        let labels: BTreeMap<String, String> = raw
            .get(annotation.key())
            .and_then(Value::as_object)
            .map(|columns| {
                columns
                    .iter()
                    .filter_map(|(name, entry)| {
                        let label = entry.get(annotation.label_field())?.as_str()?;
                        Some((name.clone(), label.to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        column_labels.insert(annotation.key(), labels);
    }
    Ok(GitTablesMetadata {
        table_id: string("table_id"),
        license: string("license"),
        csv_url: string("csv_url"),
        number_rows: raw.get("number_rows").and_then(Value::as_u64),
        number_columns: raw.get("number_columns").and_then(Value::as_u64),
        column_labels,
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_labels_per_annotation() {
        let metadata = parse_metadata(
            r#"{"license":"MIT","table_id":7,"dbpedia_syntactic_column_types":
                {"Author":{"cleaned_label":"author","id":"http://dbpedia.org/ontology/author"}},
                "schema_semantic_column_types":{"Title":{"id":"schema:name","cleaned_label":"name"}}}"#,
        )
        .unwrap();
        assert_eq!(metadata.license.as_deref(), Some("MIT"));
        assert_eq!(
            metadata.table_id, None,
            "a numeric table_id is not a string"
        );
        assert_eq!(
            metadata.column_labels["dbpedia_syntactic_column_types"]["Author"],
            "author"
        );
        assert_eq!(
            metadata.column_labels["schema_semantic_column_types"]["Title"],
            "schema:name"
        );
    }
}
