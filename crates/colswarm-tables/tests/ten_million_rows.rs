//! A table of ten million rows, generated at test time (never committed), read with a row
//! sample: memory stays bounded by the sample, not the file. One test per binary so the
//! process-wide peak-memory reading belongs to this test alone.

use std::fs::File;
use std::io::{BufWriter, Write};

use colswarm_tables::{CsvOptions, ReadOptions, read_csv_with_report};

const ROWS: usize = 10_000_000;

/// Peak resident memory of this process, in KiB (Linux; `None` elsewhere).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn ten_million_rows_are_sampled_in_bounded_memory() {
    let path = std::env::temp_dir().join(format!("colswarm-10m-rows-{}.csv", std::process::id()));
    let mut out = BufWriter::new(File::create(&path).unwrap());
    writeln!(out, "id,city,population").unwrap();
    for i in 0..ROWS {
        writeln!(out, "{i},city number {},{}", i % 977, i % 100_003).unwrap();
    }
    out.flush().unwrap();
    drop(out);
    let size = std::fs::metadata(&path).unwrap().len();
    let before = peak_rss_kib();

    let options = CsvOptions {
        sample_rows: Some(1000),
        read: ReadOptions {
            max_rows: usize::MAX,
            ..ReadOptions::default()
        },
        ..CsvOptions::default()
    };
    let result = read_csv_with_report(&path, &options);
    let after = peak_rss_kib();
    std::fs::remove_file(&path).unwrap();
    let (table, report) = result.unwrap();
    assert_eq!(table.n_rows(), 1000);
    assert_eq!(report.sampled_out_rows, ROWS - 1000);
    let ids: Vec<usize> = table.columns[0]
        .cells
        .iter()
        .map(|c| c.text().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(
        *ids.last().unwrap() > ROWS / 2,
        "the sample covers the whole file"
    );
    if let (Some(before), Some(after)) = (before, after) {
        let grown_mib = (after.saturating_sub(before)) / 1024;
        // The file is ~300 MB; reading it whole would take gigabytes of cells.
        assert!(
            grown_mib < 64,
            "peak memory grew by {grown_mib} MiB reading a {} MB file",
            size / 1_000_000
        );
    }
}
