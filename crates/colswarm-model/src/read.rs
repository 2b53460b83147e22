//! Table files as `colswarm annotate` reads them: the reader chosen by extension, ragged rows
//! padded, long tables sampled, oversized cells refused (or cut, when lossy).

use std::io::Read;
use std::path::{Path, PathBuf};

use colswarm_tables::{
    CsvOptions, Delimiter, RaggedRows, ReadOptions, Table, extension_uncompressed,
    read_csv_from_reader, read_csv_with_report, read_sotab_table,
};

use crate::error::ModelError;

/// Extensions of the table files a directory is searched for.
pub const TABLE_EXTENSIONS: [&str; 6] = ["csv", "tsv", "json", "gz", "parquet", "txt"];

/// How [`read_table_with`] reads a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTableOptions {
    /// Repair invalid UTF-8 and cut oversized cells instead of failing (default `false`).
    pub lossy: bool,
    /// Rows kept from a delimited file: a uniform, deterministic sample of this many, so tables
    /// of any length are read in bounded memory (default 1,000; the model itself reads far
    /// fewer, see its `serialize.json`).
    pub sample_rows: usize,
}

impl Default for ReadTableOptions {
    fn default() -> Self {
        ReadTableOptions {
            lossy: false,
            sample_rows: 1000,
        }
    }
}

fn csv_options(path: &Path, options: &ReadTableOptions) -> CsvOptions {
    let tsv = extension_uncompressed(path).is_some_and(|e| e == "tsv");
    CsvOptions {
        sample_rows: Some(options.sample_rows),
        read: ReadOptions {
            // Sampling bounds memory, so no row limit is needed; cells stay capped at 1 MiB
            // (an error, or a cut with `lossy`).
            max_rows: usize::MAX,
            lossy: options.lossy,
            ..ReadOptions::default()
        },
        delimiter: if tsv {
            Delimiter::Byte(b'\t')
        } else {
            Delimiter::Detect
        },
        // Web tables are often ragged: pad them rather than refuse them.
        ragged_rows: RaggedRows::Pad,
        ..CsvOptions::default()
    }
}

/// Reads one table file with the default [`ReadTableOptions`]: GitTables parquet (`.parquet`,
/// with the `parquet` feature), SOTAB JSON (`.json`, `.json.gz`), else delimited text, gzipped
/// or not (the delimiter detected; `.tsv` and `.tsv.gz` are tab-separated).
///
/// ```no_run
/// let table = colswarm_model::read_table("cities.csv")?;
/// println!("{} columns", table.n_columns());
/// # Ok::<(), colswarm_model::ModelError>(())
/// ```
pub fn read_table(path: impl AsRef<Path>) -> Result<Table, ModelError> {
    read_table_with(path, &ReadTableOptions::default())
}

/// [`read_table`] with options.
pub fn read_table_with(
    path: impl AsRef<Path>,
    options: &ReadTableOptions,
) -> Result<Table, ModelError> {
    let path = path.as_ref();
    let name = path.to_string_lossy().to_lowercase();
    let read = ReadOptions {
        lossy: options.lossy,
        ..ReadOptions::default()
    };
    let table = if name.ends_with(".parquet") {
        read_parquet(path, &read)?
    } else if name.ends_with(".json.gz") || name.ends_with(".json") {
        read_sotab_table(path, &read)?
    } else {
        read_csv_with_report(path, &csv_options(path, options))?.0
    };
    Ok(table)
}

#[cfg(feature = "parquet")]
fn read_parquet(path: &Path, read: &ReadOptions) -> Result<Table, ModelError> {
    Ok(colswarm_tables::read_gittables_parquet(path, None, read)?.0)
}

#[cfg(not(feature = "parquet"))]
fn read_parquet(path: &Path, _read: &ReadOptions) -> Result<Table, ModelError> {
    Err(ModelError::Input {
        path: path.to_path_buf(),
        reason: "this build reads no parquet files: enable colswarm-model's `parquet` feature"
            .to_string(),
    })
}

/// Reads a delimited table from any reader (stdin, bytes in memory); `name` becomes the table
/// id and names the source in errors.
pub fn read_table_from(
    mut reader: impl Read,
    name: &str,
    options: &ReadTableOptions,
) -> Result<Table, ModelError> {
    let mut bytes = Vec::new();
    let path = Path::new(name);
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| ModelError::io(path, e))?;
    Ok(read_csv_from_reader(bytes.as_slice(), path, name, &csv_options(path, options))?.0)
}

/// The table files among `inputs`, in the order given: a directory gives its files with a
/// [`TABLE_EXTENSIONS`] extension, sorted; `-` (stdin) is kept as it is.
pub fn table_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, ModelError> {
    let mut files = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            files.push(input.clone());
        } else if input.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(input)
                .map_err(|e| ModelError::io(input, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_file()
                        && p.extension().is_some_and(|e| {
                            TABLE_EXTENSIONS.contains(&e.to_string_lossy().as_ref())
                        })
                })
                .collect();
            found.sort();
            files.extend(found);
        } else if input.is_file() {
            files.push(input.clone());
        } else {
            return Err(ModelError::Input {
                path: input.clone(),
                reason: "no such file or directory".into(),
            });
        }
    }
    if files.is_empty() {
        return Err(ModelError::Input {
            path: inputs.first().cloned().unwrap_or_default(),
            reason: "no table file among the inputs".into(),
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn a_parquet_file_without_the_feature_names_the_file_and_the_feature() {
        let message = read_table("tables/t.parquet").unwrap_err().to_string();
        assert!(message.starts_with("tables/t.parquet: "), "{message}");
        assert!(message.contains("`parquet` feature"), "{message}");
    }

    #[test]
    fn ragged_rows_are_padded_and_long_tables_sampled() {
        let dir = tempfile::tempdir().unwrap();
        let ragged = write(dir.path(), "r.csv", "a,b,c\n1,2\n3,4,5\n");
        let table = read_table(&ragged).unwrap();
        assert_eq!(table.n_columns(), 3);
        assert_eq!(table.columns[2].cells.len(), 2);
        let mut long = String::from("x\n");
        for i in 0..50 {
            long.push_str(&format!("{i}\n"));
        }
        let long = write(dir.path(), "l.csv", &long);
        let options = ReadTableOptions {
            sample_rows: 10,
            ..ReadTableOptions::default()
        };
        let sampled = read_table_with(&long, &options).unwrap();
        assert_eq!(sampled.columns[0].cells.len(), 10);
        assert_eq!(read_table(&long).unwrap().columns[0].cells.len(), 50);
    }

    #[test]
    fn tsv_is_split_on_tabs_and_a_reader_reads_as_a_file_does() {
        let dir = tempfile::tempdir().unwrap();
        let tsv = write(dir.path(), "t.tsv", "a\tb,c\n1\t2,3\n");
        let table = read_table(&tsv).unwrap();
        assert_eq!(table.n_columns(), 2);
        let csv = write(dir.path(), "c.csv", "a,b\n1,2\n");
        let from_file = read_table(&csv).unwrap();
        let from_reader =
            read_table_from("a,b\n1,2\n".as_bytes(), "c", &ReadTableOptions::default()).unwrap();
        assert_eq!(from_file.columns, from_reader.columns);
    }

    #[test]
    fn directories_list_their_table_files_sorted_and_missing_inputs_are_named() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "b.csv", "x\n1\n");
        write(dir.path(), "a.tsv", "x\n1\n");
        write(dir.path(), "notes.md", "not a table");
        let files = table_files(&[dir.path().to_path_buf(), PathBuf::from("-")]).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.tsv", "b.csv", "-"]);
        let err = table_files(&[dir.path().join("nope.csv")]).unwrap_err();
        assert!(err.to_string().contains("nope.csv"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        let err = table_files(&[empty.path().to_path_buf()]).unwrap_err();
        assert!(err.to_string().contains("no table file"), "{err}");
    }

    #[test]
    fn invalid_utf8_is_an_error_naming_the_file_unless_lossy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.csv");
        std::fs::write(&path, b"a,b\n\xff\xfe,2\n").unwrap();
        let err = read_table(&path).unwrap_err();
        assert!(err.to_string().contains("bad.csv"), "{err}");
        let options = ReadTableOptions {
            lossy: true,
            ..ReadTableOptions::default()
        };
        assert_eq!(read_table_with(&path, &options).unwrap().n_columns(), 2);
    }
}
