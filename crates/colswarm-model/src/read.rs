//! Table files as `colswarm annotate` reads them: the reader chosen by extension, ragged rows
//! padded, long tables sampled, oversized cells refused (or cut, when lossy).

use std::io::Read;
use std::path::{Path, PathBuf};

pub use colswarm_tables::{ReadReport, ReadTableOptions, TextEncoding};
use colswarm_tables::{
    Table, read_table_file, read_table_file_with_report, read_table_stream_with_report,
};

use crate::error::ModelError;

/// Extensions of the table files a directory is searched for (compared in lower case).
pub const TABLE_EXTENSIONS: [&str; 6] = ["csv", "tsv", "json", "gz", "parquet", "txt"];

/// Spreadsheet workbooks: not read, but named when a directory holds nothing else.
const WORKBOOK_EXTENSIONS: [&str; 5] = ["xlsx", "xlsm", "xls", "ods", "numbers"];

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
    Ok(read_table_file(path.as_ref(), options)?)
}

/// [`read_table_with`], with what reading changed or tolerated (bytes replaced in lossy mode,
/// cells decoded as Windows-1252 or cut, ragged rows padded, rows left out of the sample):
/// what `colswarm annotate` says on stderr.
///
/// ```no_run
/// use colswarm_model::{ReadTableOptions, read_table_with_report};
///
/// let options = ReadTableOptions { lossy: true, ..ReadTableOptions::default() };
/// let (table, report) = read_table_with_report("export.csv", &options)?;
/// if !report.is_clean() {
///     eprintln!("{}: {report}", table.id);
/// }
/// # Ok::<(), colswarm_model::ModelError>(())
/// ```
pub fn read_table_with_report(
    path: impl AsRef<Path>,
    options: &ReadTableOptions,
) -> Result<(Table, ReadReport), ModelError> {
    Ok(read_table_file_with_report(path.as_ref(), options)?)
}

/// Reads a delimited table from any reader (stdin, bytes in memory); `name` becomes the table
/// id and names the source in errors.
pub fn read_table_from(
    reader: impl Read,
    name: &str,
    options: &ReadTableOptions,
) -> Result<Table, ModelError> {
    Ok(read_table_from_with_report(reader, name, options)?.0)
}

/// [`read_table_from`], with what reading changed or tolerated.
pub fn read_table_from_with_report(
    reader: impl Read,
    name: &str,
    options: &ReadTableOptions,
) -> Result<(Table, ReadReport), ModelError> {
    Ok(read_table_stream_with_report(reader, name, options)?)
}

/// The table files among `inputs`, in the order given: a directory gives its files with a
/// [`TABLE_EXTENSIONS`] extension, sorted; `-` (stdin) is kept as it is.
pub fn table_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, ModelError> {
    Ok(table_files_and_workbooks(inputs)?.0)
}

/// [`table_files`], and beside them the spreadsheet workbooks (`.xlsx`, `.xls`, `.ods`, …) the
/// directories among `inputs` hold, which are not read: a command can say so
/// ([`workbook_note`]). Each directory is listed once.
pub fn table_files_and_workbooks(
    inputs: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), ModelError> {
    let mut files = Vec::new();
    let mut workbooks = Vec::new();
    let mut others = Vec::new();
    let mut folders = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            files.push(input.clone());
        } else if input.is_dir() {
            let listed = files_in(input)?;
            files.extend(listed.tables);
            workbooks.extend(listed.workbooks);
            others.extend(listed.others);
            folders.extend(listed.folders);
        } else if input.is_file() {
            files.push(input.clone());
        } else {
            return Err(ModelError::Input {
                path: input.clone(),
                reason: "no such file or directory".into(),
            });
        }
    }
    workbooks.sort();
    if files.is_empty() {
        let mut reason = "no table file among the inputs".to_string();
        if !workbooks.is_empty() {
            reason.push_str(&format!(" ({})", workbook_note(&workbooks)));
        } else if let Some(first) = others.iter().min() {
            // Said only here, where nothing is read: a folder's README or metadata beside its
            // tables is no news.
            reason.push_str(&format!(
                " ({} other file{}, such as {}; table files end in .{})",
                others.len(),
                if others.len() == 1 { "" } else { "s" },
                first.display(),
                TABLE_EXTENSIONS.join(", ."),
            ));
        } else if let Some(first) = folders.iter().min() {
            // Folders are read one level deep: tables in subfolders need naming.
            reason.push_str(&format!(
                " ({} subfolder{}, such as {}, which {} not searched: name {} as input{})",
                folders.len(),
                if folders.len() == 1 { "" } else { "s" },
                first.display(),
                if folders.len() == 1 { "is" } else { "are" },
                if folders.len() == 1 { "it" } else { "them" },
                if folders.len() == 1 { "" } else { "s" },
            ));
        }
        return Err(ModelError::Input {
            path: inputs.first().cloned().unwrap_or_default(),
            reason,
        });
    }
    Ok((files, workbooks))
}

/// Workbooks that were not read, in words, naming the first: what `colswarm annotate` says of
/// them.
pub fn workbook_note(workbooks: &[PathBuf]) -> String {
    let first = workbooks
        .first()
        .map_or_else(String::new, |w| format!(", such as {}", w.display()));
    format!(
        "{} spreadsheet workbook{}{first}, which colswarm does not read: save each sheet as CSV",
        workbooks.len(),
        if workbooks.len() == 1 { "" } else { "s" },
    )
}

/// A directory's files, by what `annotate` does with them.
#[derive(Default)]
struct DirectoryFiles {
    /// With a [`TABLE_EXTENSIONS`] extension, sorted: read.
    tables: Vec<PathBuf>,
    /// With a [`WORKBOOK_EXTENSIONS`] one, sorted: named, not read.
    workbooks: Vec<PathBuf>,
    /// Any other file but hidden ones (`.DS_Store`): passed over.
    others: Vec<PathBuf>,
    /// Subfolders but hidden ones (`.git`): not searched.
    folders: Vec<PathBuf>,
}

/// The files of `dir`, extensions compared in lower case.
fn files_in(dir: &Path) -> Result<DirectoryFiles, ModelError> {
    let mut listed = DirectoryFiles::default();
    let entries = std::fs::read_dir(dir).map_err(|e| ModelError::io(dir, e))?;
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let extension = path
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if path.is_dir() {
            if !hidden {
                listed.folders.push(path);
            }
        } else if !path.is_file() {
            continue;
        } else if TABLE_EXTENSIONS.contains(&extension.as_str()) {
            listed.tables.push(path);
        } else if WORKBOOK_EXTENSIONS.contains(&extension.as_str()) {
            listed.workbooks.push(path);
        } else if !hidden {
            listed.others.push(path);
        }
    }
    listed.tables.sort();
    listed.workbooks.sort();
    Ok(listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
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
        // A folder of other files names one and says what a table file is; hidden files are
        // not counted.
        let others = tempfile::tempdir().unwrap();
        write(others.path(), "b.dat", "x|y\n1|2\n");
        write(others.path(), "a.psv", "x|y\n1|2\n");
        write(others.path(), ".DS_Store", "");
        let err = table_files(&[others.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("2 other files, such as") && err.contains("a.psv"),
            "{err}"
        );
        assert!(err.contains("table files end in .csv, .tsv"), "{err}");
        // A folder of workbooks says what it holds; an upper-case extension is a table.
        write(empty.path(), "b.xlsx", "");
        write(empty.path(), "a.ods", "");
        let err = table_files(&[empty.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("2 spreadsheet workbooks, such as") && err.contains("a.ods"),
            "{err}"
        );
        // A folder of folders says they are not searched.
        let nested = tempfile::tempdir().unwrap();
        std::fs::create_dir(nested.path().join("2024")).unwrap();
        std::fs::create_dir(nested.path().join(".git")).unwrap();
        write(&nested.path().join("2024"), "a.csv", "x\n1\n");
        let err = table_files(&[nested.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("1 subfolder, such as") && err.contains("2024, which is not searched"),
            "{err}"
        );
        write(empty.path(), "C.CSV", "x\n1\n");
        let files = table_files(&[empty.path().to_path_buf()]).unwrap();
        assert_eq!(files, [empty.path().join("C.CSV")]);
        let (_, workbooks) =
            table_files_and_workbooks(&[empty.path().to_path_buf(), PathBuf::from("-")]).unwrap();
        assert_eq!(
            workbooks,
            [empty.path().join("a.ods"), empty.path().join("b.xlsx")]
        );
    }
}
