//! T2D (WDC T2D gold standard, schema level, TAIPAN layout):
//! - `tables/<id>.csv`: every field quoted, first row the header; some rows ragged (padded);
//! - `attributes/<id>.csv` (no header): `"<property URI>","<header>","<isKey>","<column>"`; the key
//!   column (isKey `True`, property `rdfs:label`) is the subject column;
//! - `classes_complete.csv` (no header): `"<id>.tar.gz","<class label>","<class URI>","<key>"`.
//!
//! Some T2D tables are "vertical": attribute names run down the first column and the
//! attribute file's indices count rows. The reader detects them (attribute headers match
//! first-column cells better than header cells) and transposes them, so annotations always
//! refer to columns ([`TableContext::transposed`](crate::TableContext) is then true).
//!
//! Every annotated column gets its property URI as its label; each annotated non-key column of
//! a table with a key column becomes a CPA target (subject → column, property).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::cell::Cell;
use crate::compressed::{DataFolder, file_stem_uncompressed};
use crate::delimited::{CsvOptions, Delimiter, RaggedRows, read_csv_from_reader};
use crate::error::Result;
use crate::label_set::LabelSet;
use crate::options::{ReadOptions, ReadReport};
use crate::records::{RecordReader, field, parse_index};
use crate::table::{Column, CpaTarget, Table};

/// The `rdfs:label` property T2D gives key columns.
pub const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

/// An annotation the reader could not place (its column index is outside the table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedAnnotation {
    /// The attribute file.
    pub path: PathBuf,
    /// Its line (1-based).
    pub line: u64,
    /// The column index given.
    pub column: usize,
}

/// The T2D tables with their annotations.
#[derive(Debug, Clone, Default)]
pub struct T2dDataset {
    /// Tables that have an attribute file, sorted by id.
    pub tables: Vec<Table>,
    /// Property URIs used as column labels and CPA labels (sorted).
    pub properties: LabelSet,
    /// Class URIs of the tables (sorted).
    pub classes: LabelSet,
    /// Annotations whose column index is outside the (possibly transposed) table.
    pub skipped: Vec<SkippedAnnotation>,
    /// Padding of ragged rows, over all tables.
    pub report: ReadReport,
}

struct Attribute {
    property: String,
    header: String,
    is_key: bool,
    column: usize,
    line: u64,
}

/// Loads T2D from its root folder (holding `tables/`, `attributes/`, `classes_complete.csv`),
/// or from a `.tar.gz` / `.tgz` archive of that folder; errors then name the file inside the
/// archive (`t2d.tar.gz/attributes/<id>.csv`).
pub fn load_t2d(root: impl AsRef<Path>, options: &ReadOptions) -> Result<T2dDataset> {
    let folder = DataFolder::open(root.as_ref())?;
    let classes = read_classes(&folder, "classes_complete.csv", options)?;
    let attribute_files = folder.list("attributes", "csv")?;

    let csv_options = CsvOptions {
        delimiter: Delimiter::Byte(b','),
        has_header: true,
        ragged_rows: RaggedRows::Pad,
        read: *options,
        sample_rows: None,
    };
    let mut dataset = T2dDataset::default();
    let mut property_names = Vec::new();
    let mut class_names = Vec::new();
    for file_name in attribute_files {
        let table_file = format!("tables/{file_name}");
        let attribute_file = format!("attributes/{file_name}");
        let attribute_path = folder.display_path(&attribute_file);
        let id = file_stem_uncompressed(Path::new(&file_name));
        let (mut table, report) = read_csv_from_reader(
            folder.open_file(&table_file)?,
            &folder.display_path(&table_file),
            &id,
            &csv_options,
        )?;
        dataset.report.merge(report);
        let attributes = read_attributes(
            RecordReader::new(
                folder.open_file(&attribute_file)?,
                &attribute_path,
                b',',
                *options,
            ),
            &attribute_path,
        )?;
        if is_vertical(&table, &attributes) {
            table = transpose(table);
        }
        annotate(
            &mut table,
            &attributes,
            &attribute_path,
            &mut dataset.skipped,
        );
        if let Some(class) = classes.get(&table.id) {
            table.table_class = Some(class.clone());
            class_names.push(class.clone());
        }
        property_names.extend(attributes.into_iter().map(|a| a.property));
        dataset.tables.push(table);
    }
    dataset.properties = LabelSet::sorted(property_names);
    dataset.classes = LabelSet::sorted(class_names);
    Ok(dataset)
}

/// Table id → class URI.
fn read_classes(
    folder: &DataFolder,
    inner: &str,
    options: &ReadOptions,
) -> Result<HashMap<String, String>> {
    let path = folder.display_path(inner);
    let path = path.as_path();
    let mut records = RecordReader::new(folder.open_file(inner)?, path, b',', *options);
    let mut record = Vec::new();
    let mut classes = HashMap::new();
    while let Some(line) = records.next_record(&mut record)? {
        let file = field(path, line, &record, 0)?;
        let id = file.strip_suffix(".tar.gz").unwrap_or(file);
        classes.insert(id.to_string(), field(path, line, &record, 2)?.to_string());
    }
    Ok(classes)
}

fn read_attributes<R: BufRead>(
    mut records: RecordReader<R>,
    path: &Path,
) -> Result<Vec<Attribute>> {
    let mut record = Vec::new();
    let mut attributes = Vec::new();
    while let Some(line) = records.next_record(&mut record)? {
        attributes.push(Attribute {
            property: field(path, line, &record, 0)?.to_string(),
            header: field(path, line, &record, 1)?.to_string(),
            is_key: field(path, line, &record, 2)?.eq_ignore_ascii_case("true"),
            column: parse_index(path, line, "column", field(path, line, &record, 3)?)?,
            line,
        });
    }
    Ok(attributes)
}

fn same_name(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// Vertical when attribute headers match first-column cells (file rows, header row included)
/// more often than header cells.
fn is_vertical(table: &Table, attributes: &[Attribute]) -> bool {
    let header_matches = attributes
        .iter()
        .filter(|a| {
            table
                .columns
                .get(a.column)
                .and_then(|c| c.header.as_deref())
                .is_some_and(|h| same_name(h, &a.header))
        })
        .count();
    let first_column = table.columns.first();
    let row_matches = attributes
        .iter()
        .filter(|a| {
            let name = if a.column == 0 {
                first_column.and_then(|c| c.header.as_deref())
            } else {
                first_column
                    .and_then(|c| c.cells.get(a.column - 1))
                    .map(Cell::text)
            };
            name.is_some_and(|n| same_name(n, &a.header))
        })
        .count();
    row_matches > header_matches
}

/// Turns file rows into columns: file row `i` (the header row is row 0) becomes column `i`,
/// whose header is its first cell.
fn transpose(table: Table) -> Table {
    let n_rows = table.n_rows();
    let mut file_rows: Vec<Vec<Cell>> = Vec::with_capacity(n_rows + 1);
    file_rows.push(
        table
            .columns
            .iter()
            .map(|c| Cell::new(c.header.clone().unwrap_or_default()))
            .collect(),
    );
    for row in 0..n_rows {
        file_rows.push(
            table
                .columns
                .iter()
                .map(|c| c.cells.get(row).cloned().unwrap_or_else(Cell::null))
                .collect(),
        );
    }
    let columns = file_rows
        .into_iter()
        .map(|mut cells| {
            let header = if cells.is_empty() {
                String::new()
            } else {
                cells.remove(0).text().to_string()
            };
            Column::new(Some(header), cells)
        })
        .collect();
    let mut transposed = Table::new(table.id, columns);
    transposed.context = table.context;
    transposed.context.transposed = true;
    transposed
}

fn annotate(
    table: &mut Table,
    attributes: &[Attribute],
    path: &Path,
    skipped: &mut Vec<SkippedAnnotation>,
) {
    let n_columns = table.n_columns();
    let mut placed = Vec::new();
    for attribute in attributes {
        if attribute.column >= n_columns {
            skipped.push(SkippedAnnotation {
                path: path.into(),
                line: attribute.line,
                column: attribute.column,
            });
            continue;
        }
        table.columns[attribute.column]
            .labels
            .push(attribute.property.clone());
        placed.push(attribute);
    }
    table.subject_column = placed.iter().filter(|a| a.is_key).map(|a| a.column).min();
    if let Some(subject) = table.subject_column {
        table.cpa_targets = placed
            .iter()
            .filter(|a| !a.is_key && a.property != RDFS_LABEL && a.column != subject)
            .map(|a| CpaTarget {
                subject_column: subject,
                object_column: a.column,
                labels: vec![a.property.clone()],
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribute(header: &str, column: usize) -> Attribute {
        Attribute {
            property: "p".into(),
            header: header.into(),
            is_key: false,
            column,
            line: 1,
        }
    }

    #[test]
    fn vertical_tables_are_detected_and_transposed() {
        let table = Table::from_rows(
            "v",
            Some(vec!["Title:".into(), "Shop".into()]),
            vec![
                vec!["URL:".into(), "http://x".into()],
                vec!["Owner:".into(), "Ann".into()],
            ],
        );
        let attributes = [attribute("title:", 0), attribute("Owner:", 2)];
        assert!(is_vertical(&table, &attributes));
        let transposed = transpose(table);
        assert_eq!(transposed.n_columns(), 3);
        assert_eq!(transposed.columns[2].header.as_deref(), Some("Owner:"));
        assert_eq!(transposed.cell(0, 2).map(Cell::text), Some("Ann"));
        assert!(transposed.context.transposed);
    }

    #[test]
    fn horizontal_tables_stay() {
        let table = Table::from_rows(
            "h",
            Some(vec!["name".into(), "city".into()]),
            vec![vec!["Ann".into(), "Oslo".into()]],
        );
        assert!(!is_vertical(&table, &[attribute("city", 1)]));
    }
}
