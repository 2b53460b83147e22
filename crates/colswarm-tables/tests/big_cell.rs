//! A 50 MB cell, generated at test time (never committed): strict mode refuses it, lossy mode
//! truncates it, and neither holds it in memory. One test per binary so the process-wide
//! peak-memory reading belongs to this test alone.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use colswarm_tables::{CsvOptions, ReadOptions, TableError, read_csv, read_csv_with_report};

const CELL_BYTES: usize = 50 << 20;

/// Peak resident memory of this process, in KiB (Linux; `None` elsewhere).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn write_big_csv() -> PathBuf {
    let path = std::env::temp_dir().join(format!("colswarm-big-cell-{}.csv", std::process::id()));
    let mut out = BufWriter::new(File::create(&path).unwrap());
    out.write_all(b"id,text\n1,\"").unwrap();
    let block = [b'x'; 64 * 1024];
    for _ in 0..CELL_BYTES / block.len() {
        out.write_all(&block).unwrap();
    }
    out.write_all(b"\"\n2,short\n").unwrap();
    out.flush().unwrap();
    path
}

#[test]
fn fifty_megabyte_cell_is_refused_or_truncated_with_bounded_memory() {
    let path = write_big_csv();
    let before = peak_rss_kib();

    let error = read_csv(&path, &CsvOptions::default()).unwrap_err();
    assert!(
        matches!(error, TableError::CellTooLarge { line: 2, column: 1, limit, .. } if limit == 1 << 20),
        "{error}"
    );

    let lossy = CsvOptions {
        read: ReadOptions::lossy(),
        ..CsvOptions::default()
    };
    let (table, report) = read_csv_with_report(&path, &lossy).unwrap();
    assert_eq!(report.truncated_cells, 1);
    assert_eq!(table.cell(0, 1).map(|c| c.text().len()), Some(1 << 20));
    assert_eq!(table.cell(1, 1).map(|c| c.text()), Some("short"));

    if let (Some(before), Some(after)) = (before, peak_rss_kib()) {
        // The cell is 50 MiB; reading it may cost the 1 MiB kept plus buffers, not the cell.
        assert!(
            after - before < 16 * 1024,
            "peak grew by {} KiB",
            after - before
        );
    }
    std::fs::remove_file(&path).ok();
}
