//! SemTab-style benchmarks: `tables/<table_id>.csv` (first row = header, which may be
//! meaningless such as `col0`), target files and ground-truth files without headers:
//! - CTA targets `table_id,col_id`; CTA ground truth `table_id,col_id,<label>[,<label>...]`;
//! - CPA targets `table_id,head_col_id,tail_col_id`; CPA ground truth
//!   `table_id,head_col_id,tail_col_id,<label>[,<label>...]`.
//!
//! Several accepted labels are allowed: each label field may itself hold several labels
//! separated by whitespace or commas (BiodivTab's quoted lists), and extra fields add more.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use crate::compressed::extension_uncompressed;
use crate::delimited::{CsvOptions, Delimiter, RaggedRows, read_csv_with_report};
use crate::error::{Result, TableError};
use crate::label_set::LabelSet;
use crate::options::{ReadOptions, ReadReport};
use crate::records::{field, open_records, parse_index};
use crate::table::{CpaTarget, Table};

/// Where the parts of a SemTab round live.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SemTabLayout {
    /// Folder of `<table_id>.csv` files.
    pub tables_dir: PathBuf,
    /// CTA targets file, if any.
    pub cta_targets: Option<PathBuf>,
    /// CTA ground truth, if any.
    pub cta_gt: Option<PathBuf>,
    /// CPA targets file, if any.
    pub cpa_targets: Option<PathBuf>,
    /// CPA ground truth, if any.
    pub cpa_gt: Option<PathBuf>,
}

/// A loaded SemTab round.
#[derive(Debug, Clone, Default)]
pub struct SemTabDataset {
    /// All tables in `tables_dir`, sorted by id, with ground-truth labels attached.
    pub tables: Vec<Table>,
    /// CTA targets `(table_id, column)` in file order.
    pub cta_targets: Vec<(String, usize)>,
    /// CPA targets `(table_id, head, tail)` in file order.
    pub cpa_targets: Vec<(String, usize, usize)>,
    /// Every CTA label in the ground truth (sorted).
    pub cta_labels: LabelSet,
    /// Every CPA label in the ground truth (sorted).
    pub cpa_labels: LabelSet,
    /// Ragged-row padding over all tables.
    pub report: ReadReport,
}

/// Loads a SemTab round.
pub fn load_semtab(layout: &SemTabLayout, options: &ReadOptions) -> Result<SemTabDataset> {
    let dir = &layout.tables_dir;
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| TableError::io(dir, e))?
        .map(|entry| entry.map(|e| e.path()).map_err(|e| TableError::io(dir, e)))
        .collect::<Result<_>>()?;
    paths.retain(|p| extension_uncompressed(p).is_some_and(|e| e == "csv"));
    paths.sort();
    let csv_options = CsvOptions {
        delimiter: Delimiter::Byte(b','),
        has_header: true,
        ragged_rows: RaggedRows::Pad,
        read: *options,
        sample_rows: None,
    };
    let mut dataset = SemTabDataset::default();
    for path in &paths {
        let (table, report) = read_csv_with_report(path, &csv_options)?;
        dataset.report.merge(report);
        dataset.tables.push(table);
    }
    let index: HashMap<String, usize> = dataset
        .tables
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect();

    if let Some(path) = &layout.cta_targets {
        for_each_row(path, options, 2, |line, record| {
            let column = parse_index(path, line, "col_id", field(path, line, record, 1)?)?;
            dataset.cta_targets.push((record[0].clone(), column));
            Ok(())
        })?;
    }
    if let Some(path) = &layout.cpa_targets {
        for_each_row(path, options, 3, |line, record| {
            let head = parse_index(path, line, "head_col_id", field(path, line, record, 1)?)?;
            let tail = parse_index(path, line, "tail_col_id", field(path, line, record, 2)?)?;
            dataset.cpa_targets.push((record[0].clone(), head, tail));
            Ok(())
        })?;
    }
    let mut cta_labels = Vec::new();
    if let Some(path) = &layout.cta_gt {
        for_each_row(path, options, 3, |line, record| {
            let (table, column) = locate(path, line, record, &index, &mut dataset.tables, 1)?;
            let labels = split_labels(&record[2..]);
            cta_labels.extend(labels.iter().cloned());
            table.columns[column].labels.extend(labels);
            Ok(())
        })?;
    }
    let mut cpa_labels = Vec::new();
    if let Some(path) = &layout.cpa_gt {
        for_each_row(path, options, 4, |line, record| {
            let (table, head) = locate(path, line, record, &index, &mut dataset.tables, 1)?;
            let tail = parse_index(path, line, "tail_col_id", &record[2])?;
            if tail >= table.n_columns() {
                return Err(out_of_range(path, line, table, tail));
            }
            let labels = split_labels(&record[3..]);
            cpa_labels.extend(labels.iter().cloned());
            table.subject_column = Some(head);
            table.cpa_targets.push(CpaTarget {
                subject_column: head,
                object_column: tail,
                labels,
            });
            Ok(())
        })?;
    }
    dataset.cta_labels = LabelSet::sorted(cta_labels);
    dataset.cpa_labels = LabelSet::sorted(cpa_labels);
    Ok(dataset)
}

/// Calls `f` for every record of a header-less file, checking it has `min_fields` fields.
fn for_each_row(
    path: &Path,
    options: &ReadOptions,
    min_fields: usize,
    mut f: impl FnMut(u64, &[String]) -> Result<()>,
) -> Result<()> {
    let mut records = open_records(path, b',', *options)?;
    let mut record = Vec::new();
    while let Some(line) = records.next_record(&mut record)? {
        if record.len() < min_fields {
            return Err(TableError::MissingField {
                path: path.into(),
                line,
                expected: min_fields,
                found: record.len(),
            });
        }
        f(line, &record)?;
    }
    Ok(())
}

/// The table named in field 0 and the column index in field `column_field`, checked.
fn locate<'t>(
    path: &Path,
    line: u64,
    record: &[String],
    index: &HashMap<String, usize>,
    tables: &'t mut [Table],
    column_field: usize,
) -> Result<(&'t mut Table, usize)> {
    let column = parse_index(path, line, "col_id", &record[column_field])?;
    let Some(&at) = index.get(record[0].as_str()) else {
        return Err(TableError::UnknownTable {
            path: path.into(),
            line,
            table: record[0].clone(),
        });
    };
    let table = &mut tables[at];
    if column >= table.n_columns() {
        return Err(out_of_range(path, line, table, column));
    }
    Ok((table, column))
}

fn out_of_range(path: &Path, line: u64, table: &Table, column: usize) -> TableError {
    TableError::ColumnOutOfRange {
        path: path.into(),
        line,
        table: table.id.clone(),
        column,
        n_columns: table.n_columns(),
    }
}

/// Label fields → labels, splitting each on whitespace and commas, dropping empties and
/// repeats (first occurrence kept).
fn split_labels(fields: &[String]) -> Vec<String> {
    let mut seen = BTreeMap::new();
    for label in fields
        .iter()
        .flat_map(|f| f.split(|c: char| c.is_whitespace() || c == ','))
        .filter(|l| !l.is_empty())
    {
        let order = seen.len();
        seen.entry(label.to_string()).or_insert(order);
    }
    let mut labels: Vec<(usize, String)> = seen.into_iter().map(|(l, o)| (o, l)).collect();
    labels.sort();
    labels.into_iter().map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_split_on_spaces_and_commas() {
        let fields = vec![
            "http://a/Q1, http://a/Q2".to_string(),
            "http://a/Q3 http://a/Q1".to_string(),
        ];
        assert_eq!(
            split_labels(&fields),
            ["http://a/Q1", "http://a/Q2", "http://a/Q3"]
        );
    }
}
