//! Plain CSV / TSV tables: quoted fields, delimiter detection, header or not, BOM, CRLF.

use std::io::{BufReader, Read};
use std::path::Path;

use crate::cell::Cell;
use crate::compressed::{file_stem_uncompressed, open_input};
use crate::error::{Result, TableError};
use crate::options::{ReadOptions, ReadReport};
use crate::records::{RecordReader, detect_delimiter};
use crate::row_sample::RowSample;
use crate::table::{Column, Table};

/// Which byte separates fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delimiter {
    /// Guess from the first 16 KiB among `,` `\t` `;` `|` (comma when nothing fits).
    #[default]
    Detect,
    /// Use this byte.
    Byte(u8),
}

/// What to do with a record whose field count differs from the table's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RaggedRows {
    /// Fail with [`TableError::RaggedRow`].
    #[default]
    Error,
    /// Pad short rows with null cells; widen the table (padding earlier rows) for long rows.
    /// Each such row is counted in [`ReadReport::padded_rows`].
    Pad,
}

/// How to read a delimited file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvOptions {
    /// Field separator (detected by default).
    pub delimiter: Delimiter,
    /// True when the first record is a header row (default true).
    pub has_header: bool,
    /// Ragged-row policy (error by default).
    pub ragged_rows: RaggedRows,
    /// Limits and lossy mode.
    pub read: ReadOptions,
    /// Keep a uniform random sample of at most this many data rows (reservoir sampling, seeded
    /// by the table id, rows kept in table order) instead of every row (default `None`): memory
    /// then stays bounded for tables of any length. The report counts the rows left out.
    pub sample_rows: Option<usize>,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: Delimiter::Detect,
            has_header: true,
            ragged_rows: RaggedRows::Error,
            read: ReadOptions::default(),
            sample_rows: None,
        }
    }
}

impl CsvOptions {
    /// Tab-separated values with a header row.
    pub fn tsv() -> Self {
        CsvOptions {
            delimiter: Delimiter::Byte(b'\t'),
            ..CsvOptions::default()
        }
    }

    /// These options without a header row.
    pub fn without_header(self) -> Self {
        CsvOptions {
            has_header: false,
            ..self
        }
    }
}

const SNIFF_BYTES: usize = 16 * 1024;

/// Reads a delimited file into a table whose id is the file stem.
pub fn read_csv(path: impl AsRef<Path>, options: &CsvOptions) -> Result<Table> {
    read_csv_with_report(path, options).map(|(table, _)| table)
}

/// Like [`read_csv`], also returning what lossy mode or padding changed. A `.gz` file is read
/// through a gzip decoder, and its id leaves both suffixes out (`cities.csv.gz` → `cities`).
pub fn read_csv_with_report(
    path: impl AsRef<Path>,
    options: &CsvOptions,
) -> Result<(Table, ReadReport)> {
    let path = path.as_ref();
    let input = open_input(path)?;
    read_csv_from_reader(input, path, &file_stem_uncompressed(path), options)
}

/// Reads a delimited table from any reader; `path` names the source in errors and `id`
/// becomes the table id.
pub fn read_csv_from_reader(
    reader: impl Read,
    path: &Path,
    id: &str,
    options: &CsvOptions,
) -> Result<(Table, ReadReport)> {
    let (input, delimiter) = sniffed(reader, path, options.delimiter)?;
    let mut records = RecordReader::new(input, path, delimiter, options.read);
    let mut record = Vec::new();
    let mut padded_rows = 0;

    let mut columns: Vec<Column> = Vec::new();
    let mut width = None;
    let mut has_header_row = false;
    if options.has_header {
        if records.next_record(&mut record)?.is_none() {
            return Err(TableError::EmptyTable { path: path.into() });
        }
        columns = record
            .drain(..)
            .map(|h| Column::new(Some(h), Vec::new()))
            .collect();
        width = Some(columns.len());
        has_header_row = true;
    }

    let mut rows = RowSample::new(options.sample_rows, id);
    let mut widest = width.unwrap_or(0);
    while let Some(line) = records.next_record(&mut record)? {
        let expected = *width.get_or_insert(record.len());
        if record.len() != expected {
            if options.ragged_rows == RaggedRows::Error {
                return Err(TableError::RaggedRow {
                    path: path.into(),
                    line,
                    expected,
                    found: record.len(),
                });
            }
            padded_rows += 1;
        }
        if rows.seen() >= options.read.max_rows {
            return Err(TableError::TooManyRows {
                path: path.into(),
                line,
                found: rows.seen() + 1,
                limit: options.read.max_rows,
            });
        }
        widest = widest.max(record.len());
        rows.push(std::mem::take(&mut record));
    }
    // Columns that only ragged rows reach get an empty header when the table has a header row.
    while columns.len() < widest {
        columns.push(Column::new(has_header_row.then(String::new), Vec::new()));
    }
    let sampled_out = rows.seen() - rows.len();
    fill_columns(&mut columns, rows);
    if columns.is_empty() {
        return Err(TableError::EmptyTable { path: path.into() });
    }
    let mut report = records.report();
    report.padded_rows += padded_rows;
    report.sampled_out_rows += sampled_out;
    let mut table = Table::new(id, columns);
    table.context.has_header_row = has_header_row;
    Ok((table, report))
}

/// The input with its first bytes read ahead and put back, and the delimiter: `choice`, or the
/// one detected in those bytes.
fn sniffed(
    mut reader: impl Read,
    path: &Path,
    choice: Delimiter,
) -> Result<(impl std::io::BufRead, u8)> {
    // The sample is read in full (a decoder may hand out less than a buffer per read), then
    // put back in front of the rest.
    let mut sample = Vec::with_capacity(SNIFF_BYTES);
    (&mut reader)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sample)
        .map_err(|e| TableError::read(path, e))?;
    // Spreadsheet programs' "Unicode text": every other byte a zero, which neither encoding
    // option reads; say so rather than fail at its first cell.
    if sample.starts_with(b"\xFF\xFE") || sample.starts_with(b"\xFE\xFF") {
        return Err(TableError::Utf16 { path: path.into() });
    }
    if let Some(signature) = binary_format(&sample) {
        return Err(TableError::NotText {
            path: path.into(),
            format: signature.format,
            hint: signature.hint,
        });
    }
    let delimiter = match choice {
        Delimiter::Byte(b'"') => {
            return Err(TableError::InvalidOption(
                "the delimiter cannot be the quote character".into(),
            ));
        }
        Delimiter::Byte(byte) => byte,
        Delimiter::Detect => detect_delimiter(&sample),
    };
    let input = BufReader::with_capacity(SNIFF_BYTES, std::io::Cursor::new(sample).chain(reader));
    Ok((input, delimiter))
}

/// A file format that is not delimited text, known by the bytes it starts with.
struct Signature {
    magic: &'static [u8],
    /// Whether `magic` is printable text a header row could start with (`PAR1`), so that the
    /// file must also hold bytes no text holds before it is refused.
    printable: bool,
    format: &'static str,
    hint: &'static str,
}

const SAVE_AS_CSV: &str = "save the sheet as CSV (\"CSV UTF-8\" in spreadsheet programs)";

const SIGNATURES: [Signature; 5] = [
    Signature {
        magic: b"PK\x03\x04",
        printable: false,
        format: "a zip archive (an .xlsx or .ods workbook is one)",
        hint: SAVE_AS_CSV,
    },
    Signature {
        magic: b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1",
        printable: false,
        format: "an Excel 97-2003 workbook (.xls)",
        hint: SAVE_AS_CSV,
    },
    Signature {
        magic: b"\x1F\x8B",
        printable: false,
        format: "gzip-compressed",
        hint: "name the file with a .gz extension (`table.csv.gz`), which is read through \
               gzip, or decompress it first (`gunzip -c`, for a stream)",
    },
    Signature {
        magic: b"PAR1",
        printable: true,
        format: "a parquet file",
        hint: "name it with the .parquet extension, which the parquet reader takes",
    },
    Signature {
        magic: b"%PDF-",
        printable: true,
        format: "a PDF document",
        hint: "export its tables as CSV",
    },
];

/// The format a file that starts with `sample` is, when it is one of [`SIGNATURES`].
fn binary_format(sample: &[u8]) -> Option<&'static Signature> {
    let signature = SIGNATURES.iter().find(|s| sample.starts_with(s.magic))?;
    let not_text = sample.contains(&0)
        // An error with no length is a character cut at the sample's end, not a bad byte.
        || std::str::from_utf8(sample).is_err_and(|e| e.error_len().is_some());
    (!signature.printable || not_text).then_some(signature)
}

/// Appends the kept rows' cells to `columns`; a short row's missing cells are nulls.
fn fill_columns(columns: &mut [Column], rows: RowSample<Vec<String>>) {
    for row in rows.into_rows() {
        let filled = row.len();
        for (column, text) in columns.iter_mut().zip(row) {
            column.cells.push(Cell::new(text));
        }
        for column in columns.iter_mut().skip(filled) {
            column.cells.push(Cell::null());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_reading_keeps_a_bounded_ordered_deterministic_sample() {
        let mut data = String::from("n,sq\n");
        for i in 0..5000 {
            data.push_str(&format!("{i},{}\n", i * i));
        }
        let options = CsvOptions {
            sample_rows: Some(40),
            ..CsvOptions::default()
        };
        let (table, report) = read(&data, &options).unwrap();
        assert_eq!(table.n_rows(), 40);
        assert_eq!(report.sampled_out_rows, 4960);
        let kept: Vec<usize> = table.columns[0]
            .cells
            .iter()
            .map(|c| c.text().parse().unwrap())
            .collect();
        assert!(
            kept.windows(2).all(|w| w[0] < w[1]),
            "rows stay in table order"
        );
        assert!(
            kept.iter().any(|&i| i >= 2500),
            "the sample reaches the second half"
        );
        for (row, &i) in kept.iter().enumerate() {
            assert_eq!(
                table.cell(row, 1).map(Cell::text),
                Some((i * i).to_string().as_str())
            );
        }
        let (again, _) = read(&data, &options).unwrap();
        assert_eq!(again.columns[0].cells, table.columns[0].cells);
        // Fewer rows than the sample size: every row, nothing left out.
        let (small, report) = read("a\n1\n2\n", &options).unwrap();
        assert_eq!((small.n_rows(), report.sampled_out_rows), (2, 0));
    }

    fn read(data: &str, options: &CsvOptions) -> Result<(Table, ReadReport)> {
        read_csv_from_reader(data.as_bytes(), Path::new("t.csv"), "t", options)
    }

    #[test]
    fn header_and_detection() {
        let (table, report) = read("x;y\n1;\"a;b\"\n2;c\n", &CsvOptions::default()).unwrap();
        assert!(report.is_clean());
        assert_eq!(table.n_columns(), 2);
        assert_eq!(table.columns[1].header.as_deref(), Some("y"));
        assert_eq!(table.cell(0, 1).map(Cell::text), Some("a;b"));
        assert!(table.context.has_header_row);
    }

    #[test]
    fn no_header() {
        let options = CsvOptions::default().without_header();
        let (table, _) = read("1,2\n3,4\n", &options).unwrap();
        assert_eq!(table.n_rows(), 2);
        assert_eq!(table.columns[0].header, None);
        assert!(!table.context.has_header_row);
    }

    #[test]
    fn ragged_rows_error_or_pad() {
        let error = read("a,b\n1,2\n3\n", &CsvOptions::default()).unwrap_err();
        assert!(matches!(
            error,
            TableError::RaggedRow {
                line: 3,
                expected: 2,
                found: 1,
                ..
            }
        ));
        let options = CsvOptions {
            ragged_rows: RaggedRows::Pad,
            ..CsvOptions::default()
        };
        let (table, report) = read("a,b\n1,2\n3\n4,5,6\n", &options).unwrap();
        assert_eq!(report.padded_rows, 2);
        assert_eq!(table.n_columns(), 3);
        assert!(table.cell(1, 1).is_some_and(Cell::is_null));
        assert!(table.cell(0, 2).is_some_and(Cell::is_null));
        assert_eq!(table.cell(2, 2).map(Cell::text), Some("6"));
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(matches!(
            read("", &CsvOptions::default()),
            Err(TableError::EmptyTable { .. })
        ));
        assert!(matches!(
            read("\n\n", &CsvOptions::default().without_header()),
            Err(TableError::EmptyTable { .. })
        ));
        // A header without rows is a table with no rows.
        let (table, _) = read("a,b\n", &CsvOptions::default()).unwrap();
        assert_eq!((table.n_columns(), table.n_rows()), (2, 0));
    }

    #[test]
    fn utf16_is_refused_with_the_file_named_in_any_encoding() {
        use crate::TextEncoding;
        let text = "\u{feff}city,country\nKöln,Germany\n";
        let little: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let big: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        for bytes in [little, big] {
            for encoding in [
                TextEncoding::Utf8,
                TextEncoding::Windows1252,
                TextEncoding::Auto,
            ] {
                let options = CsvOptions {
                    read: ReadOptions {
                        encoding,
                        lossy: true,
                        ..ReadOptions::default()
                    },
                    ..CsvOptions::default()
                };
                let path = Path::new("u.csv");
                let error =
                    read_csv_from_reader(bytes.as_slice(), path, "u", &options).unwrap_err();
                let message = error.to_string();
                assert!(matches!(error, TableError::Utf16 { .. }), "{message}");
                assert!(
                    message.starts_with("u.csv: the file is UTF-16"),
                    "{message}"
                );
            }
        }
    }

    #[test]
    fn workbooks_archives_and_pdfs_are_named_and_a_table_headed_par1_still_reads() {
        let read = |bytes: &[u8]| {
            read_csv_from_reader(bytes, Path::new("t.csv"), "t", &CsvOptions::default())
        };
        let refused = |bytes: &[u8]| read(bytes).unwrap_err().to_string();
        let xlsx = refused(b"PK\x03\x04\x14\x00\x06\x00[Content_Types].xml");
        assert_eq!(
            xlsx,
            "t.csv: the file is a zip archive (an .xlsx or .ods workbook is one), not delimited \
             text; save the sheet as CSV (\"CSV UTF-8\" in spreadsheet programs)"
        );
        let xls = refused(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\x00\x00");
        assert!(xls.contains("Excel 97-2003 workbook (.xls)"), "{xls}");
        let gzip = refused(b"\x1F\x8B\x08\x00\x00\x00");
        assert!(
            gzip.contains("gzip-compressed")
                && gzip.contains(".csv.gz")
                && gzip.contains("gunzip -c"),
            "{gzip}"
        );
        let parquet = refused(b"PAR1\x15\x04\x15\x00");
        assert!(parquet.contains("a parquet file"), "{parquet}");
        let pdf = refused(b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n");
        assert!(pdf.contains("a PDF document"), "{pdf}");
        // Text that starts as a printable signature does is a table.
        let (table, _) = read(b"PAR1,PAR2\n1,2\n").unwrap();
        assert_eq!(table.columns[0].header.as_deref(), Some("PAR1"));
        assert!(read(b"%PDF-version,pages\n1.7,3\n").is_ok());
    }
}
