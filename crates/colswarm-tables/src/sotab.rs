//! SOTAB (V1 and V2): one gzipped JSON-lines file per table (`<Type>_<host>_September2020_
//! <CTA|CPA>.json.gz`; each line one row, keys `"0"`, `"1"`, ... the column indices, values of
//! any JSON type) and ground-truth CSVs with a header:
//! - CTA: `table_name,column_index,label[,domain,column_type]` (V2 adds the last two);
//! - CPA: `table_name,main_column_index,column_index,label`.
//!
//! There is no header row; none is made up.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cell::{Cell, CellKind};
use crate::compressed::open_input;
use crate::error::{Result, TableError};
use crate::label_set::LabelSet;
use crate::options::{ReadOptions, ReadReport};
use crate::records::{field, header_positions, open_records, parse_index, trim_partial_char};
use crate::row_sample::RowSample;
use crate::table::{Column, CpaTarget, Table};

/// Reads one SOTAB table file; the table id is the file name (as the ground truth names it).
pub fn read_sotab_table(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Table> {
    read_sotab_table_sampled(path, options, None)
}

/// [`read_sotab_table`], keeping at most `sample_rows` rows: a uniform sample, the same on
/// every run (seeded by the table id), in table order, so a table of any length is read in
/// bounded memory. `None` keeps every row.
pub fn read_sotab_table_sampled(
    path: impl AsRef<Path>,
    options: &ReadOptions,
    sample_rows: Option<usize>,
) -> Result<Table> {
    Ok(read_sotab_table_sampled_with_report(path.as_ref(), options, sample_rows)?.0)
}

/// [`read_sotab_table_sampled`], with what reading changed: cells cut (lossy) and rows left
/// out of the sample.
pub(crate) fn read_sotab_table_sampled_with_report(
    path: &Path,
    options: &ReadOptions,
    sample_rows: Option<usize>,
) -> Result<(Table, ReadReport)> {
    // Gzipped when the name ends in `.gz`, as SOTAB ships them; a plain `.json` reads as it is.
    let input = open_input(path)?;
    let id = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    read_rows(input, path, &id, options, sample_rows)
}

/// Reads a SOTAB table from a decompressed-on-the-fly reader (`input` is the gzip stream);
/// `path` names the source in errors.
pub fn read_sotab_table_from_reader(
    input: impl Read,
    path: &Path,
    id: &str,
    options: &ReadOptions,
) -> Result<Table> {
    Ok(read_rows(BufReader::new(input), path, id, options, None)?.0)
}

/// The rows of a SOTAB table, all or a sample of `sample_rows`, as columns, with what reading
/// changed.
fn read_rows(
    mut input: impl BufRead,
    path: &Path,
    id: &str,
    options: &ReadOptions,
    sample_rows: Option<usize>,
) -> Result<(Table, ReadReport)> {
    let mut line_bytes = Vec::new();
    let mut rows: RowSample<BTreeMap<usize, Cell>> = RowSample::new(sample_rows, id);
    let mut width = 0usize;
    let mut line = 0u64;
    let mut report = ReadReport::default();
    loop {
        line += 1;
        if !read_bounded_line(
            &mut input,
            &mut line_bytes,
            path,
            line,
            options.max_record_bytes,
        )? {
            break;
        }
        let text = trim_ascii(&line_bytes);
        if text.is_empty() {
            continue;
        }
        let row = json_row(text, (path, line), options, &mut report)?;
        width = width.max(row.keys().next_back().map_or(0, |&c| c + 1));
        if rows.seen() >= options.max_rows {
            return Err(TableError::TooManyRows {
                path: path.into(),
                line,
                found: rows.seen() + 1,
                limit: options.max_rows,
            });
        }
        rows.push(row);
    }
    if rows.is_empty() || width == 0 {
        return Err(TableError::EmptyTable { path: path.into() });
    }
    report.sampled_out_rows += rows.seen() - rows.len();
    let mut columns: Vec<Column> = (0..width)
        .map(|_| Column::new(None, Vec::with_capacity(rows.len())))
        .collect();
    for mut row in rows.into_rows() {
        for (index, column) in columns.iter_mut().enumerate() {
            column
                .cells
                .push(row.remove(&index).unwrap_or_else(Cell::null));
        }
    }
    Ok((Table::new(id, columns), report))
}

/// One JSON line of a SOTAB table: its cells by column index.
fn json_row(
    text: &[u8],
    (path, line): (&Path, u64),
    options: &ReadOptions,
    report: &mut ReadReport,
) -> Result<BTreeMap<usize, Cell>> {
    let value: Value = serde_json::from_slice(text).map_err(|source| TableError::Json {
        path: path.into(),
        line,
        source,
    })?;
    let Value::Object(object) = value else {
        return Err(TableError::JsonShape {
            path: path.into(),
            line,
            message: format!("expected an object per row, found {}", json_kind(&value)),
        });
    };
    let mut row = BTreeMap::new();
    for (key, value) in object {
        let column: usize = key.parse().map_err(|_| TableError::JsonShape {
            path: path.into(),
            line,
            message: format!("column key `{key}` is not a non-negative integer"),
        })?;
        if column >= options.max_columns {
            return Err(TableError::TooManyColumns {
                path: path.into(),
                line,
                found: column + 1,
                limit: options.max_columns,
            });
        }
        row.insert(
            column,
            json_cell(value, path, line, column, options, report)?,
        );
    }
    Ok(row)
}

/// Reads one line into `buffer` (without the newline), failing once it passes `limit`.
/// Returns false at the end of the input. Gzip errors surface here ([`TableError::read`]).
fn read_bounded_line(
    input: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    path: &Path,
    line: u64,
    limit: usize,
) -> Result<bool> {
    buffer.clear();
    loop {
        let available = input
            .fill_buf()
            .map_err(|source| TableError::read(path, source))?;
        if available.is_empty() {
            return Ok(!buffer.is_empty());
        }
        let (chunk, found_newline) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        if buffer.len() + chunk.len() > limit {
            return Err(TableError::RecordTooLarge {
                path: path.into(),
                line,
                limit,
            });
        }
        buffer.extend_from_slice(chunk);
        let used = chunk.len() + usize::from(found_newline);
        input.consume(used);
        if found_newline {
            return Ok(true);
        }
    }
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON value as a cell: strings as they are, numbers as written, nested values as compact
/// JSON, null as a null cell. Oversized cells error (strict) or are truncated (lossy).
fn json_cell(
    value: Value,
    path: &Path,
    line: u64,
    column: usize,
    options: &ReadOptions,
    report: &mut ReadReport,
) -> Result<Cell> {
    let (text, kind) = match value {
        Value::Null => return Ok(Cell::null()),
        Value::String(text) => (text, None),
        Value::Bool(b) => (b.to_string(), Some(CellKind::Boolean)),
        Value::Number(n) => (n.to_string(), None),
        nested @ (Value::Array(_) | Value::Object(_)) => {
            (nested.to_string(), Some(CellKind::Nested))
        }
    };
    if text.len() <= options.max_cell_bytes {
        return Ok(match kind {
            Some(kind) => Cell::with_kind(text, kind),
            None => Cell::new(text),
        });
    }
    if !options.lossy {
        return Err(TableError::CellTooLarge {
            path: path.into(),
            line,
            column,
            limit: options.max_cell_bytes,
        });
    }
    report.truncated_cells += 1;
    let mut bytes = text.into_bytes();
    bytes.truncate(options.max_cell_bytes);
    trim_partial_char(&mut bytes);
    // A prefix cut at a char boundary is valid UTF-8; lossy decoding cannot replace anything.
    Ok(Cell::new(String::from_utf8_lossy(&bytes).into_owned()))
}

/// One row of a CTA ground-truth file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SotabCtaRecord {
    /// The table file name (`*.json.gz`).
    pub table_name: String,
    /// The labelled column.
    pub column: usize,
    /// The label.
    pub label: String,
    /// The table's Schema.org type (V2).
    pub domain: Option<String>,
    /// `textual`, `numerical` or `date` (V2).
    pub column_type: Option<String>,
    /// Line in the ground-truth file (1-based).
    pub line: u64,
}

/// One row of a CPA ground-truth file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SotabCpaRecord {
    /// The table file name (`*.json.gz`).
    pub table_name: String,
    /// The main (subject) column.
    pub subject_column: usize,
    /// The object column.
    pub object_column: usize,
    /// The property.
    pub label: String,
    /// Line in the ground-truth file (1-based).
    pub line: u64,
}

/// Reads a CTA ground-truth CSV (V1 or V2 layout).
pub fn read_sotab_cta_gt(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<Vec<SotabCtaRecord>> {
    let path = path.as_ref();
    let mut records = open_records(path, b',', *options)?;
    let mut record = Vec::new();
    if records.next_record(&mut record)?.is_none() {
        return Err(TableError::EmptyTable { path: path.into() });
    }
    let positions = header_positions(path, &record, &["table_name", "column_index", "label"])?;
    let domain_at = record.iter().position(|h| h.trim() == "domain");
    let type_at = record.iter().position(|h| h.trim() == "column_type");
    let mut out = Vec::new();
    while let Some(line) = records.next_record(&mut record)? {
        let optional = |at: Option<usize>| -> Result<Option<String>> {
            at.map(|at| field(path, line, &record, at).map(str::to_string))
                .transpose()
        };
        out.push(SotabCtaRecord {
            table_name: field(path, line, &record, positions[0])?.to_string(),
            column: parse_index(
                path,
                line,
                "column_index",
                field(path, line, &record, positions[1])?,
            )?,
            label: field(path, line, &record, positions[2])?.to_string(),
            domain: optional(domain_at)?,
            column_type: optional(type_at)?,
            line,
        });
    }
    Ok(out)
}

/// Reads a CPA ground-truth CSV.
pub fn read_sotab_cpa_gt(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<Vec<SotabCpaRecord>> {
    let path = path.as_ref();
    let mut records = open_records(path, b',', *options)?;
    let mut record = Vec::new();
    if records.next_record(&mut record)?.is_none() {
        return Err(TableError::EmptyTable { path: path.into() });
    }
    let positions = header_positions(
        path,
        &record,
        &["table_name", "main_column_index", "column_index", "label"],
    )?;
    let mut out = Vec::new();
    while let Some(line) = records.next_record(&mut record)? {
        out.push(SotabCpaRecord {
            table_name: field(path, line, &record, positions[0])?.to_string(),
            subject_column: parse_index(
                path,
                line,
                "main_column_index",
                field(path, line, &record, positions[1])?,
            )?,
            object_column: parse_index(
                path,
                line,
                "column_index",
                field(path, line, &record, positions[2])?,
            )?,
            label: field(path, line, &record, positions[3])?.to_string(),
            line,
        });
    }
    Ok(out)
}

/// The tables of one split with their ground truth attached.
#[derive(Debug, Clone, Default)]
pub struct SotabSplit {
    /// Every `*.json.gz` table in the directory (sorted by name), labelled where the ground
    /// truth names it.
    pub tables: Vec<Table>,
    /// Tables the ground truth names but the directory lacks (sorted).
    pub missing_tables: Vec<String>,
}

/// Loads the `*.json.gz` tables in `tables_dir` and attaches CTA labels (and the V2 domain as
/// the table class) and CPA targets from the given ground-truth files.
pub fn load_sotab_split(
    tables_dir: impl AsRef<Path>,
    cta_gt: Option<&Path>,
    cpa_gt: Option<&Path>,
    options: &ReadOptions,
) -> Result<SotabSplit> {
    let tables_dir = tables_dir.as_ref();
    let mut paths: Vec<PathBuf> = fs::read_dir(tables_dir)
        .map_err(|e| TableError::io(tables_dir, e))?
        .map(|entry| {
            entry
                .map(|e| e.path())
                .map_err(|e| TableError::io(tables_dir, e))
        })
        .collect::<Result<_>>()?;
    paths.retain(|p| p.to_string_lossy().ends_with(".json.gz"));
    paths.sort();
    let mut tables = paths
        .iter()
        .map(|p| read_sotab_table(p, options))
        .collect::<Result<Vec<_>>>()?;
    let index: BTreeMap<String, usize> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect();
    let mut missing = BTreeSet::new();
    let out_of_range =
        |path: &Path, line: u64, table: &Table, column: usize| TableError::ColumnOutOfRange {
            path: path.into(),
            line,
            table: table.id.clone(),
            column,
            n_columns: table.n_columns(),
        };
    if let Some(gt) = cta_gt {
        for record in read_sotab_cta_gt(gt, options)? {
            let Some(&at) = index.get(&record.table_name) else {
                missing.insert(record.table_name);
                continue;
            };
            let table = &mut tables[at];
            if record.column >= table.n_columns() {
                return Err(out_of_range(gt, record.line, table, record.column));
            }
            table.columns[record.column].labels.push(record.label);
            if record.domain.is_some() {
                table.table_class = record.domain;
            }
        }
    }
    if let Some(gt) = cpa_gt {
        for record in read_sotab_cpa_gt(gt, options)? {
            let Some(&at) = index.get(&record.table_name) else {
                missing.insert(record.table_name);
                continue;
            };
            let table = &mut tables[at];
            for column in [record.subject_column, record.object_column] {
                if column >= table.n_columns() {
                    return Err(out_of_range(gt, record.line, table, column));
                }
            }
            table.subject_column = Some(record.subject_column);
            table.cpa_targets.push(CpaTarget {
                subject_column: record.subject_column,
                object_column: record.object_column,
                labels: vec![record.label],
            });
        }
    }
    Ok(SotabSplit {
        tables,
        missing_tables: missing.into_iter().collect(),
    })
}

/// A SOTAB label set from a `labels_to_text_*.txt` JSON map (label → text), sorted, with
/// texts attached.
pub fn sotab_label_set(text_map: impl AsRef<Path>) -> Result<LabelSet> {
    LabelSet::from_text_map_file(text_map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json_lines: &str) -> Result<Table> {
        read_sotab_table_from_reader(
            json_lines.as_bytes(),
            Path::new("t.json.gz"),
            "t",
            &ReadOptions::default(),
        )
    }

    #[test]
    fn rows_become_columns_in_key_order() {
        let table = read("{\"1\":\"b\",\"0\":1.5}\n{\"0\":null,\"2\":[1,2],\"1\":true}\n").unwrap();
        assert_eq!(table.n_columns(), 3);
        assert_eq!(table.n_rows(), 2);
        assert_eq!(table.cell(0, 0).map(Cell::text), Some("1.5"));
        assert!(table.cell(1, 0).is_some_and(Cell::is_null));
        assert!(table.cell(0, 2).is_some_and(Cell::is_null));
        assert_eq!(table.cell(1, 2).map(Cell::kind), Some(CellKind::Nested));
        assert_eq!(table.cell(1, 1).map(Cell::kind), Some(CellKind::Boolean));
        assert!(!table.context.has_header_row);
        assert!(table.columns.iter().all(|c| c.header.is_none()));
    }

    #[test]
    fn wrong_shapes_are_errors() {
        assert!(matches!(
            read("[1,2]\n"),
            Err(TableError::JsonShape { line: 1, .. })
        ));
        assert!(matches!(
            read("{\"0\":1}\n{\"x\":1}\n"),
            Err(TableError::JsonShape { line: 2, .. })
        ));
        assert!(matches!(
            read("{\"0\":1}\n{oops\n"),
            Err(TableError::Json { line: 2, .. })
        ));
        assert!(matches!(read("\n"), Err(TableError::EmptyTable { .. })));
        assert!(matches!(
            read("{\"99999999\":1}\n"),
            Err(TableError::TooManyColumns { .. })
        ));
    }
}
