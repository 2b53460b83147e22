//! One table file as `colswarm annotate` reads it: the reader chosen by extension, ragged rows
//! padded, long tables sampled, oversized cells refused (or cut, when lossy). Every command that
//! reads a user's table files (annotate, fine-tune, the `labels` data format) reads them here,
//! so a column looks the same to the model at training and at inference.

use std::io::Read;
use std::path::Path;

use crate::compressed::extension_uncompressed;
use crate::delimited::{
    CsvOptions, Delimiter, RaggedRows, read_csv_from_reader, read_csv_with_report,
};
use crate::encoding::TextEncoding;
use crate::error::Result;
use crate::options::{ReadOptions, ReadReport};
use crate::sotab::read_sotab_table_sampled_with_report;
use crate::table::Table;

/// How [`read_table_file`] reads a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTableOptions {
    /// Repair invalid UTF-8 and cut oversized cells instead of failing (default `false`).
    pub lossy: bool,
    /// Rows kept from a delimited, SOTAB JSON or parquet file: a uniform, deterministic sample
    /// of this many, so tables of any length are read in bounded memory (default 1,000; a model
    /// reads far fewer).
    pub sample_rows: usize,
    /// How a delimited file's cells are decoded (default UTF-8; SOTAB JSON and parquet are
    /// UTF-8 by definition).
    pub encoding: TextEncoding,
}

impl Default for ReadTableOptions {
    fn default() -> Self {
        ReadTableOptions {
            lossy: false,
            sample_rows: 1000,
            encoding: TextEncoding::Utf8,
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
            encoding: options.encoding,
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

/// Reads one table file: GitTables parquet (`.parquet`, with the `parquet` feature), SOTAB
/// JSON (`.json`, `.json.gz`), else delimited text with a header row, gzipped or not (the
/// delimiter detected; `.tsv` and `.tsv.gz` are tab-separated). The table's id is the file's
/// stem.
pub fn read_table_file(path: &Path, options: &ReadTableOptions) -> Result<Table> {
    Ok(read_table_file_with_report(path, options)?.0)
}

/// [`read_table_file`], with what the reader changed or tolerated on the way (bytes replaced,
/// cells decoded as Windows-1252 or cut, ragged rows padded, rows left out of the sample).
/// SOTAB JSON and parquet files, UTF-8 by definition and never ragged, report cells cut and
/// rows left out.
pub fn read_table_file_with_report(
    path: &Path,
    options: &ReadTableOptions,
) -> Result<(Table, ReadReport)> {
    let name = path.to_string_lossy().to_lowercase();
    let read = ReadOptions {
        lossy: options.lossy,
        ..ReadOptions::default()
    };
    if name.ends_with(".parquet") {
        // Sampled like a delimited file, so no row limit is needed.
        let read = ReadOptions {
            max_rows: usize::MAX,
            ..read
        };
        read_parquet(path, &read, options.sample_rows)
    } else if name.ends_with(".json.gz") || name.ends_with(".json") {
        // Sampled like a delimited file, so no row limit is needed.
        let read = ReadOptions {
            max_rows: usize::MAX,
            ..read
        };
        read_sotab_table_sampled_with_report(path, &read, Some(options.sample_rows))
    } else {
        read_csv_with_report(path, &csv_options(path, options))
    }
}

#[cfg(feature = "parquet")]
fn read_parquet(
    path: &Path,
    read: &ReadOptions,
    sample_rows: usize,
) -> Result<(Table, ReadReport)> {
    let (table, _, report) =
        crate::gittables::read_gittables_parquet_with_report(path, None, read, Some(sample_rows))?;
    Ok((table, report))
}

#[cfg(not(feature = "parquet"))]
fn read_parquet(
    path: &Path,
    _read: &ReadOptions,
    _sample_rows: usize,
) -> Result<(Table, ReadReport)> {
    Err(crate::error::TableError::Dataset {
        path: path.to_path_buf(),
        reason: "this build reads no parquet files: enable the `parquet` feature".to_string(),
    })
}

/// Reads a delimited table from any reader (stdin, bytes in memory); `name` becomes the table
/// id and names the source in errors.
pub fn read_table_stream(
    reader: impl Read,
    name: &str,
    options: &ReadTableOptions,
) -> Result<Table> {
    Ok(read_table_stream_with_report(reader, name, options)?.0)
}

/// [`read_table_stream`], with what the reader changed or tolerated on the way.
pub fn read_table_stream_with_report(
    mut reader: impl Read,
    name: &str,
    options: &ReadTableOptions,
) -> Result<(Table, ReadReport)> {
    let mut bytes = Vec::new();
    let path = Path::new(name);
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| crate::error::TableError::io(path, e))?;
    read_csv_from_reader(bytes.as_slice(), path, name, &csv_options(path, options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("colswarm-table-file-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn a_parquet_file_without_the_feature_names_the_file_and_the_feature() {
        let path = Path::new("tables/t.parquet");
        let message = read_table_file(path, &ReadTableOptions::default())
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("tables/t.parquet: "), "{message}");
        assert!(message.contains("`parquet` feature"), "{message}");
    }

    #[test]
    fn ragged_rows_are_padded_and_long_tables_sampled() {
        let dir = temp_dir("ragged");
        let ragged = write(&dir, "r.csv", "a,b,c\n1,2\n3,4,5\n");
        let options = ReadTableOptions::default();
        let table = read_table_file(&ragged, &options).unwrap();
        assert_eq!(table.n_columns(), 3);
        assert_eq!(table.columns[2].cells.len(), 2);
        let mut long = String::from("x\n");
        for i in 0..50 {
            long.push_str(&format!("{i}\n"));
        }
        let long = write(&dir, "l.csv", &long);
        let sampled = ReadTableOptions {
            sample_rows: 10,
            ..options
        };
        assert_eq!(
            read_table_file(&long, &sampled).unwrap().columns[0]
                .cells
                .len(),
            10
        );
        assert_eq!(
            read_table_file(&long, &options).unwrap().columns[0]
                .cells
                .len(),
            50
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_long_sotab_table_is_sampled_in_order_as_a_delimited_one_is() {
        use std::io::Write;
        let dir = temp_dir("sotab");
        let path = dir.join("Book_example.com_September2020_CTA.json.gz");
        let mut gzip = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        for i in 0..500 {
            writeln!(gzip, r#"{{"0": "book {i}", "1": {i}}}"#).unwrap();
        }
        gzip.finish().unwrap();
        let sampled = ReadTableOptions {
            sample_rows: 40,
            ..ReadTableOptions::default()
        };
        let table = read_table_file(&path, &sampled).unwrap();
        let numbers: Vec<usize> = table.columns[1]
            .cells
            .iter()
            .map(|c| c.text().parse().unwrap())
            .collect();
        assert_eq!(numbers.len(), 40);
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        assert!(
            *numbers.last().unwrap() > 250,
            "the sample reaches the end: {numbers:?}"
        );
        assert_eq!(
            table.columns[0].cells[0].text(),
            format!("book {}", numbers[0])
        );
        // The same rows on every read; all of them when the sample is larger.
        assert_eq!(
            read_table_file(&path, &sampled).unwrap().columns,
            table.columns
        );
        let whole = read_table_file(&path, &ReadTableOptions::default()).unwrap();
        assert_eq!(whole.n_rows(), 500);
        // The report says what the sample left out, and which cells a lossy read cut.
        let (_, report) = read_table_file_with_report(&path, &sampled).unwrap();
        assert_eq!(report.sampled_out_rows, 460);
        assert_eq!(report.repairs(), ReadReport::default());
        let cut = dir.join("Long_example.com_September2020_CTA.json");
        let long_cell = "x".repeat(ReadOptions::default().max_cell_bytes + 5);
        std::fs::write(
            &cut,
            format!("{{\"0\": \"{long_cell}\"}}\n{{\"0\": \"y\"}}\n"),
        )
        .unwrap();
        assert!(read_table_file_with_report(&cut, &ReadTableOptions::default()).is_err());
        let lossy = ReadTableOptions {
            lossy: true,
            ..ReadTableOptions::default()
        };
        let (_, report) = read_table_file_with_report(&cut, &lossy).unwrap();
        assert_eq!((report.truncated_cells, report.sampled_out_rows), (1, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tsv_is_split_on_tabs_and_a_stream_reads_as_a_file_does() {
        let dir = temp_dir("tsv");
        let options = ReadTableOptions::default();
        let tsv = write(&dir, "t.tsv", "a\tb,c\n1\t2,3\n");
        assert_eq!(read_table_file(&tsv, &options).unwrap().n_columns(), 2);
        let csv = write(&dir, "c.csv", "a,b\n1,2\n");
        let from_file = read_table_file(&csv, &options).unwrap();
        let from_stream = read_table_stream("a,b\n1,2\n".as_bytes(), "c", &options).unwrap();
        assert_eq!(from_file.columns, from_stream.columns);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn invalid_utf8_is_an_error_naming_the_file_unless_lossy() {
        let dir = temp_dir("utf8");
        let path = dir.join("bad.csv");
        std::fs::write(&path, b"a,b\n\xff\xfe,2\n").unwrap();
        let err = read_table_file(&path, &ReadTableOptions::default()).unwrap_err();
        assert!(err.to_string().contains("bad.csv"), "{err}");
        let lossy = ReadTableOptions {
            lossy: true,
            ..ReadTableOptions::default()
        };
        assert_eq!(read_table_file(&path, &lossy).unwrap().n_columns(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_report_counts_what_reading_changed_in_a_file_and_in_a_stream() {
        let dir = temp_dir("report");
        let text: &[u8] = b"a,b\n\xff\xfe,2\n3\n4,5\n6,7\n";
        let path = dir.join("changed.csv");
        std::fs::write(&path, text).unwrap();
        let options = ReadTableOptions {
            lossy: true,
            sample_rows: 3,
            ..ReadTableOptions::default()
        };
        let (table, report) = read_table_file_with_report(&path, &options).unwrap();
        assert_eq!(table.n_rows(), 3);
        let expected = ReadReport {
            replaced_bytes: 2,
            padded_rows: 1,
            sampled_out_rows: 1,
            ..ReadReport::default()
        };
        assert_eq!(report, expected);
        let (from_stream, stream_report) =
            read_table_stream_with_report(text, "changed", &options).unwrap();
        assert_eq!(
            (from_stream.columns, stream_report),
            (table.columns, expected)
        );
        let clean = write(&dir, "clean.csv", "a,b\n1,2\n");
        let (_, report) = read_table_file_with_report(&clean, &options).unwrap();
        assert!(report.is_clean(), "{report}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_windows_1252_file_reads_with_that_encoding_and_says_so_when_it_is_not_given() {
        let dir = temp_dir("cp1252");
        // As a German spreadsheet program saves "CSV": semicolons, Windows-1252.
        let path = dir.join("st\u{e4}dte.csv");
        std::fs::write(
            &path,
            b"Stadt;Gr\xf6\xdfe;Preis\nM\xfcnchen;1500000;\x805\nK\xf6ln;1000000;\x806\n",
        )
        .unwrap();
        let message = read_table_file(&path, &ReadTableOptions::default())
            .unwrap_err()
            .to_string();
        assert!(message.contains("line 1, column index 1"), "{message}");
        assert!(message.contains("windows-1252"), "{message}");
        let options = ReadTableOptions {
            encoding: TextEncoding::Windows1252,
            ..ReadTableOptions::default()
        };
        let table = read_table_file(&path, &options).unwrap();
        let texts = |c: usize| -> Vec<&str> {
            table.columns[c]
                .cells
                .iter()
                .map(|cell| cell.text())
                .collect()
        };
        assert_eq!(table.columns[1].header.as_deref(), Some("Größe"));
        assert_eq!(texts(0), ["München", "Köln"]);
        assert_eq!(texts(2), ["€5", "€6"]);
        // Standard input reads the same way.
        let bytes = std::fs::read(&path).unwrap();
        let from_stream = read_table_stream(bytes.as_slice(), "st\u{e4}dte", &options).unwrap();
        assert_eq!(from_stream.columns, table.columns);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
