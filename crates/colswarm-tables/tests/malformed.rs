//! The malformed-input corpus in `tests/malformed/`: every file gives its own specific error
//! variant, and the message names the file.

use std::path::{Path, PathBuf};

use colswarm_tables::{
    CsvOptions, LabelSet, ReadOptions, ReadTableOptions, SatoCvOptions, SemTabLayout, TableError,
    TurlTask, load_semtab, load_sotab_split, read_csv, read_sato_cv, read_sotab_cta_gt,
    read_sotab_table, read_table_file, read_turl_json, read_wikitables_csv,
};

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/malformed")).join(name)
}

/// Checks that the error names `file` and returns it for matching.
fn named<T: std::fmt::Debug>(result: Result<T, TableError>, file: &Path) -> TableError {
    let error = result.expect_err("malformed input must fail");
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    assert!(
        error.to_string().contains(name),
        "`{error}` should name {name}"
    );
    error
}

fn csv(name: &str) -> TableError {
    let path = corpus(name);
    named(read_csv(&path, &CsvOptions::default()), &path)
}

fn sotab(name: &str) -> TableError {
    let path = corpus(name);
    named(read_sotab_table(&path, &ReadOptions::default()), &path)
}

#[test]
fn csv_tables() {
    assert!(matches!(
        csv("unclosed_quote.csv"),
        TableError::UnclosedQuote {
            line: 2,
            column: 1,
            ..
        }
    ));
    assert!(matches!(
        csv("ragged_row.csv"),
        TableError::RaggedRow {
            line: 3,
            expected: 3,
            found: 2,
            ..
        }
    ));
    assert!(matches!(
        csv("invalid_utf8.csv"),
        TableError::InvalidUtf8 {
            line: 2,
            column: 1,
            byte_offset: 2,
            ..
        }
    ));
    assert!(matches!(csv("empty.csv"), TableError::EmptyTable { .. }));
    // A workbook given by name is read as delimited text, the only format its extension
    // could be: its signature is named, not read as a garbled column.
    let path = corpus("workbook.xlsx");
    let error = named(read_table_file(&path, &ReadTableOptions::default()), &path);
    assert!(
        matches!(error, TableError::NotText { format, .. } if format.contains(".xlsx")),
        "{error}"
    );
    let path = corpus("blank_lines.csv");
    assert!(matches!(
        named(
            read_csv(&path, &CsvOptions::default().without_header()),
            &path
        ),
        TableError::EmptyTable { .. }
    ));
}

#[test]
fn lossy_mode_repairs_utf8_and_counts_it() {
    let options = CsvOptions {
        read: ReadOptions::lossy(),
        ..CsvOptions::default()
    };
    let (table, report) =
        colswarm_tables::read_csv_with_report(corpus("invalid_utf8.csv"), &options).unwrap();
    assert_eq!(report.replaced_bytes, 1);
    assert_eq!(table.cell(0, 1).map(|c| c.text()), Some("Os\u{FFFD}lo"));
}

#[test]
fn sotab_tables() {
    assert!(matches!(
        sotab("truncated_gzip.json.gz"),
        TableError::Gzip { .. }
    ));
    assert!(matches!(sotab("not_gzip.json.gz"), TableError::Gzip { .. }));
    assert!(matches!(
        sotab("row_not_object.json.gz"),
        TableError::JsonShape { line: 2, .. }
    ));
    assert!(matches!(
        sotab("bad_column_key.json.gz"),
        TableError::JsonShape { line: 1, .. }
    ));
    assert!(matches!(
        sotab("invalid_json.json.gz"),
        TableError::Json { line: 2, .. }
    ));
    assert!(matches!(
        sotab("empty_table.json.gz"),
        TableError::EmptyTable { .. }
    ));
    assert!(matches!(
        sotab("huge_column_index.json.gz"),
        TableError::TooManyColumns { .. }
    ));
}

#[test]
fn ground_truth_files() {
    let gt = |name: &str| {
        let path = corpus(name);
        named(read_sotab_cta_gt(&path, &ReadOptions::default()), &path)
    };
    assert!(matches!(
        gt("cta_gt_missing_column.csv"),
        TableError::MissingColumn { .. }
    ));
    assert!(matches!(
        gt("cta_gt_bad_index.csv"),
        TableError::InvalidInteger { line: 2, .. }
    ));
    assert!(matches!(
        gt("cta_gt_short_record.csv"),
        TableError::MissingField {
            line: 2,
            expected: 3,
            found: 2,
            ..
        }
    ));

    let dir = corpus("sotab_split_bad_column");
    let gt_path = dir.join("gt.csv");
    assert!(matches!(
        named(
            load_sotab_split(&dir, Some(&gt_path), None, &ReadOptions::default()),
            &gt_path
        ),
        TableError::ColumnOutOfRange {
            line: 2,
            column: 5,
            n_columns: 2,
            ..
        }
    ));

    let dir = corpus("semtab_unknown_table");
    let layout = SemTabLayout {
        tables_dir: dir.join("tables"),
        cta_gt: Some(dir.join("cta_gt.csv")),
        ..SemTabLayout::default()
    };
    assert!(matches!(
        named(
            load_semtab(&layout, &ReadOptions::default()),
            &dir.join("cta_gt.csv")
        ),
        TableError::UnknownTable { line: 1, .. }
    ));
}

#[test]
fn sato_cv_files() {
    let sato = |name: &str| {
        let path = corpus(name);
        named(read_sato_cv(&path, &SatoCvOptions::gittables()), &path)
    };
    assert!(matches!(
        sato("sato_cv_inconsistent_ids.csv"),
        TableError::InconsistentLabelId {
            line: 3,
            id: 2,
            existing_id: 1,
            ..
        }
    ));
    assert!(matches!(
        sato("sato_cv_bad_class_id.csv"),
        TableError::InvalidInteger { line: 2, .. }
    ));
}

#[test]
fn wikitables_and_turl() {
    let wiki = |name: &str| {
        let path = corpus(name);
        named(read_wikitables_csv(&path, &ReadOptions::default()), &path)
    };
    assert!(matches!(
        wiki("wikitables_bad_literal.csv"),
        TableError::PythonLiteral { line: 2, .. }
    ));
    assert!(matches!(
        wiki("wikitables_wrong_shape.csv"),
        TableError::JsonShape { line: 2, .. }
    ));

    let turl = |name: &str| {
        let path = corpus(name);
        named(
            read_turl_json(&path, TurlTask::ColumnTypes, &ReadOptions::default()),
            &path,
        )
    };
    assert!(matches!(
        turl("turl_not_array.json"),
        TableError::JsonShape { .. }
    ));
    assert!(matches!(
        turl("turl_truncated.json"),
        TableError::Json { .. }
    ));
    assert!(matches!(
        turl("turl_wrong_record.json"),
        TableError::JsonShape { .. }
    ));
}

#[test]
fn label_files() {
    let vocab = |name: &str| {
        let path = corpus(name);
        named(LabelSet::from_id_tsv_file(&path), &path)
    };
    assert!(matches!(
        vocab("vocab_out_of_sequence.txt"),
        TableError::LabelFile { line: 2, .. }
    ));
    assert!(matches!(
        vocab("vocab_no_tab.txt"),
        TableError::LabelFile { line: 1, .. }
    ));
    let path = corpus("text_map_not_object.txt");
    assert!(matches!(
        named(LabelSet::from_text_map_file(&path), &path),
        TableError::Json { .. }
    ));
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_files() {
    let path = corpus("not_parquet.parquet");
    assert!(matches!(
        named(
            colswarm_tables::read_gittables_parquet(&path, None, &ReadOptions::default()),
            &path
        ),
        TableError::Parquet { .. }
    ));
}

/// Found by the `parquet` fuzz target: a GitTables-like file whose embedded Arrow schema (the
/// `ARROW:schema` entry) holds a field of type NONE. arrow-ipc panicked on it; the reader now
/// takes the column types from the parquet schema and never reads that entry.
#[cfg(feature = "parquet")]
#[test]
fn a_corrupt_embedded_arrow_schema_is_ignored() {
    let path = corpus("fuzz_crash_bad_arrow_schema.parquet");
    let (table, metadata) =
        colswarm_tables::read_gittables_parquet(&path, None, &ReadOptions::default()).unwrap();
    assert_eq!(metadata.table_id.as_deref(), Some("seed"));
    assert_eq!(table.columns[0].header.as_deref(), Some("name"));
}

/// Found by the `parquet` fuzz target: a column chunk whose byte range in the footer is
/// negative. The parquet crate asserted (a panic) when it came to read the chunk; the reader now
/// checks every chunk's range against the file first.
#[cfg(feature = "parquet")]
#[test]
fn a_column_chunk_outside_the_file_is_refused() {
    let path = corpus("fuzz_crash_negative_chunk_range.parquet");
    let error = named(
        colswarm_tables::read_gittables_parquet(&path, None, &ReadOptions::default()),
        &path,
    );
    assert!(
        matches!(&error, TableError::Parquet { message, .. } if message.contains("not inside the file")),
        "{error}"
    );
}

/// Found by the `parquet` fuzz target: a data page whose definition levels run past their
/// buffer. The parquet crate panics while decoding it (`offset + len out of bounds` in
/// arrow-buffer); the reader catches panics of the decoder and returns an error.
#[cfg(feature = "parquet")]
#[test]
fn a_panic_of_the_parquet_decoder_is_an_error() {
    let path = corpus("fuzz_crash_bad_definition_levels.parquet");
    let error = named(
        colswarm_tables::read_gittables_parquet(&path, None, &ReadOptions::default()),
        &path,
    );
    assert!(
        matches!(&error, TableError::Parquet { message, .. } if message.contains("decoder panicked")),
        "{error}"
    );
}

/// Found by the `parquet` fuzz target (a hang: 15 s per read under the fuzzer, hours for
/// nested variants): a page header holding a list that claims 2³¹ booleans in a few bytes, which
/// parquet 59's thrift skipper loops over without reading. The reader walks every page header
/// first and refuses it.
#[cfg(feature = "parquet")]
#[test]
fn a_page_header_claiming_billions_of_values_is_refused() {
    let path = corpus("fuzz_hang_boolean_list_page_header.parquet");
    let started = std::time::Instant::now();
    let error = named(
        colswarm_tables::read_gittables_parquet(&path, None, &ReadOptions::default()),
        &path,
    );
    assert!(
        matches!(&error, TableError::Parquet { message, .. } if message.contains("thrift values")),
        "{error}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

/// Found by the `parquet` fuzz target (out of memory: an 11 GB allocation): a 610-byte file
/// whose schema element claims about 2³⁰ children; parquet 59 reserves room for them before
/// checking. The reader checks the schema first.
#[cfg(feature = "parquet")]
#[test]
fn a_schema_element_claiming_more_children_than_the_schema_holds_is_refused() {
    let path = corpus("fuzz_oom_schema_children.parquet");
    let error = named(
        colswarm_tables::read_gittables_parquet(&path, None, &ReadOptions::default()),
        &path,
    );
    assert!(
        matches!(&error, TableError::Parquet { message, .. } if message.contains("children")),
        "{error}"
    );
}

#[test]
fn missing_file_is_an_io_error() {
    let path = corpus("does_not_exist.csv");
    assert!(matches!(
        named(read_csv(&path, &CsvOptions::default()), &path),
        TableError::Io { .. }
    ));
}
