//! Hashed character n-gram features of a column: the bag of byte n-grams of its header and
//! first cells, hashed into a fixed number of buckets and L2-normalised.
//!
//! The serialized table a model reads holds a few bytes of each column (a long, wide table
//! gets a dozen bytes per column); these features see the header and up to
//! [`NgramConfig::max_cells`] cells of every column, whatever the table's size. The
//! character n-gram baseline and the swarm's column n-gram embedding both use them.
//!
//! ```
//! use colswarm_tables::{Cell, Column, NgramConfig};
//!
//! let column = Column::new(Some("city".into()), vec![Cell::new("Paris"), Cell::new("Oslo")]);
//! let features = NgramConfig::default().column_features(Some(&column), None);
//! let norm: f32 = features.iter().map(|(_, v)| v * v).sum::<f32>().sqrt();
//! assert!((norm - 1.0).abs() < 1e-5);
//! assert!(features.iter().all(|&(bucket, _)| bucket < NgramConfig::default().buckets));
//! ```

use crate::fnv::{FNV_OFFSET, fnv1a_step};
use crate::table::{Column, Table};

/// Salts keep n-grams of different sources apart in the hash space.
const CELL_SALT: u8 = 0;
const HEADER_SALT: u8 = 1;
const SUBJECT_HEADER_SALT: u8 = 2;
/// Weight of the header block relative to the cell block (each is L2-normalised first, so the
/// header keeps its share however many cells there are).
const HEADER_WEIGHT: f32 = 1.0;
/// Weight of the subject column's header (CPA).
const SUBJECT_HEADER_WEIGHT: f32 = 0.5;
/// Bytes of a cell that give n-grams: long free text adds cost, little signal.
const MAX_CELL_BYTES: usize = 128;
/// Mark the start and the end of a text, so that n-grams can tell prefixes and suffixes.
const START: u8 = 0x02;
const END: u8 = 0x03;

/// A sparse feature vector: `(bucket, value)` pairs, sorted by bucket, buckets unique.
pub type SparseFeatures = Vec<(u32, f32)>;

/// How columns become hashed n-gram features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NgramConfig {
    /// Hash buckets (default 2^14); every bucket id is below it.
    pub buckets: u32,
    /// Shortest n-gram, in bytes (default 2; at least 1).
    pub min_n: usize,
    /// Longest n-gram, in bytes (default 4; at least `min_n`).
    pub max_n: usize,
    /// Non-null cells of a column that give features, the first ones in row order (default 20).
    pub max_cells: usize,
}

impl Default for NgramConfig {
    fn default() -> Self {
        NgramConfig {
            buckets: 1 << 14,
            min_n: 2,
            max_n: 4,
            max_cells: 20,
        }
    }
}

impl NgramConfig {
    /// Features of a column (none when it is missing) and, for a CPA pair, of its subject
    /// column's header: the cell block, the header block and the subject-header block are
    /// each L2-normalised, weighted, summed, and the sum normalised again.
    pub fn column_features(
        &self,
        column: Option<&Column>,
        subject_header: Option<&str>,
    ) -> SparseFeatures {
        let mut blocks = Vec::new();
        if let Some(column) = column {
            let mut cells = Vec::new();
            for cell in non_null(column).take(self.max_cells) {
                self.push_ngrams(&mut cells, CELL_SALT, cell.text());
            }
            blocks.push((counts(cells), 1.0));
            if let Some(header) = &column.header {
                let mut grams = Vec::new();
                self.push_ngrams(&mut grams, HEADER_SALT, header);
                blocks.push((counts(grams), HEADER_WEIGHT));
            }
        }
        if let Some(header) = subject_header {
            let mut grams = Vec::new();
            self.push_ngrams(&mut grams, SUBJECT_HEADER_SALT, header);
            blocks.push((counts(grams), SUBJECT_HEADER_WEIGHT));
        }
        let mut features = sum_blocks(blocks);
        let norm = l2(&features);
        if norm > 0.0 {
            for (_, v) in &mut features {
                *v /= norm;
            }
        }
        features
    }

    /// Features of column `column` of `table` (a column past its end has no text of its own).
    pub fn table_column_features(&self, table: &Table, column: usize) -> SparseFeatures {
        self.for_table(table).column(column, None)
    }

    /// The featurizer of one table's columns.
    pub fn for_table<'t>(&'t self, table: &'t Table) -> TableNgrams<'t> {
        TableNgrams {
            config: self,
            table,
        }
    }

    /// Appends the buckets of the n-grams of the lower-cased `text`, framed by boundary markers.
    fn push_ngrams(&self, out: &mut Vec<u32>, salt: u8, text: &str) {
        let lower = text.trim().to_lowercase();
        if lower.is_empty() {
            return;
        }
        let (min_n, buckets) = (self.min_n.max(1), u64::from(self.buckets.max(1)));
        let max_n = self.max_n.max(min_n);
        let body = &lower.as_bytes()[..lower.len().min(MAX_CELL_BYTES)];
        let mut bytes = Vec::with_capacity(body.len() + 2);
        bytes.push(START);
        bytes.extend_from_slice(body);
        bytes.push(END);
        for start in 0..bytes.len() {
            // FNV-1a, extended one byte at a time so each start yields all its lengths at once.
            let mut hash = fnv1a_step(FNV_OFFSET, salt);
            for (n, &b) in bytes[start..].iter().take(max_n).enumerate() {
                hash = fnv1a_step(hash, b);
                if n + 1 >= min_n {
                    // Below `buckets`, a u32: the cast cannot truncate.
                    out.push((mix(hash) % buckets) as u32);
                }
            }
        }
    }
}

/// The columns of one table, featurized by one configuration: [`NgramConfig::for_table`].
#[derive(Debug)]
pub struct TableNgrams<'t> {
    config: &'t NgramConfig,
    table: &'t Table,
}

impl TableNgrams<'_> {
    /// Features of column `column` (a column past the table's end has no text of its own)
    /// and, for a CPA pair, of its subject column's header.
    pub fn column(&self, column: usize, subject: Option<usize>) -> SparseFeatures {
        let table = self.table;
        let subject_header = subject
            .and_then(|s| table.columns.get(s))
            .and_then(|c| c.header.as_deref());
        self.config
            .column_features(table.columns.get(column), subject_header)
    }
}

/// The sum of the blocks, each L2-normalised and weighted.
fn sum_blocks(blocks: Vec<(SparseFeatures, f32)>) -> SparseFeatures {
    let mut weighted: SparseFeatures = Vec::new();
    for (block, weight) in blocks {
        let norm = l2(&block);
        if norm > 0.0 {
            weighted.extend(block.into_iter().map(|(b, v)| (b, weight * v / norm)));
        }
    }
    merge(weighted)
}

/// `(bucket, value)` pairs sorted by bucket, the values of equal buckets summed. The sort is
/// stable, so equal buckets are summed in the order given: the same sums on every run.
fn merge(mut pairs: SparseFeatures) -> SparseFeatures {
    pairs.sort_by_key(|&(bucket, _)| bucket);
    let mut merged: SparseFeatures = Vec::with_capacity(pairs.len());
    for (bucket, v) in pairs {
        match merged.last_mut() {
            Some((last, sum)) if *last == bucket => *sum += v,
            _ => merged.push((bucket, v)),
        }
    }
    merged
}

/// A column's non-null cells, in row order.
fn non_null(column: &Column) -> impl Iterator<Item = &crate::Cell> {
    column.cells.iter().filter(|c| !c.is_null())
}

/// Bucket list → (bucket, count), sorted by bucket.
fn counts(mut buckets: Vec<u32>) -> SparseFeatures {
    buckets.sort_unstable();
    let mut out: SparseFeatures = Vec::new();
    for bucket in buckets {
        match out.last_mut() {
            Some((last, count)) if *last == bucket => *count += 1.0,
            _ => out.push((bucket, 1.0)),
        }
    }
    out
}

fn l2(features: &[(u32, f32)]) -> f32 {
    features.iter().map(|(_, v)| v * v).sum::<f32>().sqrt()
}

/// SplitMix64's finalizer: FNV's low bits are weak, and the bucket is taken modulo a power of 2.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cell;

    fn column(header: Option<&str>, cells: &[&str]) -> Column {
        Column::new(
            header.map(str::to_string),
            cells.iter().map(|c| Cell::new(*c)).collect(),
        )
    }

    #[test]
    fn features_are_unit_length_and_salted_by_source() {
        let config = NgramConfig::default();
        let f_cells = config.column_features(Some(&column(None, &["Paris"])), None);
        let f_header = config.column_features(Some(&column(Some("Paris"), &[])), None);
        assert!((l2(&f_cells) - 1.0).abs() < 1e-5);
        // "\x02paris\x03": 6 bigrams + 5 trigrams + 4 four-grams, all distinct.
        assert!(f_cells.len() >= 14, "{}", f_cells.len());
        assert_ne!(
            f_cells, f_header,
            "same text in header and cells, other features"
        );
        assert!(config.column_features(None, None).is_empty());
    }

    #[test]
    fn buckets_stay_in_range_and_case_is_ignored() {
        let config = NgramConfig {
            buckets: 7,
            ..NgramConfig::default()
        };
        let upper = config.column_features(Some(&column(Some("ID"), &["ABC", "Ünïcode"])), None);
        let lower = config.column_features(Some(&column(Some("id"), &["abc", "ünïcode"])), None);
        assert!(upper.iter().all(|&(b, _)| b < 7));
        assert_eq!(upper, lower);
        assert!(upper.windows(2).all(|w| w[0].0 < w[1].0), "sorted, unique");
    }

    #[test]
    fn only_the_first_non_null_cells_count() {
        let config = NgramConfig {
            max_cells: 1,
            ..NgramConfig::default()
        };
        let first = config.column_features(Some(&column(None, &["", "alpha", "beta"])), None);
        let alone = config.column_features(Some(&column(None, &["alpha"])), None);
        assert_eq!(first, alone);
    }
}
