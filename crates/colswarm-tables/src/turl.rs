//! TURL WikiTables, in two forms:
//! - the CSV form of the WikiTables-TURL subset (`train_wikitables_subset_20.csv.gz`, ...), whose
//!   fields hold Python literals: `table_name,table,labels,domain,domains,page_title,
//!   section_title,headers`;
//! - TURL's own JSON (`{train,dev,test}.table_col_type.json` and
//!   `*.table_rel_extraction.json`): one JSON array of positional records
//!   `[table_id, pgTitle, pgId, secTitle, caption, headers, cells, annotations]`.
//!
//! In both, `cells` is a list over columns of the entity-linked cells
//! `[[row, col], [entity_id, "text"]]`. Cells are placed at their row; rows a column has no
//! linked cell for are null. The subject column of the relation data is column 0.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::cell::Cell;
use crate::compressed::open_input;
use crate::error::{Result, TableError};
use crate::label_set::{LabelHierarchy, LabelSet};
use crate::options::ReadOptions;
use crate::python_literal::{PyValue, parse_python_literal};
use crate::records::{field, header_positions, open_records};
use crate::table::{Column, CpaTarget, Table};

/// Reads a WikiTables-TURL subset CSV file.
pub fn read_wikitables_csv(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Vec<Table>> {
    let path = path.as_ref();
    let mut records = open_records(path, b',', *options)?;
    let mut record = Vec::new();
    if records.next_record(&mut record)?.is_none() {
        return Err(TableError::EmptyTable { path: path.into() });
    }
    let names = [
        "table_name",
        "table",
        "labels",
        "page_title",
        "section_title",
        "headers",
    ];
    let positions = header_positions(path, &record, &names)?;
    let mut tables = Vec::new();
    while let Some(line) = records.next_record(&mut record)? {
        let literal = |position: usize, name: &str| -> Result<PyValue> {
            let text = field(path, line, &record, positions[position])?;
            parse_python_literal(text).map_err(|error| TableError::PythonLiteral {
                path: path.into(),
                line,
                field: name.into(),
                byte_offset: error.offset,
                message: error.message,
            })
        };
        let shape = |message: String| TableError::JsonShape {
            path: path.into(),
            line,
            message,
        };
        let cells = literal(1, "table")?;
        let labels = literal(2, "labels")?;
        let headers = literal(5, "headers")?;
        let columns = py_columns(&cells, options).map_err(&shape)?;
        let labels = py_string_lists(&labels)
            .ok_or_else(|| shape("`labels` must be a list of lists of strings".into()))?;
        let headers = py_strings(&headers)
            .ok_or_else(|| shape("`headers` must be a list of strings".into()))?;
        let mut table = build_table(
            field(path, line, &record, positions[0])?,
            columns,
            headers,
            options,
        )
        .map_err(&shape)?;
        attach_column_labels(&mut table, labels).map_err(&shape)?;
        table.context.page_title = Some(field(path, line, &record, positions[3])?.to_string());
        table.context.section_title = Some(field(path, line, &record, positions[4])?.to_string());
        tables.push(table);
    }
    Ok(tables)
}

/// The WikiTables-TURL label set from a directory holding `wikitables-2_all_labels.txt`,
/// `labels_to_text_wikitables-2-cta.json` and (optionally) `wikitables-hierarchy-v2.json`.
/// Labels are sorted; texts and the hierarchy are attached.
pub fn wikitables_label_set(dir: impl AsRef<Path>) -> Result<LabelSet> {
    let dir = dir.as_ref();
    let listed = LabelSet::from_lines_file(dir.join("wikitables-2_all_labels.txt"))?;
    let mut labels = LabelSet::sorted(listed.labels().iter().cloned())
        .with_texts_from_file(dir.join("labels_to_text_wikitables-2-cta.json"))?;
    let hierarchy_path = dir.join("wikitables-hierarchy-v2.json");
    if hierarchy_path.exists() {
        labels = labels.with_hierarchy(LabelHierarchy::from_json_file(hierarchy_path)?);
    }
    Ok(labels)
}

/// Which TURL JSON file is read: what the last field of each record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurlTask {
    /// `table_col_type.json`: per column, a list of types.
    ColumnTypes,
    /// `table_rel_extraction.json`: per object column (1..n), a list of relations with the
    /// subject column 0.
    Relations,
}

/// Reads a TURL JSON file (one JSON array of positional records).
pub fn read_turl_json(
    path: impl AsRef<Path>,
    task: TurlTask,
    options: &ReadOptions,
) -> Result<Vec<Table>> {
    let path = path.as_ref();
    let mut text = Vec::new();
    open_input(path)?
        .read_to_end(&mut text)
        .map_err(|e| TableError::read(path, e))?;
    let document: Value = serde_json::from_slice(&text).map_err(|source| TableError::Json {
        path: path.into(),
        line: source.line() as u64,
        source,
    })?;
    let Value::Array(records) = document else {
        return Err(TableError::JsonShape {
            path: path.into(),
            line: 1,
            message: "expected one JSON array of table records".into(),
        });
    };
    let mut tables = Vec::with_capacity(records.len());
    for (index, record) in records.iter().enumerate() {
        let shape = |message: String| TableError::JsonShape {
            path: path.into(),
            line: 1,
            message: format!("record {index}: {message}"),
        };
        tables.push(turl_record(record, task, options).map_err(shape)?);
    }
    Ok(tables)
}

fn turl_record(record: &Value, task: TurlTask, options: &ReadOptions) -> Result<Table, String> {
    let fields = record
        .as_array()
        .filter(|f| f.len() >= 8)
        .ok_or("expected an array of 8 fields")?;
    let id = match &fields[0] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let headers = json_strings(&fields[5]).ok_or("`headers` must be a list of strings")?;
    let columns = json_columns(&fields[6], options)?;
    let annotations =
        json_string_lists(&fields[7]).ok_or("annotations must be a list of lists of strings")?;
    let mut table = build_table(&id, columns, headers, options)?;
    match task {
        TurlTask::ColumnTypes => attach_column_labels(&mut table, annotations)?,
        TurlTask::Relations => {
            if annotations.len() + 1 != table.n_columns() {
                return Err(format!(
                    "{} relation lists for {} columns (expected one per column after the subject)",
                    annotations.len(),
                    table.n_columns()
                ));
            }
            table.subject_column = Some(0);
            table.cpa_targets = annotations
                .into_iter()
                .enumerate()
                .map(|(i, labels)| CpaTarget {
                    subject_column: 0,
                    object_column: i + 1,
                    labels,
                })
                .collect();
        }
    }
    table.context.page_title = fields[1].as_str().map(str::to_string);
    table.context.section_title = fields[3].as_str().map(str::to_string);
    table.context.caption = fields[4]
        .as_str()
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    Ok(table)
}

/// One column's linked cells as (row, text).
type PlacedCells = Vec<(usize, String)>;

fn build_table(
    id: &str,
    columns: Vec<PlacedCells>,
    headers: Vec<String>,
    options: &ReadOptions,
) -> Result<Table, String> {
    if headers.len() != columns.len() {
        return Err(format!(
            "{} headers for {} columns",
            headers.len(),
            columns.len()
        ));
    }
    if columns.len() > options.max_columns {
        return Err(format!(
            "{} columns exceed the limit of {}",
            columns.len(),
            options.max_columns
        ));
    }
    let n_rows = columns
        .iter()
        .flat_map(|c| c.iter().map(|(row, _)| row + 1))
        .max()
        .unwrap_or(0);
    let columns = columns
        .into_iter()
        .zip(headers)
        .map(|(cells, header)| {
            let mut placed = vec![Cell::null(); n_rows];
            for (row, text) in cells {
                placed[row] = Cell::new(text);
            }
            Column::new(Some(header), placed)
        })
        .collect();
    let mut table = Table::new(id, columns);
    table.context.has_header_row = true;
    Ok(table)
}

fn attach_column_labels(table: &mut Table, labels: Vec<Vec<String>>) -> Result<(), String> {
    if labels.len() != table.n_columns() {
        return Err(format!(
            "{} label lists for {} columns",
            labels.len(),
            table.n_columns()
        ));
    }
    for (column, labels) in table.columns.iter_mut().zip(labels) {
        column.labels = labels;
    }
    Ok(())
}

fn check_row(row: i64, text_len: usize, options: &ReadOptions) -> Result<usize, String> {
    let row = usize::try_from(row).map_err(|_| format!("negative row index {row}"))?;
    if row >= options.max_rows {
        return Err(format!(
            "row index {row} exceeds the limit of {} rows",
            options.max_rows
        ));
    }
    if text_len > options.max_cell_bytes {
        return Err(format!(
            "a cell exceeds the limit of {} bytes",
            options.max_cell_bytes
        ));
    }
    Ok(row)
}

fn py_columns(value: &PyValue, options: &ReadOptions) -> Result<Vec<PlacedCells>, String> {
    const SHAPE: &str = "`table` must be a list of columns of [[row, col], [entity, text]] cells";
    let columns = value.as_list().ok_or(SHAPE)?;
    columns
        .iter()
        .map(|column| {
            column
                .as_list()
                .ok_or(SHAPE)?
                .iter()
                .map(|cell| {
                    let parts = cell.as_list().filter(|p| p.len() == 2).ok_or(SHAPE)?;
                    let row = parts[0]
                        .as_list()
                        .and_then(|p| p.first())
                        .and_then(PyValue::as_int)
                        .ok_or(SHAPE)?;
                    let text = parts[1]
                        .as_list()
                        .and_then(|p| p.get(1))
                        .and_then(PyValue::as_str)
                        .ok_or(SHAPE)?;
                    Ok((check_row(row, text.len(), options)?, text.to_string()))
                })
                .collect()
        })
        .collect()
}

fn py_strings(value: &PyValue) -> Option<Vec<String>> {
    value
        .as_list()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn py_string_lists(value: &PyValue) -> Option<Vec<Vec<String>>> {
    value.as_list()?.iter().map(py_strings).collect()
}

fn json_columns(value: &Value, options: &ReadOptions) -> Result<Vec<PlacedCells>, String> {
    const SHAPE: &str = "`cells` must be a list of columns of [[row, col], [entity, text]] cells";
    let columns = value.as_array().ok_or(SHAPE)?;
    columns
        .iter()
        .map(|column| {
            column
                .as_array()
                .ok_or(SHAPE)?
                .iter()
                .map(|cell| {
                    let parts = cell.as_array().filter(|p| p.len() == 2).ok_or(SHAPE)?;
                    let row = parts[0]
                        .as_array()
                        .and_then(|p| p.first())
                        .and_then(Value::as_i64)
                        .ok_or(SHAPE)?;
                    let text = parts[1]
                        .as_array()
                        .and_then(|p| p.get(1))
                        .and_then(Value::as_str)
                        .ok_or(SHAPE)?;
                    Ok((check_row(row, text.len(), options)?, text.to_string()))
                })
                .collect()
        })
        .collect()
}

fn json_strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn json_string_lists(value: &Value) -> Option<Vec<Vec<String>>> {
    value.as_array()?.iter().map(json_strings).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_cells_leave_gaps_null() {
        let cells = parse_python_literal("[[[[0, 0], [1, 'a']], [[2, 0], [2, 'c']]]]").unwrap();
        let columns = py_columns(&cells, &ReadOptions::default()).unwrap();
        let table = build_table("t", columns, vec!["h".into()], &ReadOptions::default()).unwrap();
        assert_eq!(table.n_rows(), 3);
        assert!(table.cell(1, 0).is_some_and(Cell::is_null));
        assert_eq!(table.cell(2, 0).map(Cell::text), Some("c"));
    }

    #[test]
    fn hostile_row_index_is_refused() {
        let cells = parse_python_literal("[[[[99999999999, 0], [1, 'a']]]]").unwrap();
        assert!(py_columns(&cells, &ReadOptions::default()).is_err());
        let cells = parse_python_literal("[[[[-1, 0], [1, 'a']]]]").unwrap();
        assert!(py_columns(&cells, &ReadOptions::default()).is_err());
    }
}
