//! Bodies of the fuzz targets in the workspace's `fuzz/` folder, kept here so they compile
//! (and run, from `tests/fuzz_smoke.rs`) as ordinary code. Each one feeds arbitrary bytes to a
//! reader and, when the reader accepts them, checks the serializer's invariants. They must
//! never panic.

use std::path::Path;

use crate::delimited::{CsvOptions, Delimiter, read_csv_from_reader};
use crate::options::ReadOptions;
use crate::serialize::{SerializeConfig, serialize_table};
use crate::sotab::read_sotab_table_from_reader;
use crate::table::Table;
use crate::tokenizer::{QUERY_END, VOCAB_SIZE};

/// Small limits so fuzzing explores the limit paths too.
fn fuzz_read_options(lossy: bool) -> ReadOptions {
    ReadOptions {
        max_cell_bytes: 256,
        max_record_bytes: 4096,
        max_columns: 64,
        max_rows: 512,
        lossy,
    }
}

/// Serializes `table` under a small budget and checks what the model relies on.
fn check_serialization(table: &Table) {
    let config = SerializeConfig {
        max_table_tokens: 256,
        max_rows: 8,
        ..SerializeConfig::default()
    };
    let serialized = serialize_table(table, &config);
    assert_eq!(serialized.column_queries.len(), table.n_columns());
    assert!(serialized.over_budget || serialized.table_tokens.len() <= config.max_table_tokens);
    for query in &serialized.column_queries {
        assert_eq!(query.last(), Some(&QUERY_END));
    }
    let in_vocabulary = |id: &u32| (*id as usize) < VOCAB_SIZE;
    assert!(serialized.table_tokens.iter().all(in_vocabulary));
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
