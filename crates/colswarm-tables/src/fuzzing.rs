//! Bodies of the fuzz targets in the workspace's `fuzz/` folder, kept here so they compile
//! (and run, from its `smoke_tests` module, under `cargo test`) as ordinary code. Each one feeds arbitrary bytes to a
//! reader and, when the reader accepts them, checks what the rest of colswarm relies on (CPA
//! targets and the subject column inside the table, the serializer's invariants). They must
//! never panic; a panic is a bug of the reader or the serializer.
//!
//! Readers that take paths (SemTab, T2D, TURL, GitTables) are fed through files in a fresh
//! scratch directory under [`std::env::temp_dir`] (set `TMPDIR=/dev/shm` to keep them in
//! memory); multi-file formats take their files from the input split at NUL bytes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cell::Cell;
use crate::delimited::{CsvOptions, Delimiter, read_csv_from_reader};
use crate::options::ReadOptions;
use crate::semtab::{SemTabLayout, load_semtab};
use crate::serialize::{SerializeConfig, SerializedTable, serialize_table};
use crate::sotab::read_sotab_table_from_reader;
use crate::t2d::load_t2d;
use crate::table::{Column, Table};
use crate::tokenizer::{
    CELL_SEP, COLUMN_SEP, CONTEXT_SEP, HEADER_END, HEADER_START, NULL_CELL, QUERY_END, QUERY_START,
    TABLE_END, TABLE_START, VOCAB_SIZE,
};
use crate::turl::{TurlTask, read_turl_json, read_wikitables_csv};

/// Small limits so fuzzing explores the limit paths too.
fn fuzz_read_options(lossy: bool) -> ReadOptions {
    ReadOptions {
        max_cell_bytes: 256,
        max_record_bytes: 4096,
        max_columns: 64,
        max_rows: 512,
        lossy,
        ..ReadOptions::default()
    }
}

/// Serializes `table` under a small budget and checks what the model relies on.
fn check_serialization(table: &Table) {
    let config = SerializeConfig {
        max_table_tokens: 256,
        max_rows: 8,
        ..SerializeConfig::default()
    };
    check_serializer_invariants(table, &config);
}

/// Checks a table's annotations point inside it: the subject column and both columns of every
/// CPA target exist.
fn check_annotations(table: &Table) {
    let n_columns = table.n_columns();
    assert!(table.subject_column.is_none_or(|s| s < n_columns));
    for target in &table.cpa_targets {
        assert!(target.subject_column < n_columns && target.object_column < n_columns);
    }
}

/// A fresh, empty scratch directory, removed (with what it holds) when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Option<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("colswarm-fuzz-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok()?;
        Some(Scratch(dir))
    }

    /// Writes `bytes` to `name` (a relative path) inside the directory.
    fn write(&self, name: &str, bytes: &[u8]) -> Option<PathBuf> {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).ok()?;
        }
        std::fs::write(&path, bytes).ok()?;
        Some(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The input's NUL-separated parts: at most `n`, the last one keeping any further NULs.
fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.splitn(n, |b| *b == 0).collect()
}

/// CSV reader: detection, header on and off, strict and lossy.
pub fn fuzz_csv(data: &[u8]) {
    for (has_header, lossy, delimiter) in [
        (true, false, Delimiter::Detect),
        (false, true, Delimiter::Detect),
        (true, true, Delimiter::Byte(b';')),
    ] {
        let options = CsvOptions {
            delimiter,
            has_header,
            read: fuzz_read_options(lossy),
            ..CsvOptions::default()
        };
        if let Ok((table, _)) = read_csv_from_reader(data, Path::new("fuzz.csv"), "fuzz", &options)
        {
            check_serialization(&table);
        }
    }
}

/// SOTAB JSON-lines reader, on the bytes as plain JSON lines and as a gzip stream.
pub fn fuzz_sotab_json(data: &[u8]) {
    let path = Path::new("fuzz.json.gz");
    for lossy in [false, true] {
        let options = fuzz_read_options(lossy);
        if let Ok(table) = read_sotab_table_from_reader(data, path, "fuzz", &options) {
            check_serialization(&table);
        }
    }
    let gzip = flate2::read::MultiGzDecoder::new(data);
    if let Ok(table) = read_sotab_table_from_reader(gzip, path, "fuzz", &fuzz_read_options(false)) {
        check_serialization(&table);
    }
}

/// The Python-literal parser behind the WikiTables CSV reader.
pub fn fuzz_python_literal(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::python_literal::parse_python_literal(text);
    }
}

/// SemTab loader. The input's NUL-separated parts are `tables/t0.csv`, `tables/t1.csv`, the CTA
/// targets, the CTA ground truth, the CPA targets and the CPA ground truth (missing parts are
/// absent files). Strict and lossy.
pub fn fuzz_semtab(data: &[u8]) {
    let Some(scratch) = Scratch::new() else {
        return;
    };
    let parts = parts(data, 6);
    let tables_dir = scratch.0.join("tables");
    if std::fs::create_dir_all(&tables_dir).is_err() {
        return;
    }
    let mut layout = SemTabLayout {
        tables_dir,
        ..SemTabLayout::default()
    };
    for (i, part) in parts.iter().enumerate() {
        let name = match i {
            0 => "tables/t0.csv",
            1 => "tables/t1.csv",
            2 => "cta_targets.csv",
            3 => "cta_gt.csv",
            4 => "cpa_targets.csv",
            _ => "cpa_gt.csv",
        };
        let Some(path) = scratch.write(name, part) else {
            return;
        };
        match i {
            2 => layout.cta_targets = Some(path),
            3 => layout.cta_gt = Some(path),
            4 => layout.cpa_targets = Some(path),
            5 => layout.cpa_gt = Some(path),
            _ => {}
        }
    }
    for lossy in [false, true] {
        if let Ok(dataset) = load_semtab(&layout, &fuzz_read_options(lossy)) {
            assert!(dataset.tables.len() <= 2);
            for table in &dataset.tables {
                check_annotations(table);
                check_serialization(table);
            }
        }
    }
}

/// T2D loader. The input's NUL-separated parts are `classes_complete.csv`,
/// `attributes/t0.csv`, `tables/t0.csv`, `attributes/t1.csv` and `tables/t1.csv` (missing parts
/// are absent files). Strict and lossy.
pub fn fuzz_t2d(data: &[u8]) {
    let Some(scratch) = Scratch::new() else {
        return;
    };
    let names = [
        "classes_complete.csv",
        "attributes/t0.csv",
        "tables/t0.csv",
        "attributes/t1.csv",
        "tables/t1.csv",
    ];
    if std::fs::create_dir_all(scratch.0.join("attributes")).is_err() {
        return;
    }
    for (name, part) in names.iter().zip(parts(data, names.len())) {
        if scratch.write(name, part).is_none() {
            return;
        }
    }
    for lossy in [false, true] {
        if let Ok(dataset) = load_t2d(&scratch.0, &fuzz_read_options(lossy)) {
            assert!(dataset.tables.len() <= 2);
            for table in &dataset.tables {
                check_annotations(table);
                check_serialization(table);
            }
            // An annotation is skipped only when its column is outside its table.
            for skipped in &dataset.skipped {
                let stem = skipped.path.file_stem().and_then(|s| s.to_str());
                let table = dataset.tables.iter().find(|t| Some(t.id.as_str()) == stem);
                assert!(table.is_some_and(|t| skipped.column >= t.n_columns()));
            }
        }
    }
}

/// TURL's JSON (`*.table_col_type.json`, `*.table_rel_extraction.json`), read as both tasks.
pub fn fuzz_turl_json(data: &[u8]) {
    let Some(scratch) = Scratch::new() else {
        return;
    };
    let Some(path) = scratch.write("fuzz.json", data) else {
        return;
    };
    for task in [TurlTask::ColumnTypes, TurlTask::Relations] {
        if let Ok(tables) = read_turl_json(&path, task, &fuzz_read_options(false)) {
            for table in &tables {
                check_annotations(table);
                if task == TurlTask::Relations {
                    assert_eq!(table.cpa_targets.len() + 1, table.n_columns());
                }
                check_serialization(table);
            }
        }
    }
}

/// The WikiTables-TURL subset CSV (fields holding Python literals). Strict and lossy.
pub fn fuzz_wikitables_csv(data: &[u8]) {
    let Some(scratch) = Scratch::new() else {
        return;
    };
    let Some(path) = scratch.write("fuzz.csv", data) else {
        return;
    };
    for lossy in [false, true] {
        if let Ok(tables) = read_wikitables_csv(&path, &fuzz_read_options(lossy)) {
            for table in &tables {
                check_annotations(table);
                check_serialization(table);
            }
        }
    }
}

/// GitTables parquet reader (one table per file), with an annotation's labels attached.
/// Strict and lossy.
#[cfg(feature = "parquet")]
pub fn fuzz_gittables_parquet(data: &[u8]) {
    use crate::gittables::{GitTablesAnnotation, read_gittables_parquet};
    let Some(scratch) = Scratch::new() else {
        return;
    };
    let Some(path) = scratch.write("fuzz.parquet", data) else {
        return;
    };
    for lossy in [false, true] {
        let annotation = Some(GitTablesAnnotation::DbpediaSyntactic);
        if let Ok((table, _)) = read_gittables_parquet(&path, annotation, &fuzz_read_options(lossy))
        {
            assert!(table.n_columns() <= 64);
            assert!(table.columns.iter().all(|c| c.labels.len() <= 1));
            check_serialization(&table);
        }
    }
}

/// Small GitTables-like parquet files (string, integer, float, boolean and null cells; plain,
/// dictionary and snappy pages; a `gittables` metadata entry), as seeds for fuzzing.
#[cfg(feature = "parquet")]
pub fn gittables_parquet_seeds() -> Vec<Vec<u8>> {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;

    let metadata = r#"{"table_id":"seed","license":"MIT","dbpedia_syntactic_column_types":{"name":{"cleaned_label":"name","id":"http://dbpedia.org/ontology/name"}},"schema_semantic_column_types":{"year":{"id":"schema:year","cleaned_label":"year"}}}"#;
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "name",
            Arc::new(StringArray::from(vec![Some("Ann"), None, Some("Bob")])),
        ),
        (
            "year",
            Arc::new(Int64Array::from(vec![Some(1815), Some(1912), None])),
        ),
        ("score", Arc::new(Float64Array::from(vec![0.5, -1.0, 2.25]))),
        (
            "ok",
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        ),
    ];
    let mut seeds = Vec::new();
    for (n_columns, compression, dictionary) in [
        (1, Compression::UNCOMPRESSED, false),
        (2, Compression::SNAPPY, true),
        (4, Compression::UNCOMPRESSED, true),
    ] {
        let Ok(batch) = RecordBatch::try_from_iter(columns[..n_columns].iter().cloned()) else {
            continue;
        };
        let properties = WriterProperties::builder()
            .set_compression(compression)
            .set_dictionary_enabled(dictionary)
            .set_key_value_metadata(Some(vec![KeyValue::new(
                "gittables".to_string(),
                metadata.to_string(),
            )]))
            .build();
        let mut bytes = Vec::new();
        let written = ArrowWriter::try_new(&mut bytes, batch.schema(), Some(properties)).and_then(
            |mut writer| {
                writer.write(&batch)?;
                writer.close()
            },
        );
        if written.is_ok() {
            seeds.push(bytes);
        }
    }
    seeds
}

/// Reads little-endian integers and flags off the front of the input.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.0 = rest;
        first
    }

    fn u16(&mut self) -> usize {
        usize::from(self.byte()) | usize::from(self.byte()) << 8
    }
}

/// The serializer on arbitrary tables under arbitrary small budgets.
///
/// The input's first 14 bytes give the [`SerializeConfig`] (every budget from 0 up); the rest,
/// decoded lossily as UTF-8, is the table: columns separated by U+0001, cells by U+0000, a cell
/// `U+0002` is an explicit null, a column starting with U+0003 has no header (else its first
/// cell is the header), and a first column starting with U+0004 holds the context (page title,
/// section, caption).
pub fn fuzz_serialize(data: &[u8]) {
    let mut input = Bytes(data);
    let flags = input.byte();
    let config = SerializeConfig {
        max_table_tokens: input.u16() % 4096,
        max_rows: usize::from(input.byte() % 64),
        max_cell_bytes: usize::from(input.byte()),
        min_cell_bytes: usize::from(input.byte() % 64),
        max_header_bytes: usize::from(input.byte() % 64),
        max_context_bytes: usize::from(input.byte()),
        include_header: flags & 1 == 0,
        include_context: flags & 2 == 0,
        query_cells: usize::from(input.byte() % 8),
        query_cell_bytes: usize::from(input.byte() % 64),
        query_header_bytes: usize::from(input.byte() % 64),
        seed: u64::from(input.byte()) | u64::from(input.byte()) << 8,
    };
    let _ = input.byte();
    let text = String::from_utf8_lossy(input.0);
    let mut chunks = text.split('\u{1}').peekable();
    let mut table = Table::new(format!("fuzz{}", flags >> 2), Vec::new());
    if let Some(context) = chunks.peek().and_then(|c| c.strip_prefix('\u{4}')) {
        let mut fields = context.split('\0').map(str::to_string);
        table.context.page_title = fields.next();
        table.context.section_title = fields.next();
        table.context.caption = fields.next();
        chunks.next();
    }
    for chunk in chunks {
        let (has_header, chunk) = match chunk.strip_prefix('\u{3}') {
            Some(rest) => (false, rest),
            None => (true, chunk),
        };
        let mut cells = chunk.split('\0').map(|c| match c {
            "\u{2}" => Cell::null(),
            text => Cell::new(text),
        });
        let header = if has_header {
            cells.next().map(|c| c.text().to_string())
        } else {
            None
        };
        table.columns.push(Column::new(header, cells.collect()));
    }
    let serialized = check_serializer_invariants(&table, &config);
    assert_eq!(
        serialized,
        serialize_table(&table, &config),
        "deterministic"
    );
}

/// Checks the invariants [`serialize_table`] documents, and returns its output.
///
/// - Every column keeps its span and its query (no column is dropped), in order, with its index.
/// - The table segment is `<table> … </table>`, stays within `max_table_tokens` unless the
///   column skeletons alone exceed it (`over_budget`, and then the output is exactly the
///   skeletons), and all ids are in the vocabulary.
/// - Every query is `<query> index … </query>`.
/// - Text between structure tokens is valid UTF-8 (truncation at char boundaries).
/// - At most `max_rows` rows are sampled, in table order; cells left out or shortened are at
///   most the sampled cells.
fn check_serializer_invariants(table: &Table, config: &SerializeConfig) -> SerializedTable {
    let s = serialize_table(table, config);
    let n_columns = table.n_columns();
    assert_eq!(s.column_queries.len(), n_columns, "a column was dropped");
    assert_eq!(s.column_spans.len(), n_columns, "a column was dropped");

    let headers: Vec<bool> = table
        .columns
        .iter()
        .map(|c| config.include_header && c.header.as_deref().is_some_and(|h| !h.is_empty()))
        .collect();
    let context = &table.context;
    let n_context = if config.include_context
        && (context.page_title.is_some()
            || context.section_title.is_some()
            || context.caption.is_some())
    {
        3
    } else {
        0
    };
    let skeleton = 2
        + n_context
        + headers
            .iter()
            .enumerate()
            .map(|(i, h)| 2 + i.to_string().len() + usize::from(*h))
            .sum::<usize>();
    assert_eq!(s.over_budget, skeleton > config.max_table_tokens);
    if s.over_budget {
        assert_eq!(
            s.table_tokens.len(),
            skeleton,
            "over budget: skeletons only"
        );
    } else {
        assert!(
            s.table_tokens.len() <= config.max_table_tokens,
            "budget exceeded"
        );
    }

    let tokens = &s.table_tokens;
    assert_eq!(tokens.first(), Some(&TABLE_START));
    assert_eq!(tokens.last(), Some(&TABLE_END));
    assert!(tokens.iter().all(|id| (*id as usize) < VOCAB_SIZE));
    let mut previous_end = 1;
    for (index, span) in s.column_spans.iter().enumerate() {
        assert!(previous_end <= span.start && span.end < tokens.len());
        previous_end = span.end;
        let column = &tokens[span.clone()];
        assert_eq!(column.first(), Some(&COLUMN_SEP));
        assert!(starts_with_index(&column[1..], index));
        let structure = column.iter().filter(|t| **t == HEADER_START).count();
        assert_eq!(structure, usize::from(headers[index]));
        assert_eq!(column.iter().filter(|t| **t == HEADER_END).count(), 1);
        assert!(!column.contains(&TABLE_START) && !column.contains(&QUERY_END));
    }
    assert_eq!(
        tokens.iter().filter(|t| **t == CONTEXT_SEP).count(),
        n_context
    );
    for (index, query) in s.column_queries.iter().enumerate() {
        assert_eq!(query.first(), Some(&QUERY_START));
        assert_eq!(query.last(), Some(&QUERY_END));
        assert!(starts_with_index(&query[1..], index));
        assert!(query.iter().all(|id| (*id as usize) < VOCAB_SIZE));
        assert!(text_runs_are_utf8(query));
    }
    assert!(text_runs_are_utf8(tokens));

    check_sampling(table, config, &s);
    s
}

/// At most `max_rows` rows sampled, in table order; cells left out, shortened, null or
/// separated at most the sampled cells.
fn check_sampling(table: &Table, config: &SerializeConfig, s: &SerializedTable) {
    let tokens = &s.table_tokens;
    let n_rows = table.n_rows();
    assert_eq!(s.sampled_rows.len(), n_rows.min(config.max_rows));
    assert!(s.sampled_rows.windows(2).all(|w| w[0] < w[1]));
    assert!(s.sampled_rows.iter().all(|r| *r < n_rows));
    let sampled_cells: usize = table
        .columns
        .iter()
        .map(|c| {
            s.sampled_rows
                .iter()
                .filter(|r| **r < c.cells.len())
                .count()
        })
        .sum();
    assert!(s.omitted_cells <= sampled_cells);
    assert!(s.truncated_cells <= sampled_cells);
    assert!(tokens.iter().filter(|t| **t == NULL_CELL).count() <= sampled_cells);
    assert!(tokens.iter().filter(|t| **t == CELL_SEP).count() <= sampled_cells);
}

/// True when `tokens` starts with the ASCII digits of `index` followed by a non-digit.
fn starts_with_index(tokens: &[u32], index: usize) -> bool {
    let digits = index.to_string();
    let n = digits.len();
    tokens.len() > n
        && tokens[..n]
            .iter()
            .zip(digits.bytes())
            .all(|(t, d)| *t == u32::from(d))
        && !(u32::from(b'0')..=u32::from(b'9')).contains(&tokens[n])
}

/// True when every run of byte tokens between structure tokens is valid UTF-8.
fn text_runs_are_utf8(tokens: &[u32]) -> bool {
    tokens
        .split(|t| *t >= 256)
        .all(|run| std::str::from_utf8(&run.iter().map(|t| *t as u8).collect::<Vec<_>>()).is_ok())
}

#[cfg(test)]
mod smoke_tests;
