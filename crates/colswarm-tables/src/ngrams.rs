//! Hashed character n-gram features of a column: the bag of byte n-grams of its header and
//! first cells, hashed into a fixed number of buckets and L2-normalised.
//!
//! The serialized table a model reads holds a few bytes of each column (a long, wide table
//! gets a dozen bytes per column); these features see the header and up to
//! [`NgramConfig::max_cells`] cells of every column, whatever the table's size. The
//! character n-gram baseline and the swarm's column n-gram embedding both use them.
//!
//! With [`NgramConfig::neighbours`] a column's features also hold its table's other columns:
//! their headers and first cells, in blocks of their own. A `Name` column beside `Film` and
//! `Role` is an actor; beside `Party` and `Votes`, a politician. With
//! [`NgramConfig::position`] they hold the column's place in its table: a model reads it from
//! the column's query, and the n-gram peers need it to be compared with one fairly.
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

use std::cell::RefCell;
use std::collections::HashMap;

use crate::bucket_sort::sort_by_bucket;
use crate::fnv::{FNV_OFFSET, fnv1a_step};
use crate::table::{Column, Table};
use crate::value_stats::value_statistics;

/// Salts keep n-grams of different sources apart in the hash space.
const CELL_SALT: u8 = 0;
const HEADER_SALT: u8 = 1;
const SUBJECT_HEADER_SALT: u8 = 2;
const NEIGHBOUR_HEADER_SALT: u8 = 4;
const NEIGHBOUR_CELL_SALT: u8 = 5;
const VALUE_STATS_SALT: u8 = 6;
// 7 was the salt of a block of cell shapes (docs/EXPERIMENTS.md), tried and removed.
const POSITION_SALT: u8 = 8;
/// Weight of the header block relative to the cell block (each is L2-normalised first, so the
/// header keeps its share however many cells there are).
const HEADER_WEIGHT: f32 = 1.0;
/// Weight of the subject column's header (CPA).
const SUBJECT_HEADER_WEIGHT: f32 = 0.5;
/// Weight of the other columns' headers: on WikiTables as telling as the column's own header
/// (the char n-gram baseline's dev micro-F1 over 0.3, 0.5 and 1.0: 0.618, 0.626, 0.631).
const NEIGHBOUR_HEADER_WEIGHT: f32 = 1.0;
/// Weight of the other columns' first cells: weaker evidence than their headers, and more of
/// it (0.2 and 0.3 did alike; 0.5 and 1.0 drown the column's own cells).
const NEIGHBOUR_CELL_WEIGHT: f32 = 0.3;
/// Weight of the value-statistics block: a dozen tokens against a bag of hundreds of n-grams,
/// each block normalised first.
const VALUE_STATS_WEIGHT: f32 = 0.5;
/// Weight of the position block (three tokens): of 0, 0.25, 0.35, 0.5 and 0.7, the n-gram
/// peer's cross-validation inside GitTables' training folds chose 0.35 for three of its four
/// held-out folds and 0.25 for the fourth.
const POSITION_WEIGHT: f32 = 0.35;
/// Column indices and table widths above these share one token.
const MAX_POSITION: usize = 10;
const MAX_WIDTH: usize = 12;
/// Non-null cells of each other column that give neighbour features.
const NEIGHBOUR_CELLS: usize = 8;
/// Other columns a column's neighbour blocks read at most: in a table wider than this, the
/// nearest ones (half on each side where there are enough), so that a column's features and
/// their cost stay bounded however wide the table.
const MAX_NEIGHBOURS: usize = 64;
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
    /// Whether a table's columns ([`NgramConfig::for_table`]) also get blocks of the table's
    /// other columns: their headers and first cells (default false).
    pub neighbours: bool,
    /// Whether a column's features also hold a block of its value statistics
    /// ([`crate::value_statistics`]: whether its numbers count up by one, are years, how long
    /// and how distinct its cells are; default false).
    pub value_stats: bool,
    /// Whether a table's columns ([`NgramConfig::for_table`]) also get a block of their place
    /// in the table: their index from the left and from the right, and the table's width
    /// (default false). A first column is often the table's subject or an id.
    pub position: bool,
}

impl Default for NgramConfig {
    fn default() -> Self {
        NgramConfig {
            buckets: 1 << 14,
            min_n: 2,
            max_n: 4,
            max_cells: 20,
            neighbours: false,
            value_stats: false,
            position: false,
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
        self.weighted_features(Vec::new(), column, subject_header)
    }

    /// [`NgramConfig::column_features`] after the given weighted count blocks.
    fn weighted_features(
        &self,
        mut blocks: Vec<(SparseFeatures, f32)>,
        column: Option<&Column>,
        subject_header: Option<&str>,
    ) -> SparseFeatures {
        if let Some(column) = column {
            blocks.extend(self.own_blocks(column));
        }
        self.finish(blocks, subject_header)
    }

    /// The weighted count blocks of a column's own text: its cells, its header and (with
    /// [`NgramConfig::value_stats`]) its value statistics.
    fn own_blocks(&self, column: &Column) -> Vec<(SparseFeatures, f32)> {
        let mut blocks = Vec::with_capacity(3);
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
        if self.value_stats {
            let tokens = value_statistics(column, self.max_cells);
            blocks.push((
                self.token_counts(VALUE_STATS_SALT, &tokens),
                VALUE_STATS_WEIGHT,
            ));
        }
        blocks
    }

    /// The blocks with the subject-header block after them, summed and L2-normalised.
    fn finish(
        &self,
        mut blocks: Vec<(SparseFeatures, f32)>,
        subject_header: Option<&str>,
    ) -> SparseFeatures {
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

    /// Features of column `column` of `table` (a column past its end has no text of its own),
    /// with blocks of the other columns when [`NgramConfig::neighbours`] is on. For several
    /// columns of one table, [`NgramConfig::for_table`] is cheaper.
    pub fn table_column_features(&self, table: &Table, column: usize) -> SparseFeatures {
        self.for_table(table).column(column, None)
    }

    /// The featurizer of one table's columns: what they share (the n-gram counts of every
    /// header and first cells, for the neighbour blocks) is computed once.
    pub fn for_table<'t>(&self, table: &'t Table) -> TableNgrams<'t> {
        let (mut headers, mut cells) = (Vec::new(), Vec::new());
        if self.neighbours {
            for column in &table.columns {
                let mut grams = Vec::new();
                if let Some(header) = &column.header {
                    self.push_ngrams(&mut grams, NEIGHBOUR_HEADER_SALT, header);
                }
                headers.push(counts(grams));
                let mut grams = Vec::new();
                for cell in non_null(column).take(NEIGHBOUR_CELLS) {
                    self.push_ngrams(&mut grams, NEIGHBOUR_CELL_SALT, cell.text());
                }
                cells.push(counts(grams));
            }
        }
        // A wider table's columns each sum their own window instead (TableNgrams::column).
        let whole = |per_column: &[SparseFeatures]| {
            if per_column.len() <= MAX_NEIGHBOURS + 1 {
                total(per_column)
            } else {
                Vec::new()
            }
        };
        TableNgrams {
            config: *self,
            table,
            header_total: whole(&headers),
            cell_total: whole(&cells),
            headers,
            cells,
            own: RefCell::new(HashMap::new()),
        }
    }

    /// Whole tokens (not their n-grams) hashed with `salt` into buckets, and counted.
    fn token_counts(&self, salt: u8, tokens: &[String]) -> SparseFeatures {
        let bucket_of = BucketOf::new(self.buckets);
        let hashed = tokens
            .iter()
            .map(|token| {
                let hash = token.bytes().fold(fnv1a_step(FNV_OFFSET, salt), fnv1a_step);
                bucket_of.of(mix(hash))
            })
            .collect();
        counts(hashed)
    }

    /// Appends the buckets of the n-grams of the lower-cased `text`, framed by boundary markers.
    fn push_ngrams(&self, out: &mut Vec<u32>, salt: u8, text: &str) {
        let lower = text.trim().to_lowercase();
        if lower.is_empty() {
            return;
        }
        let (min_n, bucket_of) = (self.min_n.max(1), BucketOf::new(self.buckets));
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
                    out.push(bucket_of.of(mix(hash)));
                }
            }
        }
    }
}

/// The columns of one table, featurized by one configuration: [`NgramConfig::for_table`].
#[derive(Debug)]
pub struct TableNgrams<'t> {
    config: NgramConfig,
    table: &'t Table,
    /// Per column, the counts of its header's and its first cells' neighbour n-grams (empty
    /// without [`NgramConfig::neighbours`]), and their sums over the table (empty when the
    /// table is wider than `MAX_NEIGHBOURS + 1` columns).
    headers: Vec<SparseFeatures>,
    cells: Vec<SparseFeatures>,
    header_total: SparseFeatures,
    cell_total: SparseFeatures,
    /// Per column asked for, the blocks of its own text ([`NgramConfig::own_blocks`]), counted
    /// once: a column's type and its relation read the same cells.
    own: RefCell<HashMap<usize, Vec<(SparseFeatures, f32)>>>,
}

impl TableNgrams<'_> {
    /// Features of column `column` (a column past the table's end has no text of its own)
    /// and, for a CPA pair, of its subject column's header.
    pub fn column(&self, column: usize, subject: Option<usize>) -> SparseFeatures {
        let mut blocks = Vec::new();
        if self.config.neighbours {
            blocks.push((
                self.others(column, &self.header_total, &self.headers),
                NEIGHBOUR_HEADER_WEIGHT,
            ));
            blocks.push((
                self.others(column, &self.cell_total, &self.cells),
                NEIGHBOUR_CELL_WEIGHT,
            ));
        }
        if self.config.position {
            blocks.push((self.position(column), POSITION_WEIGHT));
        }
        let table = self.table;
        if let Some(own) = table.columns.get(column) {
            let mut memo = self.own.borrow_mut();
            let own = memo
                .entry(column)
                .or_insert_with(|| self.config.own_blocks(own));
            blocks.extend(own.iter().cloned());
        }
        let subject_header = subject
            .and_then(|s| table.columns.get(s))
            .and_then(|c| c.header.as_deref());
        self.config.finish(blocks, subject_header)
    }

    /// The featurizer these features come from.
    pub fn config(&self) -> &NgramConfig {
        &self.config
    }

    /// The position block of column `column`: its index from either end and the table's
    /// width, each capped, as hashed tokens.
    fn position(&self, column: usize) -> SparseFeatures {
        let width = self.table.columns.len();
        let from_end = width.saturating_sub(column + 1);
        let tokens = [
            format!("pos:{}", column.min(MAX_POSITION)),
            format!("end:{}", from_end.min(MAX_POSITION)),
            format!("width:{}", width.min(MAX_WIDTH)),
        ];
        self.config.token_counts(POSITION_SALT, &tokens)
    }

    /// The other columns' counts: the sum over `column`'s window less its own. The window is
    /// the whole table unless it is wider than `MAX_NEIGHBOURS + 1` columns.
    fn others(
        &self,
        column: usize,
        table_total: &SparseFeatures,
        per_column: &[SparseFeatures],
    ) -> SparseFeatures {
        let n = per_column.len();
        let windowed;
        let sum = if n <= MAX_NEIGHBOURS + 1 {
            table_total
        } else {
            let start = if column >= n {
                n - MAX_NEIGHBOURS
            } else {
                column
                    .saturating_sub(MAX_NEIGHBOURS / 2)
                    .min(n - MAX_NEIGHBOURS - 1)
            };
            let end = (start + MAX_NEIGHBOURS + 1).min(n);
            windowed = total(&per_column[start..end]);
            &windowed
        };
        match per_column.get(column) {
            Some(own) => add(sum, own, -1.0),
            None => sum.clone(),
        }
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

/// The element-wise sum of count vectors, in one sort (a pairwise fold would be quadratic in
/// a wide table's columns).
fn total(per_column: &[SparseFeatures]) -> SparseFeatures {
    merge(per_column.iter().flatten().copied().collect())
}

/// `a + sign·b` of two sorted count vectors, without the buckets that cancel (counts are
/// whole numbers, so they cancel exactly).
fn add(a: &[(u32, f32)], b: &[(u32, f32)], sign: f32) -> SparseFeatures {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    loop {
        let entry = match (a.get(i), b.get(j)) {
            (Some(&(ba, va)), Some(&(bb, vb))) if ba == bb => {
                (i, j) = (i + 1, j + 1);
                (ba, va + sign * vb)
            }
            (Some(&(ba, va)), Some(&(bb, _))) if ba < bb => {
                i += 1;
                (ba, va)
            }
            (Some(&(ba, va)), None) => {
                i += 1;
                (ba, va)
            }
            (_, Some(&(bb, vb))) => {
                j += 1;
                (bb, sign * vb)
            }
            (None, None) => break,
        };
        if entry.1 != 0.0 {
            out.push(entry);
        }
    }
    out
}

/// `(bucket, value)` pairs sorted by bucket, the values of equal buckets summed. The sort is
/// stable, so equal buckets are summed in the order given: the same sums on every run.
fn merge(mut pairs: SparseFeatures) -> SparseFeatures {
    sort_by_bucket(&mut pairs, |&(bucket, _)| bucket);
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
fn non_null(column: &Column) -> impl Iterator<Item = &crate::cell::Cell> {
    column.cells.iter().filter(|c| !c.is_null())
}

/// Bucket list → (bucket, count), sorted by bucket.
fn counts(mut buckets: Vec<u32>) -> SparseFeatures {
    sort_by_bucket(&mut buckets, |&bucket| bucket);
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
/// `hash % buckets`, by a mask when `buckets` is a power of two (the same number, without a
/// 64-bit division per n-gram).
#[derive(Clone, Copy, Debug)]
struct BucketOf {
    buckets: u64,
    mask: Option<u64>,
}

impl BucketOf {
    fn new(buckets: u32) -> Self {
        let buckets = u64::from(buckets.max(1));
        let mask = buckets.is_power_of_two().then(|| buckets - 1);
        BucketOf { buckets, mask }
    }

    #[inline]
    fn of(self, hash: u64) -> u32 {
        // Below `buckets`, a u32: the casts cannot truncate.
        match self.mask {
            Some(mask) => (hash & mask) as u32,
            None => (hash % self.buckets) as u32,
        }
    }
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_by_mask_is_the_remainder() {
        for buckets in [1u32, 2, 1000, 1024, 16_384, 16_385, u32::MAX] {
            let of = BucketOf::new(buckets);
            for hash in [0u64, 1, 16_383, 16_384, 0xdead_beef_cafe_f00d, u64::MAX] {
                assert_eq!(
                    u64::from(of.of(hash)),
                    hash % u64::from(buckets),
                    "{buckets} {hash}"
                );
            }
        }
    }
    use crate::cell::Cell;

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

    #[test]
    fn neighbours_are_the_other_columns_headers_and_first_cells() {
        let table = Table::new(
            "t",
            vec![
                column(Some("Name"), &["Kumar Pallana", "Bill Murray"]),
                column(Some("Film"), &["Rushmore", "", "The Royal Tenenbaums"]),
                column(None, &["1998", "2001"]),
            ],
        );
        let plain = NgramConfig::default();
        let config = NgramConfig {
            neighbours: true,
            ..plain
        };
        // Computed directly: the n-grams of every other column, as two blocks.
        let direct = |c: usize| {
            let (mut headers, mut cells) = (Vec::new(), Vec::new());
            for (i, other) in table.columns.iter().enumerate().filter(|&(i, _)| i != c) {
                if let Some(h) = &other.header {
                    config.push_ngrams(&mut headers, NEIGHBOUR_HEADER_SALT, h);
                }
                for cell in non_null(&table.columns[i]).take(NEIGHBOUR_CELLS) {
                    config.push_ngrams(&mut cells, NEIGHBOUR_CELL_SALT, cell.text());
                }
            }
            let blocks = vec![
                (counts(headers), NEIGHBOUR_HEADER_WEIGHT),
                (counts(cells), NEIGHBOUR_CELL_WEIGHT),
            ];
            config.weighted_features(blocks, table.columns.get(c), None)
        };
        let featurizer = config.for_table(&table);
        for c in 0..4 {
            let features = featurizer.column(c, None);
            assert_eq!(features, direct(c), "column {c}");
            assert_eq!(features, config.table_column_features(&table, c));
            assert!((l2(&features) - 1.0).abs() < 1e-5);
            assert_ne!(features, plain.table_column_features(&table, c));
        }
        // The same column beside other columns has other features, and the same without them.
        let mut elsewhere = table.clone();
        elsewhere.columns[1].header = Some("Party".into());
        assert_ne!(
            config.table_column_features(&elsewhere, 0),
            config.table_column_features(&table, 0)
        );
        assert_eq!(
            plain.table_column_features(&elsewhere, 0),
            plain.table_column_features(&table, 0)
        );
        // A table of one column has no neighbours: its features are the column's own.
        let single = Table::new("s", vec![table.columns[0].clone()]);
        assert_eq!(
            config.table_column_features(&single, 0),
            plain.column_features(single.columns.first(), None)
        );
    }

    #[test]
    fn value_statistics_are_a_block_of_their_own() {
        let stats = NgramConfig {
            value_stats: true,
            ..NgramConfig::default()
        };
        let plain = NgramConfig::default();
        let ids = column(None, &["7", "8", "9"]);
        let codes = column(None, &["9", "7", "8"]);
        // The same cells' n-grams in another order: only the statistics tell them apart.
        assert_eq!(
            plain.column_features(Some(&ids), None),
            plain.column_features(Some(&codes), None)
        );
        let (a, b) = (
            stats.column_features(Some(&ids), None),
            stats.column_features(Some(&codes), None),
        );
        assert_ne!(a, b);
        assert!((l2(&a) - 1.0).abs() < 1e-5);
        assert!(a.len() > plain.column_features(Some(&ids), None).len());
        assert!(stats.column_features(None, None).is_empty());
    }

    #[test]
    fn the_position_block_tells_a_column_where_it_stands() {
        let same = |n: usize| -> Vec<Column> { (0..n).map(|_| column(None, &["x1"])).collect() };
        let plain = NgramConfig::default();
        let placed = NgramConfig {
            position: true,
            ..plain
        };
        let three = Table::new("t", same(3));
        let features =
            |config: &NgramConfig, table: &Table, c: usize| config.for_table(table).column(c, None);
        // Identical columns: only the block tells them apart, by index and by width.
        assert_eq!(features(&plain, &three, 0), features(&plain, &three, 2));
        let (first, last) = (features(&placed, &three, 0), features(&placed, &three, 2));
        assert_ne!(first, last);
        assert!((l2(&first) - 1.0).abs() < 1e-5);
        // The block is three tokens of their own salt beside the cell block.
        let own = plain.column_features(Some(&three.columns[0]), None);
        let block = placed.for_table(&three).position(0);
        assert_eq!(block.iter().map(|&(_, v)| v).sum::<f32>(), 3.0);
        let buckets = |f: &SparseFeatures| f.iter().map(|&(b, _)| b).collect::<Vec<_>>();
        for bucket in buckets(&own).into_iter().chain(buckets(&block)) {
            assert!(buckets(&first).contains(&bucket), "bucket {bucket}");
        }
        // Past the caps, places and widths share their tokens.
        let wide = 2 * MAX_POSITION + MAX_WIDTH;
        let (a, b) = (Table::new("t", same(wide)), Table::new("t", same(wide + 1)));
        assert_eq!(
            features(&placed, &a, MAX_POSITION + 1),
            features(&placed, &b, MAX_POSITION + 1),
            "past every cap: from the start, from the end and in width"
        );
        let four = Table::new("t", same(4));
        assert_ne!(
            features(&placed, &three, 0),
            features(&placed, &four, 0),
            "the same index, one more column: from the end and the width differ"
        );
        // A column seen without its table has no place.
        assert_eq!(placed.column_features(Some(&three.columns[0]), None), own);
    }

    #[test]
    fn a_wide_table_gives_each_column_its_nearest_neighbours() {
        let n = 3 * MAX_NEIGHBOURS;
        let columns: Vec<Column> = (0..n)
            .map(|c| column(Some(&format!("h{c}")), &[&format!("v{c}")]))
            .collect();
        let table = Table::new("wide", columns);
        let config = NgramConfig {
            neighbours: true,
            ..NgramConfig::default()
        };
        let featurizer = config.for_table(&table);
        // Column c of the wide table sees what column c - start of the window's own table sees.
        for (c, start) in [
            (0, 0),
            (5, 0),
            (100, 100 - MAX_NEIGHBOURS / 2),
            (n - 1, n - MAX_NEIGHBOURS - 1),
        ] {
            let window = Table::new(
                "window",
                table.columns[start..start + MAX_NEIGHBOURS + 1].to_vec(),
            );
            assert_eq!(
                featurizer.column(c, None),
                config.table_column_features(&window, c - start),
                "column {c}"
            );
        }
        // A column past the end sees the last MAX_NEIGHBOURS columns.
        let last = Table::new("last", table.columns[n - MAX_NEIGHBOURS..].to_vec());
        assert_eq!(
            featurizer.column(n + 2, None),
            config.table_column_features(&last, MAX_NEIGHBOURS + 2)
        );
    }

    #[test]
    fn a_columns_own_blocks_are_counted_once_and_give_what_a_fresh_featurizer_gives() {
        let config = NgramConfig {
            value_stats: true,
            position: true,
            ..NgramConfig::default()
        };
        let table = Table::new(
            "t",
            vec![
                column(Some("city"), &["Paris", "Lyon"]),
                column(Some("population"), &["2100000", "520000"]),
            ],
        );
        let shared = config.for_table(&table);
        for (c, subject) in [(1, None), (1, Some(0)), (0, None), (1, None), (5, Some(0))] {
            assert_eq!(
                shared.column(c, subject),
                config.for_table(&table).column(c, subject),
                "column {c}, subject {subject:?}"
            );
        }
        // Column 5 is past the table's end: it has no text of its own to keep.
        assert_eq!(shared.own.borrow().len(), 2);
        assert_ne!(shared.column(1, None), shared.column(1, Some(0)));
    }

    #[test]
    fn sparse_sums_drop_what_cancels() {
        let a = vec![(1, 2.0), (4, 1.0), (9, 3.0)];
        let b = vec![(0, 1.0), (4, 1.0), (9, 1.0)];
        assert_eq!(add(&a, &b, -1.0), vec![(0, -1.0), (1, 2.0), (9, 2.0)]);
        assert_eq!(
            add(&a, &b, 1.0),
            vec![(0, 1.0), (1, 2.0), (4, 2.0), (9, 4.0)]
        );
        assert_eq!(total(&[a.clone(), b.clone()]), add(&a, &b, 1.0));
    }
}
