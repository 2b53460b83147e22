//! The Sato/Doduo "cv" layout (`sato_cv_*.csv`, and the GitTables SemTab 2022 folds
//! `db_semi1_cv_*.csv` / `sp_semi1_cv_*.csv`, gzipped or not): one CSV row per column,
//! `table_id,col_idx,class,class_id,data`, where `data` holds the column's values joined by one
//! separator (`;` for GitTables, a space for Sato). Headers are absent by design.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::cell::Cell;
use crate::error::{Result, TableError};
use crate::label_set::LabelSet;
use crate::options::ReadOptions;
use crate::records::{field, header_positions, open_records, parse_index};
use crate::table::{Column, Table};

/// How to read a cv file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SatoCvOptions {
    /// The character that joins a column's values in `data`.
    pub value_separator: char,
    /// Limits and lossy mode.
    pub read: ReadOptions,
}

impl SatoCvOptions {
    /// GitTables SemTab 2022 folds (REVEAL/Watchog copy): values joined by `;`.
    pub fn gittables() -> Self {
        SatoCvOptions {
            value_separator: ';',
            read: ReadOptions::default(),
        }
    }

    /// Doduo's Sato files: values joined by a space.
    pub fn sato() -> Self {
        SatoCvOptions {
            value_separator: ' ',
            read: ReadOptions::default(),
        }
    }
}

/// Tables from one or more cv files, with the label set their `class_id`s define.
#[derive(Debug, Clone, Default)]
pub struct SatoCvDataset {
    /// Tables in order of first appearance, per input file (one entry per fold).
    pub folds: Vec<Vec<Table>>,
    /// The classes, ordered by `class_id`. When the loaded files use every id from 0 up, a
    /// label's id here equals its `class_id`.
    pub labels: LabelSet,
    /// `class_id` → class, as given in the files.
    pub class_ids: BTreeMap<i64, String>,
}

impl SatoCvDataset {
    /// All tables of all folds.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.folds.iter().flatten()
    }
}

/// The id the cv files give unlabelled context columns.
pub const UNLABELLED_CLASS_ID: i64 = -1;

/// Reads several cv files (e.g. folds 0..3); class ids must agree across them.
pub fn read_sato_cv_folds<P: AsRef<Path>>(
    paths: &[P],
    options: &SatoCvOptions,
) -> Result<SatoCvDataset> {
    let mut dataset = SatoCvDataset::default();
    let mut first_seen: HashMap<String, (i64, PathBuf)> = HashMap::new();
    for path in paths {
        let tables = read_fold(
            path.as_ref(),
            options,
            &mut dataset.class_ids,
            &mut first_seen,
        )?;
        dataset.folds.push(tables);
    }
    dataset.labels = LabelSet::new(dataset.class_ids.values().cloned());
    Ok(dataset)
}

/// Reads one cv file.
pub fn read_sato_cv(path: impl AsRef<Path>, options: &SatoCvOptions) -> Result<SatoCvDataset> {
    read_sato_cv_folds(&[path.as_ref()], options)
}

fn read_fold(
    path: &Path,
    options: &SatoCvOptions,
    class_ids: &mut BTreeMap<i64, String>,
    first_seen: &mut HashMap<String, (i64, PathBuf)>,
) -> Result<Vec<Table>> {
    let mut records = open_records(path, b',', options.read)?;
    let mut record = Vec::new();
    if records.next_record(&mut record)?.is_none() {
        return Err(TableError::EmptyTable { path: path.into() });
    }
    let positions = header_positions(
        path,
        &record,
        &["table_id", "col_idx", "class", "class_id", "data"],
    )?;
    let [table_at, column_at, class_at, class_id_at, data_at] = positions[..] else {
        unreachable!("header_positions returns one position per name")
    };

    let mut tables: Vec<Table> = Vec::new();
    let mut table_index: HashMap<String, usize> = HashMap::new();
    while let Some(line) = records.next_record(&mut record)? {
        let table_id = field(path, line, &record, table_at)?;
        let source_index = parse_index(
            path,
            line,
            "col_idx",
            field(path, line, &record, column_at)?,
        )?;
        let class = field(path, line, &record, class_at)?;
        let class_id_text = field(path, line, &record, class_id_at)?;
        let class_id: i64 =
            class_id_text
                .trim()
                .parse()
                .map_err(|_| TableError::InvalidInteger {
                    path: path.into(),
                    line,
                    field: "class_id".into(),
                    value: class_id_text.into(),
                })?;
        let data = field(path, line, &record, data_at)?;

        let mut column = Column::new(None, split_values(data, options.value_separator));
        column.source_index = Some(source_index);
        if class_id != UNLABELLED_CLASS_ID {
            check_class_id(path, line, class, class_id, class_ids, first_seen)?;
            column.labels.push(class.to_string());
        }

        let at = *table_index.entry(table_id.to_string()).or_insert_with(|| {
            tables.push(Table::new(table_id, Vec::new()));
            tables.len() - 1
        });
        let table = &mut tables[at];
        if table.columns.len() >= options.read.max_columns {
            return Err(TableError::TooManyColumns {
                path: path.into(),
                line,
                found: table.columns.len() + 1,
                limit: options.read.max_columns,
            });
        }
        table.columns.push(column);
    }
    for table in &mut tables {
        // Rows are listed per column; keep the source's column order.
        table
            .columns
            .sort_by_key(|c| c.source_index.unwrap_or(usize::MAX));
    }
    Ok(tables)
}

fn check_class_id(
    path: &Path,
    line: u64,
    class: &str,
    class_id: i64,
    class_ids: &mut BTreeMap<i64, String>,
    first_seen: &mut HashMap<String, (i64, PathBuf)>,
) -> Result<()> {
    if let Some((existing_id, _)) = first_seen.get(class)
        && *existing_id != class_id
    {
        return Err(TableError::InconsistentLabelId {
            path: path.into(),
            line,
            label: class.into(),
            id: class_id,
            existing_id: *existing_id,
        });
    }
    match class_ids.get(&class_id) {
        Some(existing) if existing != class => {
            let existing_id = first_seen.get(existing).map_or(class_id, |(id, _)| *id);
            Err(TableError::InconsistentLabelId {
                path: path.into(),
                line,
                label: class.into(),
                id: class_id,
                existing_id,
            })
        }
        Some(_) => Ok(()),
        None => {
            class_ids.insert(class_id, class.to_string());
            first_seen.insert(class.to_string(), (class_id, path.into()));
            Ok(())
        }
    }
}

/// Splits `data` into cells; an empty `data` is a column without cells.
fn split_values(data: &str, separator: char) -> Vec<Cell> {
    if data.is_empty() {
        return Vec::new();
    }
    data.split(separator).map(Cell::new).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write_temp(name: &str, content: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("colswarm-sato-{}-{name}", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(content.as_bytes()).unwrap();
        path
    }

    #[test]
    fn groups_rows_into_tables() {
        let path = write_temp(
            "ok.csv",
            "table_id,col_idx,class,class_id,data\n\
             T1,0,id,0,a;b;c\nT1,2,NaN,-1,x;y\nT2,0,name,1,\n",
        );
        let dataset = read_sato_cv(&path, &SatoCvOptions::gittables()).unwrap();
        let tables = &dataset.folds[0];
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].n_columns(), 2);
        assert_eq!(tables[0].columns[1].source_index, Some(2));
        assert_eq!(tables[0].columns[0].labels, ["id"]);
        assert!(tables[0].columns[1].labels.is_empty());
        assert!(tables[1].columns[0].cells.is_empty());
        assert_eq!(dataset.labels.labels(), ["id", "name"]);
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn inconsistent_ids_are_an_error() {
        let path = write_temp(
            "bad.csv",
            "table_id,col_idx,class,class_id,data\nT1,0,id,0,a\nT2,0,id,3,b\n",
        );
        let error = read_sato_cv(&path, &SatoCvOptions::gittables()).unwrap_err();
        assert!(matches!(
            error,
            TableError::InconsistentLabelId { line: 3, .. }
        ));
        std::fs::remove_file(path).ok();
    }
}
