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
    /// Per table, each queried column's word-vector features (parallel to `queries`); empty
    /// when the model reads none ([`crate::OrchestratorConfig::column_words`]).
    pub words: Vec<Vec<Vec<f32>>>,
    /// Per table, the `(subject column, object column)` pairs (indices into its `queries`)
    /// whose CPA logits the forward pass computes ([`crate::SwarmOutput::cpa_logits`]); empty
    /// when it computes none (training scores its own pairs).
    pub cpa_pairs: Vec<Vec<(usize, usize)>>,
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
        if !self.words.is_empty() && self.words.len() != self.tables.len() {
            return Err(SwarmError::Input(format!(
                "{} tables but {} word-feature lists",
                self.tables.len(),
                self.words.len()
            )));
        }
        if !self.cpa_pairs.is_empty() && self.cpa_pairs.len() != self.tables.len() {
            return Err(SwarmError::Input(format!(
                "{} tables but {} CPA pair lists",
                self.tables.len(),
                self.cpa_pairs.len()
            )));
        }
        for t in 0..self.tables.len() {
            self.validate_table(t)?;
        }
        Ok(())
    }

    /// [`TableBatch::validate`]'s checks of table `t` (the lists' lengths already checked).
    fn validate_table(&self, t: usize) -> Result<(), SwarmError> {
        let (table, queries, spans) = (&self.tables[t], &self.queries[t], &self.spans[t]);
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
        if let Some(words) = self.words.get(t).filter(|w| w.len() != queries.len()) {
            return Err(SwarmError::Input(format!(
                "table {t}: {} queries but {} word-feature rows",
                queries.len(),
                words.len()
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
        let pairs = self.cpa_pairs.get(t).map_or(&[][..], Vec::as_slice);
        if let Some((s, o)) = pairs
            .iter()
            .find(|(s, o)| *s >= queries.len() || *o >= queries.len())
        {
            return Err(SwarmError::Input(format!(
                "table {t}: CPA pair ({s}, {o}) past its {} columns",
                queries.len()
            )));
        }
        Ok(())
    }

    /// Every CPA pair of [`TableBatch::cpa_pairs`] as `(subject row, object row)` of the
    /// column rows ([`TableBatch::column_rows`]), table by table.
    pub fn cpa_rows(&self) -> Vec<(usize, usize)> {
        let mut first = 0;
        let mut rows = Vec::new();
        for (t, queries) in self.queries.iter().enumerate() {
            if let Some(pairs) = self.cpa_pairs.get(t) {
                rows.extend(pairs.iter().map(|&(s, o)| (first + s, first + o)));
            }
            first += queries.len();
        }
        rows
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
            words: Vec::new(),
            cpa_pairs: vec![vec![(0, 1)], Vec::new()],
        }
    }

    #[test]
    fn rows_run_over_tables_then_columns() {
        let batch = batch();
        batch.validate().unwrap();
        assert_eq!(batch.column_rows(), [(0, 0), (0, 1), (1, 0)]);
    }

    #[test]
    fn cpa_pairs_become_rows_of_the_whole_batch() {
        let mut batch = batch();
        batch.queries[1].push(vec![11]);
        batch.spans[1].push(0..3);
        batch.cpa_pairs[1] = vec![(1, 0)];
        batch.validate().unwrap();
        assert_eq!(batch.cpa_rows(), [(0, 1), (3, 2)]);
    }

    /// A way to break a good batch, and what the error must then say.
    type Breakage = (fn(&mut TableBatch), &'static str);

    #[test]
    fn malformed_batches_are_refused_naming_the_table_and_column() {
        let cases: [Breakage; 7] = [
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
            (
                |b| b.cpa_pairs[0] = vec![(0, 2)],
                "table 0: CPA pair (0, 2) past its 2 columns",
            ),
            (|b| b.cpa_pairs.truncate(1), "2 tables but 1 CPA pair lists"),
        ];
        for (break_it, expected) in cases {
            let mut broken = batch();
            break_it(&mut broken);
            let message = broken.validate().unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
        }
    }
}
