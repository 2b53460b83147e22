//! Table → token ids, for a causal recurrent model that reads the whole table once and then,
//! from that state, one short query segment per column.
//!
//! Layout (column-major, so each column's evidence is contiguous):
//!
//! ```text
//! table:  <table> title <ctx> section <ctx> caption <ctx>
//!         <col> 0 <hdr> header </hdr> cell <cell> cell <cell> <null> ...
//!         <col> 1 <hdr> header </hdr> cell <cell> ...
//!         </table>
//! query:  <query> 1 <hdr> header </hdr> cell <cell> cell </query>
//! ```
//!
//! - The column representation is taken at the query's last token ([`QUERY_END`]), never at
//!   position 0: a causal model's first position has seen nothing.
//! - Index digits (ASCII) after `<col>` and `<query>` tie a query to its column; they are
//!   positions, not made-up headers. `<hdr> … </hdr>` appears only when the column has a real
//!   header and headers are on; `</hdr>` always marks where cells begin.
//! - Context fields appear (each ended by `<ctx>`) only when context is on and the table has at
//!   least one of them.
//!
//! Budgets never drop a column. Every column keeps its skeleton (`<col>`, index, `</hdr>`).
//! The rest of [`SerializeConfig::max_table_tokens`] is shared out max-min fairly:
//! context (at most an eighth), then headers (at most half of what is left), then cells. Rows
//! are sampled deterministically from the seed and the table id; within a column the per-cell
//! byte cap shrinks (down to `min_cell_bytes`) before whole cells are left out. Truncation
//! happens at UTF-8 char boundaries. When even the skeletons exceed the budget, the output
//! keeps them anyway and says so in [`SerializedTable::over_budget`].

use std::ops::Range;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::cell::Cell;
use crate::fnv::fnv1a;
use crate::table::Table;
use crate::tokenizer::{
    CELL_SEP, COLUMN_SEP, CONTEXT_SEP, HEADER_END, HEADER_START, NULL_CELL, QUERY_END, QUERY_START,
    TABLE_END, TABLE_START,
};

/// Budgets and switches for [`serialize_table`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerializeConfig {
    /// Most tokens in [`SerializedTable::table_tokens`] (default 2048).
    pub max_table_tokens: usize,
    /// Most rows sampled from a table (default 32); rows keep their table order.
    pub max_rows: usize,
    /// Most bytes of one cell (default 48).
    pub max_cell_bytes: usize,
    /// Smallest per-cell cap used when a column's share is tight, before cells are left out
    /// (default 8).
    pub min_cell_bytes: usize,
    /// Most bytes of a header (default 32).
    pub max_header_bytes: usize,
    /// Most bytes of each context field (default 64).
    pub max_context_bytes: usize,
    /// Emit real headers (default true). Off gives a values-only serialization.
    pub include_header: bool,
    /// Emit page title, section title and caption when the table has them (default true).
    pub include_context: bool,
    /// Sample cells repeated in each query segment (default 2).
    pub query_cells: usize,
    /// Most bytes of a query sample cell (default 16).
    pub query_cell_bytes: usize,
    /// Most bytes of the header inside a query (default 32).
    pub query_header_bytes: usize,
    /// Seed for row sampling (mixed with the table id, so tables sample differently).
    pub seed: u64,
}

impl Default for SerializeConfig {
    fn default() -> Self {
        SerializeConfig {
            max_table_tokens: 2048,
            max_rows: 32,
            max_cell_bytes: 48,
            min_cell_bytes: 8,
            max_header_bytes: 32,
            max_context_bytes: 64,
            include_header: true,
            include_context: true,
            query_cells: 2,
            query_cell_bytes: 16,
            query_header_bytes: 32,
            seed: 0,
        }
    }
}

/// A serialized table: one table segment and one query segment per column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerializedTable {
    /// The table segment, read once.
    pub table_tokens: Vec<u32>,
    /// One query segment per column, read from the state after `table_tokens`; each ends
    /// with [`QUERY_END`], the position the column representation is taken from.
    pub column_queries: Vec<Vec<u32>>,
    /// Where each column (from its `<col>` to its last cell) lies in `table_tokens`.
    pub column_spans: Vec<Range<usize>>,
    /// The sampled row indices, in table order.
    pub sampled_rows: Vec<usize>,
    /// Cells shortened by a byte cap.
    pub truncated_cells: usize,
    /// Sampled cells left out because their column's share was used up.
    pub omitted_cells: usize,
    /// True when the column skeletons alone exceed `max_table_tokens`.
    pub over_budget: bool,
}

impl SerializedTable {
    /// The whole input for one column as a single sequence (table then query), for callers
    /// that cannot continue from a saved state.
    pub fn full_sequence(&self, column: usize) -> Option<Vec<u32>> {
        let query = self.column_queries.get(column)?;
        let mut sequence = Vec::with_capacity(self.table_tokens.len() + query.len());
        sequence.extend_from_slice(&self.table_tokens);
        sequence.extend_from_slice(query);
        Some(sequence)
    }
}

/// Serializes `table` under `config`'s budgets. Deterministic for a given table and config.
pub fn serialize_table(table: &Table, config: &SerializeConfig) -> SerializedTable {
    let sampled_rows = sample_rows(table.n_rows(), config.max_rows, config.seed, &table.id);
    let n_columns = table.n_columns();

    let headers: Vec<&str> = table
        .columns
        .iter()
        .map(|c| match (&c.header, config.include_header) {
            (Some(header), true) => header.as_str(),
            _ => "",
        })
        .collect();
    let context_fields = context_fields(table, config);

    let budget = Budget::of(&context_fields, &headers, config);
    let (over_budget, skeleton, context_caps, header_caps) = (
        budget.over,
        budget.skeleton,
        &budget.context_caps,
        &budget.header_caps,
    );
    let remaining = budget.remaining;
    let cells_per_column: Vec<Vec<Option<&Cell>>> = table
        .columns
        .iter()
        .map(|c| sampled_rows.iter().map(|r| c.cells.get(*r)).collect())
        .collect();
    let cell_demands: Vec<usize> = cells_per_column
        .iter()
        .map(|cells| cells_cost(cells, config.max_cell_bytes))
        .collect();
    let cell_shares = fair_shares(&cell_demands, remaining);

    let mut out = SerializedTable {
        table_tokens: Vec::with_capacity(config.max_table_tokens.min(skeleton + remaining)),
        column_queries: Vec::with_capacity(n_columns),
        column_spans: Vec::with_capacity(n_columns),
        sampled_rows: Vec::new(),
        truncated_cells: 0,
        omitted_cells: 0,
        over_budget,
    };
    let tokens = &mut out.table_tokens;
    tokens.push(TABLE_START);
    for (field, cap) in context_fields.iter().zip(context_caps) {
        push_text(tokens, field, *cap);
        tokens.push(CONTEXT_SEP);
    }
    for (index, cells) in cells_per_column.iter().enumerate() {
        let start = tokens.len();
        tokens.push(COLUMN_SEP);
        push_decimal(tokens, index);
        push_header(tokens, headers[index], header_caps[index]);
        let cap = cell_cap(
            cells,
            cell_shares[index],
            config.min_cell_bytes,
            config.max_cell_bytes,
        );
        let (truncated, omitted) = push_cells(tokens, cells, cell_shares[index], cap);
        out.truncated_cells += truncated;
        out.omitted_cells += omitted;
        out.column_spans.push(start..tokens.len());

        out.column_queries
            .push(column_query(index, headers[index], cells, config));
    }
    tokens.push(TABLE_END);
    out.sampled_rows = sampled_rows;
    out
}

/// How a table's token budget is spent before its cells: the fixed tokens (the skeleton),
/// each context field's and each header's bytes; what remains is the cells'.
struct Budget {
    skeleton: usize,
    over: bool,
    context_caps: Vec<usize>,
    header_caps: Vec<usize>,
    remaining: usize,
}

impl Budget {
    fn of(context_fields: &[&str], headers: &[&str], config: &SerializeConfig) -> Budget {
        // Skeleton: <table> </table>, one <ctx> per context field, and per column
        // <col> digits </hdr> (plus <hdr> when it has a header).
        let skeleton = 2
            + context_fields.len()
            + (0..headers.len())
                .map(|i| 2 + decimal_len(i) + usize::from(!headers[i].is_empty()))
                .sum::<usize>();
        let mut remaining = config.max_table_tokens.saturating_sub(skeleton);
        let context_demands: Vec<usize> = context_fields
            .iter()
            .map(|f| f.len().min(config.max_context_bytes))
            .collect();
        let context_caps = fair_shares(&context_demands, remaining / 8);
        remaining -= context_caps.iter().sum::<usize>();
        let header_demands: Vec<usize> = headers
            .iter()
            .map(|h| h.len().min(config.max_header_bytes))
            .collect();
        let header_caps = fair_shares(&header_demands, remaining / 2);
        remaining -= header_caps.iter().sum::<usize>();
        Budget {
            skeleton,
            over: skeleton > config.max_table_tokens,
            context_caps,
            header_caps,
            remaining,
        }
    }
}

/// The context fields a table's read starts with: page title, section title and caption, or
/// none when the table has none of them (or `config` leaves context out).
fn context_fields<'t>(table: &'t Table, config: &SerializeConfig) -> Vec<&'t str> {
    let context = &table.context;
    let fields = [
        &context.page_title,
        &context.section_title,
        &context.caption,
    ];
    if config.include_context && fields.iter().any(|f| f.is_some()) {
        fields.iter().map(|f| f.as_deref().unwrap_or("")).collect()
    } else {
        Vec::new()
    }
}

/// Pushes a column's cells, each cut to `cap` bytes, within `share` tokens; returns how many
/// cells were truncated and how many left out.
fn push_cells(
    tokens: &mut Vec<u32>,
    cells: &[Option<&Cell>],
    share: usize,
    cap: usize,
) -> (usize, usize) {
    let (mut truncated, mut omitted) = (0, 0);
    let mut used = 0;
    let mut first = true;
    for (position, cell) in cells.iter().enumerate() {
        let Some(cell) = cell else { continue };
        let cost = cell_cost(cell, cap) + usize::from(!first);
        if used + cost > share {
            // A share smaller than one minimum-size cell still buys a shortened first cell.
            let skip = if first && share > 0 {
                truncated += usize::from(push_cell(tokens, cell, share));
                1
            } else {
                0
            };
            omitted += cells[position..].iter().flatten().count() - skip;
            break;
        }
        used += cost;
        if !first {
            tokens.push(CELL_SEP);
        }
        first = false;
        truncated += usize::from(push_cell(tokens, cell, cap));
    }
    (truncated, omitted)
}

/// The query segment for one column.
fn column_query(
    index: usize,
    header: &str,
    cells: &[Option<&Cell>],
    config: &SerializeConfig,
) -> Vec<u32> {
    let mut query = Vec::with_capacity(8 + config.query_header_bytes + config.query_cells * 17);
    query.push(QUERY_START);
    push_decimal(&mut query, index);
    push_header(&mut query, header, config.query_header_bytes);
    let samples = cells
        .iter()
        .flatten()
        .filter(|c| !c.is_null())
        .take(config.query_cells);
    for (n, cell) in samples.enumerate() {
        if n > 0 {
            query.push(CELL_SEP);
        }
        push_text(&mut query, cell.text(), config.query_cell_bytes);
    }
    query.push(QUERY_END);
    query
}

/// Picks up to `max_rows` of `n_rows` row indices, in table order, from the seed and table id.
pub fn sample_rows(n_rows: usize, max_rows: usize, seed: u64, table_id: &str) -> Vec<usize> {
    if n_rows <= max_rows {
        return (0..n_rows).collect();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ fnv1a(table_id.as_bytes()));
    let mut rows = rand::seq::index::sample(&mut rng, n_rows, max_rows).into_vec();
    rows.sort_unstable();
    rows
}

/// Max-min fair split of `total` over `demands`: nobody gets more than they ask for, and what
/// small demands leave over is shared by the larger ones.
pub fn fair_shares(demands: &[usize], total: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by_key(|i| demands[*i]);
    let mut shares = vec![0; demands.len()];
    let mut remaining = total;
    for (k, &i) in order.iter().enumerate() {
        let share = remaining / (demands.len() - k);
        let given = demands[i].min(share);
        shares[i] = given;
        remaining -= given;
    }
    shares
}

fn cell_cost(cell: &Cell, cap: usize) -> usize {
    if cell.is_null() {
        1
    } else {
        cell.text().len().min(cap)
    }
}

/// Tokens for a column's cells under a per-cell cap, separators included.
fn cells_cost(cells: &[Option<&Cell>], cap: usize) -> usize {
    let present = cells.iter().flatten();
    let count = present.clone().count();
    present.map(|c| cell_cost(c, cap)).sum::<usize>() + count.saturating_sub(1)
}

/// The largest per-cell cap in `[min, max]` whose cost fits `share` (or `min` if none does).
fn cell_cap(cells: &[Option<&Cell>], share: usize, min: usize, max: usize) -> usize {
    let min = min.min(max);
    if cells_cost(cells, max) <= share {
        return max;
    }
    let (mut low, mut high) = (min, max);
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if cells_cost(cells, middle) <= share {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    low
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a char boundary.
pub fn truncate_to_char_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn push_text(tokens: &mut Vec<u32>, text: &str, cap: usize) {
    let kept = truncate_to_char_boundary(text, cap);
    tokens.extend(kept.bytes().map(u32::from));
}

fn push_header(tokens: &mut Vec<u32>, header: &str, cap: usize) {
    if !header.is_empty() {
        tokens.push(HEADER_START);
        push_text(tokens, header, cap);
    }
    tokens.push(HEADER_END);
}

/// Pushes a cell; returns true when it was truncated.
fn push_cell(tokens: &mut Vec<u32>, cell: &Cell, cap: usize) -> bool {
    if cell.is_null() {
        tokens.push(NULL_CELL);
        return false;
    }
    push_text(tokens, cell.text(), cap);
    cell.text().len() > cap
}

fn decimal_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

fn push_decimal(tokens: &mut Vec<u32>, n: usize) {
    let start = tokens.len();
    let mut n = n;
    loop {
        tokens.push(u32::from(b'0') + (n % 10) as u32);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    tokens[start..].reverse();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Column;
    use crate::tokenizer::ByteTokenizer;

    fn table(n_columns: usize, n_rows: usize, cell: &str) -> Table {
        let columns = (0..n_columns)
            .map(|c| {
                Column::new(
                    Some(format!("h{c}")),
                    (0..n_rows)
                        .map(|r| Cell::new(format!("{cell}{r}")))
                        .collect(),
                )
            })
            .collect();
        Table::new("t", columns)
    }

    #[test]
    fn layout_is_column_major_with_queries() {
        let mut t = Table::from_rows(
            "t",
            Some(vec!["name".into(), "age".into()]),
            vec![
                vec!["Ann".into(), "31".into()],
                vec!["Bob".into(), "".into()],
            ],
        );
        t.context.page_title = Some("People".into());
        let s = serialize_table(&t, &SerializeConfig::default());
        let text = ByteTokenizer.decode(&s.table_tokens);
        assert_eq!(
            text,
            "<table>People<ctx><ctx><ctx><col>0<hdr>name</hdr>Ann<cell>Bob\
             <col>1<hdr>age</hdr>31<cell><null></table>"
        );
        assert_eq!(
            ByteTokenizer.decode(&s.column_queries[1]),
            "<query>1<hdr>age</hdr>31</query>"
        );
        assert_eq!(s.column_queries[0].last(), Some(&QUERY_END));
        assert_eq!(
            ByteTokenizer.decode(&s.table_tokens[s.column_spans[0].clone()]),
            "<col>0<hdr>name</hdr>Ann<cell>Bob"
        );
    }

    #[test]
    fn no_header_gives_no_made_up_header() {
        let t = Table::from_rows("t", None, vec![vec!["a".into()]]);
        let s = serialize_table(&t, &SerializeConfig::default());
        assert_eq!(
            ByteTokenizer.decode(&s.table_tokens),
            "<table><col>0</hdr>a</table>"
        );
        assert_eq!(
            ByteTokenizer.decode(&s.column_queries[0]),
            "<query>0</hdr>a</query>"
        );
    }

    #[test]
    fn tight_budget_keeps_every_column_and_stays_within_budget() {
        let t = table(40, 100, "value-that-is-fairly-long-");
        let config = SerializeConfig {
            max_table_tokens: 600,
            ..SerializeConfig::default()
        };
        let s = serialize_table(&t, &config);
        assert!(!s.over_budget);
        assert!(s.table_tokens.len() <= 600, "{}", s.table_tokens.len());
        assert_eq!(s.column_spans.len(), 40);
        assert_eq!(s.column_queries.len(), 40);
        // Fair: every column got cells, and column sizes differ by little.
        let sizes: Vec<usize> = s.column_spans.iter().map(|r| r.len()).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(*min > 6 && max - min <= 12, "{sizes:?}");
        assert!(s.truncated_cells > 0 && s.omitted_cells > 0);
    }

    #[test]
    fn skeletons_survive_an_impossible_budget() {
        let t = table(10, 5, "x");
        let config = SerializeConfig {
            max_table_tokens: 10,
            ..SerializeConfig::default()
        };
        let s = serialize_table(&t, &config);
        assert!(s.over_budget);
        assert_eq!(s.column_spans.len(), 10);
    }

    #[test]
    fn sampling_is_deterministic_and_ordered() {
        let a = sample_rows(1000, 10, 7, "table");
        assert_eq!(a, sample_rows(1000, 10, 7, "table"));
        assert_ne!(a, sample_rows(1000, 10, 8, "table"));
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample_rows(3, 10, 0, "t"), vec![0, 1, 2]);
    }

    #[test]
    fn fair_shares_are_max_min_fair() {
        assert_eq!(fair_shares(&[2, 100, 100], 52), vec![2, 25, 25]);
        assert_eq!(fair_shares(&[5, 5], 100), vec![5, 5]);
        assert_eq!(fair_shares(&[], 10), Vec::<usize>::new());
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_to_char_boundary("héllo", 2), "h");
        assert_eq!(truncate_to_char_boundary("héllo", 3), "hé");
        assert_eq!(truncate_to_char_boundary("ab", 5), "ab");
    }
}
