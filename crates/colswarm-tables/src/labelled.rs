//! A user's own labelled columns: a `labels.csv` of `table,column,label` rows over a folder of
//! table files (CSV, TSV, parquet, SOTAB JSON; gzipped or not), read exactly as `colswarm
//! annotate` reads tables ([`read_table_file`]).
//!
//! ```text
//! table,column,label
//! orders/2024.csv,customer,person
//! orders/2024.csv,2,price          <- a 0-based index works too
//! stock.tsv,sku,product_code
//! stock.tsv,sku,identifier         <- several rows: a multi-label column
//! ```
//!
//! - `table` is a path relative to the tables folder; it becomes the table's id.
//! - `column` is a 0-based index when it is a number the table has, else a header (matched
//!   exactly, then ignoring case and surrounding spaces when that names one column).
//! - Columns with no row are kept unlabelled: they are context the model reads.
//!
//! Every error names the labels file and its line, and the table or column it could not find;
//! a UTF-16 file (what spreadsheet programs write as "Unicode text") is refused with a hint.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::compressed::open_input;
use crate::encoding::TextEncoding;
use crate::error::{Result, TableError};
use crate::options::{ReadOptions, ReadReport};
use crate::records::{RecordReader, field, header_positions};
use crate::table::Table;
use crate::table_file::{ReadTableOptions, read_table_file_with_report};

/// Table files whose reading changed something, each with what it changed.
pub type FileReports = Vec<(PathBuf, ReadReport)>;

/// An error at a line of a labels file.
fn error(path: &Path, line: u64, message: String) -> TableError {
    TableError::LabelledColumn {
        path: path.to_path_buf(),
        line,
        message,
    }
}

/// The tables a labels file names, read from `tables_dir`, each labelled column carrying its
/// labels; tables in the order the file first names them.
///
/// # Errors
/// [`TableError::LabelledColumn`] naming the labels file and line for a missing table file, a
/// missing column, an empty field, a file that is not in `options`' encoding or has no
/// labelled row; [`TableError::Utf16`] for a UTF-16 labels file, as for a table; the table
/// reader's own error (naming the table file) for a table that cannot be read.
pub fn read_labelled_tables(
    labels: &Path,
    tables_dir: &Path,
    options: &ReadTableOptions,
) -> Result<Vec<Table>> {
    Ok(read_labelled_tables_with_report(labels, tables_dir, options)?.0)
}

/// [`read_labelled_tables`], with each table file whose reading changed something (cells read
/// as Windows-1252, ragged rows padded, rows left out of the sample) and what it changed, in
/// the order the tables are read.
pub fn read_labelled_tables_with_report(
    labels: &Path,
    tables_dir: &Path,
    options: &ReadTableOptions,
) -> Result<(Vec<Table>, FileReports)> {
    let mut bytes = Vec::new();
    open_input(labels)?
        .read_to_end(&mut bytes)
        .map_err(|e| TableError::read(labels, e))?;
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return Err(TableError::Utf16 {
            path: labels.into(),
        });
    }
    // The labels file is written beside the tables, in their encoding.
    let read = ReadOptions {
        max_rows: usize::MAX,
        encoding: options.encoding,
        ..ReadOptions::default()
    };
    let mut records = RecordReader::new(bytes.as_slice(), labels, b',', read);
    let mut record = Vec::new();
    if records.next_record(&mut record)?.is_none() {
        return Err(error(labels, 1, no_rows()));
    }
    let at = header_positions(labels, &record, &["table", "column", "label"])?;

    let mut tables: Vec<Table> = Vec::new();
    let mut reports = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut labelled = 0usize;
    while let Some(line) = records.next_record(&mut record)? {
        if record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        let value = |position: usize, name: &str| -> Result<String> {
            let text = field(labels, line, &record, position)?.trim();
            if text.is_empty() {
                return Err(error(labels, line, format!("empty `{name}`")));
            }
            Ok(text.to_string())
        };
        let (table_name, column, label) = (
            value(at[0], "table")?,
            value(at[1], "column")?,
            value(at[2], "label")?,
        );
        let table_at = match index.get(&table_name) {
            Some(&i) => i,
            None => {
                let file = tables_dir.join(&table_name);
                if !file.is_file() {
                    return Err(error(
                        labels,
                        line,
                        format!("no table file `{}`", file.display()),
                    ));
                }
                let (mut table, report) = read_table_file_with_report(&file, options)?;
                if !report.is_clean() {
                    reports.push((file, report));
                }
                table.id = table_name.replace('\\', "/");
                tables.push(table);
                index.insert(table_name.clone(), tables.len() - 1);
                tables.len() - 1
            }
        };
        let table = &mut tables[table_at];
        let c = find_column(table, &column)
            .map_err(|reason| error(labels, line, format!("table `{table_name}`: {reason}")))?;
        let labels_of = &mut table.columns[c].labels;
        if !labels_of.contains(&label) {
            labels_of.push(label);
            labelled += 1;
        }
    }
    if labelled == 0 {
        return Err(error(labels, 1, no_rows()));
    }
    Ok((tables, reports))
}

fn no_rows() -> String {
    "no labelled column (expected a `table,column,label` header and one row per label)".into()
}

/// The column `column` names: an index the table has, else a header.
fn find_column(table: &Table, column: &str) -> std::result::Result<usize, String> {
    let n = table.columns.len();
    if let Ok(i) = column.parse::<usize>()
        && i < n
    {
        return Ok(i);
    }
    let headers: Vec<&str> = table
        .columns
        .iter()
        .map(|c| c.header.as_deref().unwrap_or(""))
        .collect();
    let exact: Vec<usize> = (0..n).filter(|&i| headers[i] == column).collect();
    let matches = if exact.is_empty() {
        let wanted = column.trim().to_lowercase();
        (0..n)
            .filter(|&i| headers[i].trim().to_lowercase() == wanted)
            .collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => {
            let shown: Vec<String> = headers.iter().take(20).map(|h| format!("`{h}`")).collect();
            Err(format!(
                "no column `{column}` (it has {n} columns, 0 to {}, headed {}{})",
                n.saturating_sub(1),
                shown.join(", "),
                if n > 20 { ", …" } else { "" }
            ))
        }
        several => Err(format!(
            "{} columns are headed `{column}` (indices {:?}); give the index instead",
            several.len(),
            several
        )),
    }
}

/// The tables of a `labels` data spec's paths: a folder sets where the table files of the
/// labels files after it lie (else each labels file's own folder).
pub(crate) fn read_labelled_paths(paths: &[PathBuf], encoding: TextEncoding) -> Result<Vec<Table>> {
    let options = ReadTableOptions {
        encoding,
        ..ReadTableOptions::default()
    };
    let mut tables_dir: Option<&Path> = None;
    let mut tables = Vec::new();
    for path in paths {
        if path.is_dir() {
            tables_dir = Some(path);
            continue;
        }
        let dir = tables_dir
            .or_else(|| path.parent())
            .unwrap_or(Path::new("."));
        tables.extend(read_labelled_tables(path, dir, &options)?);
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Folder(PathBuf);

    impl Folder {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("colswarm-labelled-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("sub")).unwrap();
            std::fs::write(
                dir.join("a.csv"),
                "Name,Born,Name2\nAda,1815,x\nAlan,1912,y\n",
            )
            .unwrap();
            std::fs::write(dir.join("sub/b.tsv"), "sku\tprice\nX1\t3.5\n").unwrap();
            Folder(dir)
        }

        fn labels(&self, text: &[u8]) -> PathBuf {
            let path = self.0.join("labels.csv");
            std::fs::write(&path, text).unwrap();
            path
        }

        fn read(&self, text: &str) -> Result<Vec<Table>> {
            let labels = self.labels(text.as_bytes());
            read_labelled_tables(&labels, &self.0, &ReadTableOptions::default())
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn columns_by_index_or_header_get_their_labels() {
        let folder = Folder::new("ok");
        let tables = folder
            .read(
                "label,table,column\nperson,a.csv,name\nyear,a.csv,1\n\
                 code,sub/b.tsv,sku\nid,sub/b.tsv,0\nid,sub/b.tsv,0\n",
            )
            .unwrap();
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].id, "a.csv");
        assert_eq!(tables[0].columns[0].labels, ["person"]);
        assert_eq!(tables[0].columns[1].labels, ["year"]);
        assert!(tables[0].columns[2].labels.is_empty(), "context column");
        assert_eq!(tables[1].id, "sub/b.tsv");
        assert_eq!(tables[1].columns[0].labels, ["code", "id"]);
        assert_eq!(tables[1].columns[0].cells.len(), 1);
    }

    #[test]
    fn bad_rows_are_one_line_errors_naming_file_line_and_what_is_missing() {
        let folder = Folder::new("bad");
        let cases = [
            (
                "table,column,label\na.csv,name,p\nnope.csv,0,p\n",
                "line 3: no table file",
            ),
            (
                "table,column,label\na.csv,Surname,p\n",
                "line 2: table `a.csv`: no column `Surname`",
            ),
            (
                "table,column,label\na.csv,7,p\n",
                "no column `7` (it has 3 columns",
            ),
            ("table,column,label\na.csv,0,\n", "line 2: empty `label`"),
            ("table,column,label\n", "no labelled column"),
            ("table,label\na.csv,p\n", "missing required column `column`"),
        ];
        for (text, expected) in cases {
            let message = folder.read(text).unwrap_err().to_string();
            assert!(message.contains("labels.csv"), "{message}");
            assert!(message.contains(expected), "{expected:?} not in {message}");
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[test]
    fn utf16_and_invalid_utf8_are_refused_with_the_file_named() {
        let folder = Folder::new("encoding");
        let utf16: Vec<u8> = "\u{feff}table,column,label\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let labels = folder.labels(&utf16);
        let message = read_labelled_tables(&labels, &folder.0, &ReadTableOptions::default())
            .unwrap_err()
            .to_string();
        assert!(message.contains("UTF-16"), "{message}");
        let labels = folder.labels(b"table,column,label\na.csv,0,caf\xe9\n");
        let message = read_labelled_tables(&labels, &folder.0, &ReadTableOptions::default())
            .unwrap_err()
            .to_string();
        assert!(message.contains("labels.csv: line 2"), "{message}");
        assert!(message.contains("UTF-8"), "{message}");
    }

    #[test]
    fn a_windows_1252_labels_file_names_headers_of_windows_1252_tables() {
        let folder = Folder::new("cp1252");
        std::fs::write(
            folder.0.join("c.csv"),
            b"Stra\xdfe,Gr\xf6\xdfe\nHauptstra\xdfe,3\n",
        )
        .unwrap();
        let labels = folder.labels(b"table,column,label\nc.csv,Stra\xdfe,stra\xdfe\n");
        let options = ReadTableOptions {
            encoding: crate::TextEncoding::Windows1252,
            ..ReadTableOptions::default()
        };
        let tables = read_labelled_tables(&labels, &folder.0, &options).unwrap();
        assert_eq!(tables[0].columns[0].header.as_deref(), Some("Straße"));
        assert_eq!(tables[0].columns[0].labels, ["straße"]);
        assert_eq!(tables[0].columns[0].cells[0].text(), "Hauptstraße");
        assert!(tables[0].columns[1].labels.is_empty());
    }

    #[test]
    fn the_report_names_each_table_file_whose_reading_changed_something() {
        let folder = Folder::new("report");
        std::fs::write(folder.0.join("clean.csv"), "a,b\n1,2\n").unwrap();
        std::fs::write(folder.0.join("mixed.csv"), b"a,b\nK\xf6ln,2\n3\n").unwrap();
        let labels =
            folder.labels(b"table,column,label\nclean.csv,a,x\nmixed.csv,a,y\nmixed.csv,b,z\n");
        let options = ReadTableOptions {
            encoding: TextEncoding::Auto,
            ..ReadTableOptions::default()
        };
        let (tables, reports) =
            read_labelled_tables_with_report(&labels, &folder.0, &options).unwrap();
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[1].columns[0].cells[0].text(), "Köln");
        let expected = ReadReport {
            windows_1252_cells: 1,
            padded_rows: 1,
            ..ReadReport::default()
        };
        assert_eq!(reports, [(folder.0.join("mixed.csv"), expected)]);
    }

    #[test]
    fn a_spec_s_folder_sets_where_the_tables_lie() {
        let folder = Folder::new("spec");
        let labels = folder.labels(b"table,column,label\nb.tsv,price,money\n");
        let err =
            read_labelled_paths(std::slice::from_ref(&labels), TextEncoding::Utf8).unwrap_err();
        assert!(err.to_string().contains("no table file"), "{err}");
        let tables =
            read_labelled_paths(&[folder.0.join("sub"), labels], TextEncoding::Utf8).unwrap();
        assert_eq!(tables[0].columns[1].labels, ["money"]);
    }
}
