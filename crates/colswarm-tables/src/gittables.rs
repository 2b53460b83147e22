//! GitTables parquet files (one table per file) with the `gittables` JSON entry of the file's
//! key-value metadata (license, source CSV URL, and per-column annotations by four annotators).

use bytes::Bytes;
use std::cell::Cell as Flag;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;

use arrow_array::Array;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use parquet::file::metadata::ParquetMetaData;
use serde_json::Value;

use crate::cell::Cell;
use crate::error::{Result, TableError};
use crate::options::{ReadOptions, ReadReport};
use crate::records::trim_partial_char;
use crate::row_sample::RowSample;
use crate::table::{Column, Table};

mod thrift;

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
    read_gittables_parquet_sampled(path, annotation, options, None)
}

/// [`read_gittables_parquet`], keeping at most `sample_rows` rows: a uniform sample in table
/// order, the same on every read, as a delimited table is sampled. The cells are decoded one
/// record batch at a time, so the rows not kept never accumulate; the file's bytes are still
/// read whole, once, for the checks below. With a sample there is no row limit.
pub fn read_gittables_parquet_sampled(
    path: impl AsRef<Path>,
    annotation: Option<GitTablesAnnotation>,
    options: &ReadOptions,
    sample_rows: Option<usize>,
) -> Result<(Table, GitTablesMetadata)> {
    let (table, metadata, _) =
        read_gittables_parquet_with_report(path.as_ref(), annotation, options, sample_rows)?;
    Ok((table, metadata))
}

/// [`read_gittables_parquet_sampled`], with what reading changed: cells cut (lossy) and rows
/// left out of the sample.
pub(crate) fn read_gittables_parquet_with_report(
    path: &Path,
    annotation: Option<GitTablesAnnotation>,
    options: &ReadOptions,
    sample_rows: Option<usize>,
) -> Result<(Table, GitTablesMetadata, ReadReport)> {
    let parquet_error = |message: String| TableError::Parquet {
        path: path.into(),
        message,
    };
    // Read whole, once (GitTables files are small): the checks below walk the bytes, and the
    // parquet crate decodes from the same buffer.
    let bytes = Bytes::from(std::fs::read(path).map_err(|e| TableError::io(path, e))?);
    let file_len = bytes.len() as u64;
    check_footer(&bytes).map_err(parquet_error)?;
    // Column types come from the parquet schema itself. The Arrow schema some writers embed (the
    // `ARROW:schema` key-value entry, an IPC flatbuffer) is not read: arrow-ipc panics on
    // malformed ones instead of returning an error (found by fuzzing: a field of type NONE).
    let reader_options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder = guarded(path, || {
        ParquetRecordBatchReaderBuilder::try_new_with_options(bytes.clone(), reader_options)
            .map_err(|e| e.to_string())
    })?;
    check_column_chunks(builder.metadata(), file_len).map_err(parquet_error)?;
    check_page_headers(builder.metadata(), &bytes).map_err(parquet_error)?;
    let metadata = gittables_metadata(builder.metadata(), path)?;

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
    let id = metadata.table_id.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let reader = guarded(path, || builder.build().map_err(|e| e.to_string()))?;
    let mut rows = RowSample::new(sample_rows, &id);
    let mut report = ReadReport::default();
    read_rows(reader, &mut rows, columns.len(), path, options, &mut report)?;
    report.sampled_out_rows += rows.seen() - rows.len();
    for row in rows.into_rows() {
        for (column, cell) in columns.iter_mut().zip(row) {
            column.cells.push(cell);
        }
    }
    if let Some(annotation) = annotation {
        label_columns(&mut columns, &metadata, annotation);
    }
    let mut table = Table::new(id, columns);
    table.context.has_header_row = true;
    Ok((table, metadata, report))
}

/// Offers every row of every record batch to `rows`, each cell formatted as text by Arrow;
/// without a sample, a row count over `options.max_rows` is an error.
fn read_rows(
    mut reader: ParquetRecordBatchReader,
    rows: &mut RowSample<Vec<Cell>>,
    n_columns: usize,
    path: &Path,
    options: &ReadOptions,
    report: &mut ReadReport,
) -> Result<()> {
    let format = FormatOptions::default();
    let mut n_rows = 0usize;
    while let Some(batch) = guarded(path, || {
        reader.next().transpose().map_err(|e| e.to_string())
    })? {
        let first = n_rows;
        n_rows += batch.num_rows();
        if !rows.is_sampled() && n_rows > options.max_rows {
            return Err(TableError::TooManyRows {
                path: path.into(),
                line: 0,
                found: n_rows,
                limit: options.max_rows,
            });
        }
        let mut batch_rows = vec![Vec::with_capacity(n_columns); batch.num_rows()];
        for (index, array) in batch.columns().iter().enumerate().take(n_columns) {
            let texts = guarded(path, || {
                let formatter =
                    ArrayFormatter::try_new(array.as_ref(), &format).map_err(|e| e.to_string())?;
                Ok((0..array.len())
                    .map(|row| (!array.is_null(row)).then(|| formatter.value(row).to_string()))
                    .collect::<Vec<_>>())
            })?;
            for (offset, (text, row)) in texts.into_iter().zip(&mut batch_rows).enumerate() {
                row.push(match text {
                    Some(text) => {
                        bounded_cell(text, (path, first + offset + 1, index), options, report)?
                    }
                    None => Cell::null(),
                });
            }
        }
        for row in batch_rows {
            rows.push(row);
        }
    }
    Ok(())
}

/// The file's `gittables` key-value entry, parsed.
fn gittables_metadata(metadata: &ParquetMetaData, path: &Path) -> Result<GitTablesMetadata> {
    let text = metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|entries| entries.iter().find(|kv| kv.key == "gittables"))
        .and_then(|kv| kv.value.clone())
        .ok_or_else(|| TableError::Parquet {
            path: path.into(),
            message: "no `gittables` entry in the key-value metadata".into(),
        })?;
    parse_metadata(&text).map_err(|source| TableError::Json {
        path: path.into(),
        line: source.line() as u64,
        source,
    })
}

/// Gives each column the label `annotation` names for its header, if any.
fn label_columns(
    columns: &mut [Column],
    metadata: &GitTablesMetadata,
    annotation: GitTablesAnnotation,
) {
    let Some(labels) = metadata.column_labels.get(annotation.key()) else {
        return;
    };
    for column in columns {
        if let Some(label) = column.header.as_ref().and_then(|h| labels.get(h)) {
            column.labels.push(label.clone());
        }
    }
}

thread_local! {
    /// True while this thread runs parquet or arrow code under [`guarded`].
    static GUARDED: Flag<bool> = const { Flag::new(false) };
}

/// True while the current thread runs the parquet decoder or arrow's formatting under the
/// GitTables reader's guard, where a panic is caught and becomes [`TableError::Parquet`]. A panic
/// hook that aborts (as fuzzers install) can let such panics unwind instead.
pub fn in_guarded_decoder() -> bool {
    GUARDED.with(Flag::get)
}

/// Runs parquet or arrow code on untrusted bytes: its error, or a panic (the parquet crate still
/// panics on some corrupt pages, found by fuzzing), becomes [`TableError::Parquet`] naming the
/// file.
fn guarded<T>(path: &Path, f: impl FnOnce() -> std::result::Result<T, String>) -> Result<T> {
    let was_guarded = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was_guarded));
    let message = match result {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(message)) => message,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("corrupt file (the parquet decoder panicked: {what})")
        }
    };
    Err(TableError::Parquet {
        path: path.into(),
        message,
    })
}

/// Walks the footer's thrift before the parquet crate parses it (see [`thrift`]), and refuses a
/// schema element claiming more children than the schema has elements (the parquet crate
/// allocates that many first: 11 GB for one 610-byte file found by fuzzing). A file too short
/// or without the `PAR1` magic is left to the parquet crate to refuse.
fn check_footer(bytes: &[u8]) -> std::result::Result<(), String> {
    let Some(tail) = bytes.len().checked_sub(8).map(|at| &bytes[at..]) else {
        return Ok(());
    };
    if &tail[4..] != b"PAR1" {
        return Ok(());
    }
    let footer_len = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
    let Some(start) = (bytes.len() - 8).checked_sub(footer_len) else {
        return Ok(());
    };
    match thrift::walk_footer(&bytes[start..bytes.len() - 8]) {
        (
            _,
            Some(thrift::Schema {
                elements,
                bad_children: Some(children),
            }),
        ) => Err(format!(
            "a schema element claims {children} children in a schema of {elements} elements"
        )),
        (Err(thrift::Stop::TooManyValues { values, bytes }), _) => Err(format!(
            "the footer claims {values}+ thrift values in its first {bytes} bytes"
        )),
        _ => Ok(()),
    }
}

/// Walks every page header of every column chunk (see [`thrift`]) before the parquet crate
/// reads them: from the chunk's first byte, header after header, each followed by its
/// `compressed_page_size` bytes of page, to the chunk's end. The ranges were checked by
/// [`check_column_chunks`]. A header the walk cannot read is left to the parquet crate to refuse
/// (the walk reads to the end of the file, as the parquet crate does).
fn check_page_headers(metadata: &ParquetMetaData, bytes: &[u8]) -> std::result::Result<(), String> {
    for (g, row_group) in metadata.row_groups().iter().enumerate() {
        for (c, chunk) in row_group.columns().iter().enumerate() {
            let start = chunk
                .dictionary_page_offset()
                .unwrap_or_else(|| chunk.data_page_offset());
            let (Ok(mut at), Ok(len)) = (
                usize::try_from(start),
                usize::try_from(chunk.compressed_size()),
            ) else {
                continue;
            };
            let end = at.saturating_add(len).min(bytes.len());
            while at < end {
                let walked = match thrift::walk_struct(&bytes[at..]) {
                    Ok(walked) => walked,
                    Err(thrift::Stop::TooManyValues { values, bytes }) => {
                        return Err(format!(
                            "row group {g}, column {c}: the page header at byte {at} claims {values}+ thrift values in its first {bytes} bytes"
                        ));
                    }
                    Err(thrift::Stop::Malformed) => break,
                };
                let Some(page_len) = walked.field_3.and_then(|n| usize::try_from(n).ok()) else {
                    break;
                };
                at = at.saturating_add(walked.len).saturating_add(page_len);
            }
        }
    }
    Ok(())
}

/// Refuses row groups with a negative row count and column chunks whose byte range is negative
/// or runs past the end of the file, before any page is read: the parquet crate asserts (panics)
/// on negative ranges (found by fuzzing) and would try to read ranges the file does not hold.
fn check_column_chunks(
    metadata: &ParquetMetaData,
    file_len: u64,
) -> std::result::Result<(), String> {
    for (g, row_group) in metadata.row_groups().iter().enumerate() {
        if row_group.num_rows() < 0 {
            return Err(format!(
                "row group {g} claims {} rows",
                row_group.num_rows()
            ));
        }
        for (c, chunk) in row_group.columns().iter().enumerate() {
            let start = chunk
                .dictionary_page_offset()
                .unwrap_or_else(|| chunk.data_page_offset());
            let len = chunk.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(len).ok())
                .and_then(|(start, len)| start.checked_add(len));
            if end.is_none_or(|end| end > file_len) {
                return Err(format!(
                    "row group {g}, column {c}: bytes {start}..{start}+{len} are not inside the file ({file_len} bytes)"
                ));
            }
        }
    }
    Ok(())
}

fn bounded_cell(
    text: String,
    (path, row, column): (&Path, usize, usize),
    options: &ReadOptions,
    report: &mut ReadReport,
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
    report.truncated_cells += 1;
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

    /// A GitTables-like parquet file of `n` rows (`index`: 0.., `name`: `row{index}`), written
    /// in record batches of 500 rows, in the system's temporary folder.
    fn long_parquet(n: usize, name: &str) -> std::path::PathBuf {
        use std::sync::Arc;

        use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
        use parquet::arrow::ArrowWriter;
        use parquet::file::metadata::KeyValue;
        use parquet::file::properties::WriterProperties;

        let path = std::env::temp_dir().join(format!("{name}-{}.parquet", std::process::id()));
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(700))
            .set_key_value_metadata(Some(vec![KeyValue::new(
                "gittables".into(),
                r#"{"table_id":"long"}"#.to_string(),
            )]))
            .build();
        let mut writer = None;
        for start in (0..n).step_by(500) {
            let rows = start as i64..(start + 500).min(n) as i64;
            let names: Vec<String> = rows.clone().map(|i| format!("row{i}")).collect();
            let batch = RecordBatch::try_from_iter([
                (
                    "index",
                    Arc::new(Int64Array::from_iter_values(rows)) as ArrayRef,
                ),
                ("name", Arc::new(StringArray::from(names)) as ArrayRef),
            ])
            .unwrap();
            writer
                .get_or_insert_with(|| {
                    let file = std::fs::File::create(&path).unwrap();
                    ArrowWriter::try_new(file, batch.schema(), Some(properties.clone())).unwrap()
                })
                .write(&batch)
                .unwrap();
        }
        writer.unwrap().close().unwrap();
        path
    }

    fn indices(table: &Table) -> Vec<usize> {
        let rows = table.columns[0].cells.iter().zip(&table.columns[1].cells);
        rows.map(|(index, name)| {
            // Each kept row is whole: its cells come from the same row of the file.
            assert_eq!(name.text(), format!("row{}", index.text()));
            index.text().parse().unwrap()
        })
        .collect()
    }

    #[test]
    fn a_long_parquet_table_is_sampled_in_order_the_same_way_on_every_read() {
        let path = long_parquet(3_000, "colswarm-long");
        let read = |sample| {
            read_gittables_parquet_sampled(&path, None, &ReadOptions::default(), sample)
                .unwrap()
                .0
        };
        assert_eq!(indices(&read(None)), (0..3_000).collect::<Vec<_>>());
        let sampled = indices(&read(Some(40)));
        assert_eq!(sampled.len(), 40);
        assert!(sampled.windows(2).all(|w| w[0] < w[1]), "{sampled:?}");
        // Uniform over the whole table, not its first batches.
        assert!(*sampled.last().unwrap() > 2_000, "{sampled:?}");
        assert_eq!(indices(&read(Some(40))), sampled);
        assert_eq!(indices(&read(Some(5_000))), (0..3_000).collect::<Vec<_>>());
        // Without a sample the row limit still holds.
        let limited = ReadOptions {
            max_rows: 1_000,
            ..ReadOptions::default()
        };
        let refused = read_gittables_parquet(&path, None, &limited).unwrap_err();
        assert!(
            matches!(refused, TableError::TooManyRows { .. }),
            "{refused}"
        );
        assert!(read_gittables_parquet_sampled(&path, None, &limited, Some(40)).is_ok());
        // The report counts the rows the sample left out.
        let report = |sample| {
            read_gittables_parquet_with_report(&path, None, &ReadOptions::default(), sample)
                .unwrap()
                .2
        };
        assert_eq!(report(Some(40)).sampled_out_rows, 2_960);
        assert_eq!(report(None), ReadReport::default());
        // And the cells a lossy read cut: every name past `row9`.
        let cut = ReadOptions {
            max_cell_bytes: 4,
            lossy: true,
            ..ReadOptions::default()
        };
        let (_, _, report) = read_gittables_parquet_with_report(&path, None, &cut, None).unwrap();
        assert_eq!(report.truncated_cells, 2_990);
        std::fs::remove_file(&path).unwrap();
    }
}
