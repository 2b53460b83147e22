//! The rows a reader keeps of a table: all of them, or a uniform sample of at most a given
//! number, so a table of any length is read in bounded memory.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The data rows kept while reading: all of them, or a uniform reservoir sample.
pub(crate) struct RowSample<R> {
    limit: Option<usize>,
    rows: Vec<(usize, R)>,
    seen: usize,
    rng: ChaCha8Rng,
}

impl<R> RowSample<R> {
    pub(crate) fn new(limit: Option<usize>, id: &str) -> Self {
        // FNV-1a of the id: the same file samples the same rows on every run.
        let seed = crate::fnv::fnv1a(id.as_bytes());
        RowSample {
            limit,
            rows: Vec::new(),
            seen: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Whether rows beyond a limit are left out (else every row is kept).
    #[cfg(feature = "parquet")]
    pub(crate) fn is_sampled(&self) -> bool {
        self.limit.is_some()
    }

    pub(crate) fn seen(&self) -> usize {
        self.seen
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Algorithm R: row `i` replaces a random kept row with probability `limit / (i + 1)`.
    pub(crate) fn push(&mut self, row: R) {
        let index = self.seen;
        self.seen += 1;
        match self.limit {
            Some(limit) if self.rows.len() >= limit => {
                let slot = self.rng.random_range(0..=index);
                if slot < limit {
                    self.rows[slot] = (index, row);
                }
            }
            _ => self.rows.push((index, row)),
        }
    }

    /// The kept rows in table order.
    pub(crate) fn into_rows(mut self) -> impl Iterator<Item = R> {
        self.rows.sort_unstable_by_key(|(index, _)| *index);
        self.rows.into_iter().map(|(_, row)| row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(limit: Option<usize>, n: usize, id: &str) -> Vec<usize> {
        let mut sample = RowSample::new(limit, id);
        for i in 0..n {
            sample.push(i);
        }
        assert_eq!(sample.seen(), n);
        sample.into_rows().collect()
    }

    #[test]
    fn a_sample_keeps_its_size_in_table_order_and_the_same_rows_for_the_same_table() {
        assert_eq!(kept(None, 5, "t"), [0, 1, 2, 3, 4]);
        assert_eq!(kept(Some(10), 5, "t"), [0, 1, 2, 3, 4]);
        let rows = kept(Some(100), 10_000, "t");
        assert_eq!(rows.len(), 100);
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        // Uniform over the table: about half the kept rows come from its second half.
        let late = rows.iter().filter(|&&r| r >= 5_000).count();
        assert!(
            (30..=70).contains(&late),
            "{late} of 100 from the second half"
        );
        assert_eq!(rows, kept(Some(100), 10_000, "t"));
        assert_ne!(rows, kept(Some(100), 10_000, "u"));
    }
}
