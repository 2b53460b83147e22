//! A batch of serialized tables as the swarm reads them: each table's tokens, its columns'
//! queries, where each column lies in the table read, and its n-gram features.

use std::ops::Range;

use crate::error::SwarmError;

/// Serialized tables and their per-column queries, as token ids.
#[derive(Clone, Debug, Default)]
pub struct TableBatch {
    /// One token sequence per table (the whole serialized table).
    pub tables: Vec<Vec<u32>>,
    /// Per table, one query token sequence per column.
    pub queries: Vec<Vec<Vec<u32>>>,
    /// Per table, where each queried column lies in its table sequence (parallel to
    /// `queries`; an empty range when the column has no tokens there).
    pub spans: Vec<Vec<Range<usize>>>,
    /// Per table, each queried column's hashed n-gram features, `(bucket, weight)` (parallel
    /// to `queries`); empty when the model reads none ([`crate::OrchestratorConfig::column_ngrams`]).
    pub ngrams: Vec<Vec<Vec<(u32, f32)>>>,
}

impl TableBatch {
    /// Checks that every table and query has at least one token.
    pub fn validate(&self) -> Result<(), SwarmError> {
        if self.tables.is_empty() {
            return Err(SwarmError::Input("the batch holds no table".into()));
        }
        if self.tables.len() != self.queries.len() {
            return Err(SwarmError::Input(format!(
                "{} tables but {} query lists",
                self.tables.len(),
                self.queries.len()
            )));
        }
        if self.spans.len() != self.tables.len() {
            return Err(SwarmError::Input(format!(
                "{} tables but {} span lists",
                self.tables.len(),
                self.spans.len()
            )));
        }
        if !self.ngrams.is_empty() && self.ngrams.len() != self.tables.len() {
            return Err(SwarmError::Input(format!(
                "{} tables but {} n-gram lists",
                self.tables.len(),
                self.ngrams.len()
            )));
        }
        for (t, ((table, queries), spans)) in self
            .tables
            .iter()
            .zip(&self.queries)
            .zip(&self.spans)
            .enumerate()
        {
            if spans.len() != queries.len() {
                return Err(SwarmError::Input(format!(
                    "table {t}: {} queries but {} column spans",
                    queries.len(),
                    spans.len()
                )));
            }
            if let Some(ngrams) = self.ngrams.get(t).filter(|n| n.len() != queries.len()) {
                return Err(SwarmError::Input(format!(
                    "table {t}: {} queries but {} n-gram bags",
                    queries.len(),
                    ngrams.len()
                )));
            }
            if let Some(c) = spans.iter().position(|span| span.end > table.len()) {
                return Err(SwarmError::Input(format!(
                    "table {t}, column {c}: span {:?} past the table's {} tokens",
                    spans[c],
                    table.len()
                )));
            }
            if table.is_empty() {
                return Err(SwarmError::Input(format!(
                    "table {t} serializes to no token"
                )));
            }
            if let Some(c) = queries.iter().position(Vec::is_empty) {
                return Err(SwarmError::Input(format!(
                    "table {t}, column {c}: empty query"
                )));
            }
        }
        Ok(())
    }

    /// `(table, column)` of every query row, in row order.
    pub fn column_rows(&self) -> Vec<(usize, usize)> {
        self.queries
            .iter()
            .enumerate()
            .flat_map(|(t, q)| (0..q.len()).map(move |c| (t, c)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tables: 4 tokens with columns at 0..2 and 2..4, 3 tokens with one column at 0..3.
    fn batch() -> TableBatch {
        TableBatch {
            tables: vec![vec![1, 2, 3, 4], vec![5, 6, 7]],
            queries: vec![vec![vec![8], vec![9]], vec![vec![10]]],
            spans: vec![vec![0..2, 2..4], vec![0..3]],
            ngrams: Vec::new(),
        }
    }

    #[test]
    fn rows_run_over_tables_then_columns() {
        let batch = batch();
        batch.validate().unwrap();
        assert_eq!(batch.column_rows(), [(0, 0), (0, 1), (1, 0)]);
    }

    /// A way to break a good batch, and what the error must then say.
    type Breakage = (fn(&mut TableBatch), &'static str);

    #[test]
    fn malformed_batches_are_refused_naming_the_table_and_column() {
        let cases: [Breakage; 5] = [
            (|b| b.tables.clear(), "no table"),
            (
                |b| b.spans[1][0] = 0..4,
                "table 1, column 0: span 0..4 past",
            ),
            (
                |b| b.queries[0][1].clear(),
                "table 0, column 1: empty query",
            ),
            (
                |b| {
                    b.spans[0].pop();
                },
                "table 0: 2 queries but 1 column spans",
            ),
            (
                |b| b.ngrams = vec![vec![Vec::new(); 2], Vec::new()],
                "table 1: 1 queries but 0 n-gram bags",
            ),
        ];
        for (break_it, expected) in cases {
            let mut broken = batch();
            break_it(&mut broken);
            let message = broken.validate().unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
        }
    }
}
