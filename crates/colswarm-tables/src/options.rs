//! Limits and lossy-mode settings shared by every reader, and the report of what lossy mode
//! changed.

use crate::encoding::TextEncoding;

/// Limits that keep memory bounded on hostile or broken input, and the strict/lossy switch.
///
/// Strict mode (the default) turns every problem into a [`TableError`](crate::TableError).
/// Lossy mode repairs two kinds of problem instead, and counts them in a [`ReadReport`]:
/// - invalid UTF-8 bytes are replaced with U+FFFD;
/// - cells longer than `max_cell_bytes` are truncated (at a char boundary) while the rest of
///   the cell is streamed past without being stored, so memory stays bounded.
///
/// Structural problems (ragged rows unless padding is asked for, unclosed quotes, bad JSON,
/// too many columns or rows, JSON-lines records over `max_record_bytes`) are errors in both
/// modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Largest cell kept, in bytes (default 1 MiB).
    pub max_cell_bytes: usize,
    /// Largest JSON-lines record (one SOTAB row), in bytes (default 16 MiB). A record is read
    /// whole before it is parsed, so this bounds the memory a single line may take.
    pub max_record_bytes: usize,
    /// Most columns a table may have (default 16,384).
    pub max_columns: usize,
    /// Most rows a table may have (default 10,000,000); also bounds row indices in formats
    /// that place cells by index (TURL).
    pub max_rows: usize,
    /// Repair instead of failing (see above).
    pub lossy: bool,
    /// How delimited files' cells are decoded (default UTF-8); JSON and parquet are UTF-8 by
    /// their formats' definitions and ignore it.
    pub encoding: TextEncoding,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_cell_bytes: 1 << 20,
            max_record_bytes: 16 << 20,
            max_columns: 16_384,
            max_rows: 10_000_000,
            lossy: false,
            encoding: TextEncoding::Utf8,
        }
    }
}

impl ReadOptions {
    /// The defaults with lossy mode on.
    pub fn lossy() -> Self {
        ReadOptions {
            lossy: true,
            ..ReadOptions::default()
        }
    }
}

/// What a reader changed or tolerated while reading (all zero in strict mode, except
/// `padded_rows` when padding ragged rows was asked for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Invalid UTF-8 bytes replaced with U+FFFD (lossy mode).
    pub replaced_bytes: usize,
    /// Cells that were not UTF-8, read as Windows-1252 (`TextEncoding::Auto`).
    pub windows_1252_cells: usize,
    /// Cells truncated to `max_cell_bytes` (lossy mode).
    pub truncated_cells: usize,
    /// Rows shorter or longer than the widest row, padded with null cells.
    pub padded_rows: usize,
    /// Rows read but left out of a row sample (`CsvOptions::sample_rows`).
    pub sampled_out_rows: usize,
}

impl ReadReport {
    /// Adds another report's counts to this one.
    pub fn merge(&mut self, other: ReadReport) {
        self.replaced_bytes += other.replaced_bytes;
        self.windows_1252_cells += other.windows_1252_cells;
        self.truncated_cells += other.truncated_cells;
        self.padded_rows += other.padded_rows;
        self.sampled_out_rows += other.sampled_out_rows;
    }

    /// True when nothing was changed.
    pub fn is_clean(&self) -> bool {
        *self == ReadReport::default()
    }

    /// The repairs alone: what reading changed in the cells and rows it kept (everything but
    /// the rows a sample left out, which every long table has).
    pub fn repairs(&self) -> ReadReport {
        ReadReport {
            sampled_out_rows: 0,
            ..*self
        }
    }
}

/// The non-zero counts in words, comma-separated (`2 invalid UTF-8 bytes replaced with U+FFFD,
/// 3 ragged rows padded with empty cells`); empty for a clean report.
impl std::fmt::Display for ReadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = [
            (
                self.replaced_bytes,
                "invalid UTF-8 byte",
                "replaced with U+FFFD",
            ),
            (self.windows_1252_cells, "cell", "read as Windows-1252"),
            (self.truncated_cells, "cell", "cut at the cell size limit"),
            (self.padded_rows, "ragged row", "padded with empty cells"),
            (self.sampled_out_rows, "row", "left out of the row sample"),
        ];
        let mut first = true;
        for (count, noun, what) in counts {
            if count == 0 {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            let plural = if count == 1 { "" } else { "s" };
            write!(f, "{count} {noun}{plural} {what}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts() {
        let mut report = ReadReport::default();
        assert!(report.is_clean());
        report.merge(ReadReport {
            replaced_bytes: 2,
            windows_1252_cells: 5,
            truncated_cells: 1,
            padded_rows: 3,
            sampled_out_rows: 4,
        });
        report.merge(ReadReport {
            replaced_bytes: 1,
            ..ReadReport::default()
        });
        assert_eq!(report.replaced_bytes, 3);
        assert_eq!(report.windows_1252_cells, 5);
        assert!(!report.is_clean());
        let repairs = report.repairs();
        assert_eq!((repairs.sampled_out_rows, repairs.replaced_bytes), (0, 3));
        let sampled_only = ReadReport {
            sampled_out_rows: 9,
            ..ReadReport::default()
        };
        assert!(sampled_only.repairs().is_clean());
        assert!(ReadOptions::lossy().lossy);
    }

    #[test]
    fn a_report_says_its_non_zero_counts_in_words() {
        assert_eq!(ReadReport::default().to_string(), "");
        let report = ReadReport {
            replaced_bytes: 1,
            padded_rows: 3,
            sampled_out_rows: 4000,
            ..ReadReport::default()
        };
        assert_eq!(
            report.to_string(),
            "1 invalid UTF-8 byte replaced with U+FFFD, 3 ragged rows padded with empty cells, \
             4000 rows left out of the row sample"
        );
        let report = ReadReport {
            windows_1252_cells: 2,
            truncated_cells: 1,
            ..ReadReport::default()
        };
        assert_eq!(
            report.to_string(),
            "2 cells read as Windows-1252, 1 cell cut at the cell size limit"
        );
    }
}
