//! A SOTAB row holding a 50 MB cell, generated at test time into a gzip file: refused once the
//! line passes `max_record_bytes`, before the rest is read.

use std::fs::File;
use std::io::{BufWriter, Write};

use colswarm_tables::{ReadOptions, TableError, read_sotab_table};
use flate2::{Compression, write::GzEncoder};

#[test]
fn fifty_megabyte_json_row_is_refused() {
    let path = std::env::temp_dir().join(format!(
        "colswarm-big-record-{}_September2020_CTA.json.gz",
        std::process::id()
    ));
    let file = BufWriter::new(File::create(&path).unwrap());
    let mut gzip = GzEncoder::new(file, Compression::fast());
    gzip.write_all(b"{\"0\":\"ok\"}\n{\"0\":\"").unwrap();
    let block = [b'x'; 64 * 1024];
    for _ in 0..(50 << 20) / block.len() {
        gzip.write_all(&block).unwrap();
    }
    gzip.write_all(b"\"}\n").unwrap();
    gzip.finish().unwrap().flush().unwrap();

    let options = ReadOptions::default();
    let error = read_sotab_table(&path, &options).unwrap_err();
    assert!(
        matches!(error, TableError::RecordTooLarge { line: 2, limit, .. } if limit == options.max_record_bytes),
        "{error}"
    );
    assert!(error.to_string().contains("colswarm-big-record"));
    std::fs::remove_file(&path).ok();
}
