//! A streaming CSV record reader with bounded memory, built on `csv-core` (the parser under
//! the `csv` crate).
//!
//! Why not `csv::Reader`: it grows its record buffer to whatever a field needs, so a 50 MB
//! cell costs 50 MB before any limit can be checked. Driving `csv-core` directly lets every
//! cell be capped at `max_cell_bytes` as it streams past (error in strict mode, truncation in
//! lossy mode), and lets us track lines and unclosed quotes ourselves.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use csv_core::{ReadFieldResult, Reader as CoreReader, ReaderBuilder};

use crate::encoding::{TextEncoding, decode_windows_1252};
use crate::error::{Result, TableError};
use crate::options::{ReadOptions, ReadReport};

const CHUNK_BYTES: usize = 8 * 1024;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads CSV records one at a time as owned strings.
pub(crate) struct RecordReader<R> {
    path: PathBuf,
    input: R,
    parser: CoreReader,
    options: ReadOptions,
    quote: u8,
    chunk: Box<[u8]>,
    field: Vec<u8>,
    field_truncated: bool,
    tracker: Tracker,
    at_start: bool,
    eof: bool,
    done: bool,
    report: ReadReport,
}

impl<R: BufRead> RecordReader<R> {
    /// A reader over `input`; `path` only names the source in errors.
    pub(crate) fn new(input: R, path: &Path, delimiter: u8, options: ReadOptions) -> Self {
        let quote = b'"';
        RecordReader {
            path: path.to_path_buf(),
            input,
            parser: core_reader(delimiter),
            options,
            quote,
            chunk: vec![0; CHUNK_BYTES].into_boxed_slice(),
            field: Vec::new(),
            field_truncated: false,
            tracker: Tracker::default(),
            at_start: true,
            eof: false,
            done: false,
            report: ReadReport::default(),
        }
    }

    /// What lossy mode changed so far.
    pub(crate) fn report(&self) -> ReadReport {
        self.report
    }

    /// Reads the next record into `record` (cleared first). Returns the 1-based line the
    /// record starts on, or `None` at the end of the input.
    pub(crate) fn next_record(&mut self, record: &mut Vec<String>) -> Result<Option<u64>> {
        record.clear();
        self.tracker.record_line = None;
        if self.done {
            return Ok(None);
        }
        loop {
            let input: &[u8] = if self.eof {
                &[]
            } else {
                let buffer = self
                    .input
                    .fill_buf()
                    .map_err(|e| TableError::read(&self.path, e))?;
                if buffer.is_empty() {
                    self.eof = true;
                }
                buffer
            };
            // A UTF-8 byte order mark is not part of the first field.
            let bom = if self.at_start && input.starts_with(UTF8_BOM) {
                UTF8_BOM.len()
            } else {
                0
            };
            let ended_at_eof = input.is_empty();
            let (result, consumed, written) =
                self.parser.read_field(&input[bom..], &mut self.chunk);
            track_field_bytes(&input[bom..bom + consumed], self.quote, &mut self.tracker);
            if !self.eof {
                self.input.consume(bom + consumed);
            }
            if bom + consumed > 0 {
                self.at_start = false;
            }
            self.append_output(written, record.len())?;
            match result {
                ReadFieldResult::InputEmpty | ReadFieldResult::OutputFull => {}
                ReadFieldResult::Field { record_end } => {
                    let column = record.len();
                    if column >= self.options.max_columns {
                        return Err(TableError::TooManyColumns {
                            path: self.path.clone(),
                            line: self.line(),
                            found: column + 1,
                            limit: self.options.max_columns,
                        });
                    }
                    if ended_at_eof
                        && self.tracker.field_first_byte == Some(self.quote)
                        && self.tracker.field_quotes % 2 == 1
                    {
                        return Err(TableError::UnclosedQuote {
                            path: self.path.clone(),
                            line: self.line(),
                            column,
                        });
                    }
                    let text = self.finish_field(column)?;
                    record.push(text);
                    if record_end {
                        return Ok(Some(self.line()));
                    }
                }
                ReadFieldResult::End => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
    }

    fn line(&self) -> u64 {
        self.tracker
            .record_line
            .unwrap_or(self.tracker.newlines + 1)
    }

    /// Appends parser output to the current field, enforcing `max_cell_bytes`.
    fn append_output(&mut self, written: usize, column: usize) -> Result<()> {
        if written == 0 {
            return Ok(());
        }
        let limit = self.options.max_cell_bytes;
        let room = limit.saturating_sub(self.field.len());
        if written > room {
            if !self.options.lossy {
                return Err(TableError::CellTooLarge {
                    path: self.path.clone(),
                    line: self.line(),
                    column,
                    limit,
                });
            }
            // Lossy: keep the first `limit` bytes, stream past the rest.
            self.field.extend_from_slice(&self.chunk[..room]);
            self.field_truncated = true;
        } else {
            self.field.extend_from_slice(&self.chunk[..written]);
        }
        Ok(())
    }

    /// Turns the finished field's bytes into a string and resets the field state.
    fn finish_field(&mut self, column: usize) -> Result<String> {
        let truncated = std::mem::take(&mut self.field_truncated);
        self.tracker.field_first_byte = None;
        self.tracker.field_quotes = 0;
        if truncated {
            self.report.truncated_cells += 1;
            if !self.options.encoding.is_single_byte() {
                trim_partial_char(&mut self.field);
            }
        }
        let bytes = std::mem::take(&mut self.field);
        let line = self.line();
        decode_cell(bytes, &self.options, &mut self.report, |byte_offset| {
            TableError::InvalidUtf8 {
                path: self.path.clone(),
                line,
                column,
                byte_offset,
            }
        })
    }
}

/// Where the parser is in the input: lines seen, the current record's first line, and the
/// current field's first byte and quote count (so an unclosed quote at the end of the input
/// can be reported; csv-core accepts it silently).
#[derive(Debug, Default)]
struct Tracker {
    newlines: u64,
    record_line: Option<u64>,
    field_first_byte: Option<u8>,
    field_quotes: usize,
}

/// Updates the tracker with the bytes the parser just consumed (one pass; the CR/LF left over
/// from the previous record's terminator does not start a record or a field).
fn track_field_bytes(consumed: &[u8], quote: u8, tracker: &mut Tracker) {
    let mut rest = consumed;
    if tracker.record_line.is_none() || tracker.field_first_byte.is_none() {
        match rest.iter().position(|b| *b != b'\n' && *b != b'\r') {
            Some(first) => {
                tracker.newlines += count_newlines(&rest[..first]);
                tracker.record_line.get_or_insert(tracker.newlines + 1);
                tracker.field_first_byte.get_or_insert(rest[first]);
                rest = &rest[first..];
            }
            None => {
                tracker.newlines += count_newlines(rest);
                return;
            }
        }
    }
    let (newlines, quotes) = rest.iter().fold((0u64, 0usize), |(n, q), b| {
        (n + u64::from(*b == b'\n'), q + usize::from(*b == quote))
    });
    tracker.newlines += newlines;
    tracker.field_quotes += quotes;
}

fn count_newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

/// Drops an incomplete UTF-8 sequence left at the end by truncation.
pub(crate) fn trim_partial_char(bytes: &mut Vec<u8>) {
    if let Err(error) = std::str::from_utf8(bytes)
        && error.error_len().is_none()
    {
        bytes.truncate(error.valid_up_to());
    }
}

/// Decodes a cell in the options' encoding: in UTF-8, strict mode fails on invalid bytes (via
/// `invalid`) and lossy mode replaces them with U+FFFD and counts them; Windows-1252 decodes
/// every byte; `auto` decodes a cell that is not UTF-8 as Windows-1252 and counts it.
pub(crate) fn decode_cell(
    bytes: Vec<u8>,
    options: &ReadOptions,
    report: &mut ReadReport,
    invalid: impl FnOnce(usize) -> TableError,
) -> Result<String> {
    if options.encoding == TextEncoding::Windows1252 {
        return Ok(decode_windows_1252(&bytes));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(error) if options.encoding == TextEncoding::Auto => {
            report.windows_1252_cells += 1;
            Ok(decode_windows_1252(error.as_bytes()))
        }
        Err(error) if options.lossy => {
            let bytes = error.into_bytes();
            let mut text = String::with_capacity(bytes.len());
            for chunk in bytes.utf8_chunks() {
                text.push_str(chunk.valid());
                if !chunk.invalid().is_empty() {
                    report.replaced_bytes += chunk.invalid().len();
                    text.push(char::REPLACEMENT_CHARACTER);
                }
            }
            Ok(text)
        }
        Err(error) => Err(invalid(error.utf8_error().valid_up_to())),
    }
}

/// Delimiters tried by detection.
const COMMON_DELIMITERS: [u8; 4] = [b',', b'\t', b';', b'|'];

/// A fresh csv-core parser for `delimiter`.
fn core_reader(delimiter: u8) -> CoreReader {
    ReaderBuilder::new()
        .delimiter(delimiter)
        .quote(b'"')
        .build()
}

/// Guesses the delimiter from a sample: the candidate that splits the sample's records into
/// the most consistent number of fields (more than one) wins; comma when nothing fits.
pub(crate) fn detect_delimiter(sample: &[u8]) -> u8 {
    const RECORDS: usize = 20;
    let sample = sample.strip_prefix(UTF8_BOM).unwrap_or(sample);
    let counts = field_counts(sample, RECORDS);
    let mut best = (b',', 0usize, 0usize);
    for (candidate, counts) in COMMON_DELIMITERS.iter().zip(&counts) {
        let Some(mode) = mode(counts) else {
            continue;
        };
        if mode < 2 {
            continue;
        }
        let agreeing = counts.iter().filter(|c| **c == mode).count();
        if (agreeing, mode) > (best.1, best.2) {
            best = (*candidate, agreeing, mode);
        }
    }
    best.0
}

/// Fields per record, for each common delimiter, over the first `limit` complete records of
/// `sample`. One quote-aware pass: building a csv-core parser per candidate would cost more
/// than parsing a small table.
fn field_counts(sample: &[u8], limit: usize) -> [Vec<usize>; 4] {
    let mut counts: [Vec<usize>; 4] = Default::default();
    let mut fields = [1usize; 4];
    let mut in_quotes = false;
    let mut record_has_bytes = false;
    let mut records = 0;
    for &byte in sample {
        if records >= limit {
            break;
        }
        if byte == b'"' {
            in_quotes = !in_quotes;
        } else if !in_quotes && (byte == b'\n' || byte == b'\r') {
            if record_has_bytes {
                for (list, n) in counts.iter_mut().zip(&fields) {
                    list.push(*n);
                }
                records += 1;
            }
            fields = [1; 4];
            record_has_bytes = false;
            continue;
        } else if !in_quotes && let Some(at) = COMMON_DELIMITERS.iter().position(|d| *d == byte) {
            fields[at] += 1;
        }
        record_has_bytes = true;
    }
    counts
}

fn mode(counts: &[usize]) -> Option<usize> {
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    let mut best: Option<(usize, usize)> = None;
    for run in sorted.chunk_by(|a, b| a == b) {
        if best.is_none_or(|(_, n)| run.len() > n) {
            best = Some((run[0], run.len()));
        }
    }
    best.map(|(value, _)| value)
}

/// Opens a delimited file as a record reader.
/// A `.gz` file is read through a gzip decoder.
pub(crate) fn open_records(
    path: &Path,
    delimiter: u8,
    options: ReadOptions,
) -> Result<RecordReader<Box<dyn BufRead + Send>>> {
    let input = crate::compressed::open_input(path)?;
    Ok(RecordReader::new(input, path, delimiter, options))
}

/// Positions of the required `names` in a header record.
pub(crate) fn header_positions(
    path: &Path,
    header: &[String],
    names: &[&str],
) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|name| {
            header
                .iter()
                .position(|h| h.trim() == *name)
                .ok_or_else(|| TableError::MissingColumn {
                    path: path.into(),
                    column_name: (*name).to_string(),
                })
        })
        .collect()
}

/// The field at `position`, or an error naming the line when the record is too short.
pub(crate) fn field<'r>(
    path: &Path,
    line: u64,
    record: &'r [String],
    position: usize,
) -> Result<&'r str> {
    record
        .get(position)
        .map(String::as_str)
        .ok_or_else(|| TableError::MissingField {
            path: path.into(),
            line,
            expected: position + 1,
            found: record.len(),
        })
}

/// Parses a non-negative integer field.
pub(crate) fn parse_index(path: &Path, line: u64, field_name: &str, text: &str) -> Result<usize> {
    text.trim().parse().map_err(|_| TableError::InvalidInteger {
        path: path.into(),
        line,
        field: field_name.to_string(),
        value: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(data: &[u8], options: ReadOptions) -> Result<Vec<(u64, Vec<String>)>> {
        let mut reader = RecordReader::new(data, Path::new("mem.csv"), b',', options);
        let mut record = Vec::new();
        let mut out = Vec::new();
        while let Some(line) = reader.next_record(&mut record)? {
            out.push((line, record.clone()));
        }
        Ok(out)
    }

    #[test]
    fn lines_quotes_crlf_and_bom() {
        let data = b"\xEF\xBB\xBFa,b\r\n\"x\r\ny\",\"q\"\"q\"\r\n\r\nlast,1";
        let records = read_all(data, ReadOptions::default()).unwrap();
        assert_eq!(records[0], (1, vec!["a".into(), "b".into()]));
        assert_eq!(records[1], (2, vec!["x\r\ny".into(), "q\"q".into()]));
        assert_eq!(records[2], (5, vec!["last".into(), "1".into()]));
    }

    #[test]
    fn unclosed_quote_is_an_error() {
        let error = read_all(b"a,b\n1,\"open\n2,3\n", ReadOptions::default()).unwrap_err();
        assert!(
            matches!(
                error,
                TableError::UnclosedQuote {
                    line: 2,
                    column: 1,
                    ..
                }
            ),
            "{error}"
        );
        // A quote inside an unquoted field is literal, not an error.
        let records = read_all(b"a,5\" pipe\n", ReadOptions::default()).unwrap();
        assert_eq!(records[0].1[1], "5\" pipe");
    }

    #[test]
    fn oversized_cell_errors_or_truncates() {
        let big = format!("a,{}\n", "é".repeat(40));
        let options = ReadOptions {
            max_cell_bytes: 15,
            ..ReadOptions::default()
        };
        let error = read_all(big.as_bytes(), options).unwrap_err();
        assert!(matches!(error, TableError::CellTooLarge { column: 1, .. }));
        let lossy = ReadOptions {
            lossy: true,
            ..options
        };
        let mut reader = RecordReader::new(big.as_bytes(), Path::new("m"), b',', lossy);
        let mut record = Vec::new();
        reader.next_record(&mut record).unwrap();
        // 15 bytes cut back to a char boundary: 7 two-byte chars.
        assert_eq!(record[1], "é".repeat(7));
        assert_eq!(reader.report().truncated_cells, 1);
    }

    #[test]
    fn a_windows_1252_cell_is_cut_at_any_byte_and_never_invalid() {
        // Five Windows-1252 `é`s, one byte each: a 3-byte cap keeps three characters.
        let data = b"a,\xe9\xe9\xe9\xe9\xe9,\xff\xfe\n";
        let options = ReadOptions {
            max_cell_bytes: 3,
            lossy: true,
            encoding: TextEncoding::Windows1252,
            ..ReadOptions::default()
        };
        let mut reader = RecordReader::new(&data[..], Path::new("m"), b',', options);
        let mut record = Vec::new();
        reader.next_record(&mut record).unwrap();
        assert_eq!(record, ["a", "ééé", "ÿþ"]);
        assert_eq!(reader.report().truncated_cells, 1);
        assert_eq!(reader.report().replaced_bytes, 0);
    }

    #[test]
    fn invalid_utf8_strict_and_lossy() {
        let data = b"ok,bad\xFF\xFEcell\n";
        let error = read_all(data, ReadOptions::default()).unwrap_err();
        assert!(matches!(
            error,
            TableError::InvalidUtf8 {
                line: 1,
                column: 1,
                byte_offset: 3,
                ..
            }
        ));
        let mut reader = RecordReader::new(&data[..], Path::new("m"), b',', ReadOptions::lossy());
        let mut record = Vec::new();
        reader.next_record(&mut record).unwrap();
        assert_eq!(record[1], "bad\u{FFFD}\u{FFFD}cell");
        assert_eq!(reader.report().replaced_bytes, 2);
    }

    #[test]
    fn auto_reads_each_cell_as_utf8_where_it_is_and_as_windows_1252_elsewhere() {
        // A UTF-8 `Zürich`, a Windows-1252 `München` and `€ 5`, and ASCII.
        let data = b"Z\xc3\xbcrich,M\xfcnchen\n\x80 5,plain\n";
        let options = ReadOptions {
            encoding: TextEncoding::Auto,
            ..ReadOptions::default()
        };
        let mut reader = RecordReader::new(&data[..], Path::new("m"), b',', options);
        let mut record = Vec::new();
        reader.next_record(&mut record).unwrap();
        assert_eq!(record, ["Zürich", "München"]);
        reader.next_record(&mut record).unwrap();
        assert_eq!(record, ["€ 5", "plain"]);
        assert_eq!(reader.report().windows_1252_cells, 2);
        assert_eq!(reader.report().replaced_bytes, 0);
    }

    #[test]
    fn delimiter_detection() {
        assert_eq!(detect_delimiter(b"a;b;c\n1;2;3\n4;5;6\n"), b';');
        assert_eq!(detect_delimiter(b"a\tb\n1\t2\n"), b'\t');
        assert_eq!(detect_delimiter(b"a,b\n\"1;2\",3\n"), b',');
        assert_eq!(detect_delimiter(b"single\ncolumn\n"), b',');
    }
}
